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
 * caller's buffer. */
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
  const char *precision;    /* fp32, amp-fp16, bf16, fp8, tf32 (train) or a dtype (inf);
                               NULL: what the GPU runs (bf16 where it has bf16 units) */
  const char *strategy;     /* "tp=8,pp=4,..." as --strategy; NULL: one GPU */
  const char *predictor;    /* NULL: "roofline" */
  const char *attention;    /* "flash" or "unfused"; NULL: the run's default */
  int64_t batch;            /* global batch (sequences); 0: 4 */
  int64_t seq;              /* tokens per sequence; 0: 1024 */
  int64_t nodes;            /* 0: as many as the strategy needs */
  int64_t gpus_per_node;    /* 0: the GPU's */
};

/* What a prediction gives: the fields of perfmod --strategy --format json,
 * by the same names. */
struct perfmod_result {
  uint32_t struct_size;
  double e2e_ms;            /* the step: pipeline + exposed gradient sync + optimizer */
  double pipeline_ms, bubble, bubble_ms, grads_ms, optimizer_ms, recompute_ms;
  double mfu;               /* fraction of the GEMM dtype's peak */
  double tokens_per_s;      /* global batch x seq / step */
  double memory_total_gb, memory_weights_gb, memory_gradients_gb, memory_optimizer_gb;
  double memory_activations_gb, memory_kv_cache_gb, memory_reserve_gb, capacity_gb;
  int oom;                  /* 1: predicted not to fit (a result, not an error) */
  int microbatches;
};

/* Predict req into res: 0, or -1 with the reason in err. */
int perfmod_predict (perfmod_ctx *ctx, const struct perfmod_request *req,
                     struct perfmod_result *res, char *err, size_t errlen);

/* The library's version, "0.1.0". */
const char *perfmod_version (void);

#ifdef __cplusplus
}
#endif

#endif /* PERFMOD_H */
