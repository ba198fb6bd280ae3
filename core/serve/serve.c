/* serve.c: a serving request resolved (model, GPU, precision, engine, replica layouts, load), each layout's memory and KV cache as its engine allots them, the simulation run and its result filled: perfmod_serve and reproduce --table serving both come here. */
#include <config.h>

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define SERVE_DEFAULT_ENGINE "vllm"
#define SERVE_DEFAULT_PREDICTOR "tile-mlp"
/* A closed loop's requests per client when none are given: genai-perf's
 * default, 10 x concurrency (aiconfigurator's vllm_backend.py says its
 * benchmark runs so); at least SERVE_MIN_REQUESTS. */
#define SERVE_REQUESTS_PER_CLIENT 10
#define SERVE_MIN_REQUESTS 100
/* Requests of a Poisson load when none are given. */
#define SERVE_RATE_REQUESTS 1000
/* At most this many requests are simulated. */
#define SERVE_MAX_REQUESTS ((int64_t) 1 << 24)

/* The engine's limits on gpu where the request leaves them: vLLM's
 * usage-context defaults (arg_utils.py: 8192 tokens and 1024 requests
 * from 70 GiB, not on an A100; else 2048 and 256), SGLang's by memory
 * (server_args.py: the chunk 2048 below 35 GB, 4096 below 60, 8192 below
 * 160, else 16384; CUDA graphs to 256 requests below tp 4, else 512, from
 * 60 GB), TensorRT-LLM's build defaults (2048 requests, 8192 tokens). */
static void
engine_limits (const struct serve_engine *e, const struct perfmod_gpu *gpu, const char *gpu_name,
               int tp, int64_t *max_tokens, int64_t *max_seqs, int64_t *graph_max)
{
  double gib = gpu->mem_gb;
  switch (e->id) {
  case ENGINE_VLLM: {
    bool big = gib >= 70 && strstr (gpu_name, "a100") == NULL && strstr (gpu_name, "A100") == NULL;
    *max_tokens = big ? e->max_tokens : e->max_tokens_small;
    *max_seqs = big ? e->max_seqs : e->max_seqs_small;
    *graph_max = 0;             /* from max_seqs, below */
    break;
  }
  case ENGINE_SGLANG:
    *max_tokens = gib < 35 ? 2048 : gib < 60 ? 4096 : gib < 160 ? 8192 : 16384;
    *graph_max = gib < 20 ? 8 : gib < 35 ? (tp < 4 ? 24 : 80) : gib < 60 ? (tp < 4 ? 32 : 160)
               : gib < 160 ? (tp < 4 ? 256 : 512) : 512;
    *max_seqs = 0;              /* from the KV cache, below */
    break;
  case ENGINE_TRTLLM:
  default:
    *max_tokens = e->max_tokens;
    *max_seqs = e->max_seqs;
    *graph_max = e->graph_max;
    break;
  }
}

/* Bytes per GPU of one iteration's activations at `tokens` tokens and
 * `rows` logit rows: the residual stream, the attention's q, k, v and
 * output and the feed-forward's gate, up and activation (each layer's in
 * turn, split over tp), and the logits in fp32 for sampling. */
static double
workspace_bytes (const struct model_cfg *m, const struct precision *pr, int64_t tokens,
                 int64_t rows, int tp)
{
  double h = (double) m->hidden, f = (double) m->ffn, qkv;
  if (m->experts > 0) {
    double routed = (double) (m->top_k * (m->moe_ffn ? m->moe_ffn : m->ffn) + m->shared_ffn);
    if (routed > f)
      f = routed;
  }
  qkv = (double) ((m->heads + 2 * m->kv_heads) * m->head_dim);
  return (double) tokens * (4 * h + (qkv + 3 * f) / tp) * pr->act_bytes
         + (double) rows * (double) m->vocab * 4;
}

/* The KV cache bytes per GPU the engine allots: vLLM
 * gpu_memory_utilization (0.9) of the memory less the weights and the
 * profiled activations; SGLang mem_fraction_static (server_args.py 0.5:
 * (memory - reserved) / memory, reserved 512 MiB + 1.5 x the chunk +
 * 2 MiB a CUDA-graph batch + 1 GiB per 8 GPUs, at least 10 GiB above 60
 * GiB) less the weights; TensorRT-LLM free_gpu_memory_fraction (0.9) of
 * what the weights and activations leave.  All less the CUDA context and
 * libraries (MEMORY_RESERVE_FIXED_BYTES) where the engine measures it. */
static double
kv_budget (const struct serve_engine *e, const struct perfmod_gpu *gpu, const struct serve_replica *l)
{
  double cap = gpu->mem_gb * PM_GIB;   /* binary, as memory_estimate's */
  double ctx = MEMORY_RESERVE_FIXED_BYTES;
  switch (e->id) {
  case ENGINE_SGLANG: {
    double mib = cap / 1048576.0;
    double chunk = l->max_tokens > 2048 ? (double) l->max_tokens : 2048;
    double reserved = 512 + chunk * 1.5 + (double) l->graph_max * 2
                      + (double) l->s.tp * l->s.pp / 8.0 * 1024;
    if (mib > 60 * 1024 && reserved < 10 * 1024)
      reserved = 10 * 1024;
    return (mib - reserved) / mib * cap - l->weights;
  }
  case ENGINE_TRTLLM:
    return e->mem_fraction * (cap - l->weights - l->workspace - ctx);
  case ENGINE_VLLM:
  default:
    return e->mem_fraction * cap - l->weights - l->workspace - ctx;
  }
}

/* Only the keys a serving replica takes (tp, pp, ep, etp, dispatcher, dp). */
static int
layout_parse (struct strategy *s, const char *spec, const char *what, bool replicas)
{
  struct strategy d;
  strategy_init (s);
  if (spec && strategy_parse (s, spec, what) < 0)
    return -1;
  strategy_init (&d);
  if (s->mbs != 1 || s->vp != 1 || s->zero || s->cp != 1 || s->sp || s->tpo || strategy_uneven (s) ||
      s->kernels_set || s->recompute != RECOMPUTE_NONE || s->schedule != d.schedule ||
      s->a2a_overlap || s->shared_overlap || s->grad_low) {
    pm_error ("%s '%s': a serving replica takes tp, pp, ep, etp, dispatcher%s only", what, spec,
              replicas ? " and dp (replicas)" : "");
    return -1;
  }
  /* a disaggregated pool's replicas are its workers; dp there is a
   * worker's attention data parallelism, its experts over every rank */
  if (!replicas && s->dp_set && s->dp != 1 && !strategy_attention_dp (s, s->dp)) {
    pm_error ("%s '%s': give the replicas as workers, not dp (dp in a worker: attention data "
              "parallelism, ep x etp = tp x dp)", what, spec);
    return -1;
  }
  if ((int64_t) s->tp * s->pp * s->dp > PM_MAX_GPUS) {
    pm_error ("%s '%s': more than %d GPUs", what, spec, PM_MAX_GPUS);
    return -1;
  }
  return 0;
}

int
serve_replica_open (struct serve_replica *l, const struct serve_base *b,
                    const struct strategy *s, int64_t max_batch, int64_t max_tokens,
                    int64_t tokens, struct dist_cache *chunks, const char *what)
{
  struct dist_options o;
  struct serve_layout sl;
  struct strategy one = *s;
  const struct gpu_entry *ge = b->ge;
  int64_t graph_default;

  memset (l, 0, sizeof *l);
  l->s = *s;
  one.dp = 1;
  memset (&o, 0, sizeof o);
  o.s = &one;
  o.prec = b->pr;
  o.flash = flash_supported (&ge->gpu, b->pr);
  o.engine = true;
  o.engine_name = b->e->name;
  o.routing = b->routing;
  o.fusion = true;
  o.batch = 1;
  o.seq = tokens;
  o.gpus_per_node = b->gpn;
  o.replicas = s->dp;            /* the experts may span them (attention data parallelism) */
  {
    char msg[512] = "";
    pm_error_capture (msg, sizeof msg);
    int rc = dist_check (&b->m, &o);
    if (rc == 0)
      rc = dist_serving_footprint (b->set, &b->m, &ge->gpu, &o, tokens, &l->weights,
                                   &l->kv_per_token);
    pm_error_capture (NULL, 0);
    if (rc < 0) {
      pm_error ("%s: %s", what, msg);
      return -1;
    }
  }
  l->kv_per_token *= b->kv_scale;
  l->gpus = one.tp * one.pp;
  engine_limits (b->e, &ge->gpu, ge->name, one.tp, &l->max_tokens, &l->max_seqs, &graph_default);
  if (max_tokens > 0)
    l->max_tokens = max_tokens;
  if (max_batch > 0)
    l->max_seqs = max_batch;
  l->graph_max = b->e->id == ENGINE_VLLM ? (l->max_seqs > 0 && 2 * l->max_seqs < 512
                                            ? 2 * l->max_seqs : 512) : graph_default;
  l->workspace = workspace_bytes (&b->m, b->pr, l->max_tokens,
                                  l->max_seqs > 0 ? l->max_seqs : 1024, one.tp);
  l->kv_bytes = kv_budget (b->e, &ge->gpu, l);
  l->kv_tokens = l->kv_bytes > 0 && l->kv_per_token > 0
                 ? (int64_t) floor (l->kv_bytes / l->kv_per_token) : 0;
  if (l->max_seqs == 0) {          /* SGLang: from the KV cache (model_runner.py) */
    int64_t pool = b->m.max_pos > 0 ? l->kv_tokens / b->m.max_pos * 512 : 4096;
    pool = pool < 2048 ? 2048 : pool > 4096 ? 4096 : pool;
    l->max_seqs = l->kv_tokens / 2 < pool ? l->kv_tokens / 2 : pool;
    if (l->max_seqs < 1)
      l->max_seqs = 1;
  }
  memset (&sl, 0, sizeof sl);
  sl.set = b->set;
  sl.pred = b->pred;
  sl.m = &b->m;
  sl.gpu = &ge->gpu;
  sl.prec = b->pr;
  sl.s = one;
  sl.replicas = s->dp;
  sl.gpus_per_node = b->gpn;
  sl.cache = chunks;
  sl.engine = b->e->name;
  sl.routing = b->routing;
  l->costs = serve_costs_new (&sl);
  return 0;
}

void
serve_replica_close (struct serve_replica *l)
{
  serve_costs_free (l->costs);
  l->costs = NULL;
}

void
serve_pool_of (const struct serve_replica *l, int replicas, struct serve_pool *p)
{
  memset (p, 0, sizeof *p);
  p->costs = l->costs;
  p->replicas = replicas;
  p->lockstep = strategy_attention_dp (&l->s, l->s.dp) ? l->s.dp : 1;
  p->kv_tokens = l->kv_tokens;
  p->max_seqs = l->max_seqs;
  p->max_tokens = l->max_tokens;
  p->kv_bytes_per_token = l->kv_per_token * l->s.tp;
}

int
serve_base_open (struct serve_base *b, struct plugin_set *set, const struct gpu_db *gpus,
                 const char *model, const char *gpu, const char *engine, const char *dtype_arg,
                 const char *kv_dtype, const char *predictor, int64_t gpus_per_node)
{
  memset (b, 0, sizeof *b);
  b->set = set;
  b->kv_scale = 1;
  if ((b->ge = gpu_db_find (gpus, gpu ? gpu : DEFAULT_GPU)) == NULL) {
    pm_error ("gpu '%s': no such GPU (perfmod gpus lists them)", gpu);
    return -1;
  }
  if ((b->e = serve_engine_find (engine ? engine : SERVE_DEFAULT_ENGINE)) == NULL) {
    pm_error ("--engine '%s': expected %s", engine, serve_engine_names);
    return -1;
  }
  b->pr = dtype_arg ? precision_infer_named (dtype_arg)
                    : precision_infer (default_dtype (&b->ge->gpu));
  if (b->pr == NULL || b->pr->gemm == PERFMOD_DTYPE_FP32 || b->pr->gemm == PERFMOD_DTYPE_TF32) {
    pm_error ("--dtype '%s': serving runs bf16, fp16, fp8, fp8_block or nvfp4 weights and "
              "GEMMs, or mxfp4 experts", dtype_arg ? dtype_arg : "");
    return -1;
  }
  if (!gpu_has_units (&b->ge->gpu, b->pr->gemm)) {
    pm_error ("--dtype %s: %s has no %s matrix units in gpus.d", dtype_arg, b->ge->name,
              dtype_name (b->pr->gemm));
    return -1;
  }
  if (kv_dtype && strcmp (kv_dtype, "auto") != 0) {
    int kd = dtype_parse (kv_dtype);
    if (kd != PERFMOD_DTYPE_FP8 && kd != PERFMOD_DTYPE_BF16 && kd != PERFMOD_DTYPE_FP16) {
      pm_error ("--kv-dtype '%s': expected auto, bf16, fp16 or fp8", kv_dtype);
      return -1;
    }
    b->kv_scale = dtype_bytes (kd) / b->pr->act_bytes;
  }
  if ((b->pred = predictor_find (set, predictor ? predictor : SERVE_DEFAULT_PREDICTOR)) == NULL)
    return -1;
  if (model_cfg_open (&b->m, model) < 0)
    return -1;
  b->m_open = true;
  if (b->m.family == FAM_BERT || b->m.family == FAM_SWITCH) {
    pm_error ("%s: serving is modelled for decoder-only models (%s is not)", b->m.name,
              b->m.arch);
    serve_base_close (b);
    return -1;
  }
  if (precision_check_experts (b->pr, b->m.experts, true, "--dtype") < 0) {
    serve_base_close (b);
    return -1;
  }
  b->gpn = gpus_per_node > 0 ? (int) gpus_per_node : b->ge->gpu.gpus_per_node;
  if (b->gpn < 1)
    b->gpn = 8;
  return 0;
}

void
serve_base_close (struct serve_base *b)
{
  if (b->m_open)
    model_cfg_free (&b->m);
  b->m_open = false;
}

int
serve_parse_layout (struct strategy *s, const char *spec, const char *what, bool replicas)
{
  return layout_parse (s, spec, what, replicas);
}

/* A trace: a CSV with a header naming arrival_ms, isl and osl (or
 * timestamp_ms, input_tokens, output_tokens); arrivals in order. */
static int
trace_load (const char *path, double **arr, int64_t **isl, int64_t **osl, int64_t *n)
{
  static const char *const names[3][3] = {
    { "arrival_ms", "timestamp_ms", "arrival" },
    { "isl", "input_tokens", "input_length" },
    { "osl", "output_tokens", "output_length" }
  };
  struct csv_reader r;
  int col[3], rc;
  size_t nhead;
  *arr = NULL;
  *isl = *osl = NULL;
  *n = 0;
  if (input_file_check (path, "a trace") < 0)
    return -1;
  if (csv_open (&r, path) < 0) {
    pm_error ("%s: cannot open the trace", path);
    return -1;
  }
  if ((rc = csv_next (&r)) <= 0) {
    if (rc == 0)
      pm_error ("%s:1: empty file: expected a header with arrival_ms, isl and osl", path);
    csv_close (&r);
    return -1;
  }
  nhead = r.nfields;
  for (int k = 0; k < 3; k++) {
    col[k] = -1;
    for (int j = 0; j < 3 && col[k] < 0; j++)
      col[k] = csv_column (r.fields, r.nfields, names[k][j]);
    if (col[k] < 0) {
      pm_error ("%s:%ld: no column '%s' in the header (a trace has arrival_ms, isl, osl)", path,
                r.line, names[k][0]);
      csv_close (&r);
      return -1;
    }
  }
  while ((rc = csv_next (&r)) > 0) {
    double t;
    int64_t a, b;
    if (r.nfields == 1 && r.fields[0][0] == '\0')
      continue;
    if (r.nfields != nhead) {
      pm_error ("%s:%ld: %zu fields, the header has %zu", path, r.line, r.nfields, nhead);
      rc = -1;
      break;
    }
    if (!parse_double (r.fields[col[0]], &t) || !isfinite (t) || t < 0 || t > 1e12) {
      pm_error ("%s:%ld: arrival_ms '%s': expected milliseconds from 0 to 1e12", path, r.line,
                r.fields[col[0]]);
      rc = -1;
      break;
    }
    if (*n > 0 && t < (*arr)[*n - 1]) {
      pm_error ("%s:%ld: arrival_ms %g is before the row above's %g: the trace must be in "
                "arrival order", path, r.line, t, (*arr)[*n - 1]);
      rc = -1;
      break;
    }
    if (!csv_int (&r, (size_t) col[1], "isl", 1, &a) || !csv_int (&r, (size_t) col[2], "osl", 1, &b)) {
      rc = -1;
      break;
    }
    if (a > PM_MAX_SEQ || b > PM_MAX_SEQ) {
      pm_error ("%s:%ld: isl or osl above %lld tokens", path, r.line, (long long) PM_MAX_SEQ);
      rc = -1;
      break;
    }
    if (*n >= SERVE_MAX_REQUESTS) {
      pm_error ("%s:%ld: more than %lld requests", path, r.line, (long long) SERVE_MAX_REQUESTS);
      rc = -1;
      break;
    }
    *arr = xrealloc (*arr, (size_t) (*n + 1) * sizeof **arr);
    *isl = xrealloc (*isl, (size_t) (*n + 1) * sizeof **isl);
    *osl = xrealloc (*osl, (size_t) (*n + 1) * sizeof **osl);
    (*arr)[*n] = t;
    (*isl)[*n] = a;
    (*osl)[*n] = b;
    (*n)++;
  }
  csv_close (&r);
  if (rc == 0 && *n == 0) {
    pm_error ("%s: no requests in the trace", path);
    rc = -1;
  }
  if (rc < 0) {
    free (*arr);
    free (*isl);
    free (*osl);
    *arr = NULL;
    *isl = *osl = NULL;
    return -1;
  }
  return 0;
}

char *
serve_command (const struct perfmod_serve_request *q)
{
  char *s = xasprintf ("perfmod serve --model %s", q->model), *t;
#define ARG(cond, ...) do { if (cond) { t = xasprintf (__VA_ARGS__); free (s); s = t; } } while (0)
  ARG (q->gpu, "%s --gpu %s", s, q->gpu);
  ARG (q->engine, "%s --engine %s", s, q->engine);
  ARG (q->dtype, "%s --dtype %s", s, q->dtype);
  ARG (q->kv_dtype, "%s --kv-dtype %s", s, q->kv_dtype);
  ARG (q->strategy, "%s --strategy %s", s, q->strategy);
  ARG (q->prefill_strategy, "%s --prefill %s", s, q->prefill_strategy);
  ARG (q->prefill_workers, "%s --prefill-workers %lld", s, (long long) q->prefill_workers);
  ARG (q->prefill_max_batch, "%s --prefill-max-batch %lld", s, (long long) q->prefill_max_batch);
  ARG (q->decode_strategy, "%s --decode %s", s, q->decode_strategy);
  ARG (q->decode_workers, "%s --decode-workers %lld", s, (long long) q->decode_workers);
  ARG (q->concurrency, "%s --concurrency %lld", s, (long long) q->concurrency);
  ARG (q->rate > 0, "%s --rate %.17g", s, q->rate);
  ARG (q->trace, "%s --trace %s", s, q->trace);
  ARG (q->isl, "%s --isl %lld", s, (long long) q->isl);
  ARG (q->osl, "%s --osl %lld", s, (long long) q->osl);
  ARG (q->requests, "%s --requests %lld", s, (long long) q->requests);
  ARG (q->max_batch, "%s --max-batch %lld", s, (long long) q->max_batch);
  ARG (q->max_tokens, "%s --max-tokens %lld", s, (long long) q->max_tokens);
  ARG (q->gpus_per_node, "%s --gpus-per-node %lld", s, (long long) q->gpus_per_node);
  ARG (q->seed, "%s --seed %llu", s, (unsigned long long) q->seed);
  ARG (q->spec, "%s --spec %s", s, q->spec);
  ARG (q->spec_tokens, "%s --spec-tokens %lld", s, (long long) q->spec_tokens);
  ARG (q->spec_accept > 0, "%s --spec-accept %.17g", s, q->spec_accept);
  ARG (q->struct_size >= offsetof (struct perfmod_serve_request, routing) + sizeof q->routing
       && q->routing, "%s --routing %s", s, q->routing);
  ARG (q->predictor, "%s --predictor %s", s, q->predictor);
#undef ARG
  return s;
}

void
serve_cache_free (struct serve_cache *c)
{
  dist_cache_free (c->chunks);
  free (c->model);
  c->chunks = NULL;
  c->model = NULL;
}

static void
stats_out (const struct serve_stats *in, struct perfmod_serve_stats *out)
{
  out->mean = in->mean;
  out->p50 = in->p50;
  out->p90 = in->p90;
  out->p99 = in->p99;
}

/* The request's fields this library reads: up to spec_accept. */
#define SERVE_REQUEST_MIN (offsetof (struct perfmod_serve_request, spec_accept) + sizeof (double))
#define SERVE_RESULT_MIN (offsetof (struct perfmod_serve_result, assumed) + 1024)

int
serve_input (const struct serve_base *b, const struct serve_replica *pool, int replicas,
             const struct serve_replica *decode, int decode_replicas, struct serve_sim_input *in)
{
  in->eng = b->e;
  serve_pool_of (pool, replicas, &in->pool);
  in->kv_read_scale = b->kv_scale;
  memset (&in->decode, 0, sizeof in->decode);
  in->transfer_gbps = in->transfer_us = 0;
  if (decode) {
    const struct perfmod_gpu *g = &b->ge->gpu;
    serve_pool_of (decode, decode_replicas, &in->decode);
    /* each prefill GPU sends its share of the cache over its own NIC
     * (NIXL/UCX over RDMA), nic_efficiency of it, one link latency */
    in->transfer_gbps = g->nic_gbps * (g->nic_efficiency > 0 ? g->nic_efficiency : 1) * pool->gpus;
    in->transfer_us = g->nic_latency_us;
    if (!(in->transfer_gbps > 0)) {
      pm_error ("%s: gpus.d gives no nic_gbps for the KV cache's transfer", b->ge->name);
      return -1;
    }
  }
  if (in->spec.kind == SPEC_MTP || in->spec.kind == SPEC_EAGLE)
    in->spec.draft_layers = 1.0 / (double) b->m.layers;
  return 0;
}

int
serve_run (struct plugin_set *set, const struct gpu_db *gpus,
           const struct perfmod_serve_request *req, struct perfmod_serve_result *res,
           struct serve_cache *cache)
{
  struct serve_base base;
  const struct gpu_entry *ge;
  const struct serve_engine *e;
  const struct precision *pr;
  struct plugin *pred;
  struct serve_replica lay[2];
  struct serve_sim_input in;
  struct serve_metrics out;
  struct dist_cache *chunks = NULL;
  double *tr_arr = NULL, kv_scale, routing = 0;
  int64_t *tr_isl = NULL, *tr_osl = NULL, ntrace = 0, maxlen = 0;
  int nlay, loads, rc = -1;
  bool disagg, base_open = false;

  memset (lay, 0, sizeof lay);
  if (req->struct_size < SERVE_REQUEST_MIN || req->struct_size > sizeof *req ||
      res->struct_size < SERVE_RESULT_MIN || res->struct_size > sizeof *res) {
    pm_error ("perfmod_serve: set struct_size of the request and the result to their sizeof "
              "(request %u, result %u; this library's %zu, %zu)", (unsigned) req->struct_size,
              (unsigned) res->struct_size, sizeof *req, sizeof *res);
    return -1;
  }
  if (req->model == NULL) {
    pm_error ("perfmod_serve: no model");
    return -1;
  }
  /* the load: one of a closed loop, a rate and a trace */
  loads = (req->concurrency != 0) + (req->rate != 0) + (req->trace != NULL);
  if (loads != 1) {
    pm_error ("serve: give one of --concurrency, --rate and --trace (the requests' arrivals)");
    return -1;
  }
  if (req->concurrency < 0 || req->concurrency > PM_MAX_BATCH) {
    pm_error ("--concurrency %lld: expected 1 to %lld clients", (long long) req->concurrency,
              (long long) PM_MAX_BATCH);
    return -1;
  }
  if (req->rate != 0 && !(req->rate > 0 && req->rate <= 1e9)) {
    pm_error ("--rate %g: expected requests per second above 0, at most 1e9", req->rate);
    return -1;
  }
  if (req->trace == NULL && (req->isl < 1 || req->osl < 1 || req->isl > PM_MAX_SEQ ||
                             req->osl > PM_MAX_SEQ)) {
    pm_error ("serve needs --isl and --osl, the prompt's and the output's tokens (1 to %lld)",
              (long long) PM_MAX_SEQ);
    return -1;
  }
  if (req->trace && (req->isl || req->osl)) {
    pm_error ("--trace gives each request's lengths: no --isl or --osl");
    return -1;
  }
  {
    static const struct field_range counts[] = {
      { "--requests", SERVE_MAX_REQUESTS, offsetof (struct perfmod_serve_request, requests) },
      { "--max-batch", PM_MAX_BATCH, offsetof (struct perfmod_serve_request, max_batch) },
      { "--prefill-max-batch", PM_MAX_BATCH,
        offsetof (struct perfmod_serve_request, prefill_max_batch) },
      { "--max-tokens", PM_MAX_SEQ, offsetof (struct perfmod_serve_request, max_tokens) },
      { "--gpus-per-node", PM_MAX_GPUS, offsetof (struct perfmod_serve_request, gpus_per_node) },
    };
    if (fields_in_range (req, counts, sizeof counts / sizeof counts[0], "serve") < 0)
      return -1;
  }
  disagg = req->prefill_strategy != NULL || req->decode_strategy != NULL ||
           req->prefill_workers != 0 || req->decode_workers != 0;
  if (disagg && (req->prefill_strategy == NULL || req->decode_strategy == NULL)) {
    pm_error ("disaggregated serving needs both --prefill and --decode (each worker's layout)");
    return -1;
  }
  if (disagg && req->strategy) {
    pm_error ("--strategy with --prefill/--decode: each pool has its own layout");
    return -1;
  }
  if (req->prefill_workers < 0 || req->prefill_workers > PM_MAX_GPUS ||
      req->decode_workers < 0 || req->decode_workers > PM_MAX_GPUS) {
    pm_error ("--prefill-workers and --decode-workers: expected 1 to %d", PM_MAX_GPUS);
    return -1;
  }

  memset (&in, 0, sizeof in);
  if (req->spec) {
    if (strcmp (req->spec, "mtp") == 0)
      in.spec.kind = SPEC_MTP;
    else if (strcmp (req->spec, "eagle") == 0)
      in.spec.kind = SPEC_EAGLE;
    else if (strcmp (req->spec, "ngram") == 0)
      in.spec.kind = SPEC_NGRAM;
    else {
      pm_error ("--spec '%s': expected mtp, eagle or ngram", req->spec);
      return -1;
    }
    if (req->spec_tokens < 0 || req->spec_tokens > 64 ||
        !(req->spec_accept > 0 && req->spec_accept < 1)) {
      pm_error ("--spec %s: --spec-tokens 1 to 64 and --spec-accept between 0 and 1 "
                "(each draft token's acceptance) are needed", req->spec);
      return -1;
    }
    in.spec.tokens = req->spec_tokens ? (int) req->spec_tokens : in.spec.kind == SPEC_MTP ? 1 : 3;
    in.spec.accept = req->spec_accept;
  }
  else if (req->spec_tokens || req->spec_accept) {
    pm_error ("--spec-tokens and --spec-accept go with --spec");
    return -1;
  }
  if (req->struct_size >= offsetof (struct perfmod_serve_request, routing) + sizeof req->routing
      && req->routing && routing_parse ("--routing", req->routing, &routing) < 0)
    return -1;
  if (req->trace && trace_load (req->trace, &tr_arr, &tr_isl, &tr_osl, &ntrace) < 0)
    return -1;
  if (serve_base_open (&base, set, gpus, req->model, req->gpu, req->engine, req->dtype,
                       req->kv_dtype, req->predictor, req->gpus_per_node) < 0)
    goto out;
  base_open = true;
  base.routing = routing;
  ge = base.ge;
  e = base.e;
  pr = base.pr;
  pred = base.pred;
  kv_scale = base.kv_scale;
  if (in.spec.kind == SPEC_MTP && base.m.mtp_layers == 0 && base.m.family != FAM_DEEPSEEK) {
    pm_error ("--spec mtp: %s has no multi-token prediction layer (eagle or ngram draft)",
              base.m.name);
    goto out;
  }
  for (int64_t i = 0; i < ntrace; i++)
    if (tr_isl[i] + tr_osl[i] > maxlen)
      maxlen = tr_isl[i] + tr_osl[i];
  if (ntrace == 0)
    maxlen = req->isl + req->osl;

  /* the layouts */
  nlay = disagg ? 2 : 1;
  if (disagg) {
    if (layout_parse (&lay[0].s, req->prefill_strategy, "--prefill", false) < 0 ||
        layout_parse (&lay[1].s, req->decode_strategy, "--decode", false) < 0)
      goto out;
  }
  else if (layout_parse (&lay[0].s, req->strategy, "--strategy", true) < 0)
    goto out;
  if (cache) {
    if (cache->model == NULL || strcmp (cache->model, base.m.name) != 0) {
      serve_cache_free (cache);
      cache->chunks = dist_cache_new ();
    }
    chunks = cache->chunks;
  }
  for (int k = 0; k < nlay; k++) {
    struct strategy st = lay[k].s;
    bool pre = disagg && k == 0;
    if (serve_replica_open (&lay[k], &base, &st, pre ? req->prefill_max_batch : req->max_batch,
                            req->max_tokens, maxlen, chunks,
                            disagg ? (k ? "--decode" : "--prefill") : "--strategy") < 0)
      goto out;
  }
  if (cache && cache->model == NULL)
    cache->model = xstrdup (base.m.name);

  /* what the run assumed, and the memory */
  memset ((char *) res + sizeof res->struct_size, 0, res->struct_size - sizeof res->struct_size);
  snprintf (res->engine, sizeof res->engine, "%s", e->name);
  {
    struct serve_replica *d = &lay[nlay - 1];
    snprintf (res->assumed, sizeof res->assumed,
              "engine %s: %lld tokens an iteration, %lld requests at most, %s, %d-token KV "
              "pages; KV cache %.1f GiB per GPU (%lld tokens a replica) after %.1f GiB of weights%s; "
              "%s kernels (%s)", e->title, (long long) d->max_tokens, (long long) d->max_seqs,
              !e->mixed ? "prefill batches alone, the decodes paused"
              : e->chunked ? "prompts chunked into the decodes' iterations"
              : "whole prompts in the decodes' iterations",
              e->block, fmax (d->kv_bytes, 0) / PM_GIB, (long long) d->kv_tokens,
              d->weights / PM_GIB, kv_scale != 1 ? ", the cache in fp8" : "", pred->p.name,
              pr->name);
    for (int k = 0; k < nlay; k++) {   /* attention data parallelism: what it assumes */
      const struct strategy *ls = &lay[k].s;
      size_t used = strlen (res->assumed);
      int how = strategy_dispatcher (ls, true);
      if (strategy_attention_dp (ls, ls->dp) && used < sizeof res->assumed)
        snprintf (res->assumed + used, sizeof res->assumed - used,
                  "; %sexperts over %d replicas' %d GPUs, each replica's tokens %s (the "
                  "replicas in step: an iteration lasts the longest replica's, the experts "
                  "fed every replica's tokens as %s gathers them)",
                  nlay == 1 ? "the " : k == 0 ? "a prefill worker's " : "a decode worker's ",
                  ls->dp, ls->ep * ls->etp,
                  how == PERFMOD_DISPATCH_FLEX ? "dispatched by DeepEP's kernels"
                  : how == PERFMOD_DISPATCH_ALLTOALL ? "dispatched by an all-to-all"
                  : "all-gathered and reduce-scattered", e->title);
    }
    if (base.m.experts > 0) {          /* the router's spread (routing.c) */
      size_t used = strlen (res->assumed);
      double a = routing_alpha (base.routing);
      if (used < sizeof res->assumed) {
        if (a > 0)
          snprintf (res->assumed + used, sizeof res->assumed - used,
                    "; each step's tokens over the experts as a power law of exponent %.15g%s "
                    "(--routing)", a, base.routing == 0 ? ", aiconfigurator's default" : "");
        else
          snprintf (res->assumed + used, sizeof res->assumed - used,
                    "; each token's experts drawn alike (--routing uniform)");
      }
    }
    res->weights_gib = d->weights / PM_GIB;
    res->kv_cache_gib = d->kv_bytes > 0 ? d->kv_bytes / PM_GIB : 0;
    res->capacity_gib = ge->gpu.mem_gb;
    res->kv_capacity_tokens = d->kv_tokens;
    res->max_batch = d->max_seqs;
    res->max_tokens = d->max_tokens;
  }
  /* each pool's replicas: its workers times their attention-DP replicas,
   * or the aggregated layout's dp */
  int64_t reps[2] = { (int64_t) lay[0].s.dp * (disagg && req->prefill_workers
                                                ? req->prefill_workers : 1),
                      disagg ? (int64_t) lay[1].s.dp * (req->decode_workers
                                                        ? req->decode_workers : 1) : 0 };
  res->gpus = (int64_t) lay[0].gpus * reps[0] + (disagg ? (int64_t) lay[1].gpus * reps[1] : 0);
  if (res->gpus > PM_MAX_GPUS) {   /* workers x their attention-DP replicas */
    pm_error ("a deployment of %lld GPUs: more than %d", (long long) res->gpus, PM_MAX_GPUS);
    goto out;
  }
  for (int k = 0; k < nlay; k++)   /* the cache is held in whole pages (blocks) */
    if (lay[k].kv_tokens / serve_page_tokens (e) * serve_page_tokens (e)
        < (k == 0 && disagg ? maxlen - 1 : maxlen) + 1) {
      res->oom = 1;              /* a result: no room for one request's cache */
      rc = 0;
      goto out;
    }
  if (!disagg && e->id == ENGINE_TRTLLM && !e->chunked) {
    int64_t longest = req->isl;
    for (int64_t i = 0; i < ntrace; i++)
      if (tr_isl[i] > longest)
        longest = tr_isl[i];
    if (longest > lay[0].max_tokens) {
      pm_error ("a prompt of %lld tokens is more than TensorRT-LLM's max_num_tokens %lld: it "
                "refuses it (chunked prefill is off; give --max-tokens)", (long long) longest,
                (long long) lay[0].max_tokens);
      goto out;
    }
  }

  /* the simulation */
  if (serve_input (&base, &lay[0], (int) reps[0], disagg ? &lay[1] : NULL,
                   disagg ? (int) reps[1] : 1, &in) < 0)
    goto out;
  in.load.kind = req->trace ? LOAD_TRACE : req->rate > 0 ? LOAD_RATE : LOAD_CLOSED;
  in.load.concurrency = req->concurrency;
  in.load.rate = req->rate;
  in.load.isl = req->isl;
  in.load.osl = req->osl;
  in.load.seed = req->seed ? req->seed : 1;
  in.load.arrival_ms = tr_arr;
  in.load.isl_v = tr_isl;
  in.load.osl_v = tr_osl;
  in.load.requests = req->requests ? req->requests
                   : in.load.kind == LOAD_TRACE ? ntrace
                   : in.load.kind == LOAD_RATE ? SERVE_RATE_REQUESTS
                   : req->concurrency * SERVE_REQUESTS_PER_CLIENT;
  if (in.load.kind == LOAD_CLOSED && req->requests == 0 && in.load.requests < SERVE_MIN_REQUESTS)
    in.load.requests = SERVE_MIN_REQUESTS;
  if (in.load.kind == LOAD_TRACE && in.load.requests > ntrace)
    in.load.requests = ntrace;
  if (in.load.requests > SERVE_MAX_REQUESTS) {
    pm_error ("serve: %lld requests: at most %lld are simulated", (long long) in.load.requests,
              (long long) SERVE_MAX_REQUESTS);
    goto out;
  }
  if (serve_simulate (&in, &out) < 0) {
    rc = out.stuck ? -1 : -2;      /* refused, or a predictor failed */
    goto out;
  }
  stats_out (&out.ttft, &res->ttft_ms);
  stats_out (&out.tpot, &res->tpot_ms);
  stats_out (&out.itl, &res->itl_ms);
  stats_out (&out.e2e, &res->e2e_ms);
  res->duration_s = out.duration_ms / 1e3;
  res->output_tokens_per_s = out.steady_ms > 0 ? out.steady_tokens / (out.steady_ms / 1e3) : 0;
  res->output_tokens_per_s_per_gpu = res->gpus ? res->output_tokens_per_s / (double) res->gpus : 0;
  res->output_tokens_per_s_per_user = out.tpot.mean > 0 ? 1e3 / out.tpot.mean : NAN;
  res->requests_per_s = out.steady_tokens > 0 ? res->output_tokens_per_s * (double) out.requests
                                                / out.output_tokens : 0;
  res->requests = out.requests;
  res->preemptions = out.preemptions;
  res->iterations = out.iterations;
  res->kv_peak = out.kv_peak;
  res->kv_mean = out.kv_mean;
  res->batch_mean = out.batch_mean;
  res->transfer_ms = out.transfer_ms;
  rc = 0;
out:
  for (int k = 0; k < 2; k++)
    serve_replica_close (&lay[k]);
  if (base_open)
    serve_base_close (&base);
  free (tr_arr);
  free (tr_isl);
  free (tr_osl);
  return rc;
}
