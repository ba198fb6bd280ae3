/* collectives.c: perfmod reproduce --table collectives: published nccl-tests bus bandwidths, each predicted as the collective a graph costs. */
#include <config.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* One measurement of the file (tests/published-collectives.csv; its
 * comment block and source column cite each): nccl-tests' bus bandwidth
 * of op over `ranks` GPUs, gpn of them in one NVLink domain, the network
 * nic GB/s a GPU each way where the source states it (0: gpus.d's). */
struct pub_coll {
  char *id, *gpu, *source;
  const char *op;             /* one of coll_ops */
  int64_t ranks, gpn, bytes;
  double nic, busbw;
  long line;
};

static const char *const coll_ops[] = { "all_reduce", "all_gather", "reduce_scatter",
                                        "alltoall" };

/* nccl-tests' bus bandwidth over its algorithm bandwidth (its
 * doc/PERFORMANCE.md): 2 (n - 1) / n for an all-reduce, (n - 1) / n for
 * the others; the size is the whole buffer (all-gather's output,
 * reduce-scatter's input), as perfmod's COMM kernels take it. */
static double
busbw_factor (const char *op, double n)
{
  return (strcmp (op, "all_reduce") == 0 ? 2 : 1) * (n - 1) / n;
}

static void
coll_free (struct pub_coll *c)
{
  free (c->id);
  free (c->gpu);
  free (c->source);
}

/* Read the file; -1 after a message naming file:line. */
static int
colls_load (const char *path, struct pub_coll **out, size_t *nout)
{
  static const char *const cols[] = { "id", "gpu", "ranks", "gpus_per_node", "nic_gbps", "op",
                                      "bytes", "busbw_gbs", "source" };
  enum { ID, GPU, RANKS, GPN, NIC, OP, BYTES, BUSBW, SOURCE, NCOLS };
  struct csv_reader r;
  int col[NCOLS], rc;
  struct pub_coll *v = NULL;
  size_t n = 0, nhead = 0;
  bool header = false;

  if (csv_open (&r, path) < 0) {
    pm_error ("%s: %s", path, strerror (errno));
    return -1;
  }
  while ((rc = csv_next (&r)) > 0) {
    struct pub_coll x;
    char **f = r.fields;
    size_t i;
    if (r.nfields == 0 || f[0][0] == '#' || (r.nfields == 1 && f[0][0] == '\0'))
      continue;                          /* comments and blank lines */
    if (!header) {
      for (i = 0; i < NCOLS; i++)
        if ((col[i] = csv_column (f, r.nfields, cols[i])) < 0) {
          pm_error ("%s:%ld: missing column '%s'", path, r.line, cols[i]);
          goto fail;
        }
      header = true;
      nhead = r.nfields;
      continue;
    }
    if (r.nfields != nhead) {
      pm_error ("%s:%ld: %zu fields, the header has %zu (a truncated row?)", path, r.line,
                r.nfields, nhead);
      goto fail;
    }
    memset (&x, 0, sizeof x);
    x.line = r.line;
    for (i = 0; i < NCOLS; i++)
      if (i != NIC && f[col[i]][0] == '\0') {
        pm_error ("%s:%ld: empty %s", path, r.line, cols[i]);
        goto fail;
      }
    for (i = 0; i < sizeof coll_ops / sizeof *coll_ops; i++)
      if (strcmp (f[col[OP]], coll_ops[i]) == 0)
        x.op = coll_ops[i];
    if (x.op == NULL) {
      pm_error ("%s:%ld: op '%s': expected all_reduce, all_gather, reduce_scatter or alltoall",
                path, r.line, f[col[OP]]);
      goto fail;
    }
    if (!csv_int (&r, (size_t) col[RANKS], "ranks", 2, &x.ranks) ||
        !csv_int (&r, (size_t) col[GPN], "gpus_per_node", 1, &x.gpn) ||
        !csv_int (&r, (size_t) col[BYTES], "bytes", 1, &x.bytes))
      goto fail;
    if (x.ranks > PM_MAX_GPUS || x.gpn > PM_MAX_GPUS) {
      pm_error ("%s:%ld: ranks or gpus_per_node above %d", path, r.line, PM_MAX_GPUS);
      goto fail;
    }
    if (!parse_double (f[col[BUSBW]], &x.busbw) || !(x.busbw > 0) || !isfinite (x.busbw)) {
      pm_error ("%s:%ld: busbw_gbs '%s': expected a positive number", path, r.line,
                f[col[BUSBW]]);
      goto fail;
    }
    if (f[col[NIC]][0] &&
        (!parse_double (f[col[NIC]], &x.nic) || !(x.nic > 0) || !isfinite (x.nic))) {
      pm_error ("%s:%ld: nic_gbps '%s': expected a positive number or nothing", path, r.line,
                f[col[NIC]]);
      goto fail;
    }
    x.id = xstrdup (f[col[ID]]);
    x.gpu = xstrdup (f[col[GPU]]);
    x.source = xstrdup (f[col[SOURCE]]);
    v = xrealloc (v, (n + 1) * sizeof *v);
    v[n++] = x;
  }
  if (rc < 0)
    goto fail;
  csv_close (&r);
  if (n == 0) {
    pm_error ("%s: no measurements", path);
    free (v);
    return -1;
  }
  *out = v;
  *nout = n;
  return 0;
fail:
  csv_close (&r);
  for (size_t i = 0; i < n; i++)
    coll_free (&v[i]);
  free (v);
  return -1;
}

/* One row of the summary: median and mean |error|, the mean signed one
 * and how many within 15 %, over the errors of `which` (-1 all, 0 within
 * one NVLink domain, 1 across domains). */
static void
summary_line (FILE *out, const char *label, const double *e, const bool *across, size_t k,
              int which)
{
  double *a = xcalloc (k ? k : 1, sizeof *a), sum = 0, sgn = 0;
  size_t m = 0, within = 0;
  for (size_t j = 0; j < k; j++)
    if (which < 0 || (int) across[j] == which) {
      a[m++] = fabs (e[j]);
      sum += fabs (e[j]);
      sgn += e[j];
      within += fabs (e[j]) <= 15;
    }
  fprintf (out, "%-14s %5zu %14.1f %12.1f %+9.1f %7zu/%zu\n", label, m,
           m ? median_sorting (a, m) : 0,
           m ? sum / (double) m : 0, m ? sgn / (double) m : 0, within, m);
  free (a);
}

int
reproduce_collectives (struct plugin_set *set, const struct gpu_db *gpus,
                       const struct reproduce_options *o)
{
  bool csv = strcmp (o->format, "csv") == 0;
  size_t npred = strv_len (o->predictors), n = 0;
  struct pub_coll *v = NULL;
  struct plugin **pls;
  double **errs;
  bool *across;
  int rc = 0;

  if (colls_load (o->published, &v, &n) < 0)
    return EXIT_USAGE;
  pls = xcalloc (npred, sizeof *pls);
  errs = xcalloc (npred, sizeof *errs);
  across = xcalloc (n, sizeof *across);
  for (size_t p = 0; p < npred; p++) {
    errs[p] = xcalloc (n, sizeof **errs);
    if ((pls[p] = predictor_find (set, o->predictors[p])) == NULL)
      rc = EXIT_USAGE;
  }
  if (rc == 0 && csv)
    fprintf (o->out, "id,gpu,ranks,gpus_per_node,nic_gbps,op,bytes,predictor,published_busbw_gbs,"
             "published_us,busbw_gbs,us,error_pct,source\n");
  else if (rc == 0)
    fprintf (o->out, "%-40s %-21s %5s %4s %-14s %8s %9s %-9s %9s %8s\n", "measurement", "gpu",
             "ranks", "gpn", "op", "MiB", "pub_GB/s", "predictor", "GB/s", "err_%");
  for (size_t i = 0; i < n && rc == 0; i++) {
    struct pub_coll *x = &v[i];
    const struct gpu_entry *ge = gpu_db_find (gpus, x->gpu);
    struct perfmod_gpu g;
    struct perfmod_kernel k;
    double f = busbw_factor (x->op, (double) x->ranks);
    double pub_s = (double) x->bytes * f / (x->busbw * 1e9);
    if (ge == NULL) {
      pm_error ("%s:%ld: gpu '%s' is in no gpus.d section", o->published, x->line, x->gpu);
      rc = EXIT_USAGE;
      break;
    }
    /* the row's system: its NVLink domain and, where stated, its network */
    g = ge->gpu;
    g.gpus_per_node = (int) x->gpn;
    if (x->nic > 0)
      g.nic_gbps = x->nic;
    /* as nccl-tests times it: one collective after another, each alone */
    memset (&k, 0, sizeof k);
    k.struct_size = sizeof k;
    k.kclass = PERFMOD_KERNEL_COMM;
    k.op = x->op;
    k.bytes = (double) x->bytes;
    k.ranks = (int) x->ranks;
    k.isolated = 1;
    kernel_set_dtype (&k, PERFMOD_DTYPE_FP16);
    across[i] = x->ranks > x->gpn;
    for (size_t p = 0; p < npred; p++) {
      struct perfmod_estimate est;
      if (plugin_estimate (pls[p], &k, &g, &est) < 0 || !(est.seconds > 0)) {
        pm_error ("%s:%ld: %s cannot predict %s: %s", o->published, x->line, o->predictors[p],
                  x->id, pm_plugin_errmsg);
        rc = EXIT_RUNTIME;
        break;
      }
      double bw = (double) x->bytes * f / est.seconds / 1e9;
      errs[p][i] = (est.seconds / pub_s - 1) * 100;
      if (csv) {
        csv_quoted (o->out, x->id);
        fprintf (o->out, ",%s,%lld,%lld,%.6g,%s,%lld,%s,%.6g,%.6g,%.6g,%.6g,%.2f,", x->gpu,
                 (long long) x->ranks, (long long) x->gpn, x->nic > 0 ? x->nic : g.nic_gbps,
                 x->op, (long long) x->bytes, o->predictors[p], x->busbw, pub_s * 1e6, bw,
                 est.seconds * 1e6, errs[p][i]);
        csv_quoted (o->out, x->source);
        fputc ('\n', o->out);
      }
      else
        fprintf (o->out, "%-40s %-21s %5lld %4lld %-14s %8.4g %9.1f %-9s %9.1f %+8.1f\n",
                 p ? "" : x->id, p ? "" : x->gpu, (long long) x->ranks, (long long) x->gpn,
                 p ? "" : x->op, (double) x->bytes / 1048576, x->busbw, o->predictors[p], bw,
                 errs[p][i]);
    }
  }
  if (rc == 0) {
    FILE *sum = csv ? o->err : o->out;
    fprintf (sum, "\n%-14s %5s %14s %12s %9s %10s\n", "predictor", "rows", "median_|err|_%",
             "mean_|err|_%", "bias_%", "within_15%");
    for (size_t p = 0; p < npred; p++) {
      summary_line (sum, o->predictors[p], errs[p], across, n, -1);
      summary_line (sum, "  one domain", errs[p], across, n, 0);
      summary_line (sum, "  across", errs[p], across, n, 1);
    }
    fprintf (sum, "(%zu measurements from %s; error = predicted / published - 1 of the time, "
             "the published time = bytes x nccl-tests' bus factor / busbw; one domain: every "
             "rank in one NVLink domain; across: over the network)\n", n, o->published);
  }
  for (size_t p = 0; p < npred; p++)
    free (errs[p]);
  free (errs);
  free (across);
  free (pls);
  for (size_t i = 0; i < n; i++)
    coll_free (&v[i]);
  free (v);
  return rc;
}
