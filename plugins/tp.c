/* tp.c: tensor parallelism, first version: the seeds' closed-form roofline per layer. */
#include <config.h>

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

static struct perfmod_plugin plugin = {
  .name = "tp",
  .version = PACKAGE_VERSION,
  .description = "tensor parallelism: activation all-reduces (closed form)",
  .kind = PERFMOD_PLUGIN_PARALLELISM,
  .dimension = "tp",
  .explain = tp_explain,
};

PERFMOD_REGISTER_PLUGIN (plugin)
