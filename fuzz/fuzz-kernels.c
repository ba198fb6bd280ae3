/* fuzz-kernels.c: libFuzzer target: a measured-kernel CSV (kset_load_file, csv.c) with the real gpus.d and tiles.d. */
#include <config.h>

#include <stdlib.h>

#include "internal.h"
#include "fuzz.h"

static struct gpu_db gpus;
static struct tile_rules tiles;

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  char *dir;
  (void) argc; (void) argv;
  fuzz_setup ();
  dir = xasprintf ("%s/tiles.d", pm_datadir ());
  if (gpu_db_load_data (&gpus) < 0 || tile_rules_load (&tiles, dir) < 0)
    abort ();
  free (dir);
  return 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  struct kset s = { .v = NULL };
  struct perfmod_kernel k;
  if (kset_load_file (&s, fuzz_file ("kernels.csv", data, size), &gpus, &tiles) == 0)
    for (size_t i = 0; i < s.n; i++) {
      krow_kernel (&s.v[i], &k);
      (void) krow_class_label (s.v[i].kclass);
    }
  kset_free (&s);
  return 0;
}
