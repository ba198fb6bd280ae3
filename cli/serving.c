/* serving.c: perfmod reproduce --table serving: aiconfigurator's measured serving runs on H100 (time to first token, time per output token) predicted from built graphs under their tp/pp. */
#include <config.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* The tokens an engine iteration prefills at most: TensorRT-LLM's
 * max_num_tokens, vLLM's max_num_batched_tokens and SGLang's chunked
 * prefill size all default to 8192 on an 80 GB H100 (assumed: the runs
 * kept the defaults). */
#define SERVING_CTX_TOKENS 8192

/* The engine's time per iteration outside the kernels (ms): the
 * scheduler, sampling, the host between iterations.  A free constant,
 * chosen on half A of the runs only with tile-mlp, whose kernel times
 * match the measured kernels' (doc/serving.md has the grid). */
#define SERVING_ITER_MS 0.25

/* The measured requests per client: the benchmark's first C requests
 * arrive at once (a burst, prefilled in turn), one in SERVING_WAVES of
 * those its TTFT averages.  A free constant, chosen with the other. */
#define SERVING_WAVES 7.0

/* The model_path of a run to perfmod's built-in, or NULL where none is
 * planned (the row is skipped naming why). */
static const struct {
  const char *path, *builtin;
} serving_models[] = {
  { "meta-llama/Llama-3.1-8B-Instruct", "llama3.1-8b" },
  { "meta-llama/Llama-3.1-70B", "llama3.1-70b" },
  { "Qwen/Qwen3-32B", "qwen3-32b" },
  { "Qwen/Qwen3-235B-A22B-FP8", "qwen3-235b-a22b" },
  { "openai/gpt-oss-120b", "gpt-oss-120b" },
  { "deepseek-ai/DeepSeek-V3", "deepseek-v3" },
  { "deepseek-ai/DeepSeek-R1", "deepseek-v3" },   /* R1 is V3's architecture */
};

/* The columns read, in this order. */
enum { C_ID, C_SOURCE, C_BACKEND, C_MODEL, C_MODE, C_ISL, C_OSL, C_GEMM, C_MOE, C_BATCH, C_TP,
       C_PP, C_ADP, C_MOETP, C_MOEEP, C_TTFT, C_TPOT, NCOLS };
static const char *const serving_cols[NCOLS] = {
  "id", "silicon_data_source", "backend", "model_path", "mode", "isl", "osl", "gemm_quant_mode",
  "moe_quant_mode", "batch_size", "tp_size", "pp_size", "attention_dp_size", "moe_tp_size",
  "moe_ep_size", "silicon_ttft_ms", "silicon_tpot_ms"
};

struct serving_run {
  char *id, *backend, *model, *builtin, *gemm;
  char *skip;                   /* why the run is not predicted, or NULL */
  int64_t isl, osl, conc, batch, tp, pp, moe_tp, moe_ep;
  double ttft, tpot;            /* measured, ms */
  long line;
};

/* An optional integer column: empty is def. */
static bool
opt_int (const struct csv_reader *r, int col, const char *name, int64_t def, int64_t *out)
{
  if (r->fields[col][0] == '\0') {
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

/* Read the runs; -1 after a message naming file:line. */
static int
serving_load (const char *path, struct serving_run **out, size_t *nout)
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
  for (int i = 0; i < NCOLS; i++)
    if ((col[i] = csv_column (r.fields, r.nfields, serving_cols[i])) < 0) {
      pm_error ("%s:%ld: no column '%s' in the header", path, r.line, serving_cols[i]);
      csv_close (&r);
      return -1;
    }
  while ((rc = csv_next (&r)) > 0) {
    struct serving_run s;
    int64_t batch, adp;
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
        !opt_int (&r, col[C_BATCH], "batch_size", 0, &batch) ||
        !opt_int (&r, col[C_TP], "tp_size", 1, &s.tp) ||
        !opt_int (&r, col[C_PP], "pp_size", 1, &s.pp) ||
        !opt_int (&r, col[C_ADP], "attention_dp_size", 1, &adp) ||
        !opt_int (&r, col[C_MOETP], "moe_tp_size", 1, &s.moe_tp) ||
        !opt_int (&r, col[C_MOEEP], "moe_ep_size", 1, &s.moe_ep) ||
        !parse_double (r.fields[col[C_TTFT]], &s.ttft) || !(s.ttft > 0) ||
        !parse_double (r.fields[col[C_TPOT]], &s.tpot) || !(s.tpot > 0)) {
      if (s.isl && s.osl && s.tp)        /* csv_int has named the field otherwise */
        pm_error ("%s:%ld: silicon_ttft_ms '%s' and silicon_tpot_ms '%s': expected times above 0",
                  path, r.line, r.fields[col[C_TTFT]], r.fields[col[C_TPOT]]);
      rc = -1;
      break;
    }
    if (s.isl > PM_MAX_SEQ || s.osl > PM_MAX_SEQ || batch > PM_MAX_BATCH || s.tp > PM_MAX_GPUS ||
        s.pp > PM_MAX_STAGES) {
      pm_error ("%s:%ld: isl, osl, batch_size, tp_size or pp_size out of range", path, r.line);
      rc = -1;
      break;
    }
    if (s.pp < 1)
      s.pp = 1;
    if (s.tp < 1)
      s.tp = 1;
    /* The concurrency the benchmark held (silicon_concurrency=N in the
     * source), else the batch size. */
    s.conc = batch;
    s.batch = batch;
    if ((conc = strstr (r.fields[col[C_SOURCE]], "silicon_concurrency=")) != NULL) {
      long long cv = strtoll (conc + 20, &end, 10);
      if (end == conc + 20 || cv < 1 || cv > PM_MAX_BATCH) {
        pm_error ("%s:%ld: silicon_concurrency: expected a positive integer", path, r.line);
        rc = -1;
        break;
      }
      s.conc = cv;
    }

    s.id = xstrdup (r.fields[col[C_ID]]);
    s.backend = xstrdup (r.fields[col[C_BACKEND]]);
    s.model = xstrdup (r.fields[col[C_MODEL]]);
    s.gemm = xstrdup (r.fields[col[C_GEMM]][0] ? r.fields[col[C_GEMM]] : "bf16");
    for (size_t i = 0; i < sizeof serving_models / sizeof serving_models[0]; i++)
      if (strcmp (serving_models[i].path, s.model) == 0)
        s.builtin = xstrdup (serving_models[i].builtin);
    /* What the model cannot express, first reason only. */
    if (s.builtin == NULL)
      s.skip = xasprintf ("no built-in model for %s", s.model);
    else if (strcmp (r.fields[col[C_MODE]], "agg") != 0)
      s.skip = xasprintf ("%s mode (separate prefill and decode workers): not modelled",
                          r.fields[col[C_MODE]]);
    else if (s.conc < 1)
      s.skip = xstrdup ("no batch_size or silicon_concurrency");
    else if (strcmp (s.gemm, "nvfp4") == 0 || strcmp (r.fields[col[C_MOE]], "nvfp4") == 0)
      s.skip = xstrdup ("nvfp4 on H100 (no fp4 matrix units: a weight-only emulation)");
    else if (strcmp (s.gemm, "bf16") && strcmp (s.gemm, "fp8") && strcmp (s.gemm, "fp8_block") &&
             strcmp (s.gemm, "fp8_static"))
      s.skip = xasprintf ("gemm_quant_mode %s", s.gemm);
    else if (adp > 1)
      s.skip = xstrdup ("attention_dp > 1 (attention data-parallel, experts across it)");
    else if (!builtin_exists (s.builtin))
      s.skip = xasprintf ("no built-in model %s", s.builtin);
    v = xrealloc (v, (n + 1) * sizeof *v);
    v[n++] = s;
  }
  csv_close (&r);
  if (rc < 0) {
    for (size_t i = 0; i < n; i++) {
      free (v[i].id); free (v[i].backend); free (v[i].model); free (v[i].builtin);
      free (v[i].gemm); free (v[i].skip);
    }
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

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

/* Median of v[0..n) (sorted in place). */
static double
median (double *v, size_t n)
{
  if (n == 0)
    return NAN;
  qsort (v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The cache of the built-in's runs (made on first use): the chunks of
 * two models of the same shape would share one otherwise. */
static struct dist_cache *
model_cache (struct dist_cache **caches, const char *builtin)
{
  size_t i = 0;
  while (serving_models[i].builtin == NULL || strcmp (serving_models[i].builtin, builtin) != 0)
    i++;
  if (caches[i] == NULL)
    caches[i] = dist_cache_new ();
  return caches[i];
}

/* How the run's engine schedules its requests (doc/serving.md). */
enum sched {
  SCHED_MIXED,                  /* vLLM: prompts join the next iteration, with the decodes */
  SCHED_MIXED_SLOTS,            /* TensorRT-LLM: the same within max_batch_size = C slots */
  SCHED_WAVES                   /* SGLang: prefill batches alone, the decodes paused */
};

static enum sched
run_sched (const struct serving_run *run)
{
  if (strcmp (run->backend, "sglang") == 0)
    return SCHED_WAVES;
  if (strcmp (run->backend, "trtllm") == 0 && run->batch > 0 && run->batch <= run->conc)
    return SCHED_MIXED_SLOTS;
  return SCHED_MIXED;
}

/* One run's predicted TTFT and TPOT with pred: a closed loop of C
 * clients against an engine with inflight batching (doc/serving.md).
 *
 * Steady state (vLLM, TensorRT-LLM): every request's prompt is
 * prefilled once per osl iterations, so an iteration admits a = C / osl
 * prompts on average (Little's law); a share of the iterations is mixed
 * (the prefill of n = ceil(a) prompts, the other requests' decodes
 * joining its GEMMs and adding their attention), the rest decode all C.
 * TPOT is the mean iteration.  A request arrives at a random point of an
 * iteration (half an iteration's wait), then its prompt's mixed
 * iteration(s).  TensorRT-LLM keeps max_batch_size = C slots: the next
 * request, sent when one finishes, waits for the next completion, one
 * C-th of a request's life later (the completions spread over it).
 *
 * Waves (SGLang): prefill batches run alone, so the C requests of a wave
 * stay together: their prompts go in ceil(C / k) batches of k prompts
 * (or of a prompt's chunks), a request waits for the mean half of them
 * (TTFT), and the
 * decodes of those prefilled first pause for the rest (TPOT).
 *
 * Returns 1 with *why set where perfmod refuses the run. */
static int
serving_run_predict (struct plugin_set *set, struct plugin *pred, const struct model_cfg *m,
                     const struct perfmod_gpu *gpu, const struct precision *prec,
                     const struct serving_run *run, struct dist_cache *cache, double *ttft,
                     double *tpot, char **why)
{
  struct strategy s;
  struct dist_options o;
  struct dist_result pre, gen, mixdec, wave;
  int64_t c = run->conc, isl = run->isl, osl = run->osl, n, k, chunks = 1, nb;
  int64_t kv_len = isl + osl / 2;
  enum sched sch = run_sched (run);
  double a, share, mix, it, first, dec, wavems, ovh = SERVING_ITER_MS;
  char msg[512];

  strategy_init (&s);
  s.tp = (int) run->tp;
  s.pp = (int) run->pp;
  s.ep = 1;
  /* the experts over moe_ep ranks within the tp ones, each expert's width
   * over moe_tp (etp); moe_ep 1: their width over tp */
  if (m->experts > 0 && run->moe_ep > 1) {
    s.ep = (int) run->moe_ep;
    s.etp = (int) run->moe_tp;
  }
  memset (&o, 0, sizeof o);
  o.s = &s;
  o.prec = prec;
  o.flash = true;
  o.engine = true;
  o.fusion = true;
  o.seq = isl;
  o.gen = osl;
  o.gpus_per_node = gpu->gpus_per_node;
  o.cache = cache;
  if (isl > SERVING_CTX_TOKENS) {        /* chunked: one prompt over several iterations */
    chunks = (isl + SERVING_CTX_TOKENS - 1) / SERVING_CTX_TOKENS;
    o.seq = (isl + chunks - 1) / chunks;
    k = 1;
  }
  else
    k = SERVING_CTX_TOKENS / isl;        /* prompts one iteration can prefill */
  if (k > c)
    k = c;
  /* steady state: prompts per iteration, and per mixed iteration */
  a = (double) c / (double) osl;
  n = (int64_t) ceil (a * (double) chunks - 1e-9);
  if (n < 1)
    n = 1;
  if (chunks > 1)
    n = 1;
  else if (n > k)
    n = k;
  if (c > 1 && n > c - 1)
    n = c - 1;
  nb = (c + k - 1) / k * chunks;         /* SGLang's prefill batches of k prompts (or chunks) */

  pm_error_capture (msg, sizeof msg);
  msg[0] = '\0';
  memset (&mixdec, 0, sizeof mixdec);
  memset (&wave, 0, sizeof wave);
  o.batch = n;
  int rc = dist_check (m, &o);
  if (rc == 0)
    rc = serving_predict (set, pred, m, gpu, &o, 0, &pre);
  o.batch = c;
  if (rc == 0)
    rc = serving_predict (set, pred, m, gpu, &o, kv_len, &gen);
  o.batch = c - n;
  if (rc == 0 && c > n)
    rc = serving_predict (set, pred, m, gpu, &o, kv_len, &mixdec);
  o.batch = k;
  if (rc == 0)
    rc = serving_predict (set, pred, m, gpu, &o, 0, &wave);
  pm_error_capture (NULL, 0);
  if (rc < 0) {
    *why = xasprintf ("refused: %s", msg[0] ? msg : "(no message)");
    return 1;
  }
  dec = gen.pipeline_ms + ovh;          /* a decode step of all C at the mean cache */
  if (c == 1) {                          /* one request: nothing to wait for */
    *ttft = (pre.pipeline_ms + ovh) * (double) chunks;
    *tpot = dec;
    return 0;
  }
  wavems = wave.pipeline_ms * (double) chunks + ovh;   /* one prefill batch of k, alone */
  first = wavems * (double) (nb + 1) / 2;              /* the mean TTFT of a burst of C */
  if (sch == SCHED_WAVES) {
    *ttft = first;
    *tpot = dec + wavems * (double) (nb - 1) / 2 / (double) (osl > 1 ? osl - 1 : 1);
    return 0;
  }
  /* the prompts' prefill, the decoding requests' attention over their caches */
  mix = pre.pipeline_ms + mixdec.attn_ms + ovh;
  share = a * (double) chunks / (double) n;      /* of the iterations, mixed */
  if (share > 1)
    share = 1;
  it = share * mix + (1 - share) * dec;
  *tpot = it;
  *ttft = it / 2 + mix * (double) chunks;
  if (sch == SCHED_MIXED_SLOTS)
    /* W = (TTFT0 + W + (osl - 1) TPOT) / C: a request's life, the wait
     * included, over the C completions it spans */
    *ttft += (*ttft + (double) (osl - 1) * *tpot) / (double) (c - 1);
  /* the first C requests arrived at once: their mean is the burst's */
  *ttft = ((SERVING_WAVES - 1) * *ttft + first) / SERVING_WAVES;
  return 0;
}

struct tally {
  const char *model;            /* NULL: every model */
  double *ttft, *tpot;
  size_t n;
};

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

/* Per predictor: predicted / measured ratios of each half, TTFT and TPOT. */
struct ratios {
  double *v[2][2];
  size_t n[2];
};

/* The median |error| (%) of half h's time k with its ratios scaled by f. */
static double
ratios_error (const struct ratios *r, int h, int k, double f)
{
  double *b = xcalloc (r->n[h] + 1, sizeof *b), e;
  for (size_t i = 0; i < r->n[h]; i++)
    b[i] = fabs (r->v[h][k][i] * f - 1) * 100;
  e = median (b, r->n[h]);
  free (b);
  return e;
}

static void
ratios_add (struct ratios *r, int half, double rt, double rp)
{
  for (int k = 0; k < 2; k++)
    r->v[half][k] = xrealloc (r->v[half][k], (r->n[half] + 1) * sizeof (double));
  r->v[half][0][r->n[half]] = rt;
  r->v[half][1][r->n[half]] = rp;
  r->n[half]++;
}

static void
tally_add (struct tally *t, double et, double ep)
{
  t->ttft = xrealloc (t->ttft, (t->n + 1) * sizeof *t->ttft);
  t->tpot = xrealloc (t->tpot, (t->n + 1) * sizeof *t->tpot);
  t->ttft[t->n] = et;
  t->tpot[t->n] = ep;
  t->n++;
}

static double
mean (const double *v, size_t n)
{
  double s = 0;
  for (size_t i = 0; i < n; i++)
    s += v[i];
  return n ? s / (double) n : NAN;
}

int
reproduce_serving (struct plugin_set *set, const struct gpu_db *gpus,
                   const struct reproduce_options *o)
{
  struct serving_run *runs;
  size_t nruns, npred = strv_len (o->predictors), nt = 0;
  bool csv = strcmp (o->format, "csv") == 0;
  const struct gpu_entry *ge = gpu_db_find (gpus, "h100");
  struct plugin **pls;
  struct tally *t = NULL;       /* per predictor: [0] all models, then one per model */
  size_t *ntal;
  char **reasons = NULL;
  size_t *rcount = NULL, nreasons = 0, skipped = 0;
  /* a cache per built-in: a chunk's key holds the run's shape, not the model */
  struct dist_cache *caches[sizeof serving_models / sizeof serving_models[0]] = { NULL };
  struct ratios *rat;
  int rc = 0;

  if (ge == NULL) {
    pm_error ("no gpus.d section for h100 (the runs' H100 SXM)");
    return EXIT_USAGE;
  }
  if (serving_load (o->serving, &runs, &nruns) < 0)
    return EXIT_USAGE;
  rat = xcalloc (npred, sizeof *rat);
  pls = xcalloc (npred, sizeof *pls);
  for (size_t p = 0; p < npred; p++)
    if ((pls[p] = predictor_find (set, o->predictors[p])) == NULL) {
      rc = EXIT_USAGE;
      goto out;
    }
  t = xcalloc (npred * (nruns + 1), sizeof *t);
  ntal = xcalloc (npred, sizeof *ntal);
  for (size_t p = 0; p < npred; p++)
    ntal[p] = 1;
  if (csv)
    fprintf (o->out, "table,id,model,backend,gemm,isl,osl,concurrency,tp,pp,predictor,"
             "measured_ttft_ms,predicted_ttft_ms,ttft_error_pct,measured_tpot_ms,"
             "predicted_tpot_ms,tpot_error_pct,skipped\n");
  else
    fprintf (o->out, "%-13s %-7s %-9s %5s %5s %5s %3s %3s %-9s %11s %11s %7s %9s %9s %7s\n",
             "model", "backend", "gemm", "isl", "osl", "conc", "tp", "pp", "predictor",
             "ttft_ms", "pred_ttft", "err_%", "tpot_ms", "pred_tpot", "err_%");
  for (size_t i = 0; i < nruns; i++) {
    struct serving_run *r = &runs[i];
    struct model_cfg m;
    bool loaded = false;
    if (r->skip == NULL) {
      char msg[512] = "";
      pm_error_capture (msg, sizeof msg);
      loaded = model_cfg_builtin (&m, r->builtin) == 0;
      pm_error_capture (NULL, 0);
      if (!loaded)
        r->skip = xasprintf ("built-in %s refused: %s", r->builtin, msg);
      else if (m.experts > 0 && r->moe_ep > 1 && r->moe_ep * r->moe_tp != r->tp)
        r->skip = xasprintf ("moe_ep=%lld x moe_tp=%lld is not tp=%lld: not modelled",
                             (long long) r->moe_ep, (long long) r->moe_tp, (long long) r->tp);
    }
    for (size_t p = 0; p < npred && r->skip == NULL; p++) {
      double ttft = 0, tpot = 0, et, ep;
      char *why = NULL;
      const struct precision *prec = precision_infer (strcmp (r->gemm, "bf16") == 0
                                                      ? PERFMOD_DTYPE_BF16 : PERFMOD_DTYPE_FP8);
      int k = serving_run_predict (set, pls[p], &m, &ge->gpu, prec, r,
                                   model_cache (caches, r->builtin), &ttft, &tpot, &why);
      if (k > 0) {
        r->skip = why;
        break;
      }
      et = fabs (ttft - r->ttft) / r->ttft * 100;
      ep = fabs (tpot - r->tpot) / r->tpot * 100;
      struct tally *row = &t[p * (nruns + 1)];
      tally_add (&row[0], et, ep);
      ratios_add (&rat[p], run_half (r->id), ttft / r->ttft, tpot / r->tpot);
      size_t j;
      for (j = 1; j < ntal[p] && strcmp (row[j].model, r->builtin) != 0; j++)
        ;
      if (j == ntal[p]) {
        row[j].model = r->builtin;
        ntal[p]++;
      }
      tally_add (&row[j], et, ep);
      if (csv)
        fprintf (o->out, "serving,%s,%s,%s,%s,%lld,%lld,%lld,%lld,%lld,%s,%.6g,%.6g,%.6g,%.6g,"
                 "%.6g,%.6g,\n", r->id, r->builtin, r->backend, r->gemm, (long long) r->isl,
                 (long long) r->osl, (long long) r->conc, (long long) r->tp, (long long) r->pp,
                 o->predictors[p], r->ttft, ttft, et, r->tpot, tpot, ep);
      else
        fprintf (o->out, "%-13s %-7s %-9s %5lld %5lld %5lld %3lld %3lld %-9s %11.1f %11.1f "
                 "%7.1f %9.2f %9.2f %7.1f\n", r->builtin, r->backend, r->gemm,
                 (long long) r->isl, (long long) r->osl, (long long) r->conc, (long long) r->tp,
                 (long long) r->pp, o->predictors[p], r->ttft, ttft, et, r->tpot, tpot, ep);
    }
    if (loaded)
      model_cfg_free (&m);
    if (r->skip) {
      size_t j;
      skipped++;
      if (csv) {               /* listed, the reason quoted (RFC 4180) */
        fprintf (o->out, "serving,%s,%s,%s,%s,%lld,%lld,%lld,%lld,%lld,,%.6g,,,%.6g,,,\"", r->id,
                 r->builtin ? r->builtin : "", r->backend, r->gemm, (long long) r->isl,
                 (long long) r->osl, (long long) r->conc, (long long) r->tp, (long long) r->pp,
                 r->ttft, r->tpot);
        for (const char *q = r->skip; *q; q++)
          fprintf (o->out, *q == '"' ? "\"\"" : "%c", *q);
        fputs ("\"\n", o->out);
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
    nt = t[0].n;
    fprintf (sum, "\n%s: %zu runs, %zu predicted, %zu skipped\n", o->serving, nruns, nt,
             skipped);
    fprintf (sum, "%-10s %-15s %5s %14s %12s %14s %12s\n", "predictor", "model", "runs",
             "ttft_median_%", "ttft_mean_%", "tpot_median_%", "tpot_mean_%");
    for (size_t p = 0; p < npred; p++)
      for (size_t j = 0; j < ntal[p]; j++) {
        struct tally *x = &t[p * (nruns + 1) + j];
        double mt = mean (x->ttft, x->n), mp = mean (x->tpot, x->n);
        fprintf (sum, "%-10s %-15s %5zu %14.1f %12.1f %14.1f %12.1f\n", o->predictors[p],
                 x->model ? x->model : "(all)", x->n, median (x->ttft, x->n), mt,
                 median (x->tpot, x->n), mp);
      }
    /* A diagnostic, not applied to the table: the one factor per time
     * that would centre each predictor on half A, and half B's errors
     * with it. */
    fprintf (sum, "\nscale check (not applied above): per predictor the factors f = 1 / median "
             "(predicted / measured) on half A (FNV-1a of id even), half B's median |error| "
             "with them\n%-10s %5s %5s %9s %9s %12s %12s\n", "predictor", "A", "B", "f_ttft",
             "f_tpot", "B_ttft_%", "B_tpot_%");
    for (size_t p = 0; p < npred; p++) {
      double f[2], e[2];
      for (int k = 0; k < 2; k++) {
        f[k] = 1 / median (rat[p].v[0][k], rat[p].n[0]);
        e[k] = ratios_error (&rat[p], 1, k, f[k]);
      }
      fprintf (sum, "%-10s %5zu %5zu %9.3f %9.3f %12.1f %12.1f\n", o->predictors[p], rat[p].n[0],
               rat[p].n[1], f[0], f[1], e[0], e[1]);
    }
    /* The same runs' median |error| by half, nothing scaled: the engine's
     * free constants (SERVING_ITER_MS, SERVING_WAVES) were chosen on A. */
    fprintf (sum, "\nby half (the engine's constants chosen on A): median |error| %%\n"
             "%-10s %5s %9s %9s %5s %9s %9s\n", "predictor", "A", "A_ttft", "A_tpot", "B",
             "B_ttft", "B_tpot");
    for (size_t p = 0; p < npred; p++) {
      double e[2][2];
      for (int h = 0; h < 2; h++)
        for (int k = 0; k < 2; k++)
          e[h][k] = ratios_error (&rat[p], h, k, 1);
      fprintf (sum, "%-10s %5zu %9.1f %9.1f %5zu %9.1f %9.1f\n", o->predictors[p], rat[p].n[0],
               e[0][0], e[0][1], rat[p].n[1], e[1][0], e[1][1]);
    }
    if (nreasons) {
      fprintf (sum, "\nskipped, by reason:\n");
      for (size_t j = 0; j < nreasons; j++)
        fprintf (sum, "%5zu  %s\n", rcount[j], reasons[j]);
    }
    fprintf (sum, "(|error| of the predicted against the measured time to first token and time "
             "per output token; the model of the engine: doc/serving.md)\n");
  }
  for (size_t p = 0; p < npred; p++)
    for (size_t j = 0; j < nruns + 1; j++) {
      free (t[p * (nruns + 1) + j].ttft);
      free (t[p * (nruns + 1) + j].tpot);
    }
  free (ntal);
  for (size_t p = 0; p < npred; p++)
    for (int h = 0; h < 2; h++)
      for (int k = 0; k < 2; k++)
        free (rat[p].v[h][k]);
out:
  free (rat);
  free (t);
  free (reasons);
  free (rcount);
  free (pls);
  for (size_t i = 0; i < nruns; i++) {
    free (runs[i].id); free (runs[i].backend); free (runs[i].model); free (runs[i].builtin);
    free (runs[i].gemm); free (runs[i].skip);
  }
  free (runs);
  for (size_t i = 0; i < sizeof caches / sizeof caches[0]; i++)
    dist_cache_free (caches[i]);
  return rc;
}
