/* kdata.c: measured-kernel datasets (NeuSight's CSVs): rows joined with gpus.d, classified, tiled. */
#include <config.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"

/* NeuSight's vector operators: class, inputs per output, arithmetic per output. */
static const struct vec_op {
  const char *name;
  int kclass;
  int inputs;
  double ops;
} vec_ops[] = {
  { "add", PERFMOD_KERNEL_ELEMENTWISE, 2, 1 },  { "mul", PERFMOD_KERNEL_ELEMENTWISE, 2, 1 },
  { "div", PERFMOD_KERNEL_ELEMENTWISE, 2, 1 },  { "pow", PERFMOD_KERNEL_ELEMENTWISE, 2, 1 },
  { "addu", PERFMOD_KERNEL_ELEMENTWISE, 1, 1 }, { "mulu", PERFMOD_KERNEL_ELEMENTWISE, 1, 1 },
  { "divu", PERFMOD_KERNEL_ELEMENTWISE, 1, 1 }, { "powu", PERFMOD_KERNEL_ELEMENTWISE, 1, 1 },
  { "relu", PERFMOD_KERNEL_ELEMENTWISE, 1, 1 }, { "gelu", PERFMOD_KERNEL_ELEMENTWISE, 1, 1 },
  { "tanh", PERFMOD_KERNEL_ELEMENTWISE, 1, 1 },
  { "ln", PERFMOD_KERNEL_LAYERNORM, 1, 6 },     /* mean, var, sum, div, sqrt, scale */
  { "softmax", PERFMOD_KERNEL_SOFTMAX, 1, 5 },
  /* vidur's per-layer ops (mdata.c) */
  { "rope", PERFMOD_KERNEL_ELEMENTWISE, 1, 3 },
  { "silu_mul", PERFMOD_KERNEL_ELEMENTWISE, 2, 5 },
  { "input_layernorm", PERFMOD_KERNEL_LAYERNORM, 1, 6 },
  { "post_attention_layernorm", PERFMOD_KERNEL_LAYERNORM, 1, 6 },
};

static const struct vec_op *
vec_op_find (const char *name)
{
  for (size_t i = 0; i < sizeof vec_ops / sizeof vec_ops[0]; i++)
    if (strcmp (vec_ops[i].name, name) == 0)
      return &vec_ops[i];
  return NULL;
}

void
krow_kernel (const struct krow *r, struct perfmod_kernel *k)
{
  memset (k, 0, sizeof *k);
  k->struct_size = sizeof *k;
  k->kclass = r->kclass;
  k->op = r->op;
  kernel_set_dtype (k, r->dtype);
  k->library_name = r->kname;
  k->tile[0] = r->tile[0];
  k->tile[1] = r->tile[1];
  switch (r->kclass) {
  case PERFMOD_KERNEL_LINEAR:
  case PERFMOD_KERNEL_BMM:
    k->b = r->kclass == PERFMOD_KERNEL_LINEAR ? 1 : r->b;
    k->m = r->m;
    k->n = r->n;
    k->k = r->k;
    break;
  case PERFMOD_KERNEL_ATTENTION:
    k->b = r->b;
    k->m = r->m;
    k->n = r->n;
    k->k = r->k;
    k->h = r->h;
    k->kv_heads = r->kv_heads;
    k->window = r->window;
    k->causal = r->causal;
    break;
  case PERFMOD_KERNEL_MOE:
    k->b = r->b;
    k->m = r->m;
    k->n = r->n;
    k->k = r->k;
    k->h = r->h;
    k->top_k = r->top_k;
    k->gated = r->gated;
    k->expert_load = r->expert_load > 0 ? r->expert_load : 1;
    k->experts_reached = r->experts_reached;
    k->engine = r->engine;
    k->weight_bytes = r->weight_bytes;
    break;
  case PERFMOD_KERNEL_COMM:
  case PERFMOD_KERNEL_MEMORY:
    k->b = r->b;
    k->h = r->h;
    k->bytes = r->bytes;
    k->ranks = r->ranks;
    k->m = r->m;            /* DeepEP's kernels: tokens, hidden width, experts per token */
    k->k = r->k;
    k->top_k = r->top_k;
    break;
  default: {
    const struct vec_op *v = vec_op_find (r->op);
    k->b = r->b;
    k->h = r->h;
    /* (inputs + output) elements per output (dataset.py's MemPerO). */
    k->mem_per_output = (v ? v->inputs + 1 : 2) * k->elem_bytes;
    k->ops_per_output = v ? v->ops : 1;
    if (r->set)                   /* what the kernel itself moves is known */
      k->own_mem_per_output = k->mem_per_output;
  }
  }
}

const char *
krow_class_label (int kclass)
{
  switch (kclass) {
  case PERFMOD_KERNEL_BMM: return "BMM";
  case PERFMOD_KERNEL_LINEAR: return "FC";
  case PERFMOD_KERNEL_ELEMENTWISE: return "EW";
  case PERFMOD_KERNEL_SOFTMAX: return "Softmax";
  case PERFMOD_KERNEL_LAYERNORM: return "LN";
  default: return "other";
  }
}

static void
kset_push (struct kset *s, const struct krow *r)
{
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 4096;
    s->v = xrealloc (s->v, s->cap * sizeof *s->v);
  }
  s->v[s->n++] = *r;
}

void
kset_free (struct kset *s)
{
  free (s->v);
  strv_free (s->files);
  free (s->unmodelled_names);
  memset (s, 0, sizeof *s);
}

enum { C_OP, C_LAT, C_DEV, C_KNAME, C_GX, C_GY, C_GZ, C_B, C_M, C_N, C_K, C_H, NCOLS };
static const char *const col_names[NCOLS] = {
  "OPName", "Latency", "Device", "Kernel Name", "Grid x", "Grid y", "Grid z",
  "B", "M", "N", "K", "H",
};

static bool
field_int (struct csv_reader *r, const int *col, int c, int64_t *out, int64_t min)
{
  return csv_int (r, (size_t) col[c], col_names[c], min, out);
}

int
kset_load_file (struct kset *s, const char *path, const struct gpu_db *gpus,
                const struct tile_rules *tiles)
{
  struct csv_reader r;
  int col[NCOLS], rc, errors = 0;
  const char *file = intern (path);
  size_t before = s->n;

  if (csv_open (&r, path) < 0) {
    pm_error ("%s: cannot read the kernel table: %s", path, strerror (errno));
    return -1;
  }
  if ((rc = csv_next (&r)) != 1) {
    if (rc == 0)
      pm_error ("%s: empty file (no header)", path);
    csv_close (&r);
    return -1;
  }
  for (int c = 0; c < NCOLS; c++)
    col[c] = csv_column (r.fields, r.nfields, col_names[c]);
  for (int c = 0; c <= C_B; c++)
    if (col[c] < 0) {
      pm_error ("%s:1: no '%s' column", path, col_names[c]);
      csv_close (&r);
      return -1;
    }
  size_t nheader = r.nfields;

  while ((rc = csv_next (&r)) == 1) {
    struct krow k;
    const struct gpu_entry *ge;
    const struct vec_op *v;
    const char *op;
    memset (&k, 0, sizeof k);
    k.file = file;
    k.line = r.line;
    if (r.nfields != nheader) {
      pm_error ("%s:%ld: %zu fields, the header has %zu", path, r.line, r.nfields, nheader);
      errors++;
      continue;
    }
    op = r.fields[col[C_OP]];
    if (strcmp (op, "bmm") == 0 || strcmp (op, "linear") == 0) {
      k.kclass = op[0] == 'b' ? PERFMOD_KERNEL_BMM : PERFMOD_KERNEL_LINEAR;
      if (col[C_M] < 0 || col[C_N] < 0 || col[C_K] < 0) {
        pm_error ("%s:%ld: a %s row needs M, N and K columns", path, r.line, op);
        errors++;
        break;
      }
      if (!field_int (&r, col, C_B, &k.b, 1) || !field_int (&r, col, C_M, &k.m, 1) ||
          !field_int (&r, col, C_N, &k.n, 1) || !field_int (&r, col, C_K, &k.k, 1)) {
        errors++;
        continue;
      }
    }
    else if ((v = vec_op_find (op)) != NULL) {
      k.kclass = v->kclass;
      if (col[C_H] < 0) {
        pm_error ("%s:%ld: a vector row needs an H column", path, r.line);
        errors++;
        break;
      }
      if (!field_int (&r, col, C_B, &k.b, 1) || !field_int (&r, col, C_H, &k.h, 1)) {
        errors++;
        continue;
      }
    }
    else {
      pm_error ("%s:%ld: unknown operator '%s'", path, r.line, op);
      errors++;
      continue;
    }
    k.op = intern (op);
    if (!parse_double (r.fields[col[C_LAT]], &k.latency_s) || !(k.latency_s > 0) ||
        !isfinite (k.latency_s)) {
      pm_error ("%s:%ld: Latency '%s' is not a positive number of milliseconds", path, r.line,
                r.fields[col[C_LAT]]);
      errors++;
      continue;
    }
    k.latency_s /= 1e3;
    ge = gpu_db_find (gpus, r.fields[col[C_DEV]]);
    if (ge == NULL) {
      pm_error ("%s:%ld: Device '%s' is not in gpus.d (add it or an alias)", path, r.line,
                r.fields[col[C_DEV]]);
      errors++;
      continue;
    }
    k.gpu = ge;
    if (!field_int (&r, col, C_GX, &k.grid[0], 1) || !field_int (&r, col, C_GY, &k.grid[1], 1) ||
        !field_int (&r, col, C_GZ, &k.grid[2], 1)) {
      errors++;
      continue;
    }
    k.kname = intern (r.fields[col[C_KNAME]]);
    if (tiles && tile_of (tiles, k.kclass, k.kname, k.b, k.h, k.grid, k.tile) < 0) {
      pm_error ("%s:%ld: (the row's kernel)", path, r.line);
      errors++;
      continue;
    }
    kset_push (s, &k);
    if (errors > 20)
      break;
  }
  if (rc < 0)
    errors++;
  csv_close (&r);
  return kset_file_done (s, path, before, errors);
}

int
kset_file_done (struct kset *s, const char *path, size_t before, int errors)
{
  if (errors) {
    s->n = before;
    pm_error ("%s: %d bad row%s: the file is refused", path, errors, errors == 1 ? "" : "s");
    return -1;
  }
  size_t nf = strv_len (s->files);
  s->files = xrealloc (s->files, (nf + 2) * sizeof *s->files);
  s->files[nf] = xstrdup (path);
  s->files[nf + 1] = NULL;
  return 0;
}

static bool
is_dir (const char *p)
{
  struct stat st;
  return stat (p, &st) == 0 && S_ISDIR (st.st_mode);
}

/* The processed sets (DIR/{bmm,linear,elem,ln,softmax}.csv) and the raw
 * per-GPU collections (DIR/collect/OP/VERSION/GPU.csv).  vec.csv is the
 * union of elem, ln and softmax and is not read twice. */
int
kset_load (struct kset *s, const char *dir, const struct gpu_db *gpus,
           const struct tile_rules *tiles)
{
  static const char *const sets[] = { "bmm.csv", "linear.csv", "elem.csv", "ln.csv", "softmax.csv" };
  int errors = 0;
  size_t files = 0;

  memset (s, 0, sizeof *s);
  if (!is_dir (dir))
    return kset_load_file (s, dir, gpus, tiles);
  for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
    char *p = xasprintf ("%s/%s", dir, sets[i]);
    struct stat st;
    if (stat (p, &st) == 0) {
      errors += kset_load_file (s, p, gpus, tiles) < 0;
      files++;
    }
    free (p);
  }
  char *collect = xasprintf ("%s/collect", dir);
  char **ops = list_subdirs (collect);
  for (char **op = ops; op && *op; op++) {
    char **vers = list_subdirs (*op);
    for (char **ver = vers; ver && *ver; ver++) {
      char **csvs = list_dir (*ver, ".csv");
      for (char **c = csvs; c && *c; c++) {
        errors += kset_load_file (s, *c, gpus, tiles) < 0;
        files++;
      }
      strv_free (csvs);
    }
    strv_free (vers);
  }
  strv_free (ops);
  free (collect);
  if (files == 0) {
    pm_error ("%s: no kernel CSVs (bmm.csv, linear.csv, elem.csv, ln.csv, softmax.csv or "
              "collect/OP/VERSION/GPU.csv)", dir);
    return -1;
  }
  return errors ? -1 : 0;
}
