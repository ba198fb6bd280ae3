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
  (void) nout;
  *pred = t->cases[row].base * tc_factor (out[0]);
  if (dpred)
    dpred[0] = *pred;
}

/* The dtypes a group's rows had, as the comma list learned.h reads. */
static char *
dtype_list (unsigned mask)
{
  char *s = xstrdup ("");
  for (int d = 0; d < PERFMOD_DTYPE_NTYPES; d++)
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
  bool small = grp == TC_COMM || grp == TC_DEEPEP;
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
    params_put_range (p, key, x, n, nf);
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

/* The rows both trainers learn from: those of the --in-dist GPUs (every
 * GPU without it) in the --split; *want the resolved --in-dist GPUs (NULL
 * without it), *seen the GPUs the rows came from (both NULL-terminated,
 * free them); -1 after naming an unknown GPU. */
static int
modern_rows (const struct gpu_db *gpus, const struct train_options *o, const struct kset *ks,
             size_t **rows, size_t *nrows, size_t *dropped, size_t *held,
             const struct gpu_entry ***want, const struct gpu_entry ***seen)
{
  size_t nw = o->in_dist_given ? strv_len (o->in_dist) : 0, ng = 0;
  *want = NULL;
  if (o->in_dist_given) {
    *want = xcalloc (nw + 1, sizeof **want);
    for (size_t i = 0; i < nw; i++)
      if (((*want)[i] = gpu_db_find (gpus, o->in_dist[i])) == NULL) {
        pm_error ("--in-dist '%s': no such GPU (see perfmod gpus)", o->in_dist[i]);
        free (*want);
        return -1;
      }
  }
  *rows = xmalloc ((ks->n ? ks->n : 1) * sizeof **rows);
  *seen = xcalloc (1, sizeof **seen);
  *nrows = *dropped = *held = 0;
  for (size_t i = 0; i < ks->n; i++) {
    const struct krow *r = &ks->v[i];
    size_t g;
    if (!gpu_listed (*want, r->gpu)) {
      (*dropped)++;
      continue;
    }
    if (!krow_in_split (r, o->split, SPLIT_SEED)) {
      (*held)++;
      continue;
    }
    (*rows)[(*nrows)++] = i;
    for (g = 0; g < ng && (*seen)[g] != r->gpu; g++)
      ;
    if (g == ng) {
      *seen = xrealloc (*seen, (ng + 2) * sizeof **seen);
      (*seen)[ng++] = r->gpu;
      (*seen)[ng] = NULL;
    }
  }
  return 0;
}

/* The classes' dtypes keys of learned.h, masks indexed by kernel class. */
static void
put_dtypes (struct params *p, const unsigned *class_mask)
{
  for (size_t i = 0; i < sizeof tc_class_cover / sizeof tc_class_cover[0]; i++)
    if (class_mask[tc_class_cover[i].kclass]) {
      char *list = dtype_list (class_mask[tc_class_cover[i].kclass]), key[32];
      snprintf (key, sizeof key, "dtypes.%s", tc_class_cover[i].cls);
      params_set (p, key, "%s", list);
      free (list);
    }
}

int
train_tc (const struct gpu_db *gpus, const struct train_options *o, struct kset *ks)
{
  const struct gpu_entry **want, **seen;
  struct params p;
  size_t *rows, nrows, dropped, held;
  int members = o->members ? o->members : TC_MEMBERS, rc = 0;
  unsigned mask[TC_NGROUPS] = { 0 }, class_mask[PERFMOD_KERNEL_MOE + 1] = { 0 };
  double t0 = pm_now ();
  int features = o->features ? tc_features_of (o->features) : TC_FEAT_NOCHIP;

  if (features < 0) {
    pm_error ("--features '%s': the tensor-core networks take tc-nochip or tc", o->features);
    return EXIT_USAGE;
  }
  if (modern_rows (gpus, o, ks, &rows, &nrows, &dropped, &held, &want, &seen) < 0)
    return EXIT_USAGE;
  params_init (&p);
  record_common (&p, o, ks, want ? want : seen, nrows, dropped);
  params_set (&p, "part", "tensor-core");
  params_set (&p, "split", "%s", o->split == SPLIT_TRAIN ? "train (the seeded 20 % held out)"
                                 : "all rows");
  if (held)
    params_set (&p, "rows_held_out", "%zu", held);
  params_set (&p, "members", "%d", members);
  params_set (&p, "features", "%s", tc_feature_names[features]);
  params_set (&p, "model", "time = max(physical floor, base x exp(mean of the members' "
              "outputs)); base: roofline + launch, for collectives NCCL's cost model "
              "(physics.h); inputs: tc-model.h");
  for (int g = 0; g < TC_NGROUPS && rc == 0; g++) {
    /* The MoE layers' and the collectives' networks have files of their
     * own (make weights-moe, weights-comm): trained only when --table is
     * given (those commands give it), not into the file of every table. */
    if ((g == TC_MOE || g == TC_COMM || g == TC_DEEPEP) && o->tables == NULL)
      continue;
    rc = train_group (g, features, ks, rows, nrows, o, members, &p, &mask[g], class_mask);
  }
  if (rc == 0) {
    /* a class covers the dtypes its own rows had; a group whose networks
     * were not trained covers none */
    for (size_t i = 0; i < sizeof tc_class_cover / sizeof tc_class_cover[0]; i++)
      if (!mask[tc_class_cover[i].grp])
        class_mask[tc_class_cover[i].kclass] = 0;
    put_dtypes (&p, class_mask);
    params_set (&p, "trained_seconds", "%.1f", pm_now () - t0);
    rc = params_save (&p, o->out);
    if (rc == 0)
      fprintf (stderr, "perfmod: wrote %s (%s tensor-core networks, %zu rows, %.1f s)\n", o->out,
               o->predictor, nrows, pm_now () - t0);
  }
  params_free (&p);
  free (rows);
  free (want);
  free (seen);
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
  const struct gpu_entry **want, **seen;
  size_t *rows, nrows, dropped, held, ng;
  unsigned class_mask[PERFMOD_KERNEL_MOE + 1] = { 0 };
  int rc = 0;

  if (modern_rows (gpus, o, ks, &rows, &nrows, &dropped, &held, &want, &seen) < 0)
    return EXIT_USAGE;
  for (ng = 0; seen[ng]; ng++)
    ;
  double *x = xmalloc ((nrows ? nrows : 1) * sizeof *x), *y = xmalloc ((nrows ? nrows : 1) * sizeof *y);
  double *inv = xmalloc ((ng ? ng : 1) * sizeof *inv), *scale = xmalloc ((ng ? ng : 1) * sizeof *scale);
  double *fits = xmalloc ((ng ? ng : 1) * 2 * sizeof *fits);
  params_init (&p);
  record_common (&p, o, ks, seen, nrows, dropped);
  params_set (&p, "part", "tensor-core");
  params_set (&p, "model", "t = coef * work + intercept per GPU, dtype and group; work = FLOPs "
              "(GEMMs, attention), bytes (vector, copies) or bytes sent (collectives); other "
              "GPUs: 1/coef = a * scale + b, scale the dtype's peak, the bandwidth or the link");
  for (int grp = 0; grp < LR_NGROUPS && rc == 0; grp++)
    for (int d = 0; d < PERFMOD_DTYPE_NTYPES && rc == 0; d++) {
      double *fit;
      char key[96], *list = xstrdup ("");
      size_t nfit = 0;
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
        if (n < 8 || fit_line (x, y, n, &fits[2 * nfit], &fits[2 * nfit + 1]) < 0 ||
            !(fits[2 * nfit] > 0))
          continue;
        inv[nfit] = 1 / fits[2 * nfit];
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
        memcpy (fit, fits, nfit * 2 * sizeof *fit);
        for (size_t t = 0; t < sizeof tc_class_cover / sizeof tc_class_cover[0]; t++)
          if (tc_class_cover[t].grp == grp)
            class_mask[tc_class_cover[t].kclass] |= 1u << d;
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
  put_dtypes (&p, class_mask);       /* the dtypes the fits there are cover */
  if (rc == 0 && (rc = params_save (&p, o->out)) == 0)
    fprintf (stderr, "perfmod: wrote %s (linreg per-dtype fits, %zu rows)\n", o->out, nrows);
  params_free (&p);
  free (rows);
  free (want);
  free (seen);
  free (x);
  free (y);
  free (inv);
  free (scale);
  free (fits);
  return rc == 0 ? 0 : EXIT_RUNTIME;
}

/* ---- habitat on the modern tables ---- */

/* Habitat's matrix model on the GEMMs of every dtype: one MLP from raw
 * features (B, M, N, K, bandwidth, memory, SMs) with the dtype's peak and
 * element size in place of the FP32 peak, to milliseconds, loss MAPE:
 * Habitat's inputs, no notion of tiles or rooflines.  plugins/habitat.c
 * reads the same nine inputs (HABITAT_TC_FEATURES). */
#define HABITAT_TC_NFEAT 9
#define HABITAT_TC_SCALE 1e-3

int
train_habitat_tc (const struct gpu_db *gpus, const struct train_options *o, struct kset *ks)
{
  static const int widths[] = { HABITAT_TC_NFEAT, 128, 128, 128, 128, 128, 1 };
  const int nl = (int) (sizeof widths / sizeof widths[0]) - 1;
  const struct gpu_entry **want, **seen;
  struct params p;
  size_t *rows, nrows, dropped, held, n = 0;
  unsigned mask = 0;
  double t0 = pm_now ();
  struct nn_fit f;
  char label[64];
  int rc;

  if (modern_rows (gpus, o, ks, &rows, &nrows, &dropped, &held, &want, &seen) < 0)
    return EXIT_USAGE;
  double *x = xmalloc ((nrows ? nrows : 1) * HABITAT_TC_NFEAT * sizeof *x);
  double *y = xmalloc ((nrows ? nrows : 1) * sizeof *y);
  for (size_t i = 0; i < nrows; i++) {
    const struct krow *r = &ks->v[rows[i]];
    const struct perfmod_gpu *g = &r->gpu->gpu;
    double *xi = x + n * HABITAT_TC_NFEAT;
    /* Habitat's inputs are of one element size; the block-scaled dtypes
     * (nvfp4, fp8_block) came after it and are left to the others */
    if (r->kclass != PERFMOD_KERNEL_LINEAR || r->dtype == PERFMOD_DTYPE_FP32 ||
        r->dtype >= PERFMOD_DTYPE_COUNT)
      continue;
    xi[0] = 1;
    xi[1] = (double) r->m;
    xi[2] = (double) r->n;
    xi[3] = (double) r->k;
    xi[4] = g->mem_bw_gbps;
    xi[5] = g->mem_gb;
    xi[6] = (double) g->sms;
    xi[7] = perfmod_gpu_peak_flops (g, r->dtype) / 1e9;
    xi[8] = dtype_bytes (r->dtype);
    y[n++] = r->latency_s / HABITAT_TC_SCALE;
    mask |= 1u << r->dtype;
  }
  params_init (&p);
  record_common (&p, o, ks, want ? want : seen, n, dropped);
  params_set (&p, "part", "tensor-core");
  params_set (&p, "split", "%s", o->split == SPLIT_TRAIN ? "train (the seeded 20 % held out)"
                                 : "all rows");
  if (n < 64) {
    pm_error ("--data %s: %zu GEMM rows of a 16- or 8-bit dtype, too few for habitat's network",
              o->data, n);
    rc = EXIT_USAGE;
    goto out;
  }
  fit_setup (&f, label, sizeof label, "gemm", o, 20, 4, NN_LOSS_MAPE, 1);
  f.batch = 512;
  rc = fit_network (&p, "gemm", widths, nl, NN_NONE, &f, &(struct nn_data) { n, x, y },
                    "B,M,N,K,mem_bw_gbps,mem_gb,sms,dtype_peak_gflops,dtype_bytes");
  if (rc == 0) {
    char *list = dtype_list (mask);
    params_set (&p, "output_scale_s", "%g", HABITAT_TC_SCALE);
    params_set (&p, "model", "linear, bmm: MLP(B,M,N,K,bandwidth,memory,SMs,dtype peak,dtype "
                "bytes) -> ms, a batched product B times one; vector: one read and one write "
                "of the dtype's bytes at the bandwidth");
    params_set (&p, "dtypes.linear", "%s", list);
    params_set (&p, "dtypes.bmm", "%s", list);
    params_set (&p, "dtypes.elementwise", "fp16,bf16");
    params_set (&p, "dtypes.softmax", "fp16,bf16");
    params_set (&p, "dtypes.layernorm", "fp16,bf16");
    params_set (&p, "trained_seconds", "%.1f", pm_now () - t0);
    free (list);
    rc = params_save (&p, o->out);
    if (rc == 0)
      fprintf (stderr, "perfmod: wrote %s (habitat per-dtype GEMM network, %zu rows, %.1f s)\n",
               o->out, n, pm_now () - t0);
  }
  rc = rc == 0 ? 0 : EXIT_RUNTIME;
out:
  params_free (&p);
  free (rows);
  free (want);
  free (seen);
  free (x);
  free (y);
  return rc;
}
