/* output.c: writing a result file without losing anything: through symlinks, atomically over regular files (mode kept; a file of several hard links rewritten in place once complete; one the user may not write refused), directly to devices, FIFOs and stdout, never over one of the run's inputs. */
#include <config.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/* ---- the run's inputs, by device and inode ---- */
struct input_id {
  dev_t dev;
  ino_t ino;
  char *path;
};
static struct input_id *inputs;
static size_t ninputs, cap_inputs;
static pthread_mutex_t inputs_lock = PTHREAD_MUTEX_INITIALIZER;

void
input_note (const char *path)
{
  struct stat st;
  if (path == NULL || stat (path, &st) != 0 || !S_ISREG (st.st_mode))
    return;
  pthread_mutex_lock (&inputs_lock);
  for (size_t i = 0; i < ninputs; i++)
    if (inputs[i].dev == st.st_dev && inputs[i].ino == st.st_ino) {
      pthread_mutex_unlock (&inputs_lock);
      return;
    }
  if (ninputs == cap_inputs) {
    cap_inputs = cap_inputs ? 2 * cap_inputs : 16;
    inputs = xrealloc (inputs, cap_inputs * sizeof *inputs);
  }
  inputs[ninputs].dev = st.st_dev;
  inputs[ninputs].ino = st.st_ino;
  inputs[ninputs].path = xstrdup (path);
  ninputs++;
  pthread_mutex_unlock (&inputs_lock);
}

/* The input st is, or NULL (the caller frees the copy). */
static char *
input_of (const struct stat *st)
{
  char *p = NULL;
  pthread_mutex_lock (&inputs_lock);
  for (size_t i = 0; i < ninputs && p == NULL; i++)
    if (inputs[i].dev == st->st_dev && inputs[i].ino == st->st_ino)
      p = xstrdup (inputs[i].path);
  pthread_mutex_unlock (&inputs_lock);
  return p;
}

/* ---- where a name leads ---- */

/* The name a chain of symlinks from path ends at (path itself if none),
 * whether or not it exists; NULL on a loop or an unreadable link (after
 * pm_error unless quiet). */
static char *
final_name (const char *path, bool quiet)
{
  char *p = xstrdup (path);
  for (int hops = 0;; hops++) {
    struct stat st;
    char target[PATH_MAX];
    ssize_t n;
    if (lstat (p, &st) != 0 || !S_ISLNK (st.st_mode))
      return p;
    if (hops == 40) {
      if (!quiet)
        pm_error ("%s: too many levels of symbolic links", path);
      free (p);
      return NULL;
    }
    n = readlink (p, target, sizeof target - 1);
    if (n < 0) {
      if (!quiet)
        pm_error ("%s: cannot read the link: %s", path, strerror (errno));
      free (p);
      return NULL;
    }
    target[n] = '\0';
    if (target[0] == '/' || strchr (p, '/') == NULL) {
      free (p);
      p = xstrdup (target);
    }
    else {                       /* relative to the link's directory */
      char *q = xasprintf ("%.*s/%s", (int) (strrchr (p, '/') - p), p, target);
      free (p);
      p = q;
    }
  }
}

/* ---- files written aside ----
 * A regular file is written aside (NAME.tmpPID in its directory), synced
 * and renamed into place: a failed or interrupted write never leaves half
 * a file under the real name.  The file aside is removed if perfmod is
 * interrupted (SIGINT, SIGTERM, SIGHUP); one left by a process killed
 * outright is removed by the next write of NAME. */
static char pending[PATH_MAX + 32];
static volatile sig_atomic_t pending_set;

static void
on_signal (int sig)
{
  if (pending_set)
    unlink (pending);
  signal (sig, SIG_DFL);
  raise (sig);
}

static void
pending_begin (const char *tmp)
{
  static bool installed;
  if (!installed) {
    static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
      struct sigaction sa, old;
      /* a signal ignored by the parent (nohup) stays ignored */
      if (sigaction (sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
        continue;
      memset (&sa, 0, sizeof sa);
      sa.sa_handler = on_signal;
      sigemptyset (&sa.sa_mask);
      sigaction (sigs[i], &sa, NULL);
    }
    installed = true;
  }
  pending_set = 0;
  if (strlen (tmp) < sizeof pending) {
    strcpy (pending, tmp);
    pending_set = 1;
  }
}

static void
pending_end (void)
{
  pending_set = 0;
}

/* Remove NAME.tmpPID files whose process is gone. */
static void
remove_stale (const char *path)
{
  char *copy = xstrdup (path), *slash = strrchr (copy, '/');
  const char *dir = slash ? (slash == copy ? "/" : copy) : ".";
  const char *base = slash ? slash + 1 : copy;
  size_t blen = strlen (base);
  DIR *d;
  struct dirent *e;

  if (slash)
    *slash = '\0';
  if ((d = opendir (dir)) == NULL) {
    free (copy);
    return;
  }
  while ((e = readdir (d)) != NULL) {
    const char *t = e->d_name;
    int64_t pid;
    if (strncmp (t, base, blen) != 0 || strncmp (t + blen, ".tmp", 4) != 0 ||
        !isdigit ((unsigned char) t[blen + 4]) || !parse_int64 (t + blen + 4, &pid) ||
        pid <= 0 || pid > INT32_MAX || pid == (int64_t) getpid ())
      continue;
    if (kill ((pid_t) pid, 0) < 0 && errno == ESRCH) {
      char *stale = xasprintf ("%s/%s", dir, t);
      struct stat st;
      if (lstat (stale, &st) == 0 && S_ISREG (st.st_mode) && unlink (stale) == 0)
        pm_debug ("%s: removed, left by process %lld", stale, (long long) pid);
      free (stale);
    }
  }
  closedir (d);
  free (copy);
}

/* What writing path means: 0 with *real the name it leads to and *st
 * filled (st->st_mode 0 where nothing is there yet), -1 after pm_error
 * (an empty name, a directory, one of the run's inputs). */
static int
target_of (const char *path, char **real, struct stat *st)
{
  char *in;
  if (path == NULL || path[0] == '\0') {
    pm_error ("an empty file name to write");
    return -1;
  }
  if ((*real = final_name (path, false)) == NULL)
    return -1;
  if (stat (*real, st) != 0) {
    memset (st, 0, sizeof *st);
    return 0;
  }
  if (S_ISDIR (st->st_mode)) {
    pm_error ("%s: is a directory, not a file to write", path);
    free (*real);
    return -1;
  }
  if (S_ISREG (st->st_mode) && (in = input_of (st)) != NULL) {
    if (strcmp (in, path) == 0)
      pm_error ("%s: is one of this run's inputs: refusing to write over it", path);
    else
      pm_error ("%s: is %s, one of this run's inputs: refusing to write over it", path, in);
    free (in);
    free (*real);
    return -1;
  }
  /* a file the user may not write (mode 444, say) is not replaced behind its back, as a
   * rename in its writable directory would */
  if (S_ISREG (st->st_mode) && access (*real, W_OK) != 0) {
    pm_error ("%s: cannot write: %s", path, strerror (errno));
    free (*real);
    return -1;
  }
  return 0;
}

/* Copies the finished temporary file into a file of several hard links, so that every
 * name sees the new contents (a rename would leave the other names the old file).  The
 * room is taken first (posix_fallocate), so that a full disk fails before the old
 * contents are touched; the target is cut to size only once all is written. */
static int
copy_into (const char *tmp, const char *real)
{
  char buf[65536];
  struct stat st;
  ssize_t n = 0;
  int in = open (tmp, O_RDONLY | O_CLOEXEC), out = -1, rc = -1, e;
  if (in < 0 || fstat (in, &st) != 0 || (out = open (real, O_WRONLY | O_CLOEXEC)) < 0)
    goto done;
  if (st.st_size > 0 && (e = posix_fallocate (out, 0, st.st_size)) != 0 &&
      e != EINVAL && e != EOPNOTSUPP) {
    errno = e;
    goto done;
  }
  while ((n = read (in, buf, sizeof buf)) > 0)
    for (ssize_t w, off = 0; off < n; off += w)
      if ((w = write (out, buf + off, (size_t) (n - off))) < 0)
        goto done;
  if (n == 0 && ftruncate (out, st.st_size) == 0 && (fsync (out) == 0 || errno == EINVAL))
    rc = 0;
done:
  e = errno;
  if (out >= 0 && close (out) != 0 && rc == 0) {
    e = errno;
    rc = -1;
  }
  if (in >= 0)
    close (in);
  errno = e;
  return rc;
}

FILE *
atomic_open (const char *path, char **tmp)
{
  struct stat st;
  char *real;
  FILE *fp;
  int fd;

  *tmp = NULL;
  if (path && strcmp (path, "-") == 0)
    return stdout;
  if (target_of (path, &real, &st) < 0)
    return NULL;
  if (st.st_mode != 0 && !S_ISREG (st.st_mode)) {
    /* a device, a FIFO, a socket: written as it is, nothing to replace */
    fp = fopen (real, "w");
    if (fp == NULL)
      pm_error ("%s: cannot write: %s", path, strerror (errno));
    free (real);
    return fp;
  }
  remove_stale (real);
  *tmp = xasprintf ("%s.tmp%ld", real, (long) getpid ());
  free (real);
  unlink (*tmp);                 /* this process's own, reserved */
  fd = open (*tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd >= 0 && st.st_mode != 0 && fchmod (fd, st.st_mode & 07777) != 0) {
    close (fd);
    unlink (*tmp);
    fd = -1;
  }
  if (fd < 0 || (fp = fdopen (fd, "wb")) == NULL) {
    pm_error ("%s: cannot write: %s", path, strerror (errno));
    if (fd >= 0) {
      close (fd);
      unlink (*tmp);
    }
    free (*tmp);
    *tmp = NULL;
    return NULL;
  }
  pending_begin (*tmp);
  return fp;
}

int
atomic_commit (FILE *fp, char *tmp, const char *path, bool ok)
{
  size_t len;
  char *real;
  if (fflush (fp) != 0 || ferror (fp))
    ok = false;
  if (tmp == NULL) {             /* written directly */
    if (fp != stdout && fclose (fp) != 0)
      ok = false;
    if (!ok)
      pm_error ("%s: cannot write: %s", path, strerror (errno));
    return ok ? 0 : -1;
  }
  if (ok && fsync (fileno (fp)) != 0 && errno != EINVAL)
    ok = false;
  if (fclose (fp) != 0)
    ok = false;
  /* the name the temporary file stands beside: tmp without .tmpPID */
  len = strlen (tmp);
  while (len > 0 && isdigit ((unsigned char) tmp[len - 1]))
    len--;
  real = xasprintf ("%.*s", (int) (len - 4), tmp);
  {
    struct stat st;
    if (ok && stat (real, &st) == 0 && S_ISREG (st.st_mode) && st.st_nlink > 1) {
      /* not interrupted half-way: the signals wait until the copy is done */
      sigset_t block, old;
      sigemptyset (&block);
      sigaddset (&block, SIGINT);
      sigaddset (&block, SIGTERM);
      sigaddset (&block, SIGHUP);
      pthread_sigmask (SIG_BLOCK, &block, &old);
      ok = copy_into (tmp, real) == 0;
      if (ok)
        unlink (tmp);
      else                       /* the new contents kept where they are complete */
        pm_error ("%s: cannot write: %s (the new contents are in %s)", path, strerror (errno),
                  tmp);
      pending_end ();
      pthread_sigmask (SIG_SETMASK, &old, NULL);
      free (real);
      free (tmp);
      return ok ? 0 : -1;
    }
  }
  if (!ok || rename (tmp, real) != 0) {
    pm_error ("%s: cannot write: %s", path, strerror (errno));
    unlink (tmp);
    pending_end ();
    free (real);
    free (tmp);
    return -1;
  }
  pending_end ();
  free (real);
  free (tmp);
  return 0;
}

int
atomic_reserve (const char *path)
{
  struct stat st;
  char *real, *tmp;
  FILE *fp;
  if (path && strcmp (path, "-") == 0)
    return 0;
  if (target_of (path, &real, &st) < 0)
    return -1;
  if (st.st_mode != 0 && !S_ISREG (st.st_mode)) {
    /* opening a FIFO would wait for its reader: asked only */
    int rc = access (real, W_OK);
    if (rc != 0)
      pm_error ("%s: cannot write: %s", path, strerror (errno));
    free (real);
    return rc == 0 ? 0 : -1;
  }
  free (real);
  if ((fp = atomic_open (path, &tmp)) == NULL)
    return -1;
  fclose (fp);
  free (tmp);
  return 0;
}

void
atomic_release (const char *path)
{
  char *real;
  if (path == NULL || path[0] == '\0' || strcmp (path, "-") == 0 ||
      (real = final_name (path, true)) == NULL)
    return;
  {
    char *tmp = xasprintf ("%s.tmp%ld", real, (long) getpid ());
    if (pending_set && strcmp (tmp, pending) == 0) {
      unlink (tmp);
      pending_end ();
    }
    free (tmp);
  }
  free (real);
}

int
output_check (const char *path)
{
  struct stat st;
  char *real;
  if (path && strcmp (path, "-") == 0)
    return 0;
  if (target_of (path, &real, &st) < 0)
    return -1;
  free (real);
  return 0;
}
