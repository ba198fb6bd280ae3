/* tile-mlp.c: NeuSight's predictor: tiles and waves from the kernel's tile size, utilisation from one MLP per kernel class. */
#include <config.h>

#include <float.h>
#include <stdio.h>

#include "learned.h"
#include "tilemlp-model.h"

enum { C_BMM, C_LINEAR, C_EW, C_SOFTMAX, C_LN, NCLASS };
static const char *const class_keys[NCLASS] = { "bmm", "linear", "elementwise", "softmax",
                                                "layernorm" };

/* Utilisation below this is taken as this: a network can put gamma under
 * alpha/waves, which would mean a negative time. */
#define MIN_UTIL 0.01

static struct state {
  struct learned l;
  int clamp;                    /* keep the network's inputs inside the training range */
  struct perfmod_mlp *net[NCLASS];
  const double *range[NCLASS];  /* 2 x TW_NFEAT: min, max seen in training */
  const double *tiles[NCLASS];  /* measured tiles, for kernels that bring none */
  size_t ntiles[NCLASS], tcols[NCLASS];
  int ready;
} S;

static int
tm_init (const struct perfmod_host *h, void **state)
{
  *state = &S;
  return learned_init (&S.l, h, "tile-mlp");
}

static void
tm_fini (void *state)
{
  struct state *s = state;
  for (int c = 0; c < NCLASS; c++)
    if (s->net[c])
      s->l.host->mlp_free (s->net[c]);
  learned_fini (&s->l);
}

static const char *const tm_keys[] = { "params", "clamp", NULL };

static int
tm_config (void *state, const char *key, const char *value)
{
  struct state *s = state;
  if (strcmp (key, "clamp") == 0) {
    if (strcmp (value, "on") && strcmp (value, "off")) {
      s->l.host->error ("clamp: expected on or off, not '%s'", value);
      return -1;
    }
    s->clamp = strcmp (value, "on") == 0;
    return 0;
  }
  return learned_config (&s->l, key, value);
}

static int
setup (struct state *s)
{
  const struct perfmod_host *host = s->l.host;
  char name[64];
  if (s->ready)
    return 0;
  if (learned_params (&s->l) == NULL)
    return -1;
  for (int c = 0; c < NCLASS; c++) {
    if ((s->net[c] = host->mlp_load (s->l.params, class_keys[c], TW_NFEAT, TW_NOUT)) == NULL)
      return -1;
    snprintf (name, sizeof name, "%s.range", class_keys[c]);
    size_t rr, rc;
    s->range[c] = host->params_tensor (s->l.params, name, &rr, &rc);
    if (s->clamp && (s->range[c] == NULL || rr * rc != 2 * TW_NFEAT)) {
      host->error ("%s: no feature range %s for clamp=on", s->l.path, name);
      return -1;
    }
    if (c == C_SOFTMAX || c == C_LN)
      continue;                         /* their tile is the row */
    snprintf (name, sizeof name, "%s.tiles", class_keys[c]);
    s->tiles[c] = host->params_tensor (s->l.params, name, &s->ntiles[c], &s->tcols[c]);
    if (s->tiles[c] == NULL || s->tcols[c] != (c <= C_LINEAR ? 11u : 10u)) {
      host->error ("%s: no tile table %s", s->l.path, name);
      return -1;
    }
  }
  s->ready = 1;
  return 0;
}

/* NeuSight's tile table lookup: the measured kernel nearest in raw
 * (shape, GPU) features gives its tile. */
static const double *
nearest_tile (const struct state *s, int c, const double *f, size_t nf)
{
  const double *best = NULL, *t = s->tiles[c];
  double bd = DBL_MAX;
  for (size_t i = 0; i < s->ntiles[c]; i++, t += s->tcols[c]) {
    double d = 0;
    for (size_t j = 0; j < nf; j++)
      d += (t[j] - f[j]) * (t[j] - f[j]);
    if (d < bd) {
      bd = d;
      best = t;
    }
  }
  return best + nf;
}

static int
class_of (int kclass)
{
  switch (kclass) {
  case PERFMOD_KERNEL_BMM: return C_BMM;
  case PERFMOD_KERNEL_LINEAR: return C_LINEAR;
  case PERFMOD_KERNEL_ELEMENTWISE: return C_EW;
  case PERFMOD_KERNEL_SOFTMAX: return C_SOFTMAX;
  case PERFMOD_KERNEL_LAYERNORM: return C_LN;
  default: return -1;
  }
}

static int
tm_predict (void *state, const struct perfmod_kernel *k, const struct perfmod_gpu *gpu,
            double *seconds)
{
  struct state *s = state;
  const struct perfmod_host *host = s->l.host;
  struct tw_gpu g = { gpu->sms, gpu->fp32_gflops, gpu->mem_gb, gpu->mem_bw_gbps, gpu->l2_mb };
  struct tw_case tc;
  double tile[2] = { 0, 0 }, out[TW_NOUT], b = (double) k->b;
  int c = class_of (k->kclass), rc;

  if (c < 0) {                          /* no class: memory-bound */
    *seconds = k->bytes / (gpu->mem_bw_gbps * 1073741824.0);
    return 0;
  }
  if (setup (s) < 0)
    return -1;
  if (k->struct_size >= offsetof (struct perfmod_kernel, tile) + sizeof k->tile) {
    tile[0] = k->tile[0];
    tile[1] = k->tile[1];
  }
  if (c == C_LINEAR)
    b = 1;
  if (c == C_SOFTMAX || c == C_LN)
    tile[0] = (double) k->h;
  else if (tile[0] <= 0) {
    const double *t;
    if (c <= C_LINEAR) {
      double f[9] = { b, (double) k->m, (double) k->n, (double) k->k, g.sms, g.gflops, g.mem_gb,
                      g.bw_gbps, g.l2_mb };
      t = nearest_tile (s, c, f, 9);
      tile[1] = t[1];
    }
    else {
      double f[9] = { b, (double) k->h, g.sms, g.gflops, g.mem_gb, g.bw_gbps, g.l2_mb,
                      k->mem_per_output, k->ops_per_output };
      t = nearest_tile (s, c, f, 9);
    }
    tile[0] = t[0];
  }
  rc = c <= C_LINEAR ? tw_matrix (&g, b, (double) k->m, (double) k->n, (double) k->k, tile[0],
                                  tile[1], &tc)
     : tw_vector (&g, b, (double) k->h, k->mem_per_output, k->ops_per_output, tile[0], &tc);
  if (rc < 0) {
    host->error ("no tile formulation for this kernel (tile %gx%g on %s)", tile[0], tile[1],
                 gpu->name);
    return -1;
  }
  if (s->clamp)
    for (int j = 0; j < TW_NFEAT; j++)
      tc.x[j] = fmin (fmax (tc.x[j], s->range[c][j]), s->range[c][TW_NFEAT + j]);
  host->mlp_eval (s->net[c], tc.x, out);
  *seconds = tw_seconds (&tc, fmax (tw_util (&tc, out), MIN_UTIL));
  return 0;
}

static struct perfmod_plugin plugin = {
  .name = "tile-mlp",
  .version = PACKAGE_VERSION,
  .description = "NeuSight: tiles and waves, utilisation from an MLP per kernel class",
  .kind = PERFMOD_PLUGIN_PREDICTOR,
  .init = tm_init,
  .fini = tm_fini,
  .predict = tm_predict,
  .config_keys = tm_keys,
  .config = tm_config,
};

PERFMOD_REGISTER_PLUGIN (plugin)
