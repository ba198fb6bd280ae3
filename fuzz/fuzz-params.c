/* fuzz-params.c: libFuzzer target: a trained parameter file (params_load), then as each learned predictor's file, predicting a few kernels. */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "fuzz.h"

static struct gpu_db gpus;

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  (void) argc; (void) argv;
  fuzz_setup ();
  if (gpu_db_load_data (&gpus) < 0)
    abort ();
  return 0;
}

/* A kernel of each class, as a graph hands them over. */
static void
kernels (int dtype, struct perfmod_kernel *k, size_t *n)
{
  static const struct {
    int kclass;
    const char *op;
    int64_t b, m, n, k, h;
    double mem, ops, bytes;
  } v[] = {
    { PERFMOD_KERNEL_LINEAR, "linear", 1, 2048, 1024, 4096, 0, 0, 0, 0 },
    { PERFMOD_KERNEL_LINEAR, "linear", 1, 1, 1, 1, 0, 0, 0, 0 },
    { PERFMOD_KERNEL_BMM, "bmm", 64, 128, 64, 128, 0, 0, 0, 0 },
    { PERFMOD_KERNEL_ELEMENTWISE, "add", 4096, 0, 0, 0, 1024, 3, 1, 0 },
    { PERFMOD_KERNEL_ELEMENTWISE, "gelu", 1, 0, 0, 0, 1, 2, 8, 0 },
    { PERFMOD_KERNEL_SOFTMAX, "softmax", 4096, 0, 0, 0, 1024, 2, 5, 0 },
    { PERFMOD_KERNEL_LAYERNORM, "ln", 4096, 0, 0, 0, 1024, 2, 6, 0 },
    { PERFMOD_KERNEL_ATTENTION, "attention", 4, 1024, 1024, 128, 16, 0, 0, 0 },
    { PERFMOD_KERNEL_MEMORY, "copy", 0, 0, 0, 0, 0, 0, 0, 1e8 },
  };
  double eb = dtype == PERFMOD_DTYPE_FP32 || dtype == PERFMOD_DTYPE_TF32 ? 4
            : dtype == PERFMOD_DTYPE_FP8 ? 1 : 2;
  *n = sizeof v / sizeof v[0];
  for (size_t i = 0; i < *n; i++) {
    memset (&k[i], 0, sizeof k[i]);
    k[i].struct_size = sizeof k[i];
    k[i].kclass = v[i].kclass;
    k[i].op = v[i].op;
    k[i].b = v[i].b;
    k[i].m = v[i].m;
    k[i].n = v[i].n;
    k[i].k = v[i].k;
    k[i].h = v[i].h;
    k[i].mem_per_output = k[i].own_mem_per_output = v[i].mem * eb;
    k[i].ops_per_output = v[i].ops;
    k[i].bytes = v[i].bytes;
    k[i].dtype = dtype;
    k[i].elem_bytes = eb;
    if (v[i].kclass == PERFMOD_KERNEL_ATTENTION) {
      k[i].kv_heads = 4;
      k[i].causal = 1;
    }
  }
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  /* the fp32 networks of each learned predictor, and the tensor-core ones */
  static const struct { const char *plugin, *key; int dtype; } uses[] = {
    { "linreg", "params", PERFMOD_DTYPE_FP32 },
    { "habitat", "params", PERFMOD_DTYPE_FP32 },
    { "tile-mlp", "params", PERFMOD_DTYPE_FP32 },
    { "tile-mlp-neusight", "params", PERFMOD_DTYPE_FP32 },
    { "linreg", "tc_params", PERFMOD_DTYPE_BF16 },
    { "tile-mlp", "tc_params", PERFMOD_DTYPE_BF16 },
  };
  static const char *const gpu_names[] = { "h100", "v100", "a100-40gb" };
  const char *path = fuzz_file ("fuzz.params", data, size);
  struct perfmod_kernel k[16];
  struct params p;
  double sum = 0;
  size_t nk;

  if (params_load (&p, path) < 0)
    return 0;
  for (size_t i = 0; i < p.nkv; i++)
    (void) params_get (&p, p.keys[i]);
  for (size_t i = 0; i < p.nt; i++) {
    const struct ptensor *t = params_tensor (&p, p.t[i].name);
    for (size_t j = 0; j < t->rows * t->cols; j++)
      sum += t->v[j];
  }
  (void) sum;
  params_free (&p);
  for (size_t u = 0; u < sizeof uses / sizeof uses[0]; u++) {
    struct plugin_set set = { NULL, 0 };
    char *opt = xasprintf ("%s:%s=%s", uses[u].plugin, uses[u].key, path);
    struct plugin *pl;
    /* the plugin reads the file when configured: a refusal ends here */
    if (plugins_open (&set, NULL, 0, &opt, 1) == 0 &&
        (pl = plugins_find (&set, uses[u].plugin, PERFMOD_PLUGIN_PREDICTOR)) != NULL) {
      kernels (uses[u].dtype, k, &nk);
      for (size_t g = 0; g < sizeof gpu_names / sizeof gpu_names[0]; g++)
        for (size_t i = 0; i < nk; i++) {
          struct perfmod_estimate e;
          (void) plugin_estimate (pl, &k[i], &gpu_db_find (&gpus, gpu_names[g])->gpu, &e);
        }
    }
    plugins_unload (&set);
    free (opt);
  }
  return 0;
}
