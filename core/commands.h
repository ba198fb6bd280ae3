/* commands.h: the commands the core library holds for cli/ (reproduce, kernel, eval); included by core/internal.h, in its order. */
#ifndef PERFMOD_COMMANDS_H
#define PERFMOD_COMMANDS_H

/* ---- reproduce.c ---- */
struct reproduce_options {
  const char *neusight;
  const char *table;          /* inf, train, perop, nodesum, distributed, all */
  char **predictors;
  const char *format;         /* table, csv */
  bool build;                 /* perfmod's built graphs instead of NeuSight's traces */
  FILE *out;                  /* the tables; the caller prints them once all succeeded */
  FILE *err;                  /* the CSV's summary and notes, printed to stderr after them */
  const char *published;      /* --table published: the runs' file; collectives: the
                                 measurements' */
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
/* collectives.c: --table collectives, the published nccl-tests measurements of
 * o->published. */
int reproduce_collectives (struct plugin_set *set, const struct gpu_db *gpus,
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

#endif /* PERFMOD_COMMANDS_H */
