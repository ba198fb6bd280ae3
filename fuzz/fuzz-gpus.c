/* fuzz-gpus.c: libFuzzer target: a gpus.d of one file (gpu_db_load). */
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
  struct gpu_db db;
  char *dir = xasprintf ("%s/gpus.d", fuzz_dir ());
  fuzz_file ("gpus.d/10-fuzz.ini", data, size);
  if (gpu_db_load (&db, dir) == 0) {
    for (size_t i = 0; i < db.n; i++) {
      (void) gpu_db_find (&db, db.v[i].name);
      (void) gpu_source (&db.v[i], "sms");
    }
    (void) gpu_db_find (&db, "h100");
    gpu_db_free (&db);
  }
  free (dir);
  return 0;
}
