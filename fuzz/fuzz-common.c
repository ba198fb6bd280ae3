/* fuzz-common.c: the fuzz targets' scratch directory and input files. */
#include <config.h>

#include <dirent.h>
#include <dlfcn.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"

static char *scratch;
static char *path;

static int
remove_one (const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
  (void) st; (void) flag; (void) ftw;
  remove (p);
  return 0;
}

static void
cleanup (void)
{
  if (scratch)
    nftw (scratch, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* libFuzzer counts coverage in a plugin from its first load on and reads
 * its counters after every input: a plugin unloaded (plugins_unload) and
 * loaded again would leave it reading unmapped memory.  Loaded here with
 * RTLD_NODELETE, each stays mapped, and later loads find it there. */
static void
keep_plugins (const char *dir)
{
  DIR *d = opendir (dir);
  struct dirent *e;
  if (d == NULL)
    return;
  while ((e = readdir (d)) != NULL) {
    size_t len = strlen (e->d_name);
    char *p;
    if (len < 4 || strcmp (e->d_name + len - 3, ".so") != 0 ||
        asprintf (&p, "%s/%s", dir, e->d_name) < 0)
      continue;
    if (dlopen (p, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE) == NULL)
      fprintf (stderr, "fuzz: %s\n", dlerror ());
    free (p);
  }
  closedir (d);
}

void
fuzz_setup (void)
{
  const char *tmp = getenv ("TMPDIR");
  if (scratch)
    return;
  /* The readers find gpus.d, tiles.d and the models here, as ./run does;
   * the plugins are the instrumented ones of make fuzz. */
  setenv ("PERFMOD_DATADIR", FUZZ_SRCDIR, 0);
  setenv ("PERFMOD_PLUGIN_DIR", FUZZ_PLUGINDIR, 0);
  keep_plugins (getenv ("PERFMOD_PLUGIN_DIR"));
  if (asprintf (&scratch, "%s/perfmod-fuzz.XXXXXX", tmp && *tmp ? tmp : "/tmp") < 0 ||
      mkdtemp (scratch) == NULL) {
    perror ("fuzz: scratch directory");
    abort ();
  }
  atexit (cleanup);
}

const char *
fuzz_dir (void)
{
  if (scratch == NULL)
    fuzz_setup ();
  return scratch;
}

const char *
fuzz_file (const char *name, const uint8_t *data, size_t size)
{
  FILE *fp;
  free (path);
  if (asprintf (&path, "%s/%s", fuzz_dir (), name) < 0)
    abort ();
  /* parent directories of NAME */
  for (char *s = path + strlen (scratch) + 1; (s = strchr (s, '/')) != NULL; s++) {
    *s = '\0';
    mkdir (path, 0700);
    *s = '/';
  }
  fp = fopen (path, "wb");
  if (fp == NULL || (size && fwrite (data, 1, size, fp) != size) || fclose (fp) != 0) {
    perror (path);
    abort ();
  }
  return path;
}

char *
fuzz_string (const uint8_t *data, size_t size)
{
  char *s = malloc (size + 1);
  if (s == NULL)
    abort ();
  memcpy (s, data, size);
  s[size] = '\0';
  return s;
}
