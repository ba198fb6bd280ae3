/* mdata.c: the modern measured kernels (aiconfigurator, vidur, aiter, LLMCompass tables): bf16/fp16/fp8 rows, one per shape. */
#include <config.h>

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "internal.h"
#include "physics.h"

/* Where the rows of one table land, and what the table is called in
 * reports (krow.set). */
struct table {
  struct kset *s;
  const struct gpu_db *gpus;
  const struct mdata_filter *f;
  struct csv_reader r;
  const char *path;        /* interned */
  const char *set;         /* interned */
  const struct gpu_entry *path_gpu; /* the GPU the path names, if any */
  int errors;
  bool fatal;              /* a problem of the whole table: stop reading it */
  size_t skipped;          /* rows of chips gpus.d does not know (aiter) */
  char *unknown;           /* the first of them, and its line */
  long unknown_line;
  size_t ncols;            /* the header's fields; 0: no header (LLMCompass) */
};

/* Read on: no whole-table problem and fewer than 20 bad rows. */
static bool
more (const struct table *t)
{
  return !t->fatal && t->errors < 20;
}

/* The next record, while reading on; a malformed or truncated file
 * (reported by csv_next) refuses the table. */
static bool
next_row (struct table *t)
{
  int rc;
  while (more (t)) {
    if ((rc = csv_next (&t->r)) < 0) {
      t->errors++;
      t->fatal = true;
    }
    if (rc != 1)
      return false;
    if (t->ncols == 0 || t->r.nfields == t->ncols)
      return true;
    pm_error ("%s:%ld: %zu fields, the header has %zu", t->path, t->r.line, t->r.nfields,
              t->ncols);
    t->errors++;
  }
  return false;
}

/* A column the table must have; reported with the file when missing. */
static int
need_column (struct table *t, const char *name)
{
  int c = csv_column (t->r.fields, t->r.nfields, name);
  if (c < 0) {
    pm_error ("%s:1: no '%s' column", t->path, name);
    t->errors++;
  }
  return c;
}

static bool
cell_double (struct table *t, int col, const char *name, double *out)
{
  const char *v = t->r.fields[col];
  if (parse_double (v, out) && isfinite (*out))
    return true;
  pm_error ("%s:%ld: column '%s': '%s' is not a number", t->path, t->r.line, name, v);
  t->errors++;
  return false;
}

static bool
cell_int (struct table *t, int col, const char *name, int64_t min, int64_t *out)
{
  if (csv_int (&t->r, (size_t) col, name, min, out))
    return true;
  t->errors++;
  return false;
}

/* A latency cell in the table's unit (scale to seconds): positive and
 * finite, or the row is bad.  Placeholder rows (0, inf) are the caller's. */
static bool
cell_latency (struct table *t, int col, double scale, double *out)
{
  if (!cell_double (t, col, "latency", out))
    return false;
  if (!(*out > 0)) {
    pm_error ("%s:%ld: latency '%s' is not positive", t->path, t->r.line, t->r.fields[col]);
    t->errors++;
    return false;
  }
  *out *= scale;
  return true;
}

/* The dtype a table's spelling names; -1 for the ones perfmod does not
 * model (weight-only int8/int4, smooth quant).  aiconfigurator's
 * fp8_static is fp8 with a per-tensor scale fixed ahead: the same GEMM
 * (on GB200's TensorRT-LLM 1.3.0rc10 table its 35,700 shapes take 1.000x
 * fp8's time, geometric mean), so it is read as fp8. */
static int
dtype_of_cell (const char *v)
{
  static const struct { const char *name; int dtype; } names[] = {
    { "bfloat16", PERFMOD_DTYPE_BF16 }, { "bf16", PERFMOD_DTYPE_BF16 },
    { "float16", PERFMOD_DTYPE_FP16 }, { "half", PERFMOD_DTYPE_FP16 },
    { "fp16", PERFMOD_DTYPE_FP16 }, { "fp8", PERFMOD_DTYPE_FP8 },
    { "fp8_static", PERFMOD_DTYPE_FP8 }, { "fp8_block", PERFMOD_DTYPE_FP8_BLOCK },
    { "nvfp4", PERFMOD_DTYPE_NVFP4 },
    { "float32", PERFMOD_DTYPE_FP32 }, { "fp32", PERFMOD_DTYPE_FP32 },
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp (v, names[i].name) == 0)
      return names[i].dtype;
  return -1;
}

/* A row of a dtype perfmod does not model, left out: counted, its name
 * remembered (the first 8 names; a hostile table's thousands end in
 * "..."), for the one line mdata_load says. */
static void
unmodelled (struct table *t, const char *dtype)
{
  struct kset *s = t->s;
  size_t n = strlen (dtype), names = 0;
  const char *p = s->unmodelled_names;
  s->unmodelled++;
  for (; p && *p; p = strstr (p, ", ") ? strstr (p, ", ") + 2 : NULL, names++)
    if (strcmp (p, "...") == 0 ||
        (strncmp (p, dtype, n) == 0 && (p[n] == ',' || p[n] == '\0')))
      return;
  char *all = xasprintf ("%s%s%.32s", s->unmodelled_names ? s->unmodelled_names : "",
                         s->unmodelled_names ? ", " : "", names < 8 ? dtype : "...");
  free (s->unmodelled_names);
  s->unmodelled_names = all;
}

static bool
keep (const struct table *t, const struct krow *k)
{
  if (t->f && t->f->dtype >= 0 && k->dtype != t->f->dtype)
    return false;
  if (t->f && !gpu_listed (t->f->gpus, k->gpu))
    return false;
  return true;
}

static void
push (struct table *t, struct krow *k)
{
  k->file = t->path;
  k->line = t->r.line;
  k->set = t->set;
  k->nmeas = 1;
  if (!keep (t, k))
    return;
  if (t->s->n == t->s->cap) {
    t->s->cap = t->s->cap ? 2 * t->s->cap : 65536;
    t->s->v = xrealloc (t->s->v, t->s->cap * sizeof *t->s->v);
  }
  t->s->v[t->s->n++] = *k;
}

/* The row's GPU: its device column when the table has one, else the GPU
 * the path names. */
static const struct gpu_entry *
row_gpu (struct table *t, int col)
{
  const struct gpu_entry *g;
  if (col < 0) {
    if (t->path_gpu == NULL) {
      pm_error ("%s: no device column and no GPU in gpus.d named by the path", t->path);
      t->errors++;
    }
    return t->path_gpu;
  }
  g = gpu_db_find (t->gpus, t->r.fields[col]);
  if (g == NULL) {
    pm_error ("%s:%ld: device '%s' is not in gpus.d (add it or an alias)", t->path, t->r.line,
              t->r.fields[col]);
    t->errors++;
    t->fatal = true;
  }
  return g;
}

/* aiconfigurator gemm_perf: y(m, n) = x(m, k) w(n, k)^T, so perfmod's
 * LINEAR (M, N, K) is (m, k, n).  m = 0 rows launch no work and are left
 * out (the stated rule of doc/precision.md). */
static void
read_gemm (struct table *t)
{
  int cd = csv_column (t->r.fields, t->r.nfields, "device");
  int ct = need_column (t, "gemm_dtype"), cm = need_column (t, "m"), cn = need_column (t, "n");
  int ck = need_column (t, "k"), cl = need_column (t, "latency");
  if (t->errors)
    return;
  while (next_row (t)) {
    struct krow k = { 0 };
    if ((k.dtype = dtype_of_cell (t->r.fields[ct])) < 0) {
      unmodelled (t, t->r.fields[ct]);
      continue;
    }
    if (!cell_int (t, cm, "m", 0, &k.m) || !cell_int (t, cn, "n", 0, &k.k) ||
        !cell_int (t, ck, "k", 0, &k.n))
      continue;
    if (k.m == 0 || k.n == 0 || k.k == 0)
      continue;
    if (!cell_latency (t, cl, 1e-3, &k.latency_s) || (k.gpu = row_gpu (t, cd)) == NULL)
      continue;
    k.kclass = PERFMOD_KERNEL_LINEAR;
    k.op = intern ("linear");
    k.b = 1;
    push (t, &k);
  }
}

/* context_attention_perf and generation_attention_perf: one fused
 * attention kernel.  A prefill attends isl tokens to themselves (causal);
 * a decode step attends one token to the isl + step cached ones, whose
 * bytes (the KV cache's dtype) are the work. */
static void
read_attention (struct table *t, bool decode)
{
  int cd = csv_column (t->r.fields, t->r.nfields, "device");
  int cb = need_column (t, "batch_size"), ci = need_column (t, "isl");
  int ch = need_column (t, "num_heads"), ckv = need_column (t, "num_key_value_heads");
  int chd = need_column (t, "head_dim"), cad = need_column (t, "attn_dtype");
  int ckd = need_column (t, "kv_cache_dtype"), cl = need_column (t, "latency");
  int cbw = csv_column (t->r.fields, t->r.nfields, "beam_width");
  int cs = csv_column (t->r.fields, t->r.nfields, "step");
  int cw = csv_column (t->r.fields, t->r.nfields, "window_size");
  if (t->errors)
    return;
  while (next_row (t)) {
    struct krow k = { 0 };
    int64_t isl, step = 0, beam = 1;
    if ((k.dtype = dtype_of_cell (t->r.fields[decode ? ckd : cad])) < 0) {
      unmodelled (t, t->r.fields[decode ? ckd : cad]);
      continue;
    }
    if (!cell_int (t, cb, "batch_size", 1, &k.b) || !cell_int (t, ci, "isl", 1, &isl) ||
        !cell_int (t, ch, "num_heads", 1, &k.h) ||
        !cell_int (t, ckv, "num_key_value_heads", 1, &k.kv_heads) ||
        !cell_int (t, chd, "head_dim", 1, &k.k) ||
        (cs >= 0 && !cell_int (t, cs, "step", 0, &step)) ||
        (cbw >= 0 && !cell_int (t, cbw, "beam_width", 1, &beam)) ||
        (cw >= 0 && !cell_int (t, cw, "window_size", 0, &k.window)))
      continue;
    if (beam != 1)
      continue;
    if (!cell_latency (t, cl, 1e-3, &k.latency_s) || (k.gpu = row_gpu (t, cd)) == NULL)
      continue;
    k.kclass = PERFMOD_KERNEL_ATTENTION;
    k.op = intern (decode ? "attention_decode" : "attention");
    k.m = decode ? 1 : isl;
    k.n = decode ? isl + step : isl;
    k.causal = !decode;
    push (t, &k);
  }
}

/* routing_powerlaw remembered by its inputs: a table's rows repeat them. */
struct load_memo {
  struct { int64_t t, e, k, ep; double alpha, load, reached; bool used; } v[1 << 14];
};

static double
load_memo_get (struct load_memo *m, int64_t t, int64_t e, int64_t k, int64_t ep, double alpha,
               double *reached)
{
  uint64_t h = (uint64_t) (t * 31 + e) * 1000003u + (uint64_t) (k * 131 + ep) * 7919u
               + (uint64_t) (alpha * 1000);
  size_t n = sizeof m->v / sizeof m->v[0], i = (size_t) (h % n);
  for (size_t probe = 0; probe < n; probe++, i = (i + 1) % n) {
    if (!m->v[i].used) {
      m->v[i].used = true;
      m->v[i].t = t, m->v[i].e = e, m->v[i].k = k, m->v[i].ep = ep, m->v[i].alpha = alpha;
      m->v[i].load = routing_powerlaw (t, e, k, ep, alpha, &m->v[i].reached);
      *reached = m->v[i].reached;
      return m->v[i].load;
    }
    if (m->v[i].t == t && m->v[i].e == e && m->v[i].k == k && m->v[i].ep == ep &&
        m->v[i].alpha == alpha) {
      *reached = m->v[i].reached;
      return m->v[i].load;
    }
  }
  return routing_powerlaw (t, e, k, ep, alpha, reached);
}

static bool table_listed (const struct mdata_filter *f, const char *name);

/* aiconfigurator moe_perf: one fused MoE layer (routing's permutation,
 * the routed experts' grouped GEMMs and activation, the weighted sum)
 * over num_tokens tokens, a MOE kernel (perfmod-plugin.h): bf16, fp8 and
 * block-scaled fp8, and w4a16_mxfp4 (GPT-OSS's MXFP4 experts widened to
 * bf16: weight_bytes MXFP4's) as bf16 with those weights; m tokens, n
 * hidden width, k intermediate width over the expert tensor-parallel
 * degree, b experts, h those of one expert-parallel rank; the engine from
 * the framework column, gated unless the kernel source says "nongated".
 * Each engine's rows stay apart: their kernels (TensorRT-LLM's CUTLASS,
 * SGLang's and vLLM's Triton) and their harnesses differ by more than
 * their versions do.  Balanced rows are table "moe"; the power-law rows
 * are table "moe_powerlaw", with the busiest rank's expected load
 * (routing_powerlaw) as the kernel's expert_load. */
static void
read_moe (struct table *t)
{
  int cd = csv_column (t->r.fields, t->r.nfields, "device");
  int cfw = need_column (t, "framework"), cks = need_column (t, "kernel_source");
  int ct = need_column (t, "moe_dtype"), cn = need_column (t, "num_tokens");
  int ch = need_column (t, "hidden_size"), ci = need_column (t, "inter_size");
  int ck = need_column (t, "topk"), ce = need_column (t, "num_experts");
  int ctp = need_column (t, "moe_tp_size"), cep = need_column (t, "moe_ep_size");
  int cdist = need_column (t, "distribution"), cl = need_column (t, "latency");
  bool balanced_wanted = table_listed (t->f, "moe");
  bool powerlaw_wanted = table_listed (t->f, "moe_powerlaw");
  struct load_memo *memo = NULL;
  const char *balanced = t->set, *powerlaw = intern ("moe_powerlaw");
  if (t->errors)
    return;
  while (next_row (t)) {
    struct krow k = { 0 };
    int64_t tp, ep, inter;
    char eng[16], *end;
    size_t i;
    const char *dist = t->r.fields[cdist];
    double alpha = 0;
    if (strcmp (dist, "balanced") == 0) {
      if (!balanced_wanted)
        continue;
    }
    else if (strncmp (dist, "power_law_", 10) == 0) {
      alpha = strtod (dist + 10, &end);
      if (!powerlaw_wanted || end == dist + 10 || *end || !(alpha > 1) || alpha > 10)
        continue;
    }
    else
      continue;
    if (strcmp (t->r.fields[ct], "w4a16_mxfp4") == 0) {
      k.dtype = PERFMOD_DTYPE_BF16;    /* MXFP4 experts widened to bf16 in the kernel */
      k.weight_bytes = MXFP4_WEIGHT_BYTES;
    }
    else if ((k.dtype = dtype_of_cell (t->r.fields[ct])) < 0 || k.dtype == PERFMOD_DTYPE_NVFP4) {
      unmodelled (t, k.dtype < 0 ? t->r.fields[ct] : "nvfp4 MoE layers");
      continue;
    }
    if (!cell_int (t, cn, "num_tokens", 1, &k.m) || !cell_int (t, ch, "hidden_size", 1, &k.n) ||
        !cell_int (t, ci, "inter_size", 1, &inter) || !cell_int (t, ce, "num_experts", 1, &k.b) ||
        !cell_int (t, ck, "topk", 1, &k.top_k) || !cell_int (t, ctp, "moe_tp_size", 1, &tp) ||
        !cell_int (t, cep, "moe_ep_size", 1, &ep))
      continue;
    if (k.b % ep != 0 || inter % tp != 0 || k.top_k > k.b || tp > 1024 || ep > 1024)
      continue;                 /* a layout that does not split evenly: not a shape to check */
    if (!cell_latency (t, cl, 1e-3, &k.latency_s) || (k.gpu = row_gpu (t, cd)) == NULL)
      continue;
    for (i = 0; i + 1 < sizeof eng && t->r.fields[cfw][i]; i++)
      eng[i] = (char) tolower ((unsigned char) t->r.fields[cfw][i]);
    eng[i] = '\0';
    k.kclass = PERFMOD_KERNEL_MOE;
    k.op = intern ("moe");
    k.engine = intern (eng);
    k.gated = strstr (t->r.fields[cks], "nongated") == NULL;
    k.k = inter / tp;
    k.h = k.b / ep;
    k.window = tp;
    k.ranks = (int) ep;
    k.expert_load = 1;
    t->set = balanced;
    if (alpha > 0) {
      if (memo == NULL)
        memo = xcalloc (1, sizeof *memo);
      k.expert_load = load_memo_get (memo, k.m, k.b, k.top_k, ep, alpha, &k.experts_reached);
      t->set = powerlaw;
    }
    push (t, &k);
  }
  t->set = balanced;
  free (memo);
}

/* aiconfigurator nccl_perf: message_size counts elements of nccl_dtype
 * (half: 2 bytes).  The GPU the path names, else the device column's (one
 * shared table's device column holds sizes; a user's own table, written by
 * scripts/calibrate-bench.py, may sit in a folder of any name). */
static void
read_nccl (struct table *t)
{
  int cd = t->path_gpu ? -1 : csv_column (t->r.fields, t->r.nfields, "device");
  int co = need_column (t, "op_name"), ct = need_column (t, "nccl_dtype");
  int cg = need_column (t, "num_gpus"), cs = need_column (t, "message_size");
  int cl = need_column (t, "latency");
  if (t->errors)
    return;
  while (next_row (t)) {
    struct krow k = { 0 };
    int64_t ranks, elems;
    const char *dt = t->r.fields[ct];
    /* int8 rows move the same bytes as fp8 would, but perfmod has no int8:
     * the half rows are the collectives training runs */
    if ((k.dtype = dtype_of_cell (dt)) < 0) {
      unmodelled (t, dt);
      continue;
    }
    if (!cell_int (t, cg, "num_gpus", 2, &ranks) || !cell_int (t, cs, "message_size", 1, &elems) ||
        !cell_latency (t, cl, 1e-3, &k.latency_s) || (k.gpu = row_gpu (t, cd)) == NULL)
      continue;
    k.kclass = PERFMOD_KERNEL_COMM;
    k.op = intern (t->r.fields[co]);
    k.ranks = (int) ranks;
    k.bytes = (double) elems * dtype_bytes (k.dtype);
    push (t, &k);
  }
}

/* The GPUs a node of aiconfigurator's system has (its <system>.yaml beside
 * the system's folder: node: num_gpus_per_node), for a table under
 * .../aiconfigurator/<system>/...; 0 if the file does not say. */
static int
aic_gpus_per_node (const char *path)
{
  const char *at = strstr (path, "/aiconfigurator/"), *sys, *end;
  char *yaml, line[512];
  FILE *fp;
  int n = 0;
  if (at == NULL)
    return 0;
  sys = at + strlen ("/aiconfigurator/");
  if ((end = strchr (sys, '/')) == NULL)
    return 0;
  yaml = xasprintf ("%.*s/%.*s.yaml", (int) (sys - 1 - path), path, (int) (end - sys), sys);
  if ((fp = fopen (yaml, "r")) != NULL) {
    while (fgets (line, sizeof line, fp))
      if (sscanf (line, " num_gpus_per_node: %d", &n) == 1)
        break;
    fclose (fp);
  }
  free (yaml);
  return n > 0 && n <= 1024 ? n : 0;
}

/* aiconfigurator's DeepEP tables (wideep_deepep_normal_perf,
 * wideep_deepep_ll_perf): a row per shape, dispatch and combine times in
 * microseconds; node_num nodes of the system's GPUs per node; the
 * normal kernels on dispatch_sms / combine_sms SMs.  Two COMM rows each
 * (physics.h: phys_deepep_time).  The kernel keeps the rank count alone:
 * its nodes are gpus.d's (NVLink domains: GB200's 72), so GB200 rows
 * of several 4-GPU trays would be costed as one domain (its tables
 * have one tray). */
static void
read_deepep (struct table *t, bool ll)
{
  int cn = need_column (t, "node_num"), ch = need_column (t, "hidden_size");
  int ct = need_column (t, "num_token"), ck = need_column (t, "num_topk");
  int ce = need_column (t, "num_experts"), cdev = need_column (t, "device");
  int cd = need_column (t, ll ? "dispatch_avg_t_us" : "dispatch_transmit_us");
  int cc = need_column (t, ll ? "combine_avg_t_us" : "combine_transmit_us");
  int cds = ll ? -1 : need_column (t, "dispatch_sms"), ccs = ll ? -1 : need_column (t, "combine_sms");
  int cdn = ll ? -1 : need_column (t, "dispatch_notify_us");
  int ccn = ll ? -1 : need_column (t, "combine_notify_us");
  int per_node = aic_gpus_per_node (t->path);
  if (t->errors)
    return;
  while (next_row (t)) {
    int64_t nodes, hidden, tokens, topk, experts, sms[2] = { 0, 0 }, ranks;
    double us[2], notify[2] = { 0, 0 };
    const struct gpu_entry *g;
    if (!cell_int (t, cn, "node_num", 1, &nodes) || !cell_int (t, ch, "hidden_size", 1, &hidden) ||
        !cell_int (t, ct, "num_token", 1, &tokens) || !cell_int (t, ck, "num_topk", 1, &topk) ||
        !cell_int (t, ce, "num_experts", 1, &experts) ||
        !cell_latency (t, cd, 1e-6, &us[0]) || !cell_latency (t, cc, 1e-6, &us[1]) ||
        (!ll && (!cell_int (t, cds, "dispatch_sms", 1, &sms[0]) ||
                 !cell_int (t, ccs, "combine_sms", 1, &sms[1]) ||
                 !cell_double (t, cdn, "dispatch_notify_us", &notify[0]) ||
                 !cell_double (t, ccn, "combine_notify_us", &notify[1]))) ||
        (g = row_gpu (t, cdev)) == NULL)
      continue;
    ranks = nodes * (per_node ? per_node : g->gpu.gpus_per_node);
    if (topk > experts || nodes > 65536 || ranks < 2) {
      if (topk > experts)
        pm_error ("%s:%ld: num_topk %lld above num_experts %lld", t->path, t->r.line,
                  (long long) topk, (long long) experts);
      else
        pm_error ("%s:%ld: node_num %lld: %lld GPUs, not an expert-parallel group", t->path,
                  t->r.line, (long long) nodes, (long long) ranks);
      t->errors++;
      continue;
    }
    for (int dir = 0; dir < 2; dir++) {
      struct krow k = { 0 };
      k.kclass = PERFMOD_KERNEL_COMM;
      k.gpu = g;
      k.op = intern (phys_deepep_ops[ll][dir]);
      k.dtype = dir ? PERFMOD_DTYPE_BF16 : PERFMOD_DTYPE_FP8;
      k.m = tokens;
      k.k = hidden;
      k.top_k = topk;
      k.h = experts;
      k.b = sms[dir];
      k.ranks = (int) ranks;
      k.bytes = (double) tokens * (double) topk * (double) hidden * dtype_bytes (k.dtype);
      k.latency_s = us[dir] + fmax (0, notify[dir]) * 1e-6;
      push (t, &k);
    }
  }
}

/* vidur network/NAME/: all_reduce.csv, send_recv.csv, sizes in fp16 elements,
 * one row per rank.  Runs that crossed nodes (devices_per_node <
 * num_workers) are left out: the NCCL tables are single-node too. */
static void
read_vidur_network (struct table *t)
{
  int cc = need_column (t, "collective"), cw = need_column (t, "num_workers");
  int cs = need_column (t, "size"), cd = need_column (t, "devices_per_node");
  int cl = -1;
  for (size_t i = 0; i < t->r.nfields; i++) {
    size_t n = strlen (t->r.fields[i]);
    if (n > 7 && strcmp (t->r.fields[i] + n - 7, ".median") == 0)
      cl = (int) i;
  }
  if (cl < 0) {
    pm_error ("%s:1: no 'time_stats.*.median' column", t->path);
    t->errors++;
  }
  if (t->errors)
    return;
  while (next_row (t)) {
    struct krow k = { 0 };
    int64_t workers, elems, per_node;
    if (!cell_int (t, cw, "num_workers", 2, &workers) || !cell_int (t, cs, "size", 1, &elems) ||
        !cell_int (t, cd, "devices_per_node", 1, &per_node) ||
        !cell_latency (t, cl, 1e-3, &k.latency_s) || (k.gpu = row_gpu (t, -1)) == NULL)
      continue;
    if (per_node < workers)
      continue;
    k.kclass = PERFMOD_KERNEL_COMM;
    k.op = intern (t->r.fields[cc]);
    k.dtype = PERFMOD_DTYPE_FP16;
    k.ranks = (int) workers;
    k.bytes = 2.0 * (double) elems;
    push (t, &k);
  }
}

/* vidur compute/<gpu>/<org>/<model>/mlp.csv: one row per token count and
 * tensor-parallel degree, the median time of each of a layer's ops. */
static void
read_vidur_layer (struct table *t)
{
  static const char *const ops[] = { "emb", "input_layernorm", "attn_pre_proj", "attn_rope",
                                     "attn_post_proj", "post_attention_layernorm",
                                     "mlp_up_proj", "mlp_act", "mlp_down_proj", "add" };
  enum { NOPS = sizeof ops / sizeof ops[0] };
  int cop[NOPS];
  int chd = need_column (t, "n_head"), ckv = need_column (t, "n_kv_head");
  int ce = need_column (t, "n_embd"), cx = need_column (t, "n_expanded_embd");
  int cg = need_column (t, "use_gated_mlp"), ctok = need_column (t, "num_tokens");
  int ctp = need_column (t, "num_tensor_parallel_workers");
  for (int i = 0; i < NOPS; i++) {
    char *name = xasprintf ("time_stats.%s.median", ops[i]);
    cop[i] = csv_column (t->r.fields, t->r.nfields, name);
    free (name);
  }
  if (t->errors)
    return;
  while (next_row (t)) {
    int64_t heads, kvh, d, x, tokens, tp;
    bool gated;
    if (!cell_int (t, chd, "n_head", 1, &heads) || !cell_int (t, ckv, "n_kv_head", 1, &kvh) ||
        !cell_int (t, ce, "n_embd", 1, &d) || !cell_int (t, cx, "n_expanded_embd", 1, &x) ||
        !cell_int (t, ctok, "num_tokens", 1, &tokens) ||
        !cell_int (t, ctp, "num_tensor_parallel_workers", 1, &tp))
      continue;
    gated = strcmp (t->r.fields[cg], "True") == 0 || strcmp (t->r.fields[cg], "true") == 0;
    int64_t hd = d / heads, qkv = (heads + 2 * kvh) * hd / tp, up = (gated ? 2 : 1) * x / tp;
    for (int i = 0; i < NOPS; i++) {
      struct krow k = { 0 };
      const char *name = ops[i];
      if (cop[i] < 0 || t->r.fields[cop[i]][0] == '\0')
        continue;
      if (!cell_latency (t, cop[i], 1e-3, &k.latency_s))
        break;
      k.gpu = t->path_gpu;
      k.dtype = PERFMOD_DTYPE_FP16;
      k.b = 1;
      if (strstr (name, "_proj")) {
        /* (tokens x N) through a Linear(N -> K), sharded as Megatron does */
        static const char *const proj[] = { "attn_pre_proj", "attn_post_proj", "mlp_up_proj",
                                            "mlp_down_proj" };
        int64_t nk[4][2] = { { d, qkv }, { heads * hd / tp, d }, { d, up }, { x / tp, d } };
        for (int j = 0; j < 4; j++)
          if (strcmp (name, proj[j]) == 0) {
            k.n = nk[j][0];
            k.k = nk[j][1];
          }
        k.kclass = PERFMOD_KERNEL_LINEAR;
        k.m = tokens;
        k.op = intern (name);
      }
      else if (strstr (name, "layernorm")) {
        k.kclass = PERFMOD_KERNEL_LAYERNORM;
        k.b = tokens;
        k.h = d;
        k.op = intern (name);
      }
      else if (strcmp (name, "emb") == 0) {
        k.kclass = PERFMOD_KERNEL_MEMORY;
        k.op = intern ("emb");
        k.b = tokens;
        k.h = d;
        k.bytes = 2.0 * 2.0 * (double) tokens * (double) d; /* gather: read and write */
      }
      else {
        k.kclass = PERFMOD_KERNEL_ELEMENTWISE;
        k.b = tokens;
        k.h = strcmp (name, "attn_rope") == 0 ? (heads + kvh) * hd / tp
            : strcmp (name, "mlp_act") == 0 ? x / tp : d;
        k.op = intern (strcmp (name, "mlp_act") == 0 ? (gated ? "silu_mul" : "gelu")
                       : strcmp (name, "attn_rope") == 0 ? "rope" : "add");
      }
      push (t, &k);
    }
  }
}

/* aiconfigurator mla_bmm_perf: the two batched products of MLA's absorbed
 * decode (builder.c, mla_attention), one per head over the step's tokens:
 * mla_gen_pre takes the queries' no-rope part (128 wide) into the latent
 * (512 wide, W_UK), mla_gen_post the latent context out to the value
 * width (128, W_UV): DeepSeek-V3's widths, fixed in the collectors.  fp8
 * is a kernel of the framework's: SGLang's sgl_kernel bmm_fp8 scales per
 * tensor (fp8), TensorRT-LLM's fp8_block_scaling_bmm per 1 x 128 / 128 x
 * 128 block (fp8_block), each timed with its activations' quantisation;
 * TensorRT-LLM's Blackwell kernel dequantises the fp8 weights to a bf16
 * product, which no dtype of perfmod's describes: left out. */
static void
read_mla_bmm (struct table *t)
{
  int cd = csv_column (t->r.fields, t->r.nfields, "device");
  int cfw = need_column (t, "framework"), cop = need_column (t, "op_name");
  int cks = need_column (t, "kernel_source"), ct = need_column (t, "bmm_dtype");
  int cn = need_column (t, "num_tokens"), ch = need_column (t, "num_heads");
  int cl = need_column (t, "latency");
  if (t->errors)
    return;
  while (next_row (t)) {
    struct krow k = { 0 };
    const char *op = t->r.fields[cop];
    bool pre = strcmp (op, "mla_gen_pre") == 0;
    if (!pre && strcmp (op, "mla_gen_post") != 0) {
      pm_error ("%s:%ld: op_name '%s': expected mla_gen_pre or mla_gen_post", t->path,
                t->r.line, op);
      t->errors++;
      continue;
    }
    if ((k.dtype = dtype_of_cell (t->r.fields[ct])) < 0) {
      unmodelled (t, t->r.fields[ct]);
      continue;
    }
    if (k.dtype == PERFMOD_DTYPE_FP8) {
      if (strstr (t->r.fields[cks], "dequant")) {
        unmodelled (t, "fp8 dequantised to bf16");
        continue;
      }
      if (strcasecmp (t->r.fields[cfw], "trtllm") == 0)
        k.dtype = PERFMOD_DTYPE_FP8_BLOCK;
    }
    if (!cell_int (t, cn, "num_tokens", 1, &k.m) || !cell_int (t, ch, "num_heads", 1, &k.b))
      continue;
    if (!cell_latency (t, cl, 1e-3, &k.latency_s) || (k.gpu = row_gpu (t, cd)) == NULL)
      continue;
    k.kclass = PERFMOD_KERNEL_BMM;
    k.op = intern (pre ? "mla_bmm_pre" : "mla_bmm_post");
    k.n = pre ? 128 : 512;      /* the inner width */
    k.k = pre ? 512 : 128;      /* the output's */
    push (t, &k);
  }
}

/* aiter *bf16_tuned_*gemm*.csv: the tuned kernel's time in microseconds;
 * gfx and cu_num name the GPU (gpus.d alias "gfx942/304"). */
static void
read_aiter (struct table *t)
{
  int cgfx = need_column (t, "gfx"), ccu = need_column (t, "cu_num");
  int cm = need_column (t, "M"), cn = need_column (t, "N"), ck = need_column (t, "K");
  int cus = need_column (t, "us"), cb = csv_column (t->r.fields, t->r.nfields, "B");
  if (t->errors)
    return;
  while (next_row (t)) {
    struct krow k = { 0 };
    double us;
    char *dev;
    /* placeholders, 0 and inf: the README says to skip them */
    {                            /* inf, Inf, nan or 0, however spelt */
      char *end;
      double v = strtod (t->r.fields[cus], &end);
      if (end != t->r.fields[cus] && *end == '\0' && (isinf (v) || isnan (v) || v == 0))
        continue;
    }
    if (!cell_double (t, cus, "us", &us))
      continue;
    if (us < 0) {
      pm_error ("%s:%ld: column 'us': '%s' is negative", t->path, t->r.line, t->r.fields[cus]);
      t->errors++;
      continue;
    }
    if (!cell_int (t, cm, "M", 1, &k.m) || !cell_int (t, cn, "N", 1, &k.k) ||
        !cell_int (t, ck, "K", 1, &k.n) || (cb >= 0 && !cell_int (t, cb, "B", 1, &k.b)))
      continue;
    dev = xasprintf ("%s/%s", t->r.fields[cgfx], t->r.fields[ccu]);
    k.gpu = gpu_db_find (t->gpus, dev);
    if (k.gpu == NULL) {        /* aiter's tables mix chips: keep the ones gpus.d knows */
      if (t->skipped++ == 0) {
        t->unknown = dev;
        t->unknown_line = t->r.line;
      }
      else
        free (dev);
      continue;
    }
    free (dev);
    k.kclass = cb >= 0 ? PERFMOD_KERNEL_BMM : PERFMOD_KERNEL_LINEAR;
    k.op = intern (cb >= 0 ? "bmm" : "linear");
    if (cb < 0)
      k.b = 1;
    k.dtype = PERFMOD_DTYPE_BF16;
    k.latency_s = us * 1e-6;
    push (t, &k);
  }
}

/* LLMCompass matmul_<GPU>.csv: no header; M, N, K, "0.19ms", "101.7Tflops",
 * an fp16 (M, K) x (K, N) product. */
static void
read_llmcompass (struct table *t, bool first_is_data)
{
  bool have = first_is_data;
  while (have ? more (t) : next_row (t)) {
    struct krow k = { 0 };
    char *end;
    have = false;
    for (size_t i = 0; i < t->r.nfields; i++)
      t->r.fields[i] = trim (t->r.fields[i]);
    if (t->r.nfields < 4) {
      pm_error ("%s:%ld: %zu fields, expected M, N, K, time", t->path, t->r.line, t->r.nfields);
      t->errors++;
      continue;
    }
    if (!cell_int (t, 0, "M", 1, &k.m) || !cell_int (t, 1, "N", 1, &k.k) ||
        !cell_int (t, 2, "K", 1, &k.n))
      continue;
    k.latency_s = strtod (t->r.fields[3], &end);
    if (end == t->r.fields[3] || strcmp (end, "ms") != 0 || !(k.latency_s > 0)) {
      pm_error ("%s:%ld: time '%s' is not a positive number of ms ('0.19ms')", t->path,
                t->r.line, t->r.fields[3]);
      t->errors++;
      continue;
    }
    k.latency_s *= 1e-3;
    if ((k.gpu = row_gpu (t, -1)) == NULL)
      continue;
    k.kclass = PERFMOD_KERNEL_LINEAR;
    k.op = intern ("linear");
    k.b = 1;
    k.dtype = PERFMOD_DTYPE_FP16;
    push (t, &k);
  }
}

/* The GPU a path names: the last component (or its stem, or the part
 * before its first '_', or after its last '_') that gpus.d knows. */
static const struct gpu_entry *
gpu_of_path (const struct gpu_db *gpus, const char *path)
{
  char *p = xstrdup (path), *comp[64];
  int n = 0;
  const struct gpu_entry *g = NULL;
  for (char *tok = strtok (p, "/"); tok && n < 64; tok = strtok (NULL, "/"))
    comp[n++] = tok;
  for (int i = n - 1; i >= 0 && g == NULL; i--) {
    char *c = comp[i], *dot = strstr (c, ".csv"), *us;
    if (dot)
      *dot = '\0';
    if ((g = gpu_db_find (gpus, c)) != NULL)
      break;
    if ((us = strrchr (c, '_')) != NULL && (g = gpu_db_find (gpus, us + 1)) != NULL)
      break;
    if ((us = strchr (c, '_')) != NULL) {
      *us = '\0';
      g = gpu_db_find (gpus, c);
    }
  }
  free (p);
  return g;
}

static bool
ends_with (const char *s, const char *suffix)
{
  size_t n = strlen (s), m = strlen (suffix);
  return n >= m && strcmp (s + n - m, suffix) == 0;
}

/* Which reader a file name calls for: 0 none. */
enum kind { K_NONE, K_GEMM, K_CTX, K_GEN, K_NCCL, K_VNET, K_VLAYER, K_AITER, K_LLMC, K_MOE,
            K_DEEPEP, K_DEEPEP_LL, K_MLA_BMM };
static enum kind
kind_of (const char *path)
{
  const char *base = strrchr (path, '/');
  base = base ? base + 1 : path;
  if (strcmp (base, "gemm_perf.csv.gz") == 0 || strcmp (base, "gemm_perf.csv") == 0)
    return K_GEMM;
  if (strncmp (base, "context_attention_perf.csv", 26) == 0)
    return K_CTX;
  if (strncmp (base, "generation_attention_perf.csv", 29) == 0)
    return K_GEN;
  if (strncmp (base, "nccl_perf.csv", 13) == 0)
    return K_NCCL;
  if (strncmp (base, "moe_perf.csv", 12) == 0)
    return K_MOE;
  if (strncmp (base, "mla_bmm_perf.csv", 16) == 0)
    return K_MLA_BMM;
  if (strncmp (base, "wideep_deepep_normal_perf.csv", 29) == 0)
    return K_DEEPEP;
  if (strncmp (base, "wideep_deepep_ll_perf.csv", 25) == 0)
    return K_DEEPEP_LL;
  if (strstr (path, "profiling/network/") &&
      (strcmp (base, "all_reduce.csv") == 0 || strcmp (base, "send_recv.csv") == 0))
    return K_VNET;
  if (strstr (path, "profiling/compute/") && strcmp (base, "mlp.csv") == 0)
    return K_VLAYER;
  if (strstr (base, "bf16_tuned_") && strstr (base, "gemm") && ends_with (base, ".csv"))
    return K_AITER;
  if (strncmp (base, "matmul_", 7) == 0 && ends_with (base, ".csv"))
    return K_LLMC;
  return K_NONE;
}

static const char *const kind_set[] = { NULL, "gemm", "context_attention",
                                        "generation_attention", "nccl", "vidur_comm",
                                        "vidur_layer", "aiter_gemm", "llmcompass_gemm", "moe",
                                        "deepep", "deepep", "mla_bmm" };
const char *const mdata_tables[] = { "gemm", "context_attention", "generation_attention", "nccl",
                                     "vidur_comm", "vidur_layer", "aiter_gemm",
                                     "llmcompass_gemm", "moe", "moe_powerlaw", "deepep", "mla_bmm",
                                     NULL };

/* Whether the filter keeps rows of set `name`. */
static bool
table_listed (const struct mdata_filter *f, const char *name)
{
  if (f == NULL || f->tables == NULL)
    return true;
  for (char **t = f->tables; *t; t++)
    if (strcmp (*t, name) == 0)
      return true;
  return false;
}

static bool
table_wanted (const struct mdata_filter *f, enum kind kind)
{
  if (kind == K_MOE)
    return table_listed (f, "moe") || table_listed (f, "moe_powerlaw");
  return table_listed (f, kind_set[kind]);
}

static int
read_table (struct kset *s, const char *path, enum kind kind, const struct gpu_db *gpus,
            const struct mdata_filter *f)
{
  struct table t = { .s = s, .gpus = gpus, .f = f };
  size_t before = s->n;
  int rc;
  t.path = intern (path);
  t.set = intern (kind_set[kind]);
  t.path_gpu = gpu_of_path (gpus, path);
  if (f && t.path_gpu && !gpu_listed (f->gpus, t.path_gpu) &&
      (kind == K_NCCL || kind == K_VNET || kind == K_VLAYER || kind == K_LLMC))
    return 0;                   /* the path names another GPU: nothing to keep */
  if (t.path_gpu == NULL && (kind == K_VNET || kind == K_VLAYER || kind == K_LLMC)) {
    pm_error ("%s: no device column and no GPU in gpus.d named by the path", path);
    return -1;
  }
  if (csv_open (&t.r, path) < 0) {
    pm_error ("%s: %s", path, strerror (errno));
    return -1;
  }
  if ((rc = csv_next (&t.r)) != 1) {
    if (rc == 0)
      pm_error ("%s: empty file (no header)", path);
    csv_close (&t.r);
    return -1;
  }
  t.ncols = kind == K_LLMC ? 0 : t.r.nfields;
  switch (kind) {
  case K_GEMM: read_gemm (&t); break;
  case K_CTX: read_attention (&t, false); break;
  case K_GEN: read_attention (&t, true); break;
  case K_NCCL: read_nccl (&t); break;
  case K_VNET: read_vidur_network (&t); break;
  case K_VLAYER: read_vidur_layer (&t); break;
  case K_AITER: read_aiter (&t); break;
  case K_LLMC: read_llmcompass (&t, true); break;
  case K_MOE: read_moe (&t); break;
  case K_DEEPEP: read_deepep (&t, false); break;
  case K_DEEPEP_LL: read_deepep (&t, true); break;
  case K_MLA_BMM: read_mla_bmm (&t); break;
  default: break;
  }
  csv_close (&t.r);
  if (t.skipped && !(f && f->gpus))   /* said: these rows are lost (a --gpu leaves them out anyway) */
    pm_error ("%s: %zu row%s of a device gpus.d does not know left out (the first, line %ld: "
              "'%s'; a gpus.d alias reads them)", path, t.skipped, t.skipped == 1 ? "" : "s",
              t.unknown_line, t.unknown);
  free (t.unknown);
  return kset_file_done (s, path, before, t.errors) < 0 ? -1 : 1;
}

/* Depth-first over dir in sorted order, each directory and table once
 * however many links reach it; counts the tables known. */
static int
walk (struct kset *s, const char *dir, const struct gpu_db *gpus, const struct mdata_filter *f,
      int *errors, int depth, struct visited *seen)
{
  int tables = 0;
  char **files, **subs;
  if (!visited_add (seen, dir))
    return 0;                   /* reached again through a link */
  files = list_dir (dir, "");
  subs = list_subdirs (dir);
  for (char **p = files; p && *p; p++) {
    enum kind kind = kind_of (*p);
    int rc;
    if (kind == K_NONE || !visited_add (seen, *p))
      continue;
    tables++;                   /* known, even when not wanted: this is the modern data */
    if (!table_wanted (f, kind))
      continue;
    rc = read_table (s, *p, kind, gpus, f);
    if (rc < 0)
      (*errors)++;
  }
  for (char **p = subs; p && *p && depth < 12; p++)
    tables += walk (s, *p, gpus, f, errors, depth + 1, seen);
  strv_free (files);
  strv_free (subs);
  return tables;
}

/* Rows of one shape are adjacent after sorting on everything but the
 * latency, the file and the line. */
static int
shape_cmp (const void *pa, const void *pb)
{
  const struct krow *a = pa, *b = pb;
  int c;
  /* interned strings by their text, not their address: the rows' order
   * (and with it a training's) must not depend on where the heap put them */
#define CMP(x) if (a->x != b->x) return a->x < b->x ? -1 : 1
#define CMPS(x) if ((c = strcmp (a->x ? a->x : "", b->x ? b->x : "")) != 0) return c
  CMP (gpu); CMPS (set); CMP (kclass); CMPS (op); CMP (dtype);
  CMP (b); CMP (m); CMP (n); CMP (k); CMP (h); CMP (kv_heads); CMP (window);
  CMP (causal); CMP (ranks); CMP (bytes);
  CMP (top_k); CMP (gated); CMPS (engine); CMP (expert_load); CMP (experts_reached);
  CMP (weight_bytes); CMP (latency_s);
#undef CMP
#undef CMPS
  return 0;
}

static bool
same_shape (const struct krow *a, const struct krow *b)
{
  return a->gpu == b->gpu && a->set == b->set && a->kclass == b->kclass && a->op == b->op &&
         a->dtype == b->dtype && a->b == b->b && a->m == b->m && a->n == b->n && a->k == b->k &&
         a->h == b->h && a->kv_heads == b->kv_heads && a->window == b->window &&
         a->causal == b->causal && a->ranks == b->ranks && a->bytes == b->bytes &&
         a->top_k == b->top_k && a->gated == b->gated && a->engine == b->engine &&
         a->expert_load == b->expert_load && a->experts_reached == b->experts_reached &&
         a->weight_bytes == b->weight_bytes;
}

/* One row per shape: the median of its measurements (kernel libraries,
 * framework versions, ranks), the first row's file:line. */
static void
median_per_shape (struct kset *s)
{
  size_t out = 0;
  if (s->n == 0)
    return;
  qsort (s->v, s->n, sizeof *s->v, shape_cmp);
  for (size_t i = 0; i < s->n;) {
    size_t j = i + 1;
    while (j < s->n && same_shape (&s->v[i], &s->v[j]))
      j++;
    struct krow r = s->v[i];
    size_t cnt = j - i;
    r.latency_s = cnt % 2 ? s->v[i + cnt / 2].latency_s
                          : 0.5 * (s->v[i + cnt / 2 - 1].latency_s + s->v[i + cnt / 2].latency_s);
    r.nmeas = (int) cnt;
    s->v[out++] = r;
    i = j;
  }
  s->n = out;
}

int
mdata_load (struct kset *s, const char *dir, const struct gpu_db *gpus,
            const struct mdata_filter *f)
{
  int errors = 0, tables;
  struct stat st;
  if (stat (dir, &st) == 0 && !S_ISDIR (st.st_mode)) {
    enum kind kind = kind_of (dir);
    if (kind == K_NONE)
      return 0;
    tables = 1;
    if (table_wanted (f, kind))
      errors = read_table (s, dir, kind, gpus, f) < 0;
  }
  else {
    struct visited seen = { NULL, 0, 0 };
    tables = walk (s, dir, gpus, f, &errors, 0, &seen);
    visited_free (&seen);
  }
  if (errors)
    return -1;
  if (s->unmodelled)            /* left out by rule: said once, how many and which */
    pm_error ("%s: %zu row%s of dtypes perfmod does not model left out (%s)", dir,
              s->unmodelled, s->unmodelled == 1 ? "" : "s", s->unmodelled_names);
  if (!(f && f->raw))
    median_per_shape (s);
  return tables;
}

bool
gpu_listed (const struct gpu_entry *const *list, const struct gpu_entry *g)
{
  if (list == NULL)
    return true;
  for (; *list; list++)
    if (*list == g)
      return true;
  return false;
}

/* FNV-1a over the shape and the GPU's name, mixed with the seed: the same
 * row lands on the same side of a split in every run and on every host. */
bool
krow_holdout (const struct krow *r, uint64_t seed)
{
  uint64_t h = 1469598103934665603ULL ^ seed;
  const char *names[3] = { r->gpu ? r->gpu->name : "", r->set ? r->set : "", r->op ? r->op : "" };
  int64_t v[11] = { r->kclass, r->dtype, r->b, r->m, r->n, r->k, r->h, r->kv_heads, r->window,
                    r->ranks, (int64_t) r->bytes };
  for (int i = 0; i < 3; i++)
    for (const char *c = names[i]; *c; c++)
      h = (h ^ (unsigned char) *c) * 1099511628211ULL;
  for (int i = 0; i < 11; i++)
    for (int j = 0; j < 8; j++)
      h = (h ^ (uint64_t) ((v[i] >> (8 * j)) & 0xff)) * 1099511628211ULL;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return h % 5 == 0;
}
