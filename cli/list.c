/* list.c: perfmod plugins, gpus, strategies, models: the tables of what is installed. */
#include <config.h>

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int
cmd_plugins (struct plugin_set *set)
{
  printf ("%-12s %-12s %-8s %-5s %s\n", "name", "kind", "version", "dim", "path");
  for (size_t i = 0; i < set->n; i++) {
    const struct plugin *p = &set->v[i];
    printf ("%-12s %-12s %-8s %-5s %s\n", p->p.name, plugin_kind_name (p->p.kind),
            p->p.version ? p->p.version : "-", p->p.dimension ? p->p.dimension : "-", p->path);
  }
  return 0;
}

int
cmd_gpus (void)
{
  struct gpu_db db;
  if (gpu_db_load_data (&db) < 0)
    return EXIT_USAGE;
  /* The columns up to l2_mb are fixed (scripts read them by position);
   * later ones: fp32 matrix-core peak, TDP, base/boost clock, link/NIC GB/s. */
  printf ("%-24s %-6s %5s %10s %7s %7s %7s %6s %8s %5s %7s %7s %7s %5s %9s %8s  %s\n", "name",
          "vendor", "SMs", "fp32_gflops", "tf32_tf", "bf16_tf", "fp8_tf", "mem_gb", "mem_gbps",
          "l2_mb", "fp16_tf", "fp4_tf", "f32mx_tf", "tdp_w", "base/mhz", "link/nic", "aliases");
  for (size_t i = 0; i < db.n; i++) {
    const struct gpu_entry *e = &db.v[i];
    const struct perfmod_gpu *g = &e->gpu;
    char clk[32], net[32];
    if (g->base_clock_mhz > 0)
      snprintf (clk, sizeof clk, "%.0f/%.0f", g->base_clock_mhz, g->clock_mhz);
    else
      snprintf (clk, sizeof clk, "-/%.0f", g->clock_mhz);
    snprintf (net, sizeof net, "%g/%g", g->link_gbps, g->nic_gbps);
    printf ("%-24s %-6s %5d %10.0f %7.1f %7.1f %7.1f %6.0f %8.0f %5.0f %7.1f %7.0f %7.1f %5.0f %9s %8s  ",
            e->name, e->vendor, g->sms, g->fp32_gflops, g->tensor_tflops[PERFMOD_DTYPE_TF32],
            g->tensor_tflops[PERFMOD_DTYPE_BF16], g->tensor_tflops[PERFMOD_DTYPE_FP8], g->mem_gb,
            g->mem_bw_gbps, g->l2_mb, g->tensor_tflops[PERFMOD_DTYPE_FP16], g->fp4_tflops,
            g->fp32_matrix_tflops, g->tdp_w, clk, net);
    for (char **a = e->aliases; a && *a; a++)
      printf ("%s%s", a == e->aliases ? "" : ", ", *a);
    putchar ('\n');
  }
  gpu_db_free (&db);
  return 0;
}

int
cmd_strategies (void)
{
  struct preset_db db;
  char *dir = xasprintf ("%s/strategies.d", pm_datadir ());
  int rc = preset_db_load (&db, dir);
  free (dir);
  if (rc < 0)
    return EXIT_USAGE;
  printf ("%-20s %-40s %s\n", "preset", "spec", "file");
  for (size_t i = 0; i < db.n; i++)
    printf ("%-20s %-40s %s:%d\n", db.v[i].name, db.v[i].spec, db.v[i].file, db.v[i].line);
  preset_db_free (&db);
  return 0;
}

enum { MODELS_TABLE, MODELS_CSV, MODELS_JSON };

/* One row of perfmod models: kv_B_tok is what one token's keys and values
 * take in a bf16 cache over every layer (MLA: the latent and the rope key).
 * JSON rows go into arr under the same names as CSV's header. */
static void
model_row (const struct model_cfg *m, int w, int format, json_t *arr)
{
  double kv = m->family == FAM_BERT ? 0 : 2.0 * (double) m->layers * model_kv_width (m);
  long long layers = (long long) (m->layers + m->dec_layers);
  /* a dense model's experts and top-k, an encoder's KV cache: null (JSON), empty (CSV) */
  bool moe = m->experts > 0, has_kv = kv > 0;
  if (format == MODELS_JSON)
    json_array_append_new (arr, json_pack ("{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:o, "
                                           "s:I, s:I}", "model", m->name, "model_type", m->arch,
                                           "layers", (json_int_t) layers,
                                           "hidden", (json_int_t) m->hidden,
                                           "heads", (json_int_t) m->heads,
                                           "kv_heads", (json_int_t) m->kv_heads,
                                           "ffn", (json_int_t) m->ffn,
                                           "experts", moe ? json_integer (m->experts) : json_null (),
                                           "top_k", moe ? json_integer (m->top_k) : json_null (),
                                           "kv_bytes_per_token",
                                           has_kv ? json_integer (llround (kv)) : json_null (),
                                           "active_params",
                                           (json_int_t) llround (model_active_params (m)),
                                           "params", (json_int_t) llround (model_params (m))));
  else if (format == MODELS_CSV) {
    char ex[24] = "", tk[24] = "", kvb[24] = "";
    if (moe) {
      snprintf (ex, sizeof ex, "%lld", (long long) m->experts);
      snprintf (tk, sizeof tk, "%lld", (long long) m->top_k);
    }
    if (has_kv)
      snprintf (kvb, sizeof kvb, "%.0f", kv);
    printf ("%s,%s,%lld,%lld,%lld,%lld,%lld,%s,%s,%s,%.0f,%.0f\n", m->name, m->arch, layers,
            (long long) m->hidden, (long long) m->heads, (long long) m->kv_heads,
            (long long) m->ffn, ex, tk, kvb, model_active_params (m), model_params (m));
  }
  else
    printf ("%-*s %-20s %6lld %6lld %6lld %6lld %7lld %7lld %9.0f %14.0f %14.0f\n", w, m->name,
            m->arch, layers, (long long) m->hidden, (long long) m->heads,
            (long long) m->kv_heads, (long long) m->ffn, (long long) m->experts, kv,
            model_active_params (m), model_params (m));
}

static void
models_header (int w, int format)
{
  /* params stays the last column (scripts read $NF); active: what a
   * token uses, the routed experts it is not sent to left out */
  if (format == MODELS_CSV)
    printf ("model,model_type,layers,hidden,heads,kv_heads,ffn,experts,top_k,"
            "kv_bytes_per_token,active_params,params\n");
  else if (format == MODELS_TABLE)
    printf ("%-*s %-20s %6s %6s %6s %6s %7s %7s %9s %14s %14s\n", w, "model", "model_type",
            "layers", "hidden", "heads", "kv", "ffn", "experts", "kv_B_tok", "active", "params");
}

/* perfmod models: every built-in, or the one --model names (a built-in or a config.json). */
int
cmd_models (const char *model, const char *fmt)
{
  char *dir, **files;
  int rc = 0, w = 14;
  int format = strcmp (fmt, "csv") == 0 ? MODELS_CSV : strcmp (fmt, "json") == 0 ? MODELS_JSON
               : MODELS_TABLE;
  json_t *arr = format == MODELS_JSON ? json_array () : NULL;
  if (model) {
    struct model_cfg m;
    if (model_cfg_open (&m, model) < 0) {
      json_decref (arr);
      return EXIT_USAGE;
    }
    w = (int) strlen (m.name) > w ? (int) strlen (m.name) : w;
    models_header (w, format);
    model_row (&m, w, format, arr);
    model_cfg_free (&m);
    goto done;
  }
  dir = xasprintf ("%s/models", pm_datadir ());
  if ((files = list_dir (dir, ".json")) == NULL) {
    pm_error ("%s: no built-in models", dir);
    free (dir);
    json_decref (arr);
    return EXIT_RUNTIME;
  }
  /* the model column as wide as the longest file stem */
  for (char **f = files; *f; f++) {
    const char *base = strrchr (*f, '/');
    int n = (int) strlen (base ? base + 1 : *f) - 5;
    w = n > w ? n : w;
  }
  models_header (w, format);
  for (char **f = files; *f; f++) {
    struct model_cfg m;
    if (model_cfg_load (&m, *f) < 0)
      rc = EXIT_USAGE;
    else {
      model_row (&m, w, format, arr);
      model_cfg_free (&m);
    }
  }
  strv_free (files);
  free (dir);
done:
  if (arr) {                            /* the answer whole, or nothing */
    if (rc == 0) {
      json_t *root = json_envelope ("models");
      json_object_set_new (root, "models", arr);
      json_print (root, stdout);
    }
    else
      json_decref (arr);
  }
  return rc;
}
