/* fuzz-cli.c: libFuzzer target: the perfmod command line, one argument per input line, run with its output discarded. */
#include <config.h>

#include <fcntl.h>
#include <getopt.h>
#include <sanitizer/common_interface_defs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "fuzz.h"

#define MAX_ARGS 64

static int devnull = -1;

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  (void) argc; (void) argv;
  fuzz_setup ();
  /* reproduce and eval would look for NeuSight's data here */
  unsetenv ("PERFMOD_NEUSIGHT");
  /* Relative names (--plot FILE, --model NAME.json) land in the scratch
   * directory; names with a slash are skipped below. */
  if (chdir (fuzz_dir ()) != 0)
    abort ();
  devnull = open ("/dev/null", O_WRONLY);
  /* the sanitizers' reports on the real stderr while the run's is discarded */
  __sanitizer_set_report_fd ((void *) (intptr_t) dup (2));
  return 0;
}

/* Commands that train networks, read NeuSight's artifact or search a space of
 * strategies run for minutes: their readers have targets of their own. */
static bool
skipped (const char *arg)
{
  static const char *const slow[] = { "train", "reproduce", "search", NULL };
  if (strchr (arg, '/'))
    return true;
  for (const char *const *w = slow; *w; w++)
    if (strcmp (arg, *w) == 0)
      return true;
  return false;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  char *text = fuzz_string (data, size), *argv[MAX_ARGS + 2], *s = text;
  int argc = 0, out, err;
  static char *reset[] = { (char *) "perfmod", NULL };

  argv[argc++] = (char *) "perfmod";
  /* one argument per line; a last newline ends the last one */
  while (argc <= MAX_ARGS && *s) {
    char *nl = strchr (s, '\n');
    if (nl)
      *nl = '\0';
    if (skipped (s))
      goto done;
    argv[argc++] = s;
    if (nl == NULL)
      break;
    s = nl + 1;
  }
  argv[argc] = NULL;
  /* getopt's state from the last run points into its freed argv: start
   * afresh (kernel and search set optind to 1, which keeps that state) */
  optind = 0;
  getopt (1, reset, "");
  pm_verbose = 0;
  fflush (stdout);
  fflush (stderr);
  out = dup (1);
  err = dup (2);
  dup2 (devnull, 1);
  dup2 (devnull, 2);
  (void) stdout_status (perfmod_main (argc, argv));
  fflush (stdout);
  fflush (stderr);
  clearerr (stdout);
  dup2 (out, 1);
  dup2 (err, 2);
  close (out);
  close (err);
done:
  free (text);
  return 0;
}
