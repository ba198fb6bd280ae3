/* parallel.h: parallelism: strategies, memory, pipeline schedules, graph-level parallelism, the search; included by core/internal.h, in its order. */
#ifndef PERFMOD_PARALLEL_H
#define PERFMOD_PARALLEL_H

/* ---- strategy.c ---- */
enum pm_schedule { SCHED_1F1B, SCHED_GPIPE, SCHED_INTERLEAVED };
enum pm_recompute { RECOMPUTE_NONE, RECOMPUTE_SELECTIVE, RECOMPUTE_FULL };
/* What selective recomputation runs again (Megatron-Core's
 * --recompute-modules; bits of struct node's rmod, enum pm_rmod in
 * model.h); the attention core alone where none are given. */
const char *rmod_names (unsigned mask, char *buf, size_t len);
/* Whose kernels run the model: PyTorch eager (Hugging Face's modules, as
 * NeuSight traced them), Megatron-LM's fused fp32 GPT layer, or
 * Megatron-Core's layer with Transformer Engine's fused kernels. */
enum pm_kernels { KERNELS_EAGER, KERNELS_MEGATRON, KERNELS_TE };
#define PM_MAX_STAGES 256
struct strategy {
  int tp, pp, dp, ep, mbs, vp, zero;
  int cp;                /* context parallelism: the sequence over cp ranks (ring attention) */
  int etp;               /* the routed experts' tensor-parallel degree with ep within the tp
                            ranks (serving: ep x etp = tp); 0: not given (the experts' width
                            over tp, ep's ranks beside them) */
  int split[PM_MAX_STAGES];  /* layers per pipeline stage or, with vp, per chunk (model
                                order: rank c % pp's chunk c / pp), given; nsplit 0: even */
  int nsplit;
  /* Megatron-Core's uneven splits: --decoder-first/last-pipeline-num-layers (0: not
   * given) and --account-for-embedding/loss-in-pipeline-split (strategy_chunk_layers) */
  int first_layers, last_layers;
  bool account_embed, account_loss;
  bool sp;               /* sequence parallelism with tp */
  bool tpo;              /* tp communication overlapped with the GEMMs (TE userbuffers) */
  int dispatcher;        /* enum perfmod_dispatcher: ep's all-to-all, all-gather or DeepEP */
  bool a2a_overlap;      /* ep's dispatch and combine behind another micro-batch's work */
  bool shared_overlap;   /* ep's dispatch and combine beside the shared experts' GEMMs */
  enum pm_schedule schedule;
  enum pm_recompute recompute;
  unsigned recompute_modules; /* RM_* bits recompute=selective runs again; 0: the attention
                                 core (RM_CORE_ATTN) */
  int mtp;               /* multi-token prediction layers on the last stage (Megatron-Core's
                            --mtp-num-layers); 0: none */
  double host_us;        /* the host's cost of one kernel launch in training, us (0: the
                            host never holds the device up: CUDA graphs) */
  bool grad_low;         /* gradients kept and reduced in the weights' 2-byte dtype, not fp32
                            (grad_fp32=0: Megatron's --grad-reduce-in-bf16, the Bridge's
                            ddp.grad_reduce_in_fp32=False) */
  enum pm_kernels kernels;
  bool dp_set;
  bool zero_set;         /* zero given (else strategy_default_zero's) */
  bool host_us_set;      /* host_us given (else PM_HOST_LAUNCH_US, on the assumed: line) */
  bool kernels_set;      /* kernels given (else the run's default) */
  bool dispatcher_set;   /* dispatcher given (else alltoall; a serving engine's all-gather
                            under attention data parallelism) */
};
struct preset {
  char *name;
  char *spec;            /* the keys joined as a spec "tp=8,pp=4" */
  char *file;
  int line;
};
struct preset_db {
  struct preset *v;
  size_t n;
};
void strategy_init (struct strategy *s);
/* Parse "tp=8,pp=4" into s.  where names the origin for messages. */
int strategy_parse (struct strategy *s, const char *spec, const char *where);
/* The modules s's selective recomputation runs again: those given, else
 * the attention core. */
unsigned strategy_rmods (const struct strategy *s);
int preset_db_load (struct preset_db *db, const char *dir);
const struct preset *preset_db_find (const struct preset_db *db, const char *name);
void preset_db_free (struct preset_db *db);
const char *schedule_name (enum pm_schedule s);
const char *recompute_name (enum pm_recompute r);
const char *kernels_name (enum pm_kernels k);
const char *dispatcher_name (int d);    /* enum perfmod_dispatcher */
/* Fit the strategy to the GPUs given and the batch; fills dp when unset. */
/* nodes: --nodes (0: not given, dp stays as set or 1); gpus_per_node the
 * node's GPUs. */
int strategy_resolve (struct strategy *s, int64_t nodes, int gpus_per_node, int64_t batch);
/* A training step under Megatron-Core's kernels over data-parallel ranks runs its
 * distributed optimizer (zero=1), as its recipes do, unless zero was given: true when it
 * chose zero=1. */
bool strategy_default_zero (struct strategy *s, bool train);
/* Whether the distributed optimizer has replicas to shard over: dp's, or the
 * routed experts' beyond them (etp=1 with dp 1). */
bool strategy_shards (const struct strategy *s);
/* Whether an inference layout of `replicas` replicas (dp's, or serving's) puts its routed
 * experts over every replica's tp ranks: ep x etp = tp x replicas, more than one replica
 * (attention data parallelism: vLLM's --data-parallel-size with --enable-expert-parallel,
 * TensorRT-LLM's and SGLang's attention DP; etp=1 each expert whole, etp > 1 each expert's
 * width over etp of the ranks, TensorRT-LLM's moe_tp_size). */
bool strategy_attention_dp (const struct strategy *s, int replicas);
/* The dispatcher ep's tokens go by: the one given, else alltoall, or under attention data
 * parallelism the engines' all-gather (vLLM's allgather_reducescatter, TensorRT-LLM's and
 * SGLang's attention-DP default). */
int strategy_dispatcher (const struct strategy *s, bool attention_dp);
/* split= for the pp x vp chunks when they do not divide the layers (pp x vp <=
 * PM_MAX_STAGES), as perfmod search tries it: layers / chunks each, the extra ones to the
 * middle chunks first. */
void strategy_uneven_split (struct strategy *s, int64_t layers);
/* The keys of s beyond the degrees, schedule and kernels that are not at their defaults:
 * its uneven split (split=, first_layers=, last_layers=, account_embed=1, account_loss=1),
 * dispatcher=, a2a_overlap=1 and shared_overlap=1, each after `sep`, into buf of len bytes: whole keys, those
 * that fit ("" for none). */
void strategy_extra_keys (const struct strategy *s, char sep, char *buf, size_t len);
/* The --strategy string that reruns s ("tp=8,pp=4,...,kernels=te" and the extra keys). */
void strategy_spec (const struct strategy *s, char *buf, size_t len);
/* ---- launch.c ---- */
enum { LAUNCH_MEGATRON, LAUNCH_NEMO };
/* The arguments that run s's training step of m (batch sequences of seq tokens, in pr, dp's
 * gradients reduced during the backward when dp_overlap) as Megatron-LM's command line
 * (LAUNCH_MEGATRON) or as overrides of a Megatron-Bridge recipe (LAUNCH_NEMO), into buf of
 * len bytes; -1 after a message when the tool has no such run (kernels=eager, GPipe, etp). */
int launch_args (int tool, const struct strategy *s, const struct model_cfg *m,
                 const struct precision *pr, int64_t batch, int64_t seq, bool dp_overlap,
                 char *buf, size_t len);

/* Whether s splits the layers unevenly (split=, first_layers/last_layers, account_*). */
bool strategy_uneven (const struct strategy *s);
/* The layers of pipeline chunk c of s (model order: rank c % pp's chunk c / pp) for a
 * model of `layers` layers, once strategy_check_split passed. */
int64_t strategy_chunk_layers (const struct strategy *s, int64_t layers, int c);
/* Whether s's split fits a model of `layers` layers: -1 after pm_error naming where. */
int strategy_check_split (const struct strategy *s, int64_t layers, const char *where);
/* kernels=megatron runs its own masked softmax: flash attention asked of it (opt, the
 * option's name) is refused. */
int strategy_check_attention (const struct strategy *s, const char *opt, const char *attention);

/* ---- memory.c ---- */
struct precision;
struct memory_options {
  const struct precision *prec; /* NULL: fp32 */
  int64_t batch, seq;    /* micro-batch sequences and tokens */
  bool train;
  enum pm_recompute recompute;
  int64_t kv_len;        /* decode step: cached tokens (0: prefill) */
  int64_t gen;           /* inference: tokens generated after the prompt */
  const struct mem_shard *shard; /* NULL: the whole model on one device */
  bool flash;            /* fused attention: no scores kept */
  bool megatron_core;    /* kernels=te: Megatron-Core's cross-entropy */
  unsigned recompute_modules; /* with selective: enum pm_rmod bits (0: the attention core) */
};
struct mem_shard {       /* one device's share under graph-level parallelism */
  int tp;                /* activations split over tensor-parallel ranks */
  bool sp;               /* and the norm/dropout regions too (sequence parallel) */
  bool tpo;              /* Transformer Engine's userbuffers (tp communication overlap) */
  bool routed_gathered;  /* the routed copies of every tp rank's tokens on each (Megatron-Core's
                            default expert tp, dist_plan's moe_tp_after) */
  double params;         /* parameters held */
  double layer_copies;   /* layers' activations kept: layers x micro-batches in flight */
  bool embed, head;      /* first stage's embedding output, last stage's logits */
  int vocab;             /* logits split over this many ranks */
  double weights, gradients, optimizer; /* ZeRO divisors */
  double expert_params;  /* of params, the routed experts': their own divisors (over the
                            expert data-parallel group) */
  double expert_weights, expert_gradients, expert_optimizer;
  double grad_bytes;     /* per parameter (0: the precision's) */
  double gradient_buffers; /* extra unsharded gradient copies (data-parallel buckets) */
  double comm_buffers;   /* bytes communication libraries register (DeepEP's), counted with
                            the activations as Transformer Engine's userbuffers are */
  int mtp;               /* multi-token prediction heads beside the output layer (head) */
};
struct memory_estimate { /* bytes */
  double weights, gradients, optimizer, activations, kv_cache, reserve, total;
  double capacity;       /* the GPU's */
  bool oom;
};
/* Kept free for the CUDA context, the allocator's fragmentation and
 * workspaces: a fixed part and a share of what the run holds. */
#define MEMORY_RESERVE_FIXED_BYTES 1.0e9
#define MEMORY_RESERVE_FRACTION 0.05
#define MEMORY_RESERVE_TEXT "10^9 bytes + 5 %"
void memory_estimate (const struct model_cfg *m, const struct memory_options *o,
                      const struct perfmod_gpu *gpu, struct memory_estimate *out);

/* ---- pipeline.c ---- */
struct pipe_input {
  int stages, vp, microbatches;
  enum pm_schedule schedule;
  bool backward;         /* training: each micro-batch's backward too */
  const double *fw_ms, *bw_ms; /* per model chunk (stages x vp, in model order;
                                  chunk c runs on rank c mod stages) */
  double p2p_ms;         /* one activation (or gradient) transfer between chunks */
  struct pipe_log *log;  /* each rank's operations recorded (--plot), or NULL */
};
/* What a rank ran (PEV_FW, PEV_BW) or waited for (PEV_P2P: an activation
 * or gradient on its way from the neighbouring rank), in ms of the step. */
enum pipe_event_kind { PEV_FW, PEV_BW, PEV_P2P };
struct pipe_event {
  int rank, kind, mb, chunk;
  double start, end;
};
struct pipe_log {        /* zero-initialised; each rank's events in the order it ran them */
  struct pipe_event *ev;
  size_t n, cap;
};
void pipe_log_free (struct pipe_log *l);
struct pipe_result {
  double step_ms;        /* first forward to last backward */
  double bubble;         /* idle fraction of the ranks over the step */
};
int pipeline_simulate (const struct pipe_input *in, struct pipe_result *out);
/* Schedules compiled once per shape (stages, vp, micro-batches, schedule,
 * backward) and rerun for each strategy's times: one thread's, never
 * shared.  pipeline_simulate_with gives pipeline_simulate's answer, bit
 * for bit (NULL progs, a log, or a shape not compiled: simulated). */
struct pipe_progs;
struct pipe_progs *pipe_progs_new (void);
void pipe_progs_free (struct pipe_progs *pp);
int pipeline_simulate_with (struct pipe_progs *pp, const struct pipe_input *in,
                            struct pipe_result *out);

/* ---- parallel.c: graph-level parallelism ---- */
struct dist_options {
  const struct strategy *s;
  const struct precision *prec; /* NULL: fp32 */
  bool train, fusion;
  bool flash;            /* fused attention kernels */
  int64_t batch, seq;    /* global batch (sequences) and tokens per sequence */
  int64_t gen;
  int64_t kv_len;        /* > 0: one decode step of the batch over kv_len cached tokens */
  bool engine;           /* a serving engine's kernels (build_options.engine) */
  const char *engine_name; /* that engine (a static name: vllm, sglang, trtllm), or NULL */
  double routing;        /* its router (build_options.routing): 0 the default */
  int gpus_per_node;
  struct dist_cache *cache; /* chunk predictions shared across strategies, or NULL */
  struct memo *memo;     /* kernel estimates kept across graphs (run_options.memo) */
  struct timeline *timeline; /* the step's schedule recorded (--plot), or NULL */
  bool stop_if_oom;      /* out of memory: no times predicted (a search's pruning) */
  int replicas;          /* serving: the data-parallel replicas of a layout whose graphs are
                            built one replica at a time (dp 1); 0: the strategy's dp */
};
/* Chunk predictions remembered across strategies of one model, GPU and
 * precision (perfmod search); one per thread. */
struct dist_cache;
struct dist_cache *dist_cache_new (void);
/* A thread's cache whose chunk predictions live in `shared` (its pipelines in its own);
 * free it before shared. */
struct dist_cache *dist_cache_new_sharing (struct dist_cache *shared);
void dist_cache_free (struct dist_cache *c);
void dist_cache_stats (const struct dist_cache *c, size_t *hits, size_t *misses);
struct dist_plan {       /* the plugins' plans composed */
  struct perfmod_plan plan;
  /* the model's parameters (model_params, model_param_parts), counted once */
  double param_all, param_embed, param_head, param_experts;
  int expert_ffn;        /* the routed experts' width divisor (etp, else plan.ffn) */
  bool ep_in_tp;         /* ep's ranks are tp's: each has every token (etp given) */
  bool attn_dp;          /* inference: the experts over the tp ranks of every replica (ep x etp
                            = tp x replicas: attention data parallelism) */
  int moe_feeds;         /* the ranks whose tokens a rank's experts serve (shard.moe_feeds) */
  bool moe_tp_after;     /* routed layers keep tp's sequence shard; their copies are
                            gathered over tp after dispatch (Megatron-Core, shard.h) */
  /* the routed experts' ZeRO divisors: over their own data-parallel group
   * (parallel.c, expert_dp_group), else plan's */
  double expert_weights, expert_gradients, expert_optimizer;
  struct comm_site comms[5 * PERFMOD_MAX_COMMS + 6]; /* four plans, the experts' and the core's */
  size_t ncomms;
};
struct dist_result {
  double step_ms;        /* pipeline + exposed gradient sync + optimizer */
  double pipeline_ms;    /* the micro-batches' forwards and backwards, with tp/ep/pp comms */
  double bubble;         /* idle fraction of the pipeline ranks */
  double bubble_ms;
  double grads_ms;       /* exposed gradient synchronisation */
  double optimizer_ms;
  double comm_ms[NDIMS]; /* rank 0's collectives per step by dimension (exposed or not) */
  double hidden_ms[NDIMS]; /* of which overlapped with computation */
  double flops;          /* rank 0's FLOPs per step */
  int microbatches;
  size_t kernels, unique_kernels;
  double recompute_ms;   /* rank 0's recomputed forwards per step (inside pipeline_ms) */
  double host_ms;        /* rank 0's device waiting for the host's launches per step (inside
                            pipeline_ms) */
  /* per pipeline rank, one micro-batch through all its chunks (ms) */
  double stage_fw_ms[PM_MAX_STAGES], stage_bw_ms[PM_MAX_STAGES];
  double stage_recompute_ms[PM_MAX_STAGES];  /* of stage_bw_ms */
  double attn_ms;        /* one micro-batch's attention cores over every chunk (ms) */
  double moe_ms;         /* and its serving engine's routed experts, dispatch and combine (ms) */
  struct memory_estimate mem;   /* the pipeline rank with the most */
  int mem_rank;
  struct perfmod_plan plan;
};
/* The groups of o's strategy over its nodes (the engine's all-reduce
 * where o is a serving engine's inference). */
void comm_groups_init (struct comm_groups *g, const struct dist_options *o);
/* Refuse a strategy the model cannot take (layers, experts, batch,
 * kernels). */
int dist_check (const struct model_cfg *m, const struct dist_options *o);
/* The routed experts' replicas in training (Megatron-Core's expert
 * data-parallel group: tp x cp x dp / (etp x ep)); 0 where the layout
 * does not divide. */
int dist_expert_replicas (const struct strategy *s);
int dist_predict (struct plugin_set *set, struct plugin *pred, const struct model_cfg *m,
                  const struct perfmod_gpu *gpu, const struct dist_options *o,
                  struct dist_result *r);
/* One step as dist_predict modelled it, for its timeline chart: the
 * pipeline's events, what each chunk's operations hold (ms per
 * micro-batch, chunks in model order), and the step's totals. */
struct timeline {
  struct pipe_log log;
  int stages, vp, microbatches, chunks;
  bool train;
  double *fw, *bw;       /* per chunk: as the pipeline ran them (bw includes recompute) */
  double *recompute;     /* of bw: forwards run again */
  double *fw_comm, *bw_comm;  /* of fw, bw: exposed tp/cp/ep collectives */
  double p2p_ms, pipeline_ms, grads_ms, optimizer_ms, step_ms, bubble;
};
void timeline_free (struct timeline *t);
/* The SVG chart of t: a row per pipeline rank, time in ms across. */
int timeline_write (const struct timeline *t, const char *path, const char *title,
                    const char *subtitle);
/* GPUs against the best configuration's time, one point per count
 * searched (perfmod search --plot). */
struct scaling_point {
  int64_t gpus;
  double value;          /* hours to train, or ms per step */
  char label[256];       /* the configuration's --strategy string */
};
int scaling_plot_write (const char *path, const char *title, const char *ylabel,
                        const struct scaling_point *best, size_t nbest,
                        const struct scaling_point *top, size_t ntop);
/* Rank `stage`'s first chunk's graph, predicted as dist_predict does it
 * (perfmod --strategy --per-op); *recompute_ms: its forwards run again in
 * the backward, per micro-batch; host[]: per phase, the device waiting for
 * the host's launches (host_wait), per micro-batch. */
int dist_chunk_ops (struct plugin_set *set, struct plugin *pred, const struct model_cfg *m,
                    const struct perfmod_gpu *gpu, const struct dist_options *o, int stage,
                    struct graph *g, struct prediction *pr, double *recompute_ms,
                    double host[NPHASES]);

/* Serving, per replica of o->s (dp replicas share o->batch): the prefill
 * of its prompts (kv_len 0) or one decode step over kv_len cached tokens,
 * its whole batch as one micro-batch through the pipeline stages. */
int serving_predict (struct plugin_set *set, struct plugin *pred, const struct model_cfg *m,
                     const struct perfmod_gpu *gpu, const struct dist_options *o,
                     int64_t kv_len, struct dist_result *r);
/* Serving: the fullest pipeline rank's memory at o->batch and the largest
 * batch per replica whose memory fits (all of its KV cache, s + gen). */
int dist_serving_memory (struct plugin_set *set, const struct model_cfg *m,
                         const struct perfmod_gpu *gpu, const struct dist_options *o,
                         struct memory_estimate *mem, int64_t *max_batch);
/* Serving: per GPU, the most any pipeline rank holds of the weights and
 * of the KV cache per cached token (over a sequence of `tokens`: sliding
 * layers keep their window's). */
int dist_serving_footprint (struct plugin_set *set, const struct model_cfg *m,
                            const struct perfmod_gpu *gpu, const struct dist_options *o,
                            int64_t tokens, double *weights, double *kv_per_token);
/* Pipeline chunk `stage`'s graph (its rank's layers, the ends it holds). */
int dist_stage_graph (struct plugin_set *set, const struct model_cfg *m,
                      const struct perfmod_gpu *gpu, const struct dist_options *o, int stage,
                      struct graph *g);
/* The first pipeline chunk's graph on rank 0 (perfmod graph --strategy). */
int dist_graph (struct plugin_set *set, const struct model_cfg *m, const struct perfmod_gpu *gpu,
                const struct dist_options *o, struct graph *g);

/* ---- host.c ---- */
/* Eager PyTorch's host cost of one kernel launch, us: the kernel-launch
 * overhead AutoParallel's compute cost model fitted on H100 (every
 * operator at least 7 us; meta-pytorch/autoparallel pull request 146,
 * 2025-09-10).  strategy key host_us replaces it; 0 leaves the host out. */
#define PM_HOST_LAUNCH_US 7.0
/* Per phase of one micro-batch through graph gr (predicted as pr), the
 * ms its device waits for the host: each kernel launched in order at
 * launch_us (the quantisations before fp8 GEMMs among them), the host waiting for the
 * device after a node marked host_sync (MoE dispatch's counts copied to
 * the host).  What the device would run back to back is the sum of pr's
 * node times; the wait is what the flow of launches adds to it. */
void host_wait (const struct graph *gr, const struct prediction *pr, const struct precision *prec,
                double launch_us, double wait[NPHASES]);

/* ---- explain.c ---- */
struct workload;
/* The case a parallelism plugin sees: the workload's widths, tokens and
 * micro-batches, the chip's peak (the link and plan() fields are left 0). */
void parallel_case_init (struct perfmod_parallel_case *c, int degree, const struct model_cfg *m,
                         const struct strategy *s, const struct perfmod_gpu *gpu, int dtype,
                         int64_t batch, int64_t seq);
int explain_strategy (struct plugin_set *set, const struct strategy *s,
                      const struct model_cfg *m, const struct perfmod_gpu *gpu,
                      int64_t batch, int64_t seq, int dtype, int gpus_per_node,
                      FILE *out);

/* ---- parallel/search.c: the search of perfmod search and perfmod_search ---- */
#include "perfmod.h"
/* Why a configuration was not predicted (or not kept): perfmod.h's order. */
enum search_prune {
  SEARCH_PRUNE_TP = PERFMOD_PRUNE_TP, SEARCH_PRUNE_EP = PERFMOD_PRUNE_EP,
  SEARCH_PRUNE_BATCH = PERFMOD_PRUNE_BATCH, SEARCH_PRUNE_INTERLEAVE = PERFMOD_PRUNE_INTERLEAVE,
  SEARCH_PRUNE_ZERO3_PP = PERFMOD_PRUNE_ZERO3_PP, SEARCH_PRUNE_MEMORY = PERFMOD_PRUNE_MEMORY,
  SEARCH_PRUNE_FIXED = PERFMOD_PRUNE_FIXED, SEARCH_PRUNE_CP = PERFMOD_PRUNE_CP,
  SEARCH_NPRUNE
};
#define SEARCH_BAD_REQUEST (-1)   /* refused (said): the same on every part */
#define SEARCH_FAILED (-2)        /* a predictor failed (said) */
/* Search req with the plugins of set on the GPUs of gpus into res
 * (perfmod_search's contract): 0, SEARCH_BAD_REQUEST or SEARCH_FAILED,
 * the reason by pm_error; res is left empty on failure. */
int search_run (struct plugin_set *set, const struct gpu_db *gpus,
                const struct perfmod_search_request *req, struct perfmod_search_result *res);
/* Merge n rows (of res->row_size bytes each, another part's best) into
 * res's best, keeping the top: the rows' own order (step, then index). */
int search_merge (struct perfmod_search_result *res, const struct perfmod_search_row *rows,
                  size_t n, size_t top);
void search_result_free (struct perfmod_search_result *res);

#endif /* PERFMOD_PARALLEL_H */
