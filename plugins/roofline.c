/* roofline.c: the physical roofline per dtype, and NeuSight's unit for unit (units=neusight) so its per-op numbers reproduce exactly. */
#include <config.h>

#include <string.h>

#include "perfmod-plugin.h"
#include "physics.h"

/* NeuSight counts matrix FLOPs in 1e9 and matrix bytes in 2^30 (GiB) while
 * the GPU's peaks are GFLOP/s and GB/s; vector kernels count bytes in 1e9;
 * memory copies in 2^30.  The mixture is NeuSight's, kept for parity. */
#define GIB 1073741824.0

static const struct perfmod_host *host;

/* units=physical (the default): FLOPs over the dtype's peak and bytes over
 * the bandwidth, every kernel class; units=neusight: NeuSight's mixture
 * below, for its five classes, which perfmod reproduce and eval on
 * NeuSight's data set. */
static struct state {
  int neusight;
} S;

static int
roofline_init (const struct perfmod_host *h, void **state)
{
  host = h;
  S.neusight = 0;
  *state = &S;
  return 0;
}

static const char *const roofline_keys[] = { "units", NULL };

static int
roofline_config (void *state, const char *key, const char *value)
{
  struct state *s = state;
  if (strcmp (key, "units") == 0) {
    if (strcmp (value, "neusight") == 0 || strcmp (value, "physical") == 0) {
      s->neusight = value[0] == 'n';
      return 0;
    }
    host->error ("units '%s': expected physical or neusight", value);
    return -1;
  }
  host->error ("unknown key '%s'", key);
  return -1;
}

static int
roofline_predict (void *state, const struct perfmod_kernel *k,
                  const struct perfmod_gpu *gpu, double *seconds)
{
  struct state *s = state;
  double peak_gflops = perfmod_gpu_peak_flops (gpu, k->dtype) / 1e9;
  double bw = gpu->mem_bw_gbps;
  struct phys_cost c;

  if (bw <= 0 || peak_gflops <= 0) {
    host->error ("GPU %s has no memory bandwidth or peak", gpu->name);
    return -1;
  }
  if (!s->neusight || k->kclass == PERFMOD_KERNEL_ATTENTION || k->kclass == PERFMOD_KERNEL_COMM) {
    if (phys_cost_of (k, gpu, &c) < 0) {
      host->error ("kernel class %d is not a roofline kernel", k->kclass);
      return -1;
    }
    if (k->kclass == PERFMOD_KERNEL_COMM && c.bw <= 0) {
      host->error ("GPU %s has no link bandwidth (link_gbps) for a collective", gpu->name);
      return -1;
    }
    *seconds = phys_roofline (&c);
    return 0;
  }
  switch (k->kclass) {
  case PERFMOD_KERNEL_LINEAR:
  case PERFMOD_KERNEL_BMM: {
    double b = (double) k->b, m = (double) k->m, n = (double) k->n, kk = (double) k->k;
    double flops = 2.0 * b * (m * n * kk) / 1e9;
    double mem = k->elem_bytes * b * (m * n + n * kk + m * kk) / GIB;
    double attainable = flops / mem * bw;
    if (flops <= 0) {
      *seconds = 0;
      return 0;
    }
    if (attainable > peak_gflops)
      attainable = peak_gflops;
    *seconds = flops / attainable;
    return 0;
  }
  case PERFMOD_KERNEL_ELEMENTWISE:
  case PERFMOD_KERNEL_SOFTMAX:
  case PERFMOD_KERNEL_LAYERNORM:
    *seconds = (double) k->b * (double) k->h * k->mem_per_output / 1e9 / bw;
    return 0;
  case PERFMOD_KERNEL_MEMORY:
    *seconds = k->bytes / (bw * GIB);
    return 0;
  default:
    host->error ("kernel class %d is not a roofline kernel", k->kclass);
    return -1;
  }
}

static struct perfmod_plugin plugin = {
  .name = "roofline",
  .version = PACKAGE_VERSION,
  .description = "roofline: max(FLOPs / dtype peak, bytes / bandwidth), per kernel",
  .kind = PERFMOD_PLUGIN_PREDICTOR,
  .init = roofline_init,
  .config_keys = roofline_keys,
  .config = roofline_config,
  .predict = roofline_predict,
};

PERFMOD_REGISTER_PLUGIN (plugin)
