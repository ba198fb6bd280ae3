/* cli.h: what the perfmod command's files share: the parsed options, a resolved workload, the defaults and the subcommands. */
#ifndef PERFMOD_CLI_H
#define PERFMOD_CLI_H

#include <jansson.h>
#include <stdio.h>

#include "internal.h"

#define DEFAULT_MODEL "gpt2-large"
#define DEFAULT_BATCH 4
#define DEFAULT_SEQ 1024
/* NeuSight's training GPUs: the in-distribution split. */
#define DEFAULT_IN_DIST "p4,p100,v100,t4,a100-40gb"

struct cli {
  const char *model, *opgraph, *gpu, *mode, *dtype, *precision, *predictors, *strategy, *format;
  const char *neusight, *table, *graph, *plot, *attention, *published;
  const char *data, *out, *reference, *in_dist, *features, *split;
  const char *print;       /* --print megatron|nemo: the arguments that run the layout */
  const char *html;        /* --html FILE: the answer as one page */
  const char *calibration; /* --calibration FILE: perfmod calibrate's corrections, applied */
  int64_t shapes;          /* calibrate --shapes N: at most N of the GPU's shapes (0: all) */
  int64_t batch, seq, nodes, gpus_per_node, layers, seed, epochs, members, gen;
  bool seed_given;
  char **plugin_opts;
  size_t nopts;
  char *command;           /* the command line as typed */
  bool per_op, explain, fusion, engine, keep_throttled, keep_floor;
  int64_t per_op_chunk;  /* --per-op=N: the pipeline chunk (model order) it lists */
  const char *engine_name;      /* --engine=NAME: the engine (static name), else NULL */
  double routing;          /* --routing: its router (build_options.routing; 0: the default) */
  char **plugin_paths;
  size_t npaths;
  char *assumed;           /* what the run filled in by default */
};

/* What predict and graph work on: the GPU, the model and the per-device graph. */
struct workload {
  struct gpu_db gpus;
  const struct gpu_entry *ge;
  struct model_cfg m;
  struct graph g;
  const struct precision *prec;  /* the run's dtypes and bytes */
  int64_t batch, seq;            /* the run's: given, or the imported graph's */
  bool train, have_model, have_graph;
  bool flash;                    /* fused attention kernels */
  enum pm_kernels kernels;       /* whose layer a built graph runs (a strategy may say) */
};

/* workload.c */
/* the assumed: line's default kernels for a training step */
#define KERNELS_ASSUMED_TE "kernels te (Megatron-Core with Transformer Engine)"
#define KERNELS_ASSUMED_EAGER "kernels eager (PyTorch modules)"
void assume (struct cli *c, const char *what);
/* The assumption old said otherwise (what), or taken back (what NULL). */
void assume_replace (struct cli *c, const char *old, const char *what);
int workload_load (struct cli *c, struct workload *w);
void workload_free (struct workload *w);
int strategy_load (const struct cli *c, struct strategy *s, int gpn, int64_t batch);
void dist_options_init (struct dist_options *o, const struct cli *c, const struct workload *w,
                        const struct strategy *s, int gpn);
FILE *explain_stream (const struct cli *c);
/* Runs fn (arg) with its standard output held in *text (*len bytes and a NUL; the caller
 * frees it): fn's exit status, or EXIT_RUNTIME (said) where the output cannot be held. */
int capture_stdout (int (*fn) (void *), void *arg, char **text, size_t *len);

/* stepviews.c: perfmod --strategy's timeline chart (--plot) and one
 * stage's per-op table (--per-op; json_predictions: the JSON answer's
 * predictions to add it to, else printed as --format says). */
int strategy_plot_write (const struct cli *c, const struct workload *w, const struct strategy *s,
                         const char *predictor, const struct timeline *t);
/* Whether dp's gradients are reduced during the backward: the last
 * --plugin-opt dp:overlap= given, else the dp plugin's default (on under
 * Megatron-Core's kernels). */
bool dp_overlaps (char **plugin_opts, size_t nopts, const struct strategy *s);
int strategy_per_op (const struct cli *c, struct plugin_set *set, const struct workload *w,
                     const struct dist_options *o, char **names, size_t npred, int stage,
                     json_t *json_predictions);

/* main.c: the whole command, returning its exit status (fuzz/fuzz-cli.c calls it too). */
int perfmod_main (int argc, char **argv);

/* The subcommands (list.c, graph.c, predict.c, learn.c, search.c); each returns an exit status. */
int cmd_plugins (struct plugin_set *set);
int cmd_gpus (void);
int cmd_strategies (void);
/* fmt: table, csv or json */
int cmd_models (const char *model, const char *fmt);
int cmd_graph (struct cli *c, struct plugin_set *set);
int cmd_predict (struct cli *c, struct plugin_set *set);
/* perfmod --html FILE: the page, then the answer as --format asks (predict.c). */
int predict_html (struct cli *c, struct plugin_set *set);
/* Read path whole into *text (NUL-terminated; the caller frees): 0, or -1 (said). */
int slurp (const char *path, char **text, size_t *len);
/* A new empty file of $TMPDIR (or /tmp) for a chart drawn aside: its path (the caller
 * unlinks and frees it), or NULL with errno. */
char *aside_file (void);
int cmd_train (struct cli *c);
int cmd_eval (struct cli *c, struct plugin_set *set);
/* perfmod calibrate (learn.c) */
int cmd_calibrate (struct cli *c, struct plugin_set *set);
/* --calibration FILE onto its predictor in set (its line in the assumed: text): 0, or
 * EXIT_USAGE (said); *cal is the caller's to free after the run. */
int calibration_attach (struct cli *c, struct plugin_set *set, struct calibration *cal);
/* search.c: perfmod search (argv from the word "search" on), over core/parallel/search.c. */
int search_main (int argc, char **argv);
/* serve.c: perfmod serve (argv from the word "serve" on), over core/serve (perfmod_serve). */
int serve_main (int argc, char **argv);
/* perfmod search --serve (argv from the word "search" on): core/serve/search.c. */
int search_serve_main (int argc, char **argv);

#endif /* PERFMOD_CLI_H */
