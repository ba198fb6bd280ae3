/* habitat.c: NeuSight's Habitat baseline: an MLP on raw features for matrix kernels, reference-GPU scaling for vector kernels; per dtype from the modern tables. */
#include <config.h>

#include <stdio.h>

#include "learned.h"

/* Matrix kernels: an MLP from (B, M, N, K, memory bandwidth, memory size,
 * SMs, FP32 peak), standardised, to latency, trained on five GPUs; it has
 * no notion of why a kernel is fast, which is why it fails on new GPUs.
 * Vector kernels: Habitat's wave scaling as NeuSight applies it: the same
 * kernel (operator, B, H) measured on a reference GPU, times the ratio of
 * memory bandwidths; with no such measurement, a memory-bound estimate. */
#define NFEAT 8

/* Reference rows: gpu (0 or 1), operator index, B, H, seconds. */
enum { R_GPU, R_OP, R_B, R_H, R_SECONDS, R_COLS };

/* The per-dtype model (perfmod train --predictor habitat --data MODERNDATA,
 * DATADIR/params/habitat-tc.params unless tc_params= names another): one
 * MLP for the GEMMs of every 16- and 8-bit dtype, the nine inputs below. */
#define TC_NFEAT 9

static struct state {
  struct learned l;
  struct learned tc;
  int tc_state;               /* learned_optional's */
  struct perfmod_mlp *tc_net;
  double tc_scale;
  struct perfmod_mlp *net[2]; /* bmm, linear */
  const double *refs;         /* nrefs x R_COLS */
  size_t nrefs;
  double ref_bw[2];           /* bandwidth of the reference GPUs, GB/s */
  char ref_name[2][64];
  double scale;               /* network output unit, seconds */
  int ready;
} S;

static int
habitat_init (const struct perfmod_host *h, void **state)
{
  /* From nothing, as tile-mlp's init (a restart after fini) */
  memset (&S, 0, sizeof S);
  *state = &S;
  if (learned_init (&S.tc, h, "habitat") < 0)
    return -1;
  return learned_init (&S.l, h, "habitat");
}

static void
habitat_unload (struct state *s)
{
  for (int i = 0; i < 2; i++)
    if (s->net[i]) {
      s->l.host->mlp_free (s->net[i]);
      s->net[i] = NULL;
    }
}

static void
habitat_fini (void *state)
{
  struct state *s = state;
  habitat_unload (s);
  if (s->tc_net)
    s->l.host->mlp_free (s->tc_net);
  s->tc_net = NULL;
  learned_fini (&s->tc);
  learned_fini (&s->l);
}

static const char *const habitat_keys[] = { "params", "tc_params", NULL };

static int
habitat_config (void *state, const char *key, const char *value)
{
  struct state *s = state;
  if (strcmp (key, "tc_params") == 0)
    return learned_optional_config (&s->tc, &s->tc_state, value);
  return learned_config (&s->l, key, value);
}

/* The per-dtype network: 1 loaded, 0 none, -1 refused. */
static int
tc_setup (struct state *s)
{
  int rc;
  const char *v;
  if (s->tc_net)
    return 1;
  if ((rc = learned_optional (&s->tc, &s->tc_state)) <= 0)
    return rc;
  v = s->l.host->params_get (s->tc.params, "output_scale_s");
  s->tc_scale = v ? strtod (v, NULL) : 0;
  if (!(s->tc_scale > 0)) {
    learned_bad (&s->tc) ("%s: no output_scale_s", s->tc.path);
    s->tc.failed = 1;
    return -1;
  }
  if ((s->tc_net = s->l.host->mlp_load (s->tc.params, "gemm", TC_NFEAT, 1)) == NULL) {
    s->tc.failed = 1;
    return -1;
  }
  return 1;
}

static double
dtype_size (int dtype)
{
  return dtype == PERFMOD_DTYPE_FP8 ? 1 : dtype == PERFMOD_DTYPE_FP16
         || dtype == PERFMOD_DTYPE_BF16 ? 2 : 4;
}

/* A kernel of a 16- or 8-bit dtype the per-dtype file covers: 1 with
 * *seconds, 0 when it does not, -1 on error.  Matrix kernels from the
 * network (a batched product as B of one); vector kernels as Habitat's
 * fallback, one read and one write, in the dtype's bytes. */
static int
tc_predict (struct state *s, const struct perfmod_kernel *k, const struct perfmod_gpu *gpu,
            double *seconds)
{
  int rc;
  if (k->dtype <= PERFMOD_DTYPE_TF32 || k->dtype >= PERFMOD_DTYPE_COUNT)
    return 0;
  if ((rc = tc_setup (s)) <= 0)
    return rc;
  if (!(learned_dtypes (&s->tc, k->kclass, 1) & (1u << k->dtype)))
    return 0;
  if (k->kclass == PERFMOD_KERNEL_LINEAR || k->kclass == PERFMOD_KERNEL_BMM) {
    double x[TC_NFEAT] = { 1, (double) k->m, (double) k->n, (double) k->k, gpu->mem_bw_gbps,
                           gpu->mem_gb, (double) gpu->sms,
                           perfmod_gpu_peak_flops (gpu, k->dtype) / 1e9, dtype_size (k->dtype) };
    double y, b = k->kclass == PERFMOD_KERNEL_BMM && k->b > 1 ? (double) k->b : 1;
    s->l.host->mlp_eval (s->tc_net, x, &y);
    *seconds = y > 0 ? b * y * s->tc_scale : 0;
    return 1;
  }
  if (k->kclass >= PERFMOD_KERNEL_ELEMENTWISE && k->kclass <= PERFMOD_KERNEL_LAYERNORM) {
    *seconds = 2.0 * (double) k->b * (double) k->h * dtype_size (k->dtype)
               / (gpu->mem_bw_gbps * 1e9);
    return 1;
  }
  return 0;
}

static int setup_file (struct state *s);

/* The networks and tables, set up on first use; a file refused part way
 * is unloaded and not read again. */
static int
setup (struct state *s)
{
  if (s->ready)
    return 0;
  if (s->l.failed) {
    learned_bad (&s->l) ("no parameters (%s was refused)", s->l.path);
    return -1;
  }
  if (setup_file (s) == 0)
    return 0;
  habitat_unload (s);
  s->l.failed = 1;
  return -1;
}

static int
setup_file (struct state *s)
{
  const struct perfmod_host *host = s->l.host;
  const char *v;
  size_t rows, cols;
  const double *t;

  if (learned_params (&s->l) == NULL)
    return -1;
  for (int i = 0; i < 2; i++)
    if ((s->net[i] = host->mlp_load (s->l.params, i ? "linear" : "bmm", NFEAT, 1)) == NULL)
      return -1;
  v = host->params_get (s->l.params, "output_scale_s");
  s->scale = v ? strtod (v, NULL) : 0;
  t = host->params_tensor (s->l.params, "reference", &rows, &cols);
  if (!(s->scale > 0) || t == NULL || cols != R_COLS) {
    learned_bad (&s->l) ("%s: no output_scale_s or no reference table (N x 5)", s->l.path);
    return -1;
  }
  s->refs = t;
  s->nrefs = rows;
  t = host->params_tensor (s->l.params, "reference_bw", &rows, &cols);
  v = host->params_get (s->l.params, "reference_gpus");
  if (t == NULL || rows * cols != 2 || !(t[0] > 0 && t[1] > 0) || v == NULL ||
      sscanf (v, "%63[^,],%63s", s->ref_name[0], s->ref_name[1]) != 2) {
    learned_bad (&s->l) ("%s: needs reference_gpus (two names) and reference_bw (1 x 2, positive)",
                         s->l.path);
    return -1;
  }
  s->ref_bw[0] = t[0];
  s->ref_bw[1] = t[1];
  s->ready = 1;
  return 0;
}

/* The reference table is sorted by (gpu, op, b, h): binary search. */
static const double *
lookup (const struct state *s, double gpu, double op, double b, double h)
{
  const double key[4] = { gpu, op, b, h };
  size_t lo = 0, hi = s->nrefs;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const double *r = s->refs + mid * R_COLS;
    int c = 0;
    for (int j = 0; j < 4 && c == 0; j++)
      c = r[j] < key[j] ? -1 : r[j] > key[j] ? 1 : 0;
    if (c == 0)
      return r;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

static int
habitat_predict (void *state, const struct perfmod_kernel *k, const struct perfmod_gpu *gpu,
                 double *seconds)
{
  struct state *s = state;
  const struct perfmod_host *host = s->l.host;

  if (k->kclass == PERFMOD_KERNEL_MEMORY) {
    *seconds = k->bytes / (gpu->mem_bw_gbps * 1073741824.0);
    return 0;
  }
  int tc = tc_predict (s, k, gpu, seconds);
  if (tc != 0)
    return tc < 0 ? -1 : 0;
  if (setup (s) < 0)
    return -1;
  if (k->kclass == PERFMOD_KERNEL_LINEAR || k->kclass == PERFMOD_KERNEL_BMM) {
    double x[NFEAT] = { (double) (k->kclass == PERFMOD_KERNEL_LINEAR ? 1 : k->b), (double) k->m,
                        (double) k->n, (double) k->k, gpu->mem_bw_gbps, gpu->mem_gb,
                        (double) gpu->sms, gpu->fp32_gflops };
    double y;
    host->mlp_eval (s->net[k->kclass == PERFMOD_KERNEL_LINEAR], x, &y);
    *seconds = y > 0 ? y * s->scale : 0;       /* NeuSight clips at zero too */
    return 0;
  }
  if (k->kclass >= PERFMOD_KERNEL_ELEMENTWISE && k->kclass <= PERFMOD_KERNEL_LAYERNORM) {
    /* The first reference GPU, or the second when predicting the first. */
    int which = strcmp (gpu->name, s->ref_name[0]) == 0;
    int op = learned_list_index (&s->l, "reference_ops", k->op);
    const double *r = op < 0 ? NULL
                        : lookup (s, which, op, (double) k->b, (double) k->h);
    if (r)
      *seconds = r[R_SECONDS] * s->ref_bw[which] / gpu->mem_bw_gbps;
    else   /* NeuSight's fallback: one read and one write, counted in elements */
      *seconds = 2.0 * (double) k->b * (double) k->h / (gpu->mem_bw_gbps * 1073741824.0);
    return 0;
  }
  host->error ("kernel class %d has no Habitat model", k->kclass);
  return -1;
}

/* The dtypes its networks and reference table cover: the parameter
 * file's dtypes keys (fp32 alone without them); none for fused attention,
 * which Habitat never measured (the core predicts it as its products). */
static unsigned
habitat_dtypes (void *state, int kclass)
{
  struct state *s = state;
  if (kclass == PERFMOD_KERNEL_ATTENTION)
    return 0;
  unsigned mask = learned_dtypes (&s->l, kclass,
                                  kclass >= PERFMOD_KERNEL_LINEAR && kclass <= PERFMOD_KERNEL_LAYERNORM);
  if (tc_setup (s) > 0)
    mask |= learned_dtypes (&s->tc, kclass, 1);
  return mask;
}

static struct perfmod_plugin plugin = {
  .name = "habitat",
  .version = PACKAGE_VERSION,
  .description = "Habitat as NeuSight runs it: MLP on raw features (matrix), reference-GPU scaling (vector)",
  .kind = PERFMOD_PLUGIN_PREDICTOR,
  .init = habitat_init,
  .fini = habitat_fini,
  .predict = habitat_predict,
  .config_keys = habitat_keys,
  .config = habitat_config,
  .dtypes = habitat_dtypes,
};

PERFMOD_REGISTER_PLUGIN (plugin)
