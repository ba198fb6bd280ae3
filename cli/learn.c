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
        pm_error ("--table '%s': expected a comma list of gemm, context_attention, "
                  "generation_attention, nccl, vidur_comm, vidur_layer, aiter_gemm, "
                  "llmcompass_gemm", *t);
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
