/* learn.c: perfmod train and eval: fitting the learned predictors and measuring them on kernel tables. */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "cli.h"

static int
load_tiles (struct tile_rules *t)
{
  char *dir = xasprintf ("%s/tiles.d", pm_datadir ());
  int rc = tile_rules_load (t, dir);
  free (dir);
  return rc;
}

/* --dtype, --gpu LIST, --split and --table of eval and train: which rows of
 * the modern tables (mdata.c) are read and kept.  *gpus and *tables are
 * allocated (free both). */
static int
eval_filters (const struct cli *c, const struct gpu_db *gpus, int *dtype,
              const struct gpu_entry ***gpu, int *split, char ***tables)
{
  *dtype = -1;
  *gpu = NULL;
  *split = SPLIT_ALL;
  *tables = NULL;
  if (c->dtype && (*dtype = dtype_parse (c->dtype)) < 0) {
    pm_error ("--dtype '%s': expected " DTYPE_NAMES_TEXT, c->dtype);
    return -1;
  }
  if (c->gpu) {
    char **names = strv_split (c->gpu, ',');
    size_t n = strv_len (names);
    *gpu = xcalloc (n + 1, sizeof **gpu);
    for (size_t i = 0; i < n; i++)
      if (((*gpu)[i] = gpu_db_find (gpus, names[i])) == NULL) {
        pm_error ("--gpu '%s': no such GPU (see perfmod gpus)", names[i]);
        strv_free (names);
        return -1;
      }
    strv_free (names);
  }
  if (c->split) {
    if (strcmp (c->split, "all") == 0)
      *split = SPLIT_ALL;
    else if (strcmp (c->split, "holdout") == 0)
      *split = SPLIT_HOLDOUT;
    else if (strcmp (c->split, "train") == 0)
      *split = SPLIT_TRAIN;
    else {
      pm_error ("--split '%s': expected all, holdout or train", c->split);
      return -1;
    }
  }
  if (c->table) {
    *tables = strv_split (c->table, ',');
    for (char **t = *tables; *t; t++) {
      size_t i;
      for (i = 0; mdata_tables[i] && strcmp (mdata_tables[i], *t); i++)
        ;
      if (mdata_tables[i] == NULL) {
        char *all = xstrdup (mdata_tables[0]);
        for (i = 1; mdata_tables[i]; i++) {
          char *more = xasprintf ("%s, %s", all, mdata_tables[i]);
          free (all);
          all = more;
        }
        pm_error ("--table '%s': expected a comma list of %s", *t, all);
        free (all);
        return -1;
      }
    }
  }
  return 0;
}

int
cmd_train (struct cli *c)
{
  struct train_options o;
  struct gpu_db gpus;
  struct tile_rules tiles;
  int rc;

  if (c->predictors == NULL || strchr (c->predictors, ',') || c->data == NULL || c->out == NULL) {
    pm_error ("train needs --predictor NAME (one), --data DIR and --out FILE");
    return EXIT_USAGE;
  }
  if (gpu_db_load_data (&gpus) < 0)
    return EXIT_USAGE;
  if (load_tiles (&tiles) < 0) {
    gpu_db_free (&gpus);
    return EXIT_USAGE;
  }
  memset (&o, 0, sizeof o);
  o.predictor = c->predictors;
  o.data = c->data;
  o.out = c->out;
  o.reference = c->reference;
  o.seed = c->seed_given ? (uint64_t) c->seed : 1;
  o.epochs = (int) c->epochs;
  o.members = (int) c->members;
  o.keep_throttled = c->keep_throttled;
  o.keep_floor = c->keep_floor;
  o.features = c->features;
  o.in_dist = strv_split (c->in_dist ? c->in_dist : DEFAULT_IN_DIST, ',');
  o.in_dist_given = c->in_dist != NULL;
  o.command = c->command;
  {
    const struct gpu_entry **unused = NULL;
    if (eval_filters (c, &gpus, &o.dtype, &unused, &o.split, &o.tables) < 0 || unused) {
      if (unused)
        pm_error ("--gpu: train names its GPUs with --in-dist");
      free (unused);
      strv_free (o.tables);
      strv_free (o.in_dist);
      tile_rules_free (&tiles);
      gpu_db_free (&gpus);
      return EXIT_USAGE;
    }
  }
  rc = train_run (&gpus, &tiles, &o);
  strv_free (o.tables);
  strv_free (o.in_dist);
  tile_rules_free (&tiles);
  gpu_db_free (&gpus);
  return rc;
}

/* cmd_eval's run, called with its standard output captured for --format json */
struct eval_run {
  struct plugin_set *set;
  const struct gpu_db *gpus;
  const struct tile_rules *tiles;
  const struct eval_options *o;
};

static int
eval_captured (void *arg)
{
  struct eval_run *r = arg;
  return eval_kernels (r->set, r->gpus, r->tiles, r->o);
}

int
cmd_eval (struct cli *c, struct plugin_set *set)
{
  struct eval_options o;
  struct gpu_db gpus;
  struct tile_rules tiles;
  const char *env = getenv ("PERFMOD_NEUSIGHT");
  char **asked;
  int rc;

  memset (&o, 0, sizeof o);
  if (c->data == NULL) {
    pm_error ("eval needs --data DIR: measured test kernels (NeuSight's dataset/test)");
    return EXIT_USAGE;
  }
  if (strcmp (c->format, "table") && strcmp (c->format, "csv") && strcmp (c->format, "json")) {
    pm_error ("--format '%s': eval prints table, csv or json", c->format);
    return EXIT_USAGE;
  }
  if (gpu_db_load_data (&gpus) < 0)
    return EXIT_USAGE;
  if (load_tiles (&tiles) < 0) {
    gpu_db_free (&gpus);
    return EXIT_USAGE;
  }
  /* Roofline, the reference every learned predictor must beat, comes first. */
  asked = strv_split (c->predictors ? c->predictors : "roofline,linreg,habitat", ',');
  o.predictors = xcalloc (strv_len (asked) + 2, sizeof *o.predictors);
  o.predictors[0] = xstrdup ("roofline");
  for (size_t i = 0, n = 1; asked[i]; i++)
    if (strcmp (asked[i], "roofline") != 0)
      o.predictors[n++] = xstrdup (asked[i]);
  strv_free (asked);
  o.data = c->data;
  o.format = strcmp (c->format, "json") == 0 ? "csv" : c->format;   /* JSON: the CSV's rows */
  o.neusight = c->neusight ? c->neusight : env && *env ? env : NULL;
  o.in_dist_text = c->in_dist ? c->in_dist : DEFAULT_IN_DIST;
  o.in_dist = strv_split (o.in_dist_text, ',');
  o.per_kernel = c->per_op;
  o.default_predictors = c->predictors == NULL;
  o.seed = SPLIT_SEED;
  if (eval_filters (c, &gpus, &o.dtype, &o.gpus, &o.split, &o.tables) < 0) {
    rc = EXIT_USAGE;
    goto done;
  }
  if (c->calibration && c->assumed)     /* eval prints no assumed: line */
    fprintf (stderr, "perfmod: %s\n", c->assumed);
  if (strcmp (c->format, "json") == 0) {
    struct eval_run run = { set, &gpus, &tiles, &o };
    char *text;
    size_t len;
    if ((rc = capture_stdout (eval_captured, &run, &text, &len)) == 0) {
      json_t *root = json_envelope ("eval");
      json_object_set_new (root, "per_op", json_boolean (o.per_kernel));
      json_object_set_new (root, "rows", json_from_csv (text, len));
      json_print (root, stdout);
    }
    free (text);
  }
  else
    rc = eval_kernels (set, &gpus, &tiles, &o);
done:
  free (o.gpus);
  strv_free (o.tables);
  strv_free (o.in_dist);
  strv_free (o.predictors);
  tile_rules_free (&tiles);
  gpu_db_free (&gpus);
  return rc;
}

static uint64_t
key_mix (uint64_t h, uint64_t v)
{
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

/* The seeded order of the shapes calibrate may use: by a hash of the row and the seed.  A
 * collective's shape is its operation, ranks and bytes (its b, m, n, k, h are 0: without them
 * every collective hashed alike and the seed drew the file's first rows); the inputs a GEMM
 * lacks are mixed in only where set, so a GEMM's draw is what it was. */
static uint64_t
shape_key (const struct krow *r, uint64_t seed)
{
  uint64_t h = seed ^ 0x9e3779b97f4a7c15ull, bits;
  int64_t v[6] = { r->b, r->m, r->n, r->k, r->h, r->kclass * 16 + r->dtype };
  for (int i = 0; i < 6; i++)
    h = key_mix (h, (uint64_t) v[i]);
  if (r->kclass == PERFMOD_KERNEL_COMM && r->op)
    for (const char *c = r->op; *c; c++)
      h = key_mix (h, (uint64_t) (unsigned char) *c);
  if (r->ranks)
    h = key_mix (h, (uint64_t) r->ranks);
  if (r->bytes != 0) {
    memcpy (&bits, &r->bytes, sizeof bits);
    h = key_mix (h, bits);
  }
  return h ^ (h >> 33);
}

struct keyed {
  uint64_t key;
  size_t row;
};

static int
cmp_keyed (const void *a, const void *b)
{
  const struct keyed *x = a, *y = b;
  return x->key < y->key ? -1 : x->key > y->key ? 1 : (x->row > y->row) - (x->row < y->row);
}

/* perfmod calibrate --data DIR --gpu G --out FILE [--predictor P] [--shapes N] [--seed S]
 * [--table LIST] [--dtype D]: the predictor's residual on G's measured kernels, per kernel
 * class and dtype, fitted on the 80 % of the shapes eval does not hold out (at most N, drawn
 * by the seed) and written for --calibration. */
int
cmd_calibrate (struct cli *c, struct plugin_set *set)
{
  struct gpu_db gpus;
  struct kset ks;
  struct mdata_filter f;
  struct calibration cal;
  const struct gpu_entry **gpu = NULL;
  char **tables = NULL;
  struct plugin *pl;
  struct calib_shape *sh = NULL;
  struct keyed *order = NULL;
  int dtype, split, rc = EXIT_USAGE;
  size_t n = 0, kept = 0, avail = 0, pcie = 0;

  memset (&ks, 0, sizeof ks);
  memset (&cal, 0, sizeof cal);
  if (c->data == NULL || c->gpu == NULL || c->out == NULL || strchr (c->gpu, ',')) {
    pm_error ("calibrate needs --data DIR (measured kernels in the shared tables' layout), "
              "--gpu G (one GPU) and --out FILE");
    return EXIT_USAGE;
  }
  if (c->split) {
    pm_error ("--split: calibrate fits on the 80 %% eval keeps; eval --split holdout judges it");
    return EXIT_USAGE;
  }
  if (gpu_db_load_data (&gpus) < 0)
    return EXIT_USAGE;
  if (eval_filters (c, &gpus, &dtype, &gpu, &split, &tables) < 0 ||
      (pl = predictor_find (set, c->predictors ? c->predictors : "tile-mlp")) == NULL ||
      output_check (c->out) < 0)
    goto out;
  memset (&f, 0, sizeof f);
  f.dtype = dtype;
  f.gpus = gpu;
  f.tables = tables;
  if (mdata_load (&ks, c->data, &gpus, &f) < 0)
    goto out;
  /* the 80 % eval does not hold out, in the seed's order, the first N; a PCIe server's
   * collectives left out: on the two left out of training, calibrating them made them
   * worse (scripts/calibrate-comm.sh, doc/precision.md) */
  order = xcalloc (ks.n + 1, sizeof *order);
  for (size_t i = 0; i < ks.n; i++) {
    const struct krow *r = &ks.v[i];
    if (krow_holdout (r, SPLIT_SEED) || r->gpu != gpu[0])
      continue;
    if (r->kclass == PERFMOD_KERNEL_COMM && !r->gpu->gpu.nvlink) {
      pcie++;
      continue;
    }
    order[kept++] = (struct keyed) { .key = shape_key (r, (uint64_t) c->seed), .row = i };
  }
  if (pcie > 0)
    pm_error ("%s: %zu collectives of %s left out: on PCIe servers left out of training, "
              "calibrating collectives made them worse (doc/precision.md)", c->data, pcie,
              gpu[0]->name);
  qsort (order, kept, sizeof *order, cmp_keyed);
  avail = kept;
  if (c->shapes > 0 && (size_t) c->shapes < kept)
    kept = (size_t) c->shapes;
  if (kept == 0) {
    pm_error ("%s: no measured kernel of %s to calibrate on (outside the 20 %% eval holds out)",
              c->data, gpu[0]->name);
    rc = EXIT_RUNTIME;
    goto out;
  }
  sh = xcalloc (kept, sizeof *sh);
  for (size_t i = 0; i < kept; i++) {
    const struct krow *r = &ks.v[order[i].row];
    struct perfmod_kernel k;
    struct perfmod_estimate e;
    krow_kernel (r, &k);
    if (plugin_estimate (pl, &k, &r->gpu->gpu, &e) < 0) {
      pm_error ("%s:%ld: %s cannot predict it: %s", r->file, r->line, pl->p.name,
                pm_plugin_errmsg);
      rc = EXIT_RUNTIME;
      goto out;
    }
    sh[n++] = (struct calib_shape) { .kclass = r->kclass, .dtype = r->dtype,
                                     .measured = r->latency_s, .predicted = e.seconds,
                                     .intensity = calib_intensity (&k, &r->gpu->gpu) };
  }
  cal.gpu = xstrdup (gpu[0]->name);
  cal.predictor = xstrdup (pl->p.name);
  if (calib_fit (&cal, sh, n) < 0) {
    pm_error ("%s: %zu shapes of %s, fewer than 3 of any kernel class and dtype: nothing to "
              "fit", c->data, n, gpu[0]->name);
    rc = EXIT_RUNTIME;
    goto out;
  }
  if (calib_write (&cal, c->out, c->command) < 0) {
    rc = EXIT_RUNTIME;
    goto out;
  }
  printf ("perfmod calibrate: %s on %s, calibrated on %zu shapes (of %zu measured outside "
          "eval's held-out 20 %%) into %s\n%-8s %-9s %7s %10s %10s %10s\n", pl->p.name, cal.gpu,
          cal.shapes, avail, c->out, "class", "dtype", "shapes", "a", "b", "c");
  for (size_t i = 0; i < cal.ngroups; i++)
    printf ("%-8s %-9s %7zu %+10.4f %+10.4f %+10.4f\n", kclass_name (cal.groups[i].kclass),
            dtype_name (cal.groups[i].dtype), cal.groups[i].n, cal.groups[i].a, cal.groups[i].b,
            cal.groups[i].c);
  printf ("(each group: measured = predicted x exp(a + b ln(predicted / 1 ms) + c ln(FLOPs per "
          "byte), a collective's ranks for its FLOPs per byte); use it with --calibration %s)\n",
          c->out);
  rc = 0;
out:
  free (sh);
  free (order);
  calib_free (&cal);
  kset_free (&ks);
  free (gpu);
  strv_free (tables);
  gpu_db_free (&gpus);
  return rc;
}

int
calibration_attach (struct cli *c, struct plugin_set *set, struct calibration *cal)
{
  char what[512];
  if (calib_attach (c->calibration, set, cal) < 0)
    return EXIT_USAGE;
  calib_describe (cal, c->calibration, what, sizeof what);
  assume (c, what);
  return 0;
}
