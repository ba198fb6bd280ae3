/* t-roofline-parity.c: roofline per op equals NeuSight's per-op roofline CSVs (H100 and A100-40GB), every row. */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "tap.h"

static double worst;

/* Compare one per-op CSV against our prediction of its graph on gpu. */
static void
check_file (struct plugin *roof, const struct gpu_entry *ge, const char *neusight,
            const char *tag, const char *csvpath)
{
  struct model_cfg m;
  struct graph g;
  struct prediction pr;
  struct csv_reader r;
  char *cfg, *gpath, *model = xstrdup (tag);
  struct run_options ro = { .prec = precision_infer (PERFMOD_DTYPE_FP32),
                            .train = strstr (tag, "-train-") != NULL, .comm_group = 1 };
  int cols[4], rows = 0, bad = 0;
  size_t node = 0;

  *strchr (model, '-') = '\0';
  cfg = xasprintf ("%s/DLmodel_configs/%s.json", neusight, model);
  gpath = xasprintf ("%s/results/opgraph/%s.csv", neusight, tag);
  if (model_cfg_load (&m, cfg) < 0 || opgraph_import (&g, gpath, m.layers) < 0 ||
      predict_graph (roof, &g, &ge->gpu, &ro, &pr) < 0) {
    ok (0, "%s on %s: predicted", tag, ge->name);
    return;
  }
  csv_open (&r, csvpath);
  csv_next (&r);
  cols[0] = csv_column (r.fields, r.nfields, "Name");
  cols[1] = csv_column (r.fields, r.nfields, "fw_latency");
  cols[2] = csv_column (r.fields, r.nfields, "bw_latency");
  cols[3] = csv_column (r.fields, r.nfields, "acc_latency");
  while (csv_next (&r) > 0 && node < g.n) {
    rows++;
    if (strcmp (r.fields[cols[0]], g.nodes[node].name) != 0) {
      diag ("%s: row %d is %s, our node is %s", csvpath, rows, r.fields[cols[0]], g.nodes[node].name);
      bad++;
      break;
    }
    for (int p = 0; p < 3; p++) {
      double want = strtod (r.fields[cols[1 + p]], NULL), got = pr.per_node[node].t[p];
      double rel = want != 0 ? fabs (got - want) / fabs (want) : fabs (got);
      if (!ro.train && p > 0)
        continue;
      if (rel > worst)
        worst = rel;
      if (rel > 1e-6) {
        if (bad++ < 3)
          diag ("%s: %s phase %d: got %.12g want %.12g", tag, g.nodes[node].name, p, got, want);
      }
    }
    node++;
  }
  ok (bad == 0 && node == g.n && rows == (int) g.n, "%s on %s: %d ops within 1e-6", tag, ge->name, rows);
  csv_close (&r);
  prediction_free (&pr);
  graph_free (&g);
  model_cfg_free (&m);
  free (cfg);
  free (gpath);
  free (model);
}

int
main (void)
{
  const char *env = getenv ("PERFMOD_NEUSIGHT"), *top = getenv ("top_srcdir");
  char *neusight = env && *env ? xstrdup (env) : xasprintf ("%s/../shared/neusight", top ? top : ".");
  static const char *const gpus[] = { "NVIDIA_H100_80GB_HBM3", "NVIDIA_A100-PCIE-40GB" };
  struct plugin_set set = { NULL, 0 };
  struct gpu_db db;
  char *dirs[2] = { getenv ("PERFMOD_PLUGIN_DIR"), NULL };
  char *gdir = xasprintf ("%s/gpus.d", getenv ("PERFMOD_DATADIR") ? getenv ("PERFMOD_DATADIR") : ".");
  struct plugin *roof;
  char *probe = xasprintf ("%s/results/prediction", neusight);
  char **probev = list_dir (probe, ".csv");

  if (probev == NULL && access (probe, R_OK) != 0)
    skip_all ("NeuSight data not found (set PERFMOD_NEUSIGHT)");
  strv_free (probev);
  if (dirs[0] == NULL || gpu_db_load (&db, gdir) < 0)
    skip_all ("run under make check (PERFMOD_PLUGIN_DIR, PERFMOD_DATADIR)");
  plugins_load (&set, dirs);
  roof = plugins_find (&set, "roofline", PERFMOD_PLUGIN_PREDICTOR);
  ok (roof != NULL, "roofline plugin loads");
  plugins_neusight_units (&set);    /* NeuSight's units, as reproduce sets them */
  for (int i = 0; roof && i < 2; i++) {
    char *dir = xasprintf ("%s/results/prediction/%s/roofline", neusight, gpus[i]);
    char **files = list_dir (dir, ".csv");
    const struct gpu_entry *ge = gpu_db_find (&db, gpus[i]);
    ok (files && files[0] && ge, "%s: per-op roofline files found", gpus[i]);
    for (char **f = files; f && *f; f++) {
      char *tag = xstrdup (strrchr (*f, '/') + 1);
      tag[strlen (tag) - 4] = '\0';
      check_file (roof, ge, neusight, tag, *f);
      free (tag);
    }
    strv_free (files);
    free (dir);
  }
  diag ("worst relative difference %.3g", worst);
  done_testing ();
  plugins_unload (&set);
  gpu_db_free (&db);
  free (gdir);
  free (probe);
  free (neusight);
  return exit_status ();
}
