/* host.c: the host's side of a training step: eager PyTorch launching each kernel, and the device waiting for it where the host falls behind or synchronises. */
#include <config.h>

#include "internal.h"

/* One kernel launch from the host, then its device time: the host's
 * clock *h advances by the launch, the device's *g starts the kernel
 * once it is launched and the device is free (a two-stage flow shop). */
static inline void
flow_job (double *h, double *g, double host_ms, double dev_ms)
{
  *h += host_ms;
  *g = (*g > *h ? *g : *h) + dev_ms;
}

/* Launches of one copy of node nd in phase p: its kernels (a fused
 * chain one; the quantisations before fp8 GEMMs in the precisions that
 * run them, cast_launches each), and the launches the builder counted
 * besides (kernels too small to model). */
static double
node_launches (const struct node *nd, int p, int cast_launches)
{
  double n = 0;
  if (nd->fused)
    n = nd->nops[p] > 0;
  else
    for (size_t j = 0; j < nd->nops[p]; j++)
      n += nd->ops[p][j].quant ? cast_launches : 1;
  return n + nd->host_launches[p];
}

/* The nodes [from, to) of phase p run once, in the phase's order
 * (backward: last to first), each copy a job; the host waits for the
 * device after a synchronising node's forward. */
static void
flow_span (const struct graph *gr, const struct prediction *pr, int p, size_t from, size_t to,
           int cast_launches, double launch_ms, double *h, double *g)
{
  for (size_t k = from; k < to; k++) {
    size_t i = p == PHASE_FW ? k : to - 1 - (k - from);
    const struct node *nd = &gr->nodes[i];
    int64_t copies = nd->copies > 1 ? nd->copies : 1;
    double host = node_launches (nd, p, cast_launches) * launch_ms, dev = pr->per_node[i].t[p];
    for (int64_t c = 0; c < copies; c++)
      flow_job (h, g, c > 0 && nd->host_once ? 0 : host, dev);
    if (p == PHASE_FW && nd->host_sync)
      *h = *g;
  }
}

/* Layers of node i's kind: how often the layer span runs it. */
static int64_t
layer_runs (const struct graph *gr, size_t i)
{
  return gr->nodes[i].count > 0 ? gr->nodes[i].count : gr->repeat;
}

/* A layer span's run of nodes of one kind [from, to), repeated n times:
 * the first few simulated, the rest extrapolated from the last (both
 * clocks advance by the same amounts once the lag between them settles). */
static void
flow_layers (const struct graph *gr, const struct prediction *pr, int p, size_t from, size_t to,
             int64_t n, int cast_launches, double launch_ms, double *h, double *g)
{
  enum { SIMULATED = 3 };
  double dh = 0, dg = 0;
  int64_t k;
  for (k = 0; k < n && k < SIMULATED; k++) {
    double h0 = *h, g0 = *g;
    flow_span (gr, pr, p, from, to, cast_launches, launch_ms, h, g);
    dh = *h - h0;
    dg = *g - g0;
  }
  if (n > k) {
    *h += (double) (n - k) * dh;
    *g += (double) (n - k) * dg;
    if (*g < *h)
      *g = *h;
  }
}

void
host_wait (const struct graph *gr, const struct prediction *pr, const struct precision *prec,
           double launch_us, double wait[NPHASES])
{
  /* a cast is one kernel; current scaling's is three (amax, scale, cast) */
  int cast_launches = !precision_quantised (prec) ? 0 : prec->cast_amax ? 3 : 1;
  double launch_ms = launch_us / 1e3;
  for (int p = 0; p < NPHASES; p++)
    wait[p] = 0;
  if (launch_us <= 0 || gr->n == 0)
    return;
  for (int p = PHASE_FW; p <= PHASE_BW; p++) {
    /* the chunk's parts in the phase's order: before the layers, the
     * layers' runs of one kind, after them (the backward the reverse) */
    double h = 0, g = 0, dev = 0;
    for (size_t i = 0; i < gr->n; i++)
      dev += pr->per_node[i].t[p] * (double) graph_weight (gr, i);
    if (p == PHASE_FW) {
      flow_span (gr, pr, p, 0, gr->layer_begin, cast_launches, launch_ms, &h, &g);
      for (size_t i = gr->layer_begin; i < gr->layer_end;) {
        size_t j = i + 1;
        while (j < gr->layer_end && layer_runs (gr, j) == layer_runs (gr, i))
          j++;
        flow_layers (gr, pr, p, i, j, layer_runs (gr, i), cast_launches, launch_ms, &h, &g);
        i = j;
      }
      flow_span (gr, pr, p, gr->layer_end, gr->n, cast_launches, launch_ms, &h, &g);
    }
    else {
      flow_span (gr, pr, p, gr->layer_end, gr->n, cast_launches, launch_ms, &h, &g);
      for (size_t j = gr->layer_end; j > gr->layer_begin;) {
        size_t i = j - 1;
        while (i > gr->layer_begin && layer_runs (gr, i - 1) == layer_runs (gr, j - 1))
          i--;
        flow_layers (gr, pr, p, i, j, layer_runs (gr, i), cast_launches, launch_ms, &h, &g);
        j = i;
      }
      flow_span (gr, pr, p, 0, gr->layer_begin, cast_launches, launch_ms, &h, &g);
    }
    wait[p] = g > dev ? g - dev : 0;
  }
}
