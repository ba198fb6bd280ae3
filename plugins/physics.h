/* physics.h: a kernel's work and bytes in physical units, and the floors no prediction may go under. */
#ifndef PERFMOD_PHYSICS_H
#define PERFMOD_PHYSICS_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "perfmod-plugin.h"

/* Fields of struct perfmod_kernel a core older than the plugin lacks read
 * as 0. */
#define PHYS_HAS(k, field) \
  ((k)->struct_size >= offsetof (struct perfmod_kernel, field) + sizeof (k)->field)

struct phys_cost {
  double flops;        /* arithmetic, FLOPs */
  double bytes;        /* DRAM traffic if nothing stays on chip, bytes */
  double peak;         /* FLOP/s of the units that run it */
  double bw;           /* bytes/s: memory, or for collectives the link */
  double comm_bytes;   /* collectives: bytes each rank sends over its link */
};

/* Query-key pairs one head computes: every key for every query, less the
 * masked future of a causal prefill, less what a sliding window drops. */
static inline double
phys_attention_pairs (const struct perfmod_kernel *k)
{
  double m = (double) k->m, n = (double) k->n, w = PHYS_HAS (k, window) ? (double) k->window : 0;
  double pairs = m * n;
  bool causal = PHYS_HAS (k, causal) && k->causal && m == n;
  if (causal)
    pairs = m * (m + 1) / 2;
  if (w > 0 && w < n)            /* causal: the first w queries see all before them */
    pairs = causal ? w * (w + 1) / 2 + (m - w) * w : fmin (pairs, m * w);
  return pairs;
}

/* A fused attention's backward (op "attention_bwd") recomputes the
 * scores and runs five products to the forward's two: 2.5 times the
 * forward's FLOPs, the count FlashAttention's own benchmarks use.  It also
 * runs slower per FLOP.  On an H100 SXM5, head width 128, no mask, the
 * FlashAttention-3 paper (Shah et al. 2024, figures 5 and 6) measures
 * cuDNN's kernels at 617, 609 and 600 TFLOP/s forward and 465, 499 and
 * 518 backward at 2k, 4k and 8k tokens, FlashAttention-2's at 362, 368,
 * 370 and 291, 310, 318: the backward takes 2.9 to 3.3 times the forward's
 * time.  Predictors that learned the forward from measurements take
 * PHYS_ATTN_BWD_TIME times it; the roofline counts the work. */
#define PHYS_ATTN_BWD_WORK 2.5
#define PHYS_ATTN_BWD_TIME 3.0

static inline bool
phys_attention_bwd (const struct perfmod_kernel *k)
{
  return k->kclass == PERFMOD_KERNEL_ATTENTION && k->op && strcmp (k->op, "attention_bwd") == 0;
}

/* Bytes each rank moves over its link for a collective on `bytes` over n
 * ranks (ring algorithms: the bus bandwidth convention of nccl-tests). */
static inline double
phys_comm_bytes (const char *op, double bytes, double n)
{
  if (n < 2)
    return 0;
  if (op && strcmp (op, "all_reduce") == 0)
    return 2 * (n - 1) / n * bytes;
  if (op && (strcmp (op, "send_recv") == 0 || strcmp (op, "p2p") == 0))
    return bytes;
  return (n - 1) / n * bytes;     /* all_gather, reduce_scatter, alltoall */
}

/* A MOE kernel's experts per token (1 where a core older than it says none). */
static inline double
phys_moe_topk (const struct perfmod_kernel *k)
{
  return PHYS_HAS (k, top_k) && k->top_k > 0 ? (double) k->top_k : 1;
}

/* A MOE kernel's routed work on its rank: *assign the token-expert
 * assignments it computes (its even share, m top_k h / b, times
 * expert_load: the busiest rank's), *reached the experts they fall on
 * (spread over as many of its h experts as they can, as a balanced
 * router spreads them, or experts_reached where a skewed routing reaches
 * fewer), *per_expert the tokens each of those computes. */
static inline void
phys_moe_work (const struct perfmod_kernel *k, double *assign, double *reached,
               double *per_expert)
{
  double load = PHYS_HAS (k, expert_load) && k->expert_load > 1 ? k->expert_load : 1;
  double topk = phys_moe_topk (k);
  double local = k->h > 0 ? (double) k->h : 1, all = k->b > 0 ? (double) k->b : local;
  *assign = (double) k->m * topk * local / all * load;
  *reached = fmax (1, fmin (local, ceil (*assign - 1e-9)));
  if (PHYS_HAS (k, experts_reached) && k->experts_reached > 0)
    *reached = fmax (1, fmin (*reached, k->experts_reached));
  *per_expert = *assign / *reached;
}

/* Widths of a MOE kernel's first grouped GEMM's output per expert (gate
 * and up side by side, or up alone). */
static inline double
phys_moe_fc1 (const struct perfmod_kernel *k)
{
  return (PHYS_HAS (k, gated) && k->gated ? 2.0 : 1.0) * (double) k->k;
}

/* The kernel's cost on gpu (NULL: its FLOPs and bytes alone, no peak or
 * bandwidth); -1 if its class has none. */
static inline int
phys_cost_of (const struct perfmod_kernel *k, const struct perfmod_gpu *gpu,
              struct phys_cost *c)
{
  double e = k->elem_bytes > 0 ? k->elem_bytes : 4;
  double eo = PHYS_HAS (k, out_elem_bytes) && k->out_elem_bytes > 0 ? k->out_elem_bytes : e;
  memset (c, 0, sizeof *c);
  if (gpu) {
    c->peak = perfmod_gpu_peak_flops (gpu, k->dtype);
    c->bw = gpu->mem_bw_gbps * 1e9;
  }
  switch (k->kclass) {
  case PERFMOD_KERNEL_LINEAR:
  case PERFMOD_KERNEL_BMM: {
    double b = k->kclass == PERFMOD_KERNEL_LINEAR ? 1 : (double) k->b;
    double m = (double) k->m, n = (double) k->n, kk = (double) k->k;
    c->flops = 2 * b * m * n * kk;
    c->bytes = b * ((m * n + n * kk) * e + m * kk * eo);
    return 0;
  }
  case PERFMOD_KERNEL_ATTENTION: {
    double b = (double) k->b, h = (double) k->h, d = (double) k->k;
    double kvh = PHYS_HAS (k, kv_heads) && k->kv_heads > 0 ? (double) k->kv_heads : h;
    double kv = (double) k->n;
    if (PHYS_HAS (k, window) && k->window > 0 && k->window < k->n && k->m == 1)
      kv = (double) k->window;    /* a decode step reads only the window */
    c->flops = 4 * b * h * d * phys_attention_pairs (k);
    c->bytes = b * e * (2 * (double) k->m * h * d + 2 * kv * kvh * d);
    if (phys_attention_bwd (k)) {  /* reads q, k, v, o, do; writes dq, dk, dv */
      c->flops *= PHYS_ATTN_BWD_WORK;
      c->bytes *= 2;
    }
    return 0;
  }
  case PERFMOD_KERNEL_ELEMENTWISE:
  case PERFMOD_KERNEL_SOFTMAX:
  case PERFMOD_KERNEL_LAYERNORM: {
    double mpo = PHYS_HAS (k, own_mem_per_output) && k->own_mem_per_output > 0
                 ? k->own_mem_per_output : k->mem_per_output;
    c->flops = (double) k->b * (double) k->h * k->ops_per_output;
    c->bytes = (double) k->b * (double) k->h * mpo;
    c->peak = gpu ? gpu->fp32_gflops * 1e9 : 0;   /* vector units */
    return 0;
  }
  case PERFMOD_KERNEL_MEMORY:
    c->bytes = k->bytes;
    return 0;
  case PERFMOD_KERNEL_MOE: {
    /* Each assignment runs fc1 (d to g f), the activation (g f to f) and
     * fc2 (f to d); the reached experts' weights are read once; the
     * activations (16-bit beside fp8 weights) are copied into expert
     * order, through both GEMMs and the activation, and summed back to
     * the tokens. */
    double a, r, te, d = (double) k->n, f = (double) k->k, g = phys_moe_fc1 (k);
    double topk = phys_moe_topk (k), ea = e < 2 ? 2 : e;
    phys_moe_work (k, &a, &r, &te);
    c->flops = 2 * a * (g + f) * d;
    c->bytes = r * (g + f) * d * e + ea * a * (5 * d + 2 * g + 2 * f + d / topk);
    return 0;
  }
  case PERFMOD_KERNEL_COMM:
    c->comm_bytes = phys_comm_bytes (k->op, k->bytes, PHYS_HAS (k, ranks) ? k->ranks : 0);
    c->bw = gpu ? gpu->link_gbps * 1e9 : 0;
    return 0;
  default:
    return -1;
  }
}

/* The plain physical roofline: max (FLOPs / peak, bytes / bandwidth). */
static inline double
phys_roofline (const struct phys_cost *c)
{
  double t = 0;
  if (c->peak > 0)
    t = c->flops / c->peak;
  if (c->bw > 0)
    t = fmax (t, (c->comm_bytes > 0 ? c->comm_bytes : c->bytes) / c->bw);
  return t;
}

/* The floor no prediction may go under: the compute peak, and the memory
 * bandwidth for the bytes that cannot stay in L2 (a kernel whose operands
 * fit in L2 between timed repetitions can beat the DRAM roof). */
static inline double
phys_floor (const struct phys_cost *c, const struct perfmod_gpu *gpu)
{
  double t = c->peak > 0 ? c->flops / c->peak : 0;
  double beyond = c->bytes - gpu->l2_mb * 1e6;
  if (c->comm_bytes > 0)
    return c->bw > 0 ? fmax (t, c->comm_bytes / c->bw) : t;
  if (beyond > 0 && c->bw > 0)
    t = fmax (t, beyond / c->bw);
  return t;
}

#endif /* PERFMOD_PHYSICS_H */
