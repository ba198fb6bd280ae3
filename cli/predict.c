/* predict.c: perfmod (predict): one run or a step under a strategy, per predictor, as a table, CSV or JSON. */
#include <config.h>

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* What a run adds to each predictor's entry beyond the graph's times. */
struct extras {
  const struct memory_estimate *mem;
  double mfu;                    /* achieved / peak FLOP/s, 0 if unknown */
  double decode_ms;              /* one decode step (time per output token), 0 without --gen */
  int64_t batch, gen;
  bool fallback;                 /* kernels of a dtype outside the predictor's model */
};

static double
tokens_per_s (const struct prediction *p, const struct extras *x)
{
  double ms = p->e2e_ms + (double) x->gen * x->decode_ms;
  return ms > 0 ? (double) (x->batch * x->gen) / (ms / 1e3) : 0;
}

static void
json_prediction (json_t *arr, const struct prediction *p, const struct graph *g, bool per_op,
                 const struct extras *x)
{
  json_t *o = json_pack ("{s:s, s:f, s:f, s:f, s:f, s:I, s:I}", "predictor", p->predictor,
                         "e2e_ms", p->e2e_ms, "fw_ms", p->fw_ms, "bw_ms", p->bw_ms + p->acc_ms,
                         "acc_ms", p->acc_ms,
                         "kernels", (json_int_t) p->kernels,
                         "unique_kernels", (json_int_t) p->unique_kernels);
  /* null: a predictor without an ensemble (the roofline) */
  json_object_set_new (o, "spread_ms", p->spread_ms > 0 ? json_real (p->spread_ms) : json_null ());
  json_object_set_new (o, "mfu", json_real (x->mfu));
  json_object_set_new (o, "dtype_fallback", json_boolean (x->fallback));
  if (x->gen > 0) {
    json_object_set_new (o, "ttft_ms", json_real (p->e2e_ms));
    json_object_set_new (o, "tpot_ms", json_real (x->decode_ms));
    json_object_set_new (o, "tokens_per_s", json_real (tokens_per_s (p, x)));
  }
  json_object_set_new (o, "memory_gib", x->mem ? json_memory_gib (x->mem) : json_null ());
  json_object_set_new (o, "oom", x->mem ? json_boolean (x->mem->oom) : json_null ());
  if (per_op) {
    json_t *ops = json_array ();
    for (size_t i = 0; i < g->n; i++) {
      const struct phase_times *t = &p->per_node[i];
      if (t->t[0] + t->t[1] + t->t[2] == 0)
        continue;
      json_array_append_new (ops, json_pack ("{s:s, s:s, s:i, s:I, s:f, s:f, s:f, s:f, s:s?}",
                                             "node", g->nodes[i].name, "op", g->nodes[i].opname,
                                             "layer", graph_layer (g, i), "count",
                                             (json_int_t) graph_weight (g, i), "fw_ms", t->t[0],
                                             "bw_ms", t->t[1], "acc_ms", t->t[2], "spread_ms",
                                             t->spread[0] + t->spread[1] + t->spread[2],
                                             "basis", t->basis));
    }
    json_object_set_new (o, "per_op", ops);
  }
  json_array_append_new (arr, o);
}

static void
print_per_op (const struct cli *c, const struct graph *g, const struct prediction *pr, size_t npred)
{
  bool csv = strcmp (c->format, "csv") == 0;
  if (csv)
    printf ("predictor,node,op,layer,count,fw_ms,bw_ms,acc_ms,spread_ms,basis\n");
  else
    printf ("\n%-10s %-40s %-12s %5s %5s %12s %12s %12s %10s  %s\n", "predictor", "node", "op",
            "layer", "count", "fw_ms", "bw_ms", "acc_ms", "spread_ms", "basis");
  for (size_t p = 0; p < npred; p++)
    for (size_t i = 0; i < g->n; i++) {
      const struct phase_times *t = &pr[p].per_node[i];
      if (t->t[0] + t->t[1] + t->t[2] == 0 && !csv)
        continue;
      /* basis: "memory-bound" and the like when the predictor fell back
       * from its own model for a kernel of this node. */
      printf (csv ? "%s,%s,%s,%d,%lld,%.9g,%.9g,%.9g,%.9g,%s\n"
                  : "%-10s %-40.40s %-12s %5d %5lld %12.6f %12.6f %12.6f %10.6f  %s\n",
              pr[p].predictor, g->nodes[i].name, g->nodes[i].opname, graph_layer (g, i),
              (long long) graph_weight (g, i), t->t[0], t->t[1], t->t[2],
              t->spread[0] + t->spread[1] + t->spread[2],
              t->basis ? t->basis : (csv ? "" : "-"));
    }
}

/* The JSON answer's description of the run. */
static json_t *
json_run (const struct cli *c, const struct precision *prec, const char *model, const char *graph,
          const char *gpu, int64_t batch, int64_t seq, int64_t layers)
{
  json_t *root = json_envelope ("predict");
  json_object_set_new (root, "model", json_string (model));
  json_object_set_new (root, "graph", json_string (graph));
  json_object_set_new (root, "gpu", json_string (gpu));
  json_object_set_new (root, "mode", json_string (c->mode));
  json_object_set_new (root, "dtype", json_string (dtype_name (prec->gemm)));
  json_object_set_new (root, "precision", json_string (prec->name));
  json_object_set_new (root, "dtypes", json_pack ("{s:s, s:s}", "gemm", dtype_name (prec->gemm),
                                                  "other", dtype_name (prec->other)));
  json_object_set_new (root, "batch", json_integer (batch));
  json_object_set_new (root, "seq", json_integer (seq));
  json_object_set_new (root, "layers", json_integer (layers));
  json_object_set_new (root, "assumed", json_string (c->assumed ? c->assumed : ""));
  return root;
}

/* A predictor's column: its name, with a trailing * where the run
 * predicted kernels of a dtype its own model does not cover. */
#define FALLBACK_FOOTNOTE "(*: the predictor has no model of its own for some of this run's " \
  "kernel dtypes and predicted them with the one it has; -v names them on stderr)"

static void
print_column_head (const struct plugin *pl)
{
  char head[64];
  snprintf (head, sizeof head, "%s%s", pl->p.name, plugin_fell_back (pl) ? "*" : "");
  printf (" %14s", head);
}

/* Per pipeline stage and predictor: one micro-batch's forward and
 * backward, and the forwards recomputation runs again inside the latter. */
static void
explain_stages (const struct strategy *s, const struct dist_result *r, char **names, size_t npred,
                FILE *out)
{
  char mods[80];
  rmod_names (strategy_rmods (s), mods, sizeof mods);
  fprintf (out, "\nper pipeline stage, one micro-batch (ms; recompute=%s runs %s again in the "
           "backward):\n%-10s %-6s %12s %12s %12s\n", recompute_name (s->recompute),
           s->recompute == RECOMPUTE_FULL ? "each layer's forward"
           : s->recompute == RECOMPUTE_SELECTIVE ? mods : "nothing",
           "predictor", "stage", "forward", "backward", "recompute");
  for (size_t p = 0; p < npred; p++)
    for (int k = 0; k < s->pp; k++)
      fprintf (out, "%-10s %-6d %12.3f %12.3f %12.3f\n", names[p], k, r[p].stage_fw_ms[k],
               r[p].stage_bw_ms[k], r[p].stage_recompute_ms[k]);
  fprintf (out, "(backward includes recompute; recompute per step on rank 0: %.3f ms with %s)\n",
           r[0].recompute_ms, names[0]);
}

/* Whether a --plugin-opt starting with prefix ("dp:overlap") was given. */
static bool
plugin_opt_given (const struct cli *c, const char *prefix)
{
  for (size_t i = 0; i < c->nopts; i++)
    if (strncmp (c->plugin_opts[i], prefix, strlen (prefix)) == 0)
      return true;
  return false;
}

/* After a table with a roofline column: what that column is. */
static void
bound_note (char **names, size_t npred)
{
  for (size_t p = 0; p < npred; p++)
    if (strcmp (names[p], "roofline") == 0) {
      puts ("(roofline: a bound, every kernel at the GPU's peak FLOP/s or memory bandwidth, "
            "not a prediction of what runs)");
      return;
    }
}

bool
dp_overlaps (char **plugin_opts, size_t nopts, const struct strategy *s)
{
  bool on = s->kernels == KERNELS_TE;
  for (size_t i = 0; i < nopts; i++)        /* the last given, as the plugin takes it */
    if (strncmp (plugin_opts[i], "dp:overlap=", 11) == 0)
      on = strcmp (plugin_opts[i] + 11, "0") != 0;
  return on;
}

/* With --engine (inference) under tp: which all-reduce the engine's
 * tensor-parallel groups use, on the assumed: line. */
static void
assume_engine_allreduce (struct cli *c, const struct workload *w, const struct strategy *s,
                         int gpn)
{
  char *what;
  int q, nodes;
  if (!c->engine || w->train || s->tp <= 1)
    return;
  group_layout (s->tp, 1, gpn, &q, &nodes);
  if (nodes == 1 && engine_allreduce_seconds (1, s->tp, &w->ge->gpu) >= 0)
    what = xasprintf ("the tp all-reduce: the engine's own one-shot/two-shot kernel over %d GPUs "
                      "(gpus.d engine_ar%d_*, fitted on aiconfigurator's custom_allreduce_perf) "
                      "where cheaper than NCCL's", s->tp, s->tp);
  else
    what = xasprintf ("the tp all-reduce: NCCL's (gpus.d [%s] has no engine all-reduce for "
                      "%d GPUs%s)", w->ge->name, s->tp, nodes > 1 ? " in one node" : "");
  assume (c, what);
  free (what);
}

/* A step under a strategy: the plugins' plans, the stage graphs, the
 * pipeline, the gradient synchronisation and the optimizer, per predictor. */
static int
predict_distributed (struct cli *c, struct plugin_set *set, struct workload *w,
                     const struct strategy *s, int gpn, char **names, size_t npred)
{
  struct dist_options o;
  struct dist_result *r = xcalloc (npred, sizeof *r);
  struct timespec t0, t1;
  int gpus = s->tp * s->pp * s->dp * s->cp, nodes = (gpus + gpn - 1) / gpn;
  double peak = perfmod_gpu_peak_flops (&w->ge->gpu, w->prec->gemm);
  struct plugin **pls = xcalloc (npred, sizeof *pls);
  bool marked = false;
  struct timeline tl;            /* the first predictor's step, for --plot */
  int rc = EXIT_RUNTIME;

  memset (&tl, 0, sizeof tl);
  dist_options_init (&o, c, w, s, gpn);
  if (s->dp * s->cp > 1 && w->train && !plugin_opt_given (c, "dp:overlap"))
    assume (c, s->kernels == KERNELS_TE
            ? "dp gradients reduced during the backward (Megatron-Core; dp:overlap=0 turns it off)"
            : "dp gradients reduced after the backward (eager; dp:overlap=1 overlaps them)");
  if (w->train && !s->host_us_set) {
    char *what = xasprintf ("each kernel launched from the host in %g us (eager PyTorch; "
                            "host_us= sets it, 0 under CUDA graphs)", PM_HOST_LAUNCH_US);
    assume (c, what);
    free (what);
  }
  if (s->tp > 1 && s->sp && s->kernels == KERNELS_TE && w->train && !s->tpo)
    assume (c, "tp collectives exposed (tpo=0; tpo=1 pipelines them with the GEMMs)");
  assume_engine_allreduce (c, w, s, gpn);
  if (dist_check (&w->m, &o) < 0) {
    rc = EXIT_USAGE;
    goto out;
  }
  if (c->per_op && c->per_op_chunk >= (int64_t) s->pp * (s->vp > 1 ? s->vp : 1)) {
    pm_error ("pipeline chunk %lld: the strategy has %d (0 to %d, model order)",
              (long long) c->per_op_chunk, s->pp * (s->vp > 1 ? s->vp : 1),
              s->pp * (s->vp > 1 ? s->vp : 1) - 1);
    rc = EXIT_USAGE;
    goto out;
  }
  if (c->print) {                /* the arguments that run it, not a prediction */
    char args[4096];
    if (!w->train) {
      pm_error ("--print %s: a training step's arguments (--mode train)", c->print);
      rc = EXIT_USAGE;
    }
    else if (launch_args (strcmp (c->print, "nemo") == 0 ? LAUNCH_NEMO : LAUNCH_MEGATRON, s,
                          &w->m, w->prec, w->batch, w->seq, dp_overlaps (c->plugin_opts, c->nopts, s), args,
                          sizeof args) < 0)
      rc = EXIT_USAGE;
    else {
      puts (args);
      rc = 0;
    }
    goto out;
  }
  clock_gettime (CLOCK_MONOTONIC, &t0);
  for (size_t p = 0; p < npred; p++) {
    struct plugin *pl = pls[p] = predictor_find (set, names[p]);
    if (pl == NULL) {
      rc = EXIT_USAGE;
      goto out;
    }
    o.timeline = c->plot && p == 0 ? &tl : NULL;
    if (dist_predict (set, pl, &w->m, &w->ge->gpu, &o, &r[p]) < 0) {
      rc = EXIT_RUNTIME;
      goto out;
    }
    marked |= plugin_fell_back (pl);
  }
  o.timeline = NULL;
  clock_gettime (CLOCK_MONOTONIC, &t1);
  if (c->plot && strategy_plot_write (c, w, s, names[0], &tl) < 0)
    goto out;
  if (c->per_op && strcmp (c->format, "csv") == 0) {
    /* the CSV answer is the table of the ops, as without a strategy */
    if (strategy_per_op (c, set, w, &o, names, npred, (int) c->per_op_chunk, NULL) == 0)
      rc = 0;
    goto out;
  }

  if (strcmp (c->format, "json") == 0) {
    json_t *root = json_run (c, w->prec, w->m.name, "builder", w->ge->name, w->batch, w->seq,
                             w->m.layers);
    json_t *arr = json_array ();
    json_t *sj = json_strategy (s, true);
    json_object_set_new (sj, "gpus", json_integer (gpus));
    json_object_set_new (sj, "nodes", json_integer (nodes));
    json_object_set_new (sj, "microbatches", json_integer (r[0].microbatches));
    json_object_set_new (root, "strategy", sj);
    for (size_t p = 0; p < npred; p++) {
      json_t *comm = json_object (), *hidden = json_object ();
      for (int d = DIM_TP; d < NDIMS; d++) {
        json_object_set_new (comm, dim_name (d), json_real (r[p].comm_ms[d]));
        json_object_set_new (hidden, dim_name (d), json_real (r[p].hidden_ms[d]));
      }
      json_t *e = json_pack ("{s:s, s:f, s:f, s:f, s:f, s:f, s:f, s:o, s:o, s:f, s:I, s:I}",
                             "predictor", names[p], "step_ms", r[p].step_ms, "pipeline_ms",
                             r[p].pipeline_ms, "bubble", r[p].bubble, "bubble_ms", r[p].bubble_ms,
                             "grads_ms", r[p].grads_ms, "optimizer_ms", r[p].optimizer_ms,
                             "comm_ms", comm, "overlapped_ms", hidden, "mfu",
                             r[p].step_ms > 0 ? r[p].flops / (r[p].step_ms / 1e3) / peak : 0,
                             "kernels", (json_int_t) r[p].kernels, "unique_kernels",
                             (json_int_t) r[p].unique_kernels);
      json_object_set_new (e, "memory_gib", json_memory_gib (&r[p].mem));
      json_object_set_new (e, "oom", json_boolean (r[p].mem.oom));
      json_object_set_new (e, "dtype_fallback", json_boolean (plugin_fell_back (pls[p])));
      /* recomputed forwards (inside pipeline_ms), and per stage one micro-batch */
      json_object_set_new (e, "recompute_ms", json_real (r[p].recompute_ms));
      json_object_set_new (e, "host_wait_ms", json_real (r[p].host_ms));
      json_t *stages = json_array ();
      for (int k = 0; k < s->pp; k++)
        json_array_append_new (stages, json_pack ("{s:f, s:f, s:f}", "fw_ms", r[p].stage_fw_ms[k],
                                                  "bw_ms", r[p].stage_bw_ms[k], "recompute_ms",
                                                  r[p].stage_recompute_ms[k]));
      json_object_set_new (e, "stages", stages);
      json_array_append_new (arr, e);
    }
    if (c->per_op && strategy_per_op (c, set, w, &o, names, npred, (int) c->per_op_chunk, arr) < 0) {
      json_decref (arr);
      json_decref (root);
      goto out;
    }
    json_object_set_new (root, "predictions", arr);
    json_print (root, stdout);
  }
  else if (strcmp (c->format, "csv") == 0) {
    /* tp_overlapped_ms and host_wait_ms last: the columns before them keep their places */
    printf ("predictor,step_ms,pipeline_ms,bubble,grads_ms,optimizer_ms,tp_comm_ms,ep_comm_ms,"
            "pp_comm_ms,dp_comm_ms,dp_overlapped_ms,mfu,memory_gib,oom,tp_overlapped_ms,"
            "host_wait_ms\n");
    for (size_t p = 0; p < npred; p++)
      printf ("%s,%.9g,%.9g,%.6f,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.6f,%.6g,%s,%.9g,%.9g\n",
              names[p], r[p].step_ms, r[p].pipeline_ms, r[p].bubble, r[p].grads_ms,
              r[p].optimizer_ms, r[p].comm_ms[DIM_TP], r[p].comm_ms[DIM_EP], r[p].comm_ms[DIM_PP],
              r[p].comm_ms[DIM_DP], r[p].hidden_ms[DIM_DP],
              r[p].step_ms > 0 ? r[p].flops / (r[p].step_ms / 1e3) / peak : 0,
              r[p].mem.total / PM_GIB, r[p].mem.oom ? "true" : "false", r[p].hidden_ms[DIM_TP],
              r[p].host_ms);
    if (c->assumed)
      fprintf (stderr, "perfmod: assumed %s\n", c->assumed);
  }
  else {
    /* the JSON's and CSV's names; bubble and mfu shown as percentages */
    static const char *const rows[] = { "step_ms", "pipeline_ms", "bubble_ms", "bubble",
                                        "grads_ms", "optimizer_ms", "tp_comm_ms",
                                        "tp_overlapped_ms", "ep_comm_ms", "pp_comm_ms",
                                        "dp_comm_ms", "dp_overlapped_ms", "host_wait_ms",
                                        "mfu" };
    printf ("perfmod %s: %s, %s, global batch %lld x seq %lld, %s, on %s (built graph, %lld "
            "layers)\n", PACKAGE_VERSION, w->m.name, w->train ? "training step" : "inference",
            (long long) w->batch, (long long) w->seq, w->prec->name, w->ge->name,
            (long long) w->m.layers);
    if (c->assumed)
      printf ("assumed: %s\n", c->assumed);
    char cpbuf[24] = "", etpbuf[24] = "";
    if (s->cp > 1)
      snprintf (cpbuf, sizeof cpbuf, " cp=%d", s->cp);
    if (s->etp > 0)                      /* whole experts (Megatron-Core's expert tp 1) */
      snprintf (etpbuf, sizeof etpbuf, " etp=%d", s->etp);
    printf ("strategy: tp=%d pp=%d dp=%d%s ep=%d%s mbs=%d vp=%d schedule=%s zero=%d recompute=%s "
            "sp=%d%s kernels=%s", s->tp, s->pp, s->dp, cpbuf, s->ep, etpbuf, s->mbs, s->vp,
            schedule_name (s->schedule), s->zero, recompute_name (s->recompute), s->sp,
            s->tpo ? " tpo=1" : "", kernels_name (s->kernels));
    char keys[16 * PM_MAX_STAGES];
    strategy_extra_keys (s, ' ', keys, sizeof keys);
    fputs (keys, stdout);
    printf (": %d GPUs on %d node%s of %d, %d micro-batch%s per replica", gpus, nodes,
            nodes == 1 ? "" : "s", gpn, r[0].microbatches, r[0].microbatches == 1 ? "" : "es");
    if (w->train && w->m.experts > 0 && dist_expert_replicas (s) > 0) {
      /* the ranks the experts' gradients and optimizer state go over */
      printf (", expert data parallelism %d", dist_expert_replicas (s));
    }
    putchar ('\n');
    printf ("\n%-16s", "");
    for (size_t p = 0; p < npred; p++)
      print_column_head (pls[p]);
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
      printf ("\n%-16s", rows[i]);
      for (size_t p = 0; p < npred; p++) {
        const struct dist_result *x = &r[p];
        double v[] = { x->step_ms, x->pipeline_ms, x->bubble_ms, 100 * x->bubble, x->grads_ms,
                       x->optimizer_ms, x->comm_ms[DIM_TP], x->hidden_ms[DIM_TP],
                       x->comm_ms[DIM_EP],
                       x->comm_ms[DIM_PP], x->comm_ms[DIM_DP], x->hidden_ms[DIM_DP],
                       x->host_ms, x->step_ms > 0 ? 100 * x->flops / (x->step_ms / 1e3) / peak : 0 };
        if (i == 3 || i == 13)
          printf (" %13.1f%%", v[i]);
        else
          printf (" %14.3f", v[i]);
      }
    }
    const struct memory_estimate *mem = &r[0].mem;
    printf ("\n\nmemory per device (GiB, pipeline rank %d, the fullest): weights %.2f, gradients "
            "%.2f, optimizer %.2f, activations %.2f, kv_cache %.2f, reserve %.2f; total %.2f of "
            "%.2f%s", r[0].mem_rank, mem->weights / PM_GIB, mem->gradients / PM_GIB,
            mem->optimizer / PM_GIB, mem->activations / PM_GIB, mem->kv_cache / PM_GIB,
            mem->reserve / PM_GIB, mem->total / PM_GIB, mem->capacity / PM_GIB,
            mem->oom ? "  OOM: does not fit" : "");
    printf ("\n\n(step = pipeline + grads + optim; *_comm_ms: rank 0's collectives per step, "
            "tp/ep/pp ones inside pipeline_ms, of tp's tp_overlapped_ms hidden behind GEMMs; "
            "grads_ms: the exposed part of dp's; host_wait_ms: rank 0's device waiting for the "
            "host's kernel launches, inside pipeline_ms; predicted in %.2f ms)\n",
            ((double) (t1.tv_sec - t0.tv_sec) * 1e3 + (double) (t1.tv_nsec - t0.tv_nsec) / 1e6));
    if (marked)
      puts (FALLBACK_FOOTNOTE);
    bound_note (names, npred);
    if (c->per_op && strategy_per_op (c, set, w, &o, names, npred, (int) c->per_op_chunk, NULL) < 0)
      goto out;
  }
  if (c->explain &&
      explain_strategy (set, s, &w->m, &w->ge->gpu, w->batch, w->seq, w->prec->gemm, gpn,
                        explain_stream (c)) < 0)
    goto out;
  if (c->explain)
    explain_stages (s, r, names, npred, explain_stream (c));
  rc = 0;
out:
  free (r);
  free (pls);
  timeline_free (&tl);
  return rc;
}

/* --explain with --gen under a strategy: each pipeline stage's graph of
 * the prefill and of a decode step, op by op, with the collectives the
 * plan puts in it (the first predictor's times; ms per copy and in all). */
static int
explain_serving (struct plugin_set *set, struct plugin *pl, const struct model_cfg *m,
                 const struct perfmod_gpu *gpu, const struct dist_options *o, int64_t kv_len,
                 FILE *out)
{
  struct strategy s = *o->s;
  struct dist_options q = *o;
  struct comm_groups g;
  s.mbs = (int) (o->batch / s.dp);
  s.vp = 1;
  q.s = &s;
  comm_groups_init (&g, &q);
  if (strategy_attention_dp (&s, s.dp))
    fprintf (out, "\nMoE layers (ep=%d x etp=%d over the tp=%d ranks of %d replicas): each rank "
             "dispatches its 1/%d of the replica's tokens over the %d expert ranks (%s%s) and "
             "combines them back%s%s\n", s.ep, s.etp, s.tp, s.dp, s.tp, s.ep * s.etp,
             dispatcher_name (strategy_dispatcher (&s, true)),
             s.dispatcher_set ? "" : ", the engines' default",
             s.etp > 1 ? "; each expert's width over etp ranks, the reduce-scatter summing "
                         "their slices" : "",
             s.tp > 1 ? "; tp's all-reduce after them sums the tp ranks' experts" : "");
  else if (s.etp > 0)
    fprintf (out, "\nMoE layers (ep=%d x etp=%d within tp=%d): no dispatch or combine "
             "all-to-all; the experts' outputs are summed by the tp all-reduce after them "
             "(tp_allreduce_fw below the experts, over the %d ranks)\n", s.ep, s.etp, s.tp, s.tp);
  for (int phase = 0; phase < 2; phase++) {
    q.kv_len = phase ? kv_len : 0;
    for (int k = 0; k < s.pp; k++) {
      struct graph gr;
      struct prediction pr;
      struct run_options ro;
      double sum = 0;
      if (dist_stage_graph (set, m, gpu, &q, k, &gr) < 0)
        return -1;
      memset (&ro, 0, sizeof ro);
      ro.prec = o->prec;
      ro.groups = &g;
      if (predict_graph (pl, &gr, gpu, &ro, &pr) < 0) {
        graph_free (&gr);
        return -1;
      }
      if (phase)
        fprintf (out, "\n%s, pipeline stage %d of %d: one decode step of %d sequences over %lld "
                 "cached tokens (%s)\n", pl->p.name, k, s.pp, s.mbs, (long long) kv_len,
                 k == s.pp - 1 ? "the last stage: then the token" : "then the send to the next");
      else
        fprintf (out, "\n%s, pipeline stage %d of %d: prefill of %d prompts x %lld tokens\n",
                 pl->p.name, k, s.pp, s.mbs, (long long) o->seq);
      fprintf (out, "%-40s %-12s %5s %12s %12s\n", "node", "op", "count", "ms", "total_ms");
      for (size_t i = 0; i < gr.n; i++) {
        double t = pr.per_node[i].t[PHASE_FW], n = (double) graph_weight (&gr, i);
        if (t == 0)
          continue;
        sum += t * n;
        fprintf (out, "%-40.40s %-12s %5lld %12.6f %12.4f\n", gr.nodes[i].name,
                 gr.nodes[i].opname, (long long) graph_weight (&gr, i), t, t * n);
      }
      fprintf (out, "%-40s %-12s %5s %12s %12.4f\n", "(stage)", "", "", "", sum);
      if (k < s.pp - 1) {      /* the hidden states to the next stage (pp's plan) */
        double bytes = (double) s.mbs * (double) (phase ? 1 : o->seq) * (double) m->hidden
                       * (o->prec ? o->prec->act_bytes : 4);
        double t = collective_seconds (PERFMOD_COLL_SENDRECV, bytes, g.size[DIM_PP],
                                       g.stride[DIM_PP], g.gpus_per_node, gpu) * 1e3;
        fprintf (out, "%-40s %-12s %5d %12.6f %12.4f\n", "pp_send_recv_fw (to the next stage)",
                 "comm", 1, t, t);
      }
      prediction_free (&pr);
      graph_free (&gr);
    }
  }
  return 0;
}

/* What --gen under a strategy reports per predictor. */
struct serving_row {
  double ttft_ms, tpot_ms, tps, tps_replica, ttft_comm_ms, tpot_comm_ms;
};

/* --gen under a strategy: per replica (tp x pp x ep GPUs; dp replicas
 * share --batch), the prefill of its prompts (time to first token) and a
 * decode step at the mean cache length (time per output token), each its
 * batch as one micro-batch through the stages, with the plan's
 * collectives; memory per GPU and the largest batch that fits. */
static int
predict_serving (struct cli *c, struct plugin_set *set, struct workload *w,
                 const struct strategy *s, int gpn, char **names, size_t npred)
{
  struct dist_options o;
  struct serving_row *row = xcalloc (npred, sizeof *row);
  struct plugin **pls = xcalloc (npred, sizeof *pls);
  struct memory_estimate mem;
  int64_t max_batch = 0, per = 0, kv_len = w->seq + c->gen / 2;
  int gpus = s->tp * s->pp * s->dp, replica = s->tp * s->pp;
  bool marked = false;
  int rc = EXIT_USAGE;

  dist_options_init (&o, c, w, s, gpn);
  o.gen = c->gen;
  if (c->strategy && (strstr (c->strategy, "mbs=") || strstr (c->strategy, "vp=") ||
                      strstr (c->strategy, "zero=") || strstr (c->strategy, "recompute="))) {
    pm_error ("--strategy %s with --gen: a serving replica runs its batch as one iteration; "
              "give tp, pp, ep and dp only", c->strategy);
    goto out;
  }
  if (s->cp > 1) {
    pm_error ("cp=%d: context parallelism splits a prefill, not generation (--gen): use tp, pp, "
              "ep and dp", s->cp);
    goto out;
  }
  if (w->batch % s->dp != 0) {
    pm_error ("--batch %lld is not a multiple of dp=%d (the replicas share the batch)",
              (long long) w->batch, s->dp);
    goto out;
  }
  if (kv_len + 1 > PM_MAX_SEQ) {
    pm_error ("--seq %lld + --gen %lld: more than %lld tokens", (long long) w->seq,
              (long long) c->gen, (long long) PM_MAX_SEQ);
    goto out;
  }
  per = w->batch / s->dp;
  {
    struct strategy one = *s;
    struct dist_options q = o;
    one.mbs = (int) per;
    one.vp = 1;
    q.s = &one;
    if (dist_check (&w->m, &q) < 0)
      goto out;
    if (dist_serving_memory (set, &w->m, &w->ge->gpu, &q, &mem, &max_batch) < 0)
      goto out;
  }
  assume_engine_allreduce (c, w, s, gpn);
  assume (c, "serving: each replica prefills its batch's prompts together (the time to first "
          "token), then decodes them together (the time per output token: the step at the mean "
          "cache length seq + gen/2); the KV cache of seq + gen tokens in the activations' dtype; "
          "a static batch: perfmod serve simulates an engine's requests over time");
  rc = EXIT_RUNTIME;
  for (size_t p = 0; p < npred; p++) {
    struct dist_result pre, dec;
    struct plugin *pl = pls[p] = predictor_find (set, names[p]);
    if (pl == NULL) {
      rc = EXIT_USAGE;
      goto out;
    }
    if (serving_predict (set, pl, &w->m, &w->ge->gpu, &o, 0, &pre) < 0 ||
        serving_predict (set, pl, &w->m, &w->ge->gpu, &o, kv_len, &dec) < 0)
      goto out;
    marked |= plugin_fell_back (pl);
    row[p].ttft_ms = pre.pipeline_ms;
    row[p].tpot_ms = dec.pipeline_ms;
    double ms = row[p].ttft_ms + (double) c->gen * row[p].tpot_ms;
    row[p].tps_replica = ms > 0 ? (double) per * (double) c->gen / (ms / 1e3) : 0;
    row[p].tps = row[p].tps_replica * s->dp;
    for (int d = DIM_TP; d < NDIMS; d++) {
      row[p].ttft_comm_ms += pre.comm_ms[d];
      row[p].tpot_comm_ms += dec.comm_ms[d];
    }
  }

  if (strcmp (c->format, "json") == 0) {
    json_t *root = json_run (c, w->prec, w->m.name, "builder", w->ge->name, w->batch, w->seq,
                             w->m.layers);
    json_t *arr = json_array ();
    json_object_set_new (root, "gen", json_integer (c->gen));
    json_t *sj = json_strategy (s, false);
    json_object_set_new (sj, "gpus", json_integer (gpus));
    json_object_set_new (sj, "gpus_per_replica", json_integer (replica));
    json_object_set_new (root, "strategy", sj);
    for (size_t p = 0; p < npred; p++) {
      json_t *e = json_pack ("{s:s, s:f, s:f, s:f, s:f, s:f, s:f, s:I}",
                             "predictor", names[p], "ttft_ms", row[p].ttft_ms, "tpot_ms",
                             row[p].tpot_ms, "tokens_per_s", row[p].tps, "tokens_per_s_replica",
                             row[p].tps_replica, "ttft_comm_ms", row[p].ttft_comm_ms,
                             "tpot_comm_ms", row[p].tpot_comm_ms,
                             "max_batch", (json_int_t) max_batch);
      json_object_set_new (e, "memory_gib", json_memory_gib (&mem));
      json_object_set_new (e, "oom", json_boolean (mem.oom));
      json_object_set_new (e, "dtype_fallback", json_boolean (plugin_fell_back (pls[p])));
      json_array_append_new (arr, e);
    }
    json_object_set_new (root, "predictions", arr);
    json_print (root, stdout);
  }
  else if (strcmp (c->format, "csv") == 0) {
    printf ("predictor,ttft_ms,tpot_ms,tokens_per_s,tokens_per_s_replica,ttft_comm_ms,"
            "tpot_comm_ms,weights_gib,kv_cache_gib,memory_gib,max_batch,oom\n");
    for (size_t p = 0; p < npred; p++)
      printf ("%s,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.6g,%.6g,%.6g,%lld,%s\n", names[p],
              row[p].ttft_ms, row[p].tpot_ms, row[p].tps, row[p].tps_replica,
              row[p].ttft_comm_ms, row[p].tpot_comm_ms, mem.weights / PM_GIB, mem.kv_cache / PM_GIB,
              mem.total / PM_GIB, (long long) max_batch, mem.oom ? "true" : "false");
    if (c->assumed)
      fprintf (stderr, "perfmod: assumed %s\n", c->assumed);
  }
  else {
    static const char *const rows[] = { "ttft_ms", "tpot_ms", "tokens_per_s",
                                        "tokens_per_s_replica", "ttft_comm_ms", "tpot_comm_ms" };
    printf ("perfmod %s: %s, serving (prefill, then %lld decode steps), batch %lld (%lld per "
            "replica) x seq %lld, %s, on %s (built graph, %lld layers)\n", PACKAGE_VERSION,
            w->m.name, (long long) c->gen, (long long) w->batch, (long long) per,
            (long long) w->seq, w->prec->name, w->ge->name, (long long) w->m.layers);
    if (c->assumed)
      printf ("assumed: %s\n", c->assumed);
    char keys[64];
    strategy_extra_keys (s, ' ', keys, sizeof keys);
    printf ("strategy: tp=%d pp=%d ep=%d dp=%d%s: %d GPU%s per replica, %d replica%s (%d GPUs)\n",
            s->tp, s->pp, s->ep, s->dp, keys, replica, replica == 1 ? "" : "s", s->dp,
            s->dp == 1 ? "" : "s", gpus);
    if (strategy_attention_dp (s, s->dp))
      printf ("experts: ep=%d x etp=%d over the tp=%d ranks of the %d replicas (attention data "
              "parallelism): %lld of the %lld experts per GPU, each 1/%d of its width %lld; the "
              "replicas' tokens dispatched to them and combined back (%s)\n", s->ep, s->etp,
              s->tp, s->dp, (long long) (w->m.experts / s->ep), (long long) w->m.experts, s->etp,
              (long long) (w->m.moe_ffn ? w->m.moe_ffn : w->m.ffn),
              s->dispatcher_set ? dispatcher_name (s->dispatcher)
                                : "all-gathered and reduce-scattered, the engines' default");
    else if (s->etp > 0)
      printf ("experts: ep=%d x etp=%d over the tp=%d ranks: %lld of the %lld experts per GPU, "
              "each 1/%d of its width %lld; attention's all-reduce leaves every token on every "
              "rank, each runs its experts on those routed to them (the busiest rank's), tp's "
              "all-reduce after the feed-forward sums their outputs (no all-to-all)\n",
              s->ep, s->etp, s->tp, (long long) (w->m.experts / s->ep), (long long) w->m.experts,
              s->etp, (long long) (w->m.moe_ffn ? w->m.moe_ffn : w->m.ffn));
    printf ("\n%-20s", "");
    for (size_t p = 0; p < npred; p++)
      print_column_head (pls[p]);
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
      printf ("\n%-20s", rows[i]);
      for (size_t p = 0; p < npred; p++) {
        double v[] = { row[p].ttft_ms, row[p].tpot_ms, row[p].tps, row[p].tps_replica,
                       row[p].ttft_comm_ms, row[p].tpot_comm_ms };
        printf (" %14.3f", v[i]);
      }
    }
    printf ("\n%-20s", "weights_gib");
    for (size_t p = 0; p < npred; p++)
      printf (" %14.3f", mem.weights / PM_GIB);
    printf ("\n%-20s", "kv_cache_gib");
    for (size_t p = 0; p < npred; p++)
      printf (" %14.3f", mem.kv_cache / PM_GIB);
    printf ("\n%-20s", "memory_gib");
    for (size_t p = 0; p < npred; p++)
      printf (" %14.3f", mem.total / PM_GIB);
    printf ("\n%-20s", "max_batch");
    for (size_t p = 0; p < npred; p++)
      printf (" %14lld", (long long) max_batch);
    printf ("\n\nmemory per GPU (GiB, the fullest pipeline stage): weights %.2f, activations %.2f, "
            "kv_cache %.2f, reserve %.2f; total %.2f of %.2f%s\n", mem.weights / PM_GIB,
            mem.activations / PM_GIB, mem.kv_cache / PM_GIB, mem.reserve / PM_GIB, mem.total / PM_GIB,
            mem.capacity / PM_GIB, mem.oom ? "  OOM: does not fit" : "");
    printf ("\n(tokens_per_s: all %d replicas, batch x gen tokens over ttft + gen x tpot; "
            "*_comm_ms: the tp/ep/pp collectives inside ttft and tpot; max_batch: the largest "
            "batch per replica whose memory fits)\n", s->dp);
    if (marked)
      puts (FALLBACK_FOOTNOTE);
    bound_note (names, npred);
  }
  if (c->explain &&
      explain_serving (set, pls[0], &w->m, &w->ge->gpu, &o, kv_len, explain_stream (c)) < 0)
    goto out;
  rc = 0;
out:
  free (row);
  free (pls);
  return rc;
}

/* predict_one_gpu's run, called with its standard output captured */
struct one_gpu {
  struct cli *c;
  struct plugin_set *set;
};

static int
predict_captured (void *arg)
{
  struct one_gpu *a = arg;
  return cmd_predict (a->c, a->set);
}

/* One GPU's answer of a --gpu list: the run's JSON, captured from stdout
 * (the one place every prediction path writes it); NULL after its own
 * message on stderr. */
static json_t *
predict_one_gpu (const struct cli *c, struct plugin_set *set, const char *gpu, int *rc)
{
  struct cli one = *c;
  struct one_gpu a = { &one, set };
  json_t *root = NULL;
  json_error_t err;
  char *text;
  size_t len;
  one.gpu = gpu;
  one.format = "json";
  one.assumed = NULL;
  *rc = capture_stdout (predict_captured, &a, &text, &len);
  free (one.assumed);
  if (*rc == 0 && (root = json_loadb (text, len, 0, &err)) == NULL) {
    pm_error ("--gpu %s: its answer did not read back: %s", gpu, err.text);
    *rc = EXIT_RUNTIME;
  }
  free (text);
  return root;
}

/* A page's title from an answer: model, mode and GPU (and the strategy). */
static char *
page_title (const char *json, size_t len)
{
  json_error_t err;
  json_t *r = json_loadb (json, len, 0, &err), *a = r;
  char *t;
  if (r && json_object_get (r, "by_gpu"))       /* a list: the first GPU's run names it */
    a = json_array_get (json_object_get (r, "by_gpu"), 0);
  const char *spec = json_string_value (json_object_get (json_object_get (a, "strategy"), "spec"));
  t = xasprintf ("%s, %s, %s%s%s", json_string_value (json_object_get (a, "model")),
                 json_string_value (json_object_get (a, "mode")),
                 r != a ? "several GPUs" : json_string_value (json_object_get (a, "gpu")),
                 spec ? ", " : "", spec ? spec : "");
  json_decref (r);
  return t;
}

int
predict_html (struct cli *c, struct plugin_set *set)
{
  struct cli one = *c;
  struct one_gpu a = { &one, set };
  bool chart = c->gen == 0 && !(c->gpu && strchr (c->gpu, ','));   /* as --plot draws */
  char *svgpath = NULL, *json = NULL, *svg = NULL, *title;
  size_t jlen = 0, slen = 0;
  int rc;
  if (output_check (c->html) < 0)
    return EXIT_RUNTIME;
  if (chart && (svgpath = aside_file ()) == NULL)
    chart = false;
  one.format = "json";
  one.html = NULL;
  one.assumed = NULL;
  one.plot = chart ? svgpath : NULL;
  rc = capture_stdout (predict_captured, &a, &json, &jlen);
  free (one.assumed);
  if (rc == 0 && chart && slurp (svgpath, &svg, &slen) < 0)
    rc = EXIT_RUNTIME;
  if (chart)
    unlink (svgpath);
  free (svgpath);
  if (rc == 0) {
    title = page_title (json, jlen);
    if (html_page_write (c->html, title, json, jlen, svg, slen) < 0)
      rc = EXIT_RUNTIME;
    free (title);
  }
  /* the answer as asked: the JSON held, else the run again in its format */
  if (rc == 0 && strcmp (c->format, "json") == 0 && !c->plot)
    fwrite (json, 1, jlen, stdout);
  else if (rc == 0)
    rc = cmd_predict (c, set);
  free (json);
  free (svg);
  return rc;
}

/* A number of an answer, NAN where it has none. */
static double
num (const json_t *o, const char *key)
{
  const json_t *v = json_object_get (o, key);
  return json_is_number (v) ? json_number_value (v) : NAN;
}

/* A cell: the number, or '-' (the table) or nothing (CSV) where absent. */
static void
cell (double v, int decimals, int width, bool csv)
{
  char buf[48];
  if (isnan (v))
    snprintf (buf, sizeof buf, "%s", csv ? "" : "-");
  else
    snprintf (buf, sizeof buf, "%.*f", decimals, v);
  if (csv)
    printf (",%s", buf);
  else
    printf (" %*s", width, buf);
}

/* An assumed: line with the GPU's names (gpus.d's, then as given: the
 * given alias may be part of gpus.d's name) taken out, to compare the
 * GPUs' assumptions. */
static char *
without_gpu (const char *assumed, const char *given, const char *name)
{
  char *s = xstrdup (assumed ? assumed : "");
  const char *cut[] = { name, given };   /* the longer first: "h200-sxm" holds "h200" */
  for (int k = 0; k < 2; k++) {
    size_t len = cut[k] ? strlen (cut[k]) : 0;
    char *p;
    while (len && (p = strstr (s, cut[k])) != NULL)
      memmove (p, p + len, strlen (p + len) + 1);
  }
  return s;
}

/* perfmod --gpu A,B,...: the same run on each GPU, one table side by side
 * (JSON: each GPU's whole answer under "by_gpu"). */
static int
predict_gpus (struct cli *c, struct plugin_set *set)
{
  char **names = strv_split (c->gpu, ',');
  size_t n = strv_len (names);
  json_t **answers = xcalloc (n, sizeof *answers);
  bool csv = strcmp (c->format, "csv") == 0, json = strcmp (c->format, "json") == 0;
  int rc = 0;

  if (!csv && !json && strcmp (c->format, "table") != 0) {
    pm_error ("--format '%s': expected table, csv or json", c->format);
    rc = EXIT_USAGE;
    goto out;
  }
  if (c->plot || c->per_op || c->explain || c->print) {
    pm_error ("--gpu %s: a list compares the GPUs in one table; --plot, --per-op, --explain and "
              "--print take one GPU", c->gpu);
    rc = EXIT_USAGE;
    goto out;
  }
  for (size_t i = 0; i < n; i++)
    if (names[i][0] == '\0') {
      pm_error ("--gpu %s: an empty name in the list", c->gpu);
      rc = EXIT_USAGE;
      goto out;
    }
  for (size_t i = 0; i < n && rc == 0; i++)
    answers[i] = predict_one_gpu (c, set, names[i], &rc);
  if (rc != 0)
    goto out;
  if (json) {
    json_t *root = json_envelope ("predict"), *arr = json_array ();
    for (size_t i = 0; i < n; i++) {
      json_object_del (answers[i], "perfmod");    /* the envelope's, once */
      json_object_del (answers[i], "command");
      json_array_append (arr, answers[i]);
    }
    json_object_set_new (root, "by_gpu", arr);
    json_print (root, stdout);
    goto out;
  }
  if (csv) {                            /* as one GPU's CSV: the assumptions on stderr */
    for (size_t i = 0; i < n; i++)
      fprintf (stderr, "perfmod: assumed on %s: %s\n",
               json_string_value (json_object_get (answers[i], "gpu")),
               json_string_value (json_object_get (answers[i], "assumed")));
    printf ("gpu,predictor,step_ms,ttft_ms,tpot_ms,tokens_per_s,mfu,memory_gib,capacity_gib,oom\n");
  }
  else {
    const json_t *a = answers[0];
    printf ("perfmod %s: %s, %s, batch %lld x seq %lld, %s, on %zu GPUs\n", PACKAGE_VERSION,
            json_string_value (json_object_get (a, "model")),
            json_string_value (json_object_get (a, "mode")),
            (long long) json_integer_value (json_object_get (a, "batch")),
            (long long) json_integer_value (json_object_get (a, "seq")),
            json_string_value (json_object_get (a, "precision")), n);
    /* each GPU's assumptions; after the first, "the same" where they differ
     * only by the GPU's name */
    char *first = without_gpu (json_string_value (json_object_get (answers[0], "assumed")),
                               names[0], json_string_value (json_object_get (answers[0], "gpu")));
    for (size_t i = 0; i < n; i++) {
      const char *as = json_string_value (json_object_get (answers[i], "assumed"));
      const char *gpu = json_string_value (json_object_get (answers[i], "gpu"));
      char *mine = without_gpu (as, names[i], gpu);
      if (i == 0)
        printf ("assumed on %s: %s\n", gpu, as);
      else if (strcmp (mine, first) == 0)
        printf ("assumed on %s: the same (--gpu %s)\n", gpu, names[i]);
      else
        printf ("assumed on %s: %s\n", gpu, as);
      free (mine);
    }
    free (first);
    printf ("\n%-26s %-10s %12s %10s %10s %10s %6s %10s %10s\n", "gpu", "predictor",
            "step_ms", "ttft_ms", "tpot_ms", "tokens/s", "mfu_%", "mem_GiB", "of_GiB");
  }
  for (size_t i = 0; i < n; i++) {
    const char *gpu = json_string_value (json_object_get (answers[i], "gpu"));
    const json_t *preds = json_object_get (answers[i], "predictions"), *p;
    size_t k;
    json_array_foreach (preds, k, p) {
      const json_t *mem = json_object_get (p, "memory_gib");
      bool oom = json_is_true (json_object_get (p, "oom"));
      /* a training step's step_ms, one pass's e2e_ms; with --gen its
       * ttft, tpot and tokens/s (its e2e_ms is the prefill's alone) */
      double t = num (p, "step_ms"), ttft = num (p, "ttft_ms");
      if (isnan (t) && isnan (ttft))
        t = num (p, "e2e_ms");
      if (csv)
        printf ("%s,%s", gpu, json_string_value (json_object_get (p, "predictor")));
      else
        printf ("%-26s %-10s", k ? "" : gpu, json_string_value (json_object_get (p, "predictor")));
      cell (t, 3, 12, csv);
      cell (ttft, 3, 10, csv);
      cell (num (p, "tpot_ms"), 3, 10, csv);
      cell (num (p, "tokens_per_s"), 1, 10, csv);
      cell (csv ? num (p, "mfu") : 100 * num (p, "mfu"), csv ? 4 : 1, 6, csv);
      cell (num (mem, "total"), csv ? 4 : 2, 10, csv);
      cell (num (mem, "capacity"), csv ? 4 : 2, 10, csv);
      printf (csv ? ",%s\n" : "%s\n", csv ? (oom ? "true" : "false") : oom ? "  OOM" : "");
    }
  }
  if (!csv && !json)
    printf ("\n(step_ms: a training step or one pass; ttft, tpot and tokens/s with --gen; "
            "memory per GPU in GiB against the card's)\n");
out:
  for (size_t i = 0; i < n; i++)
    json_decref (answers[i]);
  free (answers);
  strv_free (names);
  return rc;
}

int
cmd_predict (struct cli *c, struct plugin_set *set)
{
  struct workload w;
  const struct gpu_entry *ge;
  struct graph *gp;
  struct strategy s;
  struct run_options ro;
  struct roofline_plot plot = { NULL, 0, 0 };
  struct prediction *pr = NULL;
  char **names = NULL;
  size_t npred = 0;
  struct plugin **pls = NULL;
  bool marked = false;
  int rc, gpn;
  int64_t batch, seq;
  bool train;
  struct timespec t0, t1;
  struct memory_estimate mem;
  struct extras *x = NULL;
  struct graph dg;               /* the decode step's graph with --gen */
  bool have_decode = false;
  double flops;

  if (c->gpu && strchr (c->gpu, ','))
    return predict_gpus (c, set);
  if (c->print && (c->strategy == NULL || c->gen > 0)) {
    pm_error ("--print %s: a training layout's arguments (--strategy with --mode train%s)",
              c->print, c->gen > 0 ? ", not --gen" : "");
    return EXIT_USAGE;
  }
  if (c->per_op_chunk > 0 && c->strategy == NULL) {
    pm_error ("--per-op=%lld: a pipeline chunk of a --strategy (one device has chunk 0 only)",
              (long long) c->per_op_chunk);
    return EXIT_USAGE;
  }
  if ((rc = workload_load (c, &w)) != 0)
    return rc;
  rc = EXIT_USAGE;
  ge = w.ge;
  gp = &w.g;
  train = w.train;
  batch = w.batch;
  seq = w.seq;
  gpn = c->gpus_per_node ? (int) c->gpus_per_node : ge->gpu.gpus_per_node;

  if (strategy_load (c, &s, gpn, batch) < 0)
    goto out;
  if (!s.kernels_set)
    s.kernels = w.kernels;
  if (s.kernels == KERNELS_MEGATRON && (c->opgraph || !w.have_model)) {
    pm_error ("--strategy kernels=megatron: an imported graph runs the kernels it traced");
    goto out;
  }
  /* (only a --strategy run is costed per rank: the single-device path has no optimizer
   * to shard) */
  if (c->strategy && w.have_model && c->opgraph == NULL && strategy_default_zero (&s, train))
    assume (c, "zero=1 (Megatron-Core's distributed optimizer, as its recipes run; zero=0 "
            "turns it off)");
  if (strategy_check_attention (&s, "--attention", c->attention) < 0)
    goto out;
  if (s.kernels_set) {           /* the strategy says whose kernels: not an assumption */
    assume_replace (c, KERNELS_ASSUMED_TE, NULL);
    assume_replace (c, KERNELS_ASSUMED_EAGER, NULL);
    if (s.kernels == KERNELS_MEGATRON && w.flash)
      assume_replace (c, "--attention flash",
                      "--attention unfused (Megatron's layer: its masked softmax)");
  }

  if (w.have_model)
    assume (c, "memory reserve " MEMORY_RESERVE_TEXT);
  if (w.have_model && c->engine_name && w.m.experts > 0 && c->routing == 0)
    assume (c, "the engine's router: each step's tokens over the experts as a power law of "
               "exponent 1.01 (aiconfigurator's default; --routing uniform or powerlaw:A)");
  if (c->strategy && w.have_model && c->opgraph == NULL) {
    if (c->gen > 0 && (c->plot || c->per_op)) {
      pm_error ("--strategy with --gen: %s shows one training or prefill step, not a "
                "generation", c->plot ? "--plot" : "--per-op");
      goto out;
    }
    names = strv_split (c->predictors ? c->predictors : PM_DEFAULT_PREDICTOR, ',');
    if (c->predictors == NULL)
      assume (c, PM_DEFAULT_PREDICTOR_TEXT);
    if (c->gen > 0) {
      if (train) {
        pm_error ("--gen: decode steps are predicted for inference (--mode inf)");
        goto out;
      }
      rc = predict_serving (c, set, &w, &s, gpn, names, strv_len (names));
      goto out;
    }
    rc = predict_distributed (c, set, &w, &s, gpn, names, strv_len (names));
    goto out;
  }
  if (c->gen > 0) {
    /* The mean decode step: attention grows linearly with the cache, so
     * the step at the middle of the generation is the average one. */
    struct build_options bo = { .batch = batch, .seq = seq, .fusion = c->fusion,
                                .kv_len = seq + c->gen / 2, .flash = w.flash,
                                .engine = c->engine, .engine_name = c->engine_name,
                                .routing = c->routing };
    if (train || !w.have_model || c->opgraph) {
      pm_error ("--gen: decode steps are predicted for inference of a --model (built graph)");
      goto out;
    }
    if (graph_build (&dg, &w.m, &bo) < 0)
      goto out;
    have_decode = true;
  }
  if (w.have_model) {
    struct memory_options mo = { w.prec, batch, seq, train, s.recompute, 0, c->gen, NULL,
                                 w.flash, w.kernels == KERNELS_TE, s.recompute_modules };
    memory_estimate (&w.m, &mo, &ge->gpu, &mem);
  }
  flops = graph_flops (gp, w.prec, train);

  names = strv_split (c->predictors ? c->predictors : PM_DEFAULT_PREDICTOR, ',');
  if (c->predictors == NULL)
    assume (c, PM_DEFAULT_PREDICTOR_TEXT);
  npred = strv_len (names);
  pr = xcalloc (npred, sizeof *pr);
  x = xcalloc (npred, sizeof *x);
  pls = xcalloc (npred, sizeof *pls);
  memset (&ro, 0, sizeof ro);
  ro.prec = w.prec;
  ro.train = train;
  ro.comm_group = s.tp * s.dp * s.pp;
  clock_gettime (CLOCK_MONOTONIC, &t0);
  for (size_t p = 0; p < npred; p++) {
    struct plugin *pl = pls[p] = predictor_find (set, names[p]);
    if (pl == NULL) {
      rc = EXIT_USAGE;
      npred = p;
      goto out;
    }
    /* the chart shows the first predictor's kernels */
    ro.on_kernel = c->plot && p == 0 ? roofline_plot_kernel : NULL;
    ro.on_kernel_ctx = &plot;
    if (predict_graph (pl, gp, &ge->gpu, &ro, &pr[p]) < 0) {
      rc = EXIT_RUNTIME;
      npred = p;
      goto out;
    }
    x[p].mem = w.have_model ? &mem : NULL;
    x[p].batch = batch;
    x[p].gen = c->gen;
    x[p].mfu = pr[p].e2e_ms > 0 ? flops / (pr[p].e2e_ms / 1e3)
                                  / perfmod_gpu_peak_flops (&ge->gpu, w.prec->gemm) : 0;
    if (have_decode) {
      struct prediction dp;
      if (predict_graph (pl, &dg, &ge->gpu, &ro, &dp) < 0) {
        rc = EXIT_RUNTIME;
        npred = p + 1;
        goto out;
      }
      x[p].decode_ms = dp.e2e_ms;
      prediction_free (&dp);
    }
  }
  clock_gettime (CLOCK_MONOTONIC, &t1);
  for (size_t p = 0; p < npred; p++)
    marked |= plugin_fell_back (pls[p]);

  if (c->plot) {
    char *title = xasprintf ("%s, %s, batch %lld x seq %lld", w.have_model ? w.m.name : c->opgraph,
                             train ? "training step" : "inference (prefill)", (long long) batch,
                             (long long) seq);
    int prc = roofline_plot_write (&plot, c->plot, &ge->gpu, w.prec->gemm, title, names[0]);
    free (title);
    if (prc < 0) {
      rc = EXIT_RUNTIME;
      goto out;
    }
  }
  if (strcmp (c->format, "json") == 0) {
    json_t *root = json_run (c, w.prec, w.have_model ? w.m.name : c->opgraph, gp->source,
                             ge->name, batch, seq, gp->repeat);
    json_t *arr = json_array ();
    for (size_t p = 0; p < npred; p++) {
      x[p].fallback = plugin_fell_back (pls[p]);
      json_prediction (arr, &pr[p], gp, c->per_op, &x[p]);
    }
    json_object_set_new (root, "predictions", arr);
    json_print (root, stdout);
  }
  else if (strcmp (c->format, "csv") == 0) {
    if (c->per_op)
      print_per_op (c, gp, pr, npred);
    else {
      printf ("predictor,e2e_ms,fw_ms,bw_ms,acc_ms,spread_ms%s,memory_gib,oom\n",
              c->gen > 0 ? ",ttft_ms,tpot_ms,tokens_per_s" : "");
      for (size_t p = 0; p < npred; p++) {
        printf ("%s,%.9g,%.9g,%.9g,%.9g,%.9g", pr[p].predictor, pr[p].e2e_ms, pr[p].fw_ms,
                pr[p].bw_ms + pr[p].acc_ms, pr[p].acc_ms, pr[p].spread_ms);
        if (c->gen > 0)
          printf (",%.9g,%.9g,%.9g", pr[p].e2e_ms, x[p].decode_ms, tokens_per_s (&pr[p], &x[p]));
        /* no memory without a model (an imported graph alone): empty */
        if (w.have_model)
          printf (",%.6g,%s\n", mem.total / PM_GIB, mem.oom ? "true" : "false");
        else
          fputs (",,\n", stdout);
      }
    }
    if (c->assumed)
      fprintf (stderr, "perfmod: assumed %s\n", c->assumed);
  }
  else {
    printf ("perfmod %s: %s, %s, batch %lld x seq %lld, %s, on %s (%s graph, %lld layers)\n",
            PACKAGE_VERSION, w.have_model ? w.m.name : c->opgraph,
            train ? "training step" : c->gen > 0 ? "inference (prefill, then decode)"
            : "inference (prefill)", (long long) batch,
            (long long) seq, w.prec->name, ge->name,
            c->opgraph ? "imported" : "built", (long long) gp->repeat);
    if (c->assumed)
      printf ("assumed: %s\n", c->assumed);
    if (c->strategy)
      printf ("strategy: tp=%d pp=%d dp=%d ep=%d (%d GPUs): an imported graph is one device's "
              "trace, predicted as it is; its collectives run over all %d GPUs\n", s.tp, s.pp,
              s.dp, s.ep, s.tp * s.pp * s.dp, s.tp * s.pp * s.dp);
    printf ("\n%-10s", "");
    for (size_t p = 0; p < npred; p++)
      print_column_head (pls[p]);
    static const char *const rows[] = { "e2e_ms", "fw_ms", "bw_ms", "acc_ms" };
    for (int r = 0; r < 4; r++) {
      printf ("\n%-10s", rows[r]);
      for (size_t p = 0; p < npred; p++) {
        double v = r == 0 ? pr[p].e2e_ms : r == 1 ? pr[p].fw_ms
                 : r == 2 ? pr[p].bw_ms + pr[p].acc_ms : pr[p].acc_ms;
        printf (" %14.3f", v);
      }
    }
    printf ("\n%-10s", "spread_ms");
    for (size_t p = 0; p < npred; p++)
      if (pr[p].spread_ms > 0)
        printf (" %14.3f", pr[p].spread_ms);
      else
        printf (" %14s", "-");
    printf ("\n%-10s", "kernels");
    for (size_t p = 0; p < npred; p++)
      printf (" %14zu", pr[p].kernels);
    printf ("\n%-10s", "mfu");
    for (size_t p = 0; p < npred; p++)
      printf (" %13.1f%%", 100 * x[p].mfu);
    if (c->gen > 0) {
      static const char *const drows[] = { "ttft_ms", "tpot_ms", "tokens/s" };
      for (int r = 0; r < 3; r++) {
        printf ("\n%-10s", drows[r]);
        for (size_t p = 0; p < npred; p++)
          printf (" %14.3f", r == 0 ? pr[p].e2e_ms : r == 1 ? x[p].decode_ms
                                    : tokens_per_s (&pr[p], &x[p]));
      }
    }
    if (w.have_model)
      printf ("\n\nmemory per device (GiB): weights %.2f, gradients %.2f, optimizer %.2f, "
              "activations %.2f, kv_cache %.2f, reserve %.2f; total %.2f of %.2f%s",
              mem.weights / PM_GIB, mem.gradients / PM_GIB, mem.optimizer / PM_GIB, mem.activations / PM_GIB,
              mem.kv_cache / PM_GIB, mem.reserve / PM_GIB, mem.total / PM_GIB, mem.capacity / PM_GIB,
              mem.oom ? "  OOM: does not fit" : "");
    printf ("\n\n(bw_ms includes acc_ms, the gradient accumulation; spread_ms: the sum of the "
            "kernels' ensemble spreads, at least the spread of e2e_ms; predicted in %.2f ms)\n",
            ((double) (t1.tv_sec - t0.tv_sec) * 1e3 + (double) (t1.tv_nsec - t0.tv_nsec) / 1e6));
    if (marked)
      puts (FALLBACK_FOOTNOTE);
    bound_note (names, npred);
    if (c->per_op)
      print_per_op (c, gp, pr, npred);
  }
  if (c->explain) {
    if (explain_strategy (set, &s, &w.m, &ge->gpu, batch, seq, w.prec->gemm, gpn,
                          explain_stream (c)) < 0) {
      rc = EXIT_RUNTIME;
      goto out;
    }
  }
  rc = 0;
out:
  for (size_t p = 0; p < npred; p++)
    prediction_free (&pr[p]);
  free (pr);
  free (x);
  free (pls);
  roofline_plot_free (&plot);
  strv_free (names);
  if (have_decode)
    graph_free (&dg);
  workload_free (&w);
  return rc;
}
