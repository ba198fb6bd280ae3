/* pp.c: pipeline parallelism: the activations sent between stages, and the seeds' closed-form bubble. */
#include <config.h>

#include <stdio.h>

#include "perfmod-plugin.h"

/* Total p2p time 2BD/(W N_mb) (N_mb + N_stages - 2); per layer about
 * 1.5 * 2BD/(W N_layers).  Compute per layer is the dense 8BDF/C of one
 * chip, so the two columns compare like the other dimensions'. */
static int
pp_explain (void *state, const struct perfmod_parallel_case *c, struct perfmod_roofline *r)
{
  double p = c->degree, b = c->tokens, d = c->hidden, f = c->ffn, m = c->microbatches;
  double total_p2p;
  (void) state;
  if (m < 1)
    m = 1;
  total_p2p = 2 * b * d / (c->link_bytes_per_s * m) * (m + p - 2);
  r->t_math = 8 * b * d * f / c->chip_flops;
  r->t_comms = 1.5 * 2 * b * d / (c->link_bytes_per_s * c->layers);
  r->threshold = (p - 1) / (m + p - 1);
  snprintf (r->condition, sizeof r->condition,
            "bubble (p-1)/(m+p-1) = %.3f with m = %.0f micro-batches; total p2p %.3f ms",
            r->threshold, m, total_p2p * 1e3);
  return 0;
}

/* Each micro-batch's hidden state goes to the next stage in the forward
 * pass and its gradient back in the backward; the core splits the layers
 * into stages and simulates the schedule. */
static int
pp_plan (void *state, const struct perfmod_parallel_case *c, struct perfmod_plan *p)
{
  double act = c->mb_tokens * c->hidden * c->elem_bytes;
  (void) state;
  perfmod_plan_comm (p, PERFMOD_COLL_SENDRECV, PERFMOD_SITE_STAGE, 0, act, 0);
  perfmod_plan_comm (p, PERFMOD_COLL_SENDRECV, PERFMOD_SITE_STAGE, 1, act, 0);
  return 0;
}

static struct perfmod_plugin plugin = {
  .name = "pp",
  .version = PACKAGE_VERSION,
  .description = "pipeline parallelism: stage-to-stage transfers (the core simulates the schedule)",
  .kind = PERFMOD_PLUGIN_PARALLELISM,
  .dimension = "pp",
  .explain = pp_explain,
  .plan = pp_plan,
};

PERFMOD_REGISTER_PLUGIN (plugin)
