/* ep.c: expert parallelism, first version: the seeds' closed-form roofline per MoE layer. */
#include <config.h>

#include <stdio.h>

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

static struct perfmod_plugin plugin = {
  .name = "ep",
  .version = PACKAGE_VERSION,
  .description = "expert parallelism: all-to-all dispatch and combine (closed form)",
  .kind = PERFMOD_PLUGIN_PARALLELISM,
  .dimension = "ep",
  .explain = ep_explain,
};

PERFMOD_REGISTER_PLUGIN (plugin)
