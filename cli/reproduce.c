/* reproduce.c: perfmod reproduce: the paper's end-to-end tables, row by row, against NeuSight's measurements. */
#include <config.h>

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static int
label_ms (const char *path, double *ms)
{
  json_error_t err;
  json_t *root = json_load_file (path, 0, &err), *v;
  if (root == NULL) {
    pm_error ("%s:%d: %s", path, err.line, err.text);
    return -1;
  }
  v = json_object_get (root, "e2e_latency");
  if (!json_is_number (v)) {
    pm_error ("%s: no numeric e2e_latency", path);
    json_decref (root);
    return -1;
  }
  *ms = json_number_value (v);
  json_decref (root);
  return 0;
}

/* Graphs are shared by the rows of every device: keep them by tag. */
struct gcache {
  char **tags;
  struct graph *graphs;
  size_t n;
};

/* The graph of a run: NeuSight's trace, or perfmod's own built from the
 * model config and the tag's mode, sequence, batch and fusion. */
static int
load_graph (struct graph *g, const char *dir, const char *model, const char *tag, bool build)
{
  struct model_cfg m;
  char *path = xasprintf ("%s/DLmodel_configs/%s.json", dir, model);
  int rc;
  if (model_cfg_load (&m, path) < 0) {
    free (path);
    return -1;
  }
  free (path);
  if (build) {
    char **f = strv_split (tag, '-');
    struct build_options bo = { .batch = 0 };
    size_t n = strv_len (f);
    rc = -1;
    if (n >= 4 && parse_int64 (f[2], &bo.seq) && parse_int64 (f[3], &bo.batch)) {
      bo.train = strcmp (f[1], "train") == 0;
      bo.fusion = n == 5 && strcmp (f[4], "fusion") == 0;
      if (n == 4 || bo.fusion)
        rc = graph_build (g, &m, &bo);
    }
    if (rc < 0)
      pm_error ("%s: no built graph for this run's tag", tag);
    strv_free (f);
  }
  else {
    path = xasprintf ("%s/results/opgraph/%s.csv", dir, tag);
    rc = opgraph_import (g, path, m.layers);
    free (path);
  }
  model_cfg_free (&m);
  return rc;
}

static struct graph *
graph_for (struct gcache *gc, const char *dir, const char *model, const char *tag, bool build)
{
  struct graph g;
  for (size_t i = 0; i < gc->n; i++)
    if (strcmp (gc->tags[i], tag) == 0)
      return &gc->graphs[i];
  if (load_graph (&g, dir, model, tag, build) < 0)
    return NULL;
  gc->tags = xrealloc (gc->tags, (gc->n + 1) * sizeof *gc->tags);
  gc->graphs = xrealloc (gc->graphs, (gc->n + 1) * sizeof *gc->graphs);
  gc->tags[gc->n] = xstrdup (tag);
  gc->graphs[gc->n] = g;
  return &gc->graphs[gc->n++];
}

/* ---- the per-op table: NeuSight's per-class sums over its model runs ---- */

/* NeuSight's split (summarize.py): a run is out of distribution when its
 * GPU or its model was not seen in training. */
static const char *const ood_devices[] = { "NVIDIA_H100_80GB_HBM3", "NVIDIA_L4",
                                           "NVIDIA_A100_80GB_PCIe" };
static const char *const ood_models[] = { "gpt3_27", "opt_13", "gpt3_xl" };

static bool
in_list (const char *s, const char *const *v, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (strcmp (s, v[i]) == 0)
      return true;
  return false;
}

/* Class of a traced node for the per-op table: BMM, Linear, other vector
 * operators, softmax, layer norm (summarize.py's groups), or -1. */
static int
perop_class (const char *opname)
{
  if (strcmp (opname, "BMM") == 0) return 0;
  if (strcmp (opname, "Linear") == 0) return 1;
  if (strncmp (opname, "VECsoftmax", 10) == 0) return 3;
  if (strncmp (opname, "VECln", 5) == 0) return strcmp (opname, "VECln") == 0 ? 4 : 2;
  if (strstr (opname, "VEC")) return 2;
  return -1;
}

struct named { const char *name; double ms; };

static int
cmp_named (const void *a, const void *b)
{
  return strcmp (((const struct named *) a)->name, ((const struct named *) b)->name);
}

/* Measured per-class sums of a run: label/DEVICE/TAG.csv's per-node
 * latencies (ms), joined to the graph's nodes by name and replicated as
 * the graph's layer is; *all sums every node so joined, of any class.
 * 1 if the run has no per-node labels (some Switch runs; summarize.py
 * leaves them out too). */
static int
measured_classes (const char *path, const struct graph *g, double sums[5], double *all)
{
  struct csv_reader r;
  struct named *v = NULL;
  size_t n = 0;
  int cname, clat, rc;

  for (int c = 0; c < 5; c++)
    sums[c] = 0;
  *all = 0;
  if (access (path, F_OK) != 0) {
    pm_debug ("%s: no per-node labels; the run is left out of the per-op and nodesum tables",
              path);
    return 1;
  }
  if (csv_open (&r, path) < 0) {
    pm_error ("%s: cannot open", path);
    return -1;
  }
  if (csv_next (&r) != 1 || (cname = csv_column (r.fields, r.nfields, "Name")) < 0 ||
      (clat = csv_column (r.fields, r.nfields, "latency")) < 0) {
    pm_error ("%s:1: expected Name and latency columns", path);
    csv_close (&r);
    return -1;
  }
  while ((rc = csv_next (&r)) == 1) {
    double ms;
    if ((size_t) cname >= r.nfields || (size_t) clat >= r.nfields ||
        !parse_double (r.fields[clat], &ms)) {
      pm_error ("%s:%ld: no numeric latency", path, r.line);
      rc = -1;
      break;
    }
    v = xrealloc (v, (n + 1) * sizeof *v);
    v[n].name = intern (r.fields[cname]);
    v[n++].ms = ms;
  }
  csv_close (&r);
  if (rc < 0) {
    free (v);
    return -1;
  }
  qsort (v, n, sizeof *v, cmp_named);
  for (size_t i = 0; i < g->n; i++) {
    int c = perop_class (g->nodes[i].opname);
    struct named key = { g->nodes[i].name, 0 }, *hit;
    double ms;
    hit = bsearch (&key, v, n, sizeof *v, cmp_named);
    if (hit == NULL)
      continue;
    ms = hit->ms * (double) graph_weight (g, i);
    *all += ms;
    if (c >= 0)
      sums[c] += ms;
  }
  free (v);
  return 0;
}

struct tally {
  double ours, paper;
  int n, npaper;
};

static const char *const perop_labels[5] = { "BMM", "FC", "EW", "Softmax", "LN" };

/* Add one run's per-op errors to sum/cnt[predictor][split][class]. */
struct perop_tally {
  double sum[2][5];           /* [split][class]: our APE sums */
  int cnt[2][5];
  double paper[2][5];         /* the artifact's own errors on the same runs */
  int npaper[2][5];
  int col[5];                 /* summary.csv columns of those errors, or -1 */
};

static const char *const perop_groups[5] = { "BMM", "Linear", "VEC", "VECsoftmax", "VECln" };

static int
perop_row (struct plugin **preds, size_t npred, const struct graph *g,
           const struct gpu_entry *ge, bool train, const char *label_csv, int split,
           char **fields, struct perop_tally *t)
{
  double meas[5], all;
  int rc = measured_classes (label_csv, g, meas, &all);
  if (rc != 0)
    return rc < 0 ? -1 : 0;
  for (size_t p = 0; p < npred; p++) {
    struct prediction pr;
    struct run_options ro = { .prec = precision_of_dtype (PERFMOD_DTYPE_FP32, train),
                              .train = train, .comm_group = 1 };
    double pred[5] = { 0, 0, 0, 0, 0 };
    if (predict_graph (preds[p], g, &ge->gpu, &ro, &pr) < 0)
      return -1;
    for (size_t i = 0; i < g->n; i++) {
      int c = perop_class (g->nodes[i].opname);
      if (c >= 0)
        pred[c] += (pr.per_node[i].t[0] + pr.per_node[i].t[1] + pr.per_node[i].t[2]) *
                   (double) graph_weight (g, i);
    }
    prediction_free (&pr);
    for (int c = 0; c < 5; c++)
      pm_debug ("perop %s %s %s: measured %.4f ms, predicted %.4f ms", label_csv,
                preds[p]->p.name, perop_labels[c], meas[c], pred[c]);
    for (int c = 0; c < 5; c++) {
      /* summarize.py: 0/0 is no data; x/0 counts as 0 (it replaces inf by 0). */
      double paper;
      if (meas[c] == 0 && pred[c] == 0)
        continue;
      t[p].sum[split][c] += meas[c] == 0 ? 0 : fabs (meas[c] - pred[c]) / meas[c] * 100;
      t[p].cnt[split][c]++;
      if (t[p].col[c] >= 0 && parse_double (fields[t[p].col[c]], &paper) && !isnan (paper)) {
        t[p].paper[split][c] += paper;
        t[p].npaper[split][c]++;
      }
    }
  }
  return 0;
}

static void
perop_print (const struct reproduce_options *o, size_t npred, const struct perop_tally *t)
{
  bool csv = strcmp (o->format, "csv") == 0;
  if (csv)
    fprintf (o->out, "predictor,class,split,rows,mape_pct,paper_mape_pct,paper_same_runs_pct\n");
  else
    fprintf (o->out,
             "\nper-op error per kernel class, summed over each model run (the paper's method)\n"
             "%-10s %-8s %-5s %5s %9s %9s %12s\n", "predictor", "class", "split", "runs",
             "mape_%", "paper_%", "paper_same_%");
  for (size_t p = 0; p < npred; p++) {
    double paper[2][5];
    paper_perop (o->neusight, o->predictors[p], paper);
    for (int s = 0; s < 2; s++)
      for (int c = 0; c < 5; c++) {
        double m, same;
        char pb[32] = "", sb[32] = "";
        if (t[p].cnt[s][c] == 0)
          continue;
        m = t[p].sum[s][c] / t[p].cnt[s][c];
        same = t[p].npaper[s][c] ? t[p].paper[s][c] / t[p].npaper[s][c] : NAN;
        if (!isnan (paper[s][c]))
          snprintf (pb, sizeof pb, csv ? "%.4f" : "%.2f", paper[s][c]);
        if (!isnan (same))
          snprintf (sb, sizeof sb, csv ? "%.4f" : "%.2f", same);
        if (csv)
          fprintf (o->out, "%s,%s,%s,%d,%.4f,%s,%s\n", o->predictors[p], perop_labels[c],
                   s ? "out" : "in", t[p].cnt[s][c], m, pb, sb);
        else
          fprintf (o->out, "%-10s %-8s %-5s %5d %9.2f %9s %12s\n", o->predictors[p],
                   perop_labels[c], s ? "out" : "in", t[p].cnt[s][c], m, *pb ? pb : "-",
                   *sb ? sb : "-");
      }
  }
}

/* One end-to-end row: its error goes into *t, and it is printed. */
static void
e2e_row (const struct reproduce_options *o, char **fields, const int col[6], const char *name,
         double measured, double predicted, double paper, struct tally *t)
{
  const char *model = fields[col[0]], *seq = fields[col[1]], *batch = fields[col[2]];
  const char *device = fields[col[3]], *mode = fields[col[4]];
  double err = fabs (predicted - measured) / measured * 100;
  t->ours += err;
  t->n++;
  if (!isnan (paper)) {
    t->paper += paper;
    t->npaper++;
  }
  if (strcmp (o->format, "csv") == 0) {
    fprintf (o->out, "%s,%s,%s,%s,%s,%s,,%s,%.6f,%.6f,%.6f,", mode, model, seq, batch, device,
             mode, name, measured, predicted, err);
    if (!isnan (paper))
      fprintf (o->out, "%.6f", paper);
    fputc ('\n', o->out);
  }
  else {
    char pbuf[32] = "-";
    if (!isnan (paper))
      snprintf (pbuf, sizeof pbuf, "%.2f", paper);
    fprintf (o->out, "%-5s %-11s %5s %5s %-22s %-10s %12.2f %12.2f %8.2f %8s\n", mode, model,
             seq, batch, device, name, measured, predicted, err, pbuf);
  }
}

/* The name --table nodesum gives the sum of a run's measured per-node
 * latencies, printed as one more predictor. */
static const char node_sum_name[] = "node-sum";

int
reproduce (struct plugin_set *set, const struct gpu_db *gpus, const struct reproduce_options *o)
{
  static const char *const need[] = { "model_name", "seqlen", "batch", "device", "mode", "option" };
  struct csv_reader r;
  struct gcache gc = { NULL, NULL, 0 };
  char *path = xasprintf ("%s/summary/summary.csv", o->neusight);
  char **header = NULL;
  size_t nheader = 0, npred = strv_len (o->predictors);
  struct plugin **preds = xcalloc (npred, sizeof *preds);
  int *paper_col = xcalloc (npred, sizeof *paper_col);
  /* one more: --table nodesum's node-sum row */
  struct tally (*tally)[2] = xcalloc (npred + 1, sizeof *tally);
  int col[6], rc = 0, hrc;
  bool csv = strcmp (o->format, "csv") == 0;
  bool want_e2e = strcmp (o->table, "perop") != 0;
  /* nodesum: the end-to-end rows that have per-node labels, and the sum
   * of those labels as one more row */
  bool want_nodesum = strcmp (o->table, "nodesum") == 0;
  /* The per-op table joins measured per-node latencies to the traced
   * graphs' node names: it needs the traces. */
  bool want_perop = (strcmp (o->table, "perop") == 0 || (strcmp (o->table, "all") == 0 && !csv))
                    && !o->build;
  struct perop_tally *ptally = xcalloc (npred, sizeof *ptally);

  for (size_t p = 0; p < npred; p++) {
    preds[p] = predictor_find (set, o->predictors[p]);
    if (preds[p] == NULL) {
      rc = EXIT_USAGE;
      goto out;
    }
  }
  if (csv_open (&r, path) < 0) {
    pm_error ("%s: cannot open (is --neusight the NeuSight artifact folder?)", path);
    rc = EXIT_USAGE;
    goto out;
  }
  if ((hrc = csv_next (&r)) <= 0) {
    if (hrc == 0)
      pm_error ("%s:1: no header", path);
    rc = EXIT_RUNTIME;
    goto close;
  }
  nheader = r.nfields;
  header = xcalloc (nheader + 1, sizeof *header);
  for (size_t i = 0; i < nheader; i++)
    header[i] = xstrdup (r.fields[i]);
  for (int i = 0; i < 6; i++)
    if ((col[i] = csv_column (header, nheader, need[i])) < 0) {
      pm_error ("%s:1: missing column %s", path, need[i]);
      rc = EXIT_RUNTIME;
      goto close;
    }
  for (size_t p = 0; p < npred; p++) {
    const char *pre = paper_method_prefix (o->predictors[p]);
    char *name = pre ? xasprintf ("%s_all_e2e_err", pre) : NULL;
    paper_col[p] = name ? csv_column (header, nheader, name) : -1;
    free (name);
    for (int c = 0; c < 5; c++) {
      name = pre ? xasprintf ("%s_%s_e2e_err", pre, perop_groups[c]) : NULL;
      ptally[p].col[c] = name ? csv_column (header, nheader, name) : -1;
      free (name);
    }
  }
  if (!want_e2e)
    ;
  else if (csv)
    fprintf (o->out, "table,model,seq,batch,device,mode,option,predictor,measured_ms,"
             "predicted_ms,error_pct,paper_error_pct\n");
  else
    fprintf (o->out, "%-5s %-11s %5s %5s %-22s %-10s %12s %12s %8s %8s\n", "table", "model", "seq",
             "batch", "device", "predictor", "measured_ms", "predicted_ms", "err_%", "paper_%");
  while ((rc = csv_next (&r)) > 0) {
    const char *model, *seq, *batch, *device, *mode;
    const struct gpu_entry *ge;
    struct graph *g;
    char *tag, *lpath;
    double measured;
    int mi;

    if (r.nfields != nheader) {
      pm_error ("%s:%ld: %zu fields, expected %zu", path, r.line, r.nfields, nheader);
      rc = -1;
      break;
    }
    model = r.fields[col[0]]; seq = r.fields[col[1]]; batch = r.fields[col[2]];
    device = r.fields[col[3]]; mode = r.fields[col[4]];
    if (r.fields[col[5]][0] != '\0')
      continue;                        /* fusion and distributed rows: other tables */
    mi = strcmp (mode, "train") == 0;
    if ((strcmp (o->table, "inf") == 0 || strcmp (o->table, "train") == 0) &&
        strcmp (o->table, mode) != 0)
      continue;
    if (strcmp (mode, "inf") != 0 && strcmp (mode, "train") != 0) {
      pm_error ("%s:%ld: mode '%s': expected inf or train", path, r.line, mode);
      rc = -1;
      break;
    }
    ge = gpu_db_find (gpus, device);
    if (ge == NULL) {
      pm_error ("%s:%ld: device '%s' is in no gpus.d section", path, r.line, device);
      rc = -1;
      break;
    }
    tag = xasprintf ("%s-%s-%s-%s", model, mode, seq, batch);
    lpath = xasprintf ("%s/label/%s/%s.json", o->neusight, device, tag);
    g = graph_for (&gc, o->neusight, model, tag, o->build);
    if (g == NULL || label_ms (lpath, &measured) < 0) {
      free (tag);
      free (lpath);
      rc = -1;
      break;
    }
    free (lpath);
    if (want_nodesum) {
      double cls[5], all;
      lpath = xasprintf ("%s/label/%s/%s.csv", o->neusight, device, tag);
      rc = measured_classes (lpath, g, cls, &all);
      free (lpath);
      if (rc != 0) {
        free (tag);
        if (rc < 0)
          break;
        rc = 0;
        continue;
      }
      e2e_row (o, r.fields, col, node_sum_name, measured, all, NAN, &tally[npred][mi]);
    }
    if (want_perop) {
      int split = in_list (device, ood_devices, 3) || in_list (model, ood_models, 3);
      lpath = xasprintf ("%s/label/%s/%s.csv", o->neusight, device, tag);
      rc = perop_row (preds, npred, g, ge, mi == 1, lpath, split, r.fields, ptally);
      free (lpath);
      if (rc < 0) {
        free (tag);
        break;
      }
    }
    for (size_t p = 0; p < npred && want_e2e; p++) {
      struct prediction pr;
      struct run_options ro = { .prec = precision_of_dtype (PERFMOD_DTYPE_FP32, mi == 1),
                                .train = mi == 1, .comm_group = 1 };
      double paper = NAN;
      if (predict_graph (preds[p], g, &ge->gpu, &ro, &pr) < 0) {
        rc = -1;
        break;
      }
      if (paper_col[p] >= 0 && r.fields[paper_col[p]][0])
        parse_double (r.fields[paper_col[p]], &paper);
      e2e_row (o, r.fields, col, o->predictors[p], measured, pr.e2e_ms, paper, &tally[p][mi]);
      prediction_free (&pr);
    }
    free (tag);
    if (rc < 0)
      break;
  }
  if (rc == 0 && want_perop)
    perop_print (o, npred, ptally);
  if (rc == 0 && want_e2e) {
    FILE *sum = csv ? o->err : o->out;
    fprintf (sum, "\n%-10s %-6s %5s %12s %14s\n", "predictor", "mode", "rows", "mean_err_%",
             "paper_mean_%");
    for (size_t p = 0; p < npred + want_nodesum; p++)
      for (int m = 0; m < 2; m++) {
        if (tally[p][m].n == 0)
          continue;
        fprintf (sum, "%-10s %-6s %5d %12.2f ", p < npred ? o->predictors[p] : node_sum_name,
                 m ? "train" : "inf", tally[p][m].n, tally[p][m].ours / tally[p][m].n);
        if (tally[p][m].npaper)
          fprintf (sum, "%14.2f\n", tally[p][m].paper / tally[p][m].npaper);
        else
          fprintf (sum, "%14s\n", "-");
      }
    for (size_t p = 0; p < npred; p++)
      if (strncmp (o->predictors[p], "tile-mlp", 8) == 0) {
        fprintf (sum, "note: the paper's text quotes NeuSight at 7.3%% (inference) and 9.7%% (training);"
                 " the artifact's own rows give 9.7 and 7.3, shown above as paper_mean.\n");
        break;
      }
  }
  if (rc == 0 && csv && strcmp (o->table, "all") == 0)
    fprintf (o->err, "note: --format csv --table all writes the end-to-end rows; the per-op "
             "table has its own columns: --table perop\n");
  if (rc < 0)
    rc = EXIT_RUNTIME;
close:
  csv_close (&r);
out:
  for (size_t i = 0; i < gc.n; i++) {
    free (gc.tags[i]);
    graph_free (&gc.graphs[i]);
  }
  free (gc.tags);
  free (gc.graphs);
  for (size_t i = 0; header && i < nheader; i++)
    free (header[i]);
  free (header);
  free (preds);
  free (paper_col);
  free (tally);
  free (ptally);
  free (path);
  return rc;
}
