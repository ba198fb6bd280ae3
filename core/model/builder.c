/* builder.c: native kernel graphs from model configs: GPT-2/3, OPT, BERT, Llama, Mixtral and Switch, for training, prefill and decode. */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "physics.h"

/* The kernels are those Hugging Face's eager PyTorch models launch, with
 * the backward and gradient-accumulation kernels NeuSight's tracer assigns
 * to each operator, so that a built graph and a traced one can be compared
 * kernel for kernel (doc/graph-builder.md lists where they differ and why).
 * Shapes are in elements; rows x cols for vector kernels. */
struct bctx {
  struct graph *g;
  const struct model_cfg *m;
  const struct build_options *o;
  bool train;
  int64_t b;             /* sequences */
  int64_t s;             /* query tokens per sequence (1 in a decode step) */
  int64_t kv;            /* key/value tokens per sequence attended to */
  int64_t t;             /* b x s: rows of the token-wise kernels */
  char prefix[48];       /* node name prefix of the layer being built */
  /* this rank's share under graph-level parallelism */
  const struct shard *sh;
  int64_t tn;            /* rows of the norm, dropout and residual regions */
  int64_t hp, kvp;       /* attention heads and key/value heads */
  int64_t fp;            /* feed-forward width */
  int64_t vp;            /* vocabulary rows */
  bool flash;            /* fused attention (not with T5's position bias) */
  /* the layer being built (the families after Switch) */
  bool moe;              /* routed feed-forward */
  int64_t window;        /* sliding attention's window (0: full) */
  bool softcap;          /* Gemma 2's tanh-capped scores */
  bool eng;              /* a serving engine's fused kernels (build_options.engine, inference,
                            the Llama, Mixtral and later decoder families) */
  const char *engine;    /* that engine's name (build_options.engine_name), or NULL */
};

/* a then b into buf (of n bytes), cut to fit: snprintf (buf, n, "%s%s",
 * a, b) without the formatting, which perfmod search's profile showed. */
static const char *
cat2 (char *buf, size_t n, const char *a, const char *b)
{
  size_t na = strlen (a), nb = strlen (b);
  if (na > n - 1)
    na = n - 1;
  if (nb > n - 1 - na)
    nb = n - 1 - na;
  memmove (buf, a, na);
  memcpy (buf + na, b, nb);
  buf[na + nb] = '\0';
  return buf;
}

static struct node *
add_node (struct bctx *c, const char *name, const char *opname, double in, double out)
{
  char full[128];
  struct node *nd;
  cat2 (full, sizeof full, c->prefix, name);
  nd = graph_add_node (c->g, full, opname);
  nd->in_elems = in;
  nd->out_elems = out;
  return nd;
}

/* Nodes [from, the graph's end) run `n` identical copies a layer (the
 * reached experts under even routing, built once). */
static void
set_copies (struct bctx *c, size_t from, int64_t n)
{
  for (size_t j = from; j < c->g->n; j++)
    c->g->nodes[j].copies = n;
}

/* The collectives the plan puts at a site (enum perfmod_site). */
static void
site (struct bctx *c, int where)
{
  const struct shard *sh = c->sh;
  for (size_t i = 0; sh && i < sh->ncomms; i++) {
    const struct comm_site *cs = &sh->comms[i];
    char name[64];
    int phase = cs->phase ? PHASE_BW : PHASE_FW;
    if (cs->site != where || (phase == PHASE_BW && !c->train))
      continue;
    snprintf (name, sizeof name, "%s_%s_%s", dim_name (cs->dim), collective_name (cs->collective),
              phase == PHASE_FW ? "fw" : "bw");
    struct node *nd = add_node (c, name, "comm", 0, 1);
    struct kop *o;
    if (cs->collective == PERFMOD_COLL_DEEPEP) {
      /* DeepEP: the low-latency kernels in a decode step, the normal ones
       * otherwise (SGLang's deepep-mode auto); a backward's dispatch is
       * the combine kernel on the gradients and its combine a dispatch.
       * A serving engine sends fp8 (a scale per 128 values) and combines
       * in bf16; Megatron-Core's flex dispatcher both in the activations'
       * dtype. */
      bool combine = (where == PERFMOD_SITE_MOE_COMBINE) != (phase == PHASE_BW);
      o = node_add_op (nd, phase, PERFMOD_KERNEL_COMM,
                       phys_deepep_ops[c->o->kv_len > 0][combine]);
      o->m = (int64_t) ceil ((double) (sh->moe_tp_after ? c->tn : c->t)
                             * (sh->expert_load > 1 ? sh->expert_load : 1));
      o->k = c->m->hidden;
      o->h = c->m->experts;
      o->top_k = c->m->top_k;
      o->route_groups = (int) c->m->route_groups;
      o->route_group_topk = (int) c->m->route_group_topk;
      o->b = PHYS_DEEPEP_SMS;
      o->dtype = c->train || combine ? PERFMOD_DTYPE_BF16 : PERFMOD_DTYPE_FP8;
    }
    else
      o = node_add_op (nd, phase, PERFMOD_KERNEL_COMM, collective_name (cs->collective));
    o->bytes = cs->bytes;
    o->dim = cs->dim;
    o->overlap = cs->overlap;
  }
}

/* The collectives of nodes [first, end) that are pipelined with a GEMM
 * (PERFMOD_OVERLAP_GEMM: tp's under Transformer Engine's userbuffers)
 * run beside node gemm: the column-parallel GEMM after an *_IN site,
 * the row-parallel one before an *_OUT site. */
static void
pair_gemm (struct bctx *c, size_t first, size_t end, size_t gemm)
{
  for (size_t i = first; i < end; i++)
    c->g->nodes[i].gemm = gemm + 1;
}

static int
vec_class (const char *op)
{
  return strcmp (op, "softmax") == 0 ? PERFMOD_KERNEL_SOFTMAX
       : strcmp (op, "ln") == 0 ? PERFMOD_KERNEL_LAYERNORM : PERFMOD_KERNEL_ELEMENTWISE;
}

static struct kop *
vec_op (struct node *nd, int phase, const char *op, int64_t rows, int64_t cols)
{
  struct kop *o = node_add_op (nd, phase, vec_class (op), op);
  o->b = rows;
  o->h = cols;
  /* Accumulating a weight's gradient reads it and the sum and writes the
   * sum, whatever the node's activations are (a small-batch expert's
   * would otherwise count its weight many times over). */
  if (phase == PHASE_ACC)
    o->traffic = 3;
  return o;
}

static void
mem_op (struct node *nd, int phase, double elems)
{
  node_add_op (nd, phase, PERFMOD_KERNEL_MEMORY, "copy")->elems = elems;
}

/* A vector operator over rows x cols: `in` input elements, and the
 * backward kernels bw names, space-separated ("MEM" copies the output's
 * elements; "ln" adds the two affine-gradient accumulations). */
static struct node *
ew (struct bctx *c, const char *name, const char *op, int64_t rows, int64_t cols, double in,
    const char *bw)
{
  char opname[32], buf[64];
  double out = (double) rows * (double) cols;
  struct node *nd;
  cat2 (opname, sizeof opname, "VEC", op);
  nd = add_node (c, name, opname, in, out);
  vec_op (nd, PHASE_FW, op, rows, cols);
  if (!c->train)
    return nd;
  cat2 (buf, sizeof buf, bw, "");
  for (char *save = NULL, *w = strtok_r (buf, " ", &save); w; w = strtok_r (NULL, " ", &save)) {
    if (strcmp (w, "MEM") == 0)
      mem_op (nd, PHASE_BW, out);
    else
      vec_op (nd, PHASE_BW, w, rows, cols);
  }
  if (strcmp (op, "ln") == 0) {
    vec_op (nd, PHASE_ACC, "add", 1, cols);
    vec_op (nd, PHASE_ACC, "add", 1, cols);
  }
  return nd;
}

/* Common vector operators, by their PyTorch spelling. */
static void
add2 (struct bctx *c, const char *name, int64_t rows, int64_t cols, double other)
{
  ew (c, name, "add", rows, cols, (double) rows * (double) cols + other, "MEM MEM");
}

static void
mul2 (struct bctx *c, const char *name, int64_t rows, int64_t cols, double other)
{
  ew (c, name, "mul", rows, cols, (double) rows * (double) cols + other, "mul mul");
}

static void
unary (struct bctx *c, const char *name, const char *op, int64_t rows, int64_t cols)
{
  static const struct { const char *op, *bw; } rules[] = {
    { "mulu", "mulu" }, { "divu", "divu" }, { "addu", "MEM" }, { "powu", "powu mul mulu" },
    { "tanh", "mulu addu" }, { "gelu", "gelu" }, { "relu", "relu" }, { "silu", "silu" },
    { "neg", "neg" }, { "softmax", "mul softmax" }, { "ln", "mul" },
  };
  const char *bw = "";
  for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
    if (strcmp (rules[i].op, op) == 0)
      bw = rules[i].bw;
  ew (c, name, op, rows, cols, (double) rows * (double) cols, bw);
}

/* A tensor copy (contiguous, gather, slicing that materialises): forward
 * reads and writes `elems`; the gradient is copied back twice. */
static void
copy (struct bctx *c, const char *name, const char *opname, double read, double written)
{
  struct node *nd = add_node (c, name, opname, read, written);
  mem_op (nd, PHASE_FW, read + written);
  if (c->train) {
    mem_op (nd, PHASE_BW, read);
    mem_op (nd, PHASE_BW, read);
  }
}

/* Grouped key/value heads expanded to the h query heads (repeat_kv),
 * as eager attention needs them: each of k and v read once, written h
 * / kvh times. */
static void
repeat_kv (struct bctx *c, int64_t h, int64_t kvh, int64_t dh)
{
  double rep = (double) c->b * (double) h * (double) c->kv * (double) dh;
  copy (c, "repeat_k", "expand", rep / (double) (h / kvh), rep);
  copy (c, "repeat_v", "expand", rep / (double) (h / kvh), rep);
}

static void
dropout (struct bctx *c, const char *name, double elems)
{
  if (c->train)
    copy (c, name, "dropout", elems, elems);
}

/* Linear (m,n,k): an (m,n) input through Linear(n->k).  The node's tensors
 * are the input, the weight and the bias, as an addmm's.  high: outside
 * Transformer Engine's fp8 (Megatron-Core's output layer, its router):
 * the GEMMs in the precision's 16-bit dtype, nothing quantised.  cast_in
 * and cast_grad: the rows of the input and of the incoming gradient that
 * fp8 training casts (m, but a sequence-parallel rank's share where TE
 * casts what it then all-gathers: a column-parallel GEMM's input, a
 * row-parallel one's gradient). */
static void
linear_cast (struct bctx *c, const char *name, int64_t m, int64_t n, int64_t k, bool bias,
             bool high, int64_t cast_in, int64_t cast_grad)
{
  double w = (double) n * (double) k;
  struct node *nd = add_node (c, name, "Linear", (double) m * (double) n + w + (bias ? k : 0),
                              (double) m * (double) k);
  struct kop *o = node_add_op (nd, PHASE_FW, PERFMOD_KERNEL_LINEAR, "linear");
  o->m = m; o->n = n; o->k = k;
  o->high = high;
  if (!c->train)
    return;
  o = node_add_op (nd, PHASE_BW, PERFMOD_KERNEL_LINEAR, "linear");   /* data gradient */
  o->m = m; o->n = k; o->k = n;
  o->high = high;
  o = node_add_op (nd, PHASE_BW, PERFMOD_KERNEL_LINEAR, "linear");   /* weight gradient */
  o->m = k; o->n = m; o->k = n;
  o->high = high;
  /* Megatron-Core's fp8 training: Transformer Engine casts the input
   * (forward) and the incoming gradient (backward, once for both
   * products) to fp8, each cast reading 16 bits and writing 8 twice (the
   * row-wise copy and the transposed one the other product reads): 2
   * 16-bit elements moved per element, in the fp8 precisions only */
  if (c->o->te && !high) {
    /* the casts are kernels here, so the GEMMs are the GEMMs alone */
    for (int p = PHASE_FW; p <= PHASE_BW; p++)
      for (size_t j = 0; j < nd->nops[p]; j++)
        nd->ops[p][j].cast_apart = true;
    o = node_add_op (nd, PHASE_FW, PERFMOD_KERNEL_MEMORY, "quantize");
    o->elems = 2.0 * (double) cast_in * (double) n;
    o->quant = true;
    o = node_add_op (nd, PHASE_BW, PERFMOD_KERNEL_MEMORY, "quantize");
    o->elems = 2.0 * (double) cast_grad * (double) k;
    o->quant = true;
  }
  /* Megatron-Core's weight-gradient GEMM adds into the fp32 main_grad
   * itself (gradient_accumulation_fusion): no separate sum */
  if (!c->o->te)
    vec_op (nd, PHASE_ACC, "add", 1, n * k);
  if (bias)
    vec_op (nd, PHASE_ACC, "add", 1, k);
}

static void
linear_node (struct bctx *c, const char *name, int64_t m, int64_t n, int64_t k, bool bias,
             bool high)
{
  linear_cast (c, name, m, n, k, bias, high, m, m);
}

static void
linear (struct bctx *c, const char *name, int64_t m, int64_t n, int64_t k, bool bias)
{
  linear_node (c, name, m, n, k, bias, false);
}

/* A tensor-parallel block's GEMMs under sequence parallelism (tn of the t
 * rows on each rank): the column-parallel one's input and the row-parallel
 * one's gradient are cast on the rank's share, then gathered. */
static void
linear_column (struct bctx *c, const char *name, int64_t n, int64_t k, bool bias)
{
  linear_cast (c, name, c->t, n, k, bias, false, c->tn, c->t);
}

static void
linear_row (struct bctx *c, const char *name, int64_t n, int64_t k, bool bias)
{
  linear_cast (c, name, c->t, n, k, bias, false, c->t, c->tn);
}

/* BMM (b,m,n,k) = (b,m,n) x (b,n,k); its gradients (b,m,k,n) and (b,n,m,k). */
static void
bmm (struct bctx *c, const char *name, int64_t b, int64_t m, int64_t n, int64_t k)
{
  struct node *nd = add_node (c, name, "BMM", (double) b * (double) (m * n + n * k),
                              (double) b * (double) (m * k));
  struct kop *o = node_add_op (nd, PHASE_FW, PERFMOD_KERNEL_BMM, "bmm");
  o->b = b; o->m = m; o->n = n; o->k = k;
  if (!c->train)
    return;
  o = node_add_op (nd, PHASE_BW, PERFMOD_KERNEL_BMM, "bmm");
  o->b = b; o->m = m; o->n = k; o->k = n;
  o = node_add_op (nd, PHASE_BW, PERFMOD_KERNEL_BMM, "bmm");
  o->b = b; o->m = n; o->n = m; o->k = k;
}

/* An embedding lookup of c->t tokens into rows of width d from a table of
 * rows x d; its gradient is a scatter into a zeroed table. */
static void
embedding (struct bctx *c, const char *name, int64_t rows, int64_t d)
{
  double t = (double) c->t, table = (double) rows * (double) d;
  struct node *nd = add_node (c, name, "EMBEDDING", t, t * (double) d);
  mem_op (nd, PHASE_FW, t + t * (double) d);
  if (c->train) {
    mem_op (nd, PHASE_BW, table);
    mem_op (nd, PHASE_BW, table);
    vec_op (nd, PHASE_ACC, "add", 1, rows * d);
  }
}

/* One fused element-wise chain (--fusion, inference): one kernel per
 * phase; its traffic is the chain's outside inputs and its output. */
static void
fused (struct bctx *c, const char *name, double in, int64_t rows, int64_t cols, const char *ops)
{
  char buf[96];
  struct node *nd = add_node (c, name, "fused", in, (double) rows * (double) cols);
  nd->fused = true;
  cat2 (buf, sizeof buf, ops, "");
  for (char *save = NULL, *w = strtok_r (buf, " ", &save); w; w = strtok_r (NULL, " ", &save))
    vec_op (nd, PHASE_FW, w, rows, cols);
}

/* The training loss of a language model: log-softmax and NLL over the
 * vocabulary (the traces stop at the logits). */
static void
lm_loss (struct bctx *c, int64_t v)
{
  if (c->train)
    unary (c, "loss", "softmax", c->t, v);
}

static void
set_prefix (struct bctx *c, const char *stem, int i)
{
  snprintf (c->prefix, sizeof c->prefix, "%s_%d_", stem, i);
}

/* ---- attention ---- */

/* Nodes [first, now) are the attention core, which selective
 * recomputation runs again in the backward pass. */
static void
mark_core (struct bctx *c, size_t first)
{
  for (size_t i = first; i < c->g->n; i++) {
    c->g->nodes[i].attn_core = true;
    c->g->nodes[i].rmod = RM_CORE_ATTN;
  }
}

/* Nodes [first, now) are Megatron-Core's recompute module `module`. */
static void
mark_rmod (struct bctx *c, size_t first, unsigned char module)
{
  for (size_t i = first; i < c->g->n; i++)
    c->g->nodes[i].rmod = module;
}

/* Fused attention (FlashAttention 2/3, cuDNN's through Transformer
 * Engine, PyTorch's SDPA): one kernel forward over h query heads of width
 * dh against kvh key/value heads, no scores in memory; its backward is one
 * kernel too (op attention_bwd: it recomputes the scores, five products to
 * the forward's two; physics.h's PHYS_ATTN_BWD_* say what that costs).
 * kv_shared: the keys are the values too, read once (MLA's latent). */
static void
flash_attention_kv (struct bctx *c, int64_t h, int64_t kvh, int64_t dh, bool kv_shared)
{
  size_t first = c->g->n;
  bool decode = c->kv > c->s, causal = !c->m->encoder && !decode;
  int64_t keys = c->kv;
  double q = (double) c->t * (double) (h * dh), kv;
  /* Context parallelism: this rank's queries (its 1/cp of the sequence,
   * in Megatron's two load-balanced chunks) meet every key over the ring,
   * half of them past the causal mask on average: as many pairs as a
   * mask-free kernel over half the sequence's keys. */
  if (c->o->cp > 1) {
    keys = causal ? (c->s * c->o->cp + 1) / 2 : c->s * c->o->cp;
    causal = false;
  }
  kv = (kv_shared ? 1.0 : 2.0) * (double) c->b * (double) keys * (double) (kvh * dh);
  struct node *nd = add_node (c, "core_attention", "ATTENTION", q + kv, q);
  for (int p = 0; p < (c->train ? 2 : 1); p++) {
    struct kop *o = node_add_op (nd, p ? PHASE_BW : PHASE_FW, PERFMOD_KERNEL_ATTENTION,
                                 p ? "attention_bwd" : decode ? "attention_decode" : "attention");
    o->b = c->b;
    o->m = c->s;
    o->n = keys;
    o->k = dh;
    o->h = h;
    o->kv_heads = kvh;
    o->window = c->window;
    o->causal = causal;
    o->kv_shared = kv_shared;
  }
  mark_core (c, first);
}

static void
flash_attention (struct bctx *c, int64_t h, int64_t kvh, int64_t dh)
{
  flash_attention_kv (c, h, kvh, dh, false);
}

/* Scores and context for heads h of width dh over c->kv keys; kvh < h
 * repeats each key/value head (grouped-query attention).  With --attention
 * flash (PyTorch's SDPA) the scale, mask, softmax and dropout are inside
 * the one fused kernel. */
static void
attention_core (struct bctx *c, int64_t h, int64_t dh, const char *scale, const char *mask,
                double mask_elems, bool drop)
{
  int64_t bh = c->b * h, rows = bh * c->s;
  double scores = (double) rows * (double) c->kv;
  size_t first = c->g->n;
  if (c->flash) {
    /* a serving engine's kernel reads the grouped key/value heads in place */
    flash_attention (c, h, c->eng && c->kvp < h ? c->kvp : h, dh);
    return;
  }
  bmm (c, "scores", bh, c->s, dh, c->kv);
  if (c->o->fusion && !c->train && mask && strcmp (mask, "where") != 0) {
    char ops[48];
    snprintf (ops, sizeof ops, "%s%s%s softmax", scale ? scale : "", scale ? " " : "", mask);
    fused (c, "scale_mask_softmax", scores + mask_elems, rows, c->kv, ops);
  }
  else {
    bool fuse = c->o->fusion && !c->train;
    if (scale && fuse)                   /* GPT-2: the select breaks the chain in two */
      fused (c, "scale", scores + 1, rows, c->kv, scale);
    else if (scale && strcmp (scale, "div") == 0)   /* by a tensor: both operands' gradients */
      ew (c, "scale", "div", rows, c->kv, scores + 1, "div div");
    else if (scale)
      unary (c, "scale", scale, rows, c->kv);
    if (c->softcap) {                    /* cap * tanh (scores / cap) */
      unary (c, "softcap_div", "divu", rows, c->kv);
      unary (c, "softcap_tanh", "tanh", rows, c->kv);
      unary (c, "softcap_mul", "mulu", rows, c->kv);
    }
    if (mask && strcmp (mask, "where") == 0) {
      /* GPT-2 slices its causal buffer and selects: two copies */
      double causal = (double) c->s * (double) c->kv;
      copy (c, "mask_slice", "getitem", causal, causal);
      struct node *nd = add_node (c, "mask", "where", causal + scores + 1, scores);
      mem_op (nd, PHASE_FW, causal + 2 * scores + 1);
      if (c->train) {
        mem_op (nd, PHASE_BW, causal + scores + 1);
        mem_op (nd, PHASE_BW, causal + scores + 1);
      }
    }
    else if (mask)
      add2 (c, "mask", rows, c->kv, mask_elems);
    if (fuse)
      fused (c, "softmax", scores, rows, c->kv, "softmax");
    else
      unary (c, "softmax", "softmax", rows, c->kv);
  }
  if (drop)
    dropout (c, "attn_dropout", scores);
  bmm (c, "context", bh, c->s, c->kv, dh);
  mark_core (c, first);
}

/* The repeated layer: built once, run the stage's number of layers. */
static void
layer_span (struct bctx *c, const char *stem, void (*layer) (struct bctx *c))
{
  c->g->layer_begin = c->g->n;
  set_prefix (c, stem, 0);
  layer (c);
  c->prefix[0] = '\0';
  c->g->layer_end = c->g->n;
  c->g->repeat = c->sh->layers ? c->sh->layers : c->m->layers;
}

/* ---- GPT-2 / GPT-3 ---- */

static void
gpt2_layer (struct bctx *c)
{
  const struct model_cfg *m = c->m;
  int64_t t = c->t, tn = c->tn, d = m->hidden, f = c->fp, h = c->hp, dh = m->head_dim;
  int64_t dq = h * dh;                   /* this rank's share of the width (tensor parallel) */
  double tdq = (double) t * (double) dq, tf = (double) t * (double) f;
  double tnd = (double) tn * (double) d;
  bool fuse = c->o->fusion && !c->train;

  site (c, PERFMOD_SITE_PARAMS);
  unary (c, "ln_1", "ln", tn, d);
  site (c, PERFMOD_SITE_ATTN_IN);
  linear (c, "attn_c_attn", t, d, 3 * dq, true);
  for (int i = 0; i < 3; i++) {          /* split into q, k, v */
    char name[16];
    snprintf (name, sizeof name, "split_%d", i);
    struct node *nd = add_node (c, name, "getitem", 1, tdq);
    mem_op (nd, PHASE_FW, 1 + tdq);
  }
  attention_core (c, h, dh, "div", "where", 0, true);
  copy (c, "merge_heads", "contiguous", tdq, tdq);
  linear (c, "attn_c_proj", t, dq, d, true);
  site (c, PERFMOD_SITE_ATTN_OUT);
  if (fuse)
    fused (c, "resid_add_1", 2 * tnd + 1, tn, d, "add");
  else {
    dropout (c, "resid_dropout", tnd);
    add2 (c, "add_1", tn, d, tnd);
  }
  unary (c, "ln_2", "ln", tn, d);
  site (c, PERFMOD_SITE_MLP_IN);
  linear (c, "mlp_c_fc", t, d, f, true);
  if (fuse)
    fused (c, "gelu_new", tf, t, f, "powu mulu add mulu tanh addu mulu mul");
  else {                                 /* gelu_new as eager PyTorch runs it */
    unary (c, "gelu_half", "mulu", t, f);
    unary (c, "gelu_pow", "powu", t, f);
    unary (c, "gelu_cube", "mulu", t, f);
    add2 (c, "gelu_inner", t, f, tf);
    unary (c, "gelu_scale", "mulu", t, f);
    unary (c, "gelu_tanh", "tanh", t, f);
    unary (c, "gelu_one", "addu", t, f);
    mul2 (c, "gelu_out", t, f, tf);
  }
  linear (c, "mlp_c_proj", t, f, d, true);
  site (c, PERFMOD_SITE_MLP_OUT);
  if (fuse)
    fused (c, "resid_add_2", 2 * tnd + 1, tn, d, "add");
  else {
    dropout (c, "mlp_dropout", tnd);
    add2 (c, "add_2", tn, d, tnd);
  }
}

/* A bias, dropout and residual add fused as Megatron-LM's jit function
 * does: one kernel over the rows; its gradient multiplies by the dropout
 * mask and sums the bias's (the residual's gradient passes through). */
static void
bias_dropout_add (struct bctx *c, const char *name, int64_t rows, int64_t cols)
{
  double x = (double) rows * (double) cols;
  struct node *nd = ew (c, name, "add", rows, cols, 2 * x + (double) cols, "mul MEM");
  if (c->train)
    vec_op (nd, PHASE_ACC, "add", 1, cols);
}

/* Megatron-LM's GPT layer (megatron/model/transformer.py, fp32, the
 * defaults: masked_softmax_fusion, bias_gelu_fusion and
 * bias_dropout_fusion on, no query-key layer scaling).  Against the eager
 * layer: the scores' scale rides in the baddbmm, the causal mask is one
 * masked_fill (one kernel each way), the projections add no bias in the
 * GEMM but in a fused bias-GeLU and two fused bias-dropout-adds, and
 * GeLU is one kernel each way instead of eight.  In fp32 the fused
 * softmax kernel does not apply (it needs fp16 or bf16): PyTorch's
 * softmax runs, as in the eager layer. */
static void
gpt2_layer_megatron (struct bctx *c)
{
  const struct model_cfg *m = c->m;
  int64_t t = c->t, tn = c->tn, d = m->hidden, f = c->fp, h = c->hp, dh = m->head_dim;
  int64_t dq = h * dh, bh = c->b * h, rows = bh * c->s;
  double tdq = (double) t * (double) dq, tf = (double) t * (double) f;
  double scores = (double) rows * (double) c->kv, causal = (double) c->s * (double) c->kv;
  struct node *nd;
  size_t first;

  site (c, PERFMOD_SITE_PARAMS);
  unary (c, "input_layernorm", "ln", tn, d);
  site (c, PERFMOD_SITE_ATTN_IN);
  linear (c, "query_key_value", t, d, 3 * dq, true);
  first = c->g->n;
  bmm (c, "scores", bh, c->s, dh, c->kv);
  nd = add_node (c, "mask", "masked_fill", causal + scores, scores);
  mem_op (nd, PHASE_FW, causal + 2 * scores);
  if (c->train)
    mem_op (nd, PHASE_BW, causal + 2 * scores);
  unary (c, "softmax", "softmax", rows, c->kv);
  dropout (c, "attention_dropout", scores);
  bmm (c, "context", bh, c->s, c->kv, dh);
  mark_core (c, first);
  copy (c, "context_permute", "contiguous", tdq, tdq);
  linear (c, "dense", t, dq, d, false);
  site (c, PERFMOD_SITE_ATTN_OUT);
  bias_dropout_add (c, "bias_dropout_add_1", tn, d);
  unary (c, "post_attention_layernorm", "ln", tn, d);
  site (c, PERFMOD_SITE_MLP_IN);
  linear (c, "dense_h_to_4h", t, d, f, false);
  nd = ew (c, "bias_gelu", "gelu", t, f, tf + (double) f, "gelu MEM");
  if (c->train)
    vec_op (nd, PHASE_ACC, "add", 1, f);
  linear (c, "dense_4h_to_h", t, f, d, false);
  site (c, PERFMOD_SITE_MLP_OUT);
  bias_dropout_add (c, "bias_dropout_add_2", tn, d);
}

static void
gpt2_graph (struct bctx *c)
{
  const struct model_cfg *m = c->m;
  int64_t t = c->t, tn = c->tn, d = m->hidden, v = c->vp;
  double td = (double) t * (double) d, tnd = (double) tn * (double) d;

  if (c->sh->embed && c->o->fusion && !c->train) {
    struct node *nd = add_node (c, "embeddings", "fused", (double) t + 1, td);
    nd->fused = true;
    mem_op (nd, PHASE_FW, (double) t + td);
    vec_op (nd, PHASE_FW, "add", t, d);
  }
  else if (c->sh->embed) {
    embedding (c, "wte", v, d);
    site (c, PERFMOD_SITE_EMBED);
    add2 (c, "wpe_add", tn, d, (double) c->s * (double) d);
    dropout (c, "drop", tnd);
  }
  layer_span (c, "h", c->o->megatron ? gpt2_layer_megatron : gpt2_layer);
  if (c->sh->head) {
    unary (c, "ln_f", "ln", tn, d);
    site (c, PERFMOD_SITE_LOGITS);
    linear (c, "lm_head", t, d, v, false);
    lm_loss (c, v);
  }
}

/* ---- OPT ---- */

static void
opt_layer (struct bctx *c)
{
  const struct model_cfg *m = c->m;
  int64_t t = c->t, tn = c->tn, b = c->b, s = c->s, d = m->hidden, f = c->fp;
  int64_t h = c->hp, dh = m->head_dim, dq = h * dh;
  double tdq = (double) t * (double) dq, tnd = (double) tn * (double) d;
  double causal = (double) s * (double) c->kv;

  site (c, PERFMOD_SITE_PARAMS);
  unary (c, "self_attn_layer_norm", "ln", tn, d);
  site (c, PERFMOD_SITE_ATTN_IN);
  linear (c, "self_attn_q_proj", t, d, dq, true);
  unary (c, "q_scale", "mulu", t, dq);
  linear (c, "self_attn_k_proj", t, d, dq, true);
  copy (c, "k_heads", "contiguous", tdq, tdq);
  linear (c, "self_attn_v_proj", t, d, dq, true);
  copy (c, "v_heads", "contiguous", tdq, tdq);
  copy (c, "q_heads", "contiguous", tdq, tdq);
  attention_core (c, h, dh, NULL, "add", (double) b * causal, true);
  linear (c, "self_attn_out_proj", t, dq, d, true);
  site (c, PERFMOD_SITE_ATTN_OUT);
  dropout (c, "attn_resid_dropout", tnd);
  add2 (c, "add_1", tn, d, tnd);
  unary (c, "final_layer_norm", "ln", tn, d);
  site (c, PERFMOD_SITE_MLP_IN);
  linear (c, "fc1", t, d, f, true);
  unary (c, "activation_fn", "relu", t, f);
  linear (c, "fc2", t, f, d, true);
  site (c, PERFMOD_SITE_MLP_OUT);
  dropout (c, "mlp_dropout", tnd);
  add2 (c, "add_2", tn, d, tnd);
}

static void
opt_graph (struct bctx *c)
{
  const struct model_cfg *m = c->m;
  int64_t t = c->t, tn = c->tn, b = c->b, s = c->s, d = m->hidden, v = c->vp;
  double tnd = (double) tn * (double) d, bs = (double) b * (double) s;
  double causal = (double) s * (double) c->kv;

  if (c->sh->embed) {
    embedding (c, "embed_tokens", v, d);
    site (c, PERFMOD_SITE_EMBED);
    /* the causal mask and the position ids from the attention mask */
    unary (c, "mask_range", "addu", 1, s);
    copy (c, "causal_mask", "getitem", causal, causal);
    copy (c, "attention_mask", "getitem", bs, bs);
    copy (c, "positions_cumsum", "cumsum", bs, bs);
    mul2 (c, "positions_mul", b, s, bs);
    copy (c, "positions_slice", "getitem", bs, bs);
    unary (c, "positions_offset", "addu", b, s);
    add2 (c, "embed_positions_add", tn, d, tnd);
    dropout (c, "dropout", tnd);
  }
  layer_span (c, "layers", opt_layer);
  if (c->sh->head) {
    unary (c, "final_layer_norm", "ln", tn, d);
    site (c, PERFMOD_SITE_LOGITS);
    linear (c, "lm_head", t, d, v, false);
    copy (c, "logits_contiguous", "contiguous", (double) t * (double) v, (double) t * (double) v);
    lm_loss (c, v);
  }
}

/* ---- BERT ---- */

static void
bert_layer (struct bctx *c)
{
  const struct model_cfg *m = c->m;
  int64_t t = c->t, tn = c->tn, b = c->b, s = c->s, d = m->hidden, f = c->fp;
  int64_t h = c->hp, dh = m->head_dim, dq = h * dh;
  double tdq = (double) t * (double) dq, tnd = (double) tn * (double) d;
  double bs = (double) b * (double) s;
  bool fuse = c->o->fusion && !c->train;

  site (c, PERFMOD_SITE_PARAMS);
  site (c, PERFMOD_SITE_ATTN_IN);
  linear (c, "attention_self_query", t, d, dq, true);
  linear (c, "attention_self_key", t, d, dq, true);
  linear (c, "attention_self_value", t, d, dq, true);
  attention_core (c, h, dh, "divu", "add", bs, true);
  copy (c, "merge_heads", "contiguous", tdq, tdq);
  linear (c, "attention_output_dense", t, dq, d, true);
  site (c, PERFMOD_SITE_ATTN_OUT);
  if (fuse)
    fused (c, "attention_output_add_ln", 2 * tnd, tn, d, "add ln");
  else {
    dropout (c, "attention_output_dropout", tnd);
    add2 (c, "attention_add", tn, d, tnd);
    unary (c, "attention_output_layer_norm", "ln", tn, d);
  }
  site (c, PERFMOD_SITE_MLP_IN);
  linear (c, "intermediate_dense", t, d, f, true);
  unary (c, "intermediate_act", "gelu", t, f);
  linear (c, "output_dense", t, f, d, true);
  site (c, PERFMOD_SITE_MLP_OUT);
  if (fuse)
    fused (c, "output_add_ln", 2 * tnd, tn, d, "add ln");
  else {
    dropout (c, "output_dropout", tnd);
    add2 (c, "output_add", tn, d, tnd);
    unary (c, "output_layer_norm", "ln", tn, d);
  }
}

static void
bert_graph (struct bctx *c)
{
  const struct model_cfg *m = c->m;
  int64_t t = c->t, tn = c->tn, b = c->b, s = c->s, d = m->hidden, v = c->vp;
  double td = (double) t * (double) d, tnd = (double) tn * (double) d;
  double bs = (double) b * (double) s, bd = (double) (b * d);
  bool fuse = c->o->fusion && !c->train;

  if (c->sh->embed) {
    copy (c, "position_ids", "getitem", (double) s + 1, (double) s);
    copy (c, "extended_mask", "getitem", bs, bs);
    unary (c, "mask_scale", "mulu", b, s);
    copy (c, "token_type_ids", "getitem", (double) s + 1, (double) s);
    if (fuse) {
      struct node *nd = add_node (c, "embeddings", "fused", (double) t, td);
      nd->fused = true;
      mem_op (nd, PHASE_FW, (double) t + td);
      vec_op (nd, PHASE_FW, "add", t, d);
      vec_op (nd, PHASE_FW, "add", t, d);
      vec_op (nd, PHASE_FW, "ln", t, d);
    }
    else {
      embedding (c, "word_embeddings", v, d);
      site (c, PERFMOD_SITE_EMBED);
      add2 (c, "token_type_add", tn, d, tnd);
      add2 (c, "position_add", tn, d, (double) s * (double) d);
      unary (c, "embeddings_layer_norm", "ln", tn, d);
      dropout (c, "embeddings_dropout", tnd);
    }
  }
  layer_span (c, "layer", bert_layer);
  if (!c->sh->head)
    return;
  /* The pooled first token; training adds the pre-training heads (masked
   * LM and next sentence), inference a two-way classifier, as NeuSight's
   * runs of BERT do. */
  copy (c, "pooler_first_token", "getitem", td, bd);
  linear (c, "pooler_dense", b, d, d, true);
  unary (c, "pooler_activation", "tanh", b, d);
  if (c->train) {
    linear (c, "cls_transform_dense", t, d, d, true);
    unary (c, "cls_transform_act", "gelu", t, d);
    unary (c, "cls_transform_layer_norm", "ln", t, d);
    site (c, PERFMOD_SITE_LOGITS);
    linear (c, "cls_decoder", t, d, v, true);
    linear (c, "cls_seq_relationship", b, d, 2, true);
    lm_loss (c, v);
  }
  else
    linear (c, "classifier", b, d, 2, true);
}

/* ---- Llama and Mixtral ---- */

static struct node *te_vec (struct bctx *c, const char *name, const char *op, int64_t rows,
                            int64_t cols, double fw, double bw, int acc);

/* RMSNorm as eager PyTorch runs it: x * rsqrt(mean(x^2) + eps) * w. */
static void
rmsnorm (struct bctx *c, const char *name, int64_t rows, int64_t cols)
{
  char buf[64];
  double e = (double) rows * (double) cols;
  struct node *nd;
  cat2 (buf, sizeof buf, name, "_pow");
  unary (c, buf, "powu", rows, cols);
  cat2 (buf, sizeof buf, name, "_mean");
  nd = add_node (c, buf, "mean", e, (double) rows);
  mem_op (nd, PHASE_FW, e + (double) rows);
  if (c->train) {
    mem_op (nd, PHASE_BW, e);
    mem_op (nd, PHASE_BW, e);
  }
  cat2 (buf, sizeof buf, name, "_eps");
  unary (c, buf, "addu", rows, 1);
  cat2 (buf, sizeof buf, name, "_rsqrt");
  copy (c, buf, "rsqrt", (double) rows, (double) rows);
  cat2 (buf, sizeof buf, name, "_mul");
  mul2 (c, buf, rows, cols, (double) rows);
  cat2 (buf, sizeof buf, name, "_weight");
  struct node *w = add_node (c, buf, "VECmul", e + (double) cols, e);
  vec_op (w, PHASE_FW, "mul", rows, cols);
  if (c->train) {
    vec_op (w, PHASE_BW, "mul", rows, cols);
    vec_op (w, PHASE_BW, "mul", rows, cols);
    vec_op (w, PHASE_ACC, "add", 1, cols);
  }
}

/* Rotary embeddings on rows x cols: x*cos + rotate_half(x)*sin. */
static void
rotary (struct bctx *c, const char *name, int64_t rows, int64_t cols)
{
  char buf[64];
  double e = (double) rows * (double) cols;
  cat2 (buf, sizeof buf, name, "_cos");
  mul2 (c, buf, rows, cols, e);
  cat2 (buf, sizeof buf, name, "_neg");
  unary (c, buf, "neg", rows, cols / 2);
  cat2 (buf, sizeof buf, name, "_cat");
  copy (c, buf, "cat", e, e);
  cat2 (buf, sizeof buf, name, "_sin");
  mul2 (c, buf, rows, cols, e);
  cat2 (buf, sizeof buf, name, "_add");
  add2 (c, buf, rows, cols, e);
}

static void
swiglu (struct bctx *c, const char *prefix, int64_t rows, int64_t d, int64_t f)
{
  char buf[64];
  double rf = (double) rows * (double) f;
  cat2 (buf, sizeof buf, prefix, "gate_proj");
  linear (c, buf, rows, d, f, false);
  cat2 (buf, sizeof buf, prefix, "up_proj");
  linear (c, buf, rows, d, f, false);
  cat2 (buf, sizeof buf, prefix, "act");
  unary (c, buf, "silu", rows, f);
  cat2 (buf, sizeof buf, prefix, "gate_mul");
  mul2 (c, buf, rows, f, rf);
  cat2 (buf, sizeof buf, prefix, "down_proj");
  linear (c, buf, rows, f, d, false);
}

/* ---- a serving engine's kernels ----
 * TensorRT-LLM, vLLM and SGLang do not run the eager modules' small
 * kernels: each norm is one kernel, fused with the residual add before it
 * (reads x and the residual, writes y and the sum); q/k norms are one
 * kernel each; q, k and v come from one GEMM, rotary embeddings and the
 * key/value-cache write from one kernel over q, k and v (TensorRT-LLM's
 * fused kernel; vLLM's and SGLang's rotary and cache kernels counted as
 * one); attention writes its output in the token-major layout (no
 * merge copy); gate and up are one GEMM to 2f, then one activation-and-
 * multiply kernel (reads 2f, writes f); routed experts read their tokens
 * in place and one kernel sums their weighted outputs (doc/serving.md).
 * Each kernel's traffic is what the fused op reads and writes per output
 * element (te_vec's convention). */

/* One norm kernel (RMSNorm, or LayerNorm where the model has it); with
 * `add`, fused with the residual add before it. */
static void
norm_kernel (struct bctx *c, const char *name, int64_t rows, int64_t cols, bool add)
{
  if (c->eng)
    te_vec (c, name, "ln", rows, cols, add ? 4 : 2, 0, 0);
  else if (c->m->layernorm)
    unary (c, name, "ln", rows, cols);
  else
    rmsnorm (c, name, rows, cols);
}

/* A gated feed-forward block (or NeoX's GeLU MLP) as an engine runs it. */
static void
eng_ffn (struct bctx *c, const char *prefix, int64_t rows, int64_t d, int64_t f, bool bias)
{
  char buf[64];
  bool gated = !c->m->layernorm;
  cat2 (buf, sizeof buf, prefix, gated ? "gate_up_proj" : "dense_h_to_4h");
  linear (c, buf, rows, d, gated ? 2 * f : f, bias);
  cat2 (buf, sizeof buf, prefix, gated ? "act_and_mul" : "act");
  te_vec (c, buf, c->m->gelu || !gated ? "gelu" : "silu", rows, f, gated ? 3 : 2, 0, 0);
  cat2 (buf, sizeof buf, prefix, gated ? "down_proj" : "dense_4h_to_h");
  linear (c, buf, rows, f, d, bias);
}

/* The reached experts' feed-forward blocks as an engine runs them: one
 * grouped GEMM over all of them for gate and up, one kernel for the
 * activation, one grouped GEMM for down.  A grouped GEMM of `reached`
 * experts, te rows each, is the GEMM with their weights side by side:
 * gate and up over N (te x d by d x reached 2f), down over K (te x
 * reached f by reached f x d, the sum over K the experts' weighted sum):
 * the same weights read, FLOPs and output tiles, in the range of shapes
 * the GEMM measurements hold. */
static void
eng_experts (struct bctx *c, int64_t reached, int64_t te, int64_t d, int64_t f)
{
  bool gated = !c->m->layernorm;
  linear (c, "experts_gate_up_proj", te, d, reached * (gated ? 2 * f : f), false);
  te_vec (c, "experts_act_and_mul", c->m->gelu || !gated ? "gelu" : "silu", reached * te, f,
          gated ? 3 : 2, 0, 0);
  linear (c, "experts_down_proj", te, reached * f, d, false);
}

/* The routed experts as the engine's fused MoE kernel (one MOE kernel,
 * perfmod-plugin.h): the `routed` tokens of the expert-parallel group
 * reach `reached` of this rank's `local` experts, f wide on it; the
 * busiest rank's load (the strategy's expert_load, times the router's
 * skew) scales its share.
 * The measured kernels spread their assignments over as many experts as
 * they can (aiconfigurator's balanced routing); a model's router picks
 * its experts per token, so fewer are reached where the tokens are few. */
static void
eng_moe (struct bctx *c, int64_t routed, int64_t local, int64_t d, int64_t f, double reached,
         double skew)
{
  const struct model_cfg *m = c->m;
  double tokens = (double) c->t * (double) d;
  struct node *nd = add_node (c, "experts", "MoE", tokens, tokens);
  struct kop *o = node_add_op (nd, PHASE_FW, PERFMOD_KERNEL_MOE, "moe");
  o->b = m->experts;
  o->h = local;
  o->m = routed;
  o->n = d;
  o->k = f;
  o->top_k = m->top_k;
  o->gated = !m->layernorm;
  o->load = (c->sh->expert_load > 1 ? c->sh->expert_load : 1) * skew;
  o->engine = c->engine;
  o->reached = reached;
}

/* Grouped-query attention as an engine runs it: one QKV GEMM, the q/k
 * norms, rotary embeddings with the cache write, fused attention reading
 * the grouped heads in place, the output projection. */
static void
eng_attention (struct bctx *c)
{
  const struct model_cfg *m = c->m;
  int64_t t = c->t, d = m->hidden, h = c->hp, kvh = c->kvp, dh = m->head_dim;
  double tq = (double) t * (double) (h * dh), causal = (double) c->s * (double) c->kv;
  linear (c, m->family == FAM_NEOX ? "attention_query_key_value" : "self_attn_qkv_proj", t, d,
          (h + 2 * kvh) * dh, m->qkv_bias);
  if (m->qk_norm) {
    norm_kernel (c, "self_attn_q_norm", t * h, dh, false);
    norm_kernel (c, "self_attn_k_norm", t * kvh, dh, false);
  }
  /* reads q, k and v; writes q rotated and k, v into the cache */
  te_vec (c, "rope_kv_cache_write", "mul", t * (h + 2 * kvh), dh, 2, 0, 0);
  if (kvh < h && !c->flash)
    repeat_kv (c, h, kvh, dh);
  c->softcap = m->softcap;
  attention_core (c, h, dh, "mulu", "add", (double) c->b * causal, false);
  c->softcap = false;
  if (!c->flash)
    copy (c, "merge_heads", "contiguous", tq, tq);
  linear (c, "self_attn_o_proj", t, h * dh, d, m->o_bias);
}

/* The share of a rank's experts that t tokens reach: each token is routed
 * to top_k of the E experts, so one expert is left untouched with
 * probability (1 - k/E)^t; a small batch (a decode step) reads the weights
 * of the experts it uses only, a large one reaches them all. */
static double
reach_share (const struct model_cfg *m, double t)
{
  return 1 - pow (1 - (double) m->top_k / (double) m->experts, t);
}

/* The local experts (of `local`) that t tokens reach, and in *te the
 * tokens each processes.  The local experts' routed assignments are
 * spread evenly over those reached, capped by the capacity where the
 * model has one.  The capacity holds per sequence (Hugging Face's Switch
 * router counts an expert's tokens along each sequence), so nseq
 * sequences allow nseq times it. */
static int64_t
experts_reached (const struct model_cfg *m, int64_t local, int64_t t, int64_t nseq, int64_t *te)
{
  double e = (double) m->experts, k = (double) m->top_k;
  double reached = (double) local * reach_share (m, (double) t);
  int64_t n = (int64_t) ceil (reached - 1e-9), cap = m->capacity * nseq;
  if (n < 1)
    n = 1;
  if (n > local)
    n = local;
  *te = (int64_t) ceil ((double) t * k * (double) local / e / (double) n - 1e-9);
  if (m->capacity > 0 && *te > cap)
    *te = cap;
  return n;
}

/* A routed expert's width w on this rank: over the experts' own
 * tensor-parallel degree where the plan gives one (ep within the tp
 * ranks, serving), else over tp as the rest of the feed-forward. */
static int64_t
expert_width (const struct bctx *c, int64_t w)
{
  return w / (c->sh->expert_ffn > 0 ? c->sh->expert_ffn : c->sh->ffn);
}

/* The tokens of how many ranks feed this rank's experts: ep's where its
 * ranks hold other tokens (from the data-parallel ranks), one where they
 * are the tp ranks, each of which has every token after attention, the
 * replicas' under attention data parallelism (shard.moe_feeds). */
static int64_t
expert_feeds (const struct shard *sh)
{
  return sh->moe_feeds > 0 ? sh->moe_feeds : sh->ep_in_tp ? 1 : sh->experts;
}

/* The expected largest of n standard normal variables: Blom's
 * approximation Phi^-1 ((n - 0.375) / (n + 0.25)), the inverse by
 * Abramowitz and Stegun 26.2.23 (within 4.5e-4): 1.05 for 4, 1.43 for 8,
 * 1.77 for 16 (the exact expectations 1.03, 1.42, 1.77). */
static double
normal_max (int n)
{
  double q, t;
  if (n < 2)
    return 0;
  q = 1 - ((double) n - 0.375) / ((double) n + 0.25);
  t = sqrt (-2 * log (q));
  return t - (2.515517 + 0.802853 * t + 0.010328 * t * t)
             / (1 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t);
}

/* An expert-parallel layer ends in a collective (tp's all-reduce with ep
 * within the tp ranks, the combine otherwise), so it lasts as long as its
 * busiest rank: each of the local experts t tokens may reach is reached
 * with probability p (reach_share), independently, so a rank reaches
 * local p of them on average with a variance local p (1 - p), and the most
 * of ep ranks normal_max (ep) standard deviations more, at most all of
 * them (ep 1: the mean).  Nothing fitted: a decode step's few tokens land
 * unevenly, a prefill's reach every expert everywhere. */
static double
busiest_reach (const struct model_cfg *m, int64_t local, int64_t t, int ep)
{
  double p = reach_share (m, (double) t);
  double mu = (double) local * p, sd = sqrt ((double) local * p * (1 - p));
  return fmin ((double) local, mu + (ep > 1 ? sd * normal_max (ep) : 0));
}

static void
moe_block (struct bctx *c, int64_t f, const char *act)
{
  const struct model_cfg *m = c->m;
  const struct shard *sh = c->sh;
  /* Expert parallelism: this rank holds experts/ep experts, each fed by
   * the tokens of all ep ranks (or, ep within the tp ranks, by this
   * rank's, which are all); the busiest rank gets expert_load times the
   * even share. */
  int64_t local = m->experts / sh->experts, te;
  int64_t t = c->t, d = m->hidden;
  int64_t fed = t * expert_feeds (sh);
  int64_t reached = experts_reached (m, local, fed, c->b * expert_feeds (sh), &te);
  /* the layer waits for its busiest rank (the all-reduce, reduce-scatter
   * or combine after it): its experts, each with the mean tokens */
  double busy = busiest_reach (m, local, fed, sh->experts);
  double ted;
  if ((int64_t) ceil (busy - 1e-9) > reached)
    reached = (int64_t) ceil (busy - 1e-9);
  if (sh->expert_load > 1)
    te = (int64_t) ceil ((double) te * sh->expert_load);
  ted = (double) te * (double) d;
  linear (c, "router", t, d, m->experts, false);
  if (c->eng) {                          /* top-k softmax, then the engine's fused MoE
                                            kernel, or the experts' GEMMs and one weighted sum */
    te_vec (c, "router_topk", "softmax", t, m->experts, 2, 0, 0);
    size_t first = c->g->n;
    site (c, PERFMOD_SITE_MOE_DISPATCH);
    double alpha = routing_alpha (c->o->routing);
    if (c->engine && alpha > 0) {
      /* the engine's router under a power law (routing.c): its busiest
       * rank's load and reach, for the kernel as for the tables' rows */
      double reach, load = routing_powerlaw (fed, m->experts, m->top_k, sh->experts, alpha,
                                             &reach);
      eng_moe (c, fed, local, d, f, reach > 0 ? reach : busy, load > 1 ? load : 1);
    }
    else if (c->engine)
      eng_moe (c, fed, local, d, f, busy, 1);
    else
      eng_experts (c, reached, te, d, f);
    site (c, PERFMOD_SITE_MOE_COMBINE);
    for (size_t i = first; i < c->g->n; i++)
      c->g->nodes[i].moe_fed = true;
    if (!c->engine)
      te_vec (c, "moe_sum", "add", t, d, (double) m->top_k + 1, 0, 0);
    return;
  }
  unary (c, "router_softmax", "softmax", t, m->experts);
  copy (c, "router_topk", "topk", (double) (t * m->experts), (double) (t * m->top_k));
  site (c, PERFMOD_SITE_MOE_DISPATCH);
  /* Under even routing every expert reached gets the same tokens: one is
   * built, its nodes `reached` copies (--per-op counts them so). */
  {
    const char *p = "experts_";
    char buf[64];
    size_t from = c->g->n;
    cat2 (buf, sizeof buf, p, "gather");
    copy (c, buf, "getitem", ted, ted);
    if (strcmp (act, "silu") == 0)
      swiglu (c, p, te, d, f);
    else {
      cat2 (buf, sizeof buf, p, "wi");
      linear (c, buf, te, d, f, false);
      cat2 (buf, sizeof buf, p, "act");
      unary (c, buf, act, te, f);
      cat2 (buf, sizeof buf, p, "dropout");
      dropout (c, buf, (double) te * (double) f);
      cat2 (buf, sizeof buf, p, "wo");
      linear (c, buf, te, f, d, false);
    }
    cat2 (buf, sizeof buf, p, "weight");
    mul2 (c, buf, te, d, (double) te);
    cat2 (buf, sizeof buf, p, "scatter");
    copy (c, buf, "index_add", ted, ted);
    set_copies (c, from, reached);
  }
  site (c, PERFMOD_SITE_MOE_COMBINE);
}

static void
llama_layer (struct bctx *c)
{
  const struct model_cfg *m = c->m;
  int64_t t = c->t, tn = c->tn, d = m->hidden, h = c->hp, kvh = c->kvp;
  int64_t dh = m->head_dim;
  double tnd = (double) tn * (double) d, tq = (double) t * (double) (h * dh);
  double causal = (double) c->s * (double) c->kv;

  if (c->eng) {                          /* the residual adds ride in the norms */
    site (c, PERFMOD_SITE_PARAMS);
    norm_kernel (c, "input_layernorm", tn, d, true);
    site (c, PERFMOD_SITE_ATTN_IN);
    eng_attention (c);
    site (c, PERFMOD_SITE_ATTN_OUT);
    norm_kernel (c, "post_attention_layernorm", tn, d, true);
    site (c, PERFMOD_SITE_MLP_IN);
    if (m->family == FAM_MIXTRAL)
      moe_block (c, expert_width (c, m->ffn), "silu");
    else
      eng_ffn (c, "mlp_", t, d, c->fp, false);
    site (c, PERFMOD_SITE_MLP_OUT);
    return;
  }
  site (c, PERFMOD_SITE_PARAMS);
  rmsnorm (c, "input_layernorm", tn, d);
  site (c, PERFMOD_SITE_ATTN_IN);
  linear (c, "self_attn_q_proj", t, d, h * dh, false);
  linear (c, "self_attn_k_proj", t, d, kvh * dh, false);
  linear (c, "self_attn_v_proj", t, d, kvh * dh, false);
  rotary (c, "rope_q", t * h, dh);
  rotary (c, "rope_k", t * kvh, dh);
  if (c->kv > c->s) {                    /* decode: append to the cache, preallocated */
    double kvnew = 2.0 * (double) t * (double) (kvh * dh);
    copy (c, "kv_cache_write", "copy", kvnew, 0);
  }
  if (kvh < h)
    repeat_kv (c, h, kvh, dh);
  attention_core (c, h, dh, "divu", "add", (double) c->b * causal, false);
  copy (c, "merge_heads", "contiguous", tq, tq);
  linear (c, "self_attn_o_proj", t, h * dh, d, false);
  site (c, PERFMOD_SITE_ATTN_OUT);
  add2 (c, "add_1", tn, d, tnd);
  rmsnorm (c, "post_attention_layernorm", tn, d);
  site (c, PERFMOD_SITE_MLP_IN);
  if (m->family == FAM_MIXTRAL)
    moe_block (c, expert_width (c, m->ffn), "silu");
  else
    swiglu (c, "mlp_", t, d, c->fp);
  site (c, PERFMOD_SITE_MLP_OUT);
  add2 (c, "add_2", tn, d, tnd);
}

static void
llama_graph (struct bctx *c)
{
  int64_t t = c->t, d = c->m->hidden, v = c->vp;
  if (c->sh->embed) {
    embedding (c, "embed_tokens", v, d);
    site (c, PERFMOD_SITE_EMBED);
  }
  layer_span (c, "layers", llama_layer);
  if (c->sh->head) {
    norm_kernel (c, "norm", c->tn, d, c->eng);   /* the engine's: with the last residual add */
    site (c, PERFMOD_SITE_LOGITS);
    /* a serving engine takes the logits of each sequence's last token only */
    linear (c, "lm_head", c->eng ? c->b : t, d, v, false);
    lm_loss (c, v);
  }
}

/* ---- Qwen2/3 and their MoEs, DeepSeek-V2/V3, gpt-oss, Gemma 1/2/3, GPT-NeoX ----
 * Hugging Face's eager modules again, with what each family adds to the
 * Llama layer: biases, q/k norms, Gemma's extra norms and GeGLU, NeoX's
 * LayerNorm, partial rotary and parallel residual, routed experts beside
 * shared ones, and DeepSeek's latent attention.  Layers differ within a
 * model (dense-first, sliding or full attention): one layer of each kind a
 * stage holds is built and counted as often as the stage has it. */

/* A dense feed-forward block of width f: gated (SwiGLU, Gemma's GeGLU)
 * or GPT-NeoX's GeLU MLP. */
static void
ffn_block (struct bctx *c, const char *prefix, int64_t rows, int64_t f, bool bias)
{
  const struct model_cfg *m = c->m;
  int64_t d = m->hidden;
  double rf = (double) rows * (double) f;
  char buf[64];
  if (c->eng) {
    eng_ffn (c, prefix, rows, d, f, bias);
    return;
  }
  if (m->layernorm) {
    cat2 (buf, sizeof buf, prefix, "dense_h_to_4h");
    linear (c, buf, rows, d, f, bias);
    cat2 (buf, sizeof buf, prefix, "act");
    unary (c, buf, "gelu", rows, f);
    cat2 (buf, sizeof buf, prefix, "dense_4h_to_h");
    linear (c, buf, rows, f, d, bias);
    return;
  }
  cat2 (buf, sizeof buf, prefix, "gate_proj");
  linear (c, buf, rows, d, f, bias);
  cat2 (buf, sizeof buf, prefix, "up_proj");
  linear (c, buf, rows, d, f, bias);
  cat2 (buf, sizeof buf, prefix, "act");
  unary (c, buf, m->gelu ? "gelu" : "silu", rows, f);
  cat2 (buf, sizeof buf, prefix, "gate_mul");
  mul2 (c, buf, rows, f, rf);
  cat2 (buf, sizeof buf, prefix, "down_proj");
  linear (c, buf, rows, f, d, bias);
}

/* Routed experts (those a step reaches, as for Mixtral) and the shared
 * experts every token passes through, one SwiGLU of their summed width;
 * Qwen2-MoE gates its shared expert by a sigmoid of the token. */
static void
modern_moe (struct bctx *c)
{
  const struct model_cfg *m = c->m;
  int64_t t = c->t, d = m->hidden;
  double td = (double) t * (double) d;
  moe_block (c, expert_width (c, m->moe_ffn), "silu");
  if (m->shared_ffn == 0)
    return;
  ffn_block (c, "shared_expert_", t, m->shared_ffn / c->sh->ffn, false);
  if (m->shared_gate) {
    linear (c, "shared_expert_gate", t, d, 1, false);
    mul2 (c, "shared_expert_gated", t, d, (double) t);
  }
  add2 (c, "shared_expert_add", t, d, td);
}

/* Grouped-query attention as the Llama layer runs it, with the family's
 * fused query-key-value projection (NeoX), biases, q/k norms, partial
 * rotary and soft-capped scores. */
static void
gqa_attention (struct bctx *c)
{
  const struct model_cfg *m = c->m;
  int64_t t = c->t, d = m->hidden, h = c->hp, kvh = c->kvp, dh = m->head_dim;
  int64_t rd = m->rotary_dim > 0 ? m->rotary_dim : dh;
  double tq = (double) t * (double) (h * dh), causal = (double) c->s * (double) c->kv;
  if (c->eng) {
    eng_attention (c);
    return;
  }
  if (m->family == FAM_NEOX)
    linear (c, "attention_query_key_value", t, d, (h + 2 * kvh) * dh, m->qkv_bias);
  else {
    linear (c, "self_attn_q_proj", t, d, h * dh, m->qkv_bias);
    linear (c, "self_attn_k_proj", t, d, kvh * dh, m->qkv_bias);
    linear (c, "self_attn_v_proj", t, d, kvh * dh, m->qkv_bias);
  }
  if (m->qk_norm) {
    rmsnorm (c, "self_attn_q_norm", t * h, dh);
    rmsnorm (c, "self_attn_k_norm", t * kvh, dh);
  }
  rotary (c, "rope_q", t * h, rd);
  rotary (c, "rope_k", t * kvh, rd);
  if (c->kv > c->s) {
    double kvnew = 2.0 * (double) t * (double) (kvh * dh);
    copy (c, "kv_cache_write", "copy", kvnew, 0);
  }
  if (kvh < h)
    repeat_kv (c, h, kvh, dh);
  c->softcap = m->softcap;
  attention_core (c, h, dh, "mulu", "add", (double) c->b * causal, false);
  c->softcap = false;
  copy (c, "merge_heads", "contiguous", tq, tq);
  linear (c, "self_attn_o_proj", t, h * dh, d, m->o_bias);
}

/* Multi-head latent attention (DeepSeek-V2/V3).  Queries through the
 * q_lora_rank bottleneck (or one projection); keys and values from one
 * down-projection to the kv_lora_rank latent and a rope key shared by the
 * heads.  A prefill or training step expands the latent to every head's
 * key (nope + rope wide) and value (v_head_dim); a decode step keeps the
 * latent as its cache and works in it, as vLLM, SGLang and TensorRT-LLM
 * do: the queries are absorbed into the latent (W_UK), all heads attend
 * to the one latent head (kv_lora_rank + rope wide), and the context goes
 * out through W_UV. */
static void
mla_attention (struct bctx *c)
{
  const struct model_cfg *m = c->m;
  int64_t t = c->t, d = m->hidden, h = c->hp, nope = m->qk_nope_dim, rope = m->qk_rope_dim;
  int64_t qk = nope + rope, vd = m->v_head_dim, kvl = m->kv_lora_rank, ql = m->q_lora_rank;
  int64_t bh = c->b * h;
  double causal = (double) c->s * (double) c->kv;
  size_t first;

  if (ql > 0) {
    linear (c, "self_attn_q_a_proj", t, d, ql, m->qkv_bias);
    norm_kernel (c, "self_attn_q_a_layernorm", t, ql, false);
    linear (c, "self_attn_q_b_proj", t, ql, h * qk, false);
  }
  else
    linear (c, "self_attn_q_proj", t, d, h * qk, false);
  linear (c, "self_attn_kv_a_proj_with_mqa", t, d, kvl + rope, m->qkv_bias);
  norm_kernel (c, "self_attn_kv_a_layernorm", t, kvl, false);
  if (c->eng)                            /* one kernel over the queries' and the key's rope parts */
    te_vec (c, "rope", "mul", t * (h + 1), rope, 2, 0, 0);
  else {
    rotary (c, "rope_q", t * h, rope);
    rotary (c, "rope_k", t, rope);
  }
  if (c->kv <= c->s) {
    double tk = (double) t * (double) (h * qk), tv = (double) t * (double) (h * vd);
    linear (c, "self_attn_kv_b_proj", t, kvl, h * (nope + vd), false);
    copy (c, "query_states", "cat", tk, tk);
    copy (c, "key_states", "cat", tk, tk);
    first = c->g->n;
    if (c->flash)                        /* values padded to the key width, as FA2 takes them */
      flash_attention (c, h, h, qk);
    else {
      bmm (c, "scores", bh, c->s, qk, c->kv);
      unary (c, "scale", "mulu", bh * c->s, c->kv);
      add2 (c, "mask", bh * c->s, c->kv, (double) c->b * causal);
      unary (c, "softmax", "softmax", bh * c->s, c->kv);
      bmm (c, "context", bh, c->s, c->kv, vd);
      mark_core (c, first);
    }
    if (!(c->eng && c->flash))
      copy (c, "merge_heads", "contiguous", tv, tv);
  }
  else {
    copy (c, "kv_cache_write", "copy", (double) t * (double) (kvl + rope), 0);
    bmm (c, "q_absorb", h, t, nope, kvl);
    first = c->g->n;
    if (c->flash)
      flash_attention_kv (c, h, 1, kvl + rope, true);
    else {                               /* the heads as rows against the one latent */
      bmm (c, "scores", c->b, h * c->s, kvl + rope, c->kv);
      unary (c, "scale", "mulu", bh * c->s, c->kv);
      unary (c, "softmax", "softmax", bh * c->s, c->kv);
      bmm (c, "context", c->b, h * c->s, c->kv, kvl);
      mark_core (c, first);
    }
    bmm (c, "v_absorb", h, t, kvl, vd);
  }
  linear (c, "self_attn_o_proj", t, h * vd, d, m->o_bias);
}

static void
modern_layer (struct bctx *c)
{
  const struct model_cfg *m = c->m;
  int64_t t = c->t, tn = c->tn, d = m->hidden;
  double tnd = (double) tn * (double) d;
  /* an engine fuses each residual add into the norm after it (NeoX's
   * parallel residual has none after its adds) */
  bool fold = c->eng && !m->parallel_residual;

  site (c, PERFMOD_SITE_PARAMS);
  norm_kernel (c, "input_layernorm", tn, d, fold);
  site (c, PERFMOD_SITE_ATTN_IN);
  if (m->kv_lora_rank > 0)
    mla_attention (c);
  else
    gqa_attention (c);
  site (c, PERFMOD_SITE_ATTN_OUT);
  if (m->post_norms)
    norm_kernel (c, "post_attention_layernorm", tn, d, false);
  if (!m->parallel_residual && !fold)    /* NeoX: the MLP reads the layer's input */
    add2 (c, "add_1", tn, d, tnd);
  norm_kernel (c, m->post_norms ? "pre_feedforward_layernorm" : "post_attention_layernorm", tn, d,
               fold);
  site (c, PERFMOD_SITE_MLP_IN);
  if (c->moe)
    modern_moe (c);
  else
    ffn_block (c, "mlp_", t, c->fp, m->mlp_bias);
  site (c, PERFMOD_SITE_MLP_OUT);
  if (m->post_norms)
    norm_kernel (c, "post_feedforward_layernorm", tn, d, false);
  if (m->parallel_residual)
    add2 (c, "add_attn_mlp", tn, d, tnd);
  if (!fold)
    add2 (c, "add_2", tn, d, tnd);
}

/* The stage's layers, one built per kind (routed or not, sliding or not),
 * each counted as many times as the stage has layers of its kind, named
 * stem_I after the first of them. */
static void
layer_kinds (struct bctx *c, const char *stem, void (*layer) (struct bctx *c))
{
  const struct model_cfg *m = c->m;
  int64_t n = c->sh->layers ? c->sh->layers : m->layers;
  int64_t count[MODEL_LAYER_KINDS], at[MODEL_LAYER_KINDS];
  model_layer_counts (m, c->sh->first_layer, n, count, at);
  c->g->layer_begin = c->g->n;
  for (int k = 0; k < MODEL_LAYER_KINDS; k++) {
    size_t from = c->g->n;
    int64_t context = c->kv;
    if (count[k] == 0)
      continue;
    set_prefix (c, stem, (int) at[k]);
    c->moe = k & 1;
    if (k & 2) {
      c->window = m->window;
      if (c->kv > c->s && c->kv > m->window)   /* a decode step reads the window's keys */
        c->kv = m->window;
    }
    layer (c);
    c->kv = context;
    c->window = 0;
    for (size_t j = from; j < c->g->n; j++)
      c->g->nodes[j].count = count[k];
  }
  c->prefix[0] = '\0';
  c->g->layer_end = c->g->n;
  c->g->repeat = n;
}

static void
modern_graph (struct bctx *c)
{
  const struct model_cfg *m = c->m;
  int64_t t = c->t, tn = c->tn, d = m->hidden, v = c->vp;

  if (c->sh->embed) {
    embedding (c, m->family == FAM_NEOX ? "embed_in" : "embed_tokens", v, d);
    site (c, PERFMOD_SITE_EMBED);
    if (m->family == FAM_GEMMA)          /* x sqrt(hidden) */
      unary (c, "embed_scale", "mulu", tn, d);
  }
  layer_kinds (c, "layers", modern_layer);
  if (c->sh->head) {
    norm_kernel (c, m->family == FAM_NEOX ? "final_layer_norm" : "norm", tn, d,
                 c->eng && !m->parallel_residual);
    site (c, PERFMOD_SITE_LOGITS);
    /* a serving engine takes the logits of each sequence's last token only */
    int64_t lt = c->eng ? c->b : t;
    linear (c, m->family == FAM_NEOX ? "embed_out" : "lm_head", lt, d, v, false);
    if (m->softcap) {                    /* Gemma 2's final logit soft-capping */
      unary (c, "logits_softcap_div", "divu", lt, v);
      unary (c, "logits_softcap_tanh", "tanh", lt, v);
      unary (c, "logits_softcap_mul", "mulu", lt, v);
    }
    lm_loss (c, v);
  }
}

/* ---- Megatron-Core with Transformer Engine ---- */

/* The decoder layer Megatron-Core builds with Transformer Engine's modules
 * (megatron/core/models/gpt, TE spec) for GPT-3, Llama and Mixtral, in
 * 16-bit training: TE's LayerNormLinear runs the norm as one kernel and
 * the GEMM (its bias in the epilogue); rotary embeddings are one fused
 * kernel; attention is fused (cuDNN or FlashAttention) or, unfused, two
 * products around one fused scale-mask-softmax; the projections' biases,
 * dropout and the residual add are one kernel (bias_dropout_add); the MLP
 * is one GEMM to 2f (gate and up together when gated), one fused
 * activation (bias-GeLU or SwiGLU), one GEMM back; the loss is
 * Megatron's fused cross-entropy.  Each fused kernel's traffic is what it
 * reads and writes per output element; doc/megatron.md has the list. */

/* A fused vector kernel over rows x cols: fw and bw elements moved per
 * output element (bw 0: no backward kernel), and with `acc` a gradient
 * sum over cols per parameter vector (a norm's weight, a bias). */
static struct node *
te_vec (struct bctx *c, const char *name, const char *op, int64_t rows, int64_t cols, double fw,
        double bw, int acc)
{
  double out = (double) rows * (double) cols;
  char opname[32];
  struct node *nd;
  cat2 (opname, sizeof opname, "VEC", op);
  nd = add_node (c, name, opname, out * (fw - 1), out);
  vec_op (nd, PHASE_FW, op, rows, cols)->traffic = fw;
  if (!c->train)
    return nd;
  if (bw > 0)
    vec_op (nd, PHASE_BW, op, rows, cols)->traffic = bw;
  for (int i = 0; i < acc; i++)
    vec_op (nd, PHASE_ACC, "add", 1, cols);
  return nd;
}

/* LayerNorm or RMSNorm: reads x, writes y; backward reads x and dy,
 * writes dx; the weight's (and LayerNorm's bias's) gradient sums. */
static void
te_norm (struct bctx *c, const char *name, int64_t rows, int64_t cols)
{
  bool rms = c->m->family != FAM_GPT2 && c->m->family != FAM_OPT;
  te_vec (c, name, "ln", rows, cols, 2, 3, rms ? 1 : 2);
}

/* bias + dropout + residual add: reads the output and the residual,
 * writes the sum (and a one-byte mask with dropout); backward applies the
 * mask and accumulates the residual's gradient. */
static void
te_residual (struct bctx *c, const char *name, int64_t rows, int64_t cols, bool bias)
{
  te_vec (c, name, "add", rows, cols, bias ? 3.5 : 3, bias ? 3.5 : 3, bias ? 1 : 0);
}

/* The attention core, unfused: QK^T, one fused scale-mask-softmax (and
 * dropout), the context product; grouped key/value heads expanded. */
static void
te_unfused_attention (struct bctx *c, int64_t h, int64_t kvh, int64_t dh, bool drop)
{
  int64_t bh = c->b * h, rows = bh * c->s;
  double scores = (double) rows * (double) c->kv;
  size_t first = c->g->n;
  if (kvh < h)
    repeat_kv (c, h, kvh, dh);
  bmm (c, "scores", bh, c->s, dh, c->kv);
  te_vec (c, "scale_mask_softmax", "softmax", rows, c->kv, 2, 3, 0);
  if (drop)
    dropout (c, "attention_dropout", scores);
  bmm (c, "context", bh, c->s, c->kv, dh);
  mark_core (c, first);
}

/* The host's launches of Megatron-Core's MoE layer besides the kernels
 * the graph models (forward, backward), counted in its code (Megatron-LM
 * router.py, moe_utils.py, token_dispatcher.py; Transformer Engine's
 * permutation.py, grouped_linear.py) for the unfused router and the
 * fused permutation: the router's backward casts to fp32 and its
 * gradient's accumulation; the top-k's scores, scatters and routing map;
 * the load-balancing loss's scores, reductions and tracker; the
 * dispatch's preprocessing (counts, splits, their all-gather over ep,
 * four copies to the host), the permutation's row map, the probabilities'
 * all-to-all and the chunks sorted to local experts; the combine's chunks
 * sorted back.  gpt-oss's fc2 bias is added apart (skip_bias_add).  Not
 * counted: the stream events of TE's multi-stream grouped GEMM (C++, about
 * a microsecond each) and Megatron-Bridge's force-balancing (a benchmark
 * setting).  Counts, not times: the host's cost is launches x host_us
 * (doc/moe.md). */
static const unsigned short MOE_ROUTER_LAUNCHES[NPHASES] = { 0, 5, 0 };
static const unsigned short MOE_TOPK_LAUNCHES[NPHASES] = { 9, 3, 0 };
static const unsigned short MOE_AUX_LAUNCHES[NPHASES] = { 14, 8, 0 };
static const unsigned short MOE_DISPATCH_LAUNCHES[NPHASES] = { 17, 1, 0 };
static const unsigned short MOE_COMBINE_LAUNCHES[NPHASES] = { 3, 0, 0 };
static const unsigned short MOE_FC2_BIAS_LAUNCHES[NPHASES] = { 2, 4, 0 };

static void
host_extra (struct node *nd, const unsigned short launches[NPHASES])
{
  for (int p = 0; p < NPHASES; p++)
    nd->host_launches[p] += launches[p];
}

/* Routed experts as Megatron-Core's MoE layer runs them: router GEMM
 * (its bias where the model has one: gpt-oss, DeepSeek-V3's expert bias),
 * fused top-k softmax (or sigmoid), in training the load-balancing loss
 * over the scores (one more pass over them and its gradient), tokens
 * permuted to their experts, each local expert's fc1 (gate and up),
 * SwiGLU and fc2 (a grouped GEMM: the same products; gpt-oss's biases in
 * their epilogues), the outputs unpermuted and weighted back.  Under
 * sequence parallelism (sh->moe_tp_after) the router and the permutation
 * see the rank's share of the tokens; the experts, every tp rank's. */
static void
te_moe (struct bctx *c, int64_t f)
{
  const struct model_cfg *m = c->m;
  const struct shard *sh = c->sh;
  int64_t local = m->experts / sh->experts, d = m->hidden, te;
  int64_t t = sh->moe_tp_after ? c->tn : c->t;
  /* tokens the experts see: every tp rank's share, or with whole experts
   * (etp=1) the ep ranks' shares alone */
  int64_t fed = sh->moe_tp_after && sh->expert_ffn == 1 ? c->tn : c->t;
  int64_t reached = experts_reached (m, local, fed * expert_feeds (sh),
                                     c->b * expert_feeds (sh), &te);
  double routed = (double) t * (double) m->top_k * (double) d;
  bool bias = m->family == FAM_GPT_OSS;
  struct node *nd;
  if (sh->expert_load > 1)
    te = (int64_t) ceil ((double) te * sh->expert_load);
  linear_node (c, "router", t, d, m->experts, m->router_bias, true);  /* Megatron's own GEMM */
  host_extra (&c->g->nodes[c->g->n - 1], MOE_ROUTER_LAUNCHES);
  nd = te_vec (c, "router_topk", "softmax", t, m->experts, 2, 3, 0);
  host_extra (nd, MOE_TOPK_LAUNCHES);
  if (c->train)
    host_extra (te_vec (c, "router_aux_loss", "mul", t, m->experts, 2, 2, 0), MOE_AUX_LAUNCHES);
  copy (c, "permute", "index_select", routed, routed);
  nd = &c->g->nodes[c->g->n - 1];
  host_extra (nd, MOE_DISPATCH_LAUNCHES);
  nd->host_sync = true;                  /* the experts' token counts copied to the host */
  site (c, PERFMOD_SITE_MOE_DISPATCH);
  {                                      /* the reached experts: one built, `reached` copies */
    size_t from = c->g->n, act;
    linear (c, "experts_fc1", te, d, 2 * f, bias);
    act = c->g->n;
    te_vec (c, "experts_swiglu", "silu", te, f, 3, 5, 0);
    mark_rmod (c, act, RM_MOE_ACT);
    c->g->nodes[act].host_once = true;   /* one kernel over every expert's tokens */
    linear (c, "experts_fc2", te, f, d, bias);
    if (bias)
      host_extra (&c->g->nodes[c->g->n - 1], MOE_FC2_BIAS_LAUNCHES);
    set_copies (c, from, reached);
  }
  site (c, PERFMOD_SITE_MOE_COMBINE);
  copy (c, "unpermute", "index_add", routed, (double) t * (double) d);
  host_extra (&c->g->nodes[c->g->n - 1], MOE_COMBINE_LAUNCHES);
}

/* Multi-head latent attention as Megatron-Core builds it with Transformer
 * Engine (MLASelfAttention): the query down-projection and, after its
 * norm (TE's LayerNormLinear), the up-projection to every head's nope and
 * rope widths (one projection where q_lora_rank is 0); the key/value
 * down-projection to the latent and the shared rope key, the latent's
 * norm and its up-projection to every head's nope key and value; one
 * fused rotary kernel over the queries' and the key's rope parts; queries
 * and keys concatenated to nope + rope wide; fused attention (the values
 * padded to the key width) or unfused; the output projection.  The
 * down-projections are whole on every tensor-parallel rank. */
static void
te_mla (struct bctx *c)
{
  const struct model_cfg *m = c->m;
  int64_t t = c->t, d = m->hidden, h = c->hp, nope = m->qk_nope_dim, rope = m->qk_rope_dim;
  int64_t qk = nope + rope, vd = m->v_head_dim, kvl = m->kv_lora_rank, ql = m->q_lora_rank;
  double tk = (double) t * (double) (h * qk);
  size_t up;
  if (ql > 0) {
    linear (c, "linear_q_down_proj", t, d, ql, false);
    te_norm (c, "q_layernorm", t, ql);
    up = c->g->n;
    linear (c, "linear_q_up_proj", t, ql, h * qk, false);
    mark_rmod (c, up, RM_MLA_UP);
  }
  else
    linear (c, "linear_q_proj", t, d, h * qk, false);
  linear (c, "linear_kv_down_proj", t, d, kvl + rope, false);
  te_norm (c, "kv_layernorm", t, kvl);
  up = c->g->n;                          /* Megatron-Core's mla_up_proj module: the
                                            up-projections and the rotary */
  linear (c, "linear_kv_up_proj", t, kvl, h * (nope + vd), false);
  te_vec (c, "rotary", "mul", t * (h + 1), rope, 2, 2, 0);
  copy (c, "query_cat", "cat", tk, tk);
  copy (c, "key_cat", "cat", tk, tk);
  mark_rmod (c, up, RM_MLA_UP);
  if (c->flash)
    flash_attention (c, h, h, qk);
  else
    te_unfused_attention (c, h, h, qk, false);
  linear (c, "linear_proj", t, h * vd, d, false);
}

static void
te_layer (struct bctx *c)
{
  const struct model_cfg *m = c->m;
  int64_t t = c->t, tn = c->tn, d = m->hidden, h = c->hp, kvh = c->kvp, dh = m->head_dim;
  int64_t f = c->fp;
  bool gpt = m->family == FAM_GPT2;      /* biases, dropout, GeLU; else none, SwiGLU */
  bool routed = c->moe;

  size_t at;                             /* the first node of a site's collectives */

  site (c, PERFMOD_SITE_PARAMS);
  at = c->g->n;
  te_norm (c, "input_layernorm", tn, d);
  mark_rmod (c, at, RM_LAYERNORM);
  at = c->g->n;
  site (c, PERFMOD_SITE_ATTN_IN);
  pair_gemm (c, at, c->g->n, c->g->n);
  if (m->kv_lora_rank > 0)
    te_mla (c);
  else {
    linear_column (c, "linear_qkv", d, (h + 2 * kvh) * dh, gpt || m->qkv_bias);
    if (m->qk_norm) {                    /* Qwen3: TE's norm over each query and key head */
      te_norm (c, "q_layernorm", t * h, dh);
      te_norm (c, "k_layernorm", t * kvh, dh);
    }
    if (!gpt)                            /* over rotary_dim of each head where partial (GLM) */
      te_vec (c, "rotary", "mul", t * (h + kvh), m->rotary_dim > 0 ? m->rotary_dim : dh, 2, 2,
              0);
    if (c->flash)                        /* gpt-oss's sinks: one more logit a head, inside */
      flash_attention (c, h, kvh, dh);
    else
      te_unfused_attention (c, h, kvh, dh, gpt);
    linear_row (c, "linear_proj", h * dh, d, false);
  }
  at = c->g->n;
  site (c, PERFMOD_SITE_ATTN_OUT);
  pair_gemm (c, at, c->g->n, at - 1);
  te_residual (c, "bias_dropout_add_1", tn, d, gpt || m->o_bias);
  at = c->g->n;
  te_norm (c, "pre_mlp_layernorm", tn, d);
  mark_rmod (c, at, RM_LAYERNORM);
  /* a routed layer's tokens stay sharded where they are gathered after
   * dispatch (moe_tp_after): only its shared experts, a tp MLP, gather */
  bool mlp_site = !routed || !c->sh || !c->sh->moe_tp_after || m->shared_ffn > 0;
  at = c->g->n;
  if (mlp_site)
    site (c, PERFMOD_SITE_MLP_IN);
  /* a routed layer's grouped GEMMs are not Transformer Engine's
   * userbuffer-overlapped linears: its collectives stay exposed */
  if (routed) {
    te_moe (c, expert_width (c, m->moe_ffn > 0 ? m->moe_ffn : m->ffn));
    if (m->shared_ffn > 0) {             /* Qwen2-MoE's and DeepSeek's shared experts; Qwen2-MoE's
                                            gated by a sigmoid */
      int64_t sf = m->shared_ffn / c->sh->ffn;
      size_t from = c->g->n;
      linear_column (c, "shared_experts_linear_fc1", d, 2 * sf, false);
      te_vec (c, "shared_experts_swiglu", "silu", t, sf, 3, 5, 0);
      linear_row (c, "shared_experts_linear_fc2", sf, d, false);
      if (m->shared_gate) {
        linear (c, "shared_experts_gate", t, d, 1, false);
        te_vec (c, "shared_experts_gate_mul", "mul", t, d, 3, 3, 0);
      }
      for (size_t i = from; i < c->g->n; i++)
        c->g->nodes[i].shared_expert = true;
    }
  }
  else {
    size_t mlp = c->g->n;
    pair_gemm (c, at, c->g->n, c->g->n);
    linear_column (c, "linear_fc1", d, gpt ? f : 2 * f, false);
    if (gpt)
      te_vec (c, "bias_gelu", "gelu", t, f, 2, 3, 1);
    else
      te_vec (c, "swiglu", "silu", t, f, 3, 5, 0);
    linear_row (c, "linear_fc2", f, d, false);
    mark_rmod (c, mlp, RM_MLP);
  }
  at = c->g->n;
  if (mlp_site)
    site (c, PERFMOD_SITE_MLP_OUT);
  if (!routed)
    pair_gemm (c, at, c->g->n, at - 1);
  te_residual (c, "bias_dropout_add_2", tn, d, gpt);
}

/* Megatron-Core's multi-token prediction layer k (MultiTokenPredictionLayer,
 * DeepSeek-V3's MTP module), after the output layer on the last stage:
 * the tokens one further on embedded again (the shared embedding), that
 * and the previous depth's hidden state normed (enorm, hnorm),
 * concatenated and projected back to the width (eh_proj), one more layer
 * of the model's last kind, its final norm, the shared output layer and
 * its loss.  Outside the repeated layers: counted once, recomputed never. */
static void
te_mtp (struct bctx *c, int k)
{
  const struct model_cfg *m = c->m;
  int64_t t = c->t, tn = c->tn, d = m->hidden, v = c->vp;
  bool moe = c->moe;
  set_prefix (c, "mtp_layers", k);
  embedding (c, "embedding", v, d);
  site (c, PERFMOD_SITE_EMBED);
  te_norm (c, "enorm", tn, d);
  te_norm (c, "hnorm", tn, d);
  copy (c, "concat", "cat", 2.0 * (double) tn * (double) d, 2.0 * (double) tn * (double) d);
  linear (c, "eh_proj", tn, 2 * d, d, false);
  c->moe = model_layer_moe (m, m->layers - 1);
  te_layer (c);
  c->moe = moe;
  te_norm (c, "final_layernorm", tn, d);
  site (c, PERFMOD_SITE_LOGITS);
  linear_node (c, "output_layer", t, d, v, false, true);   /* Megatron's own, not TE's */
  te_vec (c, "cross_entropy", "softmax", t, v, 1, 2, 0);
  c->prefix[0] = '\0';
}

static void
te_graph (struct bctx *c)
{
  const struct model_cfg *m = c->m;
  int64_t t = c->t, tn = c->tn, d = m->hidden, v = c->vp;
  double tnd = (double) tn * (double) d;
  if (c->sh->embed) {
    embedding (c, "word_embeddings", v, d);
    site (c, PERFMOD_SITE_EMBED);
    if (m->family == FAM_GPT2) {         /* learned positions, embedding dropout */
      add2 (c, "position_add", tn, d, (double) c->s * (double) d);
      dropout (c, "embedding_dropout", tnd);
    }
  }
  if (model_layers_mixed (m))           /* dense-first, sliding and full layers */
    layer_kinds (c, "decoder_layers", te_layer);
  else {
    c->moe = model_layer_moe (m, 0);
    layer_span (c, "decoder_layers", te_layer);
  }
  if (c->sh->head) {
    te_norm (c, "final_layernorm", tn, d);
    site (c, PERFMOD_SITE_LOGITS);
    /* Megatron-Core's output layer is its own ColumnParallelLinear, not
     * Transformer Engine's: 16-bit in fp8 training */
    linear_node (c, "output_layer", t, d, v, false, true);
    /* fused cross-entropy: reads the logits forward; backward writes
     * their gradient from them */
    if (c->train)
      te_vec (c, "cross_entropy", "softmax", t, v, 1, 2, 0);
    for (int64_t k = 0; c->train && k < c->o->mtp; k++)
      te_mtp (c, (int) k);
  }
}

/* ---- Switch Transformer (T5 encoder-decoder) ---- */

static void
t5_attention (struct bctx *c, const char *name)
{
  const struct model_cfg *m = c->m;
  int64_t t = c->t, d = m->hidden, h = c->hp, dh = m->head_dim;
  double tq = (double) t * (double) (h * dh), scores = (double) (c->b * h * c->s) * (double) c->kv;
  char buf[64];
  site (c, PERFMOD_SITE_ATTN_IN);
  cat2 (buf, sizeof buf, name, "_q");
  linear (c, buf, t, d, h * dh, false);
  cat2 (buf, sizeof buf, name, "_k");
  linear (c, buf, t, d, h * dh, false);
  cat2 (buf, sizeof buf, name, "_v");
  linear (c, buf, t, d, h * dh, false);
  /* T5 adds a position bias (and mask) to unscaled scores */
  attention_core (c, h, dh, NULL, "add", scores, true);
  copy (c, "merge_heads", "contiguous", tq, tq);
  cat2 (buf, sizeof buf, name, "_o");
  linear (c, buf, t, h * dh, d, false);
  site (c, PERFMOD_SITE_ATTN_OUT);
}

static void
t5_ffn (struct bctx *c, bool sparse)
{
  int64_t t = c->t, d = c->m->hidden, f = c->fp;
  site (c, PERFMOD_SITE_MLP_IN);
  if (sparse)
    moe_block (c, expert_width (c, c->m->ffn), "relu");
  else {
    linear (c, "mlp_wi", t, d, f, false);
    unary (c, "mlp_act", "relu", t, f);
    dropout (c, "mlp_dropout", (double) t * (double) f);
    linear (c, "mlp_wo", t, f, d, false);
  }
  site (c, PERFMOD_SITE_MLP_OUT);
}

static void
switch_graph (struct bctx *c)
{
  const struct model_cfg *m = c->m;
  int64_t t = c->t, tn = c->tn, d = m->hidden, v = c->vp;
  double tnd = (double) tn * (double) d;
  int64_t step = m->sparse_step;

  /* Every layer is built (no repeated span): the stacks alternate dense
   * and routed feed-forward layers and the decoder differs. */
  for (int stack = 0; stack < 2; stack++) {
    int64_t layers = stack == 0 ? m->layers : m->dec_layers;
    const char *stem = stack == 0 ? "encoder_block" : "decoder_block";
    c->prefix[0] = '\0';
    embedding (c, stack == 0 ? "encoder_embed_tokens" : "decoder_embed_tokens", v, d);
    site (c, PERFMOD_SITE_EMBED);
    dropout (c, stack == 0 ? "encoder_dropout" : "decoder_dropout", tnd);
    for (int i = 0; i < layers; i++) {
      set_prefix (c, stem, i);
      rmsnorm (c, "self_attention_norm", tn, d);
      t5_attention (c, "self_attention");
      dropout (c, "self_attention_dropout", tnd);
      add2 (c, "self_attention_add", t, d, tnd);
      if (stack == 1) {
        rmsnorm (c, "cross_attention_norm", tn, d);
        t5_attention (c, "enc_dec_attention");
        dropout (c, "cross_attention_dropout", tnd);
        add2 (c, "cross_attention_add", t, d, tnd);
      }
      rmsnorm (c, "ffn_norm", tn, d);
      t5_ffn (c, i % step == step - 1);
      dropout (c, "ffn_dropout", tnd);
      add2 (c, "ffn_add", t, d, tnd);
    }
    c->prefix[0] = '\0';
    rmsnorm (c, stack == 0 ? "encoder_final_norm" : "decoder_final_norm", tn, d);
    dropout (c, stack == 0 ? "encoder_final_dropout" : "decoder_final_dropout", tnd);
  }
  unary (c, "lm_head_scale", "mulu", tn, d);
  site (c, PERFMOD_SITE_LOGITS);
  linear (c, "lm_head", t, d, v, false);
  lm_loss (c, v);
  c->g->repeat = 1;
}

/* About a second's building (a node holds a few hundred bytes). */
#define MAX_EXPERT_BLOCKS (1 << 17)

static const struct shard no_shard = { 1, 1, 1, 1, 1, 1.0, 0, 0, true, true, NULL, 0, 0, false,
                                        0, false };

/* Degrees the model's shapes cannot take are refused, naming both. */
static int
shard_check (const struct model_cfg *m, const struct shard *sh)
{
  /* The families after Switch replicate key/value heads over tp ranks
   * beyond their number, as vLLM and Megatron-Core do. */
  bool kv_ok = m->kv_heads % sh->heads == 0
               || (m->family >= FAM_QWEN && sh->heads % m->kv_heads == 0);
  if (m->heads % sh->heads != 0 || !kv_ok) {
    pm_error ("%s: tp=%d does not divide the %lld attention heads%s", m->name, sh->heads,
              (long long) (m->heads % sh->heads ? m->heads : m->kv_heads),
              m->heads % sh->heads ? "" : " of key/value");
    return -1;
  }
  int64_t widths[] = { m->ffn, m->moe_ffn, m->shared_ffn };
  for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++) {
    int div = i == 1 && sh->expert_ffn > 0 ? sh->expert_ffn : sh->ffn;
    if (widths[i] % div != 0) {
      pm_error ("%s: %s=%d does not divide the %s width %lld", m->name,
                i == 1 && sh->expert_ffn > 0 ? "etp" : "tp", div,
                i == 0 ? "feed-forward" : i == 1 ? "expert" : "shared experts'",
                (long long) widths[i]);
      return -1;
    }
  }
  if (sh->experts > 1 && (m->experts == 0 || m->experts % sh->experts != 0)) {
    if (m->experts == 0)
      pm_error ("%s: ep=%d: the model has no experts", m->name, sh->experts);
    else
      pm_error ("%s: ep=%d does not divide the %lld experts", m->name, sh->experts,
                (long long) m->experts);
    return -1;
  }
  return 0;
}

/* Every int64 product the builder forms is a tensor's elements: tokens
 * (routed: times ep and top_k) by a width, the hidden size by a width (a
 * weight), queries and keys, an expert's capacity in a batch.  These below
 * 2^61, every product and the few sums of them fit; beyond, the run is
 * refused rather than predicted from wrapped sizes.  A Switch model builds
 * each expert of each sparse layer: their number is bounded too. */
static int
size_check (const struct bctx *c)
{
  const struct model_cfg *m = c->m;
  const int64_t lim = (int64_t) 1 << 61;
  int64_t w = m->hidden, t, rows, x, y, sw;
  int64_t widths[] = { m->ffn, m->vocab, (m->heads + 2 * m->kv_heads) * m->head_dim, m->experts,
                       m->moe_ffn, m->shared_ffn,
                       m->heads * (m->qk_nope_dim + m->v_head_dim + m->kv_lora_rank) };
  for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++)
    if (widths[i] > w)
      w = widths[i];
  bool ok = ck_mul64 (c->b, c->s, &t) && ck_mul64 (t, c->sh->experts, &rows)
            && ck_mul64 (rows, m->top_k > 0 ? m->top_k : 1, &rows)
            && ck_mul64 (rows, w, &x) && x < lim
            && ck_mul64 (m->hidden, w, &x) && x < lim
            && ck_add64 (c->s, w, &sw) && ck_mul64 (sw, c->kv, &x) && x < lim
            && ck_mul64 (m->capacity, c->b, &x) && ck_mul64 (x, c->sh->experts, &y) && y < lim;
  if (!ok) {
    pm_error ("%s: batch %lld x seq %lld, hidden size %lld, widths up to %lld: a tensor of "
              "the graph would hold more than 2^61 elements", m->name, (long long) c->b,
              (long long) c->o->seq, (long long) m->hidden, (long long) w);
    return -1;
  }
  if (m->family == FAM_SWITCH && m->sparse_step > 0 &&
      (m->layers / m->sparse_step + m->dec_layers / m->sparse_step) * (m->experts / c->sh->experts)
      > MAX_EXPERT_BLOCKS) {
    pm_error ("%s: %lld experts in %lld sparse layers: more than %d expert blocks to build",
              m->name, (long long) (m->experts / c->sh->experts),
              (long long) (m->layers / m->sparse_step + m->dec_layers / m->sparse_step),
              MAX_EXPERT_BLOCKS);
    return -1;
  }
  return 0;
}

/* Megatron-Core's layer is modelled for GPT, Llama, Mixtral, Qwen2/3 and
 * their MoEs, DeepSeek-V2/V3 and gpt-oss (one layer of each kind a stage
 * holds: dense or routed, sliding or full). */
bool
te_layer_exists (const struct model_cfg *m)
{
  return m->family == FAM_GPT2 || m->family == FAM_LLAMA || m->family == FAM_MIXTRAL ||
         m->family == FAM_QWEN || m->family == FAM_QWEN_MOE || m->family == FAM_DEEPSEEK ||
         m->family == FAM_GPT_OSS;
}

enum pm_kernels
default_kernels (const struct model_cfg *m, const struct precision *pr, bool train)
{
  return train && dtype_mixed (pr->gemm) && te_layer_exists (m) ? KERNELS_TE : KERNELS_EAGER;
}

int
graph_build (struct graph *g, const struct model_cfg *m, const struct build_options *o)
{
  struct bctx c;

  memset (g, 0, sizeof *g);
  memset (&c, 0, sizeof c);
  if (o->fusion && o->train) {
    pm_error ("--fusion: fused element-wise chains are modelled for inference only");
    return -1;
  }
  if (o->kv_len > 0 && (m->family == FAM_BERT || m->family == FAM_SWITCH)) {
    pm_error ("%s: a decode step is modelled for decoder-only models (model_type %s is not)",
              m->name, m->arch);
    return -1;
  }
  if (o->megatron && m->family != FAM_GPT2) {
    pm_error ("%s: kernels=megatron: no Megatron layer for model_type %s", m->name, m->arch);
    return -1;
  }
  if (o->megatron && o->fusion) {
    pm_error ("--fusion with kernels=megatron: Megatron's layer has its own fusions");
    return -1;
  }
  if (o->te && !te_layer_exists (m)) {
    pm_error ("%s: kernels=te: Megatron-Core's layer is modelled for GPT, Llama, Mixtral, "
              "Qwen2/3 and their MoEs, DeepSeek-V2/V3 and gpt-oss (model_type %s is not)",
              m->name, m->arch);
    return -1;
  }
  if (o->te && (o->fusion || o->megatron)) {
    pm_error ("kernels=te: Transformer Engine's layer has its own fusions (no --fusion)");
    return -1;
  }
  if (o->cp > 1 && (o->kv_len > 0 || !o->flash || m->family == FAM_SWITCH)) {
    pm_error ("cp=%lld: context parallelism splits a prefill or a training step with fused "
              "attention (not a decode step, unfused attention or T5's position bias)",
              (long long) o->cp);
    return -1;
  }
  if (o->engine && o->train) {
    pm_error ("--engine: a serving engine's kernels are modelled for inference only");
    return -1;
  }
  if (o->engine && o->te) {
    pm_error ("--engine with kernels=te: Transformer Engine's layer has its own fusions");
    return -1;
  }
  if (o->kv_len > 0 && o->train) {
    pm_error ("a decode step is an inference phase (--mode inf)");
    return -1;
  }
  c.g = g;
  c.m = m;
  c.o = o;
  c.train = o->train;
  c.b = o->batch;
  c.s = o->kv_len > 0 ? 1 : o->seq;
  c.kv = o->kv_len > 0 ? o->kv_len + 1 : o->seq;
  c.sh = o->shard ? o->shard : &no_shard;
  if (shard_check (m, c.sh) < 0 || size_check (&c) < 0)
    return -1;
  c.t = c.b * c.s;
  if (c.t % c.sh->tokens != 0) {
    pm_error ("sequence parallelism: tp=%d does not divide the %lld tokens of a micro-batch",
              c.sh->tokens, (long long) c.t);
    return -1;
  }
  c.tn = c.t / c.sh->tokens;
  c.hp = m->heads / c.sh->heads;
  c.kvp = m->kv_heads / c.sh->heads;
  if (c.kvp == 0)                        /* tp beyond the key/value heads: each rank holds one */
    c.kvp = 1;
  c.fp = m->ffn / c.sh->ffn;
  c.vp = (m->vocab + c.sh->vocab - 1) / c.sh->vocab;
  c.flash = o->flash && m->family != FAM_SWITCH;
  c.eng = o->engine && !o->train && !o->te
          && (m->family == FAM_LLAMA || m->family == FAM_MIXTRAL || m->family >= FAM_QWEN);
  c.engine = c.eng ? o->engine_name : NULL;
  g->source = xstrdup ("builder");
  g->batch = o->batch;
  g->seq = o->seq;
  g->train = o->train;
  g->repeat = 1;
  switch (o->te ? -1 : m->family) {
  case -1: te_graph (&c); break;
  case FAM_GPT2: gpt2_graph (&c); break;
  case FAM_OPT: opt_graph (&c); break;
  case FAM_BERT: bert_graph (&c); break;
  case FAM_LLAMA:
  case FAM_MIXTRAL: llama_graph (&c); break;
  case FAM_SWITCH: switch_graph (&c); break;
  case FAM_QWEN:
  case FAM_QWEN_MOE:
  case FAM_DEEPSEEK:
  case FAM_GPT_OSS:
  case FAM_GEMMA:
  case FAM_NEOX: modern_graph (&c); break;
  default:
    pm_error ("%s: no graph builder for family %d", m->name, m->family);
    graph_free (g);
    return -1;
  }
  if (g->layer_end == 0)
    g->repeat = 1;
  return 0;
}
