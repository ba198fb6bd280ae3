/* memory.c: device memory of a training step or an inference run: weights, gradients, optimizer, activations, KV cache, reserve. */
#include <config.h>

#include <math.h>
#include <string.h>

#include "internal.h"

/* Transformer Engine's userbuffers for tp communication overlap: one
 * communication buffer per overlapped GEMM role (see memory_estimate). */
#define TE_UB_BUFFERS 10

/* What the framework and allocator keep beyond the tensors: the CUDA
 * context and library workspaces, and fragmentation of the caching
 * allocator.  A documented estimate (doc/memory.md), not a measurement. */

/* Activation bytes one layer keeps for the backward pass, per Korthikanti
 * et al. 2022 (tables 2 and 3), generalised to a feed-forward width f,
 * grouped key/value heads and routed experts; `eb` scales the 2-byte
 * activations of the paper, masks stay one byte.  Tensor parallelism over
 * tp ranks splits the GEMM-side terms (the paper's 24/t and 5as/ht); the
 * norm, dropout and residual terms (its 10) only with sequence parallelism. */
static double
layer_activations (const struct model_cfg *m, double b, double s, double eb, double gin,
                   enum pm_recompute rc, unsigned mods, double tp, double ktp, bool sp,
                   bool flash)
{
  double h = (double) m->hidden, a = (double) m->heads, f = (double) m->ffn;
  double r = (double) m->kv_heads / (double) m->heads, sbh = s * b * h, k = 1;
  bool gated = m->family == FAM_LLAMA || m->family == FAM_MIXTRAL;
  bool attn_dropout = !gated;
  double replicated, split, scores, routed = 0;
  if (m->experts > 0 && (m->family == FAM_MIXTRAL || m->family == FAM_SWITCH))
    k = (double) m->top_k;   /* each token's activations in k experts */
  if (rc == RECOMPUTE_FULL)
    return sbh * eb / (sp ? tp : 1);         /* the layer's input only */
  /* the attention and MLP inputs (norm outputs, kept as GEMM inputs:
   * gin bytes), the two dropout masks, the two norms' inputs */
  replicated = sbh * (2 * gin + (attn_dropout ? 1 : 0) + (gated ? 0 : 1)) + 2 * sbh * eb;
  /* q, k, v, the projection's input; fc1's output (gated: gate and up)
   * and the activation's output, fc2's input */
  split = sbh * (eb * (1 + 2 * r) + gin) + k * s * b * f * (eb * (gated ? 2 : 1) + gin);
  if (m->experts > 0)                   /* the k routed copies of each token fc1 keeps */
    routed = k * sbh * gin;
  /* softmax output, and with dropout its mask and output; fused
   * attention keeps only the softmax's fp32 log-sum-exp per query row (it
   * recomputes the scores in its backward and regenerates the dropout
   * mask from the RNG state) */
  scores = flash ? 4 * a * s * b : a * s * s * b * (attn_dropout ? 2 * eb + 1 : eb);
  if (rc == RECOMPUTE_SELECTIVE) {      /* the modules run again keep nothing */
    if (mods & RM_LAYERNORM)
      replicated -= 2 * gin * sbh;
    if (mods & RM_MOE_ACT && m->experts > 0)
      split -= k * s * b * f * gin;
    if (mods & RM_MLP && m->experts == 0)
      split -= s * b * f * (eb * (gated ? 2 : 1) + gin);
  }
  return replicated / (sp ? tp : 1) + split / tp + routed / ktp
         + (rc == RECOMPUTE_SELECTIVE && (mods == 0 || mods & RM_CORE_ATTN) ? 0 : scores / tp);
}

/* The families after Switch: the same accounting with each one's widths.
 * The attention's q, k and v (MLA: expanded keys and values and the
 * latent), the context the output projection reads, and the feed-forward
 * intermediates averaged over the layers (a routed layer: top_k experts
 * and the shared ones per token, and the top_k routed copies of the token
 * the experts' fc1 keeps for its weight gradient: Transformer Engine's
 * GroupedLinear saves its permuted input, as a per-expert Linear does;
 * over ktp ranks, 1 where they are gathered over tp); Gemma 2/3 keep two
 * more norm inputs. */
static double
modern_layer_activations (const struct model_cfg *m, double b, double s, double eb, double gin,
                          enum pm_recompute rc, unsigned mods, double tp, double ktp, bool sp,
                          bool flash)
{
  double h = (double) m->hidden, a = (double) m->heads, sb = s * b, sbh = sb * h;
  double qkv, ctx, f = 0, fr = 0, fd = 0, up = 0, kh = 0, replicated, split, scores;
  bool gated = !m->layernorm;
  if (rc == RECOMPUTE_FULL)
    return sbh * eb / (sp ? tp : 1);
  if (m->kv_lora_rank > 0) {
    double qk = (double) (m->qk_nope_dim + m->qk_rope_dim), v = (double) m->v_head_dim;
    up = a * (2 * qk + v);              /* the up-projected q, k, v (mla_up_proj's) */
    qkv = up + (double) (m->kv_lora_rank + m->q_lora_rank);
    ctx = a * v;
  }
  else {
    qkv = (double) ((m->heads + 2 * m->kv_heads) * m->head_dim);
    ctx = (double) (m->heads * m->head_dim);
  }
  for (int64_t i = 0; i < m->layers; i++)
    if (model_layer_moe (m, i)) {
      f += (double) (m->top_k * m->moe_ffn + m->shared_ffn);
      kh += (double) (m->top_k * m->hidden);   /* the routed copies fc1 keeps */
      fr += (double) (m->top_k * m->moe_ffn);
    }
    else {
      f += (double) m->ffn;
      fd += (double) m->ffn;
    }
  f /= (double) m->layers;
  kh /= (double) m->layers;
  fr /= (double) m->layers;            /* the routed experts', the dense layers' share */
  fd /= (double) m->layers;
  replicated = sbh * (2 * gin + (gated ? 0 : 2)) + (m->post_norms ? 4 : 2) * sbh * eb;
  split = sb * (eb * qkv + gin * ctx) + sb * f * (eb * (gated ? 2 : 1) + gin);
  scores = flash ? 4 * a * s * b : a * s * s * b * eb;
  if (rc == RECOMPUTE_SELECTIVE) {      /* the modules run again keep nothing */
    if (mods & RM_LAYERNORM)
      replicated -= 2 * gin * sbh;
    if (mods & RM_MOE_ACT)
      split -= sb * fr * gin;
    if (mods & RM_MLP)
      split -= sb * fd * (eb * (gated ? 2 : 1) + gin);
    if (mods & RM_MLA_UP)
      split -= sb * eb * up;
  }
  return replicated / (sp ? tp : 1) + split / tp + sb * kh * gin / ktp
         + (rc == RECOMPUTE_SELECTIVE && (mods == 0 || mods & RM_CORE_ATTN) ? 0 : scores / tp);
}

/* KV cache elements per sequence of `cached` tokens, summed over the
 * layers: a sliding layer keeps its window's; MLA its latent. */
static double
kv_cache_elements (const struct model_cfg *m, double cached)
{
  double sum = 0;
  if (m->layer_kind == NULL)
    return (double) m->layers * cached * model_kv_width (m);
  for (int64_t i = 0; i < m->layers; i++)
    sum += (double) model_layer_span (m, i, (int64_t) cached);
  return sum * model_kv_width (m);
}

void
memory_estimate (const struct model_cfg *m, const struct memory_options *o,
                 const struct perfmod_gpu *gpu, struct memory_estimate *out)
{
  const struct precision *pr = o->prec ? o->prec : precision_of_dtype (PERFMOD_DTYPE_FP32,
                                                                       o->train);
  double p = model_params (m), eb = pr->act_bytes;
  double b = (double) o->batch, s = (double) o->seq, l = (double) m->layers;
  double h = (double) m->hidden, v = (double) m->vocab;
  double sum;

  const struct mem_shard *sh = o->shard;
  memset (out, 0, sizeof *out);
  if (m->family == FAM_SWITCH)
    l += (double) m->dec_layers;
  if (sh)
    p = sh->params;
  if (o->train) {
    double tp = sh ? sh->tp : 1, copies = sh ? sh->layer_copies : l;
    double ktp = sh && sh->routed_gathered ? 1 : tp;   /* the routed copies a rank keeps */
    bool sp = sh && sh->sp;
    /* The precision's bytes per parameter (see predict.c): mixed
     * precision keeps 2-byte weights, fp32 gradients and Adam's fp32
     * master weights and two moments (Megatron's 18 bytes per parameter;
     * fp8 the same, its weights bf16); fp32 training has no master copy
     * (16).  The master copy is optimizer state: ZeRO shards it with the
     * moments. */
    double pe = sh ? sh->expert_params : 0, pd = p - pe;   /* the routed experts' apart */
    double gb = sh && sh->grad_bytes > 0 ? sh->grad_bytes : pr->grad_bytes;
    out->weights = pd * pr->weight_bytes / (sh ? sh->weights : 1)
                 + (pe > 0 ? pe * pr->weight_bytes / sh->expert_weights : 0);
    out->gradients = pd * gb / (sh ? sh->gradients : 1)
                   + (pe > 0 ? pe * gb / sh->expert_gradients : 0)
                   + (sh ? p * gb * sh->gradient_buffers : 0);
    out->optimizer = pd * (pr->master_bytes + pr->moment_bytes) / (sh ? sh->optimizer : 1)
                   + (pe > 0 ? pe * (pr->master_bytes + pr->moment_bytes) / sh->expert_optimizer
                      : 0);
    /* Transformer Engine keeps an fp8 GEMM's input for its weight
     * gradient as the fp8 copy it cast (assumed: one byte, its transpose
     * alone, as Hopper's fp8 GEMMs take it) */
    double gin = pr->gemm == PERFMOD_DTYPE_FP8 ? 1 : eb;
    out->activations = copies * (m->family >= FAM_QWEN
                                 ? modern_layer_activations (m, b, s, eb, gin, o->recompute,
                                                             o->recompute_modules, tp, ktp, sp,
                                                             o->flash)
                                 : layer_activations (m, b, s, eb, gin, o->recompute,
                                                      o->recompute_modules, tp, ktp, sp,
                                                      o->flash));
    /* logits and their gradient in fp32 for the loss (the last stage):
     * PyTorch's cross-entropy keeps both; Megatron-Core's keeps the fp32
     * softmax alone and turns it into the gradient in place.  The
     * embedding's output (the first), counted in 2 bytes whatever the
     * precision (an fp32 run holds 4: kept, as the distributed table's
     * memory column reproduces with it) */
    if (!sh || sh->head)                 /* and each multi-token prediction head's */
      out->activations += (o->megatron_core ? 4 : 2 * 4) * b * s * v / (sh ? sh->vocab : 1)
                          * (1 + (sh ? sh->mtp : 0));
    if (!sh || sh->embed)
      out->activations += s * b * h * 2;
    /* tp communication overlap (tpo=1): Transformer Engine's userbuffers
     * keep one gathered micro-batch activation (tokens x hidden) per
     * overlapped GEMM role, shared by the layers: TE's default list has
     * ten (qkv, proj, fc1, fc2 forward; qkv, proj, fc1, fc2 data
     * gradient; qkv, fc1 weight gradient) */
    if (sh && sh->tpo)
      out->activations += TE_UB_BUFFERS * b * s * h * eb;
    if (sh)
      out->activations += sh->comm_buffers;
  }
  else {
    /* the routed experts at their own width where a weight-only format
     * keeps them narrower (mxfp4) */
    double pe = 0, embed, head;
    if (precision_weight_only_experts (pr)) {
      if (sh)
        pe = sh->expert_params;
      else
        model_param_parts (m, &embed, &head, &pe);
    }
    out->weights = (p - pe) * pr->weight_bytes + pe * pr->expert_bytes;
    if (sh)
      l = sh->layer_copies;
    /* One layer's working set at a time (the residual stream, the
     * feed-forward intermediate, the scores) and the logits. */
    double q = o->kv_len > 0 ? 1 : s, kv = o->kv_len > 0 ? (double) o->kv_len + 1 : s;
    double f = (double) m->ffn * (m->experts ? (double) m->top_k : 1);
    if (m->family >= FAM_QWEN && m->experts > 0) {
      double routed = (double) (m->top_k * m->moe_ffn + m->shared_ffn);
      f = routed > (double) m->ffn ? routed : (double) m->ffn;
    }
    out->activations = eb * (b * q * (2 * h + 2 * f) + 2 * b * (double) m->heads * q * kv
                             + b * q * v);
    double cached = o->kv_len > 0 ? (double) o->kv_len + 1 : s + (double) o->gen;
    if (m->family >= FAM_QWEN)   /* the device's layers' share of the model's cache */
      out->kv_cache = l / (double) m->layers * b * kv_cache_elements (m, cached) * eb;
    else if (m->family != FAM_BERT)
      out->kv_cache = 2 * l * b * cached * (double) (m->kv_heads * m->head_dim) * eb;
    if (sh) {                  /* heads and widths split over the tensor-parallel ranks */
      out->activations /= sh->tp;
      if (m->kv_lora_rank > 0)
        ;                      /* the latent is every rank's: replicated */
      else if (m->family >= FAM_QWEN && sh->tp > m->kv_heads)
        out->kv_cache /= (double) m->kv_heads;   /* one replicated head per rank */
      else
        out->kv_cache /= sh->tp;
    }
  }
  sum = out->weights + out->gradients + out->optimizer + out->activations + out->kv_cache;
  out->reserve = MEMORY_RESERVE_FIXED_BYTES + MEMORY_RESERVE_FRACTION * sum;
  out->total = sum + out->reserve;
  /* HBM capacities are binary: an "80 GB" H100 holds 80 GiB. */
  out->capacity = gpu->mem_gb * PM_GIB;
  out->oom = out->capacity > 0 && out->total > out->capacity;
}
