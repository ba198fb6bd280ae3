/* traintc.c: perfmod train on the modern tables: tile-mlp's tensor-core networks (GEMMs per dtype, fused attention, 16-bit vector ops, collectives) and linreg's per-dtype fits. */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "linreg-model.h"
#include "tc-model.h"

#define TC_MEMBERS 3

struct tc_ctx {
  const struct tc_case *cases;
};

/* The network's output scales the case's base time; its derivative is
 * the time itself. */
static void
tc_head (void *ctx, size_t row, const double *out, int nout, double *pred, double *dpred)
{
  const struct tc_ctx *t = ctx;
  double o = out[0];
  (void) nout;
  if (o > 20)
    o = 20;
  if (o < -20)
    o = -20;
  *pred = t->cases[row].base * exp (o);
  if (dpred)
    dpred[0] = *pred;
}

/* The dtypes a group's rows had, as the comma list learned.h reads. */
static char *
dtype_list (unsigned mask)
{
  char *s = xstrdup ("");
  for (int d = 0; d < PERFMOD_DTYPE_COUNT; d++)
    if (mask & (1u << d)) {
      char *t = xasprintf ("%s%s%s", s, *s ? "," : "", dtype_name (d));
      free (s);
      s = t;
    }
  return s;
}

/* One group's ensemble from the rows it models. */
static int
train_group (int grp, int features, const struct kset *ks, const size_t *rows, size_t nrows,
             const struct train_options *o, int members, struct params *p, unsigned *dtypes,
             unsigned *class_dtypes)
{
  int nf = tc_group_nfeat[grp], rc = 0;
  /* Collectives come in a few hundred rows: a smaller network, longer. */
  bool small = grp == TC_COMM;
  const int widths[] = { nf, small ? 32 : 96, small ? 32 : 96, small ? 32 : 96, 1 };
  const int nl = (int) (sizeof widths / sizeof widths[0]) - 1;
  size_t n = 0;
  double *x = xmalloc ((nrows ? nrows : 1) * TC_NFEAT_MAX * sizeof *x);
  double *y = xmalloc ((nrows ? nrows : 1) * sizeof *y);
  struct tc_case *cases = xmalloc ((nrows ? nrows : 1) * sizeof *cases);
  struct tc_ctx ctx = { cases };
  const char *key = tc_group_keys[grp];
  char label[96], k2[80];

  *dtypes = 0;
  for (size_t i = 0; i < nrows; i++) {
    const struct krow *r = &ks->v[rows[i]];
    struct perfmod_kernel k;
    krow_kernel (r, &k);
    k.isolated = 1;
    if (tc_group_of (&k) != grp || tc_case_of (&k, &r->gpu->gpu, features, &cases[n]) < 0)
      continue;
    memcpy (x + n * (size_t) nf, cases[n].x, (size_t) nf * sizeof *x);
    y[n] = r->latency_s;
    *dtypes |= 1u << r->dtype;
    class_dtypes[r->kclass] |= 1u << r->dtype;
    n++;
  }
  if (n < 64) {
    pm_debug ("%s/%s: %zu rows, too few to train: left out", o->predictor, key, n);
    *dtypes = 0;
    goto out;
  }
  for (int e = 1; e <= members && rc == 0; e++) {
    struct nn_fit f;
    char mkey[64];
    snprintf (mkey, sizeof mkey, "%s.%d", key, e);
    fit_setup (&f, label, sizeof label, mkey, o, small ? 400 : 40, small ? 60 : 8, NN_LOSS_MAPE,
               (uint64_t) grp * 7919u + 1000u * (uint64_t) e);
    f.head = tc_head;
    f.ctx = &ctx;
    f.batch = small ? 32 : 512;
    rc = fit_network (p, mkey, widths, nl, NN_NONE, &f, &(struct nn_data) { n, x, y },
                      tc_feature_names[features]);
  }
  if (rc == 0) {
    char *list = dtype_list (*dtypes);
    /* The inputs' range in training: the plugin keeps a kernel's inside it,
     * so a GPU unlike the training ones is not extrapolated to. */
    snprintf (k2, sizeof k2, "%s.range", key);
    double *rg = params_add_tensor (p, k2, 2, (size_t) nf);
    for (int j = 0; j < nf; j++) {
      rg[j] = INFINITY;
      rg[nf + j] = -INFINITY;
      for (size_t i = 0; i < n; i++) {
        rg[j] = fmin (rg[j], x[i * (size_t) nf + j]);
        rg[nf + j] = fmax (rg[nf + j], x[i * (size_t) nf + j]);
      }
    }
    snprintf (k2, sizeof k2, "%s.rows", key);
    params_set (p, k2, "%zu", n);
    snprintf (k2, sizeof k2, "%s.dtypes", key);
    params_set (p, k2, "%s", list);
    free (list);
  }
out:
  free (x);
  free (y);
  free (cases);
  return rc;
}

int
train_tc (const struct gpu_db *gpus, const struct train_options *o, struct kset *ks)
{
  const struct gpu_entry **train = xcalloc (strv_len (o->in_dist) + 1, sizeof *train);
  struct params p;
  size_t *rows = xmalloc ((ks->n ? ks->n : 1) * sizeof *rows), nrows = 0, dropped = 0, held = 0;
  int members = o->members ? o->members : TC_MEMBERS, rc = 0;
  unsigned mask[TC_NGROUPS] = { 0 }, class_mask[PERFMOD_KERNEL_ATTENTION + 1] = { 0 };
  double t0 = pm_now ();
  int features = o->features ? tc_features_of (o->features) : TC_FEAT_NOCHIP;

  if (features < 0) {
    pm_error ("--features '%s': the tensor-core networks take tc-nochip or tc", o->features);
    free (train);
    free (rows);
    return EXIT_USAGE;
  }
  if (o->in_dist_given)
    for (size_t i = 0; o->in_dist[i]; i++)
      if ((train[i] = gpu_db_find (gpus, o->in_dist[i])) == NULL) {
        pm_error ("--in-dist '%s': no such GPU (see perfmod gpus)", o->in_dist[i]);
        free (train);
        free (rows);
        return EXIT_USAGE;
      }
  for (size_t i = 0; i < ks->n; i++) {
    const struct krow *r = &ks->v[i];
    bool ok = !o->in_dist_given;
    for (size_t g = 0; train[g]; g++)
      ok |= r->gpu == train[g];
    if (!ok) {
      dropped++;
      continue;
    }
    if (!krow_in_split (r, o->split, SPLIT_SEED)) {
      held++;
      continue;
    }
    rows[nrows++] = i;
  }
  if (!o->in_dist_given) {      /* record the GPUs the rows came from */
    size_t ng = 0;
    for (size_t i = 0; i < nrows; i++) {
      size_t g;
      for (g = 0; g < ng && train[g] != ks->v[rows[i]].gpu; g++)
        ;
      if (g == ng) {
        train = xrealloc (train, (ng + 2) * sizeof *train);
        train[ng++] = ks->v[rows[i]].gpu;
        train[ng] = NULL;
      }
    }
  }
  params_init (&p);
  record_common (&p, o, ks, train, nrows, dropped);
  params_set (&p, "part", "tensor-core");
  params_set (&p, "split", "%s", o->split == SPLIT_TRAIN ? "train (the seeded 20 % held out)"
                                 : "all rows");
  if (held)
    params_set (&p, "rows_held_out", "%zu", held);
  params_set (&p, "members", "%d", members);
  params_set (&p, "features", "%s", tc_feature_names[features]);
  params_set (&p, "model", "time = max(physical floor, (roofline + launch) x exp(mean of the "
              "members' outputs)); inputs: tc-model.h");
  for (int g = 0; g < TC_NGROUPS && rc == 0; g++)
    rc = train_group (g, features, ks, rows, nrows, o, members, &p, &mask[g], class_mask);
  if (rc == 0) {
    /* learned.h's dtypes keys: a class covers the dtypes its own rows had
     * (a group whose networks were not trained covers none); a batched
     * product is a GEMM's rows stacked (tc-model.h) */
    static const struct { const char *cls; int kclass, grp; } cover[] = {
      { "linear", PERFMOD_KERNEL_LINEAR, TC_GEMM }, { "bmm", PERFMOD_KERNEL_LINEAR, TC_GEMM },
      { "attention", PERFMOD_KERNEL_ATTENTION, TC_ATTENTION },
      { "elementwise", PERFMOD_KERNEL_ELEMENTWISE, TC_VECTOR },
      { "softmax", PERFMOD_KERNEL_SOFTMAX, TC_VECTOR },
      { "layernorm", PERFMOD_KERNEL_LAYERNORM, TC_VECTOR },
    };
    for (size_t i = 0; i < sizeof cover / sizeof cover[0]; i++)
      if (mask[cover[i].grp] && class_mask[cover[i].kclass]) {
        char *list = dtype_list (class_mask[cover[i].kclass]), key[32];
        snprintf (key, sizeof key, "dtypes.%s", cover[i].cls);
        params_set (&p, key, "%s", list);
        free (list);
      }
    params_set (&p, "trained_seconds", "%.1f", pm_now () - t0);
    rc = params_save (&p, o->out);
    if (rc == 0)
      fprintf (stderr, "perfmod: wrote %s (%s tensor-core networks, %zu rows, %.1f s)\n", o->out,
               o->predictor, nrows, pm_now () - t0);
  }
  params_free (&p);
  free (rows);
  free (train);
  return rc == 0 ? 0 : EXIT_RUNTIME;
}

/* ---- linreg on the modern tables ---- */

/* Li et al.'s model per GPU, dtype and group (plugins/linreg.c): t = coef
 * x work + intercept, work being FLOPs (GEMMs, attention), bytes (vector
 * kernels, copies) or the bytes a GPU sends (collectives); a GPU without a
 * fit gets 1/coef = a x scale + b from the training GPUs' 1/coef, scale
 * being the dtype's peak, the bandwidth or the link bandwidth. */
int
train_linreg_tc (const struct gpu_db *gpus, const struct train_options *o, struct kset *ks)
{
  struct params p;
  const struct gpu_entry *seen[32];
  size_t ng = 0, *rows = xmalloc ((ks->n ? ks->n : 1) * sizeof *rows), nrows = 0, dropped = 0;
  double *x = xmalloc ((ks->n ? ks->n : 1) * sizeof *x), *y = xmalloc ((ks->n ? ks->n : 1) * sizeof *y);
  const struct gpu_entry *want[32] = { NULL };
  int rc = 0;

  for (size_t t = 0; o->in_dist_given && o->in_dist[t] && t < 31; t++)
    if ((want[t] = gpu_db_find (gpus, o->in_dist[t])) == NULL) {
      pm_error ("--in-dist '%s': no such GPU (see perfmod gpus)", o->in_dist[t]);
      free (rows);
      free (x);
      free (y);
      return EXIT_USAGE;
    }
  for (size_t i = 0; i < ks->n; i++) {
    const struct krow *r = &ks->v[i];
    bool ok = !o->in_dist_given || gpu_listed (want, r->gpu);
    if (!ok) {
      dropped++;
      continue;
    }
    if (!krow_in_split (r, o->split, SPLIT_SEED))
      continue;
    rows[nrows++] = i;
    size_t g;
    for (g = 0; g < ng && seen[g] != r->gpu; g++)
      ;
    if (g == ng && ng < sizeof seen / sizeof seen[0] - 1)
      seen[ng++] = r->gpu;
  }
  seen[ng] = NULL;
  params_init (&p);
  record_common (&p, o, ks, seen, nrows, dropped);
  params_set (&p, "part", "tensor-core");
  params_set (&p, "model", "t = coef * work + intercept per GPU, dtype and group; work = FLOPs "
              "(GEMMs, attention), bytes (vector, copies) or bytes sent (collectives); other "
              "GPUs: 1/coef = a * scale + b, scale the dtype's peak, the bandwidth or the link");
  for (int grp = 0; grp < LR_NGROUPS && rc == 0; grp++)
    for (int d = 0; d < PERFMOD_DTYPE_COUNT && rc == 0; d++) {
      double inv[32], scale[32], *fit;
      char key[96], *list = xstrdup ("");
      size_t nfit = 0;
      double fits[32][2];
      for (size_t g = 0; g < ng; g++) {
        size_t n = 0;
        for (size_t i = 0; i < nrows; i++) {
          const struct krow *r = &ks->v[rows[i]];
          struct perfmod_kernel k;
          struct phys_cost c;
          if (r->gpu != seen[g] || r->dtype != d)
            continue;
          krow_kernel (r, &k);
          if (lr_group_of (&k) != grp || phys_cost_of (&k, &r->gpu->gpu, &c) < 0)
            continue;
          x[n] = lr_work (&k, &c);
          y[n++] = r->latency_s;
        }
        if (n < 8 || fit_line (x, y, n, &fits[nfit][0], &fits[nfit][1]) < 0 ||
            !(fits[nfit][0] > 0))
          continue;
        inv[nfit] = 1 / fits[nfit][0];
        scale[nfit] = lr_scale (grp, d, &seen[g]->gpu);
        char *t = xasprintf ("%s%s%s", list, nfit ? "," : "", seen[g]->name);
        free (list);
        list = t;
        nfit++;
      }
      if (nfit) {
        snprintf (key, sizeof key, "%s.%s.gpus", lr_group_keys[grp], dtype_name (d));
        params_set (&p, key, "%s", list);
        snprintf (key, sizeof key, "%s.%s.fit", lr_group_keys[grp], dtype_name (d));
        fit = params_add_tensor (&p, key, nfit, 2);
        for (size_t g = 0; g < nfit; g++) {
          fit[2 * g] = fits[g][0];
          fit[2 * g + 1] = fits[g][1];
        }
        snprintf (key, sizeof key, "%s.%s.extrapolate", lr_group_keys[grp], dtype_name (d));
        double *ext = params_add_tensor (&p, key, 1, 2);
        /* one GPU, or GPUs of one scale: throughput in proportion to the scale */
        if (nfit < 2 || fit_line (scale, inv, nfit, &ext[0], &ext[1]) < 0) {
          ext[0] = inv[0] / scale[0];
          ext[1] = 0;
        }
      }
      free (list);
    }
  /* learned.h's dtypes keys, from the fits there are */
  static const struct { const char *cls; int grp; } cover[] = {
    { "linear", LR_GEMM }, { "bmm", LR_GEMM }, { "attention", LR_ATTENTION },
    { "elementwise", LR_VECTOR }, { "softmax", LR_VECTOR }, { "layernorm", LR_VECTOR },
  };
  for (size_t i = 0; i < sizeof cover / sizeof cover[0] && rc == 0; i++) {
    char *list = xstrdup (""), key[96];
    for (int d = 0; d < PERFMOD_DTYPE_COUNT; d++) {
      snprintf (key, sizeof key, "%s.%s.gpus", lr_group_keys[cover[i].grp], dtype_name (d));
      if (params_get (&p, key)) {
        char *t = xasprintf ("%s%s%s", list, *list ? "," : "", dtype_name (d));
        free (list);
        list = t;
      }
    }
    if (*list) {
      snprintf (key, sizeof key, "dtypes.%s", cover[i].cls);
      params_set (&p, key, "%s", list);
    }
    free (list);
  }
  if (rc == 0 && (rc = params_save (&p, o->out)) == 0)
    fprintf (stderr, "perfmod: wrote %s (linreg per-dtype fits, %zu rows)\n", o->out, nrows);
  params_free (&p);
  free (rows);
  free (x);
  free (y);
  return rc == 0 ? 0 : EXIT_RUNTIME;
}
