/* fuzz-mdata.c: libFuzzer target: one modern measured table (mdata_load, csv.c): the first byte picks its kind and place, the rest is its text. */
#include <config.h>

#include <stdlib.h>
#include <unistd.h>

#include "internal.h"
#include "fuzz.h"

static struct gpu_db gpus;

/* Where each kind of table lives in the shared folder's layout. */
static const char *const places[] = {
  "aiconfigurator/h100_sxm/gemm/v/1/gemm_perf.csv",
  "aiconfigurator/h100_sxm/attention/v/1/context_attention_perf.csv",
  "aiconfigurator/h100_sxm/attention/v/1/generation_attention_perf.csv",
  "aiconfigurator/h100_sxm/comm/nccl/1/nccl_perf.csv",
  "aiconfigurator/h100_sxm/moe/v/1/moe_perf.csv",
  "vidur/data/profiling/network/h100_dgx/all_reduce.csv",
  "vidur/data/profiling/network/h100_dgx/send_recv.csv",
  "vidur/data/profiling/compute/h100/meta-llama/mlp.csv",
  "aiter/mi300x/bf16_tuned_gemm.csv",
  "llmcompass/ae/matmul_a100.csv",
};

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  (void) argc; (void) argv;
  fuzz_setup ();
  if (gpu_db_load_data (&gpus) < 0)
    abort ();
  return 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  struct kset s = { .v = NULL };
  const char *path;
  if (size < 1)
    return 0;
  path = fuzz_file (places[data[0] % (sizeof places / sizeof places[0])], data + 1, size - 1);
  (void) mdata_load (&s, fuzz_dir (), &gpus, NULL);
  kset_free (&s);
  unlink (path);                /* the next input's table alone */
  return 0;
}
