/* distributed.c: perfmod reproduce --table distributed: the paper's 4-GPU training cases, predicted from built graphs under the strategy. */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The paper's names for what summary/distributed.csv lists. */
static const struct {
  const char *paper, *builtin, *tag;
  int64_t seq;
} dist_models[] = {
  { "GPT2-Large", "gpt2-large", "gpt2_large", 1024 },
  { "GPT3-XL", "gpt3-xl", "gpt3_xl", 2048 },
};
static const struct {
  const char *paper, *device;
  int gpus;
} dist_gpus[] = {
  { "A100x4", "NVIDIA_A100-SXM4-40GB", 4 },
  { "H100x4", "NVIDIA_H100_80GB_HBM3", 4 },
};

/* A cell of the paper's table: "452.3", "510.5 (12.9%)" or empty. */
static bool
cell_value (const char *s, double *v, double *pct)
{
  char *end;
  double x = strtod (s, &end);
  if (end == s)
    return false;
  *v = x;
  if (pct) {
    const char *l = strchr (end, '(');
    *pct = l ? strtod (l + 1, NULL) : NAN;
  }
  return true;
}

/* The strategy NeuSight's Megatron runs used (megatron_configs, one YAML file per dimension):
 * one micro-batch per replica, fp32, no recomputation; DP splits the
 * global batch over the replicas.  Accelerate's Megatron-LM integration
 * trains Megatron's own GPT model, so its kernels are Megatron's. */
static void
cell_strategy (struct strategy *s, const char *dim, int gpus, int64_t batch)
{
  strategy_init (s);
  s->kernels = KERNELS_MEGATRON;
  if (strcmp (dim, "DP") == 0) {
    s->dp = gpus;
    s->mbs = (int) (batch / gpus);
  }
  else {
    if (strcmp (dim, "TP") == 0)
      s->tp = gpus;
    else
      s->pp = gpus;
    s->mbs = (int) batch;
  }
}

struct dist_cell {
  const char *model, *builtin, *tag, *gpu_paper, *device, *dim;
  int64_t seq, batch;
  int gpus;
  bool measured_oom;
  double measured, paper_ms, paper_pct;
  long line;
};

/* Measured latency from the label file where there is one (more digits
 * than the table), else the table's. */
static void
label_measured (const char *neusight, struct dist_cell *c, const char *opt)
{
  char *path = xasprintf ("%s/label/%s/%s-train-%lld-%lld-%s.json", neusight, c->device, c->tag,
                          (long long) c->seq, (long long) c->batch, opt);
  FILE *fp = fopen (path, "r");
  char buf[4096];
  size_t n;
  if (fp) {
    n = fread (buf, 1, sizeof buf - 1, fp);
    buf[n] = '\0';
    const char *k = strstr (buf, "\"e2e_latency\"");
    if (k && (k = strchr (k, ':')))
      c->measured = strtod (k + 1, NULL);
    fclose (fp);
  }
  free (path);
}

/* v with digits decimals; an empty cell where there is no number (NaN). */
static void
cell (char *buf, size_t len, int digits, double v)
{
  if (isnan (v))
    buf[0] = '\0';
  else
    snprintf (buf, len, "%.*f", digits, v);
}

int
reproduce_distributed (struct plugin_set *set, const struct gpu_db *gpus,
                       const struct reproduce_options *o)
{
  char *path = xasprintf ("%s/summary/distributed.csv", o->neusight);
  struct csv_reader r;
  char *groups[16] = { 0 }, *dims[16] = { 0 };
  struct dist_cell cells[64];
  size_t ncells = 0, npred = strv_len (o->predictors), nf = 0;
  char *model = NULL, *batch = NULL;
  bool csv = strcmp (o->format, "csv") == 0;
  int rc = 0, row = 0;
  struct tally { double err, paper; int n, oom_ok, oom_n, fit_ok; } *t;
  struct plugin **pls;

  if (csv_open (&r, path) < 0) {
    pm_error ("%s: cannot open (is --neusight the NeuSight artifact folder?)", path);
    free (path);
    return EXIT_USAGE;
  }
  /* Two header rows (the GPU groups, then DP/TP/PP), then per model and
   * batch a measured row and NeuSight's.  An empty measured cell is one
   * the paper marks OOM. */
  while ((rc = csv_next (&r)) > 0) {
    row++;
    if (row <= 2) {
      char *last = NULL;
      nf = r.nfields < 16 ? r.nfields : 16;
      for (size_t i = 0; i < nf; i++) {
        if (row == 1) {
          if (r.fields[i][0])
            last = r.fields[i];
          groups[i] = last ? xstrdup (last) : NULL;
        }
        else
          dims[i] = r.fields[i][0] ? xstrdup (r.fields[i]) : NULL;
      }
      continue;
    }
    if (r.fields[0][0]) {
      free (model);
      model = xstrdup (r.fields[0]);
    }
    if (r.nfields > 1 && r.fields[1][0]) {
      free (batch);
      batch = xstrdup (r.fields[1]);
    }
    if (r.nfields < 3 || model == NULL || batch == NULL)
      continue;
    bool measured_row = strncmp (r.fields[2], "Measured", 8) == 0;
    for (size_t i = 3; i < r.nfields && i < nf; i++) {
      struct dist_cell *c = NULL;
      size_t mi, gi;
      if (groups[i] == NULL || dims[i] == NULL)
        continue;
      for (mi = 0; mi < sizeof dist_models / sizeof dist_models[0]; mi++)
        if (strcmp (dist_models[mi].paper, model) == 0)
          break;
      for (gi = 0; gi < sizeof dist_gpus / sizeof dist_gpus[0]; gi++)
        if (strcmp (dist_gpus[gi].paper, groups[i]) == 0)
          break;
      if (mi == sizeof dist_models / sizeof dist_models[0] ||
          gi == sizeof dist_gpus / sizeof dist_gpus[0]) {
        pm_error ("%s:%ld: unknown model '%s' or GPU group '%s'", path, r.line, model, groups[i]);
        rc = -1;
        goto done;
      }
      for (size_t k = 0; k < ncells; k++)
        if (strcmp (cells[k].model, dist_models[mi].paper) == 0 &&
            cells[k].batch == atoll (batch) && strcmp (cells[k].gpu_paper, groups[i]) == 0 &&
            strcmp (cells[k].dim, dims[i]) == 0)
          c = &cells[k];
      if (c == NULL) {
        if (!measured_row || ncells == sizeof cells / sizeof cells[0])
          continue;
        c = &cells[ncells++];
        memset (c, 0, sizeof *c);
        c->model = dist_models[mi].paper;
        c->builtin = dist_models[mi].builtin;
        c->tag = dist_models[mi].tag;
        c->seq = dist_models[mi].seq;
        c->gpu_paper = dist_gpus[gi].paper;
        c->device = dist_gpus[gi].device;
        c->gpus = dist_gpus[gi].gpus;
        c->dim = strcmp (dims[i], "DP") == 0 ? "DP" : strcmp (dims[i], "TP") == 0 ? "TP" : "PP";
        c->batch = atoll (batch);
        c->line = r.line;
        c->paper_ms = c->paper_pct = NAN;
        c->measured_oom = !cell_value (r.fields[i], &c->measured, NULL);
        if (!c->measured_oom) {
          char opt[16];
          snprintf (opt, sizeof opt, "%s%d%s", strcmp (c->dim, "DP") == 0 ? "dp"
                    : strcmp (c->dim, "TP") == 0 ? "tp" : "pp", c->gpus,
                    strcmp (c->dim, "PP") == 0 ? "_1" : "");
          label_measured (o->neusight, c, opt);
        }
      }
      else if (!measured_row)
        cell_value (r.fields[i], &c->paper_ms, &c->paper_pct);
    }
  }
done:
  csv_close (&r);
  for (size_t i = 0; i < 16; i++) {
    free (groups[i]);
    free (dims[i]);
  }
  free (model);
  free (batch);
  if (rc < 0 || ncells == 0) {
    if (rc == 0)
      pm_error ("%s: no cells found", path);
    free (path);
    return EXIT_RUNTIME;
  }

  pls = xcalloc (npred, sizeof *pls);
  for (size_t p = 0; p < npred; p++)
    if ((pls[p] = predictor_find (set, o->predictors[p])) == NULL) {
      free (pls);
      free (path);
      return EXIT_USAGE;
    }
  t = xcalloc (npred, sizeof *t);
  if (csv)
    fprintf (o->out, "table,model,seq,batch,device,mode,option,predictor,measured_ms,predicted_ms,"
             "error_pct,paper_error_pct,paper_ms\n");
  else
    fprintf (o->out, "%-11s %5s %-22s %-4s %-17s %12s %12s %8s %12s %8s %9s\n", "model",
             "batch", "device", "dim", "predictor", "measured_ms", "predicted_ms", "err_%",
             "neusight_ms", "ns_err_%", "memory_gib");
  for (size_t k = 0; k < ncells && rc == 0; k++) {
    struct dist_cell *c = &cells[k];
    const struct gpu_entry *ge = gpu_db_find (gpus, c->device);
    struct model_cfg m;
    struct strategy s;
    struct dist_options d;
    if (ge == NULL) {
      pm_error ("%s:%ld: device '%s' is in no gpus.d section", path, c->line, c->device);
      rc = -1;
      break;
    }
    if (model_cfg_builtin (&m, c->builtin) < 0) {
      rc = -1;
      break;
    }
    cell_strategy (&s, c->dim, c->gpus, c->batch);
    memset (&d, 0, sizeof d);
    d.s = &s;
    d.prec = precision_train ("fp32");   /* NeuSight's Megatron runs were fp32 */
    d.train = true;
    d.batch = c->batch;
    d.seq = c->seq;
    d.gpus_per_node = ge->gpu.gpus_per_node;
    for (size_t p = 0; p < npred; p++) {
      struct plugin *pl = pls[p];
      struct dist_result res;
      char opt[16], meas[32], pred[32], err[32], nsms[32], nserr[32];
      double e = NAN;
      if (dist_predict (set, pl, &m, &ge->gpu, &d, &res) < 0) {
        rc = -1;
        break;
      }
      snprintf (opt, sizeof opt, "%s%d", strcmp (c->dim, "DP") == 0 ? "dp"
                : strcmp (c->dim, "TP") == 0 ? "tp" : "pp", c->gpus);
      snprintf (meas, sizeof meas, c->measured_oom ? "OOM" : "%.2f", c->measured);
      snprintf (pred, sizeof pred, res.mem.oom ? "OOM" : "%.2f", res.step_ms);
      if (!c->measured_oom && !res.mem.oom)
        e = fabs (res.step_ms - c->measured) / c->measured * 100;
      cell (err, sizeof err, 2, e);
      cell (nsms, sizeof nsms, 1, c->paper_ms);
      cell (nserr, sizeof nserr, 1, c->paper_pct);
      if (c->measured_oom) {
        t[p].oom_n++;
        t[p].oom_ok += res.mem.oom;
      }
      else {
        t[p].n++;
        t[p].fit_ok += !res.mem.oom;
        /* a measured cell predicted OOM counts as 100% off */
        t[p].err += isnan (e) ? 100 : e;
        if (!isnan (c->paper_pct))
          t[p].paper += c->paper_pct;
      }
      if (csv)
        fprintf (o->out, "distributed,%s,%lld,%lld,%s,train,%s,%s,%s,%s,%s,%s,%s\n", c->builtin,
                 (long long) c->seq, (long long) c->batch, c->device, opt, o->predictors[p], meas,
                 res.mem.oom ? "OOM" : pred, err, nserr, nsms);
      else
        fprintf (o->out, "%-11s %5lld %-22s %-4s %-17s %12s %12s %8s %12s %8s %9.2f\n", c->builtin,
                 (long long) c->batch, c->device, c->dim, o->predictors[p], meas, pred,
                 err[0] ? err : "-", nsms[0] ? nsms : "-", nserr[0] ? nserr : "-",
                 res.mem.total / PM_GIB);
    }
    model_cfg_free (&m);
  }
  if (rc == 0) {
    FILE *sum = csv ? o->err : o->out;
    fprintf (sum, "\n%-17s %6s %10s %12s %12s %14s\n", "predictor", "cells", "mean_err_%",
             "paper_mean_%", "oom_agreed", "fit_agreed");
    for (size_t p = 0; p < npred; p++)
      fprintf (sum, "%-17s %6d %10.2f %12.2f %9d/%-2d %11d/%-2d\n", o->predictors[p], t[p].n,
               t[p].n ? t[p].err / t[p].n : 0, t[p].n ? t[p].paper / t[p].n : 0, t[p].oom_ok,
               t[p].oom_n, t[p].fit_ok, t[p].n);
    fprintf (sum, "(empty measured cells of summary/distributed.csv are the paper's OOM cells; "
             "paper_mean_%%: NeuSight's errors on the same cells)\n");
  }
  free (t);
  free (pls);
  free (path);
  return rc < 0 ? EXIT_RUNTIME : 0;
}
