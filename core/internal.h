/* internal.h: the core's private types and functions, shared by the core sources only. */
#ifndef PERFMOD_INTERNAL_H
#define PERFMOD_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "perfmod-plugin.h"

/* Exit statuses of the command-line contract. */
#define EXIT_RUNTIME 1
#define EXIT_USAGE   2

/* ---- util.c ---- */
/* Monotonic seconds, for timings. */
double pm_now (void);
/* The data directory: $PERFMOD_DATADIR, else the installed one. */
const char *pm_datadir (void);
/* This thread's data directory until called again with NULL (libperfmod). */
void pm_datadir_use (const char *dir);
void pm_error (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));
/* From here on pm_error keeps its first message in buf (len bytes)
 * instead of printing; buf NULL prints again. */
void pm_error_capture (char *buf, size_t len);
extern int pm_verbose;
/* The GPU of a run that names none. */
#define DEFAULT_GPU "h100"
void pm_debug (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));
void *xmalloc (size_t n);
void *xcalloc (size_t n, size_t size);
void *xrealloc (void *p, size_t n);
char *xstrdup (const char *s);
char *xasprintf (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));
/* Write path aside (*tmp, a sibling) and rename it into place on commit;
 * both report a failure with path, commit also unlinks and frees tmp.
 * ok false: the caller's writes failed, so the file is dropped. */
FILE *atomic_open (const char *path, char **tmp);
int atomic_commit (FILE *fp, char *tmp, const char *path, bool ok);
/* Check before a long computation that path can be written: create its
 * file aside (reported if not: -1), kept until atomic_open reuses it or
 * atomic_release removes it. */
int atomic_reserve (const char *path);
void atomic_release (const char *path);
/* 0 if path exists and is no directory; else -1 after one line naming
 * path and what it was to be (e.g. "a model config"). */
int input_file_check (const char *path, const char *what);
/* Names to positions in O(1): the name strings are the caller's and must
 * outlive the index.  Zero-initialised is empty. */
struct name_slot {
  const char *name;
  size_t pos;
};
struct name_index {
  struct name_slot *v;
  size_t cap, n;
};
/* name's slot, or NULL. */
const struct name_slot *name_index_lookup (const struct name_index *x, const char *name);
/* Add name at pos, or move it there. */
void name_index_put (struct name_index *x, const char *name, size_t pos);
void name_index_free (struct name_index *x);
char *xvasprintf (const char *fmt, va_list ap) __attribute__ ((format (printf, 1, 0)));
bool parse_int64 (const char *s, int64_t *out);
bool parse_double (const char *s, double *out);
/* An integer option from min to max into *out; else false after one line
 * naming opt, arg and the range. */
bool parse_int_range (const char *opt, const char *arg, int64_t min, int64_t max, int64_t *out);
/* rc, or EXIT_RUNTIME after one line if stdout could not be written
 * whole (a full disk): what a command printed is its result. */
int stdout_status (int rc);
struct option;
/* getopt_long's error for the option just read, as one line that says
 * what to try ("perfmod kernel", say): the caller sets opterr to 0 and
 * starts its short options with ':'. */
void getopt_error (int opt, char **argv, const struct option *opts, const char *cmd);
/* Sizes, FLOPs and bytes in int64: false if the exact result does not fit
 * (*out is then unspecified). */
bool ck_mul64 (int64_t a, int64_t b, int64_t *out);
bool ck_add64 (int64_t a, int64_t b, int64_t *out);
/* The ranges of numeric inputs (perfmod(1), LIMITS).  Within them the
 * products the builder and the strategies form fit in int64 or are
 * checked; beyond them no answer would mean anything. */
#define PM_MAX_BATCH ((int64_t) 1 << 31)   /* sequences in a batch */
#define PM_MAX_SEQ ((int64_t) 1 << 31)     /* tokens in a sequence, tokens generated */
#define PM_MAX_DIM ((int64_t) 1 << 40)     /* a model's width, a kernel's dimension */
#define PM_MAX_COUNT ((int64_t) 1 << 16)   /* layers, experts: the builder makes each */
#define PM_MAX_GPUS (1 << 20)              /* nodes, GPUs per node, GPUs in all */
#define PM_MAX_MICROBATCHES (1 << 20)      /* per step: the pipeline schedules each */
#define PM_MAX_EPOCHS 1000000
/* Index of w among the n words of v, or -1. */
int word_index (const char *w, const char *const *v, size_t n);
char *trim (char *s);
/* Names compared ignoring case and treating ' ', '_' and '-' alike. */
bool name_eq (const char *a, const char *b);
/* Sorted list of regular files in dir ending in suffix (NULL-terminated;
 * free with strv_free).  Dotfiles are skipped.  NULL if dir is missing. */
char **list_dir (const char *dir, const char *suffix);
/* Sorted subdirectories of dir (full paths), as list_dir. */
char **list_subdirs (const char *dir);
void strv_free (char **v);
size_t strv_len (char *const *v);
/* Split s at sep into a NULL-terminated vector of trimmed copies. */
char **strv_split (const char *s, char sep);
/* Append s to the array *v of *n pointers (not a copy): a repeatable
 * option's values, in the order given. */
void ptrv_push (char ***v, size_t *n, char *s);
/* An INI file read with inih, counting lines so handlers can cite file:line. */
struct ini_file {
  const char *path;
  FILE *fp;
  int line;              /* line just read */
  int section_line;      /* line of the last [section] header */
  int long_line;         /* a line did not fit inih's buffer of this many bytes */
};
typedef int (*ini_file_handler) (void *user, const char *section, const char *name,
                                 const char *value);
/* 0 on success; -1 (reported) if the file cannot be opened or has a syntax error. */
int ini_file_parse (struct ini_file *f, const char *path, ini_file_handler h, void *user);

/* ---- csv.c: RFC 4180 records, plain or gzip-compressed ---- */
struct gzFile_s;
struct csv_reader {
  struct gzFile_s *gz;   /* zlib's gzFile */
  const char *path;
  long line;           /* line where the current record starts */
  long next_line;
  char *buf;
  size_t cap;
  char **fields;
  size_t nfields, fcap;
  int bom;               /* bytes of a UTF-8 BOM read at the start; -1 past it */
};
/* -1 with errno set if path cannot be opened (EISDIR for a directory). */
int csv_open (struct csv_reader *r, const char *path);
/* 1: a record in r->fields; 0: end of file; -1: malformed (reported). */
int csv_next (struct csv_reader *r);
void csv_close (struct csv_reader *r);
/* Field col of the current record as an integer >= min ("128.0" too);
 * false after naming file:line, the column and the value. */
bool csv_int (const struct csv_reader *r, size_t col, const char *name, int64_t min,
              int64_t *out);
/* Column index of name in the header record, or -1. */
int csv_column (char **header, size_t n, const char *name);

/* ---- pylit.c: Python literals of NeuSight's traces ---- */
enum pyv_type { PYV_INT, PYV_FLOAT, PYV_STR, PYV_LIST, PYV_NONE };
struct pyv {
  enum pyv_type type;
  int64_t i;
  double f;
  char *s;
  struct pyv *items;
  size_t n;
};
/* Parse text; on error return -1 and set *err to a static message and
 * *errpos to the offending offset. */
int pyv_parse (const char *text, struct pyv *out, const char **err, size_t *errpos);
void pyv_free (struct pyv *v);

/* ---- gpu.c: gpus.d ---- */
struct gpu_entry {
  struct perfmod_gpu gpu;
  char *name;
  char *vendor;
  char **aliases;
  char *source;          /* the section's default source */
  char *file;            /* where the section was (last) defined */
  int line;
  char **src_keys, **src_vals; /* per-key sources */
  size_t nsrc;
};
struct gpu_db {
  struct gpu_entry *v;
  size_t n;
};
int gpu_db_load (struct gpu_db *db, const char *dir);
/* The data directory's gpus.d (pm_datadir). */
int gpu_db_load_data (struct gpu_db *db);
const struct gpu_entry *gpu_db_find (const struct gpu_db *db, const char *name);
const char *gpu_source (const struct gpu_entry *e, const char *key);
void gpu_db_free (struct gpu_db *db);

/* ---- strategy.c ---- */
enum pm_schedule { SCHED_1F1B, SCHED_GPIPE, SCHED_INTERLEAVED };
enum pm_recompute { RECOMPUTE_NONE, RECOMPUTE_SELECTIVE, RECOMPUTE_FULL };
/* Whose kernels run the model: PyTorch eager (Hugging Face's modules, as
 * NeuSight traced them), Megatron-LM's fused fp32 GPT layer, or
 * Megatron-Core's layer with Transformer Engine's fused kernels. */
enum pm_kernels { KERNELS_EAGER, KERNELS_MEGATRON, KERNELS_TE };
#define PM_MAX_STAGES 256
struct strategy {
  int tp, pp, dp, ep, mbs, vp, zero;
  int cp;                /* context parallelism: the sequence over cp ranks (ring attention) */
  int split[PM_MAX_STAGES];  /* layers per pipeline stage, given; nsplit 0: even */
  int nsplit;
  bool sp;               /* sequence parallelism with tp */
  enum pm_schedule schedule;
  enum pm_recompute recompute;
  enum pm_kernels kernels;
  bool dp_set;
  bool kernels_set;      /* kernels given (else the run's default) */
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
int preset_db_load (struct preset_db *db, const char *dir);
const struct preset *preset_db_find (const struct preset_db *db, const char *name);
void preset_db_free (struct preset_db *db);
const char *schedule_name (enum pm_schedule s);
const char *recompute_name (enum pm_recompute r);
const char *kernels_name (enum pm_kernels k);
/* Fit the strategy to the GPUs given and the batch; fills dp when unset. */
/* nodes: --nodes (0: not given, dp stays as set or 1); gpus_per_node the
 * node's GPUs. */
int strategy_resolve (struct strategy *s, int64_t nodes, int gpus_per_node, int64_t batch);

/* ---- modelcfg.c ---- */
enum model_family {
  FAM_GPT2,              /* GPT-2 and GPT-3 (Hugging Face gpt2): Conv1D, gelu_new, learned positions */
  FAM_OPT,               /* OPT: pre-LN, separate q/k/v, ReLU */
  FAM_BERT,              /* BERT: post-LN encoder */
  FAM_LLAMA,             /* Llama 2/3: RMSNorm, rotary, grouped-query attention, SwiGLU */
  FAM_MIXTRAL,           /* Mixtral: Llama attention, top-k routed SwiGLU experts */
  FAM_SWITCH,            /* Switch Transformer: T5 encoder-decoder, every other FFN routed */
  FAM_QWEN,              /* Qwen2/Qwen3: Llama layer, q/k/v biases (2) or q/k RMSNorm (3) */
  FAM_QWEN_MOE,          /* Qwen2-MoE/Qwen3-MoE: routed experts, Qwen2-MoE's gated shared one */
  FAM_DEEPSEEK,          /* DeepSeek-V2/V3: latent attention (MLA), shared + routed experts */
  FAM_GPT_OSS,           /* gpt-oss: sliding/full layers, attention sinks, biased experts */
  FAM_GEMMA,             /* Gemma 1/2/3: GeGLU, tied vocabulary; 2/3 sliding layers */
  FAM_NEOX               /* GPT-NeoX: parallel attention + MLP residual, partial rotary */
};
/* model_cfg.layer_kind: what layer i is (the new families; NULL: all alike) */
#define LAYER_MOE 1      /* its feed-forward block is routed experts */
#define LAYER_SLIDING 2  /* its attention looks back `window` tokens only */
struct model_cfg {
  char *name;            /* file stem or built-in name */
  char *path;
  char *arch;            /* model_type */
  int family;            /* enum model_family */
  int64_t layers, hidden, heads, ffn, vocab, experts, top_k, max_pos;
  int64_t kv_heads;      /* key/value heads (grouped-query attention); = heads otherwise */
  int64_t head_dim;      /* per-head width (T5's d_kv may differ from hidden / heads) */
  int64_t dec_layers;    /* encoder-decoder: decoder layers (layers counts the encoder's) */
  int64_t sparse_step;   /* Switch: every sparse_step-th FFN is routed */
  int64_t capacity;      /* Switch: tokens per expert (expert_capacity), 0: unbounded */
  bool encoder;          /* bidirectional (BERT) */
  bool tied;             /* output layer shares the embedding's weights */
  /* The families after Switch (zero for the others): */
  unsigned char *layer_kind; /* per layer LAYER_MOE | LAYER_SLIDING; NULL: every layer
                                routed when experts > 0, none sliding */
  int64_t window;        /* sliding layers' window in tokens (0: none) */
  int64_t moe_ffn;       /* a routed expert's width (0: ffn, which dense layers use) */
  int64_t shared_ffn;    /* shared experts' width, one SwiGLU beside the routed (0: none) */
  bool shared_gate;      /* Qwen2-MoE: the shared expert's sigmoid gate (d -> 1) */
  bool router_bias;      /* a bias per expert in the router (gpt-oss, DeepSeek-V3) */
  /* Multi-head latent attention (kv_lora_rank > 0): queries through a
   * q_lora_rank bottleneck (0: one projection), keys and values from a
   * kv_lora_rank latent plus a shared rope key of qk_rope_dim */
  int64_t q_lora_rank, kv_lora_rank, qk_nope_dim, qk_rope_dim, v_head_dim;
  int64_t rotary_dim;    /* rotated width of a head (GPT-NeoX's rotary_pct); 0: head_dim */
  bool qkv_bias, o_bias, mlp_bias; /* linear biases */
  bool qk_norm;          /* RMSNorm of each query and key head (Qwen3, Gemma 3) */
  bool post_norms;       /* Gemma 2/3: norms after attention and MLP as well */
  bool softcap;          /* Gemma 2: tanh soft-capped scores and logits */
  bool gelu;             /* GeGLU (Gemma) or GeLU (NeoX) instead of SwiGLU */
  bool layernorm;        /* LayerNorm with bias (NeoX) instead of RMSNorm */
  bool parallel_residual; /* NeoX: x + attn(ln1 x) + mlp(ln2 x) */
  bool sinks;            /* gpt-oss: a learned sink logit per head */
  int64_t mtp_layers;    /* DeepSeek-V3's multi-token prediction layers: not built */
};
/* Whether layer i is routed / sliding; the attention span of layer i
 * over `context` tokens (min(window, context) for sliding ones). */
bool model_layer_moe (const struct model_cfg *m, int64_t i);
bool model_layer_sliding (const struct model_cfg *m, int64_t i);
int64_t model_layer_span (const struct model_cfg *m, int64_t i, int64_t context);
/* Key/value elements one token caches in one layer (MLA: the latent and
 * the rope key; else keys and values of every key/value head). */
double model_kv_width (const struct model_cfg *m);
/* Whether the layers differ (dense-first, sliding pattern). */
bool model_layers_mixed (const struct model_cfg *m);
int model_cfg_load (struct model_cfg *m, const char *path);
void model_cfg_free (struct model_cfg *m);
/* A built-in: DATADIR/models/NAME.json, named NAME; refused naming it. */
int model_cfg_builtin (struct model_cfg *m, const char *name);
/* Another layer count (--layers): more layers than the config's repeat its
 * pattern of layer kinds from the first. */
void model_cfg_set_layers (struct model_cfg *m, int64_t layers);
/* name as --model takes it: a config.json path (a '/' or ".json" in it), else a built-in. */
int model_cfg_open (struct model_cfg *m, const char *name);
/* Parameters of the model (weights, counting tied ones once). */
double model_params (const struct model_cfg *m);
/* Of those: the input embeddings (with positions), the untied output
 * layer, and the routed experts' weights. */
void model_param_parts (const struct model_cfg *m, double *embed, double *head, double *experts);
/* Parameters a token uses: all less the routed experts it is not sent to. */
double model_active_params (const struct model_cfg *m);
const char *family_name (int family);

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
};
struct mem_shard {       /* one device's share under graph-level parallelism */
  int tp;                /* activations split over tensor-parallel ranks */
  bool sp;               /* and the norm/dropout regions too (sequence parallel) */
  double params;         /* parameters held */
  double layer_copies;   /* layers' activations kept: layers x micro-batches in flight */
  bool embed, head;      /* first stage's embedding output, last stage's logits */
  int vocab;             /* logits split over this many ranks */
  double weights, gradients, optimizer; /* ZeRO divisors */
  double gradient_buffers; /* extra unsharded gradient copies (data-parallel buckets) */
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
#define MEMORY_RESERVE_TEXT "1 GB + 5 %"
void memory_estimate (const struct model_cfg *m, const struct memory_options *o,
                      const struct perfmod_gpu *gpu, struct memory_estimate *out);

/* ---- collective.c ---- */
/* The strategy dimensions, in Megatron's placement order (tp innermost). */
enum pdim { DIM_NONE = 0, DIM_TP = 1, DIM_EP = 2, DIM_PP = 3, DIM_DP = 4, DIM_CP = 5 };
#define NDIMS 6
const char *dim_name (int dim);
enum coll_algo { COLL_ALGO_AUTO = 0, COLL_ALGO_RING = 1, COLL_ALGO_TREE = 2 };
const char *collective_name (int coll);
/* A group of `size` ranks `stride` apart: members per node and nodes. */
void group_layout (int size, int64_t stride, int gpus_per_node, int *per_node, int *nodes);
/* Seconds of one collective (enum perfmod_collective) on a buffer of
 * `bytes` over such a group, on gpu's two fabric levels. */
double collective_seconds (int coll, double bytes, int size, int64_t stride, int gpus_per_node,
                           const struct perfmod_gpu *gpu, int algo);

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

/* ---- graph.c: the per-device op graph ---- */
enum phase { PHASE_FW = 0, PHASE_BW = 1, PHASE_ACC = 2 };
#define NPHASES 3
struct kop {             /* one kernel of a node */
  int kclass;            /* enum perfmod_kernel_class */
  const char *op;        /* interned */
  int64_t b, m, n, k, h;
  double elems;          /* MEMORY/COMM: elements moved */
  double traffic;        /* vector kernels: elements read+written per output element;
                            0: the node's tensors' (NeuSight's convention) */
  double own_traffic;    /* with traffic 0: what the kernel itself moves, if known */
  /* COMM kernels of a built graph: the buffer, the strategy dimension whose
   * group runs it (enum pdim; 0: an imported trace's, over the run's GPUs),
   * and whether it may hide behind computation. */
  double bytes;
  int dim;
  bool overlap;
  /* ATTENTION kernels: key/value heads, sliding window, causal mask */
  int64_t kv_heads, window;
  bool causal;
};
struct node {
  char *name;
  char *opname;          /* NeuSight's node class: Linear, VECadd, fused, misc... */
  double in_elems;       /* sum of input tensor elements */
  double out_elems;      /* output tensor elements */
  struct kop *ops[NPHASES];
  size_t nops[NPHASES];
  bool fused;            /* a fused element-wise chain: one kernel per phase */
  int64_t count;         /* in the layer span: layers of this node's kind (0: the graph's repeat) */
  bool attn_core;        /* the attention core: re-run by selective recomputation */
};
struct graph {
  char *source;          /* file it came from, or "builder" */
  struct node *nodes;
  size_t n, cap;
  size_t layer_begin, layer_end; /* [begin, end) is the traced layer */
  int64_t repeat;        /* how many times the layer runs (1: complete graph) */
  int64_t batch, seq;
  bool train;
};
struct node *graph_add_node (struct graph *g, const char *name, const char *opname);
struct kop *node_add_op (struct node *nd, int phase, int kclass, const char *op);
const char *intern (const char *s);
void graph_free (struct graph *g);
/* Multiplicity of node i (repeat inside the layer span, 1 outside). */
int64_t graph_weight (const struct graph *g, size_t i);
/* Layer of node i: -1 outside the span. */
int graph_layer (const struct graph *g, size_t i);

/* opgraph.c: NeuSight's traced operator graphs. */
int opgraph_import (struct graph *g, const char *path, int64_t n_layer);
/* builder.c: a transformer graph from a model config. */
struct comm_site {       /* a collective the plan puts at a site of the model */
  int collective, site, phase, dim;
  double bytes;
  bool overlap;
};
struct shard {           /* one rank's share of the model (divisors 1: none) */
  int heads, ffn, vocab, tokens, experts;
  double expert_load;
  int64_t layers;        /* layers of this pipeline stage; 0: all */
  int64_t first_layer;   /* the model's index of the stage's first layer */
  bool embed, head;      /* the stage has the input embedding, the output layer and loss */
  const struct comm_site *comms;
  size_t ncomms;
};
struct build_options {
  int64_t batch, seq;    /* sequences and tokens per sequence */
  bool train;
  bool fusion;           /* element-wise chains fused (inference) */
  bool megatron;         /* Megatron-LM's GPT layer kernels (GPT-2/GPT-3 family) */
  bool te;               /* Megatron-Core's layer with Transformer Engine's kernels */
  bool flash;            /* fused (FlashAttention) attention, else scores materialised */
  int64_t cp;            /* context parallelism: seq is this rank's 1/cp of the sequence */
  int64_t kv_len;        /* > 0: one decode step over a cache of kv_len tokens */
  bool engine;           /* a serving engine's kernels (Llama family): grouped key/value heads
                            read in place, logits of the last token only */
  const struct shard *shard; /* NULL: the whole model on one device */
};
int graph_build (struct graph *g, const struct model_cfg *m, const struct build_options *o);
/* Whether Megatron-Core's layer (kernels=te) is modelled for m's family. */
bool te_layer_exists (const struct model_cfg *m);
/* Whose layer a run builds by default: Megatron-Core's with Transformer
 * Engine for mixed-precision training of the families it has, else the
 * eager PyTorch modules. */
enum pm_kernels default_kernels (const struct model_cfg *m, const struct precision *pr, bool train);

/* ---- plugin.c ---- */
struct plugin {
  struct perfmod_plugin p;   /* copy, zero-extended */
  char *path;
  void *dl;
  void *state;
  bool initialised;
  /* dtypes(): its answer per kernel class, asked once (bit kclass of
   * dtypes_asked); and per dtype, the classes of the kernels this run
   * predicted outside the predictor's own model (a bit per kclass) */
  unsigned dtypes_of[16], dtypes_asked;
  unsigned fallback[PERFMOD_DTYPE_COUNT];
};
struct plugin_set {
  struct plugin *v;
  size_t n;
};
extern const struct perfmod_host pm_host;
/* Load every *.so in dirs (NULL-terminated) that is a valid plugin; bad
 * ones are reported and skipped.  Returns the number of refusals. */
int plugins_load (struct plugin_set *set, char *const *dirs);
/* The plugin directories: $PERFMOD_PLUGIN_DIR or the installed one, then
 * the n --plugin-path directories (NULL-terminated; strv_free it). */
char **plugin_search_dirs (char *const *extra, size_t n);
struct plugin *plugins_find (struct plugin_set *set, const char *name, int kind);
/* The predictor plugin NAME, or NULL after an error naming it. */
struct plugin *predictor_find (struct plugin_set *set, const char *name);
int plugin_start (struct plugin *pl);
/* Call a predictor: its estimate (predict when it has no estimate
 * callback), checked; -1 with the reason in pm_plugin_errmsg. */
int plugin_estimate (struct plugin *pl, const struct perfmod_kernel *k,
                     const struct perfmod_gpu *gpu, struct perfmod_estimate *e);
int plugin_predict (struct plugin *pl, const struct perfmod_kernel *k,
                    const struct perfmod_gpu *gpu, double *seconds);
/* Whether a predictor's own model covers dtype for kclass (its dtypes()
 * callback; none: every dtype). */
bool plugin_covers (struct plugin *pl, int kclass, int dtype);
/* Whether the run predicted kernels of pl outside its model. */
bool plugin_fell_back (const struct plugin *pl);
/* One line on fp for each predictor that did (perfmod: note: ...). */
void plugins_note_fallbacks (const struct plugin_set *set, FILE *fp);
/* perfmod reproduce and eval on NeuSight's data: roofline in NeuSight's units. */
void plugins_neusight_units (struct plugin_set *set);
/* --plugin-opt NAME:KEY=VALUE. */
int plugin_configure (struct plugin_set *set, const char *opt);
/* The installed plugins and those of paths loaded, then opts
 * (NAME:KEY=VALUE) given; -1 after a message on a bad option. */
int plugins_open (struct plugin_set *set, char *const *paths, size_t npaths, char *const *opts,
                  size_t nopts);
void plugins_unload (struct plugin_set *set);
const char *plugin_kind_name (int kind);
/* Name of the plugin whose callback runs now (for host messages). */
extern _Thread_local const char *pm_current_plugin;
/* Last error a plugin reported through the host. */
extern _Thread_local char pm_plugin_errmsg[512];
/* A run's exit status once its plugins are done: 2 (bad input) if a
 * plugin refused an input file, such as a parameter file, else rc. */
int plugins_exit_status (int rc);
/* Whether a plugin has refused an input file. */
bool plugins_input_fault (void);

/* ---- predict.c ---- */
struct phase_times {
  double t[NPHASES];               /* ms */
  double spread[NPHASES];          /* ms: sum of the kernels' spreads (an upper bound) */
  const char *basis;               /* a kernel's estimate basis ("memory-bound"), or NULL */
};
struct prediction {
  const char *predictor;
  /* collectives inside the graph (ms, every layer copy) by dimension and
   * phase, and the part of them marked as able to overlap computation */
  double comm_ms[NDIMS][NPHASES];
  double overlap_ms[NPHASES];
  double fw_ms, bw_ms, acc_ms;     /* bw excludes acc; e2e = fw+bw+acc */
  double e2e_ms;
  double spread_ms;                /* sum of the kernels' spreads: at most this far off the
                                      ensemble's e2e spread; 0 without one */
  struct phase_times *per_node;    /* ms per node, one layer copy */
  size_t kernels, unique_kernels;
};
struct comm_groups {     /* where each dimension's ranks lie (enum pdim) */
  int size[NDIMS];
  int64_t stride[NDIMS];
  int gpus_per_node;
};
/* Called for every predicted kernel (not the built graph's collectives):
 * weight is its copies in the graph, seconds one copy's estimate. */
typedef void (*kernel_seen_fn) (void *ctx, const struct perfmod_kernel *k, double weight,
                                double seconds);
struct run_options {
  const struct precision *prec;     /* NULL: fp32 */
  bool train;
  int comm_group;        /* ranks in an imported graph's collectives */
  const struct comm_groups *groups; /* a built graph's collectives; NULL: none */
  kernel_seen_fn on_kernel;         /* optional */
  void *on_kernel_ctx;
};
int predict_graph (struct plugin *pred, const struct graph *g,
                   const struct perfmod_gpu *gpu, const struct run_options *o,
                   struct prediction *out);
void prediction_free (struct prediction *p);
void kop_to_kernel (const struct kop *o, const struct node *nd, const struct precision *pr,
                    struct perfmod_kernel *k);
double dtype_bytes (int dtype);
/* k's dtype, its element bytes and, for an fp8 GEMM, the bf16 output's
 * (set k->kclass first). */
void kernel_set_dtype (struct perfmod_kernel *k, int dtype);
/* Training in this dtype is mixed precision (fp32 master weights). */
bool dtype_mixed (int dtype);
const char *dtype_name (int dtype);
int dtype_parse (const char *s);
const char *kclass_name (int kclass);
/* A fused node's one kernel of phase; false if the phase has none. */
bool fused_kernel (const struct node *nd, int phase, const struct precision *pr,
                   struct perfmod_kernel *k);
/* A run's numeric precision: the dtype each kernel class runs in and the
 * bytes one parameter and one activation take.  Inference has one per
 * --dtype, training one per --precision (fp32, tf32, amp-fp16, bf16, fp8:
 * Transformer Engine's, GEMMs in fp8 and the rest in bf16). */
struct precision {
  const char *name;
  int gemm;              /* enum perfmod_dtype of LINEAR and BMM kernels */
  int other;             /* of every other kernel */
  double weight_bytes;   /* per parameter: the weights the kernels read */
  double master_bytes;   /* per parameter: the fp32 master copy of mixed precision, else 0 */
  double grad_bytes;     /* per parameter: gradients (training) */
  double moment_bytes;   /* per parameter: Adam's two moments (training) */
  double act_bytes;      /* per activation (and KV-cache) element */
};
/* The training precision of that name, or NULL. */
const struct precision *precision_train (const char *name);
/* Inference at dtype. */
const struct precision *precision_infer (int dtype);
/* What --dtype D means: inference at D, or training's precision of that
 * name (fp16: amp-fp16). */
const struct precision *precision_of_dtype (int dtype, bool train);
/* The dtype of a kernel of kclass (p NULL: fp32). */
int precision_dtype (const struct precision *p, int kclass);
/* What users run on gpu: bf16 where it has bf16 matrix units, fp16 where
 * it has only fp16 ones, else fp32. */
int default_dtype (const struct perfmod_gpu *gpu);
/* Whether fused attention runs for the precision on the GPU. */
bool flash_supported (const struct perfmod_gpu *gpu, const struct precision *pr);
/* The attention asked for (flash, unfused; NULL: the default) as *flash;
 * -1 after a message naming opt where it is no such thing or cannot run. */
int attention_resolve (const char *opt, const char *attention, const struct perfmod_gpu *gpu,
                       const struct precision *pr, bool *flash);

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
  int gpus_per_node;
  struct dist_cache *cache; /* chunk predictions shared across strategies, or NULL */
  struct timeline *timeline; /* the step's schedule recorded (--plot), or NULL */
};
/* Chunk predictions remembered across strategies of one model, GPU and
 * precision (perfmod search); one per thread. */
struct dist_cache;
struct dist_cache *dist_cache_new (void);
void dist_cache_free (struct dist_cache *c);
void dist_cache_stats (const struct dist_cache *c, size_t *hits, size_t *misses);
struct dist_plan {       /* the plugins' plans composed */
  struct perfmod_plan plan;
  struct comm_site comms[4 * PERFMOD_MAX_COMMS];
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
  /* per pipeline rank, one micro-batch through all its chunks (ms) */
  double stage_fw_ms[PM_MAX_STAGES], stage_bw_ms[PM_MAX_STAGES];
  double stage_recompute_ms[PM_MAX_STAGES];  /* of stage_bw_ms */
  double attn_ms;        /* one micro-batch's attention cores over every chunk (ms) */
  struct memory_estimate mem;   /* the pipeline rank with the most */
  int mem_rank;
  struct perfmod_plan plan;
};
void comm_groups_init (struct comm_groups *g, const struct strategy *s, int gpus_per_node);
/* Refuse a strategy the model cannot take (layers, experts, batch,
 * kernels). */
int dist_check (const struct model_cfg *m, const struct dist_options *o);
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
 * the backward, per micro-batch. */
int dist_chunk_ops (struct plugin_set *set, struct plugin *pred, const struct model_cfg *m,
                    const struct perfmod_gpu *gpu, const struct dist_options *o, int stage,
                    struct graph *g, struct prediction *pr, double *recompute_ms);

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
/* Pipeline chunk `stage`'s graph (its rank's layers, the ends it holds). */
int dist_stage_graph (struct plugin_set *set, const struct model_cfg *m,
                      const struct perfmod_gpu *gpu, const struct dist_options *o, int stage,
                      struct graph *g);
/* The first pipeline chunk's graph on rank 0 (perfmod graph --strategy). */
int dist_graph (struct plugin_set *set, const struct model_cfg *m, const struct perfmod_gpu *gpu,
                const struct dist_options *o, struct graph *g);

/* ---- plot.c ---- */
struct plot_kernel {
  int kclass;
  const char *op;
  int64_t dims[5];                 /* b, m, n, k, h */
  double flops, bytes, seconds, count;
};
struct roofline_plot {             /* zero-initialised; fed by roofline_plot_kernel */
  struct plot_kernel *k;
  size_t n, cap;
};
void roofline_plot_kernel (void *ctx, const struct perfmod_kernel *k, double weight,
                           double seconds);
/* Write the chart to path (aside, then renamed); -1 after an error message. */
int roofline_plot_write (struct roofline_plot *p, const char *path, const struct perfmod_gpu *gpu,
                         int dtype, const char *title, const char *predictor);
void roofline_plot_free (struct roofline_plot *p);
/* s as SVG text, its markup characters escaped (both charts). */
void svg_put_escaped (FILE *fp, const char *s);

/* ---- report.c ---- */
/* FLOPs and bytes a kernel moves, in plain units (not NeuSight's GiB). */
void kernel_cost (const struct perfmod_kernel *k, double *flops, double *bytes);
/* "compute", "memory" or "latency" (both roofs under a few microseconds). */
const char *kernel_regime (double flops, double bytes, const struct perfmod_gpu *gpu, int dtype);
typedef void (*graph_kernel_fn) (void *ctx, size_t node, int phase, const struct perfmod_kernel *k);
/* Every kernel of the graph (one layer copy; weight with graph_weight). */
void graph_kernels (const struct graph *g, const struct precision *pr, bool train,
                    graph_kernel_fn fn, void *ctx);
/* FLOPs of the whole graph (every layer copy). */
double graph_flops (const struct graph *g, const struct precision *pr, bool train);
/* perfmod graph: the kernels as CSV, or per-class totals as a table. */
int graph_report (const struct graph *g, const struct perfmod_gpu *gpu,
                  const struct precision *pr, bool train, bool csv, FILE *out);

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

/* ---- reproduce.c ---- */
struct reproduce_options {
  const char *neusight;
  const char *table;          /* inf, train, perop, nodesum, distributed, all */
  char **predictors;
  const char *format;         /* table, csv */
  bool build;                 /* perfmod's built graphs instead of NeuSight's traces */
  FILE *out;                  /* the tables; the caller prints them once all succeeded */
  FILE *err;                  /* the CSV's summary and notes, printed to stderr after them */
  const char *published;      /* --table published: the runs' file */
  const char *serving;        /* --table serving: aiconfigurator's silicon_sample CSV */
};
int reproduce (struct plugin_set *set, const struct gpu_db *gpus,
               const struct reproduce_options *o);
/* distributed.c: --table distributed. */
int reproduce_distributed (struct plugin_set *set, const struct gpu_db *gpus,
                           const struct reproduce_options *o);
/* published.c: --table published, the runs of o->published. */
int reproduce_published (struct plugin_set *set, const struct gpu_db *gpus,
                         const struct reproduce_options *o);
/* serving.c: --table serving, the measured serving runs of o->serving. */
int reproduce_serving (struct plugin_set *set, const struct gpu_db *gpus,
                       const struct reproduce_options *o);
/* The paper's name of a perfmod predictor (perop.csv rows), or NULL. */
const char *paper_method_name (const char *predictor);
/* paper.c: the column prefix of summary.csv for a predictor, or NULL. */
const char *paper_method_prefix (const char *predictor);

/* ---- cli/kernel.c: perfmod kernel (argv from the word "kernel" on) ---- */
int kernel_main (int argc, char **argv);
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

/* ---- eval.c ---- */
struct tile_rules;
struct krow;
struct eval_options {
  const char *data;           /* directory of test kernels */
  char **predictors;
  const char *format;         /* table, csv */
  const char *neusight;       /* for the paper's figures; may be NULL */
  char **in_dist;             /* GPUs of the in-distribution split */
  const char *in_dist_text;
  bool per_kernel;            /* every kernel as a CSV row instead of the summary */
  /* The modern tables only (mdata.c): */
  int dtype;                  /* -1: every dtype */
  const struct gpu_entry **gpus; /* --gpu LIST: NULL-terminated (NULL: every GPU) */
  int split;                  /* enum kernel_split */
  uint64_t seed;              /* of the held-out split */
  char **tables;              /* --table: the kinds of table read (NULL: all) */
  bool default_predictors;    /* no --predictor: the modern tables take roofline, linreg, tile-mlp */
};
/* Which rows of the modern tables: all, the seeded 20 % held out, or the rest. */
enum kernel_split { SPLIT_ALL = 0, SPLIT_HOLDOUT = 1, SPLIT_TRAIN = 2 };
#define SPLIT_SEED 20
bool krow_in_split (const struct krow *r, int split, uint64_t seed);
const char *krow_report_class (const struct krow *r);
/* The paper's per-op MAPE (summary/perop.csv) of a predictor: [split][class]
 * with split 0 in, 1 out and classes BMM, FC, EW, Softmax, LN; NAN if absent. */
/* paper.c: the per-op classes of summary/perop.csv (BMM, FC, EW, Softmax, LN). */
#define PAPER_CLASSES 5
void paper_perop (const char *neusight, const char *predictor, double paper[2][PAPER_CLASSES]);
int eval_kernels (struct plugin_set *set, const struct gpu_db *gpus,
                  const struct tile_rules *tiles, const struct eval_options *o);

/* ---- tiles.c: tile rules (tiles.d) ---- */
enum tile_derive { TILE_FROM_NAME = 0, TILE_FROM_GRID, TILE_FROM_ROW };
struct tile_rule {
  char *name;            /* the [section] */
  unsigned classes;      /* bit (1 << kclass) per class it applies to */
  void *re;              /* pcre2_code: captures tile rows, columns */
  int derive;            /* enum tile_derive */
  char *file;
  int line;
};
struct tile_rules {
  struct tile_rule *v;
  size_t n;
};
int tile_rules_load (struct tile_rules *r, const char *dir);
void tile_rules_free (struct tile_rules *r);
/* The first rule for kclass that applies gives tile[0..1]; -1 (reported,
 * naming the kernel) if none does. */
int tile_of (const struct tile_rules *r, int kclass, const char *kname, int64_t b, int64_t h,
             const int64_t grid[3], double tile[2]);

/* ---- kdata.c: measured-kernel datasets ---- */
struct krow {
  int kclass;            /* enum perfmod_kernel_class */
  const char *op;        /* interned: bmm, linear, add, ln, softmax... */
  const struct gpu_entry *gpu;
  int64_t b, m, n, k, h;
  int64_t grid[3];
  double latency_s;
  double tile[2];
  const char *kname;     /* interned library kernel name */
  const char *file;      /* interned */
  long line;
  /* The modern tables (mdata.c); zero for NeuSight's fp32 rows. */
  int dtype;             /* enum perfmod_dtype */
  int64_t kv_heads, window; /* ATTENTION, as in struct perfmod_kernel */
  int causal;
  int ranks;             /* COMM: GPUs taking part */
  double bytes;          /* COMM: the buffer; MEMORY: bytes moved */
  const char *set;       /* interned table kind ("gemm", "nccl", ...); NULL: NeuSight's */
  int nmeas;             /* measurements behind the row (its latency is their median) */
};
struct kset {
  struct krow *v;
  size_t n, cap;
  char **files;          /* files read, NULL-terminated */
};
/* DIR's kernel CSVs (or one file); tiles may be NULL.  Bad rows are
 * reported with file:line and refuse their file. */
int kset_load (struct kset *s, const char *dir, const struct gpu_db *gpus,
               const struct tile_rules *tiles);
/* Appends to s (zeroed, or filled by earlier calls). */
int kset_load_file (struct kset *s, const char *path, const struct gpu_db *gpus,
                    const struct tile_rules *tiles);
void kset_free (struct kset *s);
/* A file read into s from row `before` on: with errors its rows are dropped
 * and it is refused (-1, reported); else it is recorded in s->files (0). */
int kset_file_done (struct kset *s, const char *path, size_t before, int errors);
void krow_kernel (const struct krow *r, struct perfmod_kernel *k);

/* ---- mdata.c: the modern measured kernels (../shared/moderndata) ---- */
struct mdata_filter {
  int dtype;                      /* -1: every dtype */
  const struct gpu_entry *const *gpus; /* NULL: every GPU; else NULL-terminated, kept */
  bool raw;                       /* every measurement; false: one row per shape, the median */
  char **tables;                  /* NULL: every kind of table; else the krow.set names kept */
};
/* Every table under dir (or the one file) that it knows by name: aiconfigurator's
 * gemm, attention and NCCL tables, vidur's per-layer ops and collectives, aiter's
 * bf16 GEMMs, LLMCompass's matmuls.  Appends to s; the number of tables read
 * (0: none known), -1 after reporting a bad one (file:line). */
int mdata_load (struct kset *s, const char *dir, const struct gpu_db *gpus,
                const struct mdata_filter *f);
/* The names of the kinds of table mdata_load reads (krow.set), NULL-terminated. */
extern const char *const mdata_tables[];
/* The seeded 20 % of the shapes held out for validation: the same rows on every run. */
bool krow_holdout (const struct krow *r, uint64_t seed);
/* Whether g is in the NULL-terminated list (a NULL list holds every GPU). */
bool gpu_listed (const struct gpu_entry *const *list, const struct gpu_entry *g);
/* The paper's class labels: BMM, FC, EW, Softmax, LN. */
const char *krow_class_label (int kclass);

/* ---- params.c: parameter files ---- */
#define PARAMS_VERSION 1
struct ptensor {
  char *name;
  size_t rows, cols;
  double *v;             /* rows x cols, row-major */
  bool mapped;           /* v lies in the file's read-only mapping: never write it */
  int line;              /* its line in the file's header, when loaded */
};
struct params {
  char *path;            /* file it was loaded from, if any */
  char **keys, **vals;
  size_t nkv;
  struct ptensor *t;
  size_t nt;
  void *map;             /* the loaded file, mapped, or NULL */
  size_t map_len;
  struct name_index kidx, tidx;  /* keys and tensors by name */
};
void params_init (struct params *p);
void params_free (struct params *p);
const char *params_get (const struct params *p, const char *key);
void params_set (struct params *p, const char *key, const char *fmt, ...)
  __attribute__ ((format (printf, 3, 4)));
const struct ptensor *params_tensor (const struct params *p, const char *name);
/* A tensor that must exist with the given shape (0: any); reported if not. */
const struct ptensor *params_need (const struct params *p, const char *name, size_t rows,
                                   size_t cols);
/* Zeroed storage for a (new or replaced) tensor. */
double *params_add_tensor (struct params *p, const char *name, size_t rows, size_t cols);
int params_save (const struct params *p, const char *path);
int params_load (struct params *p, const char *path);

/* ---- nn.c: the neural-network engine ---- */
#define NN_MAX_LAYERS 12
#define NN_MAX_OUT 8
enum nn_act { NN_NONE = 0, NN_RELU = 1, NN_SIGMOID = 2 };
enum nn_loss { NN_LOSS_MAPE = 0, NN_LOSS_SMAPE = 1 };
struct mlp {
  int nl;                          /* dense layers */
  int size[NN_MAX_LAYERS + 1];     /* widths, inputs first */
  int hidden_act, out_act;
  double *w[NN_MAX_LAYERS];        /* size[l+1] x size[l], row-major */
  double *b[NN_MAX_LAYERS];
  double *mean, *std;              /* input standardisation */
  bool borrowed;                   /* the arrays are a parameter file's (mlp_from_params) */
};
struct mlp_ws {                    /* activations and deltas for up to rows rows */
  size_t rows;
  int nl;
  double *a[NN_MAX_LAYERS + 1], *d[NN_MAX_LAYERS + 1];
};
struct nn_data {
  size_t n;                        /* rows */
  const double *x;                 /* n x inputs, raw (standardised by the model) */
  const double *y;                 /* targets, > 0 */
};
/* Maps a row's network outputs to the prediction compared with the target,
 * and gives d(prediction)/d(output j) in dpred. */
typedef void (*nn_head) (void *ctx, size_t row, const double *out, int nout, double *pred,
                         double *dpred);
struct nn_fit {
  const char *label;               /* for messages: "habitat/bmm" */
  int epochs, batch, patience;     /* patience: epochs without a better validation error */
  double lr, weight_decay, val_frac;
  uint64_t seed;
  int loss;                        /* enum nn_loss */
  nn_head head;                    /* NULL: the single output is the prediction */
  void *ctx;
  bool progress;                   /* progress line on a terminal */
};
struct nn_fit_result {
  int epochs_run, best_epoch;
  double train_loss, val_mape, seconds;
};
uint64_t rng_next (uint64_t *s);
double rng_uniform (uint64_t *s);
void rng_shuffle (size_t *v, size_t n, uint64_t *s);
const char *nn_act_name (int act);
int mlp_create (struct mlp *m, const int *sizes, int nl, int hidden_act, int out_act);
void mlp_free (struct mlp *m);
size_t mlp_nparams (const struct mlp *m);
void mlp_ws_init (struct mlp_ws *ws, const struct mlp *m, size_t rows);
void mlp_ws_free (struct mlp_ws *ws);
/* Outputs (rows x outputs) for raw inputs x (rows x inputs). */
void mlp_forward (const struct mlp *m, struct mlp_ws *ws, const double *x, size_t rows, double *y);
/* Standardise from the data, initialise from the seed, train with AdamW on
 * mini-batches, keep the weights of the best validation epoch. */
int nn_train (struct mlp *m, const struct nn_data *d, const struct nn_fit *f,
              struct nn_fit_result *res);
double nn_mape (const struct mlp *m, struct mlp_ws *ws, const struct nn_data *d,
                const size_t *rows, size_t n, const struct nn_fit *f);
/* Loss over all rows of d and its gradients (for gradient checks). */
int nn_gradients (struct mlp *m, const struct nn_data *d, const struct nn_fit *f, double **gw,
                  double **gb, double *loss);
int mlp_to_params (const struct mlp *m, struct params *p, const char *prefix);
/* The network stored under prefix, reading p's tensors in place (free it before p).
 * nin/nout: required widths (0: any); a mismatch is reported with the file. */
int mlp_from_params (struct mlp *m, const struct params *p, const char *prefix, int nin, int nout);

/* ---- train.c ---- */
struct train_options {
  const char *predictor;
  const char *data;           /* training kernels */
  const char *out;            /* parameter file to write */
  const char *reference;      /* habitat: reference-GPU vector kernels */
  uint64_t seed;
  int epochs;                 /* 0: the predictor's default */
  int members;                /* tile-mlp: networks per class; 0: the default */
  bool keep_throttled;        /* tile-mlp: train on rows measured under throttled clocks too */
  bool keep_floor;            /* tile-mlp: train on latencies with the harness's floor in */
  const char *features;       /* tile-mlp: its input set by name; NULL: extended-waves */
  char **in_dist;             /* the training GPUs; rows of others are left out */
  const char *command;        /* recorded in the file */
  /* The modern tables (tile-mlp's tensor-core networks): */
  int dtype;                  /* -1: every dtype */
  int split;                  /* enum kernel_split: SPLIT_TRAIN leaves the held-out 20 % out */
  bool in_dist_given;         /* --in-dist named the training GPUs; else every GPU in the data */
  char **tables;              /* --table: the kinds of table read (NULL: all) */
};
struct nn_fit;
struct nn_data;
struct params;
/* Shared by the trainers (train.c, traintc.c). */
void fit_setup (struct nn_fit *f, char *label, size_t len, const char *key,
                const struct train_options *o, int epochs, int patience, int loss, uint64_t salt);
int fit_network (struct params *p, const char *key, const int *widths, int nl, int out_act,
                 const struct nn_fit *f, const struct nn_data *d, const char *features);
void record_common (struct params *p, const struct train_options *o, const struct kset *ks,
                    const struct gpu_entry *const *train, size_t rows, size_t dropped);
/* KEY.range: the 2 x nf tensor of the inputs' minimum and maximum over the
 * n rows of x (n x nf), for a predictor that keeps a kernel inside it. */
void params_put_range (struct params *p, const char *key, const double *x, size_t n, int nf);
/* traintc.c: tile-mlp's tensor-core networks from the modern tables. */
int train_tc (const struct gpu_db *gpus, const struct train_options *o, struct kset *ks);
int train_linreg_tc (const struct gpu_db *gpus, const struct train_options *o, struct kset *ks);
int train_habitat_tc (const struct gpu_db *gpus, const struct train_options *o, struct kset *ks);
int train_run (const struct gpu_db *gpus, const struct tile_rules *tiles,
               const struct train_options *o);
struct tw_case;
/* tile-mlp's formulation of a measured kernel; -1 if it has none. */
int tilemlp_case (const struct krow *r, int features, struct tw_case *c);
/* Least squares y = a x + b; -1 if x has no spread. */
int fit_line (const double *x, const double *y, size_t n, double *a, double *b);

#endif /* PERFMOD_INTERNAL_H */
