/* tp.c: tensor parallelism: Megatron's column- and row-parallel layers (optionally sequence-parallel), and the seeds' closed form. */
#include <config.h>

#include <stddef.h>
#include <stdio.h>

#include "perfmod-plugin.h"

/* Over Y chips: T_math = 4BDF/(YC), T_comms = 4BD/W (activation
 * all-reduces); compute-bound iff Y < F W / C. */
static int
tp_explain (void *state, const struct perfmod_parallel_case *c, struct perfmod_roofline *r)
{
  double y = c->degree, b = c->tokens, d = c->hidden, f = c->ffn;
  (void) state;
  r->t_math = 4 * b * d * f / (y * c->chip_flops);
  r->t_comms = 4 * b * d / c->link_bytes_per_s;
  r->threshold = f * c->link_bytes_per_s / c->chip_flops;
  snprintf (r->condition, sizeof r->condition,
            "degree Y = %.0f < F*W/C = %.2f", y, r->threshold);
  return 0;
}

/* Megatron: heads, the feed-forward width and the vocabulary split over
 * the Y ranks.  Without sequence parallelism each block's output is
 * all-reduced in the forward pass and its input gradient in the backward;
 * with it, the norm/dropout regions hold 1/Y of the tokens, and an
 * all-gather before each block and a reduce-scatter after it replace the
 * all-reduce (the backward mirrors them and re-gathers the input for the
 * weight gradient).  With tp_comm_overlap (Megatron-Core's
 * --tp-comm-overlap) the per-layer ones are pipelined with their GEMMs;
 * the embedding's and the output layer's stay exposed. */
static int
tp_plan (void *state, const struct perfmod_parallel_case *c, struct perfmod_plan *p)
{
  int y = c->degree;
  double act = c->mb_tokens * c->hidden * c->elem_bytes, gathered = act;
  /* Transformer Engine's userbuffers pipeline each block's gathers and
   * scatters with the GEMM beside them (a core before tp_comm_overlap
   * has no such field) */
  int ub = c->struct_size >= offsetof (struct perfmod_parallel_case, tp_comm_overlap)
                             + sizeof c->tp_comm_overlap &&
           c->tp_comm_overlap && c->sequence_parallel ? PERFMOD_OVERLAP_GEMM : 0;
  static const int in[] = { PERFMOD_SITE_ATTN_IN, PERFMOD_SITE_MLP_IN };
  static const int out[] = { PERFMOD_SITE_ATTN_OUT, PERFMOD_SITE_MLP_OUT };
  /* in fp8 training Transformer Engine quantises what its layers gather
   * before gathering it: the blocks' all-gathers move that dtype */
  if (c->struct_size >= offsetof (struct perfmod_parallel_case, gather_bytes)
                       + sizeof c->gather_bytes && c->gather_bytes > 0)
    gathered = c->mb_tokens * c->hidden * c->gather_bytes;
  (void) state;
  p->heads = p->ffn = p->vocab = y;
  if (c->sequence_parallel) {
    p->tokens = y;
    for (int i = 0; i < 2; i++) {
      perfmod_plan_comm (p, PERFMOD_COLL_ALLGATHER, in[i], 0, gathered, ub);
      perfmod_plan_comm (p, PERFMOD_COLL_REDUCE_SCATTER, out[i], 0, act, ub);
      perfmod_plan_comm (p, PERFMOD_COLL_ALLGATHER, out[i], 1, gathered, ub);
      perfmod_plan_comm (p, PERFMOD_COLL_ALLGATHER, in[i], 1, gathered, ub);
      perfmod_plan_comm (p, PERFMOD_COLL_REDUCE_SCATTER, in[i], 1, act, ub);
    }
    perfmod_plan_comm (p, PERFMOD_COLL_REDUCE_SCATTER, PERFMOD_SITE_EMBED, 0, act, 0);
    perfmod_plan_comm (p, PERFMOD_COLL_ALLGATHER, PERFMOD_SITE_EMBED, 1, act, 0);
    perfmod_plan_comm (p, PERFMOD_COLL_ALLGATHER, PERFMOD_SITE_LOGITS, 0, act, 0);
    perfmod_plan_comm (p, PERFMOD_COLL_REDUCE_SCATTER, PERFMOD_SITE_LOGITS, 1, act, 0);
  }
  else {
    for (int i = 0; i < 2; i++) {
      perfmod_plan_comm (p, PERFMOD_COLL_ALLREDUCE, out[i], 0, act, 0);
      perfmod_plan_comm (p, PERFMOD_COLL_ALLREDUCE, in[i], 1, act, 0);
    }
    /* the vocabulary-parallel embedding sums its partial lookups; the
     * output layer's input gradient is summed */
    perfmod_plan_comm (p, PERFMOD_COLL_ALLREDUCE, PERFMOD_SITE_EMBED, 0, act, 0);
    perfmod_plan_comm (p, PERFMOD_COLL_ALLREDUCE, PERFMOD_SITE_LOGITS, 1, act, 0);
  }
  /* the vocabulary-parallel cross entropy: max, sum of exponentials and
   * the target's logit, one fp32 per token each */
  perfmod_plan_comm (p, PERFMOD_COLL_ALLREDUCE, PERFMOD_SITE_LOGITS, 0, 3 * 4 * c->mb_tokens, 0);
  return 0;
}

static struct perfmod_plugin plugin = {
  .name = "tp",
  .version = PACKAGE_VERSION,
  .description = "tensor parallelism: Megatron column/row-parallel layers, sequence parallelism",
  .kind = PERFMOD_PLUGIN_PARALLELISM,
  .dimension = "tp",
  .explain = tp_explain,
  .plan = tp_plan,
};

PERFMOD_REGISTER_PLUGIN (plugin)
