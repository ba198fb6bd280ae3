/* report.h: reports: tables, CSV, JSON and the SVG charts; included by core/internal.h, in its order. */
#ifndef PERFMOD_REPORT_H
#define PERFMOD_REPORT_H

#include <jansson.h>

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

/* ---- json.c: what every command's JSON shares (doc/perfmod.schema.json) ---- */
/* {"perfmod": version, "command": command}, the object each command's answer starts from */
json_t *json_envelope (const char *command);
/* x, or null where it is not finite (no value) */
json_t *json_num (double x);
/* a count held in a double (FLOPs, bytes): an integer where it is one, exactly */
json_t *json_count (double x);
/* s as an object: "spec" (the --strategy string that reruns it) and its keys by name;
 * train false: a serving replica's keys only (tp, pp, dp, ep, etp, dispatcher) */
json_t *json_strategy (const struct strategy *s, bool train);
/* m's terms in GiB (weights ... total, capacity) */
json_t *json_memory_gib (const struct memory_estimate *m);
/* The rows of a CSV table (its header, then records up to the end or a blank line) as an
 * array of objects by the header's names: empty cells null, true and false booleans,
 * numbers numbers, the rest strings. */
json_t *json_from_csv (const char *text, size_t len);
/* root, indented, a newline after; root is released */
void json_print (json_t *root, FILE *out);

/* ---- html.c: --html FILE ---- */
/* One self-contained page of a command's answer: json (its --format json), svg (a chart
 * perfmod drew, or NULL) inline, sortable tables, the memory breakdown and a Pareto chart
 * drawn by the page's own script.  0, or -1 (said). */
int html_page_write (const char *path, const char *title, const char *json, size_t json_len,
                     const char *svg, size_t svg_len);

#endif /* PERFMOD_REPORT_H */
