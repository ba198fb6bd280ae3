/* train.c: perfmod train: fits the learned predictors' parameters from measured kernels and writes their parameter file. */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tilemlp-model.h"

static const struct { int kclass; const char *key; } fit_classes[] = {
  { PERFMOD_KERNEL_BMM, "bmm" }, { PERFMOD_KERNEL_LINEAR, "linear" },
  { PERFMOD_KERNEL_ELEMENTWISE, "elementwise" }, { PERFMOD_KERNEL_SOFTMAX, "softmax" },
  { PERFMOD_KERNEL_LAYERNORM, "layernorm" },
};
#define NFIT (sizeof fit_classes / sizeof fit_classes[0])

/* The settings every network perfmod trains shares; epochs, patience and
 * loss are the predictor's. */
void
fit_setup (struct nn_fit *f, char *label, size_t len, const char *key,
           const struct train_options *o, int epochs, int patience, int loss, uint64_t salt)
{
  snprintf (label, len, "%s/%s", o->predictor, key);
  memset (f, 0, sizeof *f);
  f->label = label;
  f->epochs = o->epochs ? o->epochs : epochs;
  f->batch = 256;
  f->patience = patience;
  f->lr = 1e-3;
  f->weight_decay = 1e-4;
  f->val_frac = 0.1;
  f->seed = o->seed + salt;
  f->loss = loss;
  f->progress = true;
}

/* Train one network on d and store it under key, with its features and a
 * summary of the training. */
int
fit_network (struct params *p, const char *key, const int *widths, int nl, int out_act,
             const struct nn_fit *f, const struct nn_data *d, const char *features)
{
  struct mlp m;
  struct nn_fit_result res;
  char k2[80];
  int rc;
  mlp_create (&m, widths, nl, NN_RELU, out_act);
  rc = nn_train (&m, d, f, &res);
  if (rc == 0) {
    mlp_to_params (&m, p, key);
    snprintf (k2, sizeof k2, "%s.features", key);
    params_set (p, k2, "%s", features);
    snprintf (k2, sizeof k2, "%s.training", key);
    params_set (p, k2, "%zu rows, %s loss, AdamW lr %g wd %g, batch %d, %d of %d epochs (best %d), "
                "validation MAPE %.2f%% on a random %.0f%% of the training GPUs' rows, %.1f s",
                d->n, f->loss == NN_LOSS_SMAPE ? "SMAPE" : "MAPE", f->lr, f->weight_decay,
                f->batch, res.epochs_run, f->epochs, res.best_epoch, res.val_mape,
                f->val_frac * 100, res.seconds);
    fprintf (stderr, "perfmod: %s: %zu rows, %d epochs (best %d), validation MAPE %.2f%%, %.1f s\n",
             f->label, d->n, res.epochs_run, res.best_epoch, res.val_mape, res.seconds);
  }
  mlp_free (&m);
  return rc;
}

void
params_put_range (struct params *p, const char *key, const double *x, size_t n, int nf)
{
  char name[96];
  snprintf (name, sizeof name, "%s.range", key);
  double *rg = params_add_tensor (p, name, 2, (size_t) nf);
  for (int j = 0; j < nf; j++) {
    rg[j] = INFINITY;
    rg[nf + j] = -INFINITY;
    for (size_t i = 0; i < n; i++) {
      rg[j] = fmin (rg[j], x[i * (size_t) nf + j]);
      rg[nf + j] = fmax (rg[nf + j], x[i * (size_t) nf + j]);
    }
  }
}

/* Least squares y = a x + b.  -1 if x has no spread. */
int
fit_line (const double *x, const double *y, size_t n, double *a, double *b)
{
  double mx = 0, my = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < n; i++) {
    mx += x[i];
    my += y[i];
  }
  mx /= (double) n;
  my /= (double) n;
  for (size_t i = 0; i < n; i++) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxy += (x[i] - mx) * (y[i] - my);
  }
  if (n < 2 || !(sxx > 0))
    return -1;
  *a = sxy / sxx;
  *b = my - *a * mx;
  return 0;
}

/* Header keys every parameter file carries: provenance, the training GPUs
 * and how many rows of other GPUs were left out. */
void
record_common (struct params *p, const struct train_options *o, const struct kset *ks,
               const struct gpu_entry *const *train, size_t rows, size_t dropped)
{
  char *files = NULL, *list = NULL;
  for (char **f = ks->files; f && *f; f++) {
    char *t = files ? xasprintf ("%s;%s", files, *f) : xstrdup (*f);
    free (files);
    files = t;
  }
  for (size_t i = 0; train[i]; i++) {
    char *t = list ? xasprintf ("%s,%s", list, train[i]->name) : xstrdup (train[i]->name);
    free (list);
    list = t;
  }
  params_set (p, "predictor", "%s", o->predictor);
  params_set (p, "perfmod_version", "%s", PACKAGE_VERSION);
  params_set (p, "command", "%s", o->command);
  params_set (p, "seed", "%llu", (unsigned long long) o->seed);
  params_set (p, "data", "%s", files ? files : "");
  params_set (p, "gpus", "%s", list ? list : "");
  params_set (p, "rows", "%zu", rows);
  if (dropped)
    params_set (p, "rows_left_out", "%zu (GPUs outside the training set)", dropped);
  free (files);
  free (list);
}

/* Rows of the training GPUs only: any other GPU in the data is left out,
 * by construction, and counted. */
static size_t
select_rows (const struct kset *ks, const struct gpu_entry *const *train, size_t **out,
             size_t *dropped)
{
  size_t n = 0;
  *out = xmalloc ((ks->n ? ks->n : 1) * sizeof **out);
  *dropped = 0;
  for (size_t i = 0; i < ks->n; i++) {
    bool ok = false;
    for (size_t g = 0; train[g]; g++)
      ok |= ks->v[i].gpu == train[g];
    if (ok)
      (*out)[n++] = i;
    else
      (*dropped)++;
  }
  return n;
}

static double
linreg_work (const struct perfmod_kernel *k)
{
  if (k->kclass == PERFMOD_KERNEL_LINEAR || k->kclass == PERFMOD_KERNEL_BMM)
    return 2.0 * (double) k->b * (double) k->m * (double) k->n * (double) k->k;
  return (double) k->b * (double) k->h * k->mem_per_output;
}

/* Rows measured under throttled clocks.  A kernel's throughput (work per
 * second) rises with its length and then stays; where a GPU's measurements
 * of a class fall off instead (P4, P100 and T4 Linear kernels that ran for
 * tens of milliseconds to seconds reach a third to a half of what their
 * shorter ones reach, and of what the same GPUs reach on such kernels inside
 * a model run), the benchmark loop was holding the GPU at a lower clock, and
 * those rows describe the loop, not the kernel.  Per GPU and class, in
 * half-decade bins of latency: the first bin after the fastest one whose
 * median throughput is under THROTTLE_SHARE of the fastest's starts the
 * throttled regime; that bin and all longer rows are left out.  For matrix
 * products the same holds of each bin's 90th percentile, the bin's most
 * efficient shapes: the longest products are the largest, and a large
 * product is not less efficient than a smaller one, so where even the
 * best of a bin fall off (T4 Linear: 4.5 TFLOP/s at 0.3 to 1 ms, 3.3 to
 * 3.5 past 3 ms, against 3.9 to 4.3 inside model runs) the clock fell.
 * Vector kernels are not judged so: their longest rows switch to another
 * library kernel.  Bins of fewer than THROTTLE_MIN_ROWS rows are not
 * judged. */
#define THROTTLE_SHARE 0.8
#define THROTTLE_MIN_ROWS 5
#define THROTTLE_BINS 24              /* half-decades from 1 us to 1000 s */

static int
throttle_bin (double latency_s)
{
  int b = (int) floor (2 * log10 (latency_s * 1e6));
  return b < 0 ? 0 : b >= THROTTLE_BINS ? THROTTLE_BINS - 1 : b;
}

struct binned { int bin; double rate; };

static int
cmp_binned (const void *a, const void *b)
{
  const struct binned *x = a, *y = b;
  if (x->bin != y->bin)
    return x->bin - y->bin;
  return (x->rate > y->rate) - (x->rate < y->rate);
}

/* Whether r is one of gpu's kernels of class kclass. */
static bool
row_of (const struct krow *r, const struct gpu_entry *gpu, int kclass)
{
  return r->gpu == gpu && r->kclass == kclass;
}

/* The first throttled bin of one GPU's kernels of one class, or
 * THROTTLE_BINS; *share: its throughput over the fastest bin's, *which:
 * "median" or "90th percentile". */
static int
throttled_from (const struct kset *ks, const size_t *rows, size_t n, const struct gpu_entry *gpu,
                int kclass, struct binned *v, double *share, const char **which)
{
  bool matrix = kclass == PERFMOD_KERNEL_LINEAR || kclass == PERFMOD_KERNEL_BMM;
  double med[THROTTLE_BINS] = { 0 }, best = 0;
  double top[THROTTLE_BINS] = { 0 }, best_top = 0;
  int peak = -1, peak_top = -1;
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    const struct krow *r = &ks->v[rows[i]];
    struct perfmod_kernel k;
    if (!row_of (r, gpu, kclass))
      continue;
    krow_kernel (r, &k);
    v[m].bin = throttle_bin (r->latency_s);
    v[m++].rate = linreg_work (&k) / r->latency_s;
  }
  qsort (v, m, sizeof *v, cmp_binned);
  for (size_t i = 0, j; i < m; i = j) {    /* each bin's median and 90th percentile */
    for (j = i; j < m && v[j].bin == v[i].bin; j++)
      ;
    if (j - i >= THROTTLE_MIN_ROWS) {
      med[v[i].bin] = v[i + (j - i) / 2].rate;
      top[v[i].bin] = v[i + (j - i) * 9 / 10].rate;
      if (med[v[i].bin] > best) {
        best = med[v[i].bin];
        peak = v[i].bin;
      }
      if (top[v[i].bin] > best_top) {
        best_top = top[v[i].bin];
        peak_top = v[i].bin;
      }
    }
  }
  for (int b = 0; peak >= 0 && b < THROTTLE_BINS; b++) {
    if (b > peak && med[b] > 0 && med[b] < THROTTLE_SHARE * best) {
      *share = med[b] / best;
      *which = "median";
      return b;
    }
    if (matrix && b > peak_top && top[b] > 0 && top[b] < THROTTLE_SHARE * best_top) {
      *share = top[b] / best_top;
      *which = "90th percentile";
      return b;
    }
  }
  return THROTTLE_BINS;
}

/* Leaves the throttled rows out of rows[0..n) in place; returns the rows
 * kept and records the cut per GPU and class in p. */
static size_t
drop_throttled (const struct kset *ks, size_t *rows, size_t n,
                const struct gpu_entry *const *train, struct params *p)
{
  struct binned *v = xmalloc ((n ? n : 1) * sizeof *v);
  size_t left = 0;
  for (size_t g = 0; train[g]; g++)
    for (size_t c = 0; c < NFIT; c++) {
      int kclass = fit_classes[c].kclass;
      double share = 0;
      const char *which = NULL;
      int cut = throttled_from (ks, rows, n, train[g], kclass, v, &share, &which);
      size_t before = n, k = 0;
      char key[96];
      if (cut == THROTTLE_BINS)
        continue;
      for (size_t i = 0; i < n; i++) {
        const struct krow *r = &ks->v[rows[i]];
        if (!(row_of (r, train[g], kclass) && throttle_bin (r->latency_s) >= cut))
          rows[k++] = rows[i];
      }
      n = k;
      left += before - n;
      snprintf (key, sizeof key, "throttled.%s.%s", train[g]->name, fit_classes[c].key);
      params_set (p, key, "%zu rows of %.4g ms and longer left out (%s throughput %.3g of "
                  "the fastest bin's)", before - n, pow (10, cut / 2.0) / 1e3, which, share);
      pm_debug ("%s: %s", key, params_get (p, key));
    }
  if (left)
    params_set (p, "rows_throttled", "%zu (left out; see throttled.*)", left);
  free (v);
  return n;
}

/* The benchmark harness's floor.  NeuSight's kernel tables time each kernel
 * alone, called from Python, and every latency carries the fixed cost of
 * the call, the launch and the synchronisation: the smallest GEMMs take
 * 33 to 96 us on every training GPU whatever their size, and above that
 * floor latency minus the floor grows with the work at a steady throughput
 * (the cost adds).  Inside a model run the CPU queues kernels ahead of the
 * GPU and the floor is not paid, so perfmod's tile-mlp learns a kernel's own
 * time.  Per GPU and class the floor is the median latency of the matrix
 * kernels of under FLOOR_WORK FLOPs, or, as the vector tables hold no small
 * kernels, the median over operators of the intercept of latency against
 * outputs (never below 0).  It is subtracted, and rows under FLOOR_KEEP
 * floors, whose own time is mostly the floor's noise, are left out.  The
 * floors are recorded, per GPU and as the training GPUs' median; a kernel
 * predicted as the harness times it (perfmod eval) gets its floor back. */
#define FLOOR_WORK 3.16e6               /* FLOPs: under a microsecond on every GPU */
#define FLOOR_KEEP 2.0
#define FLOOR_MIN_ROWS 5

/* One GPU's floor for one class, in seconds (0: not enough rows). */
static double
floor_of (const struct kset *ks, const size_t *rows, size_t n, const struct gpu_entry *gpu,
          int kclass, double *x, double *y)
{
  size_t m = 0;
  if (kclass == PERFMOD_KERNEL_LINEAR || kclass == PERFMOD_KERNEL_BMM) {
    for (size_t i = 0; i < n; i++) {
      const struct krow *r = &ks->v[rows[i]];
      struct perfmod_kernel k;
      if (!row_of (r, gpu, kclass))
        continue;
      krow_kernel (r, &k);
      if (linreg_work (&k) < FLOOR_WORK)
        y[m++] = r->latency_s;
    }
    return m >= FLOOR_MIN_ROWS ? median_sorting (y, m) : 0;
  }
  /* Vector classes: an intercept per operator (interned names). */
  double icpt[64];
  const char *ops[64];
  size_t nops = 0, ni = 0;
  for (size_t i = 0; i < n; i++) {
    const struct krow *r = &ks->v[rows[i]];
    size_t j;
    if (!row_of (r, gpu, kclass))
      continue;
    for (j = 0; j < nops && ops[j] != r->op; j++)
      ;
    if (j == nops && nops < sizeof ops / sizeof ops[0])
      ops[nops++] = r->op;
  }
  for (size_t j = 0; j < nops; j++) {
    double a, b;
    m = 0;
    for (size_t i = 0; i < n; i++) {
      const struct krow *r = &ks->v[rows[i]];
      if (row_of (r, gpu, kclass) && r->op == ops[j]) {
        x[m] = (double) r->b * (double) r->h;
        y[m++] = r->latency_s;
      }
    }
    if (m >= FLOOR_MIN_ROWS && fit_line (x, y, m, &a, &b) == 0)
      icpt[ni++] = b;
  }
  return ni ? fmax (0, median_sorting (icpt, ni)) : 0;
}

/* Subtracts each training GPU's floor from its rows in place, leaves out
 * the rows under FLOOR_KEEP floors and records the floors; returns the
 * rows kept. */
static size_t
remove_floor (struct kset *ks, size_t *rows, size_t n, const struct gpu_entry *const *train,
              struct params *p)
{
  size_t ntrain = 0, left = 0;
  while (train[ntrain])
    ntrain++;
  double *x = xmalloc ((n ? n : 1) * sizeof *x), *y = xmalloc ((n ? n : 1) * sizeof *y);
  double *fl = xmalloc (ntrain * sizeof *fl);
  for (size_t c = 0; c < NFIT; c++) {
    int kclass = fit_classes[c].kclass;
    char key[96];
    for (size_t g = 0; g < ntrain; g++) {
      double f = floor_of (ks, rows, n, train[g], kclass, x, y);
      size_t k = 0;
      fl[g] = f;
      snprintf (key, sizeof key, "floor.%s.%s", train[g]->name, fit_classes[c].key);
      params_set (p, key, "%.4g", f * 1e6);
      for (size_t i = 0; i < n; i++) {
        struct krow *r = &ks->v[rows[i]];
        if (row_of (r, train[g], kclass)) {
          if (r->latency_s < FLOOR_KEEP * f)
            continue;
          r->latency_s -= f;
        }
        rows[k++] = rows[i];
      }
      left += n - k;
      n = k;
    }
    snprintf (key, sizeof key, "floor.%s", fit_classes[c].key);
    params_set (p, key, "%.4g", median_sorting (fl, ntrain) * 1e6);
  }
  params_set (p, "floor", "us: the harness's cost in every latency of a kernel timed alone, "
              "per GPU and class (floor.GPU.CLASS) and the training GPUs' median "
              "(floor.CLASS); subtracted before training");
  params_set (p, "rows_floor", "%zu (under %g floors, left out)", left, FLOOR_KEEP);
  free (fl);
  free (x);
  free (y);
  return n;
}

static int
train_linreg (const struct kset *ks, const size_t *rows, size_t nrows,
              const struct gpu_entry *const *train, size_t ntrain, struct params *p)
{
  double *x = xmalloc ((ks->n ? ks->n : 1) * sizeof *x), *y = xmalloc ((ks->n ? ks->n : 1) * sizeof *y);
  int rc = 0;

  for (size_t c = 0; c < NFIT && rc == 0; c++) {
    char key[64];
    double *fit, inv[16], bw[16];
    snprintf (key, sizeof key, "%s.fit", fit_classes[c].key);
    fit = params_add_tensor (p, key, ntrain, 2);
    for (size_t g = 0; g < ntrain; g++) {
      size_t n = 0;
      for (size_t i = 0; i < nrows; i++) {
        const struct krow *r = &ks->v[rows[i]];
        struct perfmod_kernel k;
        if (r->gpu != train[g] || r->kclass != fit_classes[c].kclass)
          continue;
        krow_kernel (r, &k);
        x[n] = linreg_work (&k);
        y[n++] = r->latency_s;
      }
      if (fit_line (x, y, n, &fit[2 * g], &fit[2 * g + 1]) < 0 || !(fit[2 * g] > 0)) {
        pm_error ("linreg: %s on %s: %zu rows give no positive slope", fit_classes[c].key,
                  train[g]->name, n);
        rc = -1;
        break;
      }
      inv[g] = 1 / fit[2 * g];
      bw[g] = train[g]->gpu.mem_bw_gbps;
      pm_debug ("linreg %s %s: %zu rows, coef %.17g intercept %.17g", fit_classes[c].key,
                train[g]->name, n, fit[2 * g], fit[2 * g + 1]);
    }
    if (rc == 0) {
      /* New GPUs: throughput (1/coef) as a line in memory bandwidth. */
      double *ext;
      snprintf (key, sizeof key, "%s.extrapolate", fit_classes[c].key);
      ext = params_add_tensor (p, key, 1, 2);
      if (fit_line (bw, inv, ntrain, &ext[0], &ext[1]) < 0) {
        pm_error ("linreg: %s: the training GPUs' bandwidths do not differ", fit_classes[c].key);
        rc = -1;
      }
      else
        pm_debug ("linreg %s extrapolate: 1/coef = %.17g * bandwidth + %.17g", fit_classes[c].key,
                  ext[0], ext[1]);
    }
  }
  if (rc == 0)
    params_set (p, "model", "t = coef * work + intercept per GPU and class; work = 2BMNK FLOPs "
                "(matrix) or B*H*MemPerO bytes (vector); other GPUs: coef = 1/(a*bandwidth_GBps + b),"
                " intercept 0 (the .extrapolate line)");
  free (x);
  free (y);
  return rc;
}

/* ---- habitat ---- */

#define HABITAT_NFEAT 8
#define HABITAT_SCALE 1e-3       /* the networks predict milliseconds */

static void
habitat_features (const struct krow *r, double *x)
{
  const struct perfmod_gpu *g = &r->gpu->gpu;
  x[0] = r->kclass == PERFMOD_KERNEL_LINEAR ? 1 : (double) r->b;
  x[1] = (double) r->m;
  x[2] = (double) r->n;
  x[3] = (double) r->k;
  x[4] = g->mem_bw_gbps;
  x[5] = g->mem_gb;
  x[6] = (double) g->sms;
  x[7] = g->fp32_gflops;
}

static int
cmp_ref (const void *a, const void *b)
{
  const double *x = a, *y = b;
  for (int j = 0; j < 4; j++)
    if (x[j] != y[j])
      return x[j] < y[j] ? -1 : 1;
  return 0;
}

/* Vector kernels measured on the reference GPUs, sorted for lookup. */
static int
habitat_reference (const struct train_options *o, const struct gpu_db *gpus, struct params *p)
{
  static const char *const ref_gpus[2] = { "Tesla V100-PCIE-32GB", "Tesla P100-PCIE-16GB" };
  const struct gpu_entry *ref[2];
  struct kset rs;
  char *ops = NULL;
  const char *opv[64];
  size_t nops = 0, n = 0;
  double *t, *bw;

  for (int i = 0; i < 2; i++)
    if ((ref[i] = gpu_db_find (gpus, ref_gpus[i])) == NULL) {
      pm_error ("habitat: reference GPU '%s' is not in gpus.d", ref_gpus[i]);
      return -1;
    }
  if (o->reference == NULL) {
    pm_error ("habitat needs --reference FILE: vector kernels measured on the reference GPUs "
              "(NeuSight uses dataset/test/vec.csv)");
    return -1;
  }
  if (kset_load (&rs, o->reference, gpus, NULL) < 0)
    return -1;
  double *rows = xmalloc ((rs.n ? rs.n : 1) * 5 * sizeof *rows);
  for (size_t i = 0; i < rs.n; i++) {
    const struct krow *r = &rs.v[i];
    int which = r->gpu == ref[0] ? 0 : r->gpu == ref[1] ? 1 : -1;
    size_t op;
    if (which < 0 || r->kclass == PERFMOD_KERNEL_LINEAR || r->kclass == PERFMOD_KERNEL_BMM)
      continue;
    for (op = 0; op < nops && strcmp (opv[op], r->op) != 0; op++)
      ;
    if (op == nops && nops < 64)
      opv[nops++] = r->op;
    rows[5 * n + 0] = which;
    rows[5 * n + 1] = (double) op;
    rows[5 * n + 2] = (double) r->b;
    rows[5 * n + 3] = (double) r->h;
    rows[5 * n + 4] = r->latency_s;
    n++;
  }
  if (n == 0) {
    pm_error ("%s: no vector kernels measured on %s or %s", o->reference, ref[0]->name, ref[1]->name);
    free (rows);
    kset_free (&rs);
    return -1;
  }
  /* Sorted; a shape measured twice keeps its first measurement. */
  qsort (rows, n, 5 * sizeof *rows, cmp_ref);
  size_t u = 0;
  for (size_t i = 0; i < n; i++)
    if (u == 0 || cmp_ref (rows + 5 * (u - 1), rows + 5 * i) != 0)
      memmove (rows + 5 * u++, rows + 5 * i, 5 * sizeof *rows);
  t = params_add_tensor (p, "reference", u, 5);
  memcpy (t, rows, u * 5 * sizeof *rows);
  bw = params_add_tensor (p, "reference_bw", 1, 2);
  bw[0] = ref[0]->gpu.mem_bw_gbps;
  bw[1] = ref[1]->gpu.mem_bw_gbps;
  params_set (p, "reference_gpus", "%s,%s", ref[0]->name, ref[1]->name);
  for (size_t i = 0; i < nops; i++) {
    char *s = ops ? xasprintf ("%s,%s", ops, opv[i]) : xstrdup (opv[i]);
    free (ops);
    ops = s;
  }
  params_set (p, "reference_ops", "%s", ops);
  params_set (p, "reference_data", "%s", o->reference);
  params_set (p, "reference_rows", "%zu", u);
  free (ops);
  free (rows);
  kset_free (&rs);
  return 0;
}

static int
train_habitat (const struct kset *ks, const size_t *rows, size_t nrows,
               const struct train_options *o, struct params *p)
{
  static const int widths[] = { HABITAT_NFEAT, 128, 128, 128, 128, 128, 1 };
  const int nl = (int) (sizeof widths / sizeof widths[0]) - 1;
  int rc = 0;

  for (int c = 0; c < 2 && rc == 0; c++) {
    int kclass = c ? PERFMOD_KERNEL_LINEAR : PERFMOD_KERNEL_BMM;
    const char *key = c ? "linear" : "bmm";
    double *x = xmalloc ((nrows ? nrows : 1) * HABITAT_NFEAT * sizeof *x);
    double *y = xmalloc ((nrows ? nrows : 1) * sizeof *y);
    size_t n = 0;
    struct nn_fit f;
    char label[64];

    for (size_t i = 0; i < nrows; i++) {
      const struct krow *r = &ks->v[rows[i]];
      if (r->kclass != kclass)
        continue;
      habitat_features (r, x + n * HABITAT_NFEAT);
      y[n++] = r->latency_s / HABITAT_SCALE;
    }
    fit_setup (&f, label, sizeof label, key, o, 100, 20, NN_LOSS_MAPE, (uint64_t) c);
    rc = fit_network (p, key, widths, nl, NN_NONE, &f, &(struct nn_data) { n, x, y },
                      "B,M,N,K,mem_bw_gbps,mem_gb,sms,fp32_gflops");
    free (x);
    free (y);
  }
  if (rc == 0) {
    params_set (p, "output_scale_s", "%g", HABITAT_SCALE);
    params_set (p, "model", "bmm, linear: MLP(B,M,N,K,bandwidth,memory,SMs,FP32 peak) -> ms; "
                "vector: reference latency x reference bandwidth / bandwidth, else 2*B*H/(bandwidth*2^30)");
  }
  return rc;
}

/* ---- tile-mlp (NeuSight) ---- */

#define TILE_TABLE_ROWS 1500     /* measured tiles kept per class for unseen shapes */

/* The formulation of one measured kernel with the given inputs; -1 if it
 * has none (no tile). */
int
tilemlp_case (const struct krow *r, int features, struct tw_case *c)
{
  struct tw_gpu g;
  struct perfmod_kernel k;
  tw_gpu_of (&r->gpu->gpu, &g);
  krow_kernel (r, &k);
  if (r->kclass == PERFMOD_KERNEL_BMM || r->kclass == PERFMOD_KERNEL_LINEAR)
    return tw_matrix (&g, features, (double) k.b, (double) k.m, (double) k.n, (double) k.k,
                      r->tile[0], r->tile[1], c);
  return tw_vector (&g, features, (double) k.b, (double) k.h, k.mem_per_output,
                    k.ops_per_output, r->tile[0], c);
}

/* Each input set's inputs, as the parameter file describes them. */
static const char *const feature_text[] = {
  [TW_FEAT_NEUSIGHT] = "log2 of tile GFLOP / per-SM TFLOP/s, tile MB / per-SM GB/s, waves x "
                       "tile MB / per-SM memory MB, waves x tile MB / per-SM L2 KB",
  [TW_FEAT_EXTENDED] = "log2 of tile GFLOP / per-SM TFLOP/s, tile MB / per-SM GB/s, waves x "
                       "tile MB / per-SM memory MB, waves x tile MB / per-SM L2 KB; useful "
                       "share of the padded tiles; tiles / (waves x SMs)",
  [TW_FEAT_WAVES] = "log2 of tile GFLOP / per-SM TFLOP/s, tile MB / per-SM GB/s, waves, waves "
                    "x tile MB / per-SM L2 KB; useful share of the padded tiles; tiles / (waves "
                    "x SMs)",
  [TW_FEAT_PORTABLE] = "log2 of tile GFLOP / per-SM TFLOP/s, tile MB / per-SM GB/s, waves; "
                       "useful share of the padded tiles; tiles / (waves x SMs)",
};

/* Which tile-mlp: its network inputs and how many networks per class. */
struct tilemlp_variant {
  int features;                 /* enum tw_features */
  int members;
};
#define TILEMLP_MEMBERS 5

struct tw_ctx {
  const struct tw_case *cases;
};

static void
tw_head (void *ctx, size_t row, const double *out, int nout, double *pred, double *dpred)
{
  const struct tw_ctx *t = ctx;
  (void) nout;
  *pred = tw_time (&t->cases[row], out, dpred);
}

/* NeuSight's tile table, thinned: each measured kernel's tw_tile_key, then
 * its tile. */
static void
tile_table (const struct kset *ks, const size_t *idx, size_t n, const char *key, struct params *p)
{
  bool matrix = strcmp (key, "bmm") == 0 || strcmp (key, "linear") == 0;
  size_t stride = n > TILE_TABLE_ROWS ? (n + TILE_TABLE_ROWS - 1) / TILE_TABLE_ROWS : 1;
  size_t rows = (n + stride - 1) / stride, cols = TW_TILE_KEY + (matrix ? 2 : 1), j = 0;
  char name[64];
  double *t;
  snprintf (name, sizeof name, "%s.tiles", key);
  t = params_add_tensor (p, name, rows, cols);
  for (size_t i = 0; i < n; i += stride, j++) {
    const struct krow *r = &ks->v[idx[i]];
    struct perfmod_kernel k;
    double *o = t + j * cols;
    krow_kernel (r, &k);
    tw_tile_key (&k, &r->gpu->gpu, o);
    o[TW_TILE_KEY] = r->tile[0];
    if (matrix)
      o[TW_TILE_KEY + 1] = r->tile[1];
  }
  snprintf (name, sizeof name, "%s.tiles_columns", key);
  params_set (p, name, matrix ? "B,M,N,K,sms,fp32_gflops,mem_gb,mem_bw_gbps,l2_mb,tile1,tile2"
                              : "B,H,sms,fp32_gflops,mem_gb,mem_bw_gbps,l2_mb,mem_per_output,"
                                "ops_per_output,tile");
}

/* The most of a quantity every training GPU reached: the smallest, over
 * the GPUs with rows, of the largest val[i] among a GPU's rows.  perfmod's
 * tile-mlp predicts a vector kernel of more waves, or longer rows, as one
 * inside this and scales it (plugins/tile-mlp.c). */
static double
common_most (const struct kset *ks, const size_t *idx, const double *val, size_t n)
{
  const struct gpu_entry *gpu[16];
  double most[16], common = INFINITY;
  size_t ng = 0;
  for (size_t i = 0; i < n; i++) {
    const struct gpu_entry *g = ks->v[idx[i]].gpu;
    size_t j;
    for (j = 0; j < ng && gpu[j] != g; j++)
      ;
    if (j == ng) {
      if (ng == sizeof gpu / sizeof gpu[0])
        continue;               /* --in-dist allows 16 */
      gpu[ng] = g;
      most[ng++] = 0;
    }
    most[j] = fmax (most[j], val[i]);
  }
  for (size_t j = 0; j < ng; j++)
    common = fmin (common, most[j]);
  return ng ? common : 0;
}

/* One class's networks: an ensemble of members differing in their seed
 * (initial weights, batches and validation rows). */
static int
train_tilemlp_class (size_t c, const struct tilemlp_variant *v, const struct kset *ks,
                     const size_t *rows, size_t nrows, const struct train_options *o,
                     struct params *p)
{
  const char *key = fit_classes[c].key;
  int nf = tw_nfeat (v->features), rc = 0;
  const int widths[] = { nf, 128, 128, 128, 128, TW_NOUT };
  const int nl = (int) (sizeof widths / sizeof widths[0]) - 1;
  size_t n = 0, skipped = 0, *idx = xmalloc ((nrows ? nrows : 1) * sizeof *idx);
  double *x = xmalloc ((nrows ? nrows : 1) * TW_NFEAT_MAX * sizeof *x);
  double *y = xmalloc ((nrows ? nrows : 1) * sizeof *y);
  struct tw_case *cases = xmalloc ((nrows ? nrows : 1) * sizeof *cases);
  struct tw_ctx ctx = { cases };
  char label[96], k2[80];

  for (size_t i = 0; i < nrows; i++) {
    const struct krow *r = &ks->v[rows[i]];
    if (r->kclass != fit_classes[c].kclass)
      continue;
    if (tilemlp_case (r, v->features, &cases[n]) < 0) {
      skipped++;
      continue;
    }
    memcpy (x + n * nf, cases[n].x, (size_t) nf * sizeof *x);
    y[n] = r->latency_s;
    idx[n++] = rows[i];
  }
  for (int e = 1; e <= v->members && rc == 0; e++) {
    struct nn_fit f;
    char mkey[64];
    snprintf (mkey, sizeof mkey, "%s.%d", key, e);
    /* Members differ in their seed only. */
    fit_setup (&f, label, sizeof label, mkey, o, 60, 15, NN_LOSS_SMAPE,
               (uint64_t) c + 1000u * (uint64_t) e);
    f.head = tw_head;
    f.ctx = &ctx;
    rc = fit_network (p, mkey, widths, nl, NN_NONE, &f, &(struct nn_data) { n, x, y },
                      feature_text[v->features]);
  }
  if (rc == 0) {
    snprintf (k2, sizeof k2, "%s.rows_without_tile", key);
    params_set (p, k2, "%zu (left out)", skipped);
    /* The feature range seen in training, for predictors that stay inside it. */
    params_put_range (p, key, x, n, nf);
    if (v->features != TW_FEAT_NEUSIGHT && fit_classes[c].kclass != PERFMOD_KERNEL_LINEAR &&
        fit_classes[c].kclass != PERFMOD_KERNEL_BMM) {
      for (size_t i = 0; i < n; i++)        /* y is free now */
        y[i] = cases[i].waves;
      snprintf (k2, sizeof k2, "%s.waves", key);
      params_set (p, k2, "%.0f", common_most (ks, idx, y, n));
    }
    if (v->features != TW_FEAT_NEUSIGHT && (fit_classes[c].kclass == PERFMOD_KERNEL_SOFTMAX ||
                                            fit_classes[c].kclass == PERFMOD_KERNEL_LAYERNORM)) {
      for (size_t i = 0; i < n; i++)
        y[i] = (double) ks->v[idx[i]].h;
      snprintf (k2, sizeof k2, "%s.longest_row", key);
      params_set (p, k2, "%.0f", common_most (ks, idx, y, n));
    }
    if (fit_classes[c].kclass != PERFMOD_KERNEL_SOFTMAX &&
        fit_classes[c].kclass != PERFMOD_KERNEL_LAYERNORM)
      tile_table (ks, idx, n, key, p);
  }
  free (idx);
  free (x);
  free (y);
  free (cases);
  return rc;
}

static int
train_tilemlp (const struct kset *ks, const size_t *rows, size_t nrows,
               const struct train_options *o, const struct tilemlp_variant *v, struct params *p)
{
  int rc = 0;
  params_set (p, "features", "%s", tw_feature_names[v->features]);
  params_set (p, "members", "%d", v->members);
  for (size_t c = 0; c < NFIT && rc == 0; c++)
    rc = train_tilemlp_class (c, v, ks, rows, nrows, o, p);
  if (rc == 0)
    params_set (p, "model", "NeuSight's tile/wave model: utilisation = sigmoid(o2) - "
                "sigmoid(o0)/waves from an MLP per class; time = "
                "waves x tile work x SMs / (min(peak, intensity x bandwidth) x utilisation); with "
                "several members per class, the median of their times");
  return rc;
}

static int
train_run_1 (const struct gpu_db *gpus, const struct tile_rules *tiles,
             const struct train_options *o)
{
  const struct gpu_entry **train;
  size_t ntrain = strv_len (o->in_dist);
  struct kset ks;
  struct params p;
  size_t *rows, nrows, dropped;
  double t0 = pm_now ();
  int rc;

  static const struct tilemlp_variant neusight = { TW_FEAT_NEUSIGHT, 1 };
  struct tilemlp_variant ours = { TW_FEAT_WAVES, o->members ? o->members : TILEMLP_MEMBERS };
  bool faithful = strcmp (o->predictor, "tile-mlp-neusight") == 0;

  /* The modern tables: tile-mlp's tensor-core networks, a file of their own. */
  memset (&ks, 0, sizeof ks);
  struct mdata_filter mf = { .dtype = o->dtype, .tables = o->tables };
  int tables = mdata_load (&ks, o->data, gpus, &mf);
  if (tables < 0) {
    kset_free (&ks);
    return EXIT_USAGE;
  }
  /* what was read is input: --out may not be one of those files */
  if (tables > 0 && output_check (o->out) < 0) {
    kset_free (&ks);
    return EXIT_USAGE;
  }
  if (tables > 0) {
    if (strcmp (o->predictor, "tile-mlp") != 0 && strcmp (o->predictor, "linreg") != 0 &&
        strcmp (o->predictor, "habitat") != 0) {
      pm_error ("--data %s: the bf16/fp16/fp8 tables train tile-mlp's tensor-core networks, "
                "linreg's per-dtype fits and habitat's GEMM network; %s learns NeuSight's fp32 "
                "kernels only", o->data, o->predictor);
      kset_free (&ks);
      return EXIT_USAGE;
    }
    rc = strcmp (o->predictor, "linreg") == 0 ? train_linreg_tc (gpus, o, &ks)
       : strcmp (o->predictor, "habitat") == 0 ? train_habitat_tc (gpus, o, &ks)
       : train_tc (gpus, o, &ks);
    kset_free (&ks);
    return rc;
  }
  kset_free (&ks);
  if (o->split != SPLIT_ALL || o->dtype >= 0) {
    pm_error ("--split and --dtype choose rows of the modern tables; %s is NeuSight's fp32 data",
              o->data);
    return EXIT_USAGE;
  }
  if (o->keep_throttled && strcmp (o->predictor, "tile-mlp") != 0) {
    pm_error ("--keep-throttled: only tile-mlp leaves throttled rows out");
    return EXIT_USAGE;
  }
  if (o->keep_floor && strcmp (o->predictor, "tile-mlp") != 0) {
    pm_error ("--keep-floor: only tile-mlp removes the harness's floor");
    return EXIT_USAGE;
  }
  if (o->features) {
    if (strcmp (o->predictor, "tile-mlp") != 0) {
      pm_error ("--features: only tile-mlp chooses its input set");
      return EXIT_USAGE;
    }
    if ((ours.features = tw_features_of (o->features)) < 0) {
      pm_error ("--features '%s': expected neusight, extended, extended-waves or portable",
                o->features);
      return EXIT_USAGE;
    }
  }
  if (o->members && strcmp (o->predictor, "tile-mlp") != 0) {
    pm_error ("--members: only tile-mlp trains an ensemble");
    return EXIT_USAGE;
  }
  if (strcmp (o->predictor, "linreg") != 0 && strcmp (o->predictor, "habitat") != 0 &&
      strcmp (o->predictor, "tile-mlp") != 0 && !faithful) {
    pm_error ("--predictor '%s': perfmod train fits linreg, habitat, tile-mlp and "
              "tile-mlp-neusight", o->predictor);
    return EXIT_USAGE;
  }
  if (ntrain < 2 || ntrain > 16) {
    pm_error ("--in-dist: 2 to 16 training GPUs, not %zu", ntrain);
    return EXIT_USAGE;
  }
  train = xcalloc (ntrain + 1, sizeof *train);
  for (size_t i = 0; i < ntrain; i++)
    if ((train[i] = gpu_db_find (gpus, o->in_dist[i])) == NULL) {
      pm_error ("--in-dist '%s': no such GPU (see perfmod gpus)", o->in_dist[i]);
      free (train);
      return EXIT_USAGE;
    }
  if (kset_load (&ks, o->data, gpus, tiles) < 0) {
    free (train);
    return EXIT_USAGE;
  }
  params_init (&p);
  nrows = select_rows (&ks, train, &rows, &dropped);
  record_common (&p, o, &ks, train, nrows, dropped);
  /* habitat's reference kernels are input too: read, or refused, before
   * minutes of training */
  if ((strcmp (o->predictor, "habitat") == 0 && habitat_reference (o, gpus, &p) < 0) ||
      output_check (o->out) < 0) {
    params_free (&p);
    kset_free (&ks);
    free (rows);
    free (train);
    return EXIT_USAGE;
  }
  /* perfmod's tile-mlp learns from unthrottled measurements; the faithful
   * variant reads every row, as NeuSight did. */
  if (strcmp (o->predictor, "tile-mlp") == 0 && !o->keep_throttled)
    nrows = drop_throttled (&ks, rows, nrows, train, &p);
  if (strcmp (o->predictor, "tile-mlp") == 0 && !o->keep_floor)
    nrows = remove_floor (&ks, rows, nrows, train, &p);
  rc = strcmp (o->predictor, "linreg") == 0 ? train_linreg (&ks, rows, nrows, train, ntrain, &p)
     : strcmp (o->predictor, "habitat") == 0 ? train_habitat (&ks, rows, nrows, o, &p)
     : train_tilemlp (&ks, rows, nrows, o, faithful ? &neusight : &ours, &p);
  if (rc == 0) {
    params_set (&p, "trained_seconds", "%.1f", pm_now () - t0);
    rc = params_save (&p, o->out);
    if (rc == 0)
      fprintf (stderr, "perfmod: wrote %s (%s, %zu kernels, %.1f s)\n", o->out, o->predictor,
               ks.n, pm_now () - t0);
  }
  params_free (&p);
  kset_free (&ks);
  free (rows);
  free (train);
  return rc == 0 ? 0 : EXIT_RUNTIME;
}

/* --out is checked (its file created aside) before minutes of training,
 * and what is left aside removed whatever the outcome. */
int
train_run (const struct gpu_db *gpus, const struct tile_rules *tiles, const struct train_options *o)
{
  int rc;
  if (atomic_reserve (o->out) < 0)
    return EXIT_USAGE;
  rc = train_run_1 (gpus, tiles, o);
  atomic_release (o->out);
  return rc;
}
