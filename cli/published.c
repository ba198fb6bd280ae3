/* published.c: perfmod reproduce --table published: measured multi-GPU training runs from papers and vendors' pages, predicted step for step. */
#include <config.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* One run of the file (tests/published-runs.csv; its comment block cites
 * each source).  What the source published is converted to seconds per
 * step by the metric's rule (published_step). */
struct pub_run {
  char *id, *model, *gpu, *precision, *recompute, *metric, *flops, *source;
  char *keys;                 /* more strategy keys, as --strategy takes them, or NULL */
  int64_t gpus, tp, pp, dp, cp, ep, vp, mbs, batch, seq, sp;
  int zero;                   /* -1: Megatron's distributed optimizer where dp > 1 */
  bool unfused;               /* attention: the scores materialised */
  bool tpo;                   /* tp communication overlap (the source says it was on) */
  double value, memory_gib;   /* memory_gib: NAN when not published */
  long line;
};

static const char *const recompute_modes[] = { "none", "selective", "full" };
static const char *const metrics[] = { "step_s", "tokens_per_s_per_gpu", "tokens_per_s",
                                       "tflops_per_gpu", "mfu" };
/* FLOPs per step the source counted, for tflops_per_gpu and mfu rows:
 * Narayanan et al. 2021's (eq. 3: 96 B s l h^2 (1 + s/6h + V/16lh), with
 * full recomputation's extra forward), the same without recomputation
 * (72 ... V/12lh), 6 N per token, 6 N + 12 l h s per token (PaLM's, with
 * attention), 6 N with N the parameters a token touches (MoE: top-k of the
 * experts), and Megatron-Core's num_floating_point_operations (v0.9:
 * grouped-query attention over the whole s x s square, top-k experts,
 * SwiGLU's 3/2). */
static const char *const flops_rules[] = { "megatron-recompute", "megatron", "6n", "6n-attn",
                                           "6n-active", "megatron-core" };
#define N_FLOPS_RULES (sizeof flops_rules / sizeof *flops_rules)

static void
run_free (struct pub_run *r)
{
  free (r->id);
  free (r->model);
  free (r->gpu);
  free (r->precision);
  free (r->recompute);
  free (r->metric);
  free (r->flops);
  free (r->source);
  free (r->keys);
}

/* The columns, in the order struct pub_run's integers are read. */
static const char *const int_cols[] = { "gpus", "tp", "pp", "dp", "cp", "ep", "vp", "mbs",
                                        "global_batch", "seq", "sp" };

/* The strategy a row's columns give: its degrees, micro-batch, sequence
 * parallelism, tp overlap, schedule and recompute (-1: left at none). */
static void
row_strategy (const struct pub_run *x, int recompute, struct strategy *s)
{
  strategy_init (s);
  s->cp = (int) x->cp;
  s->tp = (int) x->tp;
  s->pp = (int) x->pp;
  s->dp = (int) x->dp;
  s->dp_set = true;
  s->ep = (int) x->ep;
  s->vp = (int) x->vp;
  s->mbs = (int) x->mbs;
  s->sp = x->sp != 0;
  s->tpo = x->tpo;
  s->schedule = x->vp > 1 ? SCHED_INTERLEAVED : SCHED_1F1B;
  if (recompute >= 0)
    s->recompute = (enum pm_recompute) recompute;
}

/* Read the file; -1 after a message naming file:line. */
static int
runs_load (const char *path, struct pub_run **out, size_t *nout)
{
  static const char *const str_cols[] = { "id", "model", "gpu", "precision", "recompute",
                                          "metric", "value", "source" };
  struct csv_reader r;
  int col_s[8], col_i[11], col_flops = -1, col_mem = -1, col_zero = -1, col_att = -1, col_tpo = -1;
  int col_keys = -1, rc;
  struct pub_run *v = NULL;
  size_t n = 0;
  bool header = false;

  if (csv_open (&r, path) < 0) {
    pm_error ("%s: %s", path, strerror (errno));
    return -1;
  }
  while ((rc = csv_next (&r)) > 0) {
    struct pub_run x;
    bool ok = true;
    char **f = r.fields;
    if (r.nfields == 0 || f[0][0] == '#' || (r.nfields == 1 && f[0][0] == '\0'))
      continue;                          /* comments (the sources) and blank lines */
    if (!header) {
      for (size_t i = 0; i < 8; i++)
        if ((col_s[i] = csv_column (f, r.nfields, str_cols[i])) < 0) {
          pm_error ("%s:%ld: missing column '%s'", path, r.line, str_cols[i]);
          ok = false;
        }
      for (size_t i = 0; i < 11; i++)
        if ((col_i[i] = csv_column (f, r.nfields, int_cols[i])) < 0) {
          pm_error ("%s:%ld: missing column '%s'", path, r.line, int_cols[i]);
          ok = false;
        }
      col_flops = csv_column (f, r.nfields, "flops");
      col_mem = csv_column (f, r.nfields, "memory_gib");
      col_zero = csv_column (f, r.nfields, "zero");
      col_att = csv_column (f, r.nfields, "attention");
      col_tpo = csv_column (f, r.nfields, "tpo");
      col_keys = csv_column (f, r.nfields, "keys");
      if (!ok)
        goto fail;
      header = true;
      continue;
    }
    memset (&x, 0, sizeof x);
    x.line = r.line;
    x.memory_gib = NAN;
    for (size_t i = 0; i < 8; i++)
      if ((size_t) col_s[i] >= r.nfields || f[col_s[i]][0] == '\0') {
        pm_error ("%s:%ld: empty %s", path, r.line, str_cols[i]);
        goto fail;
      }
    for (size_t i = 0; i < 11; i++) {
      int64_t *dst[] = { &x.gpus, &x.tp, &x.pp, &x.dp, &x.cp, &x.ep, &x.vp, &x.mbs, &x.batch,
                         &x.seq, &x.sp };
      if ((size_t) col_i[i] >= r.nfields ||
          !csv_int (&r, (size_t) col_i[i], int_cols[i], i == 10 ? 0 : 1, dst[i]))
        goto fail;
    }
    if (!parse_double (f[col_s[6]], &x.value) || !(x.value > 0) || !isfinite (x.value)) {
      pm_error ("%s:%ld: value '%s': expected a positive number", path, r.line, f[col_s[6]]);
      goto fail;
    }
    if (col_mem >= 0 && (size_t) col_mem < r.nfields && f[col_mem][0] &&
        (!parse_double (f[col_mem], &x.memory_gib) || !(x.memory_gib > 0))) {
      pm_error ("%s:%ld: memory_gib '%s': expected a positive number or nothing", path, r.line,
                f[col_mem]);
      goto fail;
    }
    x.zero = -1;
    if (col_zero >= 0 && (size_t) col_zero < r.nfields && f[col_zero][0]) {
      int64_t z;
      if (!parse_int64 (f[col_zero], &z) || z < 0 || z > 3) {
        pm_error ("%s:%ld: zero '%s': expected a ZeRO stage 0 to 3 or nothing", path, r.line,
                  f[col_zero]);
        goto fail;
      }
      x.zero = (int) z;
    }
    if (col_att >= 0 && (size_t) col_att < r.nfields && f[col_att][0]) {
      if (strcmp (f[col_att], "flash") && strcmp (f[col_att], "unfused")) {
        pm_error ("%s:%ld: attention '%s': expected flash, unfused or nothing", path, r.line,
                  f[col_att]);
        goto fail;
      }
      x.unfused = strcmp (f[col_att], "unfused") == 0;
    }
    x.tpo = false;
    if (col_tpo >= 0 && (size_t) col_tpo < r.nfields && f[col_tpo][0]) {
      if (strcmp (f[col_tpo], "0") && strcmp (f[col_tpo], "1")) {
        pm_error ("%s:%ld: tpo '%s': expected 0, 1 or nothing", path, r.line, f[col_tpo]);
        goto fail;
      }
      x.tpo = f[col_tpo][0] == '1';
    }
    if (col_keys >= 0 && (size_t) col_keys < r.nfields && f[col_keys][0]) {
      /* the file separates keys with ';' (its fields with ','); checked
       * here so that a bad key names its line */
      struct strategy chk;
      char *where = xasprintf ("%s:%ld: keys", path, r.line);
      int bad;
      x.keys = xstrdup (f[col_keys]);
      for (char *c = x.keys; *c; c++)
        if (*c == ';')
          *c = ',';
      int rc_col = word_index (f[col_s[4]], recompute_modes, 3);
      row_strategy (&x, rc_col, &chk);
      bad = strategy_parse (&chk, x.keys, where);
      /* the columns say the run's numbers and recomputation; keys may add,
       * not contradict (recompute_modules needs the column's selective) */
      if (bad == 0 && (chk.tp != x.tp || chk.pp != x.pp || chk.dp != x.dp || chk.cp != x.cp ||
                       chk.ep != x.ep || chk.vp != x.vp || chk.mbs != x.mbs)) {
        pm_error ("%s: %s: tp, pp, dp, cp, ep, vp and mbs are the row's columns", where, x.keys);
        bad = -1;
      }
      if (bad == 0 && rc_col >= 0 && (int) chk.recompute != rc_col) {
        pm_error ("%s: %s says recompute=%s, the row's column %s", where, x.keys,
                  recompute_name (chk.recompute), f[col_s[4]]);
        bad = -1;
      }
      free (where);
      if (bad < 0) {
        free (x.keys);
        goto fail;
      }
    }
    if (word_index (f[col_s[5]], metrics, 5) < 0) {
      pm_error ("%s:%ld: metric '%s': expected step_s, tokens_per_s_per_gpu, tokens_per_s, "
                "tflops_per_gpu or mfu", path, r.line, f[col_s[5]]);
      run_free (&x);
      goto fail;
    }
    if (strcmp (f[col_s[5]], "tflops_per_gpu") == 0 || strcmp (f[col_s[5]], "mfu") == 0) {
      const char *fl = col_flops >= 0 && (size_t) col_flops < r.nfields ? f[col_flops] : "";
      if (word_index (fl, flops_rules, N_FLOPS_RULES) < 0) {
        pm_error ("%s:%ld: flops '%s': a %s row says how its source counted FLOPs "
                  "(megatron-recompute, megatron, 6n, 6n-attn, 6n-active or megatron-core)",
                  path, r.line, fl, f[col_s[5]]);
        run_free (&x);
        goto fail;
      }
      x.flops = xstrdup (fl);
    }
    if (x.tp * x.pp * x.dp * x.cp != x.gpus) {
      pm_error ("%s:%ld: tp x pp x dp x cp = %lld, not the %lld GPUs", path, r.line,
                (long long) (x.tp * x.pp * x.dp * x.cp), (long long) x.gpus);
      run_free (&x);
      goto fail;
    }
    if (x.sp > 1) {
      pm_error ("%s:%ld: sp=%lld: expected 0 or 1", path, r.line, (long long) x.sp);
      run_free (&x);
      goto fail;
    }
    x.id = xstrdup (f[col_s[0]]);
    x.model = xstrdup (f[col_s[1]]);
    x.gpu = xstrdup (f[col_s[2]]);
    x.precision = xstrdup (f[col_s[3]]);
    x.recompute = xstrdup (f[col_s[4]]);
    x.metric = xstrdup (f[col_s[5]]);
    x.source = xstrdup (f[col_s[7]]);
    if (word_index (x.recompute, recompute_modes, 3) < 0) {
      pm_error ("%s:%ld: recompute '%s': expected none, selective or full", path, r.line,
                x.recompute);
      run_free (&x);
      goto fail;
    }
    if (strcmp (x.precision, "fp16") != 0 && precision_train (x.precision) == NULL) {
      pm_error ("%s:%ld: precision '%s': expected bf16, fp8, fp16 (mixed) or fp32", path, r.line,
                x.precision);
      run_free (&x);
      goto fail;
    }
    for (size_t i = 0; i < n; i++)
      if (strcmp (v[i].id, x.id) == 0) {
        pm_error ("%s:%ld: id '%s' again (first at line %ld)", path, r.line, x.id, v[i].line);
        run_free (&x);
        goto fail;
      }
    v = xrealloc (v, (n + 1) * sizeof *v);
    v[n++] = x;
  }
  if (rc < 0)
    goto fail;
  if (!header || n == 0) {
    pm_error ("%s: no runs", path);
    goto fail;
  }
  csv_close (&r);
  *out = v;
  *nout = n;
  return 0;
fail:
  csv_close (&r);
  for (size_t i = 0; i < n; i++)
    run_free (&v[i]);
  free (v);
  return -1;
}

/* FLOPs of one step as the run's source counted them. */
static double
source_flops (const struct pub_run *x, const struct model_cfg *m)
{
  double b = (double) x->batch, s = (double) x->seq, l = (double) m->layers;
  double h = (double) m->hidden, v = (double) m->vocab, p = model_params (m);
  switch (word_index (x->flops, flops_rules, N_FLOPS_RULES)) {
  case 0: return 96 * b * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h));
  case 1: return 72 * b * s * l * h * h * (1 + s / (6 * h) + v / (12 * l * h));
  case 2: return 6 * p * b * s;
  case 3: return (6 * p + 12 * l * h * s) * b * s;
  case 5: {
    double q = (double) (m->heads * m->head_dim) / h, g = (double) m->kv_heads / m->heads;
    double f = (double) (m->moe_ffn ? m->moe_ffn : m->ffn), k = m->experts > 0 ? m->top_k : 1;
    double gated = m->gelu && m->layernorm ? 1 : 1.5;  /* NeoX's GeLU is not gated */
    double shared = (double) m->shared_ffn / h * gated;  /* its shared-expert term */
    return 12 * b * s * l * h * h * ((1 + g + s / h) * q + f / h * k * gated + shared
                                     + v / (2 * l * h));
  }
  default: {
    double emb, head, experts;
    model_param_parts (m, &emb, &head, &experts);
    if (m->experts > 0)
      p -= experts * (1 - (double) m->top_k / (double) m->experts);
    return 6 * p * b * s;
  }
  }
}

/* The published figure as seconds per step. */
static double
published_step (const struct pub_run *x, const struct model_cfg *m, const struct perfmod_gpu *g,
                const struct precision *pr)
{
  double tokens = (double) x->batch * (double) x->seq, n = (double) x->gpus;
  switch (word_index (x->metric, metrics, 5)) {
  case 0: return x->value;
  case 1: return tokens / (x->value * n);
  case 2: return tokens / x->value;
  case 3: return source_flops (x, m) / (x->value * 1e12 * n);
  default: return source_flops (x, m) / (x->value * perfmod_gpu_peak_flops (g, pr->gemm) * n);
  }
}

/* Why a run cannot be expressed, or NULL; its strategy and options. */
static const char *
run_setup (const struct pub_run *x, const struct model_cfg *m, const struct gpu_entry *ge,
           const struct precision *pr, struct strategy *s, struct dist_options *d)
{
  row_strategy (x, word_index (x->recompute, recompute_modes, 3), s);
  /* Megatron-Core's distributed optimizer, as its and NeMo's recipes run,
   * unless the run says */
  s->zero = x->zero >= 0 ? x->zero : x->dp > 1 ? 1 : 0;
  s->kernels = default_kernels (m, pr, true);
  s->kernels_set = true;
  if (x->keys && strategy_parse (s, x->keys, x->id) < 0)  /* checked as the file was read */
    return "its keys";
  memset (d, 0, sizeof *d);
  d->s = s;
  d->prec = pr;
  d->train = true;
  d->flash = !x->unfused && flash_supported (&ge->gpu, pr);
  d->batch = x->batch;
  d->seq = x->seq;
  d->gpus_per_node = ge->gpu.gpus_per_node;
  return NULL;
}

/* One prediction of a run: its signed error (%), whether the model has
 * routed experts, whether it was predicted out of memory. */
struct pub_err {
  double e;
  bool moe, oom;
};

/* One line of the summary over the predictions of group (-1 all, 0 the
 * dense models', 1 the MoE models'). */
static void
summary_line (FILE *out, const char *label, const struct pub_err *v, size_t k, int group)
{
  double *a = xcalloc (k ? k : 1, sizeof *a), sum = 0;
  size_t m = 0, within = 0, fast = 0, oom = 0;
  for (size_t j = 0; j < k; j++)
    if (group < 0 || (int) v[j].moe == group) {
      a[m++] = fabs (v[j].e);
      sum += fabs (v[j].e);
      within += fabs (v[j].e) <= 15;
      fast += v[j].e < -20;
      oom += v[j].oom;
    }
  fprintf (out, "%-10s %5zu %14.1f %12.1f %7zu/%-2zu %14zu %13zu\n", label, m,
           m ? median_sorting (a, m) : 0, m ? sum / (double) m : 0, within, m, oom, fast);
  free (a);
}

int
reproduce_published (struct plugin_set *set, const struct gpu_db *gpus,
                     const struct reproduce_options *o)
{
  bool csv = strcmp (o->format, "csv") == 0;
  size_t npred = strv_len (o->predictors), n = 0, nskip = 0;
  struct pub_run *runs = NULL;
  struct plugin **pls;
  struct pub_err **errs;
  size_t *nerr;
  char **skipped;
  int rc = 0;

  if (runs_load (o->published, &runs, &n) < 0)
    return EXIT_USAGE;
  pls = xcalloc (npred, sizeof *pls);
  for (size_t p = 0; p < npred; p++)
    if ((pls[p] = predictor_find (set, o->predictors[p])) == NULL) {
      rc = EXIT_USAGE;
      goto out0;
    }
  errs = xcalloc (npred, sizeof *errs);
  nerr = xcalloc (npred, sizeof *nerr);
  skipped = xcalloc (n, sizeof *skipped);
  for (size_t p = 0; p < npred; p++)
    errs[p] = xcalloc (n, sizeof **errs);
  if (csv)
    fprintf (o->out, "id,model,gpu,gpus,tp,pp,dp,ep,vp,mbs,global_batch,seq,precision,recompute,"
             "predictor,published_step_ms,step_ms,error_pct,memory_gib,oom,source\n");
  else
    fprintf (o->out, "%-24s %-16s %-9s %5s %-22s %-5s %11s %-10s %11s %8s %8s\n", "run", "model",
             "gpu", "gpus", "tp.pp.dp.ep/vp mbs", "prec", "published_s", "predictor",
             "predicted_s", "err_%", "mem_GiB");
  for (size_t i = 0; i < n && rc == 0; i++) {
    struct pub_run *x = &runs[i];
    const struct gpu_entry *ge = gpu_db_find (gpus, x->gpu);
    const struct precision *pr = precision_train (strcmp (x->precision, "fp16") == 0
                                                  ? "amp-fp16" : x->precision);
    struct model_cfg m;
    struct strategy s;
    struct dist_options d;
    const char *why;
    double pub;
    char shape[48];
    if (ge == NULL) {
      pm_error ("%s:%ld: gpu '%s' is in no gpus.d section", o->published, x->line, x->gpu);
      rc = EXIT_USAGE;
      break;
    }
    if (model_cfg_builtin (&m, x->model) < 0) {
      pm_error ("%s:%ld: model '%s' is not a built-in (perfmod models)", o->published, x->line,
                x->model);
      rc = EXIT_USAGE;
      break;
    }
    pub = published_step (x, &m, &ge->gpu, pr);
    if ((why = run_setup (x, &m, ge, pr, &s, &d)) != NULL) {
      skipped[nskip++] = xasprintf ("%s (%s:%ld): %s", x->id, o->published, x->line, why);
      model_cfg_free (&m);
      continue;
    }
    snprintf (shape, sizeof shape, "%lld.%lld.%lld.%lld/%lld %lld", (long long) x->tp,
              (long long) x->pp, (long long) x->dp, (long long) x->ep, (long long) x->vp,
              (long long) x->mbs);
    for (size_t p = 0; p < npred; p++) {
      struct dist_result res;
      double e;
      if (dist_predict (set, pls[p], &m, &ge->gpu, &d, &res) < 0) {
        pm_error ("%s:%ld: run %s cannot be predicted (above)", o->published, x->line, x->id);
        rc = EXIT_RUNTIME;
        break;
      }
      e = (res.step_ms / 1e3 - pub) / pub * 100;
      errs[p][nerr[p]++] = (struct pub_err) { e, m.experts > 0, res.mem.oom };
      if (csv)
        fprintf (o->out, "%s,%s,%s,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%s,%s,%s,%.6g,"
                 "%.6g,%.2f,%.2f,%s,%s\n", x->id, x->model, x->gpu, (long long) x->gpus,
                 (long long) x->tp, (long long) x->pp, (long long) x->dp, (long long) x->ep,
                 (long long) x->vp, (long long) x->mbs, (long long) x->batch,
                 (long long) x->seq, x->precision, x->recompute, o->predictors[p], pub * 1e3,
                 res.step_ms, e, res.mem.total / PM_GIB,
                 res.mem.oom ? "true" : "false", x->source);
      else
        fprintf (o->out, "%-24s %-16s %-9s %5lld %-22s %-5s %11.4g %-10s %11.4g %+8.1f %6.1f%s\n",
                 p ? "" : x->id, p ? "" : x->model, p ? "" : x->gpu, (long long) x->gpus,
                 p ? "" : shape, p ? "" : x->precision, pub, o->predictors[p],
                 res.step_ms / 1e3, e, res.mem.total / PM_GIB, res.mem.oom ? " OOM" : "");
    }
    model_cfg_free (&m);
  }
  if (rc == 0) {
    FILE *sum = csv ? o->err : o->out;
    fprintf (sum, "\n%-10s %5s %14s %12s %10s %14s %13s\n", "predictor", "runs",
             "median_|err|_%", "mean_|err|_%", "within_15%", "predicted_OOM", "fast_>20%");
    for (size_t p = 0; p < npred; p++) {
      summary_line (sum, o->predictors[p], errs[p], nerr[p], -1);
      summary_line (sum, "  dense", errs[p], nerr[p], 0);
      summary_line (sum, "  MoE", errs[p], nerr[p], 1);
    }
    fprintf (sum, "(%zu runs from %s; error = predicted / published - 1 of the step time; every "
             "run ran, so a predicted OOM is a miss; fast_>20%%: predicted more than 20 %% too "
             "fast; MoE: the models with routed experts)\n", n, o->published);
    for (size_t j = 0; j < nskip; j++)
      fprintf (sum, "skipped %s\n", skipped[j]);
  }
  for (size_t p = 0; p < npred; p++)
    free (errs[p]);
  for (size_t j = 0; j < nskip; j++)
    free (skipped[j]);
  free (skipped);
  free (errs);
  free (nerr);
out0:
  free (pls);
  for (size_t i = 0; i < n; i++)
    run_free (&runs[i]);
  free (runs);
  return rc;
}
