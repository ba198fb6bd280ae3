/* fuzz-walk.c: libFuzzer target: a data folder of folders, links and tables built from the input, walked by mdata_load: the walk ends (libFuzzer's timeout) through any loop of links. */
#include <config.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "fuzz.h"

static struct gpu_db gpus;
static const char table[] =
  "framework,version,device,op_name,kernel_source,gemm_dtype,m,n,k,latency\n"
  "A,1,NVIDIA H100 80GB HBM3,gemm,x,bfloat16,16,4096,4096,0.01\n";

static int
remove_one (const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
  (void) st; (void) flag; (void) ftw;
  remove (p);
  return 0;
}

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  (void) argc; (void) argv;
  fuzz_setup ();
  if (gpu_db_load_data (&gpus) < 0)
    abort ();
  return 0;
}

/* Each input byte adds one entry under the tree's n-th folder (the byte's
 * high bits pick it): a folder, a link to an earlier folder (an ancestor:
 * a loop), a link to the table, or the table itself. */
int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  char *dirs[16];
  size_t nd = 0, entries = 0;
  struct kset s = { .v = NULL };
  char *root = xasprintf ("%s/w%ld", fuzz_dir (), (long) getpid ());

  nftw (root, remove_one, 16, FTW_DEPTH | FTW_PHYS);
  if (mkdir (root, 0755) != 0)
    abort ();
  dirs[nd++] = xstrdup (root);
  for (size_t i = 0; i < size && i < 64; i++) {
    const char *at = dirs[(data[i] >> 2) % nd];
    char *p = xasprintf ("%s/e%zu", at, entries++);
    switch (data[i] & 3) {
    case 0:
      if (nd < 16 && mkdir (p, 0755) == 0)
        dirs[nd++] = xstrdup (p);
      break;
    case 1:
      if (symlink (dirs[(data[i] >> 4) % nd], p) != 0)
        abort ();
      break;
    case 2: {
      char *t = xasprintf ("%s/gemm_perf.csv", at);
      FILE *fp = fopen (t, "w");
      if (fp) {
        fputs (table, fp);
        fclose (fp);
      }
      free (t);
      break;
    }
    default: {
      char *t = xasprintf ("%s/gemm_perf.csv", root), *l = xasprintf ("%s/gemm_perf.csv", p);
      if (mkdir (p, 0755) == 0 && symlink (t, l) != 0)
        abort ();
      free (t);
      free (l);
    }
    }
    free (p);
  }
  (void) mdata_load (&s, root, &gpus, NULL);
  kset_free (&s);
  for (size_t i = 0; i < nd; i++)
    free (dirs[i]);
  free (root);
  return 0;
}
