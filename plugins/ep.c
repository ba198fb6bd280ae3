/* ep.c: expert parallelism: experts sharded over ranks, all-to-all dispatch and combine, load imbalance; and the seeds' closed form. */
#include <config.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfmod-plugin.h"

/* Over Z chips with k experts per token: T_math = 4BkDF/(ZC),
 * T_comms = 4BD(Z-8)/(WZ) min(8k/Z, 1): the all-to-all leaves the node
 * only for the share of experts beyond one 8-GPU node. */
static int
ep_explain (void *state, const struct perfmod_parallel_case *c, struct perfmod_roofline *r)
{
  double z = c->degree, b = c->tokens, d = c->hidden, f = c->ffn, k = c->experts_per_token;
  double alpha = c->chip_flops / c->link_bytes_per_s, share = 8 * k / z;
  (void) state;
  if (share > 1)
    share = 1;
  r->t_math = 4 * b * k * d * f / (z * c->chip_flops);
  r->t_comms = z > 8 ? 4 * b * d * (z - 8) / (c->link_bytes_per_s * z) * share : 0;
  /* Either k > Z/8 and F > alpha (Z-8)/k, or Z >> k and F > 8 alpha. */
  r->threshold = k > z / 8 ? alpha * (z - 8) / k : 8 * alpha;
  if (r->threshold < 0)
    r->threshold = 0;
  snprintf (r->condition, sizeof r->condition, "F = %.0f > %.0f (alpha = C/W = %.0f, k = %.0f)",
            f, r->threshold, alpha, k);
  return 0;
}

static struct {
  const struct perfmod_host *host;
  double imbalance;     /* the busiest rank's routed tokens over the even share */
} S = { NULL, 1.0 };

static int
ep_init (const struct perfmod_host *host, void **state)
{
  S.imbalance = 1.0;    /* the default again after a restart */
  S.host = host;
  *state = &S;
  return 0;
}

static const char *const ep_keys[] = { "imbalance", NULL };

static int
ep_config (void *state, const char *key, const char *value)
{
  char *end;
  double v = strtod (value, &end);
  (void) state;
  (void) key;
  if (end == value || *end != '\0' || !(v >= 1.0) || v > 1e6) {
    S.host->error ("imbalance=%s: expected a factor of at least 1 (1: even routing)", value);
    return -1;
  }
  S.imbalance = v;
  return 0;
}

/* Each rank keeps experts/Z experts, fed with the tokens of all Z ranks.
 * Under the all-to-all dispatcher its k routed copies of every token go
 * out in an all-to-all (dispatch) and come back in another (combine); the
 * backward pass does the same with their gradients.  The busiest rank
 * waits for the others.  DeepEP's kernels (dispatcher=flex) move the same
 * copies, deduplicated per rank and node (the core's model of them).  The
 * all-gather dispatcher gathers every rank's tokens, whatever their
 * experts, and reduce-scatters the outputs back; its backward the
 * reverse.  With a2a_overlap they hide behind another micro-batch's
 * computation (Megatron-Core's 1F1B expert-parallel overlap): behind the
 * phase's, where the step has two micro-batches or more; the first
 * forward's and last backward's, with nothing beside them, are taken as
 * hidden too. */
static int
ep_plan (void *state, const struct perfmod_parallel_case *c, struct perfmod_plan *p)
{
  double routed = c->mb_tokens * c->experts_per_token * c->hidden * c->elem_bytes * S.imbalance;
  bool has = c->struct_size >= offsetof (struct perfmod_parallel_case, a2a_overlap)
                              + sizeof c->a2a_overlap;      /* a core that knows them */
  int dispatcher = has ? c->dispatcher : PERFMOD_DISPATCH_ALLTOALL;
  /* with one micro-batch there is no other one to overlap with */
  int overlap = has && c->a2a_overlap && c->microbatches >= 2 ? PERFMOD_OVERLAP_PHASE : 0;
  (void) state;
  p->experts = c->degree;
  p->expert_load = S.imbalance;
  for (int phase = 0; phase < 2; phase++) {
    if (dispatcher == PERFMOD_DISPATCH_ALLGATHER) {
      double all = c->mb_tokens * c->degree * c->hidden * c->elem_bytes;
      perfmod_plan_comm (p, phase ? PERFMOD_COLL_REDUCE_SCATTER : PERFMOD_COLL_ALLGATHER,
                         PERFMOD_SITE_MOE_DISPATCH, phase, all, 0);
      perfmod_plan_comm (p, phase ? PERFMOD_COLL_ALLGATHER : PERFMOD_COLL_REDUCE_SCATTER,
                         PERFMOD_SITE_MOE_COMBINE, phase, all, 0);
      continue;
    }
    int coll = dispatcher == PERFMOD_DISPATCH_FLEX ? PERFMOD_COLL_DEEPEP : PERFMOD_COLL_ALLTOALL;
    perfmod_plan_comm (p, coll, PERFMOD_SITE_MOE_DISPATCH, phase, routed, overlap);
    perfmod_plan_comm (p, coll, PERFMOD_SITE_MOE_COMBINE, phase, routed, overlap);
  }
  return 0;
}

static struct perfmod_plugin plugin = {
  .name = "ep",
  .version = PACKAGE_VERSION,
  .description = "expert parallelism: sharded experts, all-to-all dispatch and combine",
  .kind = PERFMOD_PLUGIN_PARALLELISM,
  .dimension = "ep",
  .init = ep_init,
  .explain = ep_explain,
  .plan = ep_plan,
  .config_keys = ep_keys,
  .config = ep_config,
};

PERFMOD_REGISTER_PLUGIN (plugin)
