/* serve.h: serving as engines run it: the engines' schedulers, one replica's iteration costs, and the discrete-event simulation of requests through them; included by core/internal.h, in its order. */
#ifndef PERFMOD_SERVE_H
#define PERFMOD_SERVE_H

#include "perfmod.h"

/* ---- engine.c: vLLM, SGLang and TensorRT-LLM as their sources set them up ---- */
enum serve_engine_id { ENGINE_VLLM, ENGINE_SGLANG, ENGINE_TRTLLM };
/* How an engine lets a request in and keeps its KV cache. */
enum serve_admit {
  ADMIT_ON_DEMAND,       /* vLLM: pages as tokens are scheduled; out of pages, the newest
                            running request is preempted and recomputed later */
  ADMIT_RATIO,           /* SGLang: room for the prompt and new_token_ratio of the running
                            requests' remaining outputs; out of room, decodes are retracted */
  ADMIT_RESERVE          /* TensorRT-LLM (GUARANTEED_NO_EVICT): pages for the whole prompt and
                            output at admission; nothing is ever evicted */
};
struct serve_engine {
  enum serve_engine_id id;
  const char *name;      /* vllm, sglang, trtllm */
  const char *title;     /* "vLLM 0.11 (V1 engine)" */
  int64_t max_tokens;    /* an iteration's token budget (80 GB class GPUs) */
  int64_t max_tokens_small; /* on GPUs under 70 GB or A100 (vLLM), else max_tokens */
  int64_t max_seqs;      /* running requests at most */
  int64_t max_seqs_small;
  int64_t prefill_tokens; /* SGLang: a prefill batch's prompt tokens at most (0: the budget) */
  bool mixed;            /* prompt chunks share an iteration with the decodes */
  bool chunked;          /* a prompt longer than the budget is split over iterations */
  int block;             /* tokens per KV page */
  double mem_fraction;   /* of the GPU's memory: weights, activations, KV cache */
  bool fraction_of_free; /* TensorRT-LLM: the fraction is of what the weights and
                            activations leave */
  enum serve_admit admit;
  int64_t graph_max;     /* the largest decode batch captured in a CUDA graph */
  double host_ms;        /* CPU time an iteration costs beyond the GPU's (scheduling,
                            sampling, outputs): 0 where it overlaps the GPU */
  double host_us_per_request; /* and per request in the iteration (sampling, outputs) */
  bool overlap;          /* the CPU prepares the next iteration while the GPU runs this one:
                            an iteration lasts the longer of the two */
  double frontend_ms;    /* the first token's time beyond the iterations (HTTP, tokenizer,
                            detokenizer, the response's way): added to the TTFT */
  double new_token_ratio, min_token_ratio; /* SGLang's reservation of future outputs */
};
/* Tokens per KV page of the engine (a cache holds whole pages). */
static inline int64_t
serve_page_tokens (const struct serve_engine *e)
{
  return e->block > 0 ? e->block : 1;
}
const struct serve_engine *serve_engine_find (const char *name);
/* "vllm, sglang or trtllm" */
extern const char serve_engine_names[];
/* The batch a decode-only iteration of `batch` requests runs at: the next
 * CUDA-graph size, or batch itself above the largest one. */
int64_t serve_graph_batch (const struct serve_engine *e, int64_t batch);

/* ---- cost.c: one replica's iteration costs, memoised ---- */
struct serve_layout {    /* what a replica's kernels are predicted from */
  struct plugin_set *set;
  struct plugin *pred;
  const struct model_cfg *m;
  const struct perfmod_gpu *gpu;
  const struct precision *prec;
  struct strategy s;     /* tp, pp, ep, etp of one replica (dp 1) */
  int replicas;          /* the replicas its experts span under attention data parallelism
                            (ep x etp = tp x replicas), else 1 */
  int gpus_per_node;
  struct dist_cache *cache;  /* chunk predictions to share, or NULL */
  const char *engine;    /* the engine's name (static): its fused MoE kernel */
  double routing;        /* its router (build_options.routing) */
};
struct serve_costs;
struct serve_costs *serve_costs_new (const struct serve_layout *l);
void serve_costs_free (struct serve_costs *c);
/* The parts of an iteration, ms (each -1 after pm_error):
 * every kernel but attention for `tokens` tokens with one logit row; */
int serve_cost_tokens (struct serve_costs *c, int64_t tokens, double *ms);
/* of serve_cost_tokens, the routed experts and their dispatch and combine
 * fed `fed` tokens in all (the layout's replicas together); */
int serve_cost_moe (struct serve_costs *c, double fed, double *ms);
/* the logits of `rows` rows beyond the one; */
int serve_cost_logits (struct serve_costs *c, int64_t rows, double *ms);
/* the attention of a prompt chunk of q tokens after ctx cached ones; */
int serve_cost_prefill_attn (struct serve_costs *c, int64_t q, int64_t ctx, double *ms);
/* the attention of `batch` decoding requests over ctx cached tokens in all. */
int serve_cost_decode_attn (struct serve_costs *c, int64_t batch, double ctx, double *ms);
/* Predictions made for the memo (its misses). */
size_t serve_costs_evaluations (const struct serve_costs *c);

/* ---- sim.c: requests through the engine's iterations ---- */
enum serve_load { LOAD_CLOSED, LOAD_RATE, LOAD_TRACE };
struct serve_workload {
  enum serve_load kind;
  int64_t concurrency;   /* LOAD_CLOSED: clients, each sending when its last request ends */
  double rate;           /* LOAD_RATE: requests per second, Poisson */
  int64_t requests;      /* how many */
  int64_t isl, osl;      /* prompt and output tokens (LOAD_CLOSED, LOAD_RATE) */
  uint64_t seed;
  const double *arrival_ms;  /* LOAD_TRACE: per request */
  const int64_t *isl_v, *osl_v;
};
struct serve_pool {      /* replicas of one layout and their engine */
  struct serve_costs *costs;
  int replicas;
  int lockstep;          /* attention data parallelism: its replicas step together in groups
                            of this many (a worker's), the experts fed by them all; else 1 */
  int64_t kv_tokens;     /* KV capacity per replica, tokens */
  int64_t max_seqs, max_tokens;
  double kv_bytes_per_token;  /* of a replica, all its GPUs (disaggregated transfers) */
};
/* Speculative decoding: k draft tokens a step, each accepted with
 * probability `accept` while the ones before it were. */
enum serve_spec_kind { SPEC_NONE, SPEC_MTP, SPEC_EAGLE, SPEC_NGRAM };
struct serve_spec {
  enum serve_spec_kind kind;
  int tokens;
  double accept;
  double draft_layers;   /* a draft token's pass as a share of the model's layers (MTP and
                            EAGLE: one layer and the logits; n-gram: 0) */
};
struct serve_sim_input {
  const struct serve_engine *eng;
  struct serve_pool pool;        /* aggregated: every replica; disaggregated: the prefill ones */
  struct serve_pool decode;      /* disaggregated: the decode replicas (replicas 0: aggregated) */
  double transfer_gbps;          /* disaggregated: the KV cache's link, GB/s per request */
  double transfer_us;            /* and its latency */
  double kv_read_scale;          /* the KV cache's bytes over the activations' (fp8 cache) */
  struct serve_workload load;
  struct serve_spec spec;
};
struct serve_stats {
  double mean, p50, p90, p99;
};
struct serve_metrics {
  struct serve_stats ttft, tpot, itl, e2e;   /* ms */
  double duration_ms;            /* first arrival to last token */
  double output_tokens, input_tokens;
  double steady_ms, steady_tokens; /* the throughput's window and its output tokens */
  int64_t requests, preemptions, iterations;
  double kv_peak, kv_mean;       /* of the KV capacity, the busiest replica's */
  double batch_mean;             /* requests per decoding iteration */
  double transfer_ms;            /* disaggregated: mean KV transfer per request */
  bool stuck;                    /* a request could never be scheduled (said) */
};
int serve_simulate (const struct serve_sim_input *in, struct serve_metrics *out);

/* ---- serve.c: a serving request resolved, simulated, reported ---- */
/* What a request's simulations share: the GPU, engine, precision,
 * predictor and model. */
struct serve_base {
  struct plugin_set *set;
  const struct gpu_entry *ge;
  const struct serve_engine *e;
  const struct precision *pr;
  struct plugin *pred;
  struct model_cfg m;
  bool m_open;
  double kv_scale;       /* the KV cache's bytes over the activations' */
  int gpn;               /* GPUs per node */
  double routing;        /* the router (build_options.routing): 0 the default power law */
};
/* NULL names take perfmod serve's defaults (engine vllm, predictor
 * tile-mlp, the GPU's dtype); -1 after pm_error. */
int serve_base_open (struct serve_base *b, struct plugin_set *set, const struct gpu_db *gpus,
                     const char *model, const char *gpu, const char *engine, const char *dtype,
                     const char *kv_dtype, const char *predictor, int64_t gpus_per_node);
void serve_base_close (struct serve_base *b);
/* One replica of a layout: its memory, the engine's limits on it, its costs. */
struct serve_replica {
  struct strategy s;
  struct serve_costs *costs;
  double weights, kv_per_token;   /* bytes per GPU */
  double workspace;               /* bytes per GPU an iteration's activations take */
  double kv_bytes;                /* per GPU, for the KV cache */
  int64_t kv_tokens, max_tokens, max_seqs, graph_max;
  int gpus;
};
/* s a replica (its dp ignored); max_batch and max_tokens 0 for the
 * engine's defaults; tokens a request's prompt and output; what names the
 * layout in messages; -1 after pm_error. */
int serve_replica_open (struct serve_replica *l, const struct serve_base *b,
                        const struct strategy *s, int64_t max_batch, int64_t max_tokens,
                        int64_t tokens, struct dist_cache *chunks, const char *what);
void serve_replica_close (struct serve_replica *l);
void serve_pool_of (const struct serve_replica *l, int replicas, struct serve_pool *p);
/* A strategy of serving keys only (tp, pp, ep, etp, and dp where replicas). */
int serve_parse_layout (struct strategy *s, const char *spec, const char *what, bool replicas);
/* in's engine, pools and transfer link from replicas of pool (and of
 * decode, disaggregated; NULL: aggregated); its load and spec.kind are the
 * caller's. */
int serve_input (const struct serve_base *b, const struct serve_replica *pool, int replicas,
                 const struct serve_replica *decode, int decode_replicas,
                 struct serve_sim_input *in);
/* Kept across calls that predict the same model (reproduce --table
 * serving): the chunk predictions. */
struct serve_cache {
  char *model;
  struct dist_cache *chunks;
};
void serve_cache_free (struct serve_cache *c);
/* The perfmod serve command line of q (the caller frees it). */
char *serve_command (const struct perfmod_serve_request *q);
/* perfmod_serve's work on a plugin set and GPU database; cache may be
 * NULL.  0; -1 after pm_error where the request is refused (bad input),
 * -2 where a predictor failed. */
int serve_run (struct plugin_set *set, const struct gpu_db *gpus,
               const struct perfmod_serve_request *req, struct perfmod_serve_result *res,
               struct serve_cache *cache);

/* ---- search.c: perfmod search --serve ---- */
struct serve_search_opts {
  const char *model, *gpu, *engine, *dtype, *kv_dtype, *predictor;
  int64_t gpus, gpus_per_node, isl, osl, max_tp;
  double ttft, tpot;     /* the targets, ms (0: none) */
  double routing;        /* the router (build_options.routing): 0 the default */
  bool disagg;           /* disaggregated splits too */
  int jobs;
};
struct serve_point {     /* one deployment at one batch */
  char deploy[160];      /* "tp=4,dp=2" or "prefill 2 x {tp=2} + decode 1 x {tp=4}" */
  char command[320];     /* perfmod serve's options for it (beside model, GPU, lengths) */
  char launch[512], launch_prefill[512];  /* the engine's commands (decode's, prefill's) */
  int64_t concurrency, batch, gpus;
  double ttft, tpot;     /* ms */
  double tps_gpu, tps_user;  /* output tokens/s per GPU, per user */
  bool oom, frontier, slo;
};
struct serve_search_result {
  struct serve_point *pts;   /* best for users first; on the frontier or not */
  size_t n;
  int64_t best;              /* the most per GPU within the targets, or -1 */
  uint64_t configurations;   /* simulated */
  uint64_t refused, pruned;  /* a layout the model cannot take; batches past saturation */
  double seconds;
};
/* 0, SEARCH_BAD_REQUEST or SEARCH_FAILED (said). */
int serve_search (struct plugin_set *set, const struct gpu_db *gpus,
                  const struct serve_search_opts *o, struct serve_search_result *res);

/* ---- report/frontier.c: the serving search's chart ---- */
struct frontier_point {
  double x, y;           /* tokens/s per user, per GPU */
  bool frontier, best;
  char label[200];
};
int frontier_plot_write (const char *path, const char *title, const struct frontier_point *p,
                         size_t n);

#endif /* PERFMOD_SERVE_H */
