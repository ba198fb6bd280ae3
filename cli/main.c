/* main.c: the perfmod command line: predict (default), graph, plugins, gpus, strategies, models, reproduce, train, eval. */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define DEFAULT_MODEL "gpt2-large"

#define DEFAULT_BATCH 4
#define DEFAULT_SEQ 1024
/* NeuSight's training GPUs: the in-distribution split. */
#define DEFAULT_IN_DIST "p4,p100,v100,t4,a100-40gb"

struct cli {
  const char *model, *opgraph, *gpu, *mode, *dtype, *precision, *predictors, *strategy, *format;
  const char *neusight, *table, *graph, *plot, *attention, *published;
  const char *data, *out, *reference, *in_dist, *features, *split;
  int64_t batch, seq, nodes, gpus_per_node, layers, seed, epochs, members, gen;
  bool seed_given;
  char **plugin_opts;
  size_t nopts;
  char *command;           /* the command line as typed */
  bool per_op, explain, fusion, keep_throttled, keep_floor;
  char **plugin_paths;
  size_t npaths;
  char *assumed;           /* what the run filled in by default */
};

static void
usage (FILE *fp)
{
  fputs ("Usage: perfmod [predict] [--model NAME|config.json] [--opgraph FILE.csv]\n"
         "               [--gpu NAME] [--batch N] [--seq N] [--mode inf|train]\n"
         "               [--dtype fp32|tf32|fp16|bf16|fp8] [--precision fp32|amp-fp16|bf16|fp8]\n"
         "               [--predictor NAME[,NAME...]]\n"
         "               [--strategy SPEC|PRESET] [--nodes N] [--gpus-per-node N] [--explain]\n"
         "               [--per-op] [--format table|csv|json] [--plugin-path DIR]...\n"
         "               [--layers N] [--fusion] [--attention flash|unfused] [--gen N]\n"
         "               [--plot FILE.svg] [--verbose]\n"
         "       perfmod plugins | gpus | strategies | models [--plugin-path DIR]...\n"
         "       perfmod graph [--model ...|--opgraph ...] [--format table|csv]: the kernels\n"
         "       perfmod reproduce [--neusight DIR] [--graph opgraph|builder]\n"
         "               [--table inf|train|perop|nodesum|distributed|all|published]\n"
         "               [--published FILE]\n"
         "               [--predictor LIST] [--format table|csv]\n"
         "       perfmod eval --data DIR [--predictor LIST] [--format table|csv]\n"
         "               [--in-dist GPU,...] [--neusight DIR] [--per-op]\n"
         "               [--dtype D] [--gpu G] [--split all|holdout|train]\n"
         "       perfmod kernel --op OP --gpu NAME [--dtype D] ...: one kernel (kernel --help)\n"
         "       perfmod search --model M --gpus N --global-batch B ...: the best ways to train\n"
         "               M on N GPUs (search --help)\n"
         "       perfmod train --predictor NAME --data DIR --out FILE [--seed S]\n"
         "               [--epochs N] [--members N] [--in-dist GPU,...] [--reference FILE]\n"
         "               [--keep-throttled] [--keep-floor] [--features SET]\n"
         "       (any command) [--plugin-opt NAME:KEY=VALUE]...\n"
         "       perfmod --help | --version\n"
         "\n"
         "With no arguments: GPT-2 Large inference, batch 4 x 1024 tokens, bf16, on one\n"
         "H100 (NeuSight's H100 80GB HBM3), with the roofline predictor.  --dtype (inference)\n"
         "and --precision (training) default to what users run on the GPU: bf16 where it has\n"
         "bf16 matrix units, fp16 where it has fp16 ones only, else fp32 (and fp32 for an\n"
         "imported NeuSight --opgraph trace, whose runs were fp32).\n"
         "Environment: PERFMOD_PLUGIN_DIR replaces the installed plugin directory,\n"
         "PERFMOD_DATADIR the data directory (gpus.d, strategies.d, tiles.d, models, params),\n"
         "PERFMOD_NEUSIGHT gives reproduce's and eval's default --neusight.\n"
         "--in-dist defaults to NeuSight's training GPUs: " DEFAULT_IN_DIST ".\n"
         "Exit status: 0 success, 1 runtime failure, 2 bad usage or bad input.\n", fp);
}


static void
assume (struct cli *c, const char *what)
{
  char *s = c->assumed ? xasprintf ("%s, %s", c->assumed, what) : xstrdup (what);
  free (c->assumed);
  c->assumed = s;
}

/* ---- list commands ---- */

static int
cmd_plugins (struct plugin_set *set)
{
  printf ("%-12s %-12s %-8s %-5s %s\n", "name", "kind", "version", "dim", "path");
  for (size_t i = 0; i < set->n; i++) {
    const struct plugin *p = &set->v[i];
    printf ("%-12s %-12s %-8s %-5s %s\n", p->p.name, plugin_kind_name (p->p.kind),
            p->p.version ? p->p.version : "-", p->p.dimension ? p->p.dimension : "-", p->path);
  }
  return 0;
}

static int
cmd_gpus (void)
{
  struct gpu_db db;
  if (gpu_db_load_data (&db) < 0)
    return EXIT_USAGE;
  /* The columns up to l2_mb are fixed (scripts read them by position);
   * later ones: fp32 matrix-core peak, TDP, base/boost clock, link/NIC GB/s. */
  printf ("%-24s %-6s %5s %10s %7s %7s %7s %6s %8s %5s %7s %7s %7s %5s %9s %8s  %s\n", "name",
          "vendor", "SMs", "fp32_gflops", "tf32_tf", "bf16_tf", "fp8_tf", "mem_gb", "mem_gbps",
          "l2_mb", "fp16_tf", "fp4_tf", "f32mx_tf", "tdp_w", "base/mhz", "link/nic", "aliases");
  for (size_t i = 0; i < db.n; i++) {
    const struct gpu_entry *e = &db.v[i];
    const struct perfmod_gpu *g = &e->gpu;
    char clk[32], net[32];
    if (g->base_clock_mhz > 0)
      snprintf (clk, sizeof clk, "%.0f/%.0f", g->base_clock_mhz, g->clock_mhz);
    else
      snprintf (clk, sizeof clk, "-/%.0f", g->clock_mhz);
    snprintf (net, sizeof net, "%g/%g", g->link_gbps, g->nic_gbps);
    printf ("%-24s %-6s %5d %10.0f %7.1f %7.1f %7.1f %6.0f %8.0f %5.0f %7.1f %7.0f %7.1f %5.0f %9s %8s  ",
            e->name, e->vendor, g->sms, g->fp32_gflops, g->tensor_tflops[PERFMOD_DTYPE_TF32],
            g->tensor_tflops[PERFMOD_DTYPE_BF16], g->tensor_tflops[PERFMOD_DTYPE_FP8], g->mem_gb,
            g->mem_bw_gbps, g->l2_mb, g->tensor_tflops[PERFMOD_DTYPE_FP16], g->fp4_tflops,
            g->fp32_matrix_tflops, g->tdp_w, clk, net);
    for (char **a = e->aliases; a && *a; a++)
      printf ("%s%s", a == e->aliases ? "" : ", ", *a);
    putchar ('\n');
  }
  gpu_db_free (&db);
  return 0;
}

static int
cmd_strategies (void)
{
  struct preset_db db;
  char *dir = xasprintf ("%s/strategies.d", pm_datadir ());
  int rc = preset_db_load (&db, dir);
  free (dir);
  if (rc < 0)
    return EXIT_USAGE;
  printf ("%-20s %-40s %s\n", "preset", "spec", "file");
  for (size_t i = 0; i < db.n; i++)
    printf ("%-20s %-40s %s:%d\n", db.v[i].name, db.v[i].spec, db.v[i].file, db.v[i].line);
  preset_db_free (&db);
  return 0;
}

static int
cmd_models (void)
{
  char *dir = xasprintf ("%s/models", pm_datadir ());
  char **files = list_dir (dir, ".json");
  int rc = 0;
  if (files == NULL) {
    pm_error ("%s: no built-in models", dir);
    free (dir);
    return EXIT_RUNTIME;
  }
  printf ("%-14s %-20s %6s %6s %6s %6s %7s %7s %14s\n", "model", "model_type", "layers", "hidden",
          "heads", "kv", "ffn", "experts", "params");
  for (char **f = files; *f; f++) {
    struct model_cfg m;
    if (model_cfg_load (&m, *f) < 0)
      rc = EXIT_USAGE;
    else {
      printf ("%-14s %-20s %6lld %6lld %6lld %6lld %7lld %7lld %14.0f\n", m.name, m.arch,
              (long long) (m.layers + m.dec_layers), (long long) m.hidden, (long long) m.heads,
              (long long) m.kv_heads, (long long) m.ffn, (long long) m.experts,
              model_params (&m));
      model_cfg_free (&m);
    }
  }
  strv_free (files);
  free (dir);
  return rc;
}

/* ---- predict ---- */

static int
resolve_model (struct cli *c, struct model_cfg *m)
{
  const char *name = c->model;
  if (name == NULL) {
    name = DEFAULT_MODEL;
    assume (c, "--model " DEFAULT_MODEL);
  }
  if ((strchr (name, '/') || strstr (name, ".json") ? model_cfg_load (m, name)
                                                     : model_cfg_builtin (m, name)) < 0)
    return -1;
  /* --layers applies to a built model too (it counts an imported graph's
   * repeats otherwise); the encoder-decoder's two stacks are not one count */
  if (c->layers > 0 && c->opgraph == NULL) {
    if (m->family == FAM_SWITCH) {
      pm_error ("--layers: %s has an encoder and a decoder stack; give its config instead",
                m->name);
      model_cfg_free (m);
      return -1;
    }
    m->layers = c->layers;
  }
  /* learned position embeddings end at max_pos: a longer sequence has no
   * model to predict (rotary ones extrapolate and are let through) */
  if (c->seq > 0 && m->max_pos > 0 && c->seq > m->max_pos &&
      (m->family == FAM_GPT2 || m->family == FAM_OPT || m->family == FAM_BERT)) {
    pm_error ("--seq %lld: %s has %lld learned positions", (long long) c->seq, m->name,
              (long long) m->max_pos);
    model_cfg_free (m);
    return -1;
  }
  return 0;
}

/* What a run adds to each predictor's entry beyond the graph's times. */
struct extras {
  const struct memory_estimate *mem;
  double mfu;                    /* achieved / peak FLOP/s, 0 if unknown */
  double decode_ms;              /* one decode step (time per output token), 0 without --gen */
  int64_t batch, gen;
  bool fallback;                 /* kernels of a dtype outside the predictor's model */
};

static json_t *
json_memory (const struct memory_estimate *mem)
{
  return json_pack ("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:b}", "weights", mem->weights / 1e9,
                    "gradients", mem->gradients / 1e9, "optimizer", mem->optimizer / 1e9,
                    "activations", mem->activations / 1e9, "kv_cache", mem->kv_cache / 1e9,
                    "reserve", mem->reserve / 1e9, "total", mem->total / 1e9,
                    "capacity", mem->capacity / 1e9, "oom", mem->oom);
}

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
  json_t *o = json_pack ("{s:s, s:f, s:f, s:f, s:f, s:f, s:I, s:I}", "predictor", p->predictor,
                         "e2e_ms", p->e2e_ms, "fw_ms", p->fw_ms, "bw_ms", p->bw_ms + p->acc_ms,
                         "acc_ms", p->acc_ms, "spread_ms", p->spread_ms,
                         "kernels", (json_int_t) p->kernels,
                         "unique_kernels", (json_int_t) p->unique_kernels);
  json_object_set_new (o, "mfu", json_real (x->mfu));
  json_object_set_new (o, "dtype_fallback", json_boolean (x->fallback));
  if (x->gen > 0) {
    json_object_set_new (o, "ttft_ms", json_real (p->e2e_ms));
    json_object_set_new (o, "tpot_ms", json_real (x->decode_ms));
    json_object_set_new (o, "tokens_per_s", json_real (tokens_per_s (p, x)));
  }
  json_object_set_new (o, "memory", x->mem ? json_memory (x->mem) : json_null ());
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

/* --strategy SPEC or PRESET, fitted to --nodes x --gpus-per-node and the batch. */
static int
strategy_load (const struct cli *c, struct strategy *s, int gpn, int64_t batch)
{
  strategy_init (s);
  if (c->strategy && strchr (c->strategy, '=') == NULL) {
    struct preset_db pdb;
    const struct preset *p;
    char *dir = xasprintf ("%s/strategies.d", pm_datadir ()), *where;
    int rc = preset_db_load (&pdb, dir);
    free (dir);
    if (rc < 0)
      return -1;
    p = preset_db_find (&pdb, c->strategy);
    if (p == NULL) {
      pm_error ("--strategy '%s': no such preset (see perfmod strategies) and not KEY=VALUE",
                c->strategy);
      preset_db_free (&pdb);
      return -1;
    }
    where = xasprintf ("%s:%d", p->file, p->line);
    rc = strategy_parse (s, p->spec, where);
    free (where);
    preset_db_free (&pdb);
    if (rc < 0)
      return -1;
  }
  else if (c->strategy && strategy_parse (s, c->strategy, "--strategy") < 0)
    return -1;
  int64_t nodes = c->nodes ? c->nodes : 1, gpus;
  if (!ck_mul64 (nodes, gpn, &gpus) || gpus > PM_MAX_GPUS) {
    pm_error ("--nodes %lld x --gpus-per-node %d: more than %d GPUs", (long long) nodes, gpn,
              PM_MAX_GPUS);
    return -1;
  }
  return strategy_resolve (s, c->nodes, gpn, batch ? batch : 1);
}

/* What predict and graph work on: the GPU, the model and the per-device graph. */
struct workload {
  struct gpu_db gpus;
  const struct gpu_entry *ge;
  struct model_cfg m;
  struct graph g;
  const struct precision *prec;  /* the run's dtypes and bytes */
  int64_t batch, seq;            /* the run's: given, or the imported graph's */
  bool train, have_model, have_graph;
  bool flash;                    /* fused attention kernels */
  enum pm_kernels kernels;       /* whose layer a built graph runs (a strategy may say) */
};

static void
workload_free (struct workload *w)
{
  if (w->have_graph)
    graph_free (&w->g);
  model_cfg_free (&w->m);
  gpu_db_free (&w->gpus);
}

/* The run's precision: --precision (training), --dtype (inference, or the
 * training precision of that name), else what users run on the GPU;
 * fp32 for an imported trace, as NeuSight traced fp32 runs.  A given one
 * the GPU has no units for is refused. */
static int
precision_resolve (struct cli *c, struct workload *w, int dtype)
{
  const char *opt = c->precision ? "--precision" : "--dtype";
  const char *val = c->precision ? c->precision : c->dtype;
  char *what = NULL;
  if (c->precision)
    w->prec = precision_train (c->precision);
  else if (c->dtype) {
    w->prec = precision_of_dtype (dtype, w->train);
    if (strcmp (w->prec->name, c->dtype) != 0)
      what = xasprintf ("--precision %s (--dtype %s in training)", w->prec->name, c->dtype);
  }
  else if (c->opgraph) {
    w->prec = precision_of_dtype (PERFMOD_DTYPE_FP32, w->train);
    what = xasprintf ("%s fp32 (NeuSight's traces are of fp32 runs)",
                      w->train ? "--precision" : "--dtype");
  }
  else {
    w->prec = precision_of_dtype (default_dtype (&w->ge->gpu), w->train);
    what = xasprintf ("%s %s (default for %s)", w->train ? "--precision" : "--dtype",
                      w->prec->name, c->gpu);
  }
  if (what) {
    assume (c, what);
    free (what);
  }
  for (int i = 0; i < 2 && val; i++) {
    int d = i ? w->prec->other : w->prec->gemm;
    if (d != PERFMOD_DTYPE_FP32 && w->ge->gpu.tensor_tflops[d] <= 0) {
      pm_error ("%s %s: %s has no %s matrix units in gpus.d", opt, val, w->ge->name,
                dtype_name (d));
      return -1;
    }
  }
  return 0;
}

/* The attention kernel and whose layer a built graph runs.  Fused
 * attention (FlashAttention, cuDNN's, PyTorch's SDPA) needs 16-bit
 * attention on a GPU of the Ampere generation or later, which gpus.d
 * tells by its bf16 matrix units; it is the default there.  A mixed-
 * precision training step of GPT, Llama or Mixtral is the one
 * Megatron-Core runs with Transformer Engine; the rest run the eager
 * PyTorch modules (Hugging Face's, as NeuSight traced them). */
static int
kernels_resolve (struct cli *c, struct workload *w)
{
  int fam = w->m.family;
  bool can = dtype_mixed (w->prec->other) && default_dtype (&w->ge->gpu) == PERFMOD_DTYPE_BF16;
  if (c->attention && strcmp (c->attention, "flash") != 0 && strcmp (c->attention, "unfused") != 0) {
    pm_error ("--attention '%s': expected flash or unfused", c->attention);
    return -1;
  }
  if (c->attention && strcmp (c->attention, "flash") == 0 && !can) {
    pm_error ("--attention flash: fused attention runs in bf16 or fp16 on GPUs with bf16 matrix "
              "units; this run's attention is %s on %s", dtype_name (w->prec->other), w->ge->name);
    return -1;
  }
  w->flash = c->attention ? strcmp (c->attention, "flash") == 0 : can;
  w->kernels = w->train && dtype_mixed (w->prec->gemm) &&
               (fam == FAM_GPT2 || fam == FAM_LLAMA || fam == FAM_MIXTRAL) ? KERNELS_TE
                                                                           : KERNELS_EAGER;
  if (c->opgraph)
    return 0;                    /* an imported graph runs the kernels it traced */
  if (c->attention == NULL)
    assume (c, w->flash ? "--attention flash" : can ? "--attention unfused"
                        : "--attention unfused (fused attention needs bf16/fp16 on a GPU with "
                          "bf16 matrix units)");
  if (w->train)
    assume (c, w->kernels == KERNELS_TE ? "kernels te (Megatron-Core with Transformer Engine)"
                                        : "kernels eager (PyTorch modules)");
  return 0;
}

/* Resolve the options into a workload; an exit status on failure (the
 * workload is then freed). */
static int
workload_load (struct cli *c, struct workload *w)
{
  int dtype = PERFMOD_DTYPE_FP32;
  memset (w, 0, sizeof *w);
  if (c->mode == NULL) {
    c->mode = "inf";
    assume (c, "--mode inf");
  }
  if (strcmp (c->mode, "inf") != 0 && strcmp (c->mode, "train") != 0) {
    pm_error ("--mode '%s': expected inf or train", c->mode);
    return EXIT_USAGE;
  }
  w->train = strcmp (c->mode, "train") == 0;
  if (c->dtype && (dtype = dtype_parse (c->dtype)) < 0) {
    pm_error ("--dtype '%s': expected fp32, tf32, fp16, bf16 or fp8", c->dtype);
    return EXIT_USAGE;
  }
  if (c->precision && precision_train (c->precision) == NULL) {
    pm_error ("--precision '%s': expected fp32, amp-fp16, bf16 or fp8 (or tf32: fp32 with TF32 "
              "GEMMs)", c->precision);
    return EXIT_USAGE;
  }
  if (c->precision && !w->train) {
    pm_error ("--precision %s: a training precision (--mode train); inference takes --dtype",
              c->precision);
    return EXIT_USAGE;
  }
  if (c->precision && c->dtype &&
      precision_of_dtype (dtype, true) != precision_train (c->precision)) {
    pm_error ("--dtype %s and --precision %s disagree: give training its --precision alone",
              c->dtype, c->precision);
    return EXIT_USAGE;
  }
  if (strcmp (c->format, "table") && strcmp (c->format, "csv") && strcmp (c->format, "json")) {
    pm_error ("--format '%s': expected table, csv or json", c->format);
    return EXIT_USAGE;
  }
  if (gpu_db_load_data (&w->gpus) < 0)
    return EXIT_USAGE;
  bool gpu_default = c->gpu == NULL;
  if (gpu_default)
    c->gpu = DEFAULT_GPU;
  w->ge = gpu_db_find (&w->gpus, c->gpu);
  if (w->ge == NULL) {
    pm_error ("--gpu '%s': no such GPU (see perfmod gpus)", c->gpu);
    goto fail;
  }
  /* A default or an alias: say which gpus.d section it resolved to. */
  if (gpu_default || !name_eq (c->gpu, w->ge->name)) {
    char *s = name_eq (c->gpu, w->ge->name) ? xasprintf ("--gpu %s", c->gpu)
                                            : xasprintf ("--gpu %s = %s", c->gpu, w->ge->name);
    assume (c, s);
    free (s);
  }
  if (precision_resolve (c, w, dtype) < 0)
    goto fail;
  if (c->opgraph == NULL || c->model != NULL || c->explain) {
    if (resolve_model (c, &w->m) < 0)
      goto fail;
    w->have_model = true;
  }
  if (kernels_resolve (c, w) < 0)
    goto fail;
  if (c->opgraph) {
    int64_t layers = c->layers ? c->layers : w->have_model ? w->m.layers : 1;
    if (opgraph_import (&w->g, c->opgraph, layers) < 0)
      goto fail;
    if (!w->have_model && c->layers == 0 && w->g.repeat == 1 && w->g.layer_end == 0)
      pm_debug ("%s: no --model or --layers: the graph is taken as complete", c->opgraph);
  }
  else {
    if (c->batch == 0) {
      c->batch = DEFAULT_BATCH;
      assume (c, "--batch 4");
    }
    if (c->seq == 0) {
      c->seq = DEFAULT_SEQ;
      assume (c, "--seq 1024");
    }
    struct build_options bo = { .batch = c->batch, .seq = c->seq, .train = w->train,
                                .fusion = c->fusion, .flash = w->flash,
                                .te = w->kernels == KERNELS_TE };
    if (graph_build (&w->g, &w->m, &bo) < 0)
      goto fail;
  }
  w->have_graph = true;
  w->batch = c->batch ? c->batch : w->g.batch;
  w->seq = c->seq ? c->seq : w->g.seq;
  return 0;
fail:
  workload_free (w);
  return EXIT_USAGE;
}

/* --explain's text: after the table, or on stderr so that CSV and JSON
 * on stdout stay machine-readable. */
static FILE *
explain_stream (const struct cli *c)
{
  return strcmp (c->format, "table") == 0 ? stdout : stderr;
}

/* The run's options for a prediction under strategy s. */
static void
dist_options_init (struct dist_options *o, const struct cli *c, const struct workload *w,
                   const struct strategy *s, int gpn)
{
  memset (o, 0, sizeof *o);
  o->s = s;
  o->prec = w->prec;
  o->train = w->train;
  o->fusion = c->fusion;
  o->flash = w->flash;
  o->batch = w->batch;
  o->seq = w->seq;
  o->gpus_per_node = gpn;
}

static int
cmd_graph (struct cli *c, struct plugin_set *set)
{
  struct workload w;
  int rc = workload_load (c, &w);
  if (rc)
    return rc;
  if (strcmp (c->format, "json") == 0) {
    pm_error ("--format json: graph prints table or csv");
    rc = EXIT_USAGE;
  }
  else if (c->strategy && (c->opgraph || !w.have_model)) {
    pm_error ("--strategy: graph shards built graphs (--model), not imported ones");
    rc = EXIT_USAGE;
  }
  else {
    if (c->strategy) {
      /* rank 0's share: its first pipeline chunk, one micro-batch */
      struct strategy s;
      struct dist_options o;
      int gpn = c->gpus_per_node ? (int) c->gpus_per_node : w.ge->gpu.gpus_per_node;
      if (strategy_load (c, &s, gpn, w.batch) < 0) {
        workload_free (&w);
        return EXIT_USAGE;
      }
      if (!s.kernels_set)
        s.kernels = w.kernels;
      dist_options_init (&o, c, &w, &s, gpn);
      graph_free (&w.g);
      w.have_graph = false;
      if (dist_graph (set, &w.m, &w.ge->gpu, &o, &w.g) < 0) {
        workload_free (&w);
        return EXIT_USAGE;
      }
      w.have_graph = true;
      w.batch = s.mbs;
    }
    if (strcmp (c->format, "table") == 0)
      printf ("%s: %s, batch %lld x seq %lld, %s, %s graph, %lld layers\n",
              w.have_model ? w.m.name : c->opgraph, w.train ? "training step" : "inference",
              (long long) w.batch, (long long) w.seq, w.prec->name,
              c->opgraph ? "imported" : "built", (long long) w.g.repeat);
    graph_report (&w.g, &w.ge->gpu, w.prec, w.train, strcmp (c->format, "csv") == 0, stdout);
  }
  workload_free (&w);
  return rc;
}

/* The JSON answer's description of the run. */
static json_t *
json_run (const struct cli *c, const struct precision *prec, const char *model, const char *graph,
          const char *gpu, int64_t batch, int64_t seq, int64_t layers)
{
  json_t *root = json_object ();
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
  "kernel dtypes and predicted them with the one it has; see the note on stderr)"

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
  fprintf (out, "\nper pipeline stage, one micro-batch (ms; recompute=%s runs %s again in the "
           "backward):\n%-10s %-6s %12s %12s %12s\n", recompute_name (s->recompute),
           s->recompute == RECOMPUTE_FULL ? "each layer's forward"
           : s->recompute == RECOMPUTE_SELECTIVE ? "the attention core" : "nothing",
           "predictor", "stage", "forward", "backward", "recompute");
  for (size_t p = 0; p < npred; p++)
    for (int k = 0; k < s->pp; k++)
      fprintf (out, "%-10s %-6d %12.3f %12.3f %12.3f\n", names[p], k, r[p].stage_fw_ms[k],
               r[p].stage_bw_ms[k], r[p].stage_recompute_ms[k]);
  fprintf (out, "(backward includes recompute; recompute per step on rank 0: %.3f ms with %s)\n",
           r[0].recompute_ms, names[0]);
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
  int gpus = s->tp * s->pp * s->dp, nodes = (gpus + gpn - 1) / gpn;
  double peak = perfmod_gpu_peak_flops (&w->ge->gpu, w->prec->gemm);
  struct plugin **pls = xcalloc (npred, sizeof *pls);
  bool marked = false;
  int rc = EXIT_RUNTIME;

  dist_options_init (&o, c, w, s, gpn);
  if (dist_check (&w->m, &o) < 0) {
    rc = EXIT_USAGE;
    goto out;
  }
  clock_gettime (CLOCK_MONOTONIC, &t0);
  for (size_t p = 0; p < npred; p++) {
    struct plugin *pl = pls[p] = predictor_find (set, names[p]);
    if (pl == NULL) {
      rc = EXIT_USAGE;
      goto out;
    }
    if (dist_predict (set, pl, &w->m, &w->ge->gpu, &o, &r[p]) < 0) {
      rc = EXIT_RUNTIME;
      goto out;
    }
    marked |= plugin_fell_back (pl);
  }
  clock_gettime (CLOCK_MONOTONIC, &t1);

  if (strcmp (c->format, "json") == 0) {
    json_t *root = json_run (c, w->prec, w->m.name, "builder", w->ge->name, w->batch, w->seq,
                             w->m.layers);
    json_t *arr = json_array ();
    json_object_set_new (root, "strategy",
                         json_pack ("{s:i, s:i, s:i, s:i, s:i, s:i, s:s, s:i, s:s, s:b, s:i, s:i, s:i}",
                                    "tp", s->tp, "pp", s->pp, "dp", s->dp, "ep", s->ep, "mbs",
                                    s->mbs, "vp", s->vp, "schedule", schedule_name (s->schedule),
                                    "zero", s->zero, "recompute", recompute_name (s->recompute),
                                    "sp", s->sp, "gpus", gpus, "nodes", nodes, "microbatches",
                                    r[0].microbatches));
    for (size_t p = 0; p < npred; p++) {
      json_t *comm = json_object (), *hidden = json_object ();
      for (int d = DIM_TP; d < NDIMS; d++) {
        json_object_set_new (comm, dim_name (d), json_real (r[p].comm_ms[d]));
        json_object_set_new (hidden, dim_name (d), json_real (r[p].hidden_ms[d]));
      }
      json_t *e = json_pack ("{s:s, s:f, s:f, s:f, s:f, s:f, s:f, s:o, s:o, s:f, s:I, s:I}",
                             "predictor", names[p], "e2e_ms", r[p].step_ms, "pipeline_ms",
                             r[p].pipeline_ms, "bubble", r[p].bubble, "bubble_ms", r[p].bubble_ms,
                             "grads_ms", r[p].grads_ms, "optimizer_ms", r[p].optimizer_ms,
                             "comm_ms", comm, "overlapped_ms", hidden, "mfu",
                             r[p].step_ms > 0 ? r[p].flops / (r[p].step_ms / 1e3) / peak : 0,
                             "kernels", (json_int_t) r[p].kernels, "unique_kernels",
                             (json_int_t) r[p].unique_kernels);
      json_object_set_new (e, "memory", json_memory (&r[p].mem));
      json_object_set_new (e, "dtype_fallback", json_boolean (plugin_fell_back (pls[p])));
      /* recomputed forwards (inside pipeline_ms), and per stage one micro-batch */
      json_object_set_new (e, "recompute_ms", json_real (r[p].recompute_ms));
      json_t *stages = json_array ();
      for (int k = 0; k < s->pp; k++)
        json_array_append_new (stages, json_pack ("{s:f, s:f, s:f}", "fw_ms", r[p].stage_fw_ms[k],
                                                  "bw_ms", r[p].stage_bw_ms[k], "recompute_ms",
                                                  r[p].stage_recompute_ms[k]));
      json_object_set_new (e, "stages", stages);
      json_array_append_new (arr, e);
    }
    json_object_set_new (root, "predictions", arr);
    json_dumpf (root, stdout, JSON_INDENT (2) | JSON_REAL_PRECISION (10));
    putchar ('\n');
    json_decref (root);
  }
  else if (strcmp (c->format, "csv") == 0) {
    printf ("predictor,e2e_ms,pipeline_ms,bubble,grads_ms,optimizer_ms,tp_comm_ms,ep_comm_ms,"
            "pp_comm_ms,dp_comm_ms,dp_overlapped_ms,mfu,memory_gb,oom\n");
    for (size_t p = 0; p < npred; p++)
      printf ("%s,%.9g,%.9g,%.6f,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.6f,%.6g,%s\n", names[p],
              r[p].step_ms, r[p].pipeline_ms, r[p].bubble, r[p].grads_ms, r[p].optimizer_ms,
              r[p].comm_ms[DIM_TP], r[p].comm_ms[DIM_EP], r[p].comm_ms[DIM_PP],
              r[p].comm_ms[DIM_DP], r[p].hidden_ms[DIM_DP],
              r[p].step_ms > 0 ? r[p].flops / (r[p].step_ms / 1e3) / peak : 0,
              r[p].mem.total / 1e9, r[p].mem.oom ? "true" : "false");
    if (c->assumed)
      fprintf (stderr, "perfmod: assumed %s\n", c->assumed);
  }
  else {
    static const char *const rows[] = { "step_ms", "pipeline_ms", "bubble_ms", "bubble_%",
                                        "grads_ms", "optim_ms", "tp_comm_ms", "ep_comm_ms",
                                        "pp_comm_ms", "dp_comm_ms", "dp_hidden_ms", "mfu_%" };
    printf ("perfmod %s: %s, %s, global batch %lld x seq %lld, %s, on %s (built graph, %lld "
            "layers)\n", PACKAGE_VERSION, w->m.name, w->train ? "training step" : "inference",
            (long long) w->batch, (long long) w->seq, w->prec->name, w->ge->name,
            (long long) w->m.layers);
    if (c->assumed)
      printf ("assumed: %s\n", c->assumed);
    printf ("strategy: tp=%d pp=%d dp=%d ep=%d mbs=%d vp=%d schedule=%s zero=%d recompute=%s "
            "sp=%d kernels=%s", s->tp, s->pp, s->dp, s->ep, s->mbs, s->vp,
            schedule_name (s->schedule), s->zero, recompute_name (s->recompute), s->sp,
            kernels_name (s->kernels));
    for (int i = 0; i < s->nsplit; i++)
      printf ("%s%d", i ? ":" : " split=", s->split[i]);
    printf (": %d GPUs on %d node%s of %d, %d micro-batch%s per replica\n", gpus, nodes,
            nodes == 1 ? "" : "s", gpn, r[0].microbatches, r[0].microbatches == 1 ? "" : "es");
    printf ("\n%-12s", "");
    for (size_t p = 0; p < npred; p++)
      print_column_head (pls[p]);
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
      printf ("\n%-12s", rows[i]);
      for (size_t p = 0; p < npred; p++) {
        const struct dist_result *x = &r[p];
        double v[] = { x->step_ms, x->pipeline_ms, x->bubble_ms, 100 * x->bubble, x->grads_ms,
                       x->optimizer_ms, x->comm_ms[DIM_TP], x->comm_ms[DIM_EP],
                       x->comm_ms[DIM_PP], x->comm_ms[DIM_DP], x->hidden_ms[DIM_DP],
                       x->step_ms > 0 ? 100 * x->flops / (x->step_ms / 1e3) / peak : 0 };
        printf (" %14.3f", v[i]);
      }
    }
    const struct memory_estimate *mem = &r[0].mem;
    printf ("\n\nmemory per device (GB, pipeline rank %d, the fullest): weights %.2f, gradients "
            "%.2f, optimizer %.2f, activations %.2f, kv_cache %.2f, reserve %.2f; total %.2f of "
            "%.2f%s", r[0].mem_rank, mem->weights / 1e9, mem->gradients / 1e9,
            mem->optimizer / 1e9, mem->activations / 1e9, mem->kv_cache / 1e9,
            mem->reserve / 1e9, mem->total / 1e9, mem->capacity / 1e9,
            mem->oom ? "  OOM: does not fit" : "");
    printf ("\n\n(step = pipeline + grads + optim; *_comm_ms: rank 0's collectives per step, "
            "tp/ep/pp ones inside pipeline_ms; grads_ms: the exposed part of dp's; predicted in "
            "%.2f ms)\n",
            ((double) (t1.tv_sec - t0.tv_sec) * 1e3 + (double) (t1.tv_nsec - t0.tv_nsec) / 1e6));
    if (marked)
      puts (FALLBACK_FOOTNOTE);
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
  return rc;
}

static int
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

  if (c->strategy && w.have_model && c->opgraph == NULL) {
    if (c->gen > 0 || c->per_op || c->plot) {
      pm_error ("--strategy: %s is not modelled with a strategy yet",
                c->gen > 0 ? "--gen" : c->per_op ? "--per-op" : "--plot");
      goto out;
    }
    names = strv_split (c->predictors ? c->predictors : "roofline", ',');
    if (c->predictors == NULL)
      assume (c, "--predictor roofline");
    rc = predict_distributed (c, set, &w, &s, gpn, names, strv_len (names));
    goto out;
  }
  if (c->gen > 0) {
    /* The mean decode step: attention grows linearly with the cache, so
     * the step at the middle of the generation is the average one. */
    struct build_options bo = { .batch = batch, .seq = seq, .fusion = c->fusion,
                                .kv_len = seq + c->gen / 2, .flash = w.flash };
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
                                 w.flash };
    memory_estimate (&w.m, &mo, &ge->gpu, &mem);
  }
  flops = graph_flops (gp, w.prec, train);

  names = strv_split (c->predictors ? c->predictors : "roofline", ',');
  if (c->predictors == NULL)
    assume (c, "--predictor roofline");
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
    json_dumpf (root, stdout, JSON_INDENT (2) | JSON_REAL_PRECISION (10));
    putchar ('\n');
    json_decref (root);
  }
  else if (strcmp (c->format, "csv") == 0) {
    if (c->per_op)
      print_per_op (c, gp, pr, npred);
    else {
      printf ("predictor,e2e_ms,fw_ms,bw_ms,acc_ms,spread_ms%s,memory_gb,oom\n",
              c->gen > 0 ? ",ttft_ms,tpot_ms,tokens_per_s" : "");
      for (size_t p = 0; p < npred; p++) {
        printf ("%s,%.9g,%.9g,%.9g,%.9g,%.9g", pr[p].predictor, pr[p].e2e_ms, pr[p].fw_ms,
                pr[p].bw_ms + pr[p].acc_ms, pr[p].acc_ms, pr[p].spread_ms);
        if (c->gen > 0)
          printf (",%.9g,%.9g,%.9g", pr[p].e2e_ms, x[p].decode_ms, tokens_per_s (&pr[p], &x[p]));
        /* no memory without a model (an imported graph alone): empty */
        if (w.have_model)
          printf (",%.6g,%s\n", mem.total / 1e9, mem.oom ? "true" : "false");
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
      printf ("\n\nmemory per device (GB): weights %.2f, gradients %.2f, optimizer %.2f, "
              "activations %.2f, kv_cache %.2f, reserve %.2f; total %.2f of %.2f%s",
              mem.weights / 1e9, mem.gradients / 1e9, mem.optimizer / 1e9, mem.activations / 1e9,
              mem.kv_cache / 1e9, mem.reserve / 1e9, mem.total / 1e9, mem.capacity / 1e9,
              mem.oom ? "  OOM: does not fit" : "");
    printf ("\n\n(bw_ms includes acc_ms, the gradient accumulation; spread_ms: the sum of the "
            "kernels' ensemble spreads, at least the spread of e2e_ms; predicted in %.2f ms)\n",
            ((double) (t1.tv_sec - t0.tv_sec) * 1e3 + (double) (t1.tv_nsec - t0.tv_nsec) / 1e6));
    if (marked)
      puts (FALLBACK_FOOTNOTE);
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

static void
cli_free (struct cli *c)
{
  free (c->plugin_paths);
  free (c->plugin_opts);
  free (c->command);
  free (c->assumed);
}

/* ---- train and eval ---- */

static int
load_tiles (struct tile_rules *t)
{
  char *dir = xasprintf ("%s/tiles.d", pm_datadir ());
  int rc = tile_rules_load (t, dir);
  free (dir);
  return rc;
}

static char *
command_line (int argc, char **argv)
{
  char *s = xstrdup ("perfmod");
  for (int i = 1; i < argc; i++) {
    char *t = xasprintf ("%s %s", s, argv[i]);
    free (s);
    s = t;
  }
  return s;
}

/* --dtype, --gpu LIST, --split and --table of eval and train: which rows of
 * the modern tables (mdata.c) are read and kept.  *gpus and *tables are
 * allocated (free both). */
static int
eval_filters (const struct cli *c, const struct gpu_db *gpus, int *dtype,
              const struct gpu_entry ***gpu, int *split, char ***tables)
{
  *dtype = -1;
  *gpu = NULL;
  *split = SPLIT_ALL;
  *tables = NULL;
  if (c->dtype && (*dtype = dtype_parse (c->dtype)) < 0) {
    pm_error ("--dtype '%s': expected fp32, tf32, fp16, bf16 or fp8", c->dtype);
    return -1;
  }
  if (c->gpu) {
    char **names = strv_split (c->gpu, ',');
    size_t n = strv_len (names);
    *gpu = xcalloc (n + 1, sizeof **gpu);
    for (size_t i = 0; i < n; i++)
      if (((*gpu)[i] = gpu_db_find (gpus, names[i])) == NULL) {
        pm_error ("--gpu '%s': no such GPU (see perfmod gpus)", names[i]);
        strv_free (names);
        return -1;
      }
    strv_free (names);
  }
  if (c->split) {
    if (strcmp (c->split, "all") == 0)
      *split = SPLIT_ALL;
    else if (strcmp (c->split, "holdout") == 0)
      *split = SPLIT_HOLDOUT;
    else if (strcmp (c->split, "train") == 0)
      *split = SPLIT_TRAIN;
    else {
      pm_error ("--split '%s': expected all, holdout or train", c->split);
      return -1;
    }
  }
  if (c->table) {
    *tables = strv_split (c->table, ',');
    for (char **t = *tables; *t; t++) {
      size_t i;
      for (i = 0; mdata_tables[i] && strcmp (mdata_tables[i], *t); i++)
        ;
      if (mdata_tables[i] == NULL) {
        pm_error ("--table '%s': expected a comma list of gemm, context_attention, "
                  "generation_attention, nccl, vidur_comm, vidur_layer, aiter_gemm, "
                  "llmcompass_gemm", *t);
        return -1;
      }
    }
  }
  return 0;
}

static int
cmd_train (struct cli *c)
{
  struct train_options o;
  struct gpu_db gpus;
  struct tile_rules tiles;
  int rc;

  if (c->predictors == NULL || strchr (c->predictors, ',') || c->data == NULL || c->out == NULL) {
    pm_error ("train needs --predictor NAME (one), --data DIR and --out FILE");
    return EXIT_USAGE;
  }
  if (gpu_db_load_data (&gpus) < 0)
    return EXIT_USAGE;
  if (load_tiles (&tiles) < 0) {
    gpu_db_free (&gpus);
    return EXIT_USAGE;
  }
  memset (&o, 0, sizeof o);
  o.predictor = c->predictors;
  o.data = c->data;
  o.out = c->out;
  o.reference = c->reference;
  o.seed = c->seed_given ? (uint64_t) c->seed : 1;
  o.epochs = (int) c->epochs;
  o.members = (int) c->members;
  o.keep_throttled = c->keep_throttled;
  o.keep_floor = c->keep_floor;
  o.features = c->features;
  o.in_dist = strv_split (c->in_dist ? c->in_dist : DEFAULT_IN_DIST, ',');
  o.in_dist_given = c->in_dist != NULL;
  o.command = c->command;
  {
    const struct gpu_entry **unused = NULL;
    if (eval_filters (c, &gpus, &o.dtype, &unused, &o.split, &o.tables) < 0 || unused) {
      if (unused)
        pm_error ("--gpu: train names its GPUs with --in-dist");
      free (unused);
      strv_free (o.tables);
      strv_free (o.in_dist);
      tile_rules_free (&tiles);
      gpu_db_free (&gpus);
      return EXIT_USAGE;
    }
  }
  rc = train_run (&gpus, &tiles, &o);
  strv_free (o.tables);
  strv_free (o.in_dist);
  tile_rules_free (&tiles);
  gpu_db_free (&gpus);
  return rc;
}

static int
cmd_eval (struct cli *c, struct plugin_set *set)
{
  struct eval_options o;
  struct gpu_db gpus;
  struct tile_rules tiles;
  const char *env = getenv ("PERFMOD_NEUSIGHT");
  char **asked;
  int rc;

  memset (&o, 0, sizeof o);
  if (c->data == NULL) {
    pm_error ("eval needs --data DIR: measured test kernels (NeuSight's dataset/test)");
    return EXIT_USAGE;
  }
  if (strcmp (c->format, "table") && strcmp (c->format, "csv")) {
    pm_error ("--format '%s': eval prints table or csv", c->format);
    return EXIT_USAGE;
  }
  if (gpu_db_load_data (&gpus) < 0)
    return EXIT_USAGE;
  if (load_tiles (&tiles) < 0) {
    gpu_db_free (&gpus);
    return EXIT_USAGE;
  }
  /* Roofline, the reference every learned predictor must beat, comes first. */
  asked = strv_split (c->predictors ? c->predictors : "roofline,linreg,habitat", ',');
  o.predictors = xcalloc (strv_len (asked) + 2, sizeof *o.predictors);
  o.predictors[0] = xstrdup ("roofline");
  for (size_t i = 0, n = 1; asked[i]; i++)
    if (strcmp (asked[i], "roofline") != 0)
      o.predictors[n++] = xstrdup (asked[i]);
  strv_free (asked);
  o.data = c->data;
  o.format = c->format;
  o.neusight = c->neusight ? c->neusight : env && *env ? env : NULL;
  o.in_dist_text = c->in_dist ? c->in_dist : DEFAULT_IN_DIST;
  o.in_dist = strv_split (o.in_dist_text, ',');
  o.per_kernel = c->per_op;
  o.default_predictors = c->predictors == NULL;
  o.seed = SPLIT_SEED;
  if (eval_filters (c, &gpus, &o.dtype, &o.gpus, &o.split, &o.tables) < 0) {
    rc = EXIT_USAGE;
    goto done;
  }
  rc = eval_kernels (set, &gpus, &tiles, &o);
done:
  free (o.gpus);
  strv_free (o.tables);
  strv_free (o.in_dist);
  strv_free (o.predictors);
  tile_rules_free (&tiles);
  gpu_db_free (&gpus);
  return rc;
}

static int
perfmod_main (int argc, char **argv)
{
  enum { O_MODEL = 256, O_OPGRAPH, O_GPU, O_BATCH, O_SEQ, O_MODE, O_DTYPE, O_PRECISION, O_PRED,
         O_STRAT,
         O_NODES, O_GPN, O_PEROP, O_FORMAT, O_PPATH, O_EXPLAIN, O_NEUSIGHT, O_TABLE, O_LAYERS,
         O_DATA, O_OUT, O_SEED, O_EPOCHS, O_MEMBERS, O_REFERENCE, O_INDIST, O_POPT, O_FUSION, O_ATTENTION, O_PUBLISHED, O_GEN, O_GRAPH,
         O_PLOT, O_KEEPTHR, O_KEEPFLOOR, O_FEATURES, O_SPLIT };
  static const struct option opts[] = {
    { "model", required_argument, NULL, O_MODEL },
    { "opgraph", required_argument, NULL, O_OPGRAPH },
    { "gpu", required_argument, NULL, O_GPU },
    { "batch", required_argument, NULL, O_BATCH },
    { "seq", required_argument, NULL, O_SEQ },
    { "mode", required_argument, NULL, O_MODE },
    { "dtype", required_argument, NULL, O_DTYPE },
    { "precision", required_argument, NULL, O_PRECISION },
    { "predictor", required_argument, NULL, O_PRED },
    { "strategy", required_argument, NULL, O_STRAT },
    { "nodes", required_argument, NULL, O_NODES },
    { "gpus-per-node", required_argument, NULL, O_GPN },
    { "per-op", no_argument, NULL, O_PEROP },
    { "format", required_argument, NULL, O_FORMAT },
    { "plugin-path", required_argument, NULL, O_PPATH },
    { "explain", no_argument, NULL, O_EXPLAIN },
    { "neusight", required_argument, NULL, O_NEUSIGHT },
    { "table", required_argument, NULL, O_TABLE },
    { "layers", required_argument, NULL, O_LAYERS },
    { "data", required_argument, NULL, O_DATA },
    { "out", required_argument, NULL, O_OUT },
    { "seed", required_argument, NULL, O_SEED },
    { "epochs", required_argument, NULL, O_EPOCHS },
    { "members", required_argument, NULL, O_MEMBERS },
    { "reference", required_argument, NULL, O_REFERENCE },
    { "in-dist", required_argument, NULL, O_INDIST },
    { "plugin-opt", required_argument, NULL, O_POPT },
    { "fusion", no_argument, NULL, O_FUSION },
    { "attention", required_argument, NULL, O_ATTENTION },
    { "published", required_argument, NULL, O_PUBLISHED },
    { "gen", required_argument, NULL, O_GEN },
    { "graph", required_argument, NULL, O_GRAPH },
    { "plot", required_argument, NULL, O_PLOT },
    { "keep-throttled", no_argument, NULL, O_KEEPTHR },
    { "keep-floor", no_argument, NULL, O_KEEPFLOOR },
    { "features", required_argument, NULL, O_FEATURES },
    { "split", required_argument, NULL, O_SPLIT },
    { "verbose", no_argument, NULL, 'v' },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 }
  };
  struct cli c;
  struct plugin_set set = { NULL, 0 };
  const char *cmd = "predict";
  int opt, rc;

  /* perfmod kernel has options of its own (kernel.c). */
  if (argc > 1 && strcmp (argv[1], "kernel") == 0)
    return kernel_main (argc - 1, argv + 1);
  if (argc > 1 && strcmp (argv[1], "search") == 0)
    return search_main (argc - 1, argv + 1);
  memset (&c, 0, sizeof c);
  c.format = "table";
  c.command = command_line (argc, argv);   /* before getopt permutes argv */
  opterr = 0;                    /* getopt_error says it in one line */
  while ((opt = getopt_long (argc, argv, ":hvV", opts, NULL)) != -1) {
    bool ok = true;
    switch (opt) {
    case O_MODEL: c.model = optarg; break;
    case O_OPGRAPH: c.opgraph = optarg; break;
    case O_GPU: c.gpu = optarg; break;
    /* every number within its documented range (perfmod(1), LIMITS) */
    case O_BATCH: ok = parse_int_range ("--batch", optarg, 1, PM_MAX_BATCH, &c.batch); break;
    case O_SEQ: ok = parse_int_range ("--seq", optarg, 1, PM_MAX_SEQ, &c.seq); break;
    case O_NODES: ok = parse_int_range ("--nodes", optarg, 1, PM_MAX_GPUS, &c.nodes); break;
    case O_GPN:
      ok = parse_int_range ("--gpus-per-node", optarg, 1, PM_MAX_GPUS, &c.gpus_per_node);
      break;
    case O_LAYERS: ok = parse_int_range ("--layers", optarg, 1, PM_MAX_COUNT, &c.layers); break;
    case O_GEN: ok = parse_int_range ("--gen", optarg, 1, PM_MAX_SEQ, &c.gen); break;
    case O_EPOCHS: ok = parse_int_range ("--epochs", optarg, 1, PM_MAX_EPOCHS, &c.epochs); break;
    case O_MEMBERS: ok = parse_int_range ("--members", optarg, 1, 16, &c.members); break;
    case O_SEED:
      ok = parse_int_range ("--seed", optarg, 0, INT64_MAX, &c.seed);
      c.seed_given = true;
      break;
    case O_DATA: c.data = optarg; break;
    case O_OUT: c.out = optarg; break;
    case O_REFERENCE: c.reference = optarg; break;
    case O_INDIST: c.in_dist = optarg; break;
    case O_POPT: ptrv_push (&c.plugin_opts, &c.nopts, optarg); break;
    case O_MODE: c.mode = optarg; break;
    case O_DTYPE: c.dtype = optarg; break;
    case O_PRECISION: c.precision = optarg; break;
    case O_PRED: c.predictors = optarg; break;
    case O_STRAT: c.strategy = optarg; break;
    case O_PEROP: c.per_op = true; break;
    case O_FUSION: c.fusion = true; break;
    case O_ATTENTION: c.attention = optarg; break;
    case O_PUBLISHED: c.published = optarg; break;
    case O_KEEPTHR: c.keep_throttled = true; break;
    case O_KEEPFLOOR: c.keep_floor = true; break;
    case O_FEATURES: c.features = optarg; break;
    case O_SPLIT: c.split = optarg; break;
    case O_GRAPH: c.graph = optarg; break;
    case O_PLOT: c.plot = optarg; break;
    case O_FORMAT: c.format = optarg; break;
    case O_EXPLAIN: c.explain = true; break;
    case O_NEUSIGHT: c.neusight = optarg; break;
    case O_TABLE: c.table = optarg; break;
    case O_PPATH: ptrv_push (&c.plugin_paths, &c.npaths, optarg); break;
    case 'v': pm_verbose = 1; break;
    case 'h': usage (stdout); cli_free (&c); return 0;
    case 'V':
      printf ("perfmod %s (plugin ABI %d)\nplugin directory: %s\ndata directory: %s\n",
              PACKAGE_VERSION, PERFMOD_ABI_VERSION, PLUGINDIR, PKGDATADIR);
      cli_free (&c);
      return 0;
    default:
      getopt_error (opt, argv, opts, "perfmod");
      ok = false;
      break;
    }
    if (!ok)
      goto usage;
  }
  /* The command is the first word that is not an option, wherever it is. */
  if (optind < argc)
    cmd = argv[optind++];
  if (strcmp (cmd, "predict") && strcmp (cmd, "plugins") && strcmp (cmd, "gpus") &&
      strcmp (cmd, "strategies") && strcmp (cmd, "reproduce") && strcmp (cmd, "train") &&
      strcmp (cmd, "eval") && strcmp (cmd, "graph") && strcmp (cmd, "models")) {
    pm_error ("unknown command '%s' (try perfmod --help)", cmd);
    cli_free (&c);
    return EXIT_USAGE;
  }
  if (optind < argc) {
    pm_error ("unexpected argument '%s'", argv[optind]);
    goto usage;
  }
  if (c.plot && strcmp (cmd, "predict") != 0) {
    pm_error ("--plot: a prediction draws the roofline chart, not perfmod %s", cmd);
    goto usage;
  }

  if ((strcmp (cmd, "gpus") == 0 || strcmp (cmd, "strategies") == 0 || strcmp (cmd, "models") == 0 ||
       strcmp (cmd, "plugins") == 0) && strcmp (c.format, "table") != 0) {
    pm_error ("--format %s: perfmod %s prints a table", c.format, cmd);
    goto usage;
  }
  if (strcmp (cmd, "gpus") == 0 || strcmp (cmd, "strategies") == 0 || strcmp (cmd, "models") == 0) {
    cli_free (&c);
    return strcmp (cmd, "gpus") == 0 ? cmd_gpus ()
         : strcmp (cmd, "models") == 0 ? cmd_models () : cmd_strategies ();
  }
  if (strcmp (cmd, "train") == 0) {
    rc = cmd_train (&c);
    cli_free (&c);
    return rc;
  }
  rc = plugins_open (&set, c.plugin_paths, c.npaths, c.plugin_opts, c.nopts) < 0 ? EXIT_USAGE : 0;
  if (rc)
    ;
  else if (strcmp (cmd, "plugins") == 0)
    rc = cmd_plugins (&set);
  else if (strcmp (cmd, "reproduce") == 0) {
    /* The tables are held (ro.out, and their CSV summary in ro.err)
     * until every row has succeeded: bad data leaves no half-written
     * table on stdout. */
    char *buf = NULL, *ebuf = NULL;
    size_t len = 0, elen = 0;
    struct reproduce_options ro;
    struct gpu_db gpus;
    const char *env = getenv ("PERFMOD_NEUSIGHT");
    char *published = NULL;
    ro.neusight = c.neusight ? c.neusight : env && *env ? env : NULL;
    ro.table = c.table ? c.table : "all";
    bool pub = strcmp (ro.table, "published") == 0;
    /* the installed runs, or the source tree's (./run) */
    if (pub && c.published == NULL) {
      published = xasprintf ("%s/published-runs.csv", pm_datadir ());
      if (access (published, R_OK) != 0) {
        free (published);
        published = xasprintf ("%s/tests/published-runs.csv", pm_datadir ());
      }
    }
    ro.published = c.published ? c.published : published;
    ro.format = c.format;
    ro.build = c.graph && strcmp (c.graph, "builder") == 0;
    if (c.graph && !ro.build && strcmp (c.graph, "opgraph") != 0) {
      pm_error ("--graph '%s': expected builder or opgraph", c.graph);
      rc = EXIT_USAGE;
    }
    else if (ro.build && (strcmp (ro.table, "perop") == 0 || strcmp (ro.table, "nodesum") == 0)) {
      pm_error ("--table %s needs NeuSight's traced graphs (--graph opgraph): its measured "
                "per-node latencies are joined by the traces' node names", ro.table);
      rc = EXIT_USAGE;
    }
    else if (c.published && !pub) {
      pm_error ("--published FILE goes with --table published");
      rc = EXIT_USAGE;
    }
    else if (pub && (c.graph || c.neusight)) {
      pm_error ("--table published predicts built graphs of its runs: no --graph or --neusight");
      rc = EXIT_USAGE;
    }
    else if (ro.neusight == NULL && !pub) {
      pm_error ("reproduce needs --neusight DIR (or PERFMOD_NEUSIGHT): the NeuSight artifact folder");
      rc = EXIT_USAGE;
    }
    else if (strcmp (ro.table, "inf") && strcmp (ro.table, "train") && strcmp (ro.table, "perop") &&
             strcmp (ro.table, "nodesum") && strcmp (ro.table, "distributed") &&
             strcmp (ro.table, "all") && !pub) {
      pm_error ("--table '%s': expected inf, train, perop, nodesum, distributed, all or "
                "published", ro.table);
      rc = EXIT_USAGE;
    }
    else if (strcmp (ro.format, "table") && strcmp (ro.format, "csv")) {
      pm_error ("--format '%s': reproduce prints table or csv", ro.format);
      rc = EXIT_USAGE;
    }
    else if (gpu_db_load_data (&gpus) < 0)
      rc = EXIT_USAGE;
    else if ((ro.out = open_memstream (&buf, &len)) == NULL ||
             (ro.err = open_memstream (&ebuf, &elen)) == NULL) {
      pm_error ("cannot hold the tables in memory: %s", strerror (errno));
      if (ro.out)
        fclose (ro.out);
      free (buf);
      gpu_db_free (&gpus);
      rc = EXIT_RUNTIME;
    }
    else {
      ro.predictors = strv_split (c.predictors ? c.predictors : pub ? "roofline,tile-mlp"
                                                                  : "roofline", ',');
      if (pub)
        rc = reproduce_published (&set, &gpus, &ro);   /* physical units */
      else {
        plugins_neusight_units (&set);   /* the paper's tables, unit for unit */
        if (strcmp (ro.table, "distributed") == 0)
          rc = reproduce_distributed (&set, &gpus, &ro);
        else {
          rc = reproduce (&set, &gpus, &ro);
          /* all: the distributed table too, in table form (its CSV has its own rows) */
          if (rc == 0 && strcmp (ro.table, "all") == 0 && strcmp (ro.format, "table") == 0) {
            fputc ('\n', ro.out);
            rc = reproduce_distributed (&set, &gpus, &ro);
          }
        }
      }
      fclose (ro.out);
      fclose (ro.err);
      if (rc == 0) {
        fwrite (buf, 1, len, stdout);
        fflush (stdout);
        fwrite (ebuf, 1, elen, stderr);
      }
      free (buf);
      free (ebuf);
      strv_free (ro.predictors);
      gpu_db_free (&gpus);
    }
    free (published);
  }
  else if (strcmp (cmd, "eval") == 0)
    rc = cmd_eval (&c, &set);
  else if (strcmp (cmd, "graph") == 0)
    rc = cmd_graph (&c, &set);
  else
    rc = cmd_predict (&c, &set);
  /* once per run, whichever command predicted the kernels */
  plugins_note_fallbacks (&set, stderr);
  plugins_unload (&set);
  cli_free (&c);
  return plugins_exit_status (rc);

usage:
  cli_free (&c);
  return EXIT_USAGE;
}

int
main (int argc, char **argv)
{
  return stdout_status (perfmod_main (argc, argv));
}
