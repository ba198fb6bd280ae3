/* tile-mlp.c: NeuSight's predictor: tiles and waves from the kernel's tile size, utilisation from MLPs per kernel class. */
#include <config.h>

#include <float.h>
#include <stdio.h>

#include "learned.h"
#include "tc-model.h"
#include "tilemlp-model.h"

enum { C_BMM, C_LINEAR, C_EW, C_SOFTMAX, C_LN, NCLASS };
static const char *const class_keys[NCLASS] = { "bmm", "linear", "elementwise", "softmax",
                                                "layernorm" };

/* Utilisation below this is taken as this: a network can put gamma under
 * alpha/waves, which would mean a negative time. */
#define MIN_UTIL 0.01
#define MAX_MEMBERS 16

/* Built twice: as tile-mlp (perfmod's inputs, an ensemble) and, with
 * TILEMLP_NAME defined, as tile-mlp-neusight (the faithful variant); the
 * parameter file says which inputs and how many networks. */
#ifndef TILEMLP_NAME
#define TILEMLP_NAME "tile-mlp"
#define TILEMLP_DESCRIPTION "tiles and waves, utilisation from an ensemble of MLPs per kernel " \
  "class; tensor-core GEMMs, fused attention and collectives per dtype"
#define TILEMLP_TC 1            /* the tensor-core networks (tc-model.h) too */
#endif

static struct state {
  struct learned l;
  int clamp;                    /* keep the network's inputs inside the training range */
  int features, members, nfeat;
  struct perfmod_mlp *net[NCLASS][MAX_MEMBERS];
  const double *range[NCLASS];  /* 2 x nfeat: min, max seen in training */
  const double *tiles[NCLASS];  /* measured tiles, for kernels that bring none */
  size_t ntiles[NCLASS], tcols[NCLASS];
  double *keys[NCLASS];         /* the tables' keys as compared: ntiles x TW_TILE_KEY */
  double floor[NCLASS];         /* seconds: the harness's floor, the training GPUs' median */
  double waves[NCLASS];         /* row-wise classes: the waves every training GPU reached */
  double longest[NCLASS];       /* softmax, layer norm: the row every training GPU reached */
  int ready;
  /* The tensor-core networks: a file of their own (perfmod train on the
   * modern tables), DATADIR/params/tile-mlp-tc.params unless tc_params=
   * names another; without it those kernels are refused or, for 16-bit
   * matrix products, predicted as their fp32 equivalents. */
  struct learned tc;
  struct perfmod_mlp *tcnet[TC_NGROUPS][MAX_MEMBERS];
  int tcmembers[TC_NGROUPS];
  const double *tcrange[TC_NGROUPS]; /* 2 x inputs: training's min, max */
  int tcfeatures[TC_NGROUPS];   /* enum tc_features of the file each group came from */
  int tc_state;                 /* learned_optional's */
  int tc_ready;                 /* loaded and checked */
  /* The tensor-core GEMMs' networks (every dtype, nvfp4 and fp8_block
   * among them): DATADIR/params/tile-mlp-gemm.params unless gemm_params=
   * names another (perfmod train --table gemm,vidur_layer,aiter_gemm,
   * llmcompass_gemm); tc_params' file keeps attention and vector kernels.
   * Without it a GEMM is predicted as its fp32 equivalent, marked. */
  struct learned gemm;
  int gemm_state, gemm_ready;
  /* The MoE layers' network: DATADIR/params/tile-mlp-moe.params unless
   * moe_params= names another (perfmod train --table moe); without it a
   * MoE layer is predicted as its parts (the core's decomposition). */
  struct learned moe;
  int moe_state, moe_ready;
  /* The collectives' networks (NCCL's, DeepEP's): DATADIR/params/
   * tile-mlp-comm.params unless comm_params= names another (perfmod train
   * --table nccl,deepep); without it a collective is its cost model's
   * time (comm_mechanism). */
  struct learned comm;
  int comm_state, comm_ready;
} S;

static int
tm_init (const struct perfmod_host *h, void **state)
{
  /* From nothing: a host that keeps the object loaded may start it again
   * after tm_fini, which freed what these pointers still name. */
  memset (&S, 0, sizeof S);
  *state = &S;
  if (learned_init (&S.tc, h, TILEMLP_NAME) < 0 || learned_init (&S.moe, h, TILEMLP_NAME) < 0
      || learned_init (&S.comm, h, TILEMLP_NAME) < 0 || learned_init (&S.gemm, h, TILEMLP_NAME) < 0)
    return -1;
  S.gemm.suffix = "-gemm";
  S.moe.suffix = "-moe";
  S.comm.suffix = "-comm";
  return learned_init (&S.l, h, TILEMLP_NAME);
}

/* The fp32 networks and tile keys set up so far. */
static void
tm_unload (struct state *s)
{
  for (int c = 0; c < NCLASS; c++) {
    for (int e = 0; e < MAX_MEMBERS; e++)
      if (s->net[c][e]) {
        s->l.host->mlp_free (s->net[c][e]);
        s->net[c][e] = NULL;
      }
    s->l.host->free (s->keys[c]);
    s->keys[c] = NULL;
  }
}

static void
tm_fini (void *state)
{
  struct state *s = state;
  tm_unload (s);
  for (int g = 0; g < TC_NGROUPS; g++)
    for (int e = 0; e < MAX_MEMBERS; e++)
      if (s->tcnet[g][e])
        s->l.host->mlp_free (s->tcnet[g][e]);
  learned_fini (&s->comm);
  learned_fini (&s->moe);
  learned_fini (&s->gemm);
  learned_fini (&s->tc);
  learned_fini (&s->l);
}

static const char *const tm_keys[] = { "params", "clamp", "tc_params", "gemm_params",
                                       "moe_params", "comm_params", NULL };

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
  if (strcmp (key, "tc_params") == 0)
    return learned_optional_config (&s->tc, &s->tc_state, value);
  if (strcmp (key, "gemm_params") == 0)
    return learned_optional_config (&s->gemm, &s->gemm_state, value);
  if (strcmp (key, "moe_params") == 0)
    return learned_optional_config (&s->moe, &s->moe_state, value);
  if (strcmp (key, "comm_params") == 0)
    return learned_optional_config (&s->comm, &s->comm_state, value);
  return learned_config (&s->l, key, value);
}

/* One feature of the tile lookup as compared (see nearest_tile). */
static double
tile_key (const struct state *s, double v)
{
  return s->features != TW_FEAT_NEUSIGHT ? log2 (v + 1) : v;
}

static int setup_file (struct state *s);

/* The fp32 networks, set up on first use.  A file refused part way is
 * unloaded and not read again: each later kernel says it was refused. */
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
  tm_unload (s);
  s->l.failed = 1;
  return -1;
}

static int
setup_file (struct state *s)
{
  const struct perfmod_host *host = s->l.host;
  const char *v;
  char name[64];
  if (learned_params (&s->l) == NULL)
    return -1;
  v = host->params_get (s->l.params, "features");
  if (v == NULL || (s->features = tw_features_of (v)) < 0) {
    learned_bad (&s->l) ("%s: features: expected neusight, extended, extended-waves or "
                         "portable, not '%s'", s->l.path, v ? v : "(missing)");
    return -1;
  }
  s->nfeat = tw_nfeat (s->features);
  v = host->params_get (s->l.params, "members");
  s->members = v ? atoi (v) : 0;
  if (s->members < 1 || s->members > MAX_MEMBERS) {
    learned_bad (&s->l) ("%s: members: expected 1 to %d, not '%s'", s->l.path, MAX_MEMBERS,
                         v ? v : "(missing)");
    return -1;
  }
  for (int c = 0; c < NCLASS; c++) {
    for (int e = 0; e < s->members; e++) {
      snprintf (name, sizeof name, "%s.%d", class_keys[c], e + 1);
      if ((s->net[c][e] = host->mlp_load (s->l.params, name, s->nfeat, TW_NOUT)) == NULL)
        return -1;
    }
    snprintf (name, sizeof name, "%s.waves", class_keys[c]);
    s->waves[c] = (v = host->params_get (s->l.params, name)) ? atof (v) : 0;
    snprintf (name, sizeof name, "%s.longest_row", class_keys[c]);
    s->longest[c] = (v = host->params_get (s->l.params, name)) ? atof (v) : 0;
    snprintf (name, sizeof name, "floor.%s", class_keys[c]);
    s->floor[c] = (v = host->params_get (s->l.params, name)) ? atof (v) * 1e-6 : 0;
    snprintf (name, sizeof name, "%s.range", class_keys[c]);
    size_t rr, rc;
    s->range[c] = host->params_tensor (s->l.params, name, &rr, &rc);
    if (s->clamp && (s->range[c] == NULL || rr * rc != 2 * (size_t) s->nfeat)) {
      learned_bad (&s->l) ("%s: no feature range %s for clamp=on", s->l.path, name);
      return -1;
    }
    if (c == C_SOFTMAX || c == C_LN)
      continue;                         /* their tile is the row */
    snprintf (name, sizeof name, "%s.tiles", class_keys[c]);
    s->tiles[c] = host->params_tensor (s->l.params, name, &s->ntiles[c], &s->tcols[c]);
    if (s->tiles[c] == NULL || s->tcols[c] != TW_TILE_KEY + (c <= C_LINEAR ? 2u : 1u)) {
      learned_bad (&s->l) ("%s: no tile table %s (N x %u)", s->l.path, name,
                           TW_TILE_KEY + (c <= C_LINEAR ? 2u : 1u));
      return -1;
    }
    s->keys[c] = host->alloc (s->ntiles[c] * TW_TILE_KEY * sizeof (double));
    for (size_t i = 0; i < s->ntiles[c]; i++)
      for (size_t j = 0; j < TW_TILE_KEY; j++)
        s->keys[c][i * TW_TILE_KEY + j] = tile_key (s, s->tiles[c][i * s->tcols[c] + j]);
  }
  s->ready = 1;
  return 0;
}

/* NeuSight's tile table lookup: the measured kernel nearest in raw
 * (shape, GPU) features gives its tile.  perfmod's variant compares
 * log2 of the features, so the largest dimension does not decide alone. */
static const double *
nearest_tile (const struct state *s, int c, const double *f)
{
  const double *k = s->keys[c];
  double q[TW_TILE_KEY], bd = DBL_MAX;
  size_t best = 0;
  for (size_t j = 0; j < TW_TILE_KEY; j++)
    q[j] = tile_key (s, f[j]);
  for (size_t i = 0; i < s->ntiles[c]; i++, k += TW_TILE_KEY) {
    double d = 0;
    for (size_t j = 0; j < TW_TILE_KEY; j++)
      d += (k[j] - q[j]) * (k[j] - q[j]);
    if (d < bd) {
      bd = d;
      best = i;
    }
  }
  return s->tiles[c] + best * s->tcols[c] + TW_TILE_KEY;
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

/* A copy of the caller's kernel; one built against an older header
 * passes a shorter struct, the rest reads 0. */
static void
kernel_copy (struct perfmod_kernel *dst, const struct perfmod_kernel *k)
{
  memset (dst, 0, sizeof *dst);
  memcpy (dst, k, k->struct_size < sizeof *dst ? k->struct_size : sizeof *dst);
}

/* One kernel under one tile: the members' median and standard deviation
 * (0 with one member). */
static int
estimate_tiled (struct state *s, int c, const struct perfmod_kernel *k,
                const struct perfmod_gpu *gpu, const double tile[2],
                struct perfmod_estimate *est)
{
  const struct perfmod_host *host = s->l.host;
  struct tw_gpu g;
  struct tw_case tc;
  double out[TW_NOUT], member_s[MAX_MEMBERS], sum = 0, sum2 = 0;
  double b = c == C_LINEAR ? 1 : (double) k->b;
  int rc;

  /* perfmod's variant: a row longer than every training GPU's longest is
   * cut into as many equal rows as bring it within, the same outputs and
   * bytes; the networks, past the rows they saw, slow down per byte (V100,
   * 32,768 layer-norm rows of 16,384: measured 7.98 ms, 11.81 predicted
   * as such, 9.33 as four times the rows of 4,096). */
  if (c >= C_SOFTMAX && s->longest[c] > 0 && (double) k->h > s->longest[c]) {
    struct perfmod_kernel cut;
    double parts = ceil ((double) k->h / s->longest[c]), shorter[2];
    kernel_copy (&cut, k);
    cut.h = (int64_t) ceil ((double) k->h / parts);
    cut.b = k->b * (int64_t) parts;
    shorter[0] = (double) cut.h;
    shorter[1] = 0;
    if (estimate_tiled (s, c, &cut, gpu, shorter, est) < 0)
      return -1;
    est->seconds *= (double) k->h / ((double) cut.h * parts);
    est->spread *= (double) k->h / ((double) cut.h * parts);
    return 0;
  }
  tw_gpu_of (gpu, &g);
  rc = c <= C_LINEAR ? tw_matrix (&g, s->features, b, (double) k->m, (double) k->n,
                                  (double) k->k, tile[0], tile[1], &tc)
     : tw_vector (&g, s->features, b, (double) k->h, k->mem_per_output, k->ops_per_output,
                  tile[0], &tc);
  if (rc < 0) {
    host->error ("no tile formulation for this kernel (tile %gx%g on %s)", tile[0], tile[1],
                 gpu->name);
    return -1;
  }
  /* perfmod's variant: a row-wise kernel of more waves than every training
   * GPU reached runs in steady state, each further wave as long as the
   * last; the networks, which never saw such a GPU at such a count, put
   * the model runs' attention softmax far below its bandwidth.  So it is
   * predicted at that many waves' rows and scaled by the rows. */
  if (c >= C_EW && s->waves[c] > 0 && tc.waves > s->waves[c] && b > 1) {
    struct perfmod_kernel fewer;
    double rows = fmax (1, floor (b * s->waves[c] / tc.waves));
    kernel_copy (&fewer, k);
    fewer.b = (int64_t) rows;
    if (estimate_tiled (s, c, &fewer, gpu, tile, est) < 0)
      return -1;
    est->seconds *= b / rows;
    est->spread *= b / rows;
    return 0;
  }
  if (s->clamp)
    for (int j = 0; j < s->nfeat; j++)
      tc.x[j] = fmin (fmax (tc.x[j], s->range[c][j]), s->range[c][s->nfeat + j]);
  for (int e = 0; e < s->members; e++) {
    double t;
    int j;
    host->mlp_eval (s->net[c][e], tc.x, out);
    t = tw_seconds (&tc, fmax (tw_util (&tc, out), MIN_UTIL));
    sum += t;
    sum2 += t * t;
    for (j = e; j > 0 && member_s[j - 1] > t; j--)     /* keep them sorted */
      member_s[j] = member_s[j - 1];
    member_s[j] = t;
  }
  /* The median: one member extrapolating wildly does not move it. */
  est->seconds = s->members % 2 ? member_s[s->members / 2]
               : (member_s[s->members / 2 - 1] + member_s[s->members / 2]) / 2;
  est->spread = 0;
  if (s->members > 1)
    est->spread = sqrt (fmax (0, (sum2 - sum * sum / s->members) / (s->members - 1)));
  return 0;
}

/* A graph kernel without a measured tile: the tile of the nearest
 * measured kernel (NeuSight's MetaTable), then the estimate. */
static int
estimate_untiled (struct state *s, int c, const struct perfmod_kernel *k,
                  const struct perfmod_gpu *gpu, struct perfmod_estimate *est)
{
  double f[TW_TILE_KEY], tile[2] = { 0, 0 };
  const double *t;
  tw_tile_key (k, gpu, f);
  t = nearest_tile (s, c, f);
  tile[0] = t[0];
  if (c <= C_LINEAR)
    tile[1] = t[1];
  return estimate_tiled (s, c, k, gpu, tile, est);
}

/* The kernel's own time.  A graph's matrix product names its output
 * (m x k) in one orientation, but the library is free to compute the
 * transpose (row-major C is column-major C^T, and cuBLAS picks its tiles
 * for whichever it is given); measured in both orientations, such
 * products take the same time (NeuSight's traces: a 64 x 1024 attention
 * gradient as long as its 1024 x 64 twin), while the tile formulation,
 * which tiles m and k differently, does not.  So an untiled product is
 * predicted in both orientations and the faster one is kept (perfmod's
 * variant; the faithful one predicts the orientation it is given). */
static int
estimate_own (struct state *s, int c, const struct perfmod_kernel *k,
              const struct perfmod_gpu *gpu, struct perfmod_estimate *est)
{
  struct perfmod_kernel own;
  double tile[2] = { 0, 0 };

  /* perfmod's variant costs a vector kernel by the bytes it moves itself
   * where the graph knows them (NeuSight's rule gives a gradient
   * accumulation its node's activations); the faithful one by the rule. */
  if (c >= C_EW && s->features != TW_FEAT_NEUSIGHT &&
      k->struct_size >= offsetof (struct perfmod_kernel, own_mem_per_output) +
                        sizeof k->own_mem_per_output &&
      k->own_mem_per_output > 0 && k->own_mem_per_output != k->mem_per_output) {
    kernel_copy (&own, k);
    own.mem_per_output = k->own_mem_per_output;
    k = &own;
  }
  if (k->struct_size >= offsetof (struct perfmod_kernel, tile) + sizeof k->tile) {
    tile[0] = k->tile[0];
    tile[1] = k->tile[1];
  }
  if (c == C_SOFTMAX || c == C_LN)
    tile[0] = (double) k->h;
  if (tile[0] > 0)
    return estimate_tiled (s, c, k, gpu, tile, est);
  if (c <= C_LINEAR && k->m != k->k && s->features != TW_FEAT_NEUSIGHT) {
    struct perfmod_kernel t;
    struct perfmod_estimate other = *est;
    kernel_copy (&t, k);
    t.m = k->k;
    t.k = k->m;
    if (estimate_untiled (s, c, k, gpu, est) < 0 || estimate_untiled (s, c, &t, gpu, &other) < 0)
      return -1;
    if (other.seconds < est->seconds)
      *est = other;
    return 0;
  }
  return estimate_untiled (s, c, k, gpu, est);
}

/* The harness's floor for a kernel timed alone on gpu: the GPU's own
 * where it was a training GPU, else the training GPUs' median (0 for
 * parameters trained without it, as the faithful variant's). */
static double
harness_floor (const struct state *s, int c, const struct perfmod_gpu *gpu)
{
  const struct perfmod_host *host = s->l.host;
  char name[160];
  const char *v;
  snprintf (name, sizeof name, "floor.%s.%s", gpu->name, class_keys[c]);
  v = host->params_get (s->l.params, name);
  return v ? atof (v) * 1e-6 : s->floor[c];
}

/* The networks of one tensor-core file, loaded on first use (the groups
 * in `want`, a mask of 1 << enum tc_group): 1 when there are some, 0 when
 * there is no such file (the default's absence is no error), -1 after
 * host->error() for a file that is there but unusable. */
static int
tc_load (struct state *s, struct learned *l, int *state, int *ready, unsigned want)
{
#ifdef TILEMLP_TC
  const struct perfmod_host *host = s->l.host;
  const char *v, *part;
  char name[64];
  int rc = learned_optional (l, state), features;
  if (rc <= 0 || *ready)
    return rc;
  *state = -1;                  /* until the checks below pass */
  part = host->params_get (l->params, "part");
  if (part == NULL || strcmp (part, "tensor-core") != 0) {
    learned_bad (l) ("%s: not tensor-core parameters (part = %s)", l->path, part ? part : "(none)");
    l->failed = 1;
    return -1;
  }
  v = host->params_get (l->params, "features");
  if (v == NULL || (features = tc_features_of (v)) < 0) {
    learned_bad (l) ("%s: features: expected tc-nochip or tc, not '%s'", l->path,
                     v ? v : "(missing)");
    l->failed = 1;
    return -1;
  }
  v = host->params_get (l->params, "members");
  int members = v ? atoi (v) : 0;
  if (members < 1 || members > MAX_MEMBERS) {
    learned_bad (l) ("%s: members: expected 1 to %d", l->path, MAX_MEMBERS);
    l->failed = 1;
    return -1;
  }
  for (int g = 0; g < TC_NGROUPS; g++) {
    if (!(want & 1u << g))
      continue;
    snprintf (name, sizeof name, "%s.rows", tc_group_keys[g]);
    if (host->params_get (l->params, name) == NULL)
      continue;                 /* trained without rows of this group */
    for (int e = 0; e < members; e++) {
      snprintf (name, sizeof name, "%s.%d", tc_group_keys[g], e + 1);
      if ((s->tcnet[g][e] = host->mlp_load (l->params, name, tc_group_nfeat[g], 1)) == NULL) {
        l->failed = 1;
        return -1;
      }
    }
    s->tcmembers[g] = members;
    s->tcfeatures[g] = features;
    size_t rr, rc2;
    snprintf (name, sizeof name, "%s.range", tc_group_keys[g]);
    s->tcrange[g] = host->params_tensor (l->params, name, &rr, &rc2);
    if (s->tcrange[g] && rr * rc2 != 2 * (size_t) tc_group_nfeat[g]) {
      learned_bad (l) ("%s: %s has %zu values, not 2 x %d", l->path, name, rr * rc2,
                       tc_group_nfeat[g]);
      l->failed = 1;
      return -1;
    }
  }
  *state = 1;
  *ready = 1;
  return 1;
#else
  (void) s, (void) l, (void) state, (void) ready, (void) want;
  return 0;
#endif
}

/* The tensor-core file's networks (attention and vector kernels: the
 * GEMMs', the MoE layers' and the collectives' have files of their own). */
static int
tc_setup (struct state *s)
{
  return tc_load (s, &s->tc, &s->tc_state, &s->tc_ready,
                  ~(1u << TC_GEMM | 1u << TC_MOE | 1u << TC_COMM | 1u << TC_DEEPEP));
}

/* The file of the group that models g's kernels, loaded. */
static int
tc_setup_group (struct state *s, int g)
{
  if (g == TC_GEMM)
    return tc_load (s, &s->gemm, &s->gemm_state, &s->gemm_ready, 1u << TC_GEMM);
  if (g == TC_MOE)
    return tc_load (s, &s->moe, &s->moe_state, &s->moe_ready, 1u << TC_MOE);
  if (g == TC_COMM || g == TC_DEEPEP)
    return tc_load (s, &s->comm, &s->comm_state, &s->comm_ready,
                    1u << TC_COMM | 1u << TC_DEEPEP);
  return tc_setup (s);
}

/* Group g's networks on k: seconds (the geometric mean of the members'
 * times) and the members' spread in log space; -1 if k lacks what the
 * group reads. */
static int
tc_eval (struct state *s, int g, const struct perfmod_kernel *k, const struct perfmod_gpu *gpu,
         double *seconds, double *sd)
{
  struct tc_case c;
  double out, sum = 0, sum2 = 0;
  if (tc_case_of (k, gpu, s->tcfeatures[g], &c) < 0)
    return -1;
  /* inside the training's range: no extrapolation to an unlike GPU */
  if (s->tcrange[g])
    for (int j = 0; j < c.nfeat; j++)
      c.x[j] = fmin (fmax (c.x[j], s->tcrange[g][j]), s->tcrange[g][c.nfeat + j]);
  for (int e = 0; e < s->tcmembers[g]; e++) {
    s->l.host->mlp_eval (s->tcnet[g][e], c.x, &out);
    sum += out;
    sum2 += out * out;
  }
  *seconds = tc_time (&c, sum / s->tcmembers[g]);
  *sd = s->tcmembers[g] > 1
        ? sqrt (fmax (0, (sum2 - sum * sum / s->tcmembers[g]) / (s->tcmembers[g] - 1))) : 0;
  return 0;
}

/* A collective never takes less time for a larger buffer: its time is
 * the running maximum of the network's at buffers of 2^(j/2) bytes up to
 * k's, interpolated between the two around it (exact at those sizes). */
static int
tc_comm_monotone (struct state *s, const struct perfmod_kernel *k, const struct perfmod_gpu *gpu,
                  double *seconds)
{
  struct perfmod_kernel at;
  double lo = 1, hi, t_lo = 0, t_hi, sd;
  kernel_copy (&at, k);
  for (int j = 0;; j++) {
    hi = exp2 (j / 2.0);
    at.bytes = hi;
    if (tc_eval (s, TC_COMM, &at, gpu, &t_hi, &sd) < 0)
      return -1;
    t_hi = fmax (t_hi, t_lo);
    if (hi >= k->bytes || j > 200)
      break;
    lo = hi;
    t_lo = t_hi;
  }
  *seconds = hi > lo ? t_lo + (t_hi - t_lo) * (k->bytes - lo) / (hi - lo) : t_hi;
  return 0;
}

/* The file group g's networks came from. */
static struct learned *
tc_file (struct state *s, int g)
{
  return g == TC_GEMM ? &s->gemm : g == TC_MOE ? &s->moe
       : g == TC_COMM || g == TC_DEEPEP ? &s->comm : &s->tc;
}

/* Whether gpu is among the GPUs group g's file was trained on (its gpus
 * key, a comma list of gpus.d sections). */
static bool
tc_trained_on (struct state *s, int g, const struct perfmod_gpu *gpu)
{
  struct learned *l = tc_file (s, g);
  const char *v = l->params ? s->l.host->params_get (l->params, "gpus") : NULL;
  size_t n = strlen (gpu->name);
  for (const char *p = v; p && *p; p = strchr (p, ',') ? strchr (p, ',') + 1 : NULL)
    if (strncmp (p, gpu->name, n) == 0 && (p[n] == ',' || p[n] == '\0'))
      return true;
  return false;
}

static int tc_estimate (struct state *s, const struct perfmod_kernel *k,
                        const struct perfmod_gpu *gpu, struct perfmod_estimate *est);

/* The GEMM networks learned a serving engine's quantised GEMM call (its
 * tables time the layer's forward): the activations quantised by a kernel
 * of their own (read in 16 bits, written in the GEMM's dtype), then the
 * GEMM.  A GEMM whose input another kernel already quantised (a training
 * step's Transformer Engine casts, costed apart) is that call less its
 * quantisation, predicted as the vector networks predict a copy of those
 * bytes; never under the GEMM's physical floor or one kernel's fixed
 * cost.  Returns the seconds taken off (0: nothing to take). */
static double
tc_quantisation_taken (struct state *s, const struct perfmod_kernel *k,
                       const struct perfmod_gpu *gpu, double *seconds)
{
  struct perfmod_kernel q;
  struct perfmod_estimate qe = { .seconds = 0 };
  struct phys_cost pc;
  double rows = k->kclass == PERFMOD_KERNEL_BMM ? (double) k->b * (double) k->m : (double) k->m;
  double floor;
  if (k->struct_size < offsetof (struct perfmod_kernel, input_quantised)
                       + sizeof k->input_quantised || !k->input_quantised ||
      (k->kclass != PERFMOD_KERNEL_LINEAR && k->kclass != PERFMOD_KERNEL_BMM) ||
      (k->dtype != PERFMOD_DTYPE_FP8 && k->dtype != PERFMOD_DTYPE_FP8_BLOCK &&
       k->dtype != PERFMOD_DTYPE_NVFP4) || phys_cost_of (k, gpu, &pc) < 0)
    return 0;
  memset (&q, 0, sizeof q);
  q.struct_size = sizeof q;
  q.kclass = PERFMOD_KERNEL_MEMORY;
  q.op = "quantize";
  q.dtype = PERFMOD_DTYPE_BF16;
  q.elem_bytes = 2;
  q.bytes = rows * (double) k->n * (2 + k->elem_bytes);
  if (tc_estimate (s, &q, gpu, &qe) <= 0 || !(qe.seconds > 0))
    return 0;
  floor = fmax (phys_floor (&pc, gpu), TC_LAUNCH_CYCLES / (gpu->clock_mhz * 1e6));
  double t = fmax (floor, *seconds - qe.seconds), taken = *seconds - t;
  *seconds = t;
  return taken > 0 ? taken : 0;
}

/* A kernel the tensor-core networks model: the geometric mean of the
 * members' times, their spread and, where the group's errors were
 * measured (tc_interval80), an 80 % interval; 0 if none models it. */
static int
tc_estimate (struct state *s, const struct perfmod_kernel *k, const struct perfmod_gpu *gpu,
             struct perfmod_estimate *est)
{
  struct perfmod_kernel own;
  double scale, sd;
  int g, rc;
  kernel_copy (&own, k);
  scale = tc_as_forward (&own);
  if ((g = tc_group_of (&own)) < 0 || (rc = tc_setup_group (s, g)) == 0)
    return 0;
  if (rc < 0)
    return -1;
  if (s->tcmembers[g] == 0)
    return 0;
  if (g == TC_VECTOR && s->tcrange[g])
    tc_vector_relay (&own, s->tcrange[g][1]);
  if (tc_eval (s, g, &own, gpu, &est->seconds, &sd) < 0
      || (g == TC_COMM && tc_comm_monotone (s, &own, gpu, &est->seconds) < 0)) {
    s->l.host->error ("%s kernel on %s: the GPU lacks what the tensor-core model reads (SMs, "
                      "clock, bandwidth%s)", tc_group_keys[g] + 3, gpu->name,
                      g == TC_COMM ? ", link bandwidth" : "");
    return -1;
  }
  est->seconds *= scale;
  if (g == TC_GEMM && tc_quantisation_taken (s, &own, gpu, &est->seconds) > 0)
    est->basis = "the GEMM alone: the call less its input's quantisation";
  est->spread = est->seconds * (exp (sd) - 1);
  double w = tc_interval_width (g, own.kclass, own.dtype, tc_trained_on (s, g, gpu));
  if (w > 0 && PERFMOD_ESTIMATE_HAS (s->l.host, high)) {
    est->low = est->seconds * exp (-w);
    est->high = est->seconds * exp (w);
  }
  return 1;
}

/* A collective without a network to correct it: the time its case
 * starts from (NCCL's cost model or DeepEP's, physics.h) with no
 * correction, never under the links' bound, said in the basis. */
static int
comm_mechanism (struct state *s, const struct perfmod_kernel *k, const struct perfmod_gpu *gpu,
                struct perfmod_estimate *est)
{
  struct tc_case c;
  if (tc_case_of (k, gpu, TC_FEAT_NOCHIP, &c) < 0) {
    s->l.host->error ("%s on %s: no link bandwidth (link_gbps) or no ranks for NCCL's model",
                      k->op ? k->op : "collective", gpu->name);
    return -1;
  }
  est->seconds = tc_time (&c, 0);
  est->spread = 0;
  est->basis = tc_group_of (k) == TC_DEEPEP ? "DeepEP's model (no network to correct it)"
                                            : "NCCL's model (no network to correct it)";
  return 0;
}

/* Seconds for one kernel: the network's estimate is the kernel's own time
 * (perfmod train took the harness's floor out of the measurements); a
 * kernel timed alone pays the floor on top. */
static int
tm_estimate (void *state, const struct perfmod_kernel *k, const struct perfmod_gpu *gpu,
             struct perfmod_estimate *est)
{
  struct state *s = state;
  int c = class_of (k->kclass), rc;

  if ((rc = tc_estimate (s, k, gpu, est)) != 0)
    return rc < 0 ? -1 : 0;
  if (k->kclass == PERFMOD_KERNEL_MOE) {           /* the core predicts its parts */
    s->l.host->error ("no MoE network (%s)", s->moe.path ? s->moe.path : "not found");
    return -1;
  }
  if (k->kclass == PERFMOD_KERNEL_COMM)   /* no network to correct it: the mechanism */
    return comm_mechanism (s, k, gpu, est);
  if (k->kclass == PERFMOD_KERNEL_ATTENTION) {
    s->l.host->error ("attention kernels need the tensor-core parameters (%s): perfmod train "
                      "--predictor tile-mlp --data MODERNDATA", s->tc.path ? s->tc.path
                                                                           : "not found");
    return -1;
  }
  if (c < 0) {                          /* no class: memory-bound */
    est->seconds = k->bytes / (gpu->mem_bw_gbps * 1073741824.0);
    est->basis = "memory-bound";
    return 0;
  }
  if (setup (s) < 0 || estimate_own (s, c, k, gpu, est) < 0)
    return -1;
  if (k->struct_size >= offsetof (struct perfmod_kernel, isolated) + sizeof k->isolated &&
      k->isolated)
    est->seconds += harness_floor (s, c, gpu);
  return 0;
}

static int
tm_predict (void *state, const struct perfmod_kernel *k, const struct perfmod_gpu *gpu,
            double *seconds)
{
  struct perfmod_estimate est = { .seconds = 0 };
  int rc = tm_estimate (state, k, gpu, &est);
  *seconds = est.seconds;
  return rc;
}

/* The dtypes its networks were trained on, per class: the parameter
 * file's dtypes keys (fp32 alone without them, as NeuSight's data is). */
static unsigned
tm_dtypes (void *state, int kclass)
{
  struct state *s = state;
  unsigned mask = learned_dtypes (&s->l, kclass, class_of (kclass) >= 0);
  if (kclass == PERFMOD_KERNEL_ATTENTION)
    mask = 0;
  if (kclass == PERFMOD_KERNEL_MOE)
    return tc_setup_group (s, TC_MOE) > 0 ? learned_dtypes (&s->moe, kclass, 1) : 0;
  /* the collectives' file loaded now, before a host's threads ask for one (a calibrated
   * step's collectives are this plugin's estimates: step_collective_seconds) */
  if (kclass == PERFMOD_KERNEL_COMM)
    (void) tc_setup_group (s, TC_COMM);
  if (kclass == PERFMOD_KERNEL_LINEAR || kclass == PERFMOD_KERNEL_BMM)
    return mask | (tc_setup_group (s, TC_GEMM) > 0 ? learned_dtypes (&s->gemm, kclass, 1) : 0);
  if (tc_setup (s) > 0) {
    unsigned tc = learned_dtypes (&s->tc, kclass, 1), half = (1u << PERFMOD_DTYPE_FP16) |
                                                            (1u << PERFMOD_DTYPE_BF16);
    /* a vector kernel moves the same bytes in fp16 and bf16: one covers the other */
    if ((kclass == PERFMOD_KERNEL_ELEMENTWISE || kclass == PERFMOD_KERNEL_SOFTMAX ||
         kclass == PERFMOD_KERNEL_LAYERNORM) && (tc & half))
      tc |= half;
    mask |= tc;
  }
  return mask;
}

static struct perfmod_plugin plugin = {
  .name = TILEMLP_NAME,
  .version = PACKAGE_VERSION,
  .description = TILEMLP_DESCRIPTION,
  .kind = PERFMOD_PLUGIN_PREDICTOR,
  .init = tm_init,
  .fini = tm_fini,
  .predict = tm_predict,
  .estimate = tm_estimate,
  .config_keys = tm_keys,
  .config = tm_config,
  .dtypes = tm_dtypes,
};

PERFMOD_REGISTER_PLUGIN (plugin)
