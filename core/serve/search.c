/* search.c: perfmod search --serve: every serving deployment of a model on a number of GPUs (a replica's tp, pp and experts, the replicas, the batch limit; disaggregated prefill and decode pools and their split) simulated at its batch, the Pareto frontier of output tokens/s per GPU against tokens/s per user, the best under the latency targets, each with its engine's launch command. */
#include <config.h>

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "internal.h"

/* The batches a replica is searched at: the engine's limit and its
 * clients alike (a benchmark's concurrency per replica). */
static const int64_t search_batches[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256, 512 };
#define NBATCHES (sizeof search_batches / sizeof search_batches[0])
/* Requests a point simulates per client: the burst and the steady state
 * after it, fewer than perfmod serve's 10 (a search ranks; perfmod serve
 * with the point's command gives the full simulation). */
#define SEARCH_REQUESTS_PER_CLIENT 4
#define SEARCH_MIN_REQUESTS 16

/* One deployment searched: an aggregated layout and its replicas, or a
 * prefill and a decode layout and their workers. */
struct task {
  struct strategy s, d;  /* the replica (aggregated) or the prefill one; the decode one */
  int replicas, dworkers;
  bool disagg;
};

struct shared {
  const struct serve_search_opts *o;
  struct plugin_set *set;
  const struct gpu_db *gpus;
  const struct task *tasks;
  size_t ntasks, next;
  pthread_mutex_t lock;
  struct serve_point *pts;
  size_t npts, cap;
  uint64_t configurations, refused, pruned;
  int failed;            /* a predictor failed: the search fails */
  char err[512];
};

/* A thread's replicas, each layout opened once (its memoised iteration
 * costs then serve every deployment and batch that has it). */
struct replicas {
  struct strategy key[64];
  struct serve_replica r[64];
  int ok[64];                    /* 1 opened, 0 the model cannot take it */
  size_t n;
  struct dist_cache *chunks;
};

static void
replicas_close (struct replicas *rs)
{
  for (size_t i = 0; i < rs->n; i++)
    if (rs->ok[i])
      serve_replica_close (&rs->r[i]);
  dist_cache_free (rs->chunks);
}

/* The replica of layout s, NULL where the model cannot take it. */
static const struct serve_replica *
replica_of (struct replicas *rs, const struct serve_base *b, const struct strategy *s,
            int64_t tokens)
{
  size_t i;
  char msg[512];
  for (i = 0; i < rs->n; i++)
    if (rs->key[i].tp == s->tp && rs->key[i].pp == s->pp && rs->key[i].ep == s->ep &&
        rs->key[i].etp == s->etp && rs->key[i].dispatcher == s->dispatcher)
      return rs->ok[i] ? &rs->r[i] : NULL;
  if (rs->n == sizeof rs->key / sizeof rs->key[0])
    return NULL;
  rs->key[i] = *s;
  pm_error_capture (msg, sizeof msg);
  rs->ok[i] = serve_replica_open (&rs->r[i], b, s, 0, 0, tokens, rs->chunks, "layout") == 0;
  pm_error_capture (NULL, 0);
  rs->n++;
  return rs->ok[i] ? &rs->r[i] : NULL;
}

static void
spec_of (const struct strategy *s, bool moe, char *buf, size_t n)
{
  if (moe && s->etp > 0 && s->dispatcher_set)
    snprintf (buf, n, "tp=%d,ep=%d,etp=%d,dispatcher=%s", s->tp, s->ep, s->etp,
              dispatcher_name (s->dispatcher));
  else if (moe && s->etp > 0)
    snprintf (buf, n, "tp=%d,ep=%d,etp=%d", s->tp, s->ep, s->etp);
  else if (s->pp > 1)
    snprintf (buf, n, "tp=%d,pp=%d", s->tp, s->pp);
  else
    snprintf (buf, n, "tp=%d", s->tp);
}

/* The Hugging Face model id of a config: its _name_or_path, or the first
 * word of its _source (the built-ins say whose config they are), else
 * perfmod's name. */
static void
hf_id (const struct model_cfg *m, char *buf, size_t n)
{
  json_error_t err;
  json_t *root = m->path ? json_load_file (m->path, 0, &err) : NULL;
  const char *id = NULL;
  if (root) {
    id = json_string_value (json_object_get (root, "_name_or_path"));
    if (id == NULL || *id == '\0')
      id = json_string_value (json_object_get (root, "_source"));
  }
  snprintf (buf, n, "%s", id && *id ? id : m->name);
  for (char *p = buf; *p; p++)
    if (*p == ' ') {
      *p = '\0';
      break;
    }
  json_decref (root);
}

/* Append to buf (n bytes) what fmt says. */
static void __attribute__ ((format (printf, 3, 4)))
append (char *buf, size_t n, const char *fmt, ...)
{
  size_t l = strlen (buf);
  va_list ap;
  if (l + 1 >= n)
    return;
  va_start (ap, fmt);
  vsnprintf (buf + l, n - l, fmt, ap);
  va_end (ap);
}

/* The engine's own launch command for replicas of s (role: NULL
 * aggregated, else "prefill" or "decode"), with its documented flags. */
static void
launch_of (const struct serve_base *b, const struct strategy *s, int replicas, int64_t batch,
           int64_t max_tokens, const char *role, char *buf, size_t n)
{
  char id[160];
  /* fp8 quantises a 16-bit checkpoint as it loads; nvfp4 and fp8_block
   * are checkpoints quantised ahead (ModelOpt's NVFP4, DeepSeek-V3's
   * blocks), which the engines read from the checkpoint's config */
  bool fp8 = b->pr->gemm == PERFMOD_DTYPE_FP8, fp4 = b->pr->gemm == PERFMOD_DTYPE_NVFP4;
  bool kv8 = b->kv_scale < 1;
  /* attention data parallelism: the replicas one engine instance whose
   * experts span them; else each replica an instance of its own (vLLM's
   * data-parallel replicas of an MoE model would share their experts) */
  bool span = strategy_attention_dp (s, replicas), moe = b->m.experts > 0;
  int ep = s->etp > 0 ? s->ep : 1;
  hf_id (&b->m, id, sizeof id);
  buf[0] = '\0';
  switch (b->e->id) {
  case ENGINE_SGLANG:
    /* under --enable-dp-attention --tp-size counts every replica's GPUs, and
     * the request and chunk limits are the instance's, split over its
     * data-parallel workers */
    append (buf, n, "python3 -m sglang.launch_server --model-path %s --tp-size %d", id,
            span ? s->tp * replicas : s->tp);
    if (s->pp > 1)
      append (buf, n, " --pp-size %d", s->pp);
    if (span)
      append (buf, n, " --dp-size %d --enable-dp-attention", replicas);
    else if (replicas > 1 && role == NULL)
      append (buf, n, " --dp-size %d", replicas);
    if (ep > 1)
      append (buf, n, " --ep-size %d", ep);
    if (s->dispatcher == PERFMOD_DISPATCH_FLEX)
      append (buf, n, " --moe-a2a-backend deepep");
    append (buf, n, " --max-running-requests %lld --chunked-prefill-size %lld",
            (long long) batch * (span ? replicas : 1),
            (long long) max_tokens * (span ? replicas : 1));
    if (fp8)
      append (buf, n, " --quantization fp8");
    if (fp4)
      append (buf, n, " --quantization modelopt_fp4");
    if (kv8)
      append (buf, n, " --kv-cache-dtype fp8_e4m3");
    if (role)
      append (buf, n, " --disaggregation-mode %s", role);
    break;
  case ENGINE_TRTLLM:
    append (buf, n, "trtllm-serve %s --tp_size %d --pp_size %d --ep_size %d --max_batch_size "
            "%lld --max_num_tokens %lld", id, span ? s->tp * replicas : s->tp, s->pp, ep,
            (long long) batch, (long long) max_tokens);
    if (kv8)
      append (buf, n, " (kv_cache_config: dtype fp8)");
    if (span)
      append (buf, n, " (enable_attention_dp: true)");
    if (role)
      append (buf, n, " (a %s server of trtllm-serve disaggregated)",
              strcmp (role, "prefill") == 0 ? "context" : "generation");
    else if (replicas > 1 && !span)
      append (buf, n, " (x %d instances behind a router)", replicas);
    break;
  case ENGINE_VLLM:
  default:
    append (buf, n, "vllm serve %s --tensor-parallel-size %d --pipeline-parallel-size %d", id,
            s->tp, s->pp);
    if (replicas > 1 && role == NULL && (span || !moe))
      append (buf, n, " --data-parallel-size %d", replicas);
    if (ep > 1)
      append (buf, n, " --enable-expert-parallel");
    append (buf, n, " --max-num-seqs %lld --max-num-batched-tokens %lld", (long long) batch,
            (long long) max_tokens);
    if (fp8)
      append (buf, n, " --quantization fp8");
    if (fp4)
      append (buf, n, " --quantization modelopt_fp4");
    if (kv8)
      append (buf, n, " --kv-cache-dtype fp8");
    if (role)
      append (buf, n, " --kv-transfer-config '{\"kv_connector\":\"NixlConnector\","
              "\"kv_role\":\"kv_both\"}'");
    else if (replicas > 1 && moe && !span)
      append (buf, n, " (x %d instances behind a router)", replicas);
    break;
  }
}

static void
point_add (struct shared *sh, const struct serve_point *p)
{
  pthread_mutex_lock (&sh->lock);
  if (sh->npts == sh->cap) {
    sh->cap = sh->cap ? 2 * sh->cap : 256;
    sh->pts = xrealloc (sh->pts, sh->cap * sizeof *sh->pts);
  }
  sh->pts[sh->npts++] = *p;
  pthread_mutex_unlock (&sh->lock);
}

/* Simulate one deployment at every batch; 0, or -1 when a predictor
 * failed (said in sh->err). */
static int
run_task (struct shared *sh, const struct serve_base *b, const struct task *t,
          struct replicas *rs)
{
  const struct serve_search_opts *o = sh->o;
  const struct serve_replica *r[2];
  int64_t tokens = o->isl + o->osl;
  char spec[2][64];
  bool moe = b->m.experts > 0;
  int rc = 0;
  char msg[512] = "";

  r[0] = replica_of (rs, b, &t->s, tokens);
  r[1] = t->disagg ? replica_of (rs, b, &t->d, tokens) : r[0];
  if (r[0] == NULL || r[1] == NULL) {
    pthread_mutex_lock (&sh->lock);
    sh->refused += NBATCHES;
    pthread_mutex_unlock (&sh->lock);
    return 0;                  /* a layout the model cannot take: pruned */
  }
  spec_of (&t->s, moe, spec[0], sizeof spec[0]);
  if (t->disagg)
    spec_of (&t->d, moe, spec[1], sizeof spec[1]);
  double last_tps = 0;
  for (size_t i = 0; i < NBATCHES && rc == 0; i++) {
    struct serve_sim_input in;
    struct serve_metrics out;
    struct serve_point p;
    int64_t bsz = search_batches[i];
    const struct serve_replica *dec = r[1];
    bool fits = r[0]->kv_tokens > tokens && dec->kv_tokens > tokens;
    memset (&p, 0, sizeof p);
    memset (&in, 0, sizeof in);
    p.batch = bsz;
    /* aggregated replicas are alike and evenly loaded: one of them at
     * its batch stands for all; a disaggregated deployment as a whole */
    p.concurrency = t->disagg ? bsz * t->dworkers : bsz * t->s.dp;
    p.gpus = t->disagg ? (int64_t) r[0]->gpus * t->replicas + (int64_t) r[1]->gpus * t->dworkers
           : (int64_t) r[0]->gpus * t->s.dp;
    if (t->disagg)
      snprintf (p.deploy, sizeof p.deploy, "prefill %d x {%s} + decode %d x {%s}", t->replicas,
                spec[0], t->dworkers, spec[1]);
    else
      snprintf (p.deploy, sizeof p.deploy, "%s%s%d", spec[0], ",dp=", t->s.dp);
    pthread_mutex_lock (&sh->lock);
    sh->configurations++;
    pthread_mutex_unlock (&sh->lock);
    if (!fits || (bsz > dec->max_seqs && b->e->id != ENGINE_VLLM && bsz > 512)) {
      p.oom = true;
      point_add (sh, &p);
      continue;
    }
    if (serve_input (b, r[0], t->disagg ? t->replicas : 1, t->disagg ? r[1] : NULL,
                     t->dworkers, &in) < 0) {
      rc = -1;
      break;
    }
    in.pool.max_seqs = t->disagg ? in.pool.max_seqs : bsz;
    /* one replica (a worker) stands for its attention-DP replicas too,
     * each sending as many tokens as it */
    in.pool.lockstep = in.decode.lockstep = 1;
    if (t->disagg)
      in.decode.max_seqs = bsz;
    in.load.kind = LOAD_CLOSED;
    in.load.concurrency = t->disagg ? p.concurrency : bsz;
    in.load.isl = o->isl;
    in.load.osl = o->osl;
    in.load.seed = 1;
    in.load.requests = in.load.concurrency * SEARCH_REQUESTS_PER_CLIENT;
    if (in.load.requests < SEARCH_MIN_REQUESTS)
      in.load.requests = SEARCH_MIN_REQUESTS;
    msg[0] = '\0';
    pm_error_capture (msg, sizeof msg);
    int k = serve_simulate (&in, &out);
    pm_error_capture (NULL, 0);
    if (k < 0) {
      if (!out.stuck) {
        pthread_mutex_lock (&sh->lock);
        snprintf (sh->err, sizeof sh->err, "%s", msg);
        pthread_mutex_unlock (&sh->lock);
        rc = -1;
        break;
      }
      p.oom = true;
      point_add (sh, &p);
      continue;
    }
    p.ttft = out.ttft.mean;
    p.tpot = out.tpot.mean;
    p.tps_user = out.tpot.mean > 0 ? 1e3 / out.tpot.mean : 0;
    /* a closed loop's throughput (Little's law: its clients over a
     * request's time, osl tokens each), one replica simulated standing
     * for its deployment's */
    p.tps_gpu = out.e2e.mean > 0 ? (double) in.load.concurrency / (out.e2e.mean / 1e3)
                                   * (double) o->osl * (t->disagg ? 1 : t->s.dp)
                                   / (double) p.gpus : 0;
    launch_of (b, t->disagg ? &t->d : &t->s, t->disagg ? t->dworkers : t->s.dp, bsz,
               dec->max_tokens, t->disagg ? "decode" : NULL, p.launch, sizeof p.launch);
    if (t->disagg)
      launch_of (b, &t->s, t->replicas, r[0]->max_seqs, r[0]->max_tokens, "prefill",
                 p.launch_prefill, sizeof p.launch_prefill);
    /* the perfmod serve command of the point */
    if (t->disagg)
      snprintf (p.command, sizeof p.command, "--prefill %s --prefill-workers %d --decode %s "
                "--decode-workers %d --max-batch %lld --concurrency %lld", spec[0], t->replicas,
                spec[1], t->dworkers, (long long) bsz, (long long) p.concurrency);
    else
      snprintf (p.command, sizeof p.command, "--strategy %s,dp=%d --max-batch %lld "
                "--concurrency %lld", spec[0], t->s.dp, (long long) bsz,
                (long long) p.concurrency);
    point_add (sh, &p);
    /* larger batches only wait longer once the throughput no longer grows
     * (saturated) or the first token takes a minute: not simulated */
    if (p.tps_gpu < 1.03 * last_tps || p.ttft > 60e3) {
      pthread_mutex_lock (&sh->lock);
      sh->pruned += NBATCHES - i - 1;
      pthread_mutex_unlock (&sh->lock);
      break;
    }
    last_tps = p.tps_gpu;
  }
  return rc;
}

/* The search's base: its model, GPU, engine and the router it was given. */
static int
search_base_open (struct serve_base *b, struct plugin_set *set, const struct gpu_db *gpus,
                  const struct serve_search_opts *o)
{
  if (serve_base_open (b, set, gpus, o->model, o->gpu, o->engine, o->dtype, o->kv_dtype,
                       o->predictor, o->gpus_per_node) < 0)
    return -1;
  b->routing = o->routing;
  return 0;
}

static void *
worker (void *arg)
{
  struct shared *sh = arg;
  struct serve_base b;
  struct replicas rs;
  char msg[512] = "";
  memset (&rs, 0, sizeof rs);
  pm_error_capture (msg, sizeof msg);
  if (search_base_open (&b, sh->set, sh->gpus, sh->o) < 0) {
    pm_error_capture (NULL, 0);
    pthread_mutex_lock (&sh->lock);
    sh->failed = 1;
    snprintf (sh->err, sizeof sh->err, "%s", msg);
    pthread_mutex_unlock (&sh->lock);
    return NULL;
  }
  rs.chunks = dist_cache_new ();
  pm_error_capture (NULL, 0);
  for (;;) {
    size_t i;
    pthread_mutex_lock (&sh->lock);
    i = sh->failed ? sh->ntasks : sh->next++;
    pthread_mutex_unlock (&sh->lock);
    if (i >= sh->ntasks)
      break;
    if (run_task (sh, &b, &sh->tasks[i], &rs) < 0) {
      pthread_mutex_lock (&sh->lock);
      sh->failed = 1;
      pthread_mutex_unlock (&sh->lock);
      break;
    }
  }
  replicas_close (&rs);
  serve_base_close (&b);
  return NULL;
}

/* The layouts of a replica on g GPUs at most: tp powers of two to
 * max_tp, pp 1 or 2 (a pipeline's bubble rarely pays in serving), and for
 * a model with `experts` the experts' ranks as tp's (ep = tp, etp = 1)
 * beside their width over tp, and attention data parallelism: the g / tp
 * replicas' experts over all g GPUs (ep = g, etp = 1) where ep divides
 * the experts and the engine runs it (TensorRT-LLM's attention DP is one
 * GPU a replica), its tokens gathered (the engines' default) or, with
 * SGLang, dispatched by DeepEP's kernels (dispatcher=flex: its normal
 * ones in a prefill, the low-latency ones in a decode step, as SGLang's
 * --deepep-mode auto runs them; vLLM's backends take one kind for both),
 * or, with TensorRT-LLM, every expert sliced over the g GPUs (ep = 1,
 * etp = g: its moe_tp under attention DP). */
static size_t
layouts (const struct serve_search_opts *o, int64_t experts, int engine, int64_t g,
         struct strategy *out, size_t cap)
{
  size_t n = 0;
  for (int tp = 1; tp <= o->max_tp && tp <= g; tp *= 2)
    for (int pp = 1; pp <= 2 && (int64_t) tp * pp <= g; pp++)
      for (int e = 0; e < (experts > 0 && pp == 1 ? 5 : 1) && n < cap; e++) {
        struct strategy s;
        strategy_init (&s);
        s.tp = tp;
        s.pp = pp;
        if (e == 1 && tp == 1)
          continue;
        if (e >= 2 && (g == tp || g % tp != 0 || (e < 4 && experts % g != 0) || g > INT32_MAX ||
                       (engine == ENGINE_TRTLLM && tp > 1) || (e == 3 && engine != ENGINE_SGLANG)
                       || (e == 4 && engine != ENGINE_TRTLLM)))
          continue;
        if (e == 4) {          /* TensorRT-LLM's attention DP with moe_tp: every expert
                                  sliced over all the GPUs (ep x etp = tp x dp) */
          s.ep = 1;
          s.etp = (int) g;
        }
        else if (e) {
          s.ep = e == 1 ? tp : (int) g;
          s.etp = 1;
        }
        if (e == 3) {
          s.dispatcher = PERFMOD_DISPATCH_FLEX;
          s.dispatcher_set = true;
        }
        out[n++] = s;
      }
  return n;
}

/* A layout whose experts span more ranks than its tp: the search's
 * attention data parallelism over every GPU. */
static bool
spans_gpus (const struct strategy *s)
{
  return (int64_t) s->ep * (s->etp > 0 ? s->etp : 1) > s->tp;
}

static int
cmp_user (const void *a, const void *b)
{
  const struct serve_point *x = a, *y = b;
  if (x->oom != y->oom)
    return x->oom ? 1 : -1;
  if (x->tps_user != y->tps_user)
    return x->tps_user > y->tps_user ? -1 : 1;
  return x->tps_gpu > y->tps_gpu ? -1 : x->tps_gpu < y->tps_gpu;
}

int
serve_search (struct plugin_set *set, const struct gpu_db *gpus,
              const struct serve_search_opts *o, struct serve_search_result *res)
{
  struct shared sh;
  struct serve_base b;
  struct strategy lay[256];
  struct task *tasks = NULL;
  size_t nlay, ntasks = 0, cap = 0;
  pthread_t *th;
  int jobs = o->jobs > 0 ? o->jobs : 1;
  double t0 = pm_now (), best = -1;
  int64_t experts;
  int engine;

  memset (res, 0, sizeof *res);
  if (o->gpus < 1 || o->isl < 1 || o->osl < 1) {
    pm_error ("search --serve needs --gpus, --isl and --osl");
    return SEARCH_BAD_REQUEST;
  }
  if (search_base_open (&b, set, gpus, o) < 0)
    return SEARCH_BAD_REQUEST;
  experts = b.m.experts;
  engine = b.e->id;
  serve_base_close (&b);
  nlay = layouts (o, experts, engine, o->gpus, lay, sizeof lay / sizeof lay[0]);
  for (size_t i = 0; i < nlay; i++) {
    int64_t g = (int64_t) lay[i].tp * lay[i].pp;
    if (o->gpus % g == 0) {
      if (ntasks == cap)
        tasks = xrealloc (tasks, (cap = cap ? 2 * cap : 64) * sizeof *tasks);
      memset (&tasks[ntasks], 0, sizeof *tasks);
      tasks[ntasks].s = lay[i];
      tasks[ntasks].s.dp = (int) (o->gpus / g);
      tasks[ntasks].replicas = tasks[ntasks].s.dp;
      ntasks++;
    }
    /* disaggregated: x prefill replicas of this layout, y decode of
     * another, x g + y g' = the GPUs */
    for (size_t j = 0; o->disagg && j < nlay; j++) {
      int64_t gd = (int64_t) lay[j].tp * lay[j].pp;
      if (lay[i].pp > 1 || lay[j].pp > 1 || spans_gpus (&lay[i]) || spans_gpus (&lay[j]))
        continue;            /* attention data parallelism spans every GPU: none to split */
      for (int64_t x = 1; x * g < o->gpus; x++) {
        int64_t rest = o->gpus - x * g;
        if (rest % gd != 0)
          continue;
        if (ntasks == cap)
          tasks = xrealloc (tasks, (cap = cap ? 2 * cap : 64) * sizeof *tasks);
        memset (&tasks[ntasks], 0, sizeof *tasks);
        tasks[ntasks].disagg = true;
        tasks[ntasks].s = lay[i];
        tasks[ntasks].d = lay[j];
        tasks[ntasks].replicas = (int) x;
        tasks[ntasks].dworkers = (int) (rest / gd);
        ntasks++;
      }
    }
  }
  if (ntasks == 0) {
    pm_error ("search --serve: no layout of tp x pp divides %lld GPUs", (long long) o->gpus);
    free (tasks);
    return SEARCH_BAD_REQUEST;
  }
  memset (&sh, 0, sizeof sh);
  sh.o = o;
  sh.set = set;
  sh.gpus = gpus;
  sh.tasks = tasks;
  sh.ntasks = ntasks;
  pthread_mutex_init (&sh.lock, NULL);
  /* the predictor's lazily loaded parameters and dtypes() answers, once,
   * before the threads: the first deployment on this thread alone */
  {
    struct serve_base b0;
    struct replicas r0;
    char msg[512] = "";
    memset (&r0, 0, sizeof r0);
    r0.chunks = dist_cache_new ();
    pm_error_capture (msg, sizeof msg);
    if (search_base_open (&b0, set, gpus, o) == 0) {
      for (int kc = 0; kc < 16; kc++)
        for (int dt = 0; dt < PERFMOD_DTYPE_NTYPES; dt++)
          plugin_covers (b0.pred, kc, dt);
      pm_error_capture (NULL, 0);
      sh.next = 1;
      if (run_task (&sh, &b0, &tasks[0], &r0) < 0)
        sh.failed = 1;
      replicas_close (&r0);
      serve_base_close (&b0);
    }
    else {
      pm_error_capture (NULL, 0);
      snprintf (sh.err, sizeof sh.err, "%s", msg);
      sh.failed = 1;
      dist_cache_free (r0.chunks);
    }
  }
  th = xcalloc ((size_t) jobs, sizeof *th);
  for (int j = 1; j < jobs; j++)
    if (pthread_create (&th[j], NULL, worker, &sh) != 0)
      th[j] = 0;
  worker (&sh);
  for (int j = 1; j < jobs; j++)
    if (th[j])
      pthread_join (th[j], NULL);
  free (th);
  free (tasks);
  pthread_mutex_destroy (&sh.lock);
  if (sh.failed) {
    pm_error ("%s", sh.err[0] ? sh.err : "search --serve: a predictor failed");
    free (sh.pts);
    return SEARCH_FAILED;
  }
  /* the frontier: best first by tokens/s per user, each point on it when
   * no point with more per user has as many per GPU */
  qsort (sh.pts, sh.npts, sizeof *sh.pts, cmp_user);
  for (size_t i = 0; i < sh.npts; i++) {
    struct serve_point *p = &sh.pts[i];
    if (p->oom)
      continue;
    p->slo = (o->ttft <= 0 || p->ttft <= o->ttft) && (o->tpot <= 0 || p->tpot <= o->tpot);
    if (p->tps_gpu > best) {
      p->frontier = true;
      best = p->tps_gpu;
    }
  }
  res->best = -1;
  for (size_t i = 0; i < sh.npts; i++)
    if (sh.pts[i].slo && !sh.pts[i].oom &&
        (res->best < 0 || sh.pts[i].tps_gpu > sh.pts[res->best].tps_gpu))
      res->best = (int64_t) i;
  res->pts = sh.pts;
  res->n = sh.npts;
  res->configurations = sh.configurations;
  res->refused = sh.refused;
  res->pruned = sh.pruned;
  res->seconds = pm_now () - t0;
  return 0;
}
