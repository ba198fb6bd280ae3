/* stepviews.c: perfmod --strategy's views of one step: the timeline chart (--plot) and one pipeline stage's per-op table (--per-op). */
#include <config.h>

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int
strategy_plot_write (const struct cli *c, const struct workload *w, const struct strategy *s,
                     const char *predictor, const struct timeline *t)
{
  int gpus = s->tp * s->pp * s->dp * s->cp, rc;
  char cpbuf[24] = "", *title, *sub;
  if (s->cp > 1)
    snprintf (cpbuf, sizeof cpbuf, " cp=%d", s->cp);
  title = xasprintf ("%s, %s on %d x %s, tp=%d pp=%d dp=%d%s ep=%d mbs=%d vp=%d: step %.4g ms",
                     w->m.name, w->train ? "training step" : "inference", gpus, w->ge->name,
                     s->tp, s->pp, s->dp, cpbuf, s->ep, s->mbs, s->vp, t->step_ms);
  sub = xasprintf ("predictor %s, %s, global batch %lld x seq %lld, %d micro-batch%s per "
                   "replica, schedule %s, zero=%d, recompute=%s", predictor, w->prec->name,
                   (long long) w->batch, (long long) w->seq, t->microbatches,
                   t->microbatches == 1 ? "" : "es", schedule_name (s->schedule), s->zero,
                   recompute_name (s->recompute));
  rc = timeline_write (t, c->plot, title, sub);
  free (title);
  free (sub);
  return rc;
}

/* A node's first kernel (forward, else backward): its class, shape and
 * dtype; a collective's dimension, name and buffer. */
static void
node_describe (const struct node *nd, const struct precision *prec, const char **kind,
               char *shape, size_t slen, const char **dtype, char *coll, size_t clen)
{
  struct perfmod_kernel k;
  int ph = nd->nops[PHASE_FW] ? PHASE_FW : nd->nops[PHASE_BW] ? PHASE_BW : PHASE_ACC;
  *kind = "-";
  *dtype = "-";
  shape[0] = coll[0] = '\0';
  if (nd->nops[ph] == 0)
    return;
  if (nd->fused)
    fused_kernel (nd, ph, prec, &k);
  else
    kop_to_kernel (&nd->ops[ph][0], nd, prec, &k);
  *kind = kclass_name (k.kclass);
  *dtype = dtype_name (k.dtype);
  switch (k.kclass) {
  case PERFMOD_KERNEL_LINEAR:
  case PERFMOD_KERNEL_BMM:
    snprintf (shape, slen, "%lldx%lldx%lldx%lld", (long long) k.b, (long long) k.m,
              (long long) k.n, (long long) k.k);
    break;
  case PERFMOD_KERNEL_ATTENTION:            /* batch, heads, queries, keys, head width */
    snprintf (shape, slen, "%lldx%lldx%lldx%lldx%lld", (long long) k.b, (long long) k.h,
              (long long) k.m, (long long) k.n, (long long) k.k);
    break;
  case PERFMOD_KERNEL_COMM:
  case PERFMOD_KERNEL_MEMORY:
    snprintf (shape, slen, "%.6gMB", k.bytes / 1e6);
    break;
  case PERFMOD_KERNEL_MOE:      /* tokens, width, expert width, experts here/in all, top-k */
    snprintf (shape, slen, "%lldx%lldx%lld e%lld/%lld k%lld", (long long) k.m, (long long) k.n,
              (long long) k.k, (long long) k.h, (long long) k.b, (long long) k.top_k);
    break;
  default:
    snprintf (shape, slen, "%lldx%lld", (long long) k.b, (long long) k.h);
    break;
  }
  if (k.kclass == PERFMOD_KERNEL_COMM && !nd->fused && nd->ops[ph][0].dim != DIM_NONE)
    snprintf (coll, clen, "%s %s %.6gMB%s", dim_name (nd->ops[ph][0].dim), k.op, k.bytes / 1e6,
              nd->ops[ph][0].overlap == PERFMOD_OVERLAP_GEMM
              ? (nd->gemm ? " (pipelined with its GEMM)" : "")
              : nd->ops[ph][0].overlap ? " (overlapped)" : "");
}

int
strategy_per_op (const struct cli *c, struct plugin_set *set, const struct workload *w,
                 const struct dist_options *o, char **names, size_t npred, int stage,
                 json_t *json_predictions)
{
  const struct strategy *s = o->s;
  bool csv = strcmp (c->format, "csv") == 0, json = json_predictions != NULL;
  int chunks = s->pp * (s->vp > 1 ? s->vp : 1);
  int rc = -1;

  if (csv)
    printf ("predictor,stage,chunk,node,op,kind,shape,dtype,layer,count,fw_ms,bw_ms,acc_ms,"
            "collective\n");
  for (size_t p = 0; p < npred; p++) {
    struct plugin *pl = predictor_find (set, names[p]);
    struct graph g;
    struct prediction pr;
    double rec = 0, fw = 0, bw = 0, host[NPHASES];
    json_t *ops = NULL;
    if (pl == NULL ||
        dist_chunk_ops (set, pl, &w->m, &w->ge->gpu, o, stage, &g, &pr, &rec, host) < 0)
      return -1;
    if (json)
      ops = json_array ();
    else if (!csv)
      printf ("\nper-op, %s: pipeline stage %d, chunk %d of %d (%lld layers%s%s), one "
              "micro-batch of %d x seq %lld on one device\n%-40s %-10s %-9s %-22s %-5s %5s %5s "
              "%11s %11s %11s  %s\n", names[p], stage % s->pp, stage, chunks, (long long) g.repeat,
              stage == 0 ? ", the embedding" : "", stage == chunks - 1 ? ", the output layer" : "",
              s->mbs, (long long) (w->seq / s->cp), "node", "op", "kind", "shape", "dtype",
              "layer", "count", "fw_ms", "bw_ms", "acc_ms", "collective");
    for (size_t i = 0; i < g.n; i++) {
      const struct phase_times *t = &pr.per_node[i];
      const char *kind, *dtype;
      char shape[64], coll[96];
      double n = (double) graph_weight (&g, i);
      fw += n * t->t[PHASE_FW];
      bw += n * (t->t[PHASE_BW] + t->t[PHASE_ACC]);
      if (t->t[0] + t->t[1] + t->t[2] == 0 && !csv)
        continue;
      node_describe (&g.nodes[i], w->prec, &kind, shape, sizeof shape, &dtype, coll, sizeof coll);
      if (json)
        json_array_append_new (ops, json_pack ("{s:s, s:s, s:s, s:s, s:s, s:i, s:I, s:f, s:f, "
                                               "s:f, s:s}", "node", g.nodes[i].name, "op",
                                               g.nodes[i].opname, "kind", kind, "shape", shape,
                                               "dtype", dtype, "layer", graph_layer (&g, i),
                                               "count", (json_int_t) graph_weight (&g, i),
                                               "fw_ms", t->t[PHASE_FW], "bw_ms", t->t[PHASE_BW],
                                               "acc_ms", t->t[PHASE_ACC], "collective", coll));
      else if (csv)
        printf ("%s,%d,%d,%s,%s,%s,%s,%s,%d,%lld,%.9g,%.9g,%.9g,%s\n", names[p], stage % s->pp, stage,
                g.nodes[i].name, g.nodes[i].opname, kind, shape, dtype, graph_layer (&g, i),
                (long long) graph_weight (&g, i), t->t[PHASE_FW], t->t[PHASE_BW],
                t->t[PHASE_ACC], coll);
      else
        printf ("%-40.40s %-10.10s %-9s %-22s %-5s %5d %5lld %11.6f %11.6f %11.6f  %s\n",
                g.nodes[i].name, g.nodes[i].opname, kind, shape, dtype, graph_layer (&g, i),
                (long long) graph_weight (&g, i), t->t[PHASE_FW], t->t[PHASE_BW],
                t->t[PHASE_ACC], coll[0] ? coll : "-");
    }
    /* the device waiting for the host's launches: a row of its own, so the
     * rows still add up to the stage */
    if (host[PHASE_FW] + host[PHASE_BW] > 0) {
      fw += host[PHASE_FW];
      bw += host[PHASE_BW];
      if (json)
        json_array_append_new (ops, json_pack ("{s:s, s:s, s:s, s:s, s:s, s:i, s:I, s:f, s:f, "
                                               "s:f, s:s}", "node", "host_wait", "op", "host",
                                               "kind", "HOST", "shape", "-", "dtype", "-",
                                               "layer", -1, "count", (json_int_t) 1, "fw_ms",
                                               host[PHASE_FW], "bw_ms", host[PHASE_BW],
                                               "acc_ms", 0.0, "collective", ""));
      else if (csv)
        printf ("%s,%d,%d,host_wait,host,HOST,-,-,-1,1,%.9g,%.9g,0,\n", names[p], stage % s->pp,
                stage, host[PHASE_FW], host[PHASE_BW]);
      else
        printf ("%-40.40s %-10.10s %-9s %-22s %-5s %5d %5d %11.6f %11.6f %11.6f  %s\n",
                "host_wait", "host", "HOST", "-", "-", -1, 1, host[PHASE_FW], host[PHASE_BW],
                0.0, "- (the device waiting for the host's launches)");
    }
    if (json) {
      json_t *e = json_array_get (json_predictions, p);
      json_t *po = json_pack ("{s:i, s:i, s:I, s:f, s:f, s:f, s:o}", "stage", stage % s->pp, "chunk",
                              stage, "layers", (json_int_t) g.repeat, "fw_ms", fw, "bw_ms", bw,
                              "recompute_ms", rec, "ops", ops);
      if (e)
        json_object_set_new (e, "per_op", po);
      else
        json_decref (po);
    }
    else if (!csv)
      printf ("(chunk %d, one micro-batch: forward %.6f ms, backward %.6f ms with %.6f ms of "
              "recompute: the rows times their count, as --explain's per-stage table has them "
              "with vp=1 and no overlapped collective)\n", stage, fw, bw + rec, rec);
    prediction_free (&pr);
    graph_free (&g);
  }
  rc = 0;
  return rc;
}
