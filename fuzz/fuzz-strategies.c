/* fuzz-strategies.c: libFuzzer target: a strategies.d of one file (preset_db_load), each preset resolved. */
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
  struct preset_db db;
  char *dir = xasprintf ("%s/strategies.d", fuzz_dir ());
  fuzz_file ("strategies.d/10-fuzz.ini", data, size);
  if (preset_db_load (&db, dir) == 0) {
    for (size_t i = 0; i < db.n; i++) {
      struct strategy s;
      strategy_init (&s);
      /* a preset loaded is one the command line can use */
      if (preset_db_find (&db, db.v[i].name) == NULL ||
          strategy_parse (&s, db.v[i].spec, db.v[i].name) < 0)
        abort ();
      (void) strategy_resolve (&s, 0, 8, 1024);
    }
    preset_db_free (&db);
  }
  free (dir);
  return 0;
}
