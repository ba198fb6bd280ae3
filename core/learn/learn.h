/* learn.h: learning: the measured-kernel datasets, the neural-network engine, training; included by core/internal.h, in its order. */
#ifndef PERFMOD_LEARN_H
#define PERFMOD_LEARN_H

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
  /* MOE rows: experts per token, gate and up (1) or up alone, the engine
   * whose kernel ran (interned "trtllm", "sglang", "vllm"). */
  int64_t top_k;
  int gated;
  const char *engine;
  double expert_load;    /* MOE: the busiest rank's routed tokens over the even share (0: 1) */
  double experts_reached; /* MOE: the experts that rank's tokens reach (0: as many as they can) */
  double weight_bytes;   /* MOE: weight-only experts' bytes per weight (0: dtype's) */
};
struct kset {
  struct krow *v;
  size_t n, cap;
  char **files;          /* files read, NULL-terminated */
  /* the modern tables' rows of dtypes perfmod does not model, left out,
   * and those dtypes' names, separated by ", " */
  size_t unmodelled;
  char *unmodelled_names;
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

#endif /* PERFMOD_LEARN_H */
