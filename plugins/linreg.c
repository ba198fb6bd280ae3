/* linreg.c: Li et al.'s linear-regression predictor as NeuSight runs it: per GPU and class, t = coef * work + intercept. */
#include <config.h>

#include <stdio.h>
#include <string.h>

#include "learned.h"
#include "linreg-model.h"

/* Work is 2*B*M*N*K FLOPs for matrix kernels and bytes moved (B*H*MemPerO)
 * for vector kernels.  Coefficients per training GPU come from perfmod
 * train; another GPU gets coef = 1 / (a * bandwidth + b), intercept 0,
 * from the line NeuSight fits through the training GPUs' 1/coef. */
static const char *const class_keys[] = {
  [PERFMOD_KERNEL_LINEAR] = "linear", [PERFMOD_KERNEL_BMM] = "bmm",
  [PERFMOD_KERNEL_ELEMENTWISE] = "elementwise", [PERFMOD_KERNEL_SOFTMAX] = "softmax",
  [PERFMOD_KERNEL_LAYERNORM] = "layernorm",
};

/* L: NeuSight's fp32 fits; TC: the per-dtype fits of the modern tables
 * (perfmod train --predictor linreg --data MODERNDATA), a file of their
 * own: DATADIR/params/linreg-tc.params unless tc_params= names another. */
static struct learned L, TC;
static int tc_state;            /* 0 not tried, 1 loaded, -1 absent or failed */

static int
linreg_init (const struct perfmod_host *h, void **state)
{
  *state = &L;
  tc_state = 0;
  if (learned_init (&TC, h, "linreg") < 0)
    return -1;
  return learned_init (&L, h, "linreg");
}

static void
linreg_fini (void *state)
{
  learned_fini (&TC);
  learned_fini (state);
}

static const char *const linreg_keys[] = { "params", "tc_params", NULL };

static int
linreg_config (void *state, const char *key, const char *value)
{
  if (strcmp (key, "tc_params") == 0)
    return learned_optional_config (&TC, &tc_state, value);
  return learned_config (state, key, value);
}

/* A kernel the per-dtype fits model: 1 with *seconds, 0 when none does. */
static int
tc_predict (const struct perfmod_host *host, const struct perfmod_kernel *k,
            const struct perfmod_gpu *gpu, double *seconds)
{
  struct perfmod_kernel own;
  struct phys_cost c;
  const double *fit, *ext;
  size_t rows, cols, erows = 0, ecols = 0;
  char key[96];
  int grp, g, rc;
  double scale;

  memset (&own, 0, sizeof own);
  memcpy (&own, k, k->struct_size < sizeof own ? k->struct_size : sizeof own);
  scale = tc_as_forward (&own);
  if ((grp = lr_group_of (&own)) < 0 || own.dtype < 0 || own.dtype >= PERFMOD_DTYPE_NTYPES ||
      (rc = learned_optional (&TC, &tc_state)) == 0)
    return 0;
  if (rc < 0 || phys_cost_of (&own, gpu, &c) < 0)
    return -1;
  snprintf (key, sizeof key, "%s.%s.fit", lr_group_keys[grp], learned_dtype_names[own.dtype]);
  if ((fit = host->params_tensor (TC.params, key, &rows, &cols)) == NULL)
    return 0;                   /* no fit of this dtype: NeuSight's, as its fp32 equivalent */
  if (cols != 2) {
    learned_bad (&TC) ("%s: tensor '%s' is %zux%zu, not one row of (coef, intercept) per GPU "
                       "(N x 2)", TC.path, key, rows, cols);
    return -1;
  }
  snprintf (key, sizeof key, "%s.%s.extrapolate", lr_group_keys[grp],
            learned_dtype_names[own.dtype]);
  ext = host->params_tensor (TC.params, key, &erows, &ecols);
  if (ext && erows * ecols != 2) {
    learned_bad (&TC) ("%s: tensor '%s' is %zux%zu, not a line (1 x 2)", TC.path, key, erows,
                       ecols);
    return -1;
  }
  snprintf (key, sizeof key, "%s.%s.gpus", lr_group_keys[grp], learned_dtype_names[own.dtype]);
  g = learned_list_index (&TC, key, gpu->name);
  if (g >= 0 && (size_t) g < rows)
    *seconds = fit[2 * g] * lr_work (&own, &c) + fit[2 * g + 1];
  else {
    double inv = ext ? ext[0] * lr_scale (grp, own.dtype, gpu) + ext[1] : 0;
    if (!(inv > 0)) {
      host->error ("%s: the %s line gives no positive throughput for %s", TC.path, key, gpu->name);
      return -1;
    }
    *seconds = lr_work (&own, &c) / inv;
  }
  *seconds = *seconds < 0 ? 0 : *seconds * scale;
  return 1;
}

static int
linreg_predict (void *state, const struct perfmod_kernel *k, const struct perfmod_gpu *gpu,
                double *seconds)
{
  struct learned *l = state;
  const struct perfmod_host *host = l->host;
  const double *fit, *ext;
  size_t rows, cols, erows, ecols;
  double work, coef, intercept;
  char name[64];
  int g;

  int tc = tc_predict (host, k, gpu, seconds);
  if (tc != 0)
    return tc < 0 ? -1 : 0;
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
  ext = host->params_tensor (l->params, name, &erows, &ecols);
  if (fit == NULL || ext == NULL) {
    learned_bad (l) ("%s: no %s fit", l->path, class_keys[k->kclass]);
    return -1;
  }
  /* the shapes are the file's: check them before reading */
  if (cols != 2 || erows * ecols != 2) {
    learned_bad (l) ("%s: tensors '%s.fit' (%zux%zu) and '%s' (%zux%zu): expected N x 2 "
                     "(coef, intercept per GPU) and 1 x 2 (a line)", l->path,
                     class_keys[k->kclass], rows, cols, name, erows, ecols);
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
  unsigned mask = learned_dtypes (state, kclass,
                                  kclass >= PERFMOD_KERNEL_LINEAR && kclass <= PERFMOD_KERNEL_LAYERNORM);
  if (kclass == PERFMOD_KERNEL_ATTENTION)
    mask = 0;
  if (learned_optional (&TC, &tc_state) > 0)
    mask |= learned_dtypes (&TC, kclass, 1);
  return mask;
}

static struct perfmod_plugin plugin = {
  .name = "linreg",
  .version = PACKAGE_VERSION,
  .description = "Li et al.: per-GPU linear fit of latency on FLOPs or bytes (NeuSight's micro)",
  .kind = PERFMOD_PLUGIN_PREDICTOR,
  .init = linreg_init,
  .fini = linreg_fini,
  .predict = linreg_predict,
  .config_keys = linreg_keys,
  .config = linreg_config,
  .dtypes = linreg_dtypes,
};

PERFMOD_REGISTER_PLUGIN (plugin)
