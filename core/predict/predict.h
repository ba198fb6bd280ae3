/* predict.h: kernel prediction: the plugin host, per-op prediction and its memo, tile rules; included by core/internal.h, in its order. */
#ifndef PERFMOD_PREDICT_H
#define PERFMOD_PREDICT_H

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
  unsigned fallback[PERFMOD_DTYPE_NTYPES];
  /* the classes of the kernels it predicted faster than the GPU's peak or
   * bandwidth allows, taken at that floor (a bit per kclass) */
  unsigned floored;
  /* --calibration: this predictor's corrections on one GPU (calib.c), or NULL */
  const struct calibration *calib;
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
/* A step's collective over a group (group_collective_seconds' arguments):
 * NCCL's model, or, where perfmod calibrate fitted pred's collectives on
 * this GPU (--calibration) and the group is one node's NCCL collective,
 * pred's own estimate with that correction. */
double step_collective_seconds (struct plugin *pred, int coll, double bytes, int dim, int size,
                                int64_t stride, int gpus_per_node, bool engine,
                                const struct perfmod_gpu *gpu);
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
  int edp_size;          /* the routed experts' data-parallel group (Megatron-Core's expert
                            data parallelism): its ranks and their stride */
  int64_t edp_stride;
  bool engine;           /* a serving engine's inference: its own tp all-reduce
                            where cheaper (group_collective_seconds) */
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
  struct memo *memo;     /* estimates kept across graphs, or NULL: this graph's */
};
/* Kernel estimates remembered across the graphs of one predictor on one
 * GPU (a serving replica's iterations); one per thread. */
struct memo *kernel_memo_new (void);
void kernel_memo_free (struct memo *m);
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
/* fp8, fp8_block or nvfp4: GEMM operands under 16 bits, written out in bf16. */
bool dtype_low (int dtype);
const char *dtype_name (int dtype);
int dtype_parse (const char *s);
/* "fp32, tf32, fp16, bf16, fp8, nvfp4 or fp8_block", for messages. */
#define DTYPE_NAMES_TEXT "fp32, tf32, fp16, bf16, fp8, nvfp4 or fp8_block"
/* gpu has matrix units (or, for fp32, lanes) for dtype in gpus.d. */
bool gpu_has_units (const struct perfmod_gpu *gpu, int dtype);
const char *kclass_name (int kclass);
/* A fused node's one kernel of phase; false if the phase has none. */
bool fused_kernel (const struct node *nd, int phase, const struct precision *pr,
                   struct perfmod_kernel *k);
/* A run's numeric precision: the dtype each kernel class runs in and the
 * bytes one parameter and one activation take.  Inference has one per
 * --dtype, training one per --precision (fp32, tf32, amp-fp16, bf16, fp8:
 * Transformer Engine's, GEMMs in fp8 and the rest in bf16; fp8-cs: the same
 * with per-tensor current scaling). */
/* The predictor a prediction, a search or a serving run uses when none is
 * named: the one the validated tables measure most accurate (doc/precision.md);
 * the roofline is a bound, named when asked for. */
#define PM_DEFAULT_PREDICTOR "tile-mlp"
#define PM_DEFAULT_PREDICTOR_TEXT \
  "--predictor tile-mlp (the most accurate on the validated tables; roofline: a bound)"
struct precision {
  const char *name;
  int gemm;              /* enum perfmod_dtype of LINEAR and BMM kernels */
  int other;             /* of every other kernel */
  double weight_bytes;   /* per parameter: the weights the kernels read */
  double master_bytes;   /* per parameter: the fp32 master copy of mixed precision, else 0 */
  double grad_bytes;     /* per parameter: gradients (training) */
  double moment_bytes;   /* per parameter: Adam's two moments (training) */
  double act_bytes;      /* per activation (and KV-cache) element */
  /* fp8-cs, Transformer Engine's per-tensor current scaling: each cast of a
   * GEMM's input or gradient reads it once more for its amax, and launches
   * the amax and the scale besides the cast */
  bool cast_amax;
  /* bytes per weight of the routed experts where a weight-only format
   * stores them narrower than the rest (MXFP4, widened in the engine's MoE
   * kernel); 0: weight_bytes */
  double expert_bytes;
};
/* MXFP4's bytes per value: a 4-bit float and an 8-bit scale per 32 */
#define MXFP4_WEIGHT_BYTES (0.5 + 1.0 / 32)
/* The training precision of that name, or NULL. */
const struct precision *precision_train (const char *name);
/* Inference at dtype. */
const struct precision *precision_infer (int dtype);
/* Inference by name: a dtype's (dtype_parse), or "mxfp4", the routed
 * experts' weights in MXFP4 widened to bf16 by the engine's MoE kernel and
 * the rest in bf16 (vLLM's --quantization mxfp4; GPT-OSS's checkpoint);
 * NULL: neither. */
const struct precision *precision_infer_named (const char *name);
/* The names precision_infer_named takes, for messages. */
#define INFER_NAMES_TEXT "fp32, tf32, fp16, bf16, fp8, nvfp4, fp8_block or mxfp4"
/* Whether p stores the routed experts narrower than its GEMMs read them
 * (mxfp4): only an engine's MoE kernel runs them. */
bool precision_weight_only_experts (const struct precision *p);
/* 0, or -1 after pm_error naming `what` (an option or field) where p keeps
 * the routed experts weight-only (mxfp4) and the model has none (experts
 * 0) or no engine's MoE kernel runs them (engine_moe false). */
int precision_check_experts (const struct precision *p, int64_t experts, bool engine_moe,
                             const char *what);
/* What --dtype D means: inference at D, or training's precision of that
 * name (fp16: amp-fp16); NULL for training in nvfp4 or fp8_block (not
 * modelled). */
const struct precision *precision_of_dtype (int dtype, bool train);
/* The dtype of a kernel of kclass (p NULL: fp32). */
int precision_dtype (const struct precision *p, int kclass);
/* Whether p's GEMMs take quantised operands (fp8, block-scaled fp8, nvfp4): Transformer
 * Engine casts their inputs first. */
bool precision_quantised (const struct precision *p);
/* Whether p keeps 16-bit weights beside fp32 gradients (mixed precision), so
 * that its gradients may be kept and reduced in the weights' dtype instead
 * (strategy key grad_fp32=0). */
bool precision_mixed (const struct precision *p);
/* What users run on gpu: bf16 where it has bf16 matrix units, fp16 where
 * it has only fp16 ones, else fp32. */
int default_dtype (const struct perfmod_gpu *gpu);
/* Whether fused attention runs for the precision on the GPU. */
bool flash_supported (const struct perfmod_gpu *gpu, const struct precision *pr);
/* The attention asked for (flash, unfused; NULL: the default) as *flash;
 * -1 after a message naming opt where it is no such thing or cannot run. */
int attention_resolve (const char *opt, const char *attention, const struct perfmod_gpu *gpu,
                       const struct precision *pr, bool *flash);

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

/* ---- calib.c: perfmod calibrate's corrections ---- */
struct calib_group {
  int kclass, dtype;
  size_t n;              /* the shapes fitted */
  double a, b, c;        /* measured = predicted x exp(a + b ln(predicted / 1 ms)
                            + c ln(FLOPs per byte)) */
  /* the ln(predicted ms) and ln(FLOPs per byte) fitted on: a kernel beyond them is
     corrected as at their edge (lo > hi: a file without them, not clamped) */
  double lo1, hi1, lo2, hi2;
};
struct calibration {
  char *gpu;             /* the gpus.d section it was fitted on */
  char *predictor;
  size_t shapes;         /* all the groups' */
  struct calib_group *groups;
  size_t ngroups;
};
/* One measured kernel and the predictor's time for it (seconds). */
struct calib_shape {
  int kclass, dtype;
  double measured, predicted;
  double intensity;      /* FLOPs per byte moved (phys_cost_of's) */
};
/* Fit c's groups (c->gpu and c->predictor the caller's) on n shapes: 0, or -1 when no class
 * and dtype had enough shapes. */
int calib_fit (struct calibration *c, const struct calib_shape *s, size_t n);
int calib_write (const struct calibration *c, const char *path, const char *command);
/* 0, or -1 after naming path:line. */
int calib_load (struct calibration *c, const char *path);
void calib_free (struct calibration *c);
/* --calibration FILE: path loaded into cal and put on its predictor in set (cal must
 * outlive the set's predictions): 0, or -1 (said). */
int calib_attach (const char *path, struct plugin_set *set, struct calibration *cal);
/* What every command says of it: "tile-mlp calibrated on N shapes of G (path)". */
void calib_describe (const struct calibration *c, const char *path, char *buf, size_t len);
/* Whether c corrects kernels of class kclass on gpu. */
bool calib_covers (const struct calibration *c, const struct perfmod_gpu *gpu, int kclass);
/* The factor c puts on a kernel of that class and dtype predicted in seconds on gpu, of
 * that arithmetic intensity (FLOPs per byte): 1 on another GPU, for a class and dtype it
 * has no group of (a collective's group: any dtype), or without c. */
double calib_factor (const struct calibration *c, const struct perfmod_gpu *gpu, int kclass,
                     int dtype, double seconds, double intensity);
/* A kernel's FLOPs per byte as calibration reads it (0 where it moves no byte; a
 * collective's ranks). */
double calib_intensity (const struct perfmod_kernel *k, const struct perfmod_gpu *gpu);

#endif /* PERFMOD_PREDICT_H */
