/* internal.h: the core's private types and functions, shared by the core sources only. */
#ifndef PERFMOD_INTERNAL_H
#define PERFMOD_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "perfmod-plugin.h"

/* Exit statuses of the command-line contract. */
#define EXIT_RUNTIME 1
#define EXIT_USAGE   2

/* ---- util.c ---- */
void pm_error (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));
extern int pm_verbose;
void pm_debug (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));
void *xmalloc (size_t n);
void *xcalloc (size_t n, size_t size);
void *xrealloc (void *p, size_t n);
char *xstrdup (const char *s);
char *xasprintf (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));
bool parse_int64 (const char *s, int64_t *out);
bool parse_double (const char *s, double *out);
char *trim (char *s);
/* Names compared ignoring case and treating ' ', '_' and '-' alike. */
bool name_eq (const char *a, const char *b);
/* Sorted list of regular files in dir ending in suffix (NULL-terminated;
 * free with strv_free).  Dotfiles are skipped.  NULL if dir is missing. */
char **list_dir (const char *dir, const char *suffix);
void strv_free (char **v);
size_t strv_len (char *const *v);
/* Split s at sep into a NULL-terminated vector of trimmed copies. */
char **strv_split (const char *s, char sep);
/* An INI file read with inih, counting lines so handlers can cite file:line. */
struct ini_file {
  const char *path;
  FILE *fp;
  int line;              /* line just read */
  int section_line;      /* line of the last [section] header */
};
typedef int (*ini_file_handler) (void *user, const char *section, const char *name,
                                 const char *value);
/* 0 on success; -1 (reported) if the file cannot be opened or has a syntax error. */
int ini_file_parse (struct ini_file *f, const char *path, ini_file_handler h, void *user);

/* ---- csv.c: RFC 4180 records ---- */
struct csv_reader {
  FILE *fp;
  const char *path;
  long line;           /* line where the current record starts */
  long next_line;
  char *buf;
  size_t cap;
  char **fields;
  size_t nfields, fcap;
};
int csv_open (struct csv_reader *r, const char *path);
/* 1: a record in r->fields; 0: end of file; -1: malformed (reported). */
int csv_next (struct csv_reader *r);
void csv_close (struct csv_reader *r);
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
const struct gpu_entry *gpu_db_find (const struct gpu_db *db, const char *name);
const char *gpu_source (const struct gpu_entry *e, const char *key);
void gpu_db_free (struct gpu_db *db);

/* ---- strategy.c ---- */
enum pm_schedule { SCHED_1F1B, SCHED_GPIPE, SCHED_INTERLEAVED };
enum pm_recompute { RECOMPUTE_NONE, RECOMPUTE_SELECTIVE, RECOMPUTE_FULL };
struct strategy {
  int tp, pp, dp, ep, mbs, vp, zero;
  enum pm_schedule schedule;
  enum pm_recompute recompute;
  bool dp_set;
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
/* Fit the strategy to the GPUs given and the batch; fills dp when unset. */
int strategy_resolve (struct strategy *s, int64_t gpus, bool gpus_given, int64_t batch);

/* ---- modelcfg.c ---- */
struct model_cfg {
  char *name;            /* file stem or built-in name */
  char *path;
  char *arch;            /* model_type */
  int64_t layers, hidden, heads, ffn, vocab, experts, top_k, max_pos;
  bool encoder;          /* bidirectional (BERT) */
};
int model_cfg_load (struct model_cfg *m, const char *path);
void model_cfg_free (struct model_cfg *m);

/* ---- graph.c: the per-device op graph ---- */
enum phase { PHASE_FW = 0, PHASE_BW = 1, PHASE_ACC = 2 };
#define NPHASES 3
struct kop {             /* one kernel of a node */
  int kclass;            /* enum perfmod_kernel_class */
  const char *op;        /* interned */
  int64_t b, m, n, k, h;
  double elems;          /* MEMORY/COMM: elements moved */
};
struct node {
  char *name;
  char *opname;          /* NeuSight's node class: Linear, VECadd, fused, misc... */
  double in_elems;       /* sum of input tensor elements */
  double out_elems;      /* output tensor elements */
  struct kop *ops[NPHASES];
  size_t nops[NPHASES];
  bool fused;            /* a fused element-wise chain: one kernel per phase */
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
int graph_build (struct graph *g, const struct model_cfg *m, int64_t batch,
                 int64_t seq, bool train);

/* ---- plugin.c ---- */
struct plugin {
  struct perfmod_plugin p;   /* copy, zero-extended */
  char *path;
  void *dl;
  void *state;
  bool initialised;
};
struct plugin_set {
  struct plugin *v;
  size_t n;
};
extern const struct perfmod_host pm_host;
/* Load every *.so in dirs (NULL-terminated) that is a valid plugin; bad
 * ones are reported and skipped.  Returns the number of refusals. */
int plugins_load (struct plugin_set *set, char *const *dirs);
struct plugin *plugins_find (struct plugin_set *set, const char *name, int kind);
int plugin_start (struct plugin *pl);
void plugins_unload (struct plugin_set *set);
const char *plugin_kind_name (int kind);
/* Name of the plugin whose callback runs now (for host messages). */
extern const char *pm_current_plugin;
/* Last error a plugin reported through the host. */
extern char pm_plugin_errmsg[512];

/* ---- predict.c ---- */
struct phase_times { double t[NPHASES]; };
struct prediction {
  const char *predictor;
  double fw_ms, bw_ms, acc_ms;     /* bw excludes acc; e2e = fw+bw+acc */
  double e2e_ms;
  struct phase_times *per_node;    /* ms per node, one layer copy */
  size_t kernels, unique_kernels;
};
struct run_options {
  int dtype;
  bool train;
  int comm_group;        /* ranks in an imported graph's collectives */
};
int predict_graph (struct plugin *pred, const struct graph *g,
                   const struct perfmod_gpu *gpu, const struct run_options *o,
                   struct prediction *out);
void prediction_free (struct prediction *p);
void kop_to_kernel (const struct kop *o, const struct node *nd, int dtype,
                    struct perfmod_kernel *k);
double dtype_bytes (int dtype);
const char *dtype_name (int dtype);
int dtype_parse (const char *s);
const char *kclass_name (int kclass);

/* ---- explain.c ---- */
struct workload;
int explain_strategy (struct plugin_set *set, const struct strategy *s,
                      const struct model_cfg *m, const struct perfmod_gpu *gpu,
                      int64_t batch, int64_t seq, int dtype, int gpus_per_node,
                      FILE *out);

/* ---- reproduce.c ---- */
struct reproduce_options {
  const char *neusight;
  const char *table;          /* inf, train, all */
  char **predictors;
  const char *format;         /* table, csv */
};
int reproduce (struct plugin_set *set, const struct gpu_db *gpus,
               const struct reproduce_options *o);

#endif /* PERFMOD_INTERNAL_H */
