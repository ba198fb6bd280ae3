/* linreg.c: Li et al.'s linear-regression predictor as NeuSight runs it: per GPU and class, t = coef * work + intercept. */
#include <config.h>

#include <stdio.h>

#include "learned.h"

/* Work is 2*B*M*N*K FLOPs for matrix kernels and bytes moved (B*H*MemPerO)
 * for vector kernels.  Coefficients per training GPU come from perfmod
 * train; another GPU gets coef = 1 / (a * bandwidth + b), intercept 0,
 * from the line NeuSight fits through the training GPUs' 1/coef. */
static const char *const class_keys[] = {
  [PERFMOD_KERNEL_LINEAR] = "linear", [PERFMOD_KERNEL_BMM] = "bmm",
  [PERFMOD_KERNEL_ELEMENTWISE] = "elementwise", [PERFMOD_KERNEL_SOFTMAX] = "softmax",
  [PERFMOD_KERNEL_LAYERNORM] = "layernorm",
};

static struct learned L;

static int
linreg_init (const struct perfmod_host *h, void **state)
{
  *state = &L;
  return learned_init (&L, h, "linreg");
}

static void
linreg_fini (void *state)
{
  learned_fini (state);
}

static int
linreg_config (void *state, const char *key, const char *value)
{
  return learned_config (state, key, value);
}

static int
linreg_predict (void *state, const struct perfmod_kernel *k, const struct perfmod_gpu *gpu,
                double *seconds)
{
  struct learned *l = state;
  const struct perfmod_host *host = l->host;
  const double *fit, *ext;
  size_t rows, cols;
  double work, coef, intercept;
  char name[64];
  int g;

  if (k->kclass == PERFMOD_KERNEL_MEMORY) {         /* no class: memory-bound copy */
    *seconds = k->bytes / (gpu->mem_bw_gbps * 1073741824.0);
    return 0;
  }
  if (k->kclass < PERFMOD_KERNEL_LINEAR || k->kclass > PERFMOD_KERNEL_LAYERNORM) {
    host->error ("kernel class %d has no linear model", k->kclass);
    return -1;
  }
  if (learned_params (l) == NULL)
    return -1;
  snprintf (name, sizeof name, "%s.fit", class_keys[k->kclass]);
  fit = host->params_tensor (l->params, name, &rows, &cols);
  snprintf (name, sizeof name, "%s.extrapolate", class_keys[k->kclass]);
  ext = host->params_tensor (l->params, name, NULL, NULL);
  if (fit == NULL || ext == NULL || cols != 2) {
    host->error ("%s: no %s fit", l->path, class_keys[k->kclass]);
    return -1;
  }
  g = learned_list_index (l, "gpus", gpu->name);
  if (g >= 0 && (size_t) g < rows) {
    coef = fit[2 * g];
    intercept = fit[2 * g + 1];
  }
  else {
    double inv = ext[0] * gpu->mem_bw_gbps + ext[1];
    if (!(inv > 0)) {
      host->error ("%s: the bandwidth line gives no positive throughput for %s (%.0f GB/s)",
                   l->path, gpu->name, gpu->mem_bw_gbps);
      return -1;
    }
    coef = 1 / inv;
    intercept = 0;
  }
  if (k->kclass == PERFMOD_KERNEL_LINEAR || k->kclass == PERFMOD_KERNEL_BMM)
    work = 2.0 * (double) k->b * (double) k->m * (double) k->n * (double) k->k;
  else
    work = (double) k->b * (double) k->h * k->mem_per_output;
  *seconds = coef * work + intercept;
  /* A negative intercept can take tiny kernels below zero (NeuSight's fits
   * do); a kernel still takes no less than nothing. */
  if (*seconds < 0)
    *seconds = 0;
  return 0;
}

/* The dtypes its fits cover: the parameter file's dtypes keys (fp32 alone
 * without them, as NeuSight's measurements are). */
static unsigned
linreg_dtypes (void *state, int kclass)
{
  return learned_dtypes (state, kclass,
                         kclass >= PERFMOD_KERNEL_LINEAR && kclass <= PERFMOD_KERNEL_LAYERNORM);
}

static struct perfmod_plugin plugin = {
  .name = "linreg",
  .version = PACKAGE_VERSION,
  .description = "Li et al.: per-GPU linear fit of latency on FLOPs or bytes (NeuSight's micro)",
  .kind = PERFMOD_PLUGIN_PREDICTOR,
  .init = linreg_init,
  .fini = linreg_fini,
  .predict = linreg_predict,
  .config_keys = learned_config_keys,
  .config = linreg_config,
  .dtypes = linreg_dtypes,
};

PERFMOD_REGISTER_PLUGIN (plugin)
