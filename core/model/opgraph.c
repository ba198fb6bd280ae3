/* opgraph.c: import NeuSight's traced operator graphs (CSV with Python-literal kernel lists). */
#include <config.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <errno.h>
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static double
shape_elems (const struct pyv *shape)
{
  double e = 1;
  if (shape->type == PYV_INT)
    return (double) shape->i;
  for (size_t i = 0; i < shape->n; i++)
    e *= (double) shape->items[i].i;
  return e;
}

static bool
is_int_list (const struct pyv *v, size_t n)
{
  if (v->type != PYV_LIST || (n && v->n != n))
    return false;
  for (size_t i = 0; i < v->n; i++)
    if (v->items[i].type != PYV_INT)
      return false;
  return true;
}

/* Every integer in args, nested shapes too, from min to PM_MAX_DIM; else
 * false after naming the kernel (or column) and where. */
static bool
dims_ok (const struct pyv *args, const char *kernel, int64_t min, const char *where)
{
  for (size_t i = 0; i < args->n; i++) {
    const struct pyv *v = &args->items[i];
    if (v->type == PYV_LIST) {
      if (!dims_ok (v, kernel, min, where))
        return false;
    }
    else if (v->type == PYV_INT && (v->i < min || v->i > PM_MAX_DIM)) {
      pm_error ("%s: %s: dimension %lld is not from %lld to %lld", where, kernel,
                (long long) v->i, (long long) min, (long long) PM_MAX_DIM);
      return false;
    }
  }
  return true;
}

/* Convert one [NAME, ARGS] entry into a kernel of phase. */
static int
add_kernel (struct node *nd, int phase, const struct pyv *ent, const char *where)
{
  const struct pyv *name, *args;
  struct kop *o;
  const char *s;

  if (ent->type != PYV_LIST || ent->n != 2 || ent->items[0].type != PYV_STR ||
      ent->items[1].type != PYV_LIST) {
    pm_error ("%s: a kernel must be [NAME, ARGS]", where);
    return -1;
  }
  name = &ent->items[0];
  args = &ent->items[1];
  s = name->s;
  /* a matrix or vector kernel's sizes are positive; copies and
   * collectives may move nothing */
  if (!dims_ok (args, s, strcmp (s, "MEM") == 0 || strncmp (s, "ALLREDUCE", 9) == 0 ||
                         strcmp (s, "SENDRECV") == 0 ? 0 : 1, where))
    return -1;
  if (strcmp (s, "Linear") == 0 && is_int_list (args, 3)) {
    o = node_add_op (nd, phase, PERFMOD_KERNEL_LINEAR, "linear");
    o->m = args->items[0].i; o->n = args->items[1].i; o->k = args->items[2].i;
  }
  else if (strcmp (s, "BMM") == 0 && is_int_list (args, 4)) {
    o = node_add_op (nd, phase, PERFMOD_KERNEL_BMM, "bmm");
    o->b = args->items[0].i; o->m = args->items[1].i;
    o->n = args->items[2].i; o->k = args->items[3].i;
  }
  else if (strncmp (s, "VEC", 3) == 0 && s[3] && is_int_list (args, 2)) {
    const char *op = s + 3;
    int kc = strcmp (op, "softmax") == 0 ? PERFMOD_KERNEL_SOFTMAX
           : strcmp (op, "ln") == 0 ? PERFMOD_KERNEL_LAYERNORM
           : PERFMOD_KERNEL_ELEMENTWISE;
    if (nd->out_elems <= 0 && !nd->fused) {
      pm_error ("%s: vector kernel %s in a node without an output shape", where, s);
      return -1;
    }
    o = node_add_op (nd, phase, kc, op);
    o->b = args->items[0].i;
    o->h = args->items[1].i;
    /* NeuSight's rule gives a gradient accumulation its node's bytes per
     * output; the add itself reads the gradient and the sum and writes the
     * sum.  Predictors choose (struct perfmod_kernel's own_mem_per_output). */
    if (phase == PHASE_ACC)
      o->own_traffic = 3;
  }
  else if (strcmp (s, "MEM") == 0) {
    double e = 0;
    for (size_t i = 0; i < args->n; i++) {
      if (!is_int_list (&args->items[i], 0)) {
        pm_error ("%s: MEM arguments must be shapes", where);
        return -1;
      }
      e += shape_elems (&args->items[i]);
    }
    o = node_add_op (nd, phase, PERFMOD_KERNEL_MEMORY, "copy");
    o->elems = e;
  }
  else if ((strcmp (s, "ALLREDUCE") == 0 || strcmp (s, "ALLREDUCE_ASYNC") == 0 ||
            strcmp (s, "SENDRECV") == 0) && is_int_list (args, 1)) {
    o = node_add_op (nd, phase, PERFMOD_KERNEL_COMM,
                     s[0] == 'S' ? "sendrecv" : s[9] ? "allreduce_async" : "allreduce");
    o->elems = (double) args->items[0].i;
  }
  else {
    pm_error ("%s: unknown kernel '%s' or bad arguments", where, s);
    return -1;
  }
  return 0;
}

static int
parse_field (const char *text, struct pyv *v, const char *path, long line, const char *col)
{
  const char *err;
  size_t pos;
  if (pyv_parse (text, v, &err, &pos) < 0) {
    pm_error ("%s:%ld: column %s: %s at offset %zu in '%.40s'", path, line, col, err, pos, text);
    return -1;
  }
  return 0;
}

/* Find the traced layer: nodes named for layer 0 (gpt's transformer_h_0_,
 * bert's encoder_layer_0_, opt's layers_0_), plus the anonymous nodes that
 * follow the last of them up to and including the residual add (NeuSight's
 * aggregator names these ends per model: add_15 for GPT, view_11 for OPT).  A graph
 * with nodes of layer 1 or more was traced whole and is not repeated. */
static void
find_layer_span (struct graph *g, int64_t n_layer)
{
  int errcode;
  PCRE2_SIZE erroff;
  pcre2_code *re = pcre2_compile ((PCRE2_SPTR) "(?:^|[_~])(?:h|layer|layers|block)_([0-9]+)_",
                                  PCRE2_ZERO_TERMINATED, 0, &errcode, &erroff, NULL);
  pcre2_match_data *md = pcre2_match_data_create_from_pattern (re, NULL);
  long first = -1, last = -1;
  bool whole = false;

  for (size_t i = 0; i < g->n && !whole; i++) {
    if (pcre2_match (re, (PCRE2_SPTR) g->nodes[i].name, PCRE2_ZERO_TERMINATED, 0, 0, md, NULL) < 0)
      continue;
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer (md);
    long layer = strtol (g->nodes[i].name + ov[2], NULL, 10);
    if (layer > 0)
      whole = true;
    else {
      if (first < 0)
        first = (long) i;
      last = (long) i;
    }
  }
  pcre2_match_data_free (md);
  pcre2_code_free (re);

  g->repeat = 1;
  g->layer_begin = g->layer_end = 0;
  if (whole || first < 0 || n_layer <= 1)
    return;
  /* The residual add closes the layer if it comes before the next
   * matrix or normalisation kernel; trailing kernel-less nodes follow it. */
  size_t end = (size_t) last + 1;
  for (size_t i = end; i < g->n; i++) {
    const struct node *nd = &g->nodes[i];
    if (strcmp (nd->opname, "VECadd") == 0) {
      end = i + 1;
      break;
    }
    if (strcmp (nd->opname, "Linear") == 0 || strcmp (nd->opname, "BMM") == 0 ||
        strcmp (nd->opname, "VECln") == 0)
      break;
  }
  while (end < g->n && g->nodes[end].nops[0] + g->nodes[end].nops[1] + g->nodes[end].nops[2] == 0)
    end++;
  g->layer_begin = (size_t) first;
  g->layer_end = end;
  g->repeat = n_layer;
}

int
opgraph_import (struct graph *g, const char *path, int64_t n_layer)
{
  static const char *const cols[] = { "Name", "OpName", "FwOps", "BwOps", "AccOps",
                                      "InputShapes", "OutputShape" };
  struct csv_reader r;
  int idx[7], rc;
  size_t ncols;

  memset (g, 0, sizeof *g);
  if (csv_open (&r, path) < 0) {
    pm_error ("%s: cannot open the op graph: %s", path, strerror (errno));
    return -1;
  }
  rc = csv_next (&r);
  if (rc <= 0) {
    if (rc == 0)
      pm_error ("%s:1: empty op graph", path);
    csv_close (&r);
    return -1;
  }
  for (int i = 0; i < 7; i++) {
    idx[i] = csv_column (r.fields, r.nfields, cols[i]);
    if (idx[i] < 0) {
      pm_error ("%s:1: missing column '%s'", path, cols[i]);
      csv_close (&r);
      return -1;
    }
  }
  ncols = r.nfields;
  g->source = xstrdup (path);
  while ((rc = csv_next (&r)) > 0) {
    struct pyv ins, out, ph[NPHASES];
    struct node *nd;
    char *where;
    int bad = 0;

    if (r.nfields != ncols) {
      pm_error ("%s:%ld: %zu fields, expected %zu", path, r.line, r.nfields, ncols);
      rc = -1;
      break;
    }
    if (parse_field (r.fields[idx[5]], &ins, path, r.line, "InputShapes") < 0) {
      rc = -1;
      break;
    }
    if (parse_field (r.fields[idx[6]], &out, path, r.line, "OutputShape") < 0) {
      pyv_free (&ins);
      rc = -1;
      break;
    }
    where = xasprintf ("%s:%ld: node %s", path, r.line, r.fields[idx[0]]);
    if (!dims_ok (&ins, "InputShapes", 0, where) || !dims_ok (&out, "OutputShape", 0, where)) {
      free (where);
      pyv_free (&ins);
      pyv_free (&out);
      rc = -1;
      break;
    }
    nd = graph_add_node (g, r.fields[idx[0]], r.fields[idx[1]]);
    nd->fused = strcmp (nd->opname, "fused") == 0;
    for (size_t i = 0; i < ins.n; i++)
      nd->in_elems += shape_elems (&ins.items[i]);
    nd->out_elems = out.n ? shape_elems (&out) : 0;
    /* The traced inputs give the workload's batch and sequence. */
    if (strcmp (nd->name, "input_ids") == 0 && is_int_list (&out, 2)) {
      g->batch = out.items[0].i;
      g->seq = out.items[1].i;
      if (g->batch < 1 || g->batch > PM_MAX_BATCH || g->seq < 1 || g->seq > PM_MAX_SEQ) {
        pm_error ("%s: batch %lld x seq %lld: expected a batch from 1 to %lld and a sequence "
                  "from 1 to %lld", where, (long long) g->batch, (long long) g->seq,
                  (long long) PM_MAX_BATCH, (long long) PM_MAX_SEQ);
        bad = 1;
      }
    }
    pyv_free (&ins);
    pyv_free (&out);
    for (int p = 0; p < NPHASES && !bad; p++) {
      if (parse_field (r.fields[idx[2 + p]], &ph[p], path, r.line, cols[2 + p]) < 0) {
        bad = 1;
        break;
      }
      for (size_t i = 0; i < ph[p].n && !bad; i++)
        bad = add_kernel (nd, p, &ph[p].items[i], where) < 0;
      pyv_free (&ph[p]);
    }
    free (where);
    if (bad) {
      rc = -1;
      break;
    }
  }
  csv_close (&r);
  if (rc < 0) {
    graph_free (g);
    return -1;
  }
  if (g->n == 0) {
    pm_error ("%s: no operators", path);
    graph_free (g);
    return -1;
  }
  find_layer_span (g, n_layer);
  return 0;
}
