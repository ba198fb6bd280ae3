/* tc-model.h: tile-mlp's formulation of what NeuSight never measured (tensor-core GEMMs per dtype, fused attention, 16-bit vector ops, collectives), shared by perfmod train and the plugin. */
#ifndef PERFMOD_TC_MODEL_H
#define PERFMOD_TC_MODEL_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "perfmod-plugin.h"
#include "physics.h"

/* A network per group corrects the physical roofline of its kernels:
 *   time = max (floor, (roofline + TC_LAUNCH_S) x exp (mean of the members' outputs))
 * The inputs keep NeuSight's tile/wave structure (waves of 128 x 128
 * output tiles over the SMs, the tail wave's occupancy, the padded tiles'
 * useful share) and describe the chip only by ratios that carry across
 * chips: FLOPs and bytes per clock per SM at the kernel's dtype, intensity
 * against the ridge point, bytes against the L2. */
enum tc_group { TC_GEMM, TC_ATTENTION, TC_VECTOR, TC_COMM, TC_MOE, TC_DEEPEP, TC_NGROUPS };
static const char *const tc_group_keys[TC_NGROUPS] = { "tc_gemm", "tc_attention", "tc_vector",
                                                       "tc_comm", "tc_moe", "tc_deepep" };
static const int tc_group_nfeat[TC_NGROUPS] = { 18, 15, 14, 15, 20, 11 };
#define TC_NFEAT_MAX 20
/* A fused MoE layer runs about this many kernels (routing's sort,
 * permute, two grouped GEMMs, the activation, the combine): its fixed
 * cost is that many launches. */
#define TC_MOE_KERNELS 5.0
/* The engines whose MoE kernels the tables measured, one input each. */
static const char *const tc_moe_engines[] = { "trtllm", "sglang", "vllm" };
#define TC_MOE_NENGINES 3
#define TC_TILE 128.0
/* A nominal kernel's fixed cost the correction starts from, in clock
 * cycles (a slower clock pays longer); a collective starts from NCCL's
 * own cost model (physics.h, phys_nccl_time). */
#define TC_LAUNCH_CYCLES 4000.0

/* An 80 % interval around a group's prediction, per dtype, as a half
 * width in log space (the 80th percentile of |ln (measured / predicted)|,
 * each fold weighing the same): [0] on a GPU the group's networks were
 * trained on, from the seeded 20 % of each GPU's shapes held out; [1] on a
 * GPU they were not, from the five aiconfigurator GPUs left out in turn.
 * The ensemble's spread says nothing of the error on a GPU left out (the
 * same |error| at every spread, doc/precision.md), so the width is the
 * measured errors', per group and dtype.  0: not measured, no interval.
 * From scripts/interval-eval.sh on scripts/modern-eval.sh's networks
 * (doc/precision.md gives each fold's coverage under the others' width). */
static const double tc_interval80[TC_NGROUPS][PERFMOD_DTYPE_NTYPES][2] = {
  [TC_GEMM] = {
    [PERFMOD_DTYPE_BF16] = { 0.0787, 0.2538 },
    [PERFMOD_DTYPE_FP8] = { 0.0667, 0.4376 },
    [PERFMOD_DTYPE_NVFP4] = { 0.0498, 0.3594 },
    [PERFMOD_DTYPE_FP8_BLOCK] = { 0.0760, 0.8084 },
  },
};
/* Batched products (BMM kernels of the GEMM group) miss by more than
 * GEMMs do, so their widths are their own: from MLA's products
 * (TABLE=mla_bmm scripts/interval-eval.sh on the folds of
 * AIC_TABLES=gemm,mla_bmm).  nvfp4: never measured, no interval. */
static const double tc_interval80_bmm[PERFMOD_DTYPE_NTYPES][2] = {
  [PERFMOD_DTYPE_BF16] = { 0.1583, 0.3483 },
  [PERFMOD_DTYPE_FP8] = { 0.0922, 0.2781 },
  [PERFMOD_DTYPE_FP8_BLOCK] = { 0.3014, 0.9206 },
};

/* The half width for a kernel of group g, class kclass and dtype, on a
 * GPU the group was trained on or not; 0: none measured. */
static inline double
tc_interval_width (int g, int kclass, int dtype, bool trained)
{
  if (dtype < 0 || dtype >= PERFMOD_DTYPE_NTYPES)
    return 0;
  if (g == TC_GEMM && kclass == PERFMOD_KERNEL_BMM)
    return tc_interval80_bmm[dtype][trained ? 0 : 1];
  return tc_interval80[g][dtype][trained ? 0 : 1];
}

/* Input sets: "tc-nochip", the default, sees the chip only through the
 * kernel's ratios to its peak, bandwidth, L2, SMs and clock; "tc" also
 * describes it by FLOPs and bytes per clock per SM and its board power
 * per peak TFLOP/s.  With three or four training GPUs those three inputs
 * are a handful of points a network extrapolates from on a GPU unlike
 * them: leaving one GPU out, bf16 GEMMs were 19-51 % off with them and
 * 15-20 % without (doc/precision.md). */
enum tc_features { TC_FEAT_CHIP = 0, TC_FEAT_NOCHIP = 1, TC_NFEATSETS };
static const char *const tc_feature_names[TC_NFEATSETS] = { "tc", "tc-nochip" };

static inline int
tc_features_of (const char *name)
{
  for (int i = 0; i < TC_NFEATSETS; i++)
    if (strcmp (name, tc_feature_names[i]) == 0)
      return i;
  return -1;
}

struct tc_case {
  double x[TC_NFEAT_MAX];
  int nfeat;
  double base;    /* seconds the network's output scales */
  double floor;   /* seconds no prediction goes under (physics.h) */
};

/* The group that models k, or -1 (fp32 matrix and vector kernels stay
 * with NeuSight's networks). */
static inline int
tc_group_of (const struct perfmod_kernel *k)
{
  switch (k->kclass) {
  case PERFMOD_KERNEL_LINEAR:
  case PERFMOD_KERNEL_BMM:
    return k->dtype != PERFMOD_DTYPE_FP32 ? TC_GEMM : -1;
  case PERFMOD_KERNEL_ATTENTION:
    return TC_ATTENTION;
  case PERFMOD_KERNEL_ELEMENTWISE:
  case PERFMOD_KERNEL_SOFTMAX:
  case PERFMOD_KERNEL_LAYERNORM:
  case PERFMOD_KERNEL_MEMORY:
    return k->dtype == PERFMOD_DTYPE_FP16 || k->dtype == PERFMOD_DTYPE_BF16 ? TC_VECTOR : -1;
  case PERFMOD_KERNEL_COMM:
    return phys_deepep_op (k->op, NULL, NULL) ? TC_DEEPEP : TC_COMM;
  case PERFMOD_KERNEL_MOE:
    return TC_MOE;
  default:
    return -1;
  }
}

static inline double
tc_log2 (double v)
{
  return log2 (v > 1e-30 ? v : 1e-30);
}

/* Waves of `tiles` blocks over the SMs: log2 of the (fractional) count
 * and the tail wave's occupancy. */
static inline void
tc_waves (double tiles, double sms, double *x)
{
  double waves = ceil (tiles / sms);
  x[0] = tc_log2 (tiles / sms);
  x[1] = tiles / (waves * sms);
}

/* The chip at the kernel's dtype: FLOPs and bytes per clock per SM, and
 * watts per peak TFLOP/s (0 where gpus.d has no TDP). */
static inline void
tc_chip (const struct phys_cost *c, const struct perfmod_gpu *g, int features, double *x)
{
  double per = g->sms * g->clock_mhz * 1e6;
  double tdp = g->struct_size >= offsetof (struct perfmod_gpu, tdp_w) + sizeof g->tdp_w
               ? g->tdp_w : 0;
  bool chip = features == TC_FEAT_CHIP;
  x[0] = chip ? tc_log2 (c->peak / per) : 0;
  x[1] = chip ? tc_log2 (g->mem_bw_gbps * 1e9 / per) : 0;
  x[2] = chip && tdp > 0 && c->peak > 0 ? tc_log2 (tdp / (c->peak / 1e12)) : 0;
}

/* k's case; -1 if no group models it or the GPU lacks what it needs. */
static inline int
tc_case_of (const struct perfmod_kernel *k, const struct perfmod_gpu *g, int features,
            struct tc_case *c)
{
  struct phys_cost pc;
  int grp = tc_group_of (k);
  double roof, ridge, l2 = g->l2_mb > 0 ? g->l2_mb * 1e6 : 1e6, *x = c->x, kcycles;
  if (grp < 0 || phys_cost_of (k, g, &pc) < 0 || !(g->sms > 0) || !(g->clock_mhz > 0) ||
      !(pc.bw > 0))
    return -1;
  roof = phys_roofline (&pc);
  ridge = pc.peak > 0 ? pc.peak / (g->mem_bw_gbps * 1e9) : 1;
  c->nfeat = tc_group_nfeat[grp];
  c->floor = phys_floor (&pc, g);
  c->base = roof + TC_LAUNCH_CYCLES / (g->clock_mhz * 1e6);
  if (grp == TC_MOE)
    c->base += (TC_MOE_KERNELS - 1) * TC_LAUNCH_CYCLES / (g->clock_mhz * 1e6);
  kcycles = roof * g->clock_mhz * 1e3;     /* the roofline in thousands of clock cycles */
  switch (grp) {
  case TC_GEMM: {
    double b = k->kclass == PERFMOD_KERNEL_LINEAR ? 1 : (double) k->b;
    double m = (double) k->m, n = (double) k->n, kk = (double) k->k;
    double tm = ceil (m / TC_TILE), tk = ceil (kk / TC_TILE);
    /* A batch of products is seen as one product of the batch's rows
     * stacked, told that it is a batch and how many (x[16], x[17]):
     * batched kernels (cuBLAS's strided-batched, MLA's per-head products
     * over transposed views) pay more than a GEMM of the same rows. */
    x[0] = tc_log2 (b * m);
    x[1] = tc_log2 (n);
    x[2] = tc_log2 (kk);
    x[3] = k->dtype == PERFMOD_DTYPE_NVFP4;
    tc_waves (b * tm * tk, g->sms, x + 4);
    x[6] = m * kk / (tm * tk * TC_TILE * TC_TILE);
    x[7] = tc_log2 (pc.flops / pc.bytes / ridge);
    x[8] = tc_log2 (pc.bytes / l2);
    x[9] = tc_log2 (kcycles);
    /* fp8_block is fp8 (x[10]) with its scales' cost beside (x[15]): a
     * GPU with fp8 rows and no fp8_block ones starts from its fp8 */
    x[10] = k->dtype == PERFMOD_DTYPE_FP8 || k->dtype == PERFMOD_DTYPE_FP8_BLOCK;
    tc_chip (&pc, g, features, x + 11);
    x[14] = k->dtype == PERFMOD_DTYPE_TF32;
    x[15] = k->dtype == PERFMOD_DTYPE_FP8_BLOCK;
    x[16] = k->kclass == PERFMOD_KERNEL_BMM;
    x[17] = tc_log2 (b);
    return 0;
  }
  case TC_ATTENTION: {
    double h = (double) k->h, kvh = k->kv_heads > 0 ? (double) k->kv_heads : h;
    double blocks = k->m > 1 ? (double) k->b * h * ceil ((double) k->m / TC_TILE)
                             : (double) k->b * kvh;
    x[0] = tc_log2 ((double) k->m);
    x[1] = tc_log2 ((double) k->n);
    x[2] = tc_log2 ((double) k->k);
    x[3] = tc_log2 (h / kvh);
    x[4] = tc_log2 ((double) k->b * h);
    tc_waves (blocks, g->sms, x + 5);
    x[7] = tc_log2 (pc.flops / pc.bytes / ridge);
    x[8] = tc_log2 (pc.bytes / l2);
    x[9] = tc_log2 (kcycles);
    x[10] = k->causal;
    x[11] = k->dtype == PERFMOD_DTYPE_FP8;
    tc_chip (&pc, g, features, x + 12);
    return 0;
  }
  case TC_VECTOR: {
    double e = k->elem_bytes > 0 ? k->elem_bytes : 2;
    double rows = k->b > 0 ? (double) k->b : 1, h = k->h > 0 ? (double) k->h : 1;
    double mpo = pc.bytes / (rows * h);
    x[0] = tc_log2 (rows);
    x[1] = tc_log2 (h);
    x[2] = tc_log2 (pc.bytes / l2);
    x[3] = tc_log2 (kcycles);
    x[4] = k->kclass == PERFMOD_KERNEL_ELEMENTWISE;
    x[5] = k->kclass == PERFMOD_KERNEL_SOFTMAX;
    x[6] = k->kclass == PERFMOD_KERNEL_LAYERNORM;
    x[7] = k->kclass == PERFMOD_KERNEL_MEMORY;
    x[8] = tc_log2 (mpo / e);
    x[9] = tc_log2 (rows / g->sms);
    x[10] = tc_log2 (pc.flops > 0 ? pc.flops / pc.bytes / ridge : 1e-3);
    tc_chip (&pc, g, features, x + 11);
    return 0;
  }
  case TC_COMM: {
    /* The network corrects NCCL's own model, told which algorithm and
     * protocol that model chose, how much of its time is latency, and the
     * link (its kind and bandwidth: on a GPU left out of training, the
     * correction of the training GPU nearest in link bandwidth). */
    struct phys_nccl nc;
    if (k->ranks < 2 || phys_nccl_time (k->op, k->bytes, (double) k->ranks, 0, g, &nc) < 0
        || !(nc.seconds > 0))
      return -1;
    c->base = nc.seconds;
    for (int i = 0; i < PHYS_COMM_NOPS; i++)
      x[i] = k->op && strcmp (k->op, phys_comm_ops[i]) == 0;
    x[5] = tc_log2 ((double) k->ranks);
    x[6] = tc_log2 (k->bytes);
    x[7] = tc_log2 (nc.seconds / 1e-6);
    x[8] = nc.latency / nc.seconds;
    for (int p = 0; p < PHYS_NCCL_NPROTO; p++)
      x[9 + p] = nc.proto == p;
    x[12] = nc.algo == PHYS_NCCL_NVLS || nc.algo == PHYS_NCCL_NVLS_TREE;
    x[13] = PHYS_HAS_GPU (g, nvlink) && g->nvlink;
    x[14] = tc_log2 (g->link_gbps);
    return 0;
  }
  case TC_DEEPEP: {
    /* DeepEP's kernels correct their mechanism (physics.h), told the
     * kernel, the shape, and the link's nominal bandwidth over the one the
     * kernel reaches (its efficiency and, with few SMs, their cap) */
    struct phys_deepep dp;
    bool ll = false, combine = false;
    if (phys_deepep_time (k, g, 0, &dp) < 0)
      return -1;
    phys_deepep_op (k->op, &ll, &combine);
    c->base = dp.seconds;
    x[0] = tc_log2 ((double) k->m);
    x[1] = tc_log2 ((double) k->k);
    x[2] = tc_log2 ((double) k->top_k);
    x[3] = tc_log2 ((double) k->h);
    x[4] = tc_log2 ((double) k->ranks);
    x[5] = tc_log2 (dp.nodes);
    x[6] = ll;
    x[7] = combine;
    x[8] = k->b > 0 ? tc_log2 ((double) k->b) : 0;
    x[9] = tc_log2 (dp.seconds / 1e-6);
    x[10] = tc_log2 (g->link_gbps * 1e9 / dp.bw);
    return 0;
  }
  case TC_MOE: {
    /* The grouped GEMMs' tiles: each reached expert's rows padded to
     * whole tiles, the first GEMM's output (gate and up) as wide as it is. */
    double a, r, te, fc1 = phys_moe_fc1 (k), local = k->h > 0 ? (double) k->h : 1;
    const char *eng = PHYS_HAS (k, engine) ? k->engine : NULL;
    phys_moe_work (k, &a, &r, &te);
    x[0] = tc_log2 ((double) k->m);
    x[1] = tc_log2 (a);
    x[2] = tc_log2 (te);
    x[3] = tc_log2 (r);
    x[4] = r / local;
    x[5] = tc_log2 ((double) k->n);
    x[6] = tc_log2 ((double) k->k);
    x[7] = fc1 > (double) k->k;
    tc_waves (r * ceil (te / TC_TILE) * ceil (fc1 / TC_TILE), g->sms, x + 8);
    x[10] = tc_log2 (pc.flops / pc.bytes / ridge);
    x[11] = tc_log2 (pc.bytes / l2);
    /* the expert-parallel degree, not the time in clock cycles: with two
     * training GPUs a time describes the chip more than the kernel */
    x[12] = tc_log2 ((k->b > 0 ? (double) k->b : local) / local);
    /* block-scaled fp8 is fp8 (x[13]) with its scales' cost beside
     * (x[18]), as for the GEMMs: an engine whose tables have one of the
     * two starts the other from it */
    x[13] = k->dtype == PERFMOD_DTYPE_FP8 || k->dtype == PERFMOD_DTYPE_FP8_BLOCK;
    for (int i = 0; i < TC_MOE_NENGINES; i++)
      x[14 + i] = eng && strcmp (eng, tc_moe_engines[i]) == 0;
    x[17] = tc_log2 (local);
    x[18] = k->dtype == PERFMOD_DTYPE_FP8_BLOCK;
    /* weight-only experts (MXFP4 widened to 16 bits): how much narrower
     * their weights are than the GEMMs' operands, in doublings */
    x[19] = tc_log2 ((k->elem_bytes > 0 ? k->elem_bytes : 2) / phys_moe_weight_bytes (k));
    return 0;
  }
  default:
    return -1;
  }
}

/* The narrowest row of the normalisations tc_vector was trained on:
 * vidur's input and post-attention norms are a model's hidden width, and
 * its narrowest model is phi-2's 2560 (its element-wise rows go down to
 * 640, an MLP's width over 8 GPUs, which sets the group's range). */
#define TC_VECTOR_NORM_MIN_H 2560.0

/* A 16-bit norm (the only dtypes of the TC_VECTOR group) whose rows are
 * narrower than the norms the networks were trained on
 * (TC_VECTOR_NORM_MIN_H, or the group's range, lo_log2_h = the low end of
 * log2 of the outputs per row, if wider) is laid out as the same outputs
 * in rows of that width: the same bytes read and written, fewer and
 * longer rows (Qwen3's q and k norms are 128 wide), where keeping the row
 * count and clamping the width would describe a kernel 5 to 20 times the
 * bytes.  Softmax and element-wise kernels are left as they are: the
 * 2560 is the narrowest norm's width, not theirs (doc/serving.md).
 * Returns 1 if k was changed. */
static inline int
tc_vector_relay (struct perfmod_kernel *k, double lo_log2_h)
{
  double rows = k->b > 0 ? (double) k->b : 1, h = (double) k->h, w = ceil (exp2 (lo_log2_h));
  if (k->kclass != PERFMOD_KERNEL_LAYERNORM)
    return 0;
  w = fmax (w, TC_VECTOR_NORM_MIN_H);
  if (!(h >= 1) || !(w > h) || !(w < 1e9))
    return 0;
  k->b = (int64_t) fmax (1, ceil (rows * h / w));
  k->h = (int64_t) w;
  return 1;
}

/* A fused attention's backward is predicted as PHYS_ATTN_BWD_TIME times
 * its forward, which the networks learned from measurements (physics.h):
 * k is made the forward; the factor is returned (1 for any other kernel). */
static inline double
tc_as_forward (struct perfmod_kernel *k)
{
  if (!phys_attention_bwd (k))
    return 1;
  k->op = "attention";
  return PHYS_ATTN_BWD_TIME;
}

/* The factor a network's output scales the base time by (bounded, so a
 * wild output cannot overflow). */
static inline double
tc_factor (double out)
{
  return exp (fmin (fmax (out, -20), 20));
}

/* Seconds from the mean of the members' outputs. */
static inline double
tc_time (const struct tc_case *c, double out)
{
  return fmax (c->floor, c->base * tc_factor (out));
}

/* The kernel classes of learned.h's dtypes keys and the group that models
 * each (a batched product is a GEMM's rows stacked). */
static const struct { const char *cls; int kclass, grp; } tc_class_cover[] = {
  { "linear", PERFMOD_KERNEL_LINEAR, TC_GEMM }, { "bmm", PERFMOD_KERNEL_LINEAR, TC_GEMM },
  { "attention", PERFMOD_KERNEL_ATTENTION, TC_ATTENTION },
  { "elementwise", PERFMOD_KERNEL_ELEMENTWISE, TC_VECTOR },
  { "softmax", PERFMOD_KERNEL_SOFTMAX, TC_VECTOR },
  { "layernorm", PERFMOD_KERNEL_LAYERNORM, TC_VECTOR },
  { "moe", PERFMOD_KERNEL_MOE, TC_MOE },
};

#endif /* PERFMOD_TC_MODEL_H */
