/* serving.c: perfmod reproduce --table serving: aiconfigurator's measured serving runs (time to first token, time per output token), each predicted by the library's serving simulation (serve_run) from the perfmod serve request a user would type for it, on the run's own GPU. */
#include <config.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* The model_path of a run to perfmod's built-in, or NULL where none is
 * planned (the row is skipped naming why); mxfp4: the checkpoint ships
 * its routed experts in MXFP4 and the rest in bf16. */
static const struct {
  const char *path, *builtin;
  bool mxfp4;
} serving_models[] = {
  { "meta-llama/Llama-3.1-8B-Instruct", "llama3.1-8b", false },
  { "meta-llama/Llama-3.1-70B", "llama3.1-70b", false },
  { "Qwen/Qwen3-32B", "qwen3-32b", false },
  { "Qwen/Qwen3-235B-A22B-FP8", "qwen3-235b-a22b", false },
  { "openai/gpt-oss-120b", "gpt-oss-120b", true },
  { "deepseek-ai/DeepSeek-V3", "deepseek-v3", false },
  { "deepseek-ai/DeepSeek-R1", "deepseek-v3", false },   /* R1 is V3's architecture */
  /* M2.5 is M2's architecture and shape (MiniMaxM2ForCausalLM, 256 experts
   * top-8 over 62 layers: SGLang's and vLLM's MiniMax-M2 model code serve
   * both) */
  { "MiniMaxAI/MiniMax-M2.5", "minimax-m2", false },
};

/* The columns read, in this order (the disaggregated pools' after C_TPOT). */
enum { C_ID, C_SOURCE, C_BACKEND, C_MODEL, C_SYSTEM, C_MODE, C_ISL, C_OSL, C_GEMM, C_MOE,
       C_BATCH, C_TP, C_PP, C_ADP, C_MOETP, C_MOEEP, C_TTFT, C_TPOT,
       C_P_BATCH, C_P_WORKERS, C_P_TP, C_P_PP, C_P_ADP, C_P_MOETP, C_P_MOEEP,
       C_D_BATCH, C_D_WORKERS, C_D_TP, C_D_PP, C_D_ADP, C_D_MOETP, C_D_MOEEP, NCOLS };
static const char *const serving_cols[NCOLS] = {
  "id", "silicon_data_source", "backend", "model_path", "system", "mode", "isl", "osl",
  "gemm_quant_mode", "moe_quant_mode", "batch_size", "tp_size", "pp_size", "attention_dp_size",
  "moe_tp_size", "moe_ep_size", "silicon_ttft_ms", "silicon_tpot_ms",
  "prefill_batch_size", "prefill_num_workers", "prefill_tp_size", "prefill_pp_size",
  "prefill_attention_dp_size", "prefill_moe_tp_size", "prefill_moe_ep_size",
  "decode_batch_size", "decode_num_workers", "decode_tp_size", "decode_pp_size",
  "decode_attention_dp_size", "decode_moe_tp_size", "decode_moe_ep_size"
};

/* A replica layout of a run: tp, pp, attention dp, the experts' tp and ep,
 * workers and their batch limit (0: not given). */
struct run_layout {
  int64_t tp, pp, adp, moe_tp, moe_ep, workers, batch;
  bool adp_given;               /* the row gives attention_dp_size (1 or more) */
};

struct serving_run {
  char *id, *backend, *model, *builtin, *gemm, *system, *mode;
  char *skip;                   /* why the run is not predicted, or NULL */
  int64_t isl, osl, conc;
  struct run_layout agg, pre, dec;
  bool disagg;
  double ttft, tpot;            /* measured, ms */
  long line;
};

/* An optional integer column: empty (or a column the file lacks, -1) is
 * def. */
static bool
opt_int (const struct csv_reader *r, int col, const char *name, int64_t def, int64_t *out)
{
  if (col < 0 || r->fields[col][0] == '\0') {
    *out = def;
    return true;
  }
  return csv_int (r, (size_t) col, name, 0, out);
}

static bool
builtin_exists (const char *name)
{
  char *path = xasprintf ("%s/models/%s.json", pm_datadir (), name);
  bool ok = access (path, R_OK) == 0;
  free (path);
  return ok;
}

/* The layout of columns from c (tp, pp, adp, moe_tp, moe_ep in the
 * enum's order); batch and workers where given (-1: none). */
static bool
read_layout (const struct csv_reader *r, const int *col, int c, int cbatch, int cworkers,
             struct run_layout *l)
{
  static const char *const what[] = { "tp", "pp", "attention_dp", "moe_tp", "moe_ep" };
  int64_t *v[] = { &l->tp, &l->pp, &l->adp, &l->moe_tp, &l->moe_ep };
  for (int k = 0; k < 5; k++)
    if (!opt_int (r, col[c + k], what[k], 1, v[k]))
      return false;
  l->adp_given = col[c + 2] >= 0 && r->fields[col[c + 2]][0] != '\0';
  if (!opt_int (r, col[cbatch], "batch_size", 0, &l->batch))
    return false;
  if (cworkers >= 0 && !opt_int (r, col[cworkers], "num_workers", 1, &l->workers))
    return false;
  for (int k = 0; k < 5; k++)
    if (*v[k] < 1)
      *v[k] = 1;
  if (l->workers < 1)
    l->workers = 1;
  return l->tp <= PM_MAX_GPUS && l->pp <= PM_MAX_STAGES && l->adp <= PM_MAX_GPUS &&
         l->moe_tp <= PM_MAX_GPUS && l->moe_ep <= PM_MAX_GPUS && l->workers <= PM_MAX_GPUS &&
         l->batch <= PM_MAX_BATCH;
}

static void
run_free (struct serving_run *s)
{
  free (s->id); free (s->backend); free (s->model); free (s->builtin); free (s->gemm);
  free (s->system); free (s->mode); free (s->skip);
}

/* Read the runs; -1 after a message naming file:line. */
static int
serving_load (const char *path, const struct gpu_db *gpus, struct serving_run **out,
              size_t *nout)
{
  struct csv_reader r;
  int col[NCOLS], rc;
  size_t nhead = 0, n = 0;
  struct serving_run *v = NULL;

  *out = NULL;
  *nout = 0;
  if (csv_open (&r, path) < 0) {
    pm_error ("%s: cannot open the serving runs (give --data DIR, the moderndata folder)", path);
    return -1;
  }
  if ((rc = csv_next (&r)) <= 0) {
    if (rc == 0)
      pm_error ("%s:1: empty file: expected a header row", path);
    csv_close (&r);
    return -1;
  }
  nhead = r.nfields;
  for (int i = 0; i < NCOLS; i++)      /* the disaggregated pools' columns may be missing */
    if ((col[i] = csv_column (r.fields, r.nfields, serving_cols[i])) < 0 && i < C_P_BATCH) {
      pm_error ("%s:%ld: no column '%s' in the header", path, r.line, serving_cols[i]);
      csv_close (&r);
      return -1;
    }
  while ((rc = csv_next (&r)) > 0) {
    struct serving_run s;
    const char *conc;
    char *end;
    if (r.nfields == 1 && r.fields[0][0] == '\0')
      continue;                              /* a blank line */
    if (r.nfields != nhead) {
      pm_error ("%s:%ld: %zu fields, the header has %zu (a truncated row?)", path, r.line,
                r.nfields, nhead);
      rc = -1;
      break;
    }
    memset (&s, 0, sizeof s);
    s.line = r.line;
    if (!csv_int (&r, (size_t) col[C_ISL], "isl", 1, &s.isl) ||
        !csv_int (&r, (size_t) col[C_OSL], "osl", 1, &s.osl) ||
        !read_layout (&r, col, C_TP, C_BATCH, -1, &s.agg) ||
        !read_layout (&r, col, C_P_TP, C_P_BATCH, C_P_WORKERS, &s.pre) ||
        !read_layout (&r, col, C_D_TP, C_D_BATCH, C_D_WORKERS, &s.dec) ||
        !parse_double (r.fields[col[C_TTFT]], &s.ttft) || !(s.ttft > 0) ||
        !parse_double (r.fields[col[C_TPOT]], &s.tpot) || !(s.tpot > 0)) {
      if (s.isl && s.osl)            /* csv_int has named the field otherwise */
        pm_error ("%s:%ld: a layout out of range, or silicon_ttft_ms '%s' and silicon_tpot_ms "
                  "'%s' not times above 0", path, r.line, r.fields[col[C_TTFT]],
                  r.fields[col[C_TPOT]]);
      rc = -1;
      break;
    }
    if (s.isl > PM_MAX_SEQ || s.osl > PM_MAX_SEQ) {
      pm_error ("%s:%ld: isl or osl out of range", path, r.line);
      rc = -1;
      break;
    }
    /* The concurrency the benchmark held (silicon_concurrency=N in the
     * source), else the batch size. */
    s.conc = s.agg.batch * s.agg.adp;     /* a batch per attention-DP replica */
    if ((conc = strstr (r.fields[col[C_SOURCE]], "silicon_concurrency=")) != NULL) {
      long long cv = strtoll (conc + 20, &end, 10);
      if (end == conc + 20 || cv < 1 || cv > PM_MAX_BATCH) {
        pm_error ("%s:%ld: silicon_concurrency: expected a positive integer", path, r.line);
        rc = -1;
        break;
      }
      s.conc = cv;
    }
    /* A row with its experts split over tp's ranks (moe_tp x moe_ep = tp), no
     * attention_dp_size, and exactly tp batches of clients is attention data
     * parallelism over the tp ranks, a batch each (TensorRT-LLM's
     * enable_attention_dp: each rank a replica of tp 1, max_batch_size per
     * rank); aiconfigurator's gpt-oss rows say so by their numbers alone
     * (an MoE's: the row names the experts' quantisation). */
    if (strcmp (r.fields[col[C_MODE]], "agg") == 0 && r.fields[col[C_MOE]][0]
        && !s.agg.adp_given && s.agg.tp > 1 && s.agg.moe_tp * s.agg.moe_ep == s.agg.tp
        && (s.agg.moe_tp > 1 || s.agg.moe_ep > 1) && s.agg.batch > 0
        && s.agg.batch * s.agg.tp == s.conc) {
      s.agg.adp = s.agg.tp;
      s.agg.tp = 1;
    }
    s.id = xstrdup (r.fields[col[C_ID]]);
    s.backend = xstrdup (r.fields[col[C_BACKEND]]);
    s.model = xstrdup (r.fields[col[C_MODEL]]);
    s.system = xstrdup (r.fields[col[C_SYSTEM]]);
    s.mode = xstrdup (r.fields[col[C_MODE]]);
    s.disagg = strcmp (s.mode, "disagg") == 0;
    s.gemm = xstrdup (r.fields[col[C_GEMM]][0] ? r.fields[col[C_GEMM]] : "bf16");
    bool mxfp4 = false;
    for (size_t i = 0; i < sizeof serving_models / sizeof serving_models[0]; i++)
      if (strcmp (serving_models[i].path, s.model) == 0) {
        s.builtin = xstrdup (serving_models[i].builtin);
        mxfp4 = serving_models[i].mxfp4;
      }
    /* An MXFP4 checkpoint's rows on a GPU without fp4 matrix units name
     * its 4-bit experts (and the run) nvfp4; the only 4-bit MoE kernels
     * there widen MXFP4 weights to bf16 (the w4a16_mxfp4 kernels the
     * tables time for all three engines on the H100), and the
     * checkpoint's other layers are bf16: --dtype mxfp4. */
    const struct gpu_entry *ge = gpu_db_find (gpus, s.system);
    if (mxfp4 && ge && !(ge->gpu.fp4_tflops > 0) && strcmp (s.gemm, "nvfp4") == 0 &&
        strcmp (r.fields[col[C_MOE]], "nvfp4") == 0) {
      free (s.gemm);
      s.gemm = xstrdup ("mxfp4");
    }
    /* What perfmod cannot express, first reason only. */
    if (s.builtin == NULL)
      s.skip = xasprintf ("no built-in model for %s", s.model);
    else if (ge == NULL)
      s.skip = xasprintf ("system %s: no gpus.d section or alias", s.system);
    else if (!s.disagg && strcmp (s.mode, "agg") != 0)
      s.skip = xasprintf ("mode %s: expected agg or disagg", s.mode);
    else if (s.conc < 1)
      s.skip = xstrdup ("no batch_size or silicon_concurrency");
    else if (strcmp (s.gemm, "mxfp4") != 0 &&
             (strcmp (s.gemm, "nvfp4") == 0 || strcmp (r.fields[col[C_MOE]], "nvfp4") == 0))
      s.skip = xasprintf ("nvfp4 on %s (no fp4 matrix units: a weight-only emulation)", s.system);
    else if (strcmp (s.gemm, "bf16") && strcmp (s.gemm, "fp8") && strcmp (s.gemm, "fp8_block") &&
             strcmp (s.gemm, "fp8_static") && strcmp (s.gemm, "mxfp4"))
      s.skip = xasprintf ("gemm_quant_mode %s", s.gemm);
    else if (s.disagg ? s.dec.batch > 0 && s.dec.batch * s.dec.workers * s.dec.adp < s.conc
             : s.agg.batch > 0 && s.agg.batch * s.agg.adp < s.conc)
      s.skip = xstrdup ("batch_size below the concurrency (a batch per attention data-parallel "
                        "rank?): not modelled");
    else if (!builtin_exists (s.builtin))
      s.skip = xasprintf ("no built-in model %s", s.builtin);
    v = xrealloc (v, (n + 1) * sizeof *v);
    v[n++] = s;
  }
  csv_close (&r);
  if (rc < 0) {
    for (size_t i = 0; i < n; i++)
      run_free (&v[i]);
    free (v);
    return -1;
  }
  if (n == 0) {
    pm_error ("%s: no runs", path);
    free (v);
    return -1;
  }
  *out = v;
  *nout = n;
  return 0;
}

static double
mean (const double *v, size_t n)
{
  double s = 0;
  for (size_t i = 0; i < n; i++)
    s += v[i];
  return n ? s / (double) n : NAN;
}

/* Attention data parallelism with the experts over every replica's ranks
 * (moe_ep x moe_tp = tp x attention_dp); else the attention-DP ranks are
 * replicas of their own. */
static bool
adp_experts (const struct run_layout *l, bool moe)
{
  return moe && l->adp > 1 && l->moe_ep * l->moe_tp == l->tp * l->adp;
}

/* A layout as a strategy string: tp, pp, and the experts over moe_ep
 * ranks within tp's (etp = moe_tp) where moe_ep > 1, or over every
 * attention-DP rank's (dp, the batch a replica's); `replicas` adds an
 * aggregated run's attention-DP replicas as dp. */
static char *
layout_spec (const struct run_layout *l, bool moe, bool replicas)
{
  if (adp_experts (l, moe))
    return xasprintf ("tp=%lld,pp=%lld,dp=%lld,ep=%lld,etp=%lld", (long long) l->tp,
                      (long long) l->pp, (long long) l->adp, (long long) l->moe_ep,
                      (long long) l->moe_tp);
  char *dp = replicas && l->adp > 1 ? xasprintf (",dp=%lld", (long long) l->adp) : xstrdup ("");
  char *spec = moe && l->moe_ep > 1
               ? xasprintf ("tp=%lld,pp=%lld%s,ep=%lld,etp=%lld", (long long) l->tp,
                            (long long) l->pp, dp, (long long) l->moe_ep, (long long) l->moe_tp)
               : xasprintf ("tp=%lld,pp=%lld%s", (long long) l->tp, (long long) l->pp, dp);
  free (dp);
  return spec;
}

/* A disaggregated pool's workers: its attention-DP ranks are workers of
 * their own unless its experts span them. */
static int64_t
pool_workers (const struct run_layout *l, bool moe)
{
  return l->adp > 1 && !adp_experts (l, moe) ? l->workers * l->adp : l->workers;
}

/* The perfmod serve request of a run (the strings are the caller's to
 * free: *specs[0..2]). */
static void
run_request (const struct serving_run *r, const char *predictor, bool moe,
             struct perfmod_serve_request *q, char *specs[2])
{
  memset (q, 0, sizeof *q);
  q->struct_size = sizeof *q;
  q->model = r->builtin;
  q->gpu = r->system;
  q->engine = r->backend;
  /* fp8_static is fp8 with its scale fixed ahead, the same GEMMs */
  q->dtype = strcmp (r->gemm, "bf16") == 0 ? "bf16"
           : strcmp (r->gemm, "fp8_block") == 0 ? "fp8_block"
           : strcmp (r->gemm, "mxfp4") == 0 ? "mxfp4" : "fp8";
  q->predictor = predictor;
  q->concurrency = r->conc;
  q->isl = r->isl;
  q->osl = r->osl;
  specs[0] = specs[1] = NULL;
  if (r->disagg) {
    q->prefill_strategy = specs[0] = layout_spec (&r->pre, moe, false);
    q->decode_strategy = specs[1] = layout_spec (&r->dec, moe, false);
    q->prefill_workers = pool_workers (&r->pre, moe);
    q->decode_workers = pool_workers (&r->dec, moe);
    q->prefill_max_batch = r->pre.batch;
    q->max_batch = r->dec.batch;
  }
  else {
    q->strategy = specs[0] = layout_spec (&r->agg, moe, true);
    q->max_batch = r->agg.batch;
  }
}

/* Per-group tallies of |error| %. */
struct tally {
  char *key;                    /* "(all)", a model, "backend NAME", "half A"... */
  double *ttft, *tpot;
  size_t n;
};
struct tallies {
  struct tally *v;
  size_t n;
};

static void
tally_add (struct tallies *t, const char *key, double et, double ep)
{
  size_t j;
  for (j = 0; j < t->n && strcmp (t->v[j].key, key) != 0; j++)
    ;
  if (j == t->n) {
    t->v = xrealloc (t->v, (t->n + 1) * sizeof *t->v);
    memset (&t->v[j], 0, sizeof t->v[j]);
    t->v[j].key = xstrdup (key);
    t->n++;
  }
  t->v[j].ttft = xrealloc (t->v[j].ttft, (t->v[j].n + 1) * sizeof (double));
  t->v[j].tpot = xrealloc (t->v[j].tpot, (t->v[j].n + 1) * sizeof (double));
  t->v[j].ttft[t->v[j].n] = et;
  t->v[j].tpot[t->v[j].n] = ep;
  t->v[j].n++;
}

/* The summary's order: all runs, the halves, the backends, the models. */
static int
tally_rank (const char *k)
{
  return strcmp (k, "(all)") == 0 ? 0 : strncmp (k, "half ", 5) == 0 ? 1
       : strncmp (k, "backend ", 8) == 0 ? 2 : 3;
}

static int
cmp_tally (const void *a, const void *b)
{
  const struct tally *x = a, *y = b;
  int d = tally_rank (x->key) - tally_rank (y->key);
  return d ? d : strcmp (x->key, y->key);
}

static void
tallies_free (struct tallies *t)
{
  for (size_t j = 0; j < t->n; j++) {
    free (t->v[j].key);
    free (t->v[j].ttft);
    free (t->v[j].tpot);
  }
  free (t->v);
}

/* The half a run falls in, by FNV-1a of its id: 0 the calibration half
 * (A), 1 the validation half (B). */
static int
run_half (const char *id)
{
  uint64_t h = 1469598103934665603ULL;
  for (const unsigned char *p = (const unsigned char *) id; *p; p++)
    h = (h ^ *p) * 1099511628211ULL;
  return (int) (h & 1);
}

int
reproduce_serving (struct plugin_set *set, const struct gpu_db *gpus,
                   const struct reproduce_options *o)
{
  struct serving_run *runs;
  size_t nruns, npred = strv_len (o->predictors), predicted = 0, skipped = 0;
  bool csv = strcmp (o->format, "csv") == 0;
  struct tallies *t;
  char **reasons = NULL;
  size_t *rcount = NULL, nreasons = 0;
  struct serve_cache cache = { NULL, NULL };
  int rc = 0;

  if (serving_load (o->serving, gpus, &runs, &nruns) < 0)
    return EXIT_USAGE;
  for (size_t p = 0; p < npred; p++)
    if (predictor_find (set, o->predictors[p]) == NULL) {
      for (size_t i = 0; i < nruns; i++)
        run_free (&runs[i]);
      free (runs);
      return EXIT_USAGE;
    }
  t = xcalloc (npred, sizeof *t);
  if (csv)
    fprintf (o->out, "table,id,model,gpu,backend,mode,gemm,isl,osl,concurrency,tp,pp,predictor,"
             "measured_ttft_ms,predicted_ttft_ms,ttft_error_pct,measured_tpot_ms,"
             "predicted_tpot_ms,tpot_error_pct,command,skipped\n");
  else
    fprintf (o->out, "%-15s %-9s %-7s %-6s %-9s %5s %5s %5s %3s %-9s %10s %10s %7s %9s %9s "
             "%7s\n", "model", "gpu", "backend", "mode", "gemm", "isl", "osl", "conc", "tp",
             "predictor", "ttft_ms", "pred_ttft", "err_%", "tpot_ms", "pred_tpot", "err_%");
  for (size_t i = 0; i < nruns; i++) {
    struct serving_run *r = &runs[i];
    struct model_cfg m;
    bool moe = false;
    const struct run_layout *lt = r->disagg ? &r->dec : &r->agg;
    if (r->skip == NULL) {
      char msg[512] = "";
      pm_error_capture (msg, sizeof msg);
      if (model_cfg_builtin (&m, r->builtin) == 0) {
        moe = m.experts > 0;
        model_cfg_free (&m);
      }
      else
        r->skip = xasprintf ("built-in %s refused: %s", r->builtin, msg);
      pm_error_capture (NULL, 0);
    }
    for (size_t p = 0; p < npred && r->skip == NULL; p++) {
      struct perfmod_serve_request q;
      struct perfmod_serve_result res;
      char *specs[2], *cmd, msg[512] = "";
      double et, ep;
      int k;
      run_request (r, o->predictors[p], moe, &q, specs);
      memset (&res, 0, sizeof res);
      res.struct_size = sizeof res;
      pm_error_capture (msg, sizeof msg);
      k = serve_run (set, gpus, &q, &res, &cache);
      pm_error_capture (NULL, 0);
      cmd = serve_command (&q);
      free (specs[0]);
      free (specs[1]);
      if (k == -2) {                  /* a predictor failed: the table fails */
        pm_error ("%s (%s): %s", r->id, cmd, msg);
        free (cmd);
        rc = EXIT_RUNTIME;
        goto out;
      }
      if (k < 0 || res.oom) {
        r->skip = k < 0 ? xasprintf ("refused: %s", msg[0] ? msg : "(no message)")
                : xstrdup ("predicted not to fit (the KV cache below one request)");
        free (cmd);
        break;
      }
      et = fabs (res.ttft_ms.mean - r->ttft) / r->ttft * 100;
      ep = fabs (res.tpot_ms.mean - r->tpot) / r->tpot * 100;
      {
        char *bk = xasprintf ("backend %s", r->backend);
        tally_add (&t[p], "(all)", et, ep);
        tally_add (&t[p], r->builtin, et, ep);
        tally_add (&t[p], bk, et, ep);
        tally_add (&t[p], run_half (r->id) ? "half B" : "half A", et, ep);
        free (bk);
      }
      if (csv) {
        fprintf (o->out, "serving,%s,%s,%s,%s,%s,%s,%lld,%lld,%lld,%lld,%lld,%s,%.6g,%.6g,%.6g,"
                 "%.6g,%.6g,%.6g,", r->id, r->builtin, r->system, r->backend, r->mode, r->gemm,
                 (long long) r->isl, (long long) r->osl, (long long) r->conc, (long long) lt->tp,
                 (long long) lt->pp, o->predictors[p], r->ttft, res.ttft_ms.mean, et, r->tpot,
                 res.tpot_ms.mean, ep);
        csv_quoted (o->out, cmd);
        fputs (",\n", o->out);
      }
      else
        fprintf (o->out, "%-15s %-9s %-7s %-6s %-9s %5lld %5lld %5lld %3lld %-9s %10.1f %10.1f "
                 "%7.1f %9.2f %9.2f %7.1f\n", r->builtin, r->system, r->backend, r->mode,
                 r->gemm, (long long) r->isl, (long long) r->osl, (long long) r->conc,
                 (long long) lt->tp, o->predictors[p], r->ttft, res.ttft_ms.mean, et, r->tpot,
                 res.tpot_ms.mean, ep);
      free (cmd);
      if (p == 0)
        predicted++;
    }
    if (r->skip) {
      size_t j;
      skipped++;
      if (csv) {               /* listed, the reason quoted (RFC 4180) */
        fprintf (o->out, "serving,%s,%s,%s,%s,%s,%s,%lld,%lld,%lld,%lld,%lld,,%.6g,,,%.6g,,,,",
                 r->id, r->builtin ? r->builtin : "", r->system, r->backend, r->mode, r->gemm,
                 (long long) r->isl, (long long) r->osl, (long long) r->conc, (long long) lt->tp,
                 (long long) lt->pp, r->ttft, r->tpot);
        csv_quoted (o->out, r->skip);
        fputc ('\n', o->out);
      }
      for (j = 0; j < nreasons && strcmp (reasons[j], r->skip) != 0; j++)
        ;
      if (j == nreasons) {
        reasons = xrealloc (reasons, (nreasons + 1) * sizeof *reasons);
        rcount = xrealloc (rcount, (nreasons + 1) * sizeof *rcount);
        reasons[j] = r->skip;
        rcount[j] = 0;
        nreasons++;
      }
      rcount[j]++;
    }
  }
  {
    FILE *sum = csv ? o->err : o->out;
    fprintf (sum, "\n%s: %zu runs, %zu predicted, %zu skipped\n", o->serving, nruns, predicted,
             skipped);
    fprintf (sum, "%-10s %-22s %5s %14s %12s %14s %12s\n", "predictor", "runs", "n",
             "ttft_median_%", "ttft_mean_%", "tpot_median_%", "tpot_mean_%");
    for (size_t p = 0; p < npred; p++)
      qsort (t[p].v, t[p].n, sizeof *t[p].v, cmp_tally);
    for (size_t p = 0; p < npred; p++)
      for (size_t j = 0; j < t[p].n; j++) {
        struct tally *x = &t[p].v[j];
        double mt = mean (x->ttft, x->n), mp = mean (x->tpot, x->n);
        fprintf (sum, "%-10s %-22s %5zu %14.1f %12.1f %14.1f %12.1f\n", o->predictors[p], x->key,
                 x->n, median_sorting (x->ttft, x->n), mt, median_sorting (x->tpot, x->n), mp);
      }
    if (nreasons) {
      fprintf (sum, "\nskipped, by reason:\n");
      for (size_t j = 0; j < nreasons; j++)
        fprintf (sum, "%5zu  %s\n", rcount[j], reasons[j]);
    }
    fprintf (sum, "(|error| of the predicted mean time to first token and time per output token "
             "against the measured; half A/B: FNV-1a of the id even/odd; each row is the "
             "perfmod serve command of its CSV row: doc/serving.md)\n");
  }
out:
  for (size_t p = 0; p < npred; p++)
    tallies_free (&t[p]);
  free (t);
  free (reasons);
  free (rcount);
  for (size_t i = 0; i < nruns; i++)
    run_free (&runs[i]);
  free (runs);
  serve_cache_free (&cache);
  return rc;
}
