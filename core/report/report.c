/* report.c: what a graph asks of a GPU: per-kernel FLOPs and bytes, per-class totals, intensity and bound regime. */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "physics.h"

/* Kernels shorter than this are dominated by launch and scheduling
 * overhead rather than by either roof (a few microseconds on every
 * CUDA GPU since Pascal). */
#define LATENCY_BOUND_S 5e-6

#define NKCLASS (PERFMOD_KERNEL_MOE + 1)

void
kernel_cost (const struct perfmod_kernel *k, double *flops, double *bytes)
{
  double b = (double) k->b;
  struct phys_cost c;
  switch (k->kclass) {
  case PERFMOD_KERNEL_LINEAR:
  case PERFMOD_KERNEL_BMM:
  case PERFMOD_KERNEL_ATTENTION:  /* physics.h's counts, which the predictors use */
    phys_cost_of (k, NULL, &c);
    *flops = c.flops;
    *bytes = c.bytes;
    break;
  case PERFMOD_KERNEL_ELEMENTWISE:
  case PERFMOD_KERNEL_SOFTMAX:
  case PERFMOD_KERNEL_LAYERNORM:
    *flops = b * (double) k->h * k->ops_per_output;
    *bytes = b * (double) k->h * k->mem_per_output;
    break;
  default:
    *flops = 0;
    *bytes = k->bytes;
    break;
  }
}

const char *
kernel_regime (double flops, double bytes, const struct perfmod_gpu *gpu, int dtype)
{
  double peak = perfmod_gpu_peak_flops (gpu, dtype), bw = gpu->mem_bw_gbps * 1e9;
  double tc = peak > 0 ? flops / peak : 0, tm = bw > 0 ? bytes / bw : 0;
  if (fmax (tc, tm) < LATENCY_BOUND_S)
    return "latency";
  return tc > tm ? "compute" : "memory";
}

void
graph_kernels (const struct graph *g, const struct precision *pr, bool train, graph_kernel_fn fn,
               void *ctx)
{
  for (size_t i = 0; i < g->n; i++) {
    const struct node *nd = &g->nodes[i];
    for (int p = 0; p < NPHASES; p++) {
      struct perfmod_kernel k;
      if (!train && p != PHASE_FW)
        continue;
      if (nd->fused) {
        if (fused_kernel (nd, p, pr, &k))
          fn (ctx, i, p, &k);
      }
      else
        for (size_t j = 0; j < nd->nops[p]; j++) {
          if (nd->ops[p][j].quant && !precision_quantised (pr))
            continue;
          kop_to_kernel (&nd->ops[p][j], nd, pr, &k);
          fn (ctx, i, p, &k);
        }
    }
  }
}

struct flops_ctx { const struct graph *g; double sum; };

static void
add_weighted_flops (void *ctx, size_t i, int phase, const struct perfmod_kernel *k)
{
  struct flops_ctx *f = ctx;
  double flops, bytes;
  (void) phase;
  kernel_cost (k, &flops, &bytes);
  f->sum += flops * (double) graph_weight (f->g, i);
}

double
graph_flops (const struct graph *g, const struct precision *pr, bool train)
{
  struct flops_ctx f = { g, 0 };
  graph_kernels (g, pr, train, add_weighted_flops, &f);
  return f.sum;
}

static const char *const phase_names[NPHASES] = { "fw", "bw", "acc" };

/* ---- perfmod graph ---- */

struct listing {
  const struct graph *g;
  const struct perfmod_gpu *gpu;
  const struct precision *pr;
  bool csv;
  FILE *out;
  /* per class (index kclass) and phase: weighted kernels, FLOPs, bytes */
  double count[NKCLASS][NPHASES], flops[NKCLASS][NPHASES], bytes[NKCLASS][NPHASES];
};

static void
list_kernel (void *ctx, size_t i, int phase, const struct perfmod_kernel *k)
{
  struct listing *l = ctx;
  double flops, bytes, w = (double) graph_weight (l->g, i);
  int c = k->kclass >= 0 && k->kclass < NKCLASS ? k->kclass : 0;
  kernel_cost (k, &flops, &bytes);
  l->count[c][phase] += w;
  l->flops[c][phase] += w * flops;
  l->bytes[c][phase] += w * bytes;
  if (l->csv)
    fprintf (l->out, "%s,%s,%d,%lld,%s,%s,%s,%lld,%lld,%lld,%lld,%lld,%.17g,%.17g,%.6g,%s,%s\n",
            l->g->nodes[i].name, l->g->nodes[i].opname, graph_layer (l->g, i),
            (long long) graph_weight (l->g, i), phase_names[phase], kclass_name (k->kclass),
            k->op, (long long) k->b, (long long) k->m, (long long) k->n, (long long) k->k,
            (long long) k->h, flops, bytes, bytes > 0 ? flops / bytes : 0,
            kernel_regime (flops, bytes, l->gpu, k->dtype), dtype_name (k->dtype));
}

int
graph_report (const struct graph *g, const struct perfmod_gpu *gpu, const struct precision *pr,
              bool train, bool csv, FILE *out)
{
  struct listing l;
  memset (&l, 0, sizeof l);
  l.g = g;
  l.gpu = gpu;
  l.pr = pr;
  l.csv = csv;
  l.out = out;
  if (csv)
    fprintf (out, "node,op,layer,count,phase,class,kernel,b,m,n,k,h,flops,bytes,intensity,regime,"
             "dtype\n");
  graph_kernels (g, pr, train, list_kernel, &l);
  if (csv)
    return 0;
  fprintf (out, "%-8s %-5s %-5s %10s %14s %14s %10s  %s\n", "class", "phase", "dtype", "kernels",
          "GFLOP", "GB", "FLOP/byte", "regime");
  double tf = 0, tb = 0, tn = 0;
  for (int c = 1; c < NKCLASS; c++)
    for (int p = 0; p < NPHASES; p++) {
      if (l.count[c][p] == 0)
        continue;
      double f = l.flops[c][p], b = l.bytes[c][p];
      fprintf (out, "%-8s %-5s %-5s %10.0f %14.3f %14.3f %10.2f  %s\n", kclass_name (c),
              phase_names[p], dtype_name (precision_dtype (pr, c)), l.count[c][p], f / 1e9,
              b / 1e9, b > 0 ? f / b : 0,
              kernel_regime (f / l.count[c][p], b / l.count[c][p], gpu, precision_dtype (pr, c)));
      tf += f;
      tb += b;
      tn += l.count[c][p];
    }
  fprintf (out, "%-8s %-5s %-5s %10.0f %14.3f %14.3f %10.2f\n", "total", "", "", tn, tf / 1e9,
          tb / 1e9, tb > 0 ? tf / tb : 0);
  fprintf (out, "(%s ridge point: %.1f FLOP/byte at %s; regime of the class's average kernel)\n",
          gpu->name, perfmod_gpu_peak_flops (gpu, precision_dtype (pr, PERFMOD_KERNEL_LINEAR))
                     / (gpu->mem_bw_gbps * 1e9),
          dtype_name (precision_dtype (pr, PERFMOD_KERNEL_LINEAR)));
  return 0;
}
