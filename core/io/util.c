/* util.c: messages, allocation that cannot fail, strict number parsing, overflow-checked arithmetic, directory listing, counted INI files. */
#include <config.h>

#include <ctype.h>
#include <dirent.h>
#include <ini.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>

#include "internal.h"

int pm_verbose;

double
pm_now (void)
{
  struct timespec t;
  clock_gettime (CLOCK_MONOTONIC, &t);
  return (double) t.tv_sec + (double) t.tv_nsec / 1e9;
}

/* A library call's data directory (api.c), for this thread. */
static _Thread_local const char *datadir_used;

void
pm_datadir_use (const char *dir)
{
  datadir_used = dir;
}

const char *
pm_datadir (void)
{
  const char *d = getenv ("PERFMOD_DATADIR");
  if (datadir_used)
    return datadir_used;
  return d && *d ? d : PKGDATADIR;
}

static void __attribute__ ((format (printf, 2, 0)))
vmsg (const char *prefix, const char *fmt, va_list ap)
{
  fprintf (stderr, "perfmod: %s", prefix);
  vfprintf (stderr, fmt, ap);
  fputc ('\n', stderr);
}

/* Where pm_error keeps its first message instead of printing it, if set. */
static _Thread_local char *capture;
static _Thread_local size_t capture_len;
/* captures nest: a function that captures inside a caller's capture gives it back */
#define CAPTURE_DEPTH 8
static _Thread_local struct { char *buf; size_t len; } capture_saved[CAPTURE_DEPTH];
static _Thread_local int capture_depth;

void
pm_error_capture (char *buf, size_t len)
{
  if (buf) {
    if (len)
      buf[0] = '\0';
    /* deeper than the stack: the messages stay in the deepest buffer saved (never printed) */
    if (capture_depth++ >= CAPTURE_DEPTH)
      return;
    capture_saved[capture_depth - 1].buf = capture;
    capture_saved[capture_depth - 1].len = capture_len;
    capture = buf;
    capture_len = len;
  }
  else if (capture_depth > 0) {
    if (capture_depth-- > CAPTURE_DEPTH)
      return;
    capture = capture_saved[capture_depth].buf;
    capture_len = capture_saved[capture_depth].len;
  }
  else {
    capture = NULL;
    capture_len = 0;
  }
}

void
pm_error (const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  if (capture) {
    if (capture[0] == '\0')
      vsnprintf (capture, capture_len, fmt, ap);
  }
  else
    vmsg ("", fmt, ap);
  va_end (ap);
}

void
pm_debug (const char *fmt, ...)
{
  va_list ap;
  if (!pm_verbose)
    return;
  va_start (ap, fmt);
  vmsg ("debug: ", fmt, ap);
  va_end (ap);
}

static void *
check_alloc (void *p)
{
  if (p == NULL) {
    fputs ("perfmod: out of memory\n", stderr);
    abort ();
  }
  return p;
}

void *xmalloc (size_t n) { return check_alloc (malloc (n ? n : 1)); }
void *xcalloc (size_t n, size_t size) { return check_alloc (calloc (n ? n : 1, size ? size : 1)); }
void *xrealloc (void *p, size_t n) { return check_alloc (realloc (p, n ? n : 1)); }
char *xstrdup (const char *s) { return check_alloc (strdup (s)); }

char *
xvasprintf (const char *fmt, va_list ap)
{
  char *s;
  if (vasprintf (&s, fmt, ap) < 0)
    s = NULL;
  return check_alloc (s);
}

char *
xasprintf (const char *fmt, ...)
{
  va_list ap;
  char *s;
  va_start (ap, fmt);
  s = xvasprintf (fmt, ap);
  va_end (ap);
  return s;
}

bool
parse_int64 (const char *s, int64_t *out)
{
  char *end;
  long long v;
  if (s == NULL || *s == '\0' || isspace ((unsigned char) *s))
    return false;
  errno = 0;
  v = strtoll (s, &end, 10);
  if (errno != 0 || *end != '\0')
    return false;
  *out = v;
  return true;
}

bool
parse_double (const char *s, double *out)
{
  char *end;
  double v;
  if (s == NULL || *s == '\0' || isspace ((unsigned char) *s))
    return false;
  errno = 0;
  v = strtod (s, &end);
  if (errno != 0 || *end != '\0' || !isfinite (v))
    return false;
  *out = v;
  return true;
}

bool
parse_int_range (const char *opt, const char *arg, int64_t min, int64_t max, int64_t *out)
{
  if (!parse_int64 (arg, out) || *out < min || *out > max) {
    pm_error ("%s '%s': expected an integer from %lld to %lld", opt, arg, (long long) min,
              (long long) max);
    return false;
  }
  return true;
}

int
stdout_status (int rc)
{
  errno = 0;
  if (fflush (stdout) == 0 && !ferror (stdout))
    return rc;
  if (rc == 0)                   /* else the failure was said already */
    pm_error ("standard output: %s", errno ? strerror (errno) : "write error");
  return rc ? rc : EXIT_RUNTIME;
}

int
pm_getopt_long (int argc, char **argv, const char *shortopts, const struct option *opts)
{
  int longindex = -1;
  int opt = getopt_long (argc, argv, shortopts, opts, &longindex);
  const char *tok;
  size_t len;
  if (opt == -1 || opt == '?' || opt == ':' || longindex < 0)
    return opt;
  /* the token the option was: before its argument when that came apart */
  tok = argv[optind - 1];
  if (opts[longindex].has_arg != no_argument && optarg == tok && optind >= 2)
    tok = argv[optind - 2];
  len = strcspn (tok + 2, "=");
  if (strncmp (tok, "--", 2) == 0 && len == strlen (opts[longindex].name))
    return opt;
  /* getopt_long took a prefix: refused, as a mistyped name would be
   * (search --mode was search --model) */
  if (tok != argv[optind - 1])
    optind--;
  optopt = 0;
  return '?';
}

void
getopt_error (int opt, char **argv, const struct option *opts, const char *cmd)
{
  const char *arg = argv[optind - 1];
  size_t len = strcspn (arg, "=");
  int matches = 0;
  if (opt == ':') {
    pm_error ("option '%s' requires an argument (try '%s --help')", arg, cmd);
    return;
  }
  if (optopt > 0 && optopt < 128) {
    pm_error ("invalid option -- '%c' (try '%s --help')", optopt, cmd);
    return;
  }
  /* options are never abbreviated: one that starts a name is a typo of it */
  const char *like = NULL;
  for (const struct option *o = opts; o->name && len > 2 && arg[0] == '-' && arg[1] == '-'; o++)
    if (strncmp (o->name, arg + 2, len - 2) == 0) {
      matches++;
      like = o->name;
    }
  if (matches == 1)
    pm_error ("unrecognized option '%.*s' (options are not abbreviated: '--%s'? try '%s --help')",
              (int) len, arg, like, cmd);
  else
    pm_error ("unrecognized option '%.*s' (try '%s --help')", (int) len, arg, cmd);
}

bool
ck_mul64 (int64_t a, int64_t b, int64_t *out)
{
  return !__builtin_mul_overflow (a, b, out);
}

bool
ck_add64 (int64_t a, int64_t b, int64_t *out)
{
  return !__builtin_add_overflow (a, b, out);
}

char *
trim (char *s)
{
  char *e;
  while (isspace ((unsigned char) *s))
    s++;
  e = s + strlen (s);
  while (e > s && isspace ((unsigned char) e[-1]))
    *--e = '\0';
  return s;
}

static int
fold (int c)
{
  if (c == ' ' || c == '-')
    return '_';
  return tolower (c);
}

bool
name_eq (const char *a, const char *b)
{
  for (; *a && *b; a++, b++)
    if (fold ((unsigned char) *a) != fold ((unsigned char) *b))
      return false;
  return *a == *b;
}

static int
cmp_str (const void *a, const void *b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

static char **
list_entries (const char *dir, const char *suffix, mode_t type)
{
  DIR *d = opendir (dir);
  struct dirent *e;
  char **v = NULL;
  size_t n = 0, slen = strlen (suffix);

  if (d == NULL)
    return NULL;
  while ((e = readdir (d)) != NULL) {
    size_t len = strlen (e->d_name);
    char *path;
    struct stat st;
    if (e->d_name[0] == '.' || len <= slen ||
        strcmp (e->d_name + len - slen, suffix) != 0)
      continue;
    path = xasprintf ("%s/%s", dir, e->d_name);
    if (stat (path, &st) == 0 && (st.st_mode & S_IFMT) == type) {
      v = xrealloc (v, (n + 2) * sizeof *v);
      v[n++] = path;
      v[n] = NULL;
    }
    else
      free (path);
  }
  closedir (d);
  if (v == NULL)
    v = xcalloc (1, sizeof *v);
  qsort (v, n, sizeof *v, cmp_str);
  return v;
}

char **
list_dir (const char *dir, const char *suffix)
{
  return list_entries (dir, suffix, S_IFREG);
}

char **
list_subdirs (const char *dir)
{
  return list_entries (dir, "", S_IFDIR);
}

void
strv_free (char **v)
{
  if (v == NULL)
    return;
  for (char **p = v; *p; p++)
    free (*p);
  free (v);
}

size_t
strv_len (char *const *v)
{
  size_t n = 0;
  while (v && v[n])
    n++;
  return n;
}

char **
strv_split (const char *s, char sep)
{
  char **v = xcalloc (1, sizeof *v);
  size_t n = 0;
  const char *p = s;
  for (;;) {
    const char *e = strchr (p, sep);
    size_t len = e ? (size_t) (e - p) : strlen (p);
    char *item = xmalloc (len + 1), *t;
    memcpy (item, p, len);
    item[len] = '\0';
    t = trim (item);
    memmove (item, t, strlen (t) + 1);
    v = xrealloc (v, (n + 2) * sizeof *v);
    v[n++] = item;
    v[n] = NULL;
    if (e == NULL)
      break;
    p = e + 1;
  }
  return v;
}

/* inih reads a line into a buffer of num bytes and parses the rest of a
 * longer line as a line of its own (Debian's build: 200 bytes): a silently
 * wrong key.  So a line that does not fit is refused here, and the parse
 * stopped; ini_file_parse reports it. */
static char *
ini_file_reader (char *str, int num, void *stream)
{
  struct ini_file *f = stream;
  size_t len;
  int c;

  if (f->long_line || fgets (str, num, f->fp) == NULL)
    return NULL;
  f->line++;
  len = strlen (str);
  if (len > 0 && str[len - 1] != '\n' && (c = getc (f->fp)) != EOF && c != '\n') {
    /* a line that ends in \r\n just past the buffer still fits */
    if (c != '\r' || (c = getc (f->fp)) != '\n') {
      f->long_line = num;
      return NULL;
    }
  }
  if (str[strspn (str, " \t")] == '[')
    f->section_line = f->line;
  return str;
}

int
ini_file_parse (struct ini_file *f, const char *path, ini_file_handler h, void *user)
{
  int rc;
  memset (f, 0, sizeof *f);
  f->path = path;
  f->fp = fopen (path, "r");
  if (f->fp == NULL) {
    pm_error ("%s: cannot open: %s", path, strerror (errno));
    return -1;
  }
  input_note (path);
  rc = ini_parse_stream (ini_file_reader, f, h, user);
  fclose (f->fp);
  f->fp = NULL;
  if (f->long_line) {
    pm_error ("%s:%d: line longer than %d characters, the INI reader's limit (split it or "
              "shorten it)", path, f->line, f->long_line - 1);
    return -1;
  }
  if (rc > 0) {
    pm_error ("%s:%d: syntax error (expected [section] or key = value)", path, rc);
    return -1;
  }
  return 0;
}

int
input_file_check (const char *path, const char *what)
{
  struct stat st;
  if (stat (path, &st) < 0) {
    pm_error ("%s: cannot read %s: %s", path, what, strerror (errno));
    return -1;
  }
  if (S_ISDIR (st.st_mode)) {
    pm_error ("%s: is a directory, not %s", path, what);
    return -1;
  }
  input_note (path);
  return 0;
}

/* FNV-1a: names hashed for the indexes below. */
static size_t
name_hash (const char *s)
{
  uint64_t h = 14695981039346656037ULL;
  for (; *s; s++)
    h = (h ^ (unsigned char) *s) * 1099511628211ULL;
  return (size_t) h;
}

const struct name_slot *
name_index_lookup (const struct name_index *x, const char *name)
{
  if (x->cap == 0)
    return NULL;
  for (size_t i = name_hash (name) & (x->cap - 1);; i = (i + 1) & (x->cap - 1)) {
    if (x->v[i].name == NULL)
      return NULL;
    if (strcmp (x->v[i].name, name) == 0)
      return &x->v[i];
  }
}

static void
slot_put (struct name_slot *v, size_t cap, const char *name, size_t pos)
{
  size_t i = name_hash (name) & (cap - 1);
  while (v[i].name && strcmp (v[i].name, name) != 0)
    i = (i + 1) & (cap - 1);
  v[i].name = name;
  v[i].pos = pos;
}

void
name_index_put (struct name_index *x, const char *name, size_t pos)
{
  struct name_slot *e = (struct name_slot *) name_index_lookup (x, name);
  if (e) {
    e->name = name;
    e->pos = pos;
    return;
  }
  /* at most half full: probes stay short */
  if (2 * (x->n + 1) > x->cap) {
    size_t cap = x->cap ? 2 * x->cap : 64;
    struct name_slot *v = xcalloc (cap, sizeof *v);
    for (size_t i = 0; i < x->cap; i++)
      if (x->v[i].name)
        slot_put (v, cap, x->v[i].name, x->v[i].pos);
    free (x->v);
    x->v = v;
    x->cap = cap;
  }
  slot_put (x->v, x->cap, name, pos);
  x->n++;
}

void
name_index_free (struct name_index *x)
{
  free (x->v);
  memset (x, 0, sizeof *x);
}

int
word_index (const char *w, const char *const *v, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (strcmp (w, v[i]) == 0)
      return (int) i;
  return -1;
}

void
ptrv_push (char ***v, size_t *n, char *s)
{
  *v = xrealloc (*v, (*n + 1) * sizeof **v);
  (*v)[(*n)++] = s;
}

/* ---- what one input may hold ---- */
static const struct {
  const char *env;
  uint64_t def;
} limit_vars[3] = {
  { "PERFMOD_MAX_LINE", (uint64_t) 1 << 20 },          /* the longest line shared: 19 KB */
  { "PERFMOD_MAX_INPUT_BYTES", (uint64_t) 1 << 28 },   /* the largest table shared: 25 MB */
  { "PERFMOD_MAX_ROWS", (uint64_t) 1 << 22 },          /* the most rows shared: 207,395 */
};

/* The variable's value, 0 when unset or not a positive integer. */
static uint64_t
limit_env (size_t i)
{
  const char *v = getenv (limit_vars[i].env);
  int64_t n;
  if (v == NULL || *v == '\0' || !parse_int64 (v, &n) || n < 1)
    return 0;
  return (uint64_t) n;
}

void
pm_limits (struct pm_limits *l)
{
  uint64_t v[3];
  for (size_t i = 0; i < 3; i++)
    v[i] = limit_env (i) ? limit_env (i) : limit_vars[i].def;
  l->line = v[0];
  l->bytes = v[1];
  l->rows = v[2];
}

int
pm_limits_check (void)
{
  for (size_t i = 0; i < 3; i++) {
    const char *v = getenv (limit_vars[i].env);
    if (v && limit_env (i) == 0) {
      pm_error ("%s='%s': expected a positive integer (the default is %llu)", limit_vars[i].env,
                v, (unsigned long long) limit_vars[i].def);
      return -1;
    }
  }
  return 0;
}

ssize_t
getline_max (char **line, size_t *cap, FILE *fp, size_t max)
{
  size_t len = 0;
  int c;
  for (;;) {
    c = getc (fp);
    if (c == EOF)
      break;
    if (len >= max)
      return -2;
    if (len + 2 > *cap) {
      *cap = *cap ? 2 * *cap : 256;
      *line = xrealloc (*line, *cap);
    }
    (*line)[len++] = (char) c;
    if (c == '\n')
      break;
  }
  if (len == 0)
    return -1;
  (*line)[len] = '\0';
  return (ssize_t) len;
}

bool
visited_add (struct visited *s, const char *path)
{
  struct stat st;
  if (stat (path, &st) != 0)
    return true;
  for (size_t i = 0; i < s->n; i++)
    if (s->v[i].dev == (uint64_t) st.st_dev && s->v[i].ino == (uint64_t) st.st_ino)
      return false;
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 64;
    s->v = xrealloc (s->v, s->cap * sizeof *s->v);
  }
  s->v[s->n].dev = (uint64_t) st.st_dev;
  s->v[s->n].ino = (uint64_t) st.st_ino;
  s->n++;
  return true;
}

void
visited_free (struct visited *s)
{
  free (s->v);
  memset (s, 0, sizeof *s);
}

int
fields_in_range (const void *req, const struct field_range *r, size_t n, const char *who)
{
  for (size_t i = 0; i < n; i++) {
    int64_t v;
    memcpy (&v, (const char *) req + r[i].off, sizeof v);
    if (v < 0 || v > r[i].max) {
      pm_error ("%s: %s %lld: expected 1 to %lld (0: the default)", who, r[i].name, (long long) v,
                (long long) r[i].max);
      return -1;
    }
  }
  return 0;
}

int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

double
median_sorting (double *v, size_t n)
{
  if (n == 0)
    return NAN;
  qsort (v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
