/* parallel.c: a training or inference step under tp, ep, pp and dp: the plugins' plans composed, stage graphs built and predicted, the pipeline simulated, gradients synchronised, the optimizer stepped. */
#include <config.h>

#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "physics.h"

/* The plugins are asked in this fixed order: each sees the shares the
 * earlier ones left (dp's gradients are those of a tp/ep/pp shard). */
static const int plan_order[] = { DIM_TP, DIM_EP, DIM_PP, DIM_DP };

/* Megatron's data-parallel gradient buckets: 40M parameters each. */
#define DP_BUCKET_PARAMS 40e6

static int
degree_of (const struct strategy *s, int dim)
{
  switch (dim) {
  case DIM_TP: return s->tp;
  case DIM_EP: return s->ep;
  case DIM_PP: return s->pp;
  case DIM_DP: return s->dp * s->cp;   /* the weights' replicas: cp ranks hold the same */
  default: return 1;
  }
}

/* The replicas of a layout: serving builds one replica's graphs (dp 1)
 * and says how many there are. */
static int
layout_replicas (const struct dist_options *o)
{
  return o->replicas > 0 ? o->replicas : o->s->dp;
}

/* Inference with the routed experts over every replica's tp ranks, whole
 * or each expert's width over etp of them (strategy_attention_dp).  The
 * replicas' ranks are one expert group, one after another: one pipeline
 * stage (dist_check). */
static bool
attention_dp (const struct dist_options *o)
{
  return !o->train && strategy_attention_dp (o->s, layout_replicas (o));
}

/* ep's group: the experts' ranks, ep x etp of them under attention data
 * parallelism (the tokens gathered over them all: an expert's etp slices
 * each need every token routed to it), else ep. */
static int
ep_group_size (const struct dist_options *o)
{
  return attention_dp (o) ? o->s->ep * o->s->etp : o->s->ep;
}

/* Megatron-Core's expert ranks fold a stage's tp x cp x dp into etp x ep x
 * edp, expert tp innermost (parallel_state's expert rank generator, order
 * tp-ep-dp): ep's neighbours are etp apart, tp by default, 1 with etp=1;
 * the eager modules draw ep from dp, after tp and cp; attention data
 * parallelism spans the replicas' tp ranks, one after another. */
static int64_t
ep_stride (const struct dist_options *o)
{
  const struct strategy *s = o->s;
  if (attention_dp (o))          /* every rank of the replicas, neighbours */
    return 1;
  return o->train && s->kernels == KERNELS_TE ? (s->etp == 1 ? 1 : s->tp)
         : (int64_t) s->tp * s->cp;
}

int
dist_expert_replicas (const struct strategy *s)
{
  int64_t ranks = (int64_t) s->tp * s->cp * s->dp;
  int64_t held = (int64_t) (s->etp == 1 ? 1 : s->tp) * s->ep;   /* each expert's ranks */
  return held > 0 && ranks % held == 0 ? (int) (ranks / held) : 0;
}

/* The routed experts' data-parallel group: a stage's tp x cp x dp ranks
 * hold each expert etp x ep ways (etp=1, else Megatron-Core's default, tp;
 * the eager modules split experts over tp too), so each expert shard has
 * tp x cp x dp / (etp x ep) replicas, ep's stride x ep apart.  Their
 * gradients are reduced, and the distributed optimizer shards their
 * state, over this group (parallel_state's expert data-parallel group),
 * not over dp's. */
static void
expert_dp_group (const struct dist_options *o, int *size, int64_t *stride)
{
  const struct strategy *s = o->s;
  int n = dist_expert_replicas (s);
  /* no such layout; or each expert sharded as the rest (ep 1, experts over
   * tp): dp's group; or ep drawn from dp beside cp (the eager modules),
   * whose replicas are not one strided group: dp's, approximately */
  if (n < 1 || (s->ep == 1 && s->etp != 1) || (s->cp > 1 && ep_stride (o) > s->tp)) {
    *size = s->dp * s->cp;
    *stride = s->tp;
    return;
  }
  *size = n;
  *stride = ep_stride (o) * s->ep;
}

/* Megatron's placement: tp innermost, then cp, then ep (within the
 * data-parallel ranks), then pp, dp outermost.  The gradients are reduced
 * over the data- and context-parallel ranks together (Megatron's
 * data-parallel group with cp). */
void
comm_groups_init (struct comm_groups *g, const struct dist_options *o)
{
  const struct strategy *s = o->s;
  memset (g, 0, sizeof *g);
  g->gpus_per_node = o->gpus_per_node;
  g->engine = o->engine && !o->train;
  for (int d = 0; d < NDIMS; d++)
    g->size[d] = 1;
  g->size[DIM_NONE] = s->tp * s->pp * s->dp * s->cp;
  g->size[DIM_TP] = s->tp;
  g->size[DIM_CP] = s->cp;
  g->size[DIM_EP] = ep_group_size (o);
  g->size[DIM_PP] = s->pp;
  g->size[DIM_DP] = s->dp * s->cp;
  g->stride[DIM_NONE] = 1;
  g->stride[DIM_TP] = 1;
  g->stride[DIM_CP] = s->tp;
  g->stride[DIM_EP] = ep_stride (o);
  g->stride[DIM_PP] = (int64_t) s->tp * s->cp * s->dp;
  g->stride[DIM_DP] = s->tp;
  expert_dp_group (o, &g->edp_size, &g->edp_stride);
}

/* The routed experts' parameters one device holds of `frac` of the
 * layers: their width split expert_ffn ways (0: as the rest, pl->ffn). */
static double
device_expert_params (const struct dist_plan *dp, double frac)
{
  const struct perfmod_plan *pl = &dp->plan;
  double eff = dp->expert_ffn > 0 ? (double) dp->expert_ffn : (double) pl->ffn;
  return frac * dp->param_experts / (eff * pl->experts);
}

/* Parameters one device holds: its share of the embedding, the output
 * layer and of `frac` of the layers. */
static double
device_params (const struct model_cfg *m, const struct dist_plan *dp, double frac, bool embed,
               bool head, bool tied_copy)
{
  const struct perfmod_plan *pl = &dp->plan;
  double rest = dp->param_all - dp->param_embed - dp->param_head - dp->param_experts;
  double p = frac * rest / pl->heads + device_expert_params (dp, frac);
  if (embed)
    p += dp->param_embed / pl->vocab;
  if (head)
    p += (tied_copy ? (double) m->vocab * (double) m->hidden : dp->param_head) / pl->vocab;
  return p;
}

/* Layers of pipeline chunk c (rank c % pp's chunk c / pp): the given
 * split or Megatron's rules, else an even share. */
static int64_t
chunk_layers (const struct model_cfg *m, const struct strategy *s, int c)
{
  return strategy_chunk_layers (s, m->layers, c);
}

/* The layers pipeline rank r holds over its chunks. */
static int64_t
rank_layers (const struct model_cfg *m, const struct strategy *s, int r)
{
  int v = s->vp > 1 ? s->vp : 1;
  int64_t n = 0;
  for (int j = 0; j < v; j++)
    n += chunk_layers (m, s, j * s->pp + r);
  return n;
}

/* The share of the layers pipeline rank r holds. */
static double
rank_share (const struct model_cfg *m, const struct strategy *s, int r)
{
  return strategy_uneven (s) ? (double) rank_layers (m, s, r) / (double) m->layers : 1.0 / s->pp;
}

/* The pipeline rank a step's gradient synchronisation, optimizer step,
 * FLOPs and per-rank collectives are costed on: rank 0 with even stages
 * (the embedding's); with a given split the one holding the most
 * parameters, the last to finish them. */
static int
costed_rank (const struct model_cfg *m, const struct strategy *s, const struct dist_plan *dp)
{
  int best = 0;
  double most = -1;
  if (!strategy_uneven (s))
    return 0;
  for (int r = 0; r < s->pp; r++) {
    double n = device_params (m, dp, rank_share (m, s, r), r == 0, r == s->pp - 1,
                              false);
    if (n > most) {
      most = n;
      best = r;
    }
  }
  return best;
}

static void
plan_init (struct perfmod_plan *p)
{
  memset (p, 0, sizeof *p);
  p->struct_size = sizeof *p;
  p->heads = p->ffn = p->vocab = p->tokens = p->experts = 1;
  p->expert_load = 1;
  p->weights = p->gradients = p->optimizer = 1;
}

/* Bytes of a gradient: the precision's (fp32 under mixed precision), the
 * weights' with grad_fp32=0. */
static double
grad_bytes_of (const struct precision *pr, const struct strategy *s)
{
  return s->grad_low && precision_mixed (pr) ? pr->weight_bytes : pr->grad_bytes;
}

/* Plugin pl's plan for case c, checked. */
static int
plugin_plan (struct plugin *pl, const struct perfmod_parallel_case *c, struct perfmod_plan *p)
{
  int rc;
  plan_init (p);
  pm_current_plugin = pl->p.name;
  pm_plugin_errmsg[0] = '\0';
  rc = pl->p.plan (pl->state, c, p);
  pm_current_plugin = NULL;
  if (rc < 0) {
    pm_error ("%s: %s", pl->p.name, pm_plugin_errmsg);
    return -1;
  }
  if (p->heads < 1 || p->ffn < 1 || p->vocab < 1 || p->tokens < 1 || p->experts < 1 ||
      p->expert_load < 1 || p->weights < 1 || p->gradients < 1 || p->optimizer < 1 ||
      p->gradient_buffers < 0 ||
      p->ncomm < 0 || p->ncomm > PERFMOD_MAX_COMMS) {
    pm_error ("%s: plan() returned an invalid plan (a divisor below 1 or too many collectives)",
              pl->p.name);
    return -1;
  }
  for (int k = 0; k < p->ncomm; k++) {
    int coll = p->comm[k].collective, where = p->comm[k].site;
    if (coll < PERFMOD_COLL_ALLREDUCE || coll > PERFMOD_COLL_DEEPEP
        || (coll == PERFMOD_COLL_DEEPEP && where != PERFMOD_SITE_MOE_DISPATCH
            && where != PERFMOD_SITE_MOE_COMBINE)) {
      pm_error ("%s: plan() returned collective %d at site %d, which this core does not run",
                pl->p.name, coll, where);
      return -1;
    }
  }
  return 0;
}

/* Plan p's collectives (those at `site` alone when site >= 0) into dp. */
static int
plan_add_comms (struct dist_plan *dp, const struct perfmod_plan *p, int dim, int site,
                bool expert_group)
{
  for (int k = 0; k < p->ncomm; k++) {
    struct comm_site *cs;
    if (site >= 0 && p->comm[k].site != site)
      continue;
    if (dp->ncomms >= sizeof dp->comms / sizeof dp->comms[0]) {
      pm_error ("the plugins' plans hold more than %zu collectives",
                sizeof dp->comms / sizeof dp->comms[0]);
      return -1;
    }
    cs = &dp->comms[dp->ncomms++];
    cs->collective = p->comm[k].collective;
    cs->site = p->comm[k].site;
    cs->phase = p->comm[k].phase;
    cs->bytes = p->comm[k].bytes;
    /* a value this core does not know hides behind the phase, as 1 */
    cs->overlap = p->comm[k].overlap == PERFMOD_OVERLAP_GEMM ? PERFMOD_OVERLAP_GEMM
                  : p->comm[k].overlap != 0 ? PERFMOD_OVERLAP_PHASE : PERFMOD_OVERLAP_NONE;
    cs->dim = dim;
    cs->expert_group = expert_group;
  }
  return 0;
}

/* Ask each dimension's plugin for its plan and compose them. */
static int
compose (struct plugin_set *set, const struct model_cfg *m, const struct perfmod_gpu *gpu,
         const struct dist_options *o, struct dist_plan *dp)
{
  const struct strategy *s = o->s;
  const struct precision *pr = o->prec ? o->prec : precision_of_dtype (PERFMOD_DTYPE_FP32,
                                                                       o->train);
  plan_init (&dp->plan);
  dp->ncomms = 0;
  dp->param_all = model_params (m);
  model_param_parts (m, &dp->param_embed, &dp->param_head, &dp->param_experts);
  /* Megatron-Core's MoE layer with tp and sequence parallelism: each
   * rank routes its own share of the sequence and dispatches it over ep
   * (MoEAlltoAllTokenDispatcher; DeepEP's flex dispatcher moves the same
   * copies).  With its default expert tp (= tp) the routed copies are then
   * all-gathered over tp, and reduce-scattered back before combine; with
   * etp=1 (--expert-tensor-parallel-size 1, as Megatron-Bridge's recipes
   * run) each expert is whole on one of the ep ranks, drawn from tp x dp,
   * and nothing is gathered.  The all-gather dispatcher gathers the
   * hidden states instead (tp's MLP_IN gather stands). */
  dp->moe_tp_after = o->train && s->kernels == KERNELS_TE && s->sp && s->tp > 1 &&
                     m->experts > 0 && s->dispatcher != PERFMOD_DISPATCH_ALLGATHER;
  /* the experts' width over etp; in inference ep within the tp ranks, or
   * over every replica's (attention data parallelism) */
  dp->expert_ffn = s->etp > 0 ? s->etp : 0;
  dp->ep_in_tp = s->etp > 0 && !o->train && (int64_t) s->ep * s->etp == s->tp;
  dp->attn_dp = attention_dp (o);
  dp->moe_feeds = dp->ep_in_tp ? 1 : dp->attn_dp ? s->ep * s->etp / s->tp : s->ep;
  /* the routed experts' gradients go over their own data-parallel group
   * when it is not dp's (expert_dp_group) */
  int edp_size;
  int64_t edp_stride;
  expert_dp_group (o, &edp_size, &edp_stride);
  bool expert_apart = o->train && dp->param_experts > 0
                      && (edp_size != s->dp * s->cp || edp_stride != s->tp);
  struct plugin *dp_plugin = NULL;
  struct perfmod_parallel_case dp_case;
  double dp_experts = 0;                 /* the routed experts' parameters of dp's case */
  dp->expert_weights = dp->expert_gradients = dp->expert_optimizer = 1;
  for (size_t i = 0; i < sizeof plan_order / sizeof plan_order[0]; i++) {
    int dim = plan_order[i];
    int degree = dim == DIM_EP ? ep_group_size (o) : degree_of (s, dim);
    struct perfmod_parallel_case c;
    struct perfmod_plan p;
    struct plugin *pl;
    if (degree <= 1 && !(dim == DIM_DP && expert_apart))
      continue;
    pl = plugins_find (set, dim_name (dim), PERFMOD_PLUGIN_PARALLELISM);
    if (pl == NULL) {
      pm_error ("no parallelism plugin for '%s' is installed", dim_name (dim));
      return -1;
    }
    if (pl->p.plan == NULL) {
      pm_error ("%s: the plugin has no plan() (perfmod 0.3): it can only --explain", pl->p.name);
      return -1;
    }
    /* a decode step: one new token per sequence */
    parallel_case_init (&c, degree, m, s, gpu, pr->gemm, o->batch, o->kv_len > 0 ? 1 : o->seq);
    c.mb_tokens = (double) s->mbs * (o->kv_len > 0 ? 1.0 : (double) o->seq / (double) s->cp);
    if (dim == DIM_EP && dp->moe_tp_after)  /* ep dispatches the rank's sequence shard */
      c.mb_tokens /= s->tp;
    c.elem_bytes = pr->act_bytes;
    c.heads = (double) m->heads;
    c.kv_heads = (double) m->kv_heads;
    c.vocab = (double) m->vocab;
    /* gradients (fp32) and one layer's weights of an average stage so far */
    int cr = costed_rank (m, s, dp);
    double dev = device_params (m, dp, rank_share (m, s, cr), cr == 0, cr == s->pp - 1, false);
    double experts = device_expert_params (dp, rank_share (m, s, cr));
    if (dim == DIM_DP && expert_apart)   /* the experts' go over their own group (below) */
      dev -= experts;
    c.grad_elem_bytes = o->train ? grad_bytes_of (pr, s) : 4;
    c.grad_bytes = c.grad_elem_bytes * dev;
    c.layer_param_bytes = device_params (m, dp, 1.0 / (double) m->layers, false, false, false)
                          * pr->weight_bytes;
    c.zero = s->zero;
    c.sequence_parallel = s->sp;
    c.megatron_core = s->kernels == KERNELS_TE;
    c.tp_comm_overlap = s->tpo;
    c.dispatcher = strategy_dispatcher (s, dim == DIM_EP && dp->attn_dp);
    c.a2a_overlap = s->a2a_overlap;
    c.gather_bytes = o->train && s->kernels == KERNELS_TE && precision_quantised (pr)
                     ? dtype_bytes (pr->gemm) : c.elem_bytes;
    /* Attention data parallelism: each of a replica's tp ranks dispatches
     * its 1/tp of the replica's tokens over the whole expert group (vLLM's
     * sequence-parallel MoE), so a rank's experts see every replica's
     * tokens once (gathered, unless the layout names another dispatcher:
     * strategy_dispatcher). */
    if (dim == DIM_EP && dp->attn_dp)
      c.mb_tokens /= s->tp;
    if (dim == DIM_DP) {
      dp_plugin = pl;
      dp_case = c;
      dp_experts = experts;
    }
    if (degree <= 1)                     /* dp of 1: only the experts' group (below) */
      continue;
    if (plugin_plan (pl, &c, &p) < 0)
      return -1;
    if (dim == DIM_EP && dp->attn_dp)    /* the group gathers; the experts split ep ways */
      p.experts = s->ep;
    dp->plan.heads *= p.heads;
    dp->plan.ffn *= p.ffn;
    dp->plan.vocab *= p.vocab;
    dp->plan.tokens *= p.tokens;
    dp->plan.experts *= p.experts;
    dp->plan.expert_load *= p.expert_load;
    dp->plan.weights *= p.weights;
    dp->plan.gradients *= p.gradients;
    dp->plan.optimizer *= p.optimizer;
    dp->plan.gradient_buffers += p.gradient_buffers;
    if (dim == DIM_DP && !expert_apart) {
      dp->expert_weights = p.weights;
      dp->expert_gradients = p.gradients;
      dp->expert_optimizer = p.optimizer;
    }
    /* ep within the tp ranks (etp given): every rank has every token
     * after attention's all-reduce, so nothing is dispatched; each runs
     * its experts on the tokens routed to them and tp's all-reduce after
     * the feed-forward (MLP_OUT) sums their outputs, as TensorRT-LLM,
     * vLLM and SGLang do without attention data parallelism.  The ep
     * plugin's experts and load stand, its all-to-alls do not. */
    if (dim == DIM_EP && dp->ep_in_tp)
      continue;
    if (plan_add_comms (dp, &p, dim, -1, false) < 0)
      return -1;
  }
  /* The routed experts' gradients over the expert data-parallel group:
   * dp's plugin asked again, for that group and those gradients; its
   * sharding divides the experts' state, its gradient collectives join
   * (counted as dp's).  A group of one reduces nothing and shards nothing. */
  if (expert_apart && dp_plugin && edp_size > 1) {
    struct perfmod_plan p;
    dp_case.degree = edp_size;
    dp_case.grad_bytes = dp_case.grad_elem_bytes * dp_experts;
    if (plugin_plan (dp_plugin, &dp_case, &p) < 0)
      return -1;
    dp->expert_weights = p.weights;
    dp->expert_gradients = p.gradients;
    dp->expert_optimizer = p.optimizer;
    if (plan_add_comms (dp, &p, DIM_DP, PERFMOD_SITE_GRADS, true) < 0)
      return -1;
  }
  /* Megatron-Core's routed copies over tp (dp->moe_tp_after): gathered
   * after dispatch and reduce-scattered before combine in the forward,
   * the reverse in the backward; the copies of the micro-batch's tokens
   * (the busiest rank's under imbalance), the whole buffer. */
  if (dp->moe_tp_after && s->etp == 0 &&
      dp->ncomms + 4 <= sizeof dp->comms / sizeof dp->comms[0]) {
    double copies = (double) s->mbs * (double) o->seq / (double) s->cp * (double) m->top_k
                    * (double) m->hidden * pr->act_bytes * dp->plan.expert_load;
    for (int ph = 0; ph < 2; ph++)
      for (int at = 0; at < 2; at++) {
        struct comm_site *cs = &dp->comms[dp->ncomms++];
        cs->collective = (ph ^ at) ? PERFMOD_COLL_REDUCE_SCATTER : PERFMOD_COLL_ALLGATHER;
        cs->site = at ? PERFMOD_SITE_MOE_COMBINE : PERFMOD_SITE_MOE_DISPATCH;
        cs->phase = ph;
        cs->bytes = copies;
        cs->overlap = PERFMOD_OVERLAP_NONE;
        cs->dim = DIM_TP;
        cs->expert_group = 0;
      }
  }
  /* Context parallelism (Megatron's ring attention): each layer passes
   * the key/value blocks of the rank's heads round the cp ranks, the
   * whole sequence's by the end, while the blocks it has are attended to;
   * the backward passes their gradients back.  As an all-gather and a
   * reduce-scatter of the K and V of every token, overlapping the
   * attention. */
  if (s->cp > 1 && dp->ncomms + 2 <= sizeof dp->comms / sizeof dp->comms[0]) {
    double kv_heads = m->kv_heads >= dp->plan.heads ? (double) (m->kv_heads / dp->plan.heads) : 1;
    double kv = m->kv_lora_rank > 0    /* MLA: the latent and the rope key */
                ? model_kv_width (m) * (double) s->mbs * (double) o->seq * pr->act_bytes
                : 2.0 * (double) s->mbs * (double) o->seq * kv_heads * (double) m->head_dim
                  * pr->act_bytes;
    for (int ph = 0; ph < (o->train ? 2 : 1); ph++) {
      struct comm_site *cs = &dp->comms[dp->ncomms++];
      cs->collective = ph ? PERFMOD_COLL_REDUCE_SCATTER : PERFMOD_COLL_ALLGATHER;
      cs->site = PERFMOD_SITE_ATTN_IN;
      cs->phase = ph;
      cs->bytes = kv;
      cs->overlap = PERFMOD_OVERLAP_PHASE;
      cs->dim = DIM_CP;
      cs->expert_group = 0;
    }
  }
  return 0;
}

/* Seconds of the plan's collectives at one site (of the forward, phase 0,
 * or the backward, any other, or of both where phase < 0), split into
 * what may overlap and what may not. */
static void
site_seconds (struct plugin *pred, const struct dist_plan *dp, int site, int phase,
              const struct comm_groups *g, const struct perfmod_gpu *gpu, double *plain,
              double *overlap, double by_dim[NDIMS])
{
  *plain = *overlap = 0;
  for (size_t i = 0; i < dp->ncomms; i++) {
    const struct comm_site *cs = &dp->comms[i];
    double t;
    if (cs->site != site || (phase >= 0 && (cs->phase != 0) != (phase != 0)))
      continue;
    t = step_collective_seconds (pred, cs->collective, cs->bytes, cs->dim,
                                 cs->expert_group ? g->edp_size : g->size[cs->dim],
                                 cs->expert_group ? g->edp_stride : g->stride[cs->dim],
                                 g->gpus_per_node, g->engine, gpu);
    *(cs->overlap == PERFMOD_OVERLAP_PHASE ? overlap : plain) += t;
    if (by_dim)
      by_dim[cs->dim] += t;
  }
}

/* One chunk's graph predicted: forward and backward ms of a micro-batch,
 * the collectives inside. */
struct chunk_times {
  double fw, bw;
  double recompute;      /* of bw: forwards run again (ms per micro-batch) */
  double comm[NDIMS];    /* ms per micro-batch */
  double fw_comm, bw_comm; /* of fw, bw: the collectives on the critical path */
  double attn;           /* of fw: the attention cores (ms per micro-batch) */
  double moe;            /* of fw: the routed experts fed (moe_fed nodes; ms per micro-batch) */
  double tp_hidden;      /* tp's collectives hidden behind their GEMMs (tpo=1; ms per
                            micro-batch, forward and backward) */
  double ep_hidden;      /* ep's dispatch and combine hidden beside the shared experts
                            (shared_overlap=1; ms per micro-batch) */
  double host;           /* of fw and bw: the device waiting for the host's launches (ms per
                            micro-batch) */
  double flops;          /* per micro-batch */
  bool built;
};
/* A chunk's times under each recomputation (enum pm_recompute): the
 * graph is the same, only what the backward runs again differs. */
struct chunk_times_rc {
  struct chunk_times base; /* recompute none's, less bw: */
  double bw_acc;           /* the backward's and the accumulation's ms */
  double recompute_full;   /* what full recomputation adds */
  double recompute_mod[RM_NAMES]; /* what recomputing each module adds (enum pm_rmod's bits) */
};

/* The ms selective recomputation of these modules adds. */
static double
selective_ms (const double mod[RM_NAMES], unsigned modules)
{
  double t = 0;
  for (int b = 0; b < RM_NAMES; b++)
    if (modules & (1u << b))
      t += mod[b];
  return t;
}

/* The module bit of node i, or -1. */
static int
rmod_bit (const struct graph *g, size_t i)
{
  for (int b = 0; b < RM_NAMES; b++)
    if (g->nodes[i].rmod & (1u << b))
      return b;
  return -1;
}

/* The model's index of chunk c's first layer: where its layers' kinds
 * differ (dense-first, sliding), which layers a chunk holds matters. */
static int64_t
chunk_first_layer (const struct model_cfg *m, const struct strategy *s, int c)
{
  int64_t first = 0;
  if (!model_layers_mixed (m))
    return 0;
  for (int i = 0; i < c; i++)
    first += chunk_layers (m, s, i);
  return first;
}

/* The graph of one pipeline chunk of `layers` layers from first_layer on
 * one rank. */
static int
chunk_build (struct graph *gr, const struct model_cfg *m, const struct dist_options *o,
             const struct dist_plan *dp, int64_t layers, int64_t first_layer, bool embed,
             bool head)
{
  struct shard sh;
  struct build_options bo;
  memset (&sh, 0, sizeof sh);
  sh.heads = dp->plan.heads;
  sh.ffn = dp->plan.ffn;
  sh.vocab = dp->plan.vocab;
  sh.tokens = dp->plan.tokens;
  sh.experts = dp->plan.experts;
  sh.expert_load = dp->plan.expert_load;
  sh.layers = layers;
  sh.first_layer = first_layer;
  sh.embed = embed;
  sh.head = head;
  sh.comms = dp->comms;
  sh.ncomms = dp->ncomms;
  sh.expert_ffn = dp->expert_ffn;
  sh.ep_in_tp = dp->ep_in_tp;
  sh.moe_feeds = dp->moe_feeds;
  sh.moe_tp_after = dp->moe_tp_after;
  memset (&bo, 0, sizeof bo);
  bo.batch = o->s->mbs;
  bo.seq = o->seq / o->s->cp;          /* this rank's share of the sequence */
  bo.cp = o->s->cp;
  bo.train = o->train;
  bo.fusion = o->fusion;
  bo.megatron = o->s->kernels == KERNELS_MEGATRON;
  bo.te = o->s->kernels == KERNELS_TE;
  bo.flash = o->flash;
  bo.kv_len = o->kv_len;
  bo.engine = o->engine;
  bo.engine_name = o->engine_name;
  bo.routing = o->routing;
  bo.shard = &sh;
  bo.mtp = head && o->train ? o->s->mtp : 0;
  return graph_build (gr, m, &bo);
}

/* ---- chunk predictions remembered across strategies (perfmod search) ----
 * A chunk's times depend only on what its graph is built and costed from:
 * the predictor, GPU and precision, the kernels, the micro-batch and the
 * context-parallel split of the sequence, the chunk's ends and how many
 * of its layers are of each kind (not where they are: DeepSeek-V3's
 * routed layers 3-7 and 40-44 build one graph), the plan's divisors, the
 * collectives the graph holds and the groups those run over.  The graph
 * holds no collective at a stage boundary or of the gradients (the
 * builder has no such site: dist_predict costs those itself), so the key
 * leaves them out, and the groups of the dimensions no collective of the
 * graph runs over: strategies that differ only in dp or the ZeRO stage
 * below 3 share their chunks.  The key holds exactly that, zero-padded. */
struct chunk_key {
  const void *pred, *gpu, *prec, *engine_name;
  int kernels, flash, fusion, train, embed, head, gpus_per_node, engine, shared_overlap, mtp;
  double host_us, routing;
  int64_t mbs, seq, cp, layers, kv_len;
  int64_t kinds[MODEL_LAYER_KINDS];    /* the chunk's layers of each kind (not where they are) */
  int heads, ffn, vocab, tokens, experts, expert_ffn, ep_in_tp, moe_feeds, moe_tp_after;
  double expert_load;
  int size[NDIMS];
  int64_t stride[NDIMS];
  size_t ncomms;
  struct comm_site comms[5 * PERFMOD_MAX_COMMS + 6]; /* four plans, the experts' and the core's */
};
struct cache_slot {
  uint64_t hash;
  struct chunk_key *key;   /* its first chunk_key_len bytes; NULL: the slot is free */
  size_t len;
  struct chunk_times_rc times;
  size_t kernels, unique_kernels;
};
/* Pipeline schedules simulated, by their inputs: strategies that differ
 * only in what happens after the pipeline (ZeRO stage, say) share one. */
struct pipe_slot {
  uint64_t hash;
  double *key;           /* stages, vp, microbatches, schedule, backward, p2p, fw[], bw[] */
  size_t len;
  struct pipe_result result;
};
/* The most chunks and pipeline schedules a cache keeps: at these it
 * starts again empty.  A search predicts neighbouring configurations
 * together (they share what is kept), so forgetting the older ones costs
 * a few recomputations and bounds its memory: with the MoE dispatchers
 * and overlaps searched, DeepSeek-V3 on 2,048 GPUs grew to 1.3 GB without
 * (doc/search.md). */
#define DIST_CACHE_MAX_CHUNKS (1u << 17)
#define DIST_CACHE_MAX_PIPES (1u << 16)
struct dist_cache {
  struct cache_slot *slots;
  size_t cap, n;
  size_t hits, misses;
  /* chunks kept in another cache, shared by threads under its lock (the
   * pipelines stay here: their scratch and compiled schedules are this
   * thread's); NULL: in this one */
  struct dist_cache *shared;
  pthread_mutex_t lock;
  struct pipe_slot *pipes;
  size_t pcap, pn;
  struct pipe_progs *progs;        /* the schedules' shapes compiled */
  double *pkey;                    /* scratch: the key being looked up */
  size_t pkeycap;
};

struct dist_cache *
dist_cache_new (void)
{
  struct dist_cache *c = xcalloc (1, sizeof (struct dist_cache));
  c->progs = pipe_progs_new ();
  pthread_mutex_init (&c->lock, NULL);
  return c;
}

struct dist_cache *
dist_cache_new_sharing (struct dist_cache *shared)
{
  struct dist_cache *c = dist_cache_new ();
  c->shared = shared;
  return c;
}

void
dist_cache_free (struct dist_cache *c)
{
  if (c) {
    for (size_t i = 0; i < c->pcap; i++)
      free (c->pipes[i].key);
    free (c->pipes);
    for (size_t i = 0; i < c->cap; i++)
      free (c->slots[i].key);
    free (c->slots);
    pipe_progs_free (c->progs);
    free (c->pkey);
    pthread_mutex_destroy (&c->lock);
    free (c);
  }
}

/* pipeline_simulate, remembered in c (NULL: not). */
static int
pipeline_cached (struct dist_cache *c, const struct pipe_input *in, struct pipe_result *out)
{
  size_t chunks = (size_t) in->stages * (size_t) (in->vp > 1 ? in->vp : 1);
  size_t len = 6 + 2 * chunks, i;
  double *key;
  uint64_t h = 1469598103934665603ULL;
  if (c == NULL)
    return pipeline_simulate (in, out);
  if (len > c->pkeycap) {
    free (c->pkey);
    c->pkeycap = 2 * len;
    c->pkey = xmalloc (c->pkeycap * sizeof *c->pkey);
  }
  key = c->pkey;
  key[0] = in->stages;
  key[1] = in->vp;
  key[2] = in->microbatches;
  key[3] = in->schedule;
  key[4] = in->backward;
  key[5] = in->p2p_ms;
  memcpy (key + 6, in->fw_ms, chunks * sizeof *key);
  memcpy (key + 6 + chunks, in->bw_ms, chunks * sizeof *key);
  for (size_t j = 0; j < len; j++) {
    uint64_t w;
    memcpy (&w, &key[j], sizeof w);
    h = (h ^ w) * 1099511628211ULL;
    h ^= h >> 29;
  }
  if (c->pn >= DIST_CACHE_MAX_PIPES) {
    for (i = 0; i < c->pcap; i++)
      free (c->pipes[i].key);
    memset (c->pipes, 0, c->pcap * sizeof *c->pipes);
    c->pn = 0;
  }
  if (c->pn * 2 >= c->pcap) {
    struct pipe_slot *old = c->pipes;
    size_t ocap = c->pcap;
    c->pcap = c->pcap ? 2 * c->pcap : 64;
    c->pipes = xcalloc (c->pcap, sizeof *c->pipes);
    for (size_t j = 0; j < ocap; j++)
      if (old[j].key) {
        for (i = old[j].hash & (c->pcap - 1); c->pipes[i].key; i = (i + 1) & (c->pcap - 1))
          ;
        c->pipes[i] = old[j];
      }
    free (old);
  }
  for (i = h & (c->pcap - 1); c->pipes[i].key; i = (i + 1) & (c->pcap - 1))
    if (c->pipes[i].hash == h && c->pipes[i].len == len &&
        memcmp (c->pipes[i].key, key, len * sizeof *key) == 0) {
      *out = c->pipes[i].result;
      return 0;
    }
  if (pipeline_simulate_with (c->progs, in, out) < 0)
    return -1;
  c->pipes[i].hash = h;
  c->pipes[i].key = xmalloc (len * sizeof *key);
  memcpy (c->pipes[i].key, key, len * sizeof *key);
  c->pipes[i].len = len;
  c->pipes[i].result = *out;
  c->pn++;
  return 0;
}

void
dist_cache_stats (const struct dist_cache *c, size_t *hits, size_t *misses)
{
  *hits = c ? c->hits : 0;
  *misses = c ? c->misses : 0;
}

static void
chunk_key_of (struct chunk_key *k, const struct model_cfg *m, const struct plugin *pred,
              const struct perfmod_gpu *gpu,
              const struct dist_options *o, const struct dist_plan *dp,
              const struct comm_groups *g, int64_t layers, int64_t first_layer, bool embed,
              bool head)
{
  /* zeroed as far as it is compared: the padding bytes too */
  memset (k, 0, offsetof (struct chunk_key, comms) + dp->ncomms * sizeof k->comms[0]);
  k->pred = pred;
  k->gpu = gpu;
  k->prec = o->prec;
  k->kernels = o->s->kernels;
  k->shared_overlap = o->s->shared_overlap;
  k->host_us = o->train ? o->s->host_us : 0;
  k->flash = o->flash;
  k->fusion = o->fusion;
  k->train = o->train;
  k->embed = embed;
  k->head = head;
  k->gpus_per_node = g->gpus_per_node;
  k->mbs = o->s->mbs;
  k->seq = o->seq;
  k->kv_len = o->kv_len;
  k->mtp = head && o->train ? o->s->mtp : 0;
  k->engine = o->engine;
  k->engine_name = o->engine_name;
  k->routing = o->engine ? routing_alpha (o->routing) : 0;
  k->layers = layers;
  model_layer_counts (m, first_layer, layers, k->kinds, NULL);
  k->heads = dp->plan.heads;
  k->ffn = dp->plan.ffn;
  k->vocab = dp->plan.vocab;
  k->tokens = dp->plan.tokens;
  k->experts = dp->plan.experts;
  k->expert_load = dp->plan.expert_load;
  k->expert_ffn = dp->expert_ffn;
  k->ep_in_tp = dp->ep_in_tp;
  k->moe_feeds = dp->moe_feeds;
  k->moe_tp_after = dp->moe_tp_after;
  k->cp = o->s->cp;
  k->ncomms = 0;
  for (size_t i = 0; i < dp->ncomms; i++) {
    const struct comm_site *cs = &dp->comms[i];
    struct comm_site *c = &k->comms[k->ncomms];
    if (cs->site == PERFMOD_SITE_STAGE || cs->site == PERFMOD_SITE_GRADS)
      continue;                           /* not in the chunk's graph */
    c->collective = cs->collective;       /* field by field: no padding bytes compared */
    c->site = cs->site;
    c->phase = cs->phase;
    c->dim = cs->dim;
    c->bytes = cs->bytes;
    c->overlap = cs->overlap;
    k->size[cs->dim] = g->size[cs->dim];
    k->stride[cs->dim] = g->stride[cs->dim];
    k->ncomms++;
  }
}

_Static_assert (offsetof (struct chunk_key, comms) % 8 == 0 && sizeof (struct comm_site) % 8 == 0,
                "a chunk key is hashed in 8-byte words");

/* Bytes of the key that count: all but the unused collectives. */
static size_t
chunk_key_len (const struct chunk_key *k)
{
  return offsetof (struct chunk_key, comms) + k->ncomms * sizeof k->comms[0];
}

/* The hash of a key's len bytes (whole 8-byte words: doubles, pointers,
 * int64s, padded). */
static uint64_t
key_hash (const struct chunk_key *k, size_t len)
{
  uint64_t h = 1469598103934665603ULL, w;
  for (size_t j = 0; j + sizeof w <= len; j += sizeof w) {
    memcpy (&w, (const char *) k + j, sizeof w);
    h = (h ^ w) * 1099511628211ULL;
    h ^= h >> 29;
  }
  return h;
}

static void
cache_forget (struct dist_cache *c)
{
  for (size_t i = 0; i < c->cap; i++)
    free (c->slots[i].key);
  memset (c->slots, 0, c->cap * sizeof *c->slots);
  c->n = 0;
}

/* k's slot in c: its own, or the free one to fill. */
static struct cache_slot *
cache_slot (struct dist_cache *c, const struct chunk_key *k, size_t len, uint64_t h)
{
  size_t i;
  if (c->n * 2 >= c->cap) {
    struct cache_slot *old = c->slots;
    size_t ocap = c->cap;
    c->cap = c->cap ? c->cap * 2 : 64;
    c->slots = xcalloc (c->cap, sizeof *c->slots);
    for (size_t j = 0; j < ocap; j++)
      if (old[j].key) {
        for (i = old[j].hash & (c->cap - 1); c->slots[i].key; i = (i + 1) & (c->cap - 1))
          ;
        c->slots[i] = old[j];
      }
    free (old);
  }
  for (i = h & (c->cap - 1); c->slots[i].key; i = (i + 1) & (c->cap - 1))
    if (c->slots[i].hash == h && c->slots[i].len == len && memcmp (c->slots[i].key, k, len) == 0)
      break;
  return &c->slots[i];
}

static int chunk_compute (struct plugin *pred, const struct model_cfg *m,
                          const struct perfmod_gpu *gpu, const struct dist_options *o,
                          const struct dist_plan *dp, const struct comm_groups *g,
                          int64_t layers, int64_t first_layer, bool embed, bool head,
                          struct chunk_times_rc *out, size_t *kernels, size_t *unique);

/* The times of one recomputation, as chunk_compute's arithmetic makes them. */
static void
chunk_times_of (const struct chunk_times_rc *t, const struct dist_options *o,
                struct chunk_times *out)
{
  int rc = o->train ? (int) o->s->recompute : RECOMPUTE_NONE;
  *out = t->base;
  out->recompute = rc == RECOMPUTE_FULL ? t->recompute_full
                   : rc == RECOMPUTE_SELECTIVE ? selective_ms (t->recompute_mod,
                                                               strategy_rmods (o->s)) : 0;
  out->bw = t->bw_acc + out->recompute;
}

static int
chunk_predict (struct plugin *pred, const struct model_cfg *m, const struct perfmod_gpu *gpu,
               const struct dist_options *o, const struct dist_plan *dp,
               const struct comm_groups *g, int64_t layers, int64_t first_layer, bool embed,
               bool head, struct chunk_times *out, struct dist_result *r)
{
  struct chunk_key key;
  struct cache_slot *slot;
  size_t kernels = 0, unique = 0, len;
  uint64_t h;
  if (o->cache == NULL) {
    struct chunk_times_rc t;
    if (chunk_compute (pred, m, gpu, o, dp, g, layers, first_layer, embed, head, &t, &kernels,
                       &unique) < 0)
      return -1;
    chunk_times_of (&t, o, out);
    r->kernels += kernels;
    r->unique_kernels += unique;
    return 0;
  }
  chunk_key_of (&key, m, pred, gpu, o, dp, g, layers, first_layer, embed, head);
  len = chunk_key_len (&key);
  h = key_hash (&key, len);
  /* a shared cache: looked up under its lock, a miss computed outside it
   * and stored unless another thread stored it meanwhile */
  struct dist_cache *c = o->cache->shared ? o->cache->shared : o->cache;
  struct cache_slot found;
  bool hit;
  pthread_mutex_lock (&c->lock);
  slot = cache_slot (c, &key, len, h);
  hit = slot->key != NULL;
  if (hit)
    found = *slot;
  pthread_mutex_unlock (&c->lock);
  if (!hit) {
    memset (&found, 0, sizeof found);
    if (chunk_compute (pred, m, gpu, o, dp, g, layers, first_layer, embed, head, &found.times,
                       &found.kernels, &found.unique_kernels) < 0)
      return -1;
    pthread_mutex_lock (&c->lock);
    if (c->n >= DIST_CACHE_MAX_CHUNKS)
      cache_forget (c);
    slot = cache_slot (c, &key, len, h);
    if (slot->key == NULL) {
      found.key = xmalloc (len);
      memcpy (found.key, &key, len);
      found.len = len;
      found.hash = h;
      *slot = found;
      c->n++;
    }
    pthread_mutex_unlock (&c->lock);
    o->cache->misses++;
  }
  else
    o->cache->hits++;
  chunk_times_of (&found.times, o, out);
  r->kernels += found.kernels;
  r->unique_kernels += found.unique_kernels;
  return 0;
}

/* Transformer Engine's userbuffers (tpo=1): each collective marked
 * PERFMOD_OVERLAP_GEMM is split into `chunks` (the tp degree) and
 * pipelined with the GEMM beside its site, the GEMM split likewise.  The
 * first chunk's transfer has nothing to hide behind; the others run under
 * the GEMM's chunks as far as those last:
 *   exposed = comm/chunks + (1 - 1/chunks) max(0, comm - gemm)
 * with comm the site's pipelined collectives of the phase and gemm the
 * paired GEMM's time in that phase: its forward; backward, after an *_IN
 * site its data and weight gradients (the input re-gathered under the
 * one, the data gradient scattered under the other), before an *_OUT
 * site its data gradient only (half its backward: the weight gradient
 * needs the whole gathered gradient).  What each phase hides, ms per
 * micro-batch, goes to hidden[]. */
static void
gemm_overlap (const struct graph *gr, const struct prediction *pr, int chunks,
              double hidden[NPHASES])
{
  double q = chunks > 1 ? 1.0 / chunks : 1.0;
  size_t i = 0;
  while (i < gr->n) {
    size_t gemm = gr->nodes[i].gemm, j;
    double comm[NPHASES] = { 0 };
    if (gemm == 0) {
      i++;
      continue;
    }
    /* the site's collectives: consecutive nodes paired with one GEMM */
    for (j = i; j < gr->n && gr->nodes[j].gemm == gemm; j++)
      for (int p = PHASE_FW; p <= PHASE_BW; p++)
        if (gr->nodes[j].nops[p] == 1 && gr->nodes[j].ops[p][0].overlap == PERFMOD_OVERLAP_GEMM)
          comm[p] += pr->per_node[j].t[p];
    for (int p = PHASE_FW; p <= PHASE_BW; p++) {
      double g = pr->per_node[gemm - 1].t[p], exposed;
      if (comm[p] <= 0)
        continue;
      if (p == PHASE_BW && gemm - 1 < i)
        g /= 2;
      exposed = comm[p] * q + (1 - q) * (comm[p] > g ? comm[p] - g : 0);
      hidden[p] += (comm[p] - exposed) * (double) graph_weight (gr, i);
    }
    i = j;
  }
}

/* Megatron-Core's shared-expert overlap (shared_overlap=1): the shared
 * experts' kernels run on a stream of their own while ep's dispatch and
 * combine travel, so of the two the shorter hides, phase by phase: what
 * each phase hides, ms per micro-batch, goes to hidden[]. */
static void
shared_overlap (const struct graph *gr, const struct prediction *pr, double hidden[NPHASES])
{
  double comm[NPHASES] = { 0 }, shared[NPHASES] = { 0 };
  for (size_t i = 0; i < gr->n; i++) {
    const struct node *nd = &gr->nodes[i];
    double w = (double) graph_weight (gr, i);
    for (int p = PHASE_FW; p <= PHASE_BW; p++) {
      if (nd->shared_expert)
        shared[p] += w * pr->per_node[i].t[p];
      else if (nd->nops[p] == 1 && nd->ops[p][0].kclass == PERFMOD_KERNEL_COMM &&
               nd->ops[p][0].dim == DIM_EP)
        comm[p] += w * pr->per_node[i].t[p];
    }
  }
  for (int p = PHASE_FW; p <= PHASE_BW; p++)
    hidden[p] += comm[p] < shared[p] ? comm[p] : shared[p];
}

/* CTAs of an NCCL all-to-all or all-gather, each holding an SM while it
 * runs: NCCL's send/receive kernels run one per p2p channel, and an H100
 * all_to_all_single was seen launching 16 (NVIDIA/nccl issue 1598; issue
 * 1680's log: 32 p2p channels, 2 per peer). */
#define NCCL_P2P_CTAS 16.0

/* ep's collectives that hide behind computation (a2a_overlap's, marked to
 * overlap the phase; shared_overlap's, beside the shared experts) still
 * run on SMs the computation then lacks: DeepEP's kernels on their
 * num_sms (the kernel's b), NCCL's on NCCL_P2P_CTAS.  Per phase:
 * ov[], the ms of ep's collectives marked to overlap, and share[], the SMs
 * ep's collectives take over the GPU's, weighted by their time. */
static void
ep_comm_sms (const struct graph *gr, const struct prediction *pr, const struct perfmod_gpu *gpu,
             double ov[NPHASES], double share[NPHASES])
{
  double ms[NPHASES] = { 0 }, sm_ms[NPHASES] = { 0 };
  for (size_t i = 0; i < gr->n; i++) {
    const struct node *nd = &gr->nodes[i];
    double w = (double) graph_weight (gr, i);
    for (int p = PHASE_FW; p <= PHASE_BW; p++) {
      const struct kop *op = nd->nops[p] == 1 ? &nd->ops[p][0] : NULL;
      double t = w * pr->per_node[i].t[p];
      if (op == NULL || op->kclass != PERFMOD_KERNEL_COMM || op->dim != DIM_EP)
        continue;
      ms[p] += t;
      sm_ms[p] += t * (phys_deepep_op (op->op, NULL, NULL) && op->b > 0 ? (double) op->b
                       : NCCL_P2P_CTAS);
      if (op->overlap == PERFMOD_OVERLAP_PHASE)
        ov[p] += t;
    }
  }
  for (int p = PHASE_FW; p <= PHASE_BW; p++)
    share[p] = ms[p] > 0 && gpu->sms > 0 ? fmin (1, sm_ms[p] / ms[p] / gpu->sms) : 0;
}

static int
chunk_compute (struct plugin *pred, const struct model_cfg *m, const struct perfmod_gpu *gpu,
               const struct dist_options *o, const struct dist_plan *dp,
               const struct comm_groups *g, int64_t layers, int64_t first_layer, bool embed,
               bool head, struct chunk_times_rc *times, size_t *kernels, size_t *unique)
{
  double gemm_hidden[NPHASES] = { 0 }, ep_hidden[NPHASES] = { 0 }, host[NPHASES] = { 0 };
  double ep_ov[NPHASES] = { 0 }, ep_share[NPHASES] = { 0 };
  struct chunk_times *out = &times->base;
  struct graph gr;
  struct prediction pr;
  struct run_options ro;
  double t[NPHASES];

  if (chunk_build (&gr, m, o, dp, layers, first_layer, embed, head) < 0)
    return -1;
  memset (&ro, 0, sizeof ro);
  ro.prec = o->prec;
  ro.train = o->train;
  ro.groups = g;
  ro.memo = o->memo;
  if (predict_graph (pred, &gr, gpu, &ro, &pr) < 0) {
    graph_free (&gr);
    return -1;
  }
  *kernels = pr.kernels;
  *unique = pr.unique_kernels;
  out->flops = graph_flops (&gr, o->prec, o->train);
  t[PHASE_FW] = pr.fw_ms;
  t[PHASE_BW] = pr.bw_ms;
  t[PHASE_ACC] = pr.acc_ms;
  gemm_overlap (&gr, &pr, g->size[DIM_TP], gemm_hidden);
  if (o->s->shared_overlap)
    shared_overlap (&gr, &pr, ep_hidden);
  if (o->train)                          /* training runs eager; serving has its engine's host */
    host_wait (&gr, &pr, o->prec, o->s->host_us, host);
  ep_comm_sms (&gr, &pr, gpu, ep_ov, ep_share);
  /* Collectives marked to overlap (ZeRO-3's prefetched gathers, ep's
   * under a2a_overlap) hide behind the phase's computation, tp's pipelined
   * ones (tpo=1) behind their GEMMs; the rest is on the critical path.
   * ep's hidden ones slow the computation by the SMs they hold. */
  out->fw_comm = out->bw_comm = 0;
  for (int p = 0; p < NPHASES; p++) {
    double comm = 0, compute, exposed, hidden, ep_hid;
    for (int d = 0; d < NDIMS; d++)
      comm += pr.comm_ms[d][p];
    compute = t[p] - comm;
    hidden = pr.overlap_ms[p] > compute ? compute : pr.overlap_ms[p];
    exposed = (comm - pr.overlap_ms[p]) + (pr.overlap_ms[p] - hidden);
    exposed -= gemm_hidden[p] + ep_hidden[p];
    ep_hid = (pr.overlap_ms[p] > 0 ? hidden * ep_ov[p] / pr.overlap_ms[p] : 0) + ep_hidden[p];
    exposed += ep_hid * ep_share[p];
    t[p] = compute + exposed + host[p];
    *(p == PHASE_FW ? &out->fw_comm : &out->bw_comm) += exposed;
  }
  /* Recomputation runs forwards again before the backward: selective
   * the attention core (Korthikanti et al. 2022), full the whole layer
   * with its collectives. */
  times->recompute_full = 0;
  memset (times->recompute_mod, 0, sizeof times->recompute_mod);
  if (o->train)
    for (size_t i = gr.layer_begin; i < gr.layer_end; i++) {
      double ms = pr.per_node[i].t[PHASE_FW] * (double) graph_weight (&gr, i);
      int b = rmod_bit (&gr, i);
      times->recompute_full += ms;
      if (b >= 0)
        times->recompute_mod[b] += ms;
    }
  /* full recomputation runs the layers' forward collectives again,
   * pipelined and overlapped as the first time (the paired GEMMs and the
   * shared experts are in the layers) */
  times->recompute_full -= gemm_hidden[PHASE_FW] + ep_hidden[PHASE_FW];
  out->tp_hidden = gemm_hidden[PHASE_FW] + gemm_hidden[PHASE_BW];
  out->ep_hidden = ep_hidden[PHASE_FW] + ep_hidden[PHASE_BW];
  out->host = host[PHASE_FW] + host[PHASE_BW];
  out->recompute = 0;
  out->attn = out->moe = 0;
  for (size_t i = 0; i < gr.n; i++) {
    double ms = pr.per_node[i].t[PHASE_FW] * (double) graph_weight (&gr, i);
    if (gr.nodes[i].attn_core)
      out->attn += ms;
    if (gr.nodes[i].moe_fed)
      out->moe += ms;
  }
  out->fw = t[PHASE_FW];
  times->bw_acc = t[PHASE_BW] + t[PHASE_ACC];
  out->bw = times->bw_acc;
  for (int d = 0; d < NDIMS; d++)
    out->comm[d] = pr.comm_ms[d][PHASE_FW] + pr.comm_ms[d][PHASE_BW] + pr.comm_ms[d][PHASE_ACC];
  out->built = true;
  prediction_free (&pr);
  graph_free (&gr);
  return 0;
}

/* The optimizer step over the device's parameters, as one memory-bound
 * pass: Adam reads weights, gradients and two moments and writes weights
 * and moments (mixed precision: the fp32 master copy, and writes the
 * 16-bit weights), clipping reads the gradients, zeroing writes them. */
static int
optimizer_ms (struct plugin *pred, const struct perfmod_gpu *gpu, const struct precision *pr,
              double params, double *ms)
{
  struct perfmod_kernel k;
  struct perfmod_estimate e;
  memset (&k, 0, sizeof k);
  k.struct_size = sizeof k;
  k.kclass = PERFMOD_KERNEL_MEMORY;
  k.op = intern ("copy");
  k.dtype = PERFMOD_DTYPE_FP32;
  k.elem_bytes = 4;
  k.bytes = params * (28 + 8 + (pr && pr->master_bytes > 0 ? pr->weight_bytes : 0));
  if (plugin_estimate (pred, &k, gpu, &e) < 0) {
    pm_error ("%s: cannot predict the optimizer step: %s", pred->p.name, pm_plugin_errmsg);
    return -1;
  }
  *ms = e.seconds * 1e3;
  return 0;
}

int
dist_check (const struct model_cfg *m, const struct dist_options *o)
{
  const struct strategy *s = o->s;
  int64_t batch = o->batch, chunks = (int64_t) s->pp * s->vp;
  if (s->pp > 1 && m->family == FAM_SWITCH) {
    pm_error ("%s: pipeline stages are modelled for decoder-only and encoder-only stacks, not "
              "the encoder-decoder %s", m->name, m->arch);
    return -1;
  }
  if (s->kernels == KERNELS_MEGATRON && m->family != FAM_GPT2) {
    pm_error ("%s: kernels=megatron: Megatron-LM's GPT layer is modelled for the GPT-2/GPT-3 "
              "family only (model_type %s is not)", m->name, m->arch);
    return -1;
  }
  if (s->zero == 3 && s->pp > 1) {
    pm_error ("zero=3 with pp=%d: ZeRO-3 (FSDP) is not combined with pipeline stages (neither "
              "DeepSpeed nor Megatron runs it); use zero=1 or 2, or pp=1", s->pp);
    return -1;
  }
  if (s->cp > 1 && (o->seq % (2 * (int64_t) s->cp) != 0 || !o->flash)) {
    pm_error ("cp=%d: %s", s->cp, o->flash ? "the sequence must split into 2 x cp equal chunks "
              "(Megatron's load-balanced ring attention)"
              : "context parallelism runs fused attention (--attention flash)");
    return -1;
  }
  if (s->cp > 1 && !o->train && (o->gen > 0 || o->kv_len > 0)) {
    pm_error ("cp=%d: context parallelism splits a prefill, not generation (--gen): use tp, pp, "
              "ep and dp", s->cp);
    return -1;
  }
  if (s->pp > PM_MAX_STAGES) {
    pm_error ("pp=%d: at most %d pipeline stages are modelled", s->pp, PM_MAX_STAGES);
    return -1;
  }
  if (s->kernels == KERNELS_TE && !te_layer_exists (m)) {
    pm_error ("%s: kernels=te: Megatron-Core's layer is modelled for GPT, Llama, Mixtral, "
              "Qwen2/3 and their MoEs, DeepSeek-V2/V3 and gpt-oss (model_type %s is not)",
              m->name, m->arch);
    return -1;
  }
  if (s->kernels == KERNELS_MEGATRON && o->fusion) {
    pm_error ("--fusion with kernels=megatron: Megatron's layer has its own fusions");
    return -1;
  }
  if (o->engine && s->kernels == KERNELS_TE) {
    pm_error ("--engine with kernels=te: Transformer Engine's layer has its own fusions");
    return -1;
  }
  /* Transformer Engine's userbuffers pipeline the sequence-parallel
   * gathers and scatters with its GEMMs (Megatron-Core's
   * --tp-comm-overlap, which needs --sequence-parallel) */
  if (s->tpo && (s->tp < 2 || !s->sp || s->kernels != KERNELS_TE || !o->train)) {
    pm_error ("tpo=1: tensor-parallel communication overlap (Transformer Engine's userbuffers) "
              "needs %s", s->tp < 2 ? "tp>1" : !s->sp ? "sp=1 (sequence parallelism)"
              : s->kernels != KERNELS_TE ? "kernels=te (Megatron-Core with Transformer Engine)"
              : "a training step (--mode train)");
    return -1;
  }
  /* a dispatcher moves ep's tokens: there must be some, between ranks
   * (etp's experts within the tp ranks: nothing is dispatched; over the
   * replicas', attention data parallelism, they are) */
  if (s->dispatcher != PERFMOD_DISPATCH_ALLTOALL) {
    const char *need = m->experts == 0 ? "a model with routed experts"
                       : ep_group_size (o) < 2 ? "ep>1"
                       : s->etp > 0 && !o->train && !attention_dp (o)
                       ? "ep beside tp (etp= dispatches nothing)"
                       : s->dispatcher == PERFMOD_DISPATCH_FLEX && o->prec->act_bytes > 2
                       ? "16-bit activations (DeepEP sends bf16 or fp8)" : NULL;
    if (need) {
      pm_error ("dispatcher=%s: needs %s", dispatcher_name (s->dispatcher), need);
      return -1;
    }
  }
  /* 16-bit gradients: a mixed-precision step's (fp32 keeps fp32 ones) */
  if (s->grad_low && (!o->train || !precision_mixed (o->prec))) {
    pm_error ("grad_fp32=0: gradients in the weights' 16 bits need %s",
              !o->train ? "a training step (--mode train)"
              : "a mixed precision (bf16, amp-fp16, fp8, fp8-cs): fp32 training keeps fp32 ones");
    return -1;
  }
  /* Megatron-Core's multi-token prediction: its layer after the loss */
  if (s->mtp > 0 && (!o->train || s->kernels != KERNELS_TE)) {
    pm_error ("mtp=%d: multi-token prediction layers need %s", s->mtp,
              !o->train ? "a training step (--mode train)" : "kernels=te (Megatron-Core's layer)");
    return -1;
  }
  /* Megatron-Core's recompute modules: nodes of its layer (kernels=te) */
  if (s->recompute_modules & ~(unsigned) RM_CORE_ATTN) {
    unsigned mods = s->recompute_modules;
    const char *need = !o->train ? "a training step (--mode train)"
                       : s->kernels != KERNELS_TE ? "kernels=te (Megatron-Core's layer)"
                       : mods & RM_MLA_UP && m->kv_lora_rank == 0
                       ? "multi-head latent attention for mla_up_proj"
                       : mods & RM_MOE_ACT && m->experts == 0 ? "routed experts for moe_act"
                       : NULL;
    if (need) {
      pm_error ("recompute_modules: needs %s", need);
      return -1;
    }
  }
  /* Megatron-Core's --overlap-moe-expert-parallel-comm: its checks */
  if (s->a2a_overlap) {
    const char *need = s->ep < 2 ? "ep>1"
                       : s->dispatcher == PERFMOD_DISPATCH_ALLGATHER ? "dispatcher=alltoall or flex"
                       : !o->train ? "a training step (--mode train)"
                       : s->kernels != KERNELS_TE ? "kernels=te (Megatron-Core)"
                       : s->pp > 1 && s->vp < 2 ? "vp>1 when pp>1"
                       : s->recompute == RECOMPUTE_FULL ? "recompute other than full" : NULL;
    if (need) {
      pm_error ("a2a_overlap=1: expert-parallel communication overlap needs %s", need);
      return -1;
    }
  }
  /* Megatron-Core's --moe-shared-expert-overlap: the shared experts run on
   * another stream while the routed tokens travel */
  if (s->shared_overlap) {
    const char *need = m->shared_ffn == 0 ? "a model with shared experts"
                       : s->ep < 2 || (s->etp > 0 && !o->train)
                       ? "ep>1 beside tp (tokens to dispatch)"
                       : s->a2a_overlap ? "a2a_overlap=0 (Megatron-Core runs one or the other)"
                       : s->dispatcher == PERFMOD_DISPATCH_ALLGATHER ? "dispatcher=alltoall or flex"
                       : !o->train ? "a training step (--mode train)"
                       : s->kernels != KERNELS_TE ? "kernels=te (Megatron-Core)" : NULL;
    if (need) {
      pm_error ("shared_overlap=1: the shared experts' overlap needs %s", need);
      return -1;
    }
  }
  if (strategy_uneven (s)) {
    if (strategy_check_split (s, m->layers, m->name) < 0)
      return -1;
  }
  else if (m->layers % chunks != 0) {
    if (chunks > 64 || m->layers < chunks || o->engine) {   /* serving: no split= */
      pm_error ("%s: pp=%d%s does not divide the %lld layers", m->name, s->pp,
                s->vp > 1 ? " x vp" : "", (long long) m->layers);
      return -1;
    }
    /* a hint: the split perfmod search would try */
    char hint[64 * 8] = "";
    struct strategy u = *s;
    strategy_uneven_split (&u, m->layers);
    for (int i = 0; i < u.nsplit; i++)
      snprintf (hint + strlen (hint), sizeof hint - strlen (hint), "%s%d", i ? ":" : "",
                u.split[i]);
    pm_error ("%s: pp=%d%s does not divide the %lld layers: give each %s its layers, "
              "split=%s for one", m->name, s->pp, s->vp > 1 ? " x vp" : "",
              (long long) m->layers, s->vp > 1 ? "chunk (model order)" : "stage", hint);
    return -1;
  }
  if (s->ep > 1 && m->experts == 0) {
    pm_error ("%s: ep=%d: the model has no experts", m->name, s->ep);
    return -1;
  }
  if (s->ep > 1 && m->experts % s->ep != 0) {
    pm_error ("%s: ep=%d does not divide the %lld experts", m->name, s->ep,
              (long long) m->experts);
    return -1;
  }
  /* etp: in inference the routed experts over ep x etp = tp ranks, the
   * attention's (serving engines without attention data parallelism); in
   * training Megatron-Core's --expert-tensor-parallel-size 1 */
  if (s->etp > 0 && o->train) {
    const char *need = s->etp != 1 ? "etp=1 (the default is Megatron-Core's, the experts over tp)"
                       : m->experts == 0 ? "a model with routed experts"
                       : s->kernels != KERNELS_TE ? "kernels=te (Megatron-Core)"
                       : s->tp < 2 || !s->sp ? "tp>1 with sp=1 (experts beside sequence-parallel "
                                               "attention)"
                       : s->dispatcher == PERFMOD_DISPATCH_ALLGATHER
                       ? "dispatcher=alltoall or flex" : NULL;
    if (need) {
      pm_error ("etp=%d in training: needs %s", s->etp, need);
      return -1;
    }
  }
  else if (s->etp > 0) {
    if (m->experts == 0) {
      pm_error ("%s: etp=%d: the model has no experts", m->name, s->etp);
      return -1;
    }
    if (s->kernels == KERNELS_TE) {
      pm_error ("etp=%d with kernels=te: Megatron-Core's MoE layer is modelled for training "
                "(etp is the eager modules' or --engine's)", s->etp);
      return -1;
    }
    if ((int64_t) s->ep * s->etp != s->tp && !attention_dp (o)) {
      pm_error ("etp=%d: ep=%d x etp=%d must equal tp=%d (the experts' ranks are the "
                "attention's tensor-parallel ranks), or tp x dp = %lld (every replica's: "
                "attention data parallelism)", s->etp, s->ep, s->etp, s->tp,
                (long long) s->tp * layout_replicas (o));
      return -1;
    }
    if (attention_dp (o) && s->pp > 1) {
      pm_error ("ep=%d x etp=%d over the tp x dp ranks (attention data parallelism) with pp=%d: "
                "modelled for one pipeline stage", s->ep, s->etp, s->pp);
      return -1;
    }
    if (attention_dp (o) && s->etp > 1 && strategy_dispatcher (s, true) != PERFMOD_DISPATCH_ALLGATHER) {
      pm_error ("dispatcher=%s with etp=%d over the replicas: each expert's %d slices need "
                "every token routed to it; the all-gather dispatcher (the default) is modelled",
                dispatcher_name (s->dispatcher), s->etp, s->etp);
      return -1;
    }
    if (m->moe_ffn % s->etp != 0 || (m->moe_ffn == 0 && m->ffn % s->etp != 0)) {
      pm_error ("%s: etp=%d does not divide the expert width %lld", m->name, s->etp,
                (long long) (m->moe_ffn ? m->moe_ffn : m->ffn));
      return -1;
    }
  }
  /* In inference without etp each expert is split over tp and ep's ranks
   * are other replicas' (dp's): ep x tp ranks hold a layer's experts */
  if (!o->train && s->etp == 0 && s->ep > 1 && layout_replicas (o) % s->ep != 0) {
    pm_error ("ep=%d with tp=%d: the experts over ep x tp = %lld ranks do not fit the tp x dp = "
              "%lld GPUs; give etp=1 with ep = tp x dp (attention data parallelism: each "
              "expert whole on one of every replica's ranks; or ep x etp = tp x dp)", s->ep, s->tp,
              (long long) s->ep * s->tp, (long long) s->tp * layout_replicas (o));
    return -1;
  }
  /* Megatron-Core's default expert tp is tp: ep x tp ranks hold each
   * layer's experts, which the tp x dp ranks of a stage must fill */
  if (o->train && s->kernels == KERNELS_TE && s->etp == 0 && s->tp > 1 && s->ep > 1 &&
      ((int64_t) s->dp * s->cp) % s->ep != 0) {
    pm_error ("ep=%d with tp=%d: Megatron-Core's experts over ep x tp = %d ranks do not fit "
              "the tp x cp x dp = %d of a stage; etp=1 keeps each expert whole on one rank",
              s->ep, s->tp, s->ep * s->tp, s->tp * s->cp * s->dp);
    return -1;
  }
  /* the families after Switch replicate key/value heads over tp ranks
   * beyond their number (as vLLM and Megatron-Core do) */
  bool kv_ok = m->kv_heads % s->tp == 0 || (m->family >= FAM_QWEN && s->tp % m->kv_heads == 0);
  if (m->heads % s->tp != 0 || !kv_ok || m->ffn % s->tp != 0) {
    pm_error ("%s: tp=%d does not divide the %lld %s", m->name, s->tp,
              (long long) (m->heads % s->tp ? m->heads : !kv_ok ? m->kv_heads : m->ffn),
              m->heads % s->tp ? "attention heads" : !kv_ok ? "key/value heads"
              : "feed-forward width");
    return -1;
  }
  if ((s->etp == 0 && m->moe_ffn % s->tp != 0) || m->shared_ffn % s->tp != 0) {
    pm_error ("%s: tp=%d does not divide the %s width %lld", m->name, s->tp,
              m->moe_ffn % s->tp ? "expert" : "shared experts'",
              (long long) (m->moe_ffn % s->tp ? m->moe_ffn : m->shared_ffn));
    return -1;
  }
  if (batch % ((int64_t) s->dp * s->mbs) != 0) {
    pm_error ("--batch %lld is not a multiple of dp=%d x mbs=%d", (long long) batch, s->dp, s->mbs);
    return -1;
  }
  /* the pipeline schedule holds each micro-batch (and counts them in an int) */
  if (batch / ((int64_t) s->dp * s->mbs) > PM_MAX_MICROBATCHES) {
    pm_error ("--batch %lld: %lld micro-batches of dp=%d x mbs=%d per step; at most %d are "
              "modelled", (long long) batch, (long long) (batch / ((int64_t) s->dp * s->mbs)),
              s->dp, s->mbs, PM_MAX_MICROBATCHES);
    return -1;
  }
  return 0;
}

/* Memory of pipeline rank r (the ranks' chunks, the micro-batches whose
 * activations it keeps at once). */
static void
rank_memory (const struct model_cfg *m, const struct perfmod_gpu *gpu,
             const struct dist_options *o, const struct dist_plan *dp, int r,
             struct memory_estimate *mem)
{
  const struct strategy *s = o->s;
  int p = s->pp, v = s->vp > 1 ? s->vp : 1;
  double mbs = (double) o->batch / ((double) s->dp * s->mbs), inflight;
  double lpc = (double) rank_layers (m, s, r) / v;  /* layers per chunk, the rank's mean */
  bool embed = r == 0, head = r == p - 1;
  struct mem_shard ms;
  struct memory_options mo;

  /* chunk-micro-batches whose activations the rank keeps at its peak:
   * GPipe all of them, 1F1B its warm-up forwards and one more */
  if (s->schedule == SCHED_GPIPE)
    inflight = mbs;
  else if (s->schedule == SCHED_INTERLEAVED) {
    double warm = (double) ((p - r - 1) * 2 + (v - 1) * p) + 1;
    inflight = warm < mbs * v ? warm : mbs * v;
  }
  else
    inflight = (double) (p - r) < mbs ? (double) (p - r) : mbs;
  /* Megatron-Core's combined 1F1B (a2a_overlap) runs one more forward
   * before its 1F1B steps, so that each step's forward and backward are
   * of different micro-batches (pipeline_parallel/schedules.py: "one
   * extra micro-batch forward step"; without pipelining the next
   * micro-batch's forward runs beside this one's backward) */
  if (o->train && s->a2a_overlap && inflight + 1 <= mbs * v)
    inflight += 1;
  memset (&ms, 0, sizeof ms);
  ms.tp = s->tp;
  ms.sp = s->sp;
  ms.tpo = s->tpo;
  ms.routed_gathered = dp->moe_tp_after && s->etp == 0;
  ms.params = device_params (m, dp, rank_share (m, s, r), embed, head,
                            m->tied && p > 1 && head);
  ms.expert_params = device_expert_params (dp, rank_share (m, s, r));
  ms.layer_copies = o->train ? lpc * inflight : lpc * v;
  if (head && o->train && s->mtp > 0) {
    /* the multi-token prediction layers: a layer's weights and eh_proj's
     * each, the embedding's copy where the first stage has it, and their
     * activations with the last chunk's micro-batches in flight */
    double d = (double) m->hidden, layers = (double) s->mtp;
    ms.params += device_params (m, dp, layers / (double) m->layers, false, false, false)
                 + layers * (2 * d * d + 2 * d) / dp->plan.ffn;
    ms.expert_params += device_expert_params (dp, layers / (double) m->layers);
    if (p > 1 && !m->tied)
      ms.params += (double) m->vocab * d / dp->plan.vocab;
    ms.layer_copies += layers * inflight / v;
    ms.mtp = s->mtp;
  }
  ms.embed = embed;
  ms.head = head;
  ms.vocab = dp->plan.vocab;
  ms.weights = dp->plan.weights;
  ms.gradients = dp->plan.gradients;
  ms.optimizer = dp->plan.optimizer;
  if (o->prec)
    ms.grad_bytes = grad_bytes_of (o->prec, s);
  ms.expert_weights = dp->expert_weights;
  ms.expert_gradients = dp->expert_gradients;
  ms.expert_optimizer = dp->expert_optimizer;
  ms.gradient_buffers = dp->plan.gradient_buffers;
  /* DeepEP's buffers under the flex dispatcher, over the ep group */
  if (o->train && s->dispatcher == PERFMOD_DISPATCH_FLEX && s->ep > 1)
    ms.comm_buffers = phys_deepep_buffer_bytes (s->ep, 2.0 * (double) m->hidden);
  memset (&mo, 0, sizeof mo);
  mo.prec = o->prec;
  /* inference keeps every sequence's KV cache: the replica's whole batch
   * (its working set is then counted for all of it too: an upper bound) */
  mo.batch = o->train ? s->mbs : o->batch / s->dp;
  mo.seq = o->seq / s->cp;
  mo.megatron_core = s->kernels == KERNELS_TE;
  mo.train = o->train;
  mo.recompute = s->recompute;
  mo.recompute_modules = s->recompute_modules;
  mo.gen = o->gen;
  mo.shard = &ms;
  mo.flash = o->flash;
  memory_estimate (m, &mo, gpu, mem);
}

int
dist_predict (struct plugin_set *set, struct plugin *pred, const struct model_cfg *m,
              const struct perfmod_gpu *gpu, const struct dist_options *o, struct dist_result *r)
{
  const struct strategy *s = o->s;
  int p = s->pp, v = s->vp > 1 ? s->vp : 1, chunks = p * v;
  struct dist_plan dp;
  struct comm_groups g;
  /* Chunks differ by the embedding (first), the output layer (last) and,
   * with a given split, their layers: one prediction per distinct pair. */
  struct chunk_times *times = NULL;
  int *kind_of = NULL, *layers_of = NULL, nkinds = 0;
  int64_t *first_of = NULL;
  double *fw = NULL, *bw = NULL, p2p = 0, plain, over;
  struct pipe_input pin;
  struct pipe_result pres;
  struct timeline *tl = o->timeline;
  int rc = -1, cr;

  memset (r, 0, sizeof *r);
  if (dist_check (m, o) < 0)
    return -1;
  if (compose (set, m, gpu, o, &dp) < 0)
    return -1;
  /* memory first: it needs no times, and a search wants none where it
   * does not fit.  The fullest pipeline rank: with even stages the first
   * or the last, with a given split any. */
  rank_memory (m, gpu, o, &dp, 0, &r->mem);
  for (int k = 1; k < p; k++) {
    struct memory_estimate other;
    if (!strategy_uneven (s) && k != p - 1)
      continue;
    rank_memory (m, gpu, o, &dp, k, &other);
    if (other.total > r->mem.total) {
      r->mem = other;
      r->mem_rank = k;
    }
  }
  r->plan = dp.plan;
  if (o->stop_if_oom && r->mem.oom)
    return 0;
  cr = costed_rank (m, s, &dp);
  comm_groups_init (&g, o);
  r->microbatches = (int) (o->batch / ((int64_t) s->dp * s->mbs));
  if (tl) {
    timeline_free (tl);
    tl->stages = p;
    tl->vp = v;
    tl->chunks = chunks;
    tl->microbatches = r->microbatches;
    tl->train = o->train;
    tl->fw = xcalloc ((size_t) chunks, sizeof *tl->fw);
    tl->bw = xcalloc ((size_t) chunks, sizeof *tl->bw);
    tl->recompute = xcalloc ((size_t) chunks, sizeof *tl->recompute);
    tl->fw_comm = xcalloc ((size_t) chunks, sizeof *tl->fw_comm);
    tl->bw_comm = xcalloc ((size_t) chunks, sizeof *tl->bw_comm);
  }

  /* Even stages: at most three graphs, whatever the cluster's size. */
  fw = xcalloc ((size_t) chunks, sizeof *fw);
  bw = xcalloc ((size_t) chunks, sizeof *bw);
  times = xcalloc ((size_t) chunks, sizeof *times);
  kind_of = xcalloc ((size_t) chunks, sizeof *kind_of);
  layers_of = xcalloc ((size_t) chunks, sizeof *layers_of);
  first_of = xcalloc ((size_t) chunks, sizeof *first_of);
  for (int c = 0; c < chunks; c++) {
    int kind = chunks == 1 ? 0 : c == 0 ? 0 : c == chunks - 1 ? 2 : 1, k;
    int64_t layers = chunk_layers (m, s, c), first = chunk_first_layer (m, s, c);
    for (k = 0; k < nkinds && (kind_of[k] != kind || layers_of[k] != layers
                               || first_of[k] != first); k++)
      ;
    if (k == nkinds) {
      kind_of[k] = kind;
      layers_of[k] = (int) layers;
      first_of[k] = first;
      nkinds++;
      if (chunk_predict (pred, m, gpu, o, &dp, &g, layers, first, c == 0, c == chunks - 1,
                         &times[k], r) < 0)
        goto out;
    }
    fw[c] = times[k].fw;
    bw[c] = times[k].bw;
    if (tl) {
      tl->fw[c] = times[k].fw;
      tl->bw[c] = times[k].bw;
      tl->recompute[c] = times[k].recompute;
      tl->fw_comm[c] = times[k].fw_comm;
      tl->bw_comm[c] = times[k].bw_comm;
    }
    r->stage_fw_ms[c % p] += times[k].fw;
    r->stage_bw_ms[c % p] += times[k].bw;
    r->stage_recompute_ms[c % p] += times[k].recompute;
    r->attn_ms += times[k].attn;
    r->moe_ms += times[k].moe;
    /* what the costed rank runs in the step */
    if (c % p == cr) {
      r->recompute_ms += times[k].recompute * r->microbatches;
      for (int d = 0; d < NDIMS; d++)
        r->comm_ms[d] += times[k].comm[d] * r->microbatches;
      r->hidden_ms[DIM_TP] += times[k].tp_hidden * r->microbatches;
      r->hidden_ms[DIM_EP] += times[k].ep_hidden * r->microbatches;
      r->host_ms += times[k].host * r->microbatches;
      r->flops += times[k].flops * r->microbatches;
    }
  }

  site_seconds (pred, &dp, PERFMOD_SITE_STAGE, -1, &g, gpu, &plain, &over, NULL);
  p2p = (plain + over) * 1e3;
  memset (&pin, 0, sizeof pin);
  pin.stages = p;
  pin.vp = v;
  pin.microbatches = r->microbatches;
  pin.schedule = s->schedule;
  pin.backward = o->train;
  pin.fw_ms = fw;
  pin.bw_ms = bw;
  pin.p2p_ms = p2p;
  pin.log = tl ? &tl->log : NULL;
  if ((tl ? pipeline_simulate (&pin, &pres) : pipeline_cached (o->cache, &pin, &pres)) < 0)
    goto out;
  r->pipeline_ms = pres.step_ms;
  r->bubble = p > 1 ? pres.bubble : 0;
  r->bubble_ms = r->bubble * pres.step_ms;
  if (p > 1)
    r->comm_ms[DIM_PP] += p2p * (o->train ? 2 : 1) * r->microbatches * v;

  if (o->train) {
    /* Gradients once per step: bucketed collectives marked to overlap may
     * hide, all but the last bucket, behind the last micro-batch's
     * backward (the gradients' reduction, phase 1) or the first one's
     * forward (the parameters' all-gather into the next step, phase 0:
     * Megatron's --overlap-param-gather); the rest is exposed. */
    double by_dim[NDIMS] = { 0 }, window[2] = { 0, 0 }, params, buckets, hidden = 0;
    params = device_params (m, &dp, rank_share (m, s, cr), cr == 0,
                            cr == p - 1, false);
    buckets = ceil (params / DP_BUCKET_PARAMS);
    for (int c = cr; c < chunks; c += p) {
      window[0] += fw[c];
      window[1] += bw[c];
    }
    r->grads_ms = 0;
    for (int ph = 0; ph < 2; ph++) {
      double h;
      site_seconds (pred, &dp, PERFMOD_SITE_GRADS, ph, &g, gpu, &plain, &over, by_dim);
      h = fmin (over * 1e3 * (1 - 1 / buckets), window[ph]);
      r->grads_ms += (plain + over) * 1e3 - h;
      hidden += h;
    }
    r->hidden_ms[DIM_DP] = hidden;
    for (int d = 0; d < NDIMS; d++)
      r->comm_ms[d] += by_dim[d] * 1e3;
    double experts = device_expert_params (&dp, rank_share (m, s, cr));
    if (optimizer_ms (pred, gpu, o->prec, (params - experts) / dp.plan.optimizer
                                          + experts / dp.expert_optimizer, &r->optimizer_ms) < 0)
      goto out;
  }
  r->step_ms = r->pipeline_ms + r->grads_ms + r->optimizer_ms;
  if (tl) {
    tl->p2p_ms = p2p;
    tl->pipeline_ms = r->pipeline_ms;
    tl->grads_ms = r->grads_ms;
    tl->optimizer_ms = r->optimizer_ms;
    tl->step_ms = r->step_ms;
    tl->bubble = r->bubble;
  }

  rc = 0;
out:
  free (fw);
  free (bw);
  free (times);
  free (kind_of);
  free (layers_of);
  free (first_of);
  return rc;
}

void
timeline_free (struct timeline *t)
{
  pipe_log_free (&t->log);
  free (t->fw);
  free (t->bw);
  free (t->recompute);
  free (t->fw_comm);
  free (t->bw_comm);
  memset (t, 0, sizeof *t);
}

int
dist_chunk_ops (struct plugin_set *set, struct plugin *pred, const struct model_cfg *m,
                const struct perfmod_gpu *gpu, const struct dist_options *o, int stage,
                struct graph *gr, struct prediction *pr, double *recompute_ms,
                double host[NPHASES])
{
  const struct strategy *s = o->s;
  int chunks = s->pp * (s->vp > 1 ? s->vp : 1);
  struct dist_plan dp;
  struct comm_groups g;
  struct run_options ro;
  if (dist_check (m, o) < 0 || compose (set, m, gpu, o, &dp) < 0)
    return -1;
  if (stage < 0 || stage >= chunks) {
    pm_error ("pipeline chunk %d: the strategy has %d (0 to %d, model order)", stage, chunks,
              chunks - 1);
    return -1;
  }
  comm_groups_init (&g, o);
  if (chunk_build (gr, m, o, &dp, chunk_layers (m, s, stage), chunk_first_layer (m, s, stage),
                   stage == 0, stage == chunks - 1) < 0)
    return -1;
  memset (&ro, 0, sizeof ro);
  ro.prec = o->prec;
  ro.train = o->train;
  ro.groups = &g;
  if (predict_graph (pred, gr, gpu, &ro, pr) < 0) {
    graph_free (gr);
    return -1;
  }
  memset (host, 0, NPHASES * sizeof host[0]);
  if (o->train)
    host_wait (gr, pr, o->prec, s->host_us, host);
  *recompute_ms = 0;
  if (o->train && s->recompute != RECOMPUTE_NONE) {
    unsigned mods = strategy_rmods (s);
    for (size_t i = gr->layer_begin; i < gr->layer_end; i++)
      if (s->recompute == RECOMPUTE_FULL || (gr->nodes[i].rmod & mods))
        *recompute_ms += pr->per_node[i].t[PHASE_FW] * (double) graph_weight (gr, i);
  }
  return 0;
}

int
serving_predict (struct plugin_set *set, struct plugin *pred, const struct model_cfg *m,
                 const struct perfmod_gpu *gpu, const struct dist_options *o, int64_t kv_len,
                 struct dist_result *r)
{
  struct strategy s = *o->s;
  struct dist_options q = *o;
  if (o->batch % s.dp != 0 || o->batch / s.dp > INT32_MAX) {
    pm_error ("--batch %lld is not a multiple of dp=%d", (long long) o->batch, s.dp);
    return -1;
  }
  s.mbs = (int) (o->batch / s.dp);
  s.vp = 1;
  q.s = &s;
  q.train = false;
  q.kv_len = kv_len;
  return dist_predict (set, pred, m, gpu, &q, r);
}

/* The memory of the fullest pipeline rank at o's batch, and the largest
 * batch per replica that fits (0: not even one sequence): the memory
 * grows with the batch (the KV cache, the working set), so a bisection. */
int
dist_serving_memory (struct plugin_set *set, const struct model_cfg *m,
                     const struct perfmod_gpu *gpu, const struct dist_options *o,
                     struct memory_estimate *mem, int64_t *max_batch)
{
  struct dist_plan dp;
  struct dist_options q = *o;
  int64_t lo = 0, hi = PM_MAX_BATCH / o->s->dp;
  if (compose (set, m, gpu, o, &dp) < 0)
    return -1;
  *mem = (struct memory_estimate) { 0 };
  for (int k = 0; k < o->s->pp; k++) {
    struct memory_estimate e;
    rank_memory (m, gpu, o, &dp, k, &e);
    if (k == 0 || e.total > mem->total)
      *mem = e;
  }
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    bool fits = true;
    q.batch = mid * o->s->dp;
    for (int k = 0; k < o->s->pp && fits; k++) {
      struct memory_estimate e;
      rank_memory (m, gpu, &q, &dp, k, &e);
      fits = !e.oom;
    }
    if (fits)
      lo = mid;
    else
      hi = mid - 1;
  }
  *max_batch = lo;
  return 0;
}

int
dist_serving_footprint (struct plugin_set *set, const struct model_cfg *m,
                        const struct perfmod_gpu *gpu, const struct dist_options *o,
                        int64_t tokens, double *weights, double *kv_per_token)
{
  struct dist_plan dp;
  struct dist_options q = *o;
  if (compose (set, m, gpu, o, &dp) < 0)
    return -1;
  q.batch = o->s->dp;            /* one sequence per replica */
  q.seq = tokens;
  q.gen = 0;
  q.kv_len = 0;
  *weights = *kv_per_token = 0;
  for (int k = 0; k < o->s->pp; k++) {
    struct memory_estimate e;
    rank_memory (m, gpu, &q, &dp, k, &e);
    if (e.weights > *weights)
      *weights = e.weights;
    if (e.kv_cache / (double) tokens > *kv_per_token)
      *kv_per_token = e.kv_cache / (double) tokens;
  }
  return 0;
}

int
dist_stage_graph (struct plugin_set *set, const struct model_cfg *m,
                  const struct perfmod_gpu *gpu, const struct dist_options *o, int stage,
                  struct graph *g)
{
  struct dist_plan dp;
  int chunks = o->s->pp * (o->s->vp > 1 ? o->s->vp : 1);
  if (dist_check (m, o) < 0 || compose (set, m, gpu, o, &dp) < 0)
    return -1;
  return chunk_build (g, m, o, &dp, chunk_layers (m, o->s, stage),
                      chunk_first_layer (m, o->s, stage), stage == 0, stage == chunks - 1);
}

int
dist_graph (struct plugin_set *set, const struct model_cfg *m, const struct perfmod_gpu *gpu,
            const struct dist_options *o, struct graph *g)
{
  struct dist_plan dp;
  int chunks = o->s->pp * (o->s->vp > 1 ? o->s->vp : 1);
  if (dist_check (m, o) < 0 || compose (set, m, gpu, o, &dp) < 0)
    return -1;
  return chunk_build (g, m, o, &dp, chunk_layers (m, o->s, 0), 0, true, chunks == 1);
}
