/* eval.c: perfmod eval: every measured test kernel predicted, MAPE per predictor, class and split, beside the paper. */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const int eval_classes[] = {
  PERFMOD_KERNEL_BMM, PERFMOD_KERNEL_LINEAR, PERFMOD_KERNEL_ELEMENTWISE,
  PERFMOD_KERNEL_SOFTMAX, PERFMOD_KERNEL_LAYERNORM,
};
#define NCLASSES 5

static int
class_index (int kclass)
{
  for (int i = 0; i < NCLASSES; i++)
    if (eval_classes[i] == kclass)
      return i;
  return -1;
}

/* summary/perop.csv: one row per method, 5 in-distribution then 5
 * out-of-distribution columns (BMM, FC, EW, Softmax, LN).  Fills
 * paper[split][class] with NAN where the file or the row is missing. */
void
paper_perop (const char *neusight, const char *predictor, double paper[2][NCLASSES])
{
  const char *row = paper_method_name (predictor);
  struct csv_reader r;
  char *path;

  for (int s = 0; s < 2; s++)
    for (int c = 0; c < NCLASSES; c++)
      paper[s][c] = NAN;
  if (neusight == NULL || row == NULL)
    return;
  path = xasprintf ("%s/summary/perop.csv", neusight);
  if (csv_open (&r, path) == 0) {
    while (csv_next (&r) == 1)
      if (r.nfields >= 11 && strcmp (r.fields[0], row) == 0)
        for (int s = 0; s < 2; s++)
          for (int c = 0; c < NCLASSES; c++)
            if (!parse_double (r.fields[1 + s * NCLASSES + c], &paper[s][c]))
              paper[s][c] = NAN;
    csv_close (&r);
  }
  else
    pm_debug ("%s: not readable; the paper column stays empty", path);
  free (path);
}

int
eval_kernels (struct plugin_set *set, const struct gpu_db *gpus, const struct tile_rules *tiles,
              const struct eval_options *o)
{
  struct kset ks;
  size_t npred = strv_len (o->predictors);
  struct plugin **preds = xcalloc (npred, sizeof *preds);
  const struct gpu_entry **in = xcalloc (strv_len (o->in_dist) + 1, sizeof *in);
  bool csv = strcmp (o->format, "csv") == 0;
  int rc = 0;

  for (size_t p = 0; p < npred; p++)
    if ((preds[p] = predictor_find (set, o->predictors[p])) == NULL) {
      rc = EXIT_USAGE;
      goto out;
    }
  for (size_t i = 0; o->in_dist[i]; i++)
    if ((in[i] = gpu_db_find (gpus, o->in_dist[i])) == NULL) {
      pm_error ("--in-dist '%s': no such GPU (see perfmod gpus)", o->in_dist[i]);
      rc = EXIT_USAGE;
      goto out;
    }
  if (kset_load (&ks, o->data, gpus, tiles) < 0) {
    rc = EXIT_USAGE;
    goto out;
  }
  if (o->per_kernel)
    printf ("predictor,file,line,gpu,split,class,op,b,m,n,k,h,kernel,measured_ms,predicted_ms,"
            "error_pct\n");
  else if (csv)
    printf ("predictor,class,split,rows,mape_pct,paper_mape_pct\n");
  else
    printf ("%-10s %-8s %-5s %7s %10s %10s\n", "predictor", "class", "split", "rows", "mape_%",
            "paper_%");
  for (size_t p = 0; p < npred && rc == 0; p++) {
    double sum[2][NCLASSES] = { { 0 } }, paper[2][NCLASSES];
    size_t cnt[2][NCLASSES] = { { 0 } };
    paper_perop (o->neusight, o->predictors[p], paper);
    for (size_t i = 0; i < ks.n; i++) {
      const struct krow *row = &ks.v[i];
      struct perfmod_kernel k;
      double t;
      int c = class_index (row->kclass), s = 1;
      if (c < 0)
        continue;
      for (size_t j = 0; in[j]; j++)
        if (in[j] == row->gpu)
          s = 0;
      krow_kernel (row, &k);
      k.isolated = 1;                   /* as the tables were measured */
      if (plugin_predict (preds[p], &k, &row->gpu->gpu, &t) < 0) {
        pm_error ("%s:%ld: %s: %s", row->file, row->line, o->predictors[p], pm_plugin_errmsg);
        rc = EXIT_RUNTIME;
        break;
      }
      sum[s][c] += fabs (t - row->latency_s) / row->latency_s;
      cnt[s][c]++;
      if (o->per_kernel)
        printf ("%s,%s,%ld,%s,%s,%s,%s,%lld,%lld,%lld,%lld,%lld,%s,%.9g,%.9g,%.6f\n",
                o->predictors[p], row->file, row->line, row->gpu->name, s ? "out" : "in",
                krow_class_label (row->kclass), row->op, (long long) row->b, (long long) row->m,
                (long long) row->n, (long long) row->k, (long long) row->h,
                row->kname ? row->kname : "", row->latency_s * 1e3, t * 1e3,
                100 * (t - row->latency_s) / row->latency_s);
    }
    for (int s = 0; s < 2 && rc == 0 && !o->per_kernel; s++)
      for (int c = 0; c < NCLASSES; c++) {
        double mape = cnt[s][c] ? 100 * sum[s][c] / (double) cnt[s][c] : NAN;
        const char *split = s ? "out" : "in", *cls = krow_class_label (eval_classes[c]);
        if (cnt[s][c] == 0)
          continue;
        if (csv) {
          printf ("%s,%s,%s,%zu,%.4f,", o->predictors[p], cls, split, cnt[s][c], mape);
          if (!isnan (paper[s][c]))
            printf ("%.4f", paper[s][c]);
          putchar ('\n');
        }
        else {
          char pb[32] = "-";
          if (!isnan (paper[s][c]))
            snprintf (pb, sizeof pb, "%.2f", paper[s][c]);
          printf ("%-10s %-8s %-5s %7zu %10.2f %10s\n", o->predictors[p], cls, split, cnt[s][c],
                  mape, pb);
        }
      }
  }
  if (rc == 0 && !csv && !o->per_kernel)
    printf ("\n%zu kernels from %zu files; in-distribution GPUs: %s.\n"
            "paper_%% is summary/perop.csv, which NeuSight computed per kernel class over its\n"
            "model runs (perfmod reproduce --table perop), not over these kernels.\n",
            ks.n, strv_len (ks.files), o->in_dist_text);
  kset_free (&ks);
out:
  free (preds);
  free (in);
  return rc;
}
