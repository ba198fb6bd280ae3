/* perfmod.h: libperfmod, perfmod's predictions from C: a training step or an inference run of a model on GPUs under a parallel strategy, the same numbers as the perfmod command. */
#ifndef PERFMOD_H
#define PERFMOD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A context holds the GPU database and the loaded plugins.  Open one per
 * configuration of plugins; predictions on one context may run on several
 * threads at once.  Nothing in the library exits the process or prints:
 * every failure returns -1 (or NULL) with a one-line reason in the
 * caller's buffer (dropped where none is given).  Every number is checked
 * against the command line's range, every struct_size against the
 * library's struct; a context that is closed is refused, closing it again
 * does nothing. */
typedef struct perfmod_ctx perfmod_ctx;

/* The data directory (gpus.d, models, params...) and the plugin
 * directory: NULL for the installed ones (or $PERFMOD_DATADIR,
 * $PERFMOD_PLUGIN_DIR).  err (errlen bytes) gets the reason of a NULL. */
perfmod_ctx *perfmod_open (const char *datadir, const char *plugindir, char *err, size_t errlen);
void perfmod_close (perfmod_ctx *ctx);

/* What to predict.  Zero-initialise, set struct_size = sizeof, fill in
 * what you need; 0 or NULL fields take the command line's defaults. */
struct perfmod_request {
  uint32_t struct_size;
  const char *model;        /* built-in name or a Hugging Face config.json (required) */
  const char *gpu;          /* gpus.d section or alias; NULL: "h100" */
  const char *mode;         /* "train" or "inf"; NULL: "train" */
  const char *precision;    /* fp32, amp-fp16, bf16, fp8, fp8-cs, tf32 (train) or a dtype (inf,
                               mxfp4 too: MXFP4 experts, with engine); NULL: what the GPU runs
                               (bf16 where it has bf16 units) */
  const char *strategy;     /* "tp=8,pp=4,..." as --strategy; NULL: one GPU */
  const char *predictor;    /* NULL: "tile-mlp", the most accurate (roofline: a bound) */
  const char *attention;    /* "flash" or "unfused"; NULL: the run's default */
  int64_t batch;            /* global batch (sequences); 0: 4 */
  int64_t seq;              /* tokens per sequence; 0: 1024 */
  int64_t nodes;            /* 0: as many as the strategy needs */
  int64_t gpus_per_node;    /* 0: the GPU's */
  /* Appended (struct_size says): mode "inf" built as that serving engine runs it, "vllm",
   * "sglang" or "trtllm" (its fused kernels, the MoE layers as its MoE kernel; the command
   * line's --engine=NAME); NULL: the eager modules. */
  const char *engine;
  /* Appended: with engine, how its router spreads tokens over the experts (--routing):
   * "uniform", "powerlaw" or "powerlaw:A"; NULL: "powerlaw" (exponent 1.01). */
  const char *routing;
};

/* What a prediction gives: the fields of perfmod --strategy --format json,
 * by the same names. */
struct perfmod_result {
  uint32_t struct_size;
  double step_ms;            /* the step: pipeline + exposed gradient sync + optimizer */
  double pipeline_ms, bubble, bubble_ms, grads_ms, optimizer_ms, recompute_ms;
  double mfu;               /* fraction of the GEMM dtype's peak */
  double tokens_per_s;      /* global batch x seq / step */
  double memory_total_gib, memory_weights_gib, memory_gradients_gib, memory_optimizer_gib;
  double memory_activations_gib, memory_kv_cache_gib, memory_reserve_gib, capacity_gib;
  int oom;                  /* 1: predicted not to fit (a result, not an error) */
  int microbatches;
  /* appended (a caller built against an older header sets a smaller struct_size and
   * gets none of these) */
  double host_wait_ms;      /* of pipeline_ms: the device waiting for the host's launches */
};

/* Predict req into res: 0, or -1 with the reason in err. */
int perfmod_predict (perfmod_ctx *ctx, const struct perfmod_request *req,
                     struct perfmod_result *res, char *err, size_t errlen);

/* ---- Search: every parallel configuration of a training step ----
 * What perfmod search does: every tp, pp, cp, dp, ep, micro-batch,
 * schedule (1F1B, GPipe, interleaved with vp), uneven layer splits,
 * ZeRO stage, recomputation, sequence parallelism and, with it under
 * kernels=te, tensor-parallel communication overlap (tpo) of the
 * model's training step on `gpus` GPUs enumerated, the ones that
 * cannot run pruned and counted by reason, the rest predicted on `jobs`
 * threads, the best `top` returned, best first (doc/search.md).
 *
 * Zero-initialise the request, set struct_size = sizeof, fill in what
 * you need; 0 or NULL fields take perfmod search's defaults. */
struct perfmod_search_request {
  uint32_t struct_size;
  const char *model;        /* built-in name or a Hugging Face config.json (required) */
  const char *gpu;          /* gpus.d section or alias; NULL: "h100" */
  const char *precision;    /* fp32, amp-fp16, bf16, fp8, fp8-cs or tf32; NULL: what the GPU runs */
  const char *predictor;    /* NULL: "tile-mlp", the most accurate (roofline: a bound) */
  const char *objective;    /* "time", "cost" or "tokens-per-s"; NULL: "time" */
  const char *fix;          /* "tp=8,zero=1,...": keys held fixed, as --fix; NULL: none */
  int64_t gpus;             /* GPUs in all (required) */
  int64_t global_batch;     /* sequences per step (required) */
  int64_t seq;              /* tokens per sequence; 0: the model's positions, at most 2048 */
  int64_t gpus_per_node;    /* 0: the GPU's */
  int64_t max_tp;           /* 0: one node */
  int64_t max_cp;           /* 0: 8 */
  int64_t top;              /* how many best to return, 1 to 1000; 0: 10 */
  int64_t jobs;             /* threads; 0: the CPUs online */
  double tokens;            /* tokens to train, for train_hours and cost_usd; 0: none */
  double price_per_gpu_hour;   /* USD, for cost_usd; 0: none */
  /* This call's share of the space: configurations part, part + nparts,
   * part + 2 nparts... of the enumeration are predicted (the counts of
   * pruning before prediction are the whole space's).  0 and 0: all. */
  int64_t part, nparts;
  /* Called on the calling thread about 4 times a second while the
   * threads predict (NULL: never): done of total predicted so far. */
  void (*progress) (void *arg, uint64_t done, uint64_t total);
  void *progress_arg;
};

/* One of the best configurations: the fields of perfmod search's JSON
 * `best` rows, by the same names. */
struct perfmod_search_row {
  char strategy[256];       /* "tp=..,pp=..,...,kernels=..": reruns it as --strategy */
  double step_ms;           /* the training step */
  double tokens_per_s;      /* global batch x seq / step */
  double mfu;               /* fraction of the GEMM dtype's peak */
  double memory_gib;         /* per GPU */
  double train_hours;       /* tokens / tokens_per_s; 0 without tokens */
  double cost_usd;          /* train_hours x gpus x price; 0 without both */
  int tp, pp, dp, cp, ep, mbs, vp, zero, sp;   /* the strategy's numbers */
  uint64_t index;           /* position in the enumeration: equal steps rank by it */
  /* Appended (check row_size): tp communication overlapped with the
   * GEMMs (strategy key tpo; with sp and kernels=te only) */
  int tpo;
};

/* Why configurations were pruned, in the order of the result's pruned[]. */
enum perfmod_search_prune {
  PERFMOD_PRUNE_TP,         /* tp does not divide the heads, key/value heads or ffn */
  PERFMOD_PRUNE_EP,         /* ep does not divide the experts */
  PERFMOD_PRUNE_BATCH,      /* global batch not a multiple of dp x mbs, or > 2^20 of them */
  PERFMOD_PRUNE_INTERLEAVE, /* layers not a multiple of pp x vp, or micro-batches of pp */
  PERFMOD_PRUNE_ZERO3_PP,   /* ZeRO-3 with pipeline stages: not modelled */
  PERFMOD_PRUNE_MEMORY,     /* out of memory by the memory model (its times not predicted) */
  PERFMOD_PRUNE_FIXED,      /* outside fix or max_tp */
  PERFMOD_PRUNE_CP          /* cp with unfused attention, or seq not 2 x cp chunks */
};
#define PERFMOD_SEARCH_MAX_PRUNE 16   /* room in pruned[] for reasons to come */

/* What a search gives.  Zero-initialise, set struct_size and row_size
 * to their sizeof before the call; free with perfmod_search_result_free. */
struct perfmod_search_result {
  uint32_t struct_size;
  uint32_t row_size;        /* sizeof (struct perfmod_search_row): best[] is filled so */
  char *model, *gpu, *precision, *predictor, *objective;   /* the run, resolved */
  int64_t gpus, global_batch, seq, gpus_per_node;
  uint64_t configurations;  /* enumerated */
  uint64_t predicted;       /* predicted (the rest were pruned before) */
  struct {
    const char *key;        /* as in JSON: "tp", "ep", "batch", ... */
    const char *what;       /* in words */
    uint64_t n;
  } pruned[PERFMOD_SEARCH_MAX_PRUNE];
  int npruned;              /* entries of pruned[] filled */
  double seconds;           /* the search's own time */
  struct perfmod_search_row *best;   /* best first */
  size_t nbest;             /* 0 when every configuration was pruned (not an error) */
};

/* Search req into res: 0, or -1 with the reason in err (a request that
 * leaves nothing to predict is refused so).  Searches on one context may
 * run on several threads at once. */
int perfmod_search (perfmod_ctx *ctx, const struct perfmod_search_request *req,
                    struct perfmod_search_result *res, char *err, size_t errlen);
/* What perfmod_search allocated in res (res itself is the caller's). */
void perfmod_search_result_free (struct perfmod_search_result *res);

/* ---- Serving: requests through a serving engine's iterations ----
 * What perfmod serve does (doc/serving.md): requests arrive (a closed
 * loop of clients, a Poisson rate, or a trace), the engine (vLLM, SGLang
 * or TensorRT-LLM) schedules each iteration as its scheduler does
 * (continuous batching, chunked prefill under its token budget, its
 * batch limit, a paged KV cache the memory leaves, preemption), each
 * iteration costs the predicted time of its kernels, and the requests'
 * times come out.  Zero-initialise the request, set struct_size = sizeof,
 * fill in what you need; 0 or NULL fields take perfmod serve's defaults. */
struct perfmod_serve_request {
  uint32_t struct_size;
  const char *model;        /* built-in name or a Hugging Face config.json (required) */
  const char *gpu;          /* gpus.d section or alias; NULL: "h100" */
  const char *dtype;        /* bf16, fp16, fp8, fp8_block, nvfp4 (the GEMMs and weights) or mxfp4
                               (MXFP4 experts, the rest bf16); NULL: the GPU's */
  const char *kv_dtype;     /* the KV cache's: NULL as the activations, or "fp8" */
  const char *strategy;     /* "tp=..,pp=..,ep=..,etp=..,dp=..": a replica and dp of them;
                               NULL: one GPU */
  const char *engine;       /* "vllm", "sglang" or "trtllm"; NULL: "vllm" */
  const char *predictor;    /* NULL: "tile-mlp" */
  int64_t concurrency;      /* a closed loop of this many clients, or: */
  double rate;              /* Poisson arrivals, requests per second, or: */
  const char *trace;        /* a CSV file: arrival_ms, isl, osl per request */
  int64_t isl, osl;         /* prompt and output tokens per request (not with trace) */
  int64_t requests;         /* requests to simulate; 0: 10 x concurrency, at least 100 */
  int64_t max_batch;        /* the engine's running requests at most; 0: its default */
  int64_t max_tokens;       /* its tokens per iteration at most; 0: its default */
  int64_t gpus_per_node;    /* 0: the GPU's */
  uint64_t seed;            /* of the Poisson arrivals; 0: 1 */
  /* Disaggregated prefill and decode: prefill_workers replicas of
   * prefill_strategy prefill, then hand the KV cache to one of
   * decode_workers replicas of decode_strategy (strategy unused). */
  const char *prefill_strategy, *decode_strategy;
  int64_t prefill_workers, decode_workers;
  int64_t prefill_max_batch;    /* the prefill replicas' max_batch (0: the engine's) */
  /* Speculative decoding: NULL, "mtp", "eagle" or "ngram"; spec_tokens
   * drafts a step (0: 1 for mtp, 3 otherwise), each accepted with
   * probability spec_accept (0 < a < 1) when the ones before it were. */
  const char *spec;
  int64_t spec_tokens;
  double spec_accept;
  /* Appended: how the router spreads tokens over the experts (--routing): "uniform",
   * "powerlaw" or "powerlaw:A"; NULL: "powerlaw" (exponent 1.01). */
  const char *routing;
};

struct perfmod_serve_stats {
  double mean, p50, p90, p99;
};

/* What perfmod_serve gives: perfmod serve --format json's fields. */
struct perfmod_serve_result {
  uint32_t struct_size;
  struct perfmod_serve_stats ttft_ms;   /* arrival to the first token */
  struct perfmod_serve_stats tpot_ms;   /* per request: (last - first token) / (osl - 1) */
  struct perfmod_serve_stats itl_ms;    /* between consecutive tokens */
  struct perfmod_serve_stats e2e_ms;    /* arrival to the last token */
  double output_tokens_per_s;           /* all GPUs, over the run */
  double output_tokens_per_s_per_gpu;
  double output_tokens_per_s_per_user;  /* 1000 / mean TPOT */
  double requests_per_s;
  double duration_s;                    /* first arrival to last token */
  int64_t requests, preemptions, iterations;
  int64_t gpus;                         /* in all */
  int64_t kv_capacity_tokens;           /* per (decode) replica */
  double kv_peak, kv_mean;              /* fractions of it used */
  double batch_mean;                    /* requests per iteration that decodes */
  double weights_gib, kv_cache_gib, capacity_gib;  /* per GPU (the decode replicas') */
  int oom;                  /* 1: the weights leave no room for one request (a result) */
  int64_t max_batch, max_tokens;        /* the engine's limits as simulated */
  double transfer_ms;                   /* disaggregated: the mean KV transfer */
  char engine[16];
  char assumed[1024];                   /* what the run filled in, one line */
};

/* Simulate req into res: 0, or -1 with the reason in err. */
int perfmod_serve (perfmod_ctx *ctx, const struct perfmod_serve_request *req,
                   struct perfmod_serve_result *res, char *err, size_t errlen);

/* The library's version, "0.1.0". */
const char *perfmod_version (void);

#ifdef __cplusplus
}
#endif

#endif /* PERFMOD_H */
