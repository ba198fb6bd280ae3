/* eval.c: perfmod eval: every measured test kernel predicted, MAPE per predictor, class and split (NeuSight's, beside the paper) or per table, class, dtype and GPU (the modern tables). */
#include <config.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
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

/* The class a modern row is reported under: the collective for COMM rows,
 * prefill or decode for attention, else the paper's label (GEMMs: FC). */
const char *
krow_report_class (const struct krow *r)
{
  if (r->kclass == PERFMOD_KERNEL_COMM)
    return r->op;
  if (r->kclass == PERFMOD_KERNEL_ATTENTION)
    return r->causal ? "attn-prefill" : "attn-decode";
  if (r->kclass == PERFMOD_KERNEL_MEMORY)
    return "memory";
  if (r->kclass == PERFMOD_KERNEL_MOE) {   /* per engine: their kernels differ */
    /* [1] 16-bit or fp8 weights, [2] weight-only MXFP4 ones (bf16 kernels) */
    static const char *const eng[][3] = { { "trtllm", "moe-trtllm", "moe-trtllm-mxfp4" },
                                          { "sglang", "moe-sglang", "moe-sglang-mxfp4" },
                                          { "vllm", "moe-vllm", "moe-vllm-mxfp4" } };
    int w = r->weight_bytes > 0 ? 2 : 1;
    for (size_t i = 0; r->engine && i < sizeof eng / sizeof eng[0]; i++)
      if (strcmp (r->engine, eng[i][0]) == 0)
        return eng[i][w];
    return w == 2 ? "moe-mxfp4" : "moe";
  }
  return krow_class_label (r->kclass);
}

/* Whether a row belongs to the split asked for. */
bool
krow_in_split (const struct krow *r, int split, uint64_t seed)
{
  return split == SPLIT_ALL || (split == SPLIT_HOLDOUT) == krow_holdout (r, seed);
}

struct group {                  /* one line of the modern report */
  const char *set, *cls, *gpu;
  int dtype;
  size_t n, failed;
  size_t n_iv, in_iv;           /* rows with an 80 % interval, and those measured inside it */
  double sum_abs, sum_signed;
  double *err;                  /* |error| of each row, for the median */
  size_t cap;
  char *why;                    /* the first failure's reason */
};

static struct group *
group_of (struct group **v, size_t *n, const struct krow *r)
{
  const char *cls = krow_report_class (r), *gpu = r->gpu->name;
  for (size_t i = 0; i < *n; i++) {
    struct group *g = &(*v)[i];
    if (g->set == r->set && strcmp (g->cls, cls) == 0 && g->gpu == gpu && g->dtype == r->dtype)
      return g;
  }
  *v = xrealloc (*v, (*n + 1) * sizeof **v);
  struct group *g = &(*v)[(*n)++];
  memset (g, 0, sizeof *g);
  g->set = r->set;
  g->cls = cls;
  g->gpu = gpu;
  g->dtype = r->dtype;
  return g;
}

static int
dbl_cmp (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

static int
group_cmp (const void *pa, const void *pb)
{
  const struct group *a = pa, *b = pb;
  int c = strcmp (a->set, b->set);
  if (c == 0)
    c = strcmp (a->cls, b->cls);
  if (c == 0)
    c = a->dtype - b->dtype;
  if (c == 0)
    c = strcmp (a->gpu, b->gpu);
  return c;
}

/* ms of seconds into buf, for a CSV cell. */
static const char *
fmt_ms (char *buf, size_t n, double seconds)
{
  snprintf (buf, n, "%.9g", seconds * 1e3);
  return buf;
}

/* A row's prediction: its kernel timed alone (a MoE layer's: the MOE
 * kernel, which a predictor without a MoE model predicts as its parts,
 * plugin.c), with the predictor's spread. */
static int
row_estimate (struct plugin *pred, const struct krow *row, struct perfmod_estimate *est)
{
  struct perfmod_kernel k;
  krow_kernel (row, &k);
  k.isolated = 1;
  return plugin_estimate (pred, &k, &row->gpu->gpu, est);
}

/* The modern tables: every kept row predicted by each predictor; MAPE,
 * median |error| and mean signed error per table, class, dtype and GPU.
 * A predictor that cannot predict a class says why once, on stderr. */
static int
eval_modern (struct plugin **preds, char **names, size_t npred, const struct kset *ks,
             const struct eval_options *o)
{
  bool csv = strcmp (o->format, "csv") == 0;
  size_t kept = 0, len = 0, evaluated = 0;
  char *buf = NULL;
  /* the report is held until every predictor has run: a refusal leaves stdout empty */
  FILE *out = open_memstream (&buf, &len);
  if (out == NULL) {
    pm_error ("cannot hold the report: %s", strerror (errno));
    return 1;
  }
  if (o->per_kernel)
    fprintf (out, "predictor,file,line,table,gpu,class,dtype,b,m,n,k,h,kv_heads,ranks,bytes,"
            "measurements,measured_ms,predicted_ms,error_pct,top_k,spread_ms,low_ms,high_ms\n");
  else if (csv)
    fprintf (out, "predictor,table,class,dtype,gpu,rows,mape_pct,median_pct,bias_pct,in80_pct\n");
  else
    fprintf (out, "%-10s %-20s %-16s %-9s %-26s %7s %8s %8s %8s %8s\n", "predictor", "table",
            "class", "dtype", "gpu", "rows", "mape_%", "median_%", "bias_%", "in80_%");
  for (size_t p = 0; p < npred; p++) {
    struct group *gv = NULL;
    size_t ng = 0;
    kept = 0;
    for (size_t i = 0; i < ks->n; i++) {
      const struct krow *row = &ks->v[i];
      struct group *g;
      struct perfmod_estimate est;
      char lo[32], hi[32];
      double t, e;
      if (!krow_in_split (row, o->split, o->seed))
        continue;
      kept++;
      g = group_of (&gv, &ng, row);
      if (row_estimate (preds[p], row, &est) < 0) {
        /* a predictor's bad input file fails every row alike: said once */
        if (plugins_input_fault ()) {
          pm_error ("%s: %s", names[p], pm_plugin_errmsg);
          for (size_t j = 0; j < ng; j++) {
            free (gv[j].err);
            free (gv[j].why);
          }
          free (gv);
          fclose (out);
          free (buf);
          return EXIT_USAGE;
        }
        if (g->failed++ == 0)
          g->why = xstrdup (pm_plugin_errmsg);
        continue;
      }
      t = est.seconds;
      e = (t - row->latency_s) / row->latency_s;
      if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 256;
        g->err = xrealloc (g->err, g->cap * sizeof *g->err);
      }
      g->err[g->n++] = fabs (e);
      evaluated++;
      g->sum_abs += fabs (e);
      g->sum_signed += e;
      if (est.high > 0) {
        g->n_iv++;
        g->in_iv += row->latency_s >= est.low && row->latency_s <= est.high;
      }
      if (o->per_kernel)
        fprintf (out, "%s,%s,%ld,%s,%s,%s,%s,%lld,%lld,%lld,%lld,%lld,%lld,%d,%.0f,%d,%.9g,%.9g,%.6f,"
                 "%lld,%.9g,%s,%s\n",
                names[p], row->file, row->line, row->set, row->gpu->name,
                krow_report_class (row), dtype_name (row->dtype), (long long) row->b,
                (long long) row->m, (long long) row->n, (long long) row->k, (long long) row->h,
                (long long) row->kv_heads, row->ranks, row->bytes, row->nmeas,
                row->latency_s * 1e3, t * 1e3, 100 * e, (long long) row->top_k,
                est.spread * 1e3, est.high > 0 ? fmt_ms (lo, sizeof lo, est.low) : "",
                est.high > 0 ? fmt_ms (hi, sizeof hi, est.high) : "");
    }
    if (ng)
      qsort (gv, ng, sizeof *gv, group_cmp);
    for (size_t i = 0; i < ng; i++) {
      struct group *g = &gv[i];
      if (g->failed)
        fprintf (stderr, "perfmod: %s: %zu %s %s rows on %s not predicted: %s\n",
                 names[p], g->failed, g->set, g->cls, g->gpu, g->why);
      if (!o->per_kernel && g->n) {
        qsort (g->err, g->n, sizeof *g->err, dbl_cmp);
        double med = g->n % 2 ? g->err[g->n / 2] : 0.5 * (g->err[g->n / 2 - 1] + g->err[g->n / 2]);
        double mape = 100 * g->sum_abs / (double) g->n, bias = 100 * g->sum_signed / (double) g->n;
        char in80[16] = "";     /* the share measured inside the 80 % interval, where given */
        if (g->n_iv)
          snprintf (in80, sizeof in80, "%.*f", csv ? 4 : 2,
                    100.0 * (double) g->in_iv / (double) g->n_iv);
        if (csv)
          fprintf (out, "%s,%s,%s,%s,%s,%zu,%.4f,%.4f,%.4f,%s\n", names[p], g->set, g->cls,
                  dtype_name (g->dtype), g->gpu, g->n, mape, 100 * med, bias, in80);
        else
          fprintf (out, "%-10s %-20s %-16s %-9s %-26s %7zu %8.2f %8.2f %+8.2f %8s\n", names[p],
                  g->set, g->cls, dtype_name (g->dtype), g->gpu, g->n, mape, 100 * med, bias,
                  g->n_iv ? in80 : "-");
      }
      free (g->err);
      free (g->why);
    }
    free (gv);
  }
  if (!csv && !o->per_kernel)
    fprintf (out, "\n%zu shapes (%s) from %zu tables; each is the median of one shape's\n"
            "measurements across kernel libraries and versions (a MoE layer's per engine);\n"
            "bias_%%: mean signed error; in80_%%: the share measured inside the predictor's\n"
            "80 %% interval, where it gives one.\n",
            kept, o->split == SPLIT_ALL ? "all" : o->split == SPLIT_HOLDOUT
            ? "the seeded 20 % held out" : "the 80 % kept for training", strv_len (ks->files));
  if (fclose (out) != 0) {
    pm_error ("cannot hold the report: %s", strerror (errno));
    free (buf);
    return 1;
  }
  if (evaluated == 0) {          /* the split left none, or no predictor predicted one */
    pm_error ("%s: no row was evaluated (%zu in %s)", o->data, kept,
              o->split == SPLIT_ALL ? "all" : o->split == SPLIT_HOLDOUT ? "the held-out 20 %"
              : "the training 80 %");
    free (buf);
    return EXIT_RUNTIME;
  }
  fwrite (buf, 1, len, stdout);
  free (buf);
  return 0;
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
  memset (&ks, 0, sizeof ks);
  struct mdata_filter f = { .dtype = o->dtype, .gpus = o->gpus, .tables = o->tables };
  int tables = mdata_load (&ks, o->data, gpus, &f);
  if (tables < 0) {
    kset_free (&ks);
    rc = EXIT_USAGE;
    goto out;
  }
  if (tables > 0) {
    if (ks.n == 0) {             /* nothing evaluated is a failure, not an empty table */
      pm_error ("%s: no rows to evaluate (--dtype %s, --gpu %s, --table %s)", o->data,
                o->dtype >= 0 ? dtype_name (o->dtype) : "any", o->gpus ? "as given" : "any",
                o->tables ? "as given" : "any");
      kset_free (&ks);
      rc = EXIT_RUNTIME;
      goto out;
    }
    /* without --predictor: the predictors that have models of these kernels */
    static char *modern[] = { "roofline", "linreg", "tile-mlp", NULL };
    struct plugin *mp[3];
    bool dflt = o->default_predictors;
    for (size_t p = 0; dflt && p < 3; p++)
      if ((mp[p] = predictor_find (set, modern[p])) == NULL) {
        rc = EXIT_USAGE;
        break;
      }
    if (rc == 0)
      rc = eval_modern (dflt ? mp : preds, dflt ? modern : o->predictors, dflt ? 3 : npred, &ks, o);
    kset_free (&ks);
    goto out;
  }
  if (o->split != SPLIT_ALL) {
    pm_error ("--split: NeuSight's data (%s) comes split by GPU already (--in-dist)", o->data);
    rc = EXIT_USAGE;
    goto out;
  }
  if (kset_load (&ks, o->data, gpus, tiles) < 0) {
    rc = EXIT_USAGE;
    goto out;
  }
  plugins_neusight_units (set);
  if (o->dtype >= 0 || o->gpus) {  /* NeuSight's rows are fp32: keep what the filters ask */
    size_t kept = 0;
    for (size_t i = 0; i < ks.n; i++)
      if ((o->dtype < 0 || o->dtype == ks.v[i].dtype) && gpu_listed (o->gpus, ks.v[i].gpu))
        ks.v[kept++] = ks.v[i];
    ks.n = kept;
  }
  if (ks.n == 0) {               /* nothing evaluated is a failure, not an empty table */
    pm_error ("%s: no kernels to evaluate (--dtype %s, --gpu %s)", o->data,
              o->dtype >= 0 ? dtype_name (o->dtype) : "any", o->gpus ? "as given" : "any");
    kset_free (&ks);
    rc = EXIT_RUNTIME;
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
