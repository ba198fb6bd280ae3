/* builder.c: a first native transformer graph (GPT-style decoder or BERT-style encoder) from a model config. */
#include <config.h>

#include <string.h>

#include "internal.h"

/* Shapes are in elements.  The kernels follow what NeuSight's traces of
 * Hugging Face models record, so that the two graphs can be compared. */
struct bctx {
  struct graph *g;
  bool train;
};

static struct node *
add (struct bctx *c, const char *name, const char *opname, double in, double out)
{
  struct node *nd = graph_add_node (c->g, name, opname);
  nd->in_elems = in;
  nd->out_elems = out;
  return nd;
}

static void
vec (struct node *nd, int phase, const char *op, int64_t b, int64_t h)
{
  int kc = strcmp (op, "softmax") == 0 ? PERFMOD_KERNEL_SOFTMAX
         : strcmp (op, "ln") == 0 ? PERFMOD_KERNEL_LAYERNORM : PERFMOD_KERNEL_ELEMENTWISE;
  struct kop *o = node_add_op (nd, phase, kc, op);
  o->b = b;
  o->h = h;
}

static void
mem (struct node *nd, int phase, double elems)
{
  node_add_op (nd, phase, PERFMOD_KERNEL_MEMORY, "copy")->elems = elems;
}

/* Linear (M,N,K) with its data and weight gradients and bias accumulation. */
static void
linear (struct bctx *c, const char *name, int64_t m, int64_t n, int64_t k, bool bias)
{
  struct node *nd = add (c, name, "Linear", (double) (m * n + n * k + (bias ? k : 0)),
                         (double) (m * k));
  struct kop *o = node_add_op (nd, PHASE_FW, PERFMOD_KERNEL_LINEAR, "linear");
  o->m = m; o->n = n; o->k = k;
  if (!c->train)
    return;
  o = node_add_op (nd, PHASE_BW, PERFMOD_KERNEL_LINEAR, "linear");
  o->m = m; o->n = k; o->k = n;
  o = node_add_op (nd, PHASE_BW, PERFMOD_KERNEL_LINEAR, "linear");
  o->m = k; o->n = m; o->k = n;
  vec (nd, PHASE_ACC, "add", 1, n * k);
  if (bias)
    vec (nd, PHASE_ACC, "add", 1, k);
}

static void
bmm (struct bctx *c, const char *name, int64_t b, int64_t m, int64_t n, int64_t k)
{
  struct node *nd = add (c, name, "BMM", (double) (b * (m * n + n * k)), (double) (b * m * k));
  struct kop *o = node_add_op (nd, PHASE_FW, PERFMOD_KERNEL_BMM, "bmm");
  o->b = b; o->m = m; o->n = n; o->k = k;
  if (!c->train)
    return;
  o = node_add_op (nd, PHASE_BW, PERFMOD_KERNEL_BMM, "bmm");
  o->b = b; o->m = m; o->n = k; o->k = n;
  o = node_add_op (nd, PHASE_BW, PERFMOD_KERNEL_BMM, "bmm");
  o->b = b; o->m = n; o->n = m; o->k = k;
}

/* An element-wise op over rows x cols with `inputs` equal-sized inputs. */
static void
ew (struct bctx *c, const char *name, const char *op, int64_t rows, int64_t cols, int inputs)
{
  const char *opname = strcmp (op, "softmax") == 0 ? "VECsoftmax"
                     : strcmp (op, "ln") == 0 ? "VECln" : strcmp (op, "add") == 0 ? "VECadd"
                     : "VECmul";
  double e = (double) rows * (double) cols;
  struct node *nd = add (c, name, opname, e * inputs, e);
  vec (nd, PHASE_FW, op, rows, cols);
  if (!c->train)
    return;
  if (strcmp (op, "add") == 0) {
    mem (nd, PHASE_BW, e);
    mem (nd, PHASE_BW, e);
  }
  else if (strcmp (op, "ln") == 0) {
    vec (nd, PHASE_BW, "mul", rows, cols);
    vec (nd, PHASE_ACC, "add", 1, cols);
    vec (nd, PHASE_ACC, "add", 1, cols);
  }
  else {
    vec (nd, PHASE_BW, "mul", rows, cols);
    vec (nd, PHASE_BW, op, rows, cols);
  }
}

static void
dropout (struct bctx *c, const char *name, double elems)
{
  struct node *nd;
  if (!c->train)
    return;
  nd = add (c, name, "dropout", elems, elems);
  mem (nd, PHASE_FW, 2 * elems);
  mem (nd, PHASE_BW, elems);
  mem (nd, PHASE_BW, elems);
}

int
graph_build (struct graph *g, const struct model_cfg *m, int64_t batch, int64_t seq, bool train)
{
  struct bctx c = { g, train };
  int64_t t = batch * seq, d = m->hidden, h = m->heads, dh = d / h, f = m->ffn, v = m->vocab;
  int64_t bh = batch * h;
  double td = (double) (t * d), scores = (double) bh * (double) seq * (double) seq;
  struct node *nd;

  memset (g, 0, sizeof *g);
  g->source = xstrdup ("builder");
  g->batch = batch;
  g->seq = seq;
  g->train = train;

  nd = add (&c, "embedding", "EMBEDDING", (double) t, td);
  mem (nd, PHASE_FW, (double) t + td);
  if (train) {
    mem (nd, PHASE_BW, (double) (v * d));
    mem (nd, PHASE_BW, (double) (v * d));
    vec (nd, PHASE_ACC, "add", 1, v * d);
  }
  ew (&c, "embedding_add", "add", t, d, 2);
  dropout (&c, "embedding_dropout", td);

  g->layer_begin = g->n;
  if (!m->encoder)
    ew (&c, "layer_ln_1", "ln", t, d, 1);
  linear (&c, "layer_qkv", t, d, 3 * d, true);
  bmm (&c, "layer_scores", bh, seq, dh, seq);
  ew (&c, "layer_scale", "div", bh * seq, seq, 1);
  nd = add (&c, "layer_mask", "where", 2 * scores, scores);
  mem (nd, PHASE_FW, 2 * scores + (double) (seq * seq));
  if (train) {
    mem (nd, PHASE_BW, scores + (double) (seq * seq));
    mem (nd, PHASE_BW, scores + (double) (seq * seq));
  }
  ew (&c, "layer_softmax", "softmax", bh * seq, seq, 1);
  dropout (&c, "layer_attn_dropout", scores);
  bmm (&c, "layer_context", bh, seq, seq, dh);
  nd = add (&c, "layer_contiguous", "contiguous", td, td);
  mem (nd, PHASE_FW, 2 * td);
  if (train) {
    mem (nd, PHASE_BW, td);
    mem (nd, PHASE_BW, td);
  }
  linear (&c, "layer_proj", t, d, d, true);
  dropout (&c, "layer_resid_dropout", td);
  ew (&c, "layer_add_1", "add", t, d, 2);
  if (m->encoder)
    ew (&c, "layer_ln_1", "ln", t, d, 1);
  else
    ew (&c, "layer_ln_2", "ln", t, d, 1);
  linear (&c, "layer_fc1", t, d, f, true);
  ew (&c, "layer_act", "gelu", t, f, 1);
  linear (&c, "layer_fc2", t, f, d, true);
  dropout (&c, "layer_mlp_dropout", td);
  ew (&c, "layer_add_2", "add", t, d, 2);
  if (m->encoder)
    ew (&c, "layer_ln_2", "ln", t, d, 1);
  g->layer_end = g->n;
  g->repeat = m->layers;

  if (!m->encoder) {
    ew (&c, "final_ln", "ln", t, d, 1);
    linear (&c, "lm_head", t, d, v, false);
  }
  return 0;
}
