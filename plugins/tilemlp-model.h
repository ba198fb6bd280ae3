/* tilemlp-model.h: NeuSight's tile/wave formulation, shared by perfmod train and the tile-mlp plugin so both compute it one way. */
#ifndef PERFMOD_TILEMLP_MODEL_H
#define PERFMOD_TILEMLP_MODEL_H

#include <math.h>
#include <string.h>

#include "perfmod-plugin.h"

/* Units follow NeuSight (Model/mlp_wave*.py): FLOPs in 1e9, operator bytes
 * in 2^30, tile bytes in 2^20 (MB), peaks in GFLOP/s and GB/s.  Elements are
 * 4 bytes.  Four input sets: NeuSight's four (log2 of tile quantities per
 * SM); "extended", which adds how much of the padded tiles is useful work
 * and how full the waves are on average; "extended-waves", perfmod's
 * default, extended with log2 of the waves in place of the input against
 * the GPU's memory capacity, which does not make a kernel faster or slower
 * but tells the training GPUs apart, so that a network keyed on it fails on
 * a GPU it has not seen (doc/training.md); and "portable", which drops the
 * input against the L2 too. */
enum tw_features { TW_FEAT_NEUSIGHT, TW_FEAT_EXTENDED, TW_FEAT_WAVES, TW_FEAT_PORTABLE };
#define TW_NFEAT_NEUSIGHT 4
#define TW_NFEAT_EXTENDED 6
#define TW_NFEAT_WAVES 6
#define TW_NFEAT_PORTABLE 5
#define TW_NFEAT_MAX 6
#define TW_NOUT 3

struct tw_gpu {
  double sms, gflops, mem_gb, bw_gbps, l2_mb;
};

static inline void
tw_gpu_of (const struct perfmod_gpu *g, struct tw_gpu *t)
{
  t->sms = g->sms;
  t->gflops = g->fp32_gflops;
  t->mem_gb = g->mem_gb;
  t->bw_gbps = g->mem_bw_gbps;
  t->l2_mb = g->l2_mb;
}

/* The features NeuSight's tile table compares to find the measured kernel
 * nearest to one without a tile (its MetaTable): shape and GPU, and for
 * vector kernels bytes and operations per output.  The trainer writes the
 * table's rows with this key, the plugin looks kernels up with it. */
#define TW_TILE_KEY 9
static inline void
tw_tile_key (const struct perfmod_kernel *k, const struct perfmod_gpu *g, double *f)
{
  if (k->kclass == PERFMOD_KERNEL_BMM || k->kclass == PERFMOD_KERNEL_LINEAR) {
    f[0] = k->kclass == PERFMOD_KERNEL_LINEAR ? 1 : (double) k->b;
    f[1] = (double) k->m;
    f[2] = (double) k->n;
    f[3] = (double) k->k;
    f += 4;
  }
  else {
    f[0] = (double) k->b;
    f[1] = (double) k->h;
    f[7] = k->mem_per_output;
    f[8] = k->ops_per_output;
    f += 2;
  }
  f[0] = g->sms;
  f[1] = g->fp32_gflops;
  f[2] = g->mem_gb;
  f[3] = g->mem_bw_gbps;
  f[4] = g->l2_mb;
}

struct tw_case {
  double x[TW_NFEAT_MAX]; /* network inputs */
  int nfeat;
  double waves;         /* ceil(tiles / SMs) */
  double roof_gflops;   /* min(peak, intensity x bandwidth) */
  double wave_gflop;    /* work of one wave: tile FLOPs x SMs */
};

static inline double
tw_ceil_multiple (double x, double y)
{
  return ceil (x / y) * y;
}

static inline int
tw_nfeat (int features)
{
  return features == TW_FEAT_EXTENDED ? TW_NFEAT_EXTENDED
       : features == TW_FEAT_WAVES ? TW_NFEAT_WAVES
       : features == TW_FEAT_PORTABLE ? TW_NFEAT_PORTABLE : TW_NFEAT_NEUSIGHT;
}

static const char *const tw_feature_names[] = { "neusight", "extended", "extended-waves",
                                                "portable" };

/* The input set a parameter file or a command line names, or -1. */
static inline int
tw_features_of (const char *name)
{
  for (int i = 0; i < (int) (sizeof tw_feature_names / sizeof tw_feature_names[0]); i++)
    if (strcmp (name, tw_feature_names[i]) == 0)
      return i;
  return -1;
}

/* log2 (v / per_sm) into *x; -1 if either is not positive. */
static inline int
tw_log_ratio (double v, double per_sm, double *x)
{
  if (!(v > 0) || !(per_sm > 0))
    return -1;
  *x = log2 (v / per_sm);
  return 0;
}

/* Inputs: tile work and bytes against per-SM compute, bandwidth, memory
 * and L2, the wave count scaling the bytes that stream through; extended
 * adds the useful share of the padded tiles (edge efficiency) and the mean
 * occupancy of the SMs over the waves (the tail wave); extended-waves puts
 * log2 of the waves in the memory input's place; portable takes the first
 * two, log2 of the waves, and extended's two. */
static inline int
tw_finish (const struct tw_gpu *g, int features, double tile_gflop, double tile_mb, double tiles,
           double op_intensity, double edge, struct tw_case *c)
{
  double streamed;
  int j = 2;
  c->waves = ceil (tiles / g->sms);
  c->nfeat = tw_nfeat (features);
  streamed = c->waves * tile_mb;
  if (tw_log_ratio (tile_gflop, g->gflops / 1000 / g->sms, &c->x[0]) < 0 ||
      tw_log_ratio (tile_mb, g->bw_gbps / g->sms, &c->x[1]) < 0)
    return -1;
  /* extended-waves and portable read no memory capacity: the waves instead. */
  if (features == TW_FEAT_NEUSIGHT || features == TW_FEAT_EXTENDED) {
    if (tw_log_ratio (streamed, g->mem_gb * 1024 / g->sms, &c->x[j++]) < 0)
      return -1;
  }
  else
    c->x[j++] = log2 (c->waves);
  if (features != TW_FEAT_PORTABLE) {    /* portable reads no L2 size either */
    if (tw_log_ratio (streamed, g->l2_mb * 1024 / g->sms, &c->x[j++]) < 0)
      return -1;
  }
  if (features != TW_FEAT_NEUSIGHT) {
    if (!(edge > 0))
      return -1;
    c->x[j++] = edge;
    c->x[j++] = tiles / (c->waves * g->sms);
  }
  c->roof_gflops = fmin (g->gflops, op_intensity * g->bw_gbps);
  c->wave_gflop = tile_gflop * g->sms;
  return c->roof_gflops > 0 && c->waves > 0 ? 0 : -1;
}

/* Matrix kernels: (B,M,N) x (B,N,K).  tile1 x tile2 is the library tile as
 * named (e.g. 128x64); NeuSight tiles M by tile2 and K by tile1 and keeps N
 * whole in a tile. */
static inline int
tw_matrix (const struct tw_gpu *g, int features, double b, double m, double n, double k,
           double tile1, double tile2, struct tw_case *c)
{
  double tm = tile2, tk = tile1, tn = n;
  double op_gflop, op_gib, tiles;
  if (!(tm > 0 && tk > 0 && m > 0 && n > 0 && k > 0 && b > 0))
    return -1;
  op_gflop = 2.0 * tw_ceil_multiple (m, tm) * n * tw_ceil_multiple (k, tk) / 1e9;
  op_gib = 4.0 * (m * n + n * k + m * k) / 1073741824.0;
  tiles = b * ceil (m / tm) * ceil (k / tk);
  return tw_finish (g, features, 2.0 * tm * tn * tk / 1e9,
                    4.0 * (tm * tn + tn * tk + tm * tk) / 1048576.0, tiles, op_gflop / op_gib,
                    m * k / (tw_ceil_multiple (m, tm) * tw_ceil_multiple (k, tk)), c);
}

/* Vector kernels: B rows of H outputs, tile outputs per block. */
static inline int
tw_vector (const struct tw_gpu *g, int features, double b, double h, double mem_per_output,
           double ops_per_output, double tile, struct tw_case *c)
{
  double op_gflop, op_gib;
  if (!(tile > 0 && b > 0 && h > 0 && mem_per_output > 0 && ops_per_output > 0))
    return -1;
  op_gflop = ops_per_output * tw_ceil_multiple (h, tile) / 1e9;
  op_gib = mem_per_output * h / 1073741824.0;
  return tw_finish (g, features, ops_per_output * tile / 1e9,
                    mem_per_output * tile / 1073741824.0 * 1024, b * ceil (h / tile),
                    op_gflop / op_gib, h / tw_ceil_multiple (h, tile), c);
}

static inline double
tw_sigmoid (double z)
{
  return 1.0 / (1.0 + exp (-z));
}

/* Utilisation from the network's outputs: alpha = sigmoid(out0), gamma =
 * sigmoid(out2), gamma - alpha / waves.  out1 is NeuSight's unused beta. */
static inline double
tw_util (const struct tw_case *c, const double *out)
{
  return tw_sigmoid (out[2]) - tw_sigmoid (out[0]) / c->waves;
}

/* Seconds at a utilisation: waves x wave work / (roofline x utilisation). */
static inline double
tw_seconds (const struct tw_case *c, double util)
{
  return c->waves * c->wave_gflop / (c->roof_gflops * util);
}

/* Seconds from the network's outputs; with dpred, also d(time)/d(out). */
static inline double
tw_time (const struct tw_case *c, const double *out, double *dpred)
{
  double alpha = tw_sigmoid (out[0]), gamma = tw_sigmoid (out[2]);
  double util = tw_util (c, out);
  double t = tw_seconds (c, util);
  if (dpred) {
    dpred[0] = t / util * alpha * (1 - alpha) / c->waves;
    dpred[1] = 0;
    dpred[2] = -t / util * gamma * (1 - gamma);
  }
  return t;
}

#endif /* PERFMOD_TILEMLP_MODEL_H */
