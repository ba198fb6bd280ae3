/* fuzz-strategy.c: libFuzzer target: a strategy string (strategy_parse), resolved for a few GPU counts. */
#include <config.h>

#include <stdlib.h>

#include "internal.h"
#include "fuzz.h"

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  (void) argc; (void) argv;
  fuzz_setup ();
  return 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  /* --nodes, --gpus-per-node and --batch as the command line passes them */
  static const struct { int64_t nodes; int gpn; int64_t batch; } runs[] = {
    { 0, 8, 1 }, { 1, 8, 64 }, { 128, 8, 1536 }, { PM_MAX_GPUS, 1, PM_MAX_BATCH },
  };
  char *spec = fuzz_string (data, size);
  struct strategy s;
  for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
    strategy_init (&s);
    if (strategy_parse (&s, spec, "--strategy") < 0)
      break;
    (void) strategy_resolve (&s, runs[i].nodes, runs[i].gpn, runs[i].batch);
  }
  free (spec);
  return 0;
}
