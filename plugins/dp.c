/* dp.c: data parallelism, first version: the seeds' closed-form roofline per layer. */
#include <config.h>

#include <stdio.h>

#include "perfmod-plugin.h"

/* Over X chips: T_math = 8BDF/(XC), T_comms = 8DF/W (the gradient
 * all-reduce of one layer's weights); compute-bound iff B/X > C/W. */
static int
dp_explain (void *state, const struct perfmod_parallel_case *c, struct perfmod_roofline *r)
{
  double x = c->degree, b = c->tokens, d = c->hidden, f = c->ffn;
  (void) state;
  r->t_math = 8 * b * d * f / (x * c->chip_flops);
  r->t_comms = 8 * d * f / c->link_bytes_per_s;
  r->threshold = c->chip_flops / c->link_bytes_per_s;
  snprintf (r->condition, sizeof r->condition,
            "tokens per replica B/X = %.0f > C/W = %.0f", b / x, r->threshold);
  return 0;
}

static struct perfmod_plugin plugin = {
  .name = "dp",
  .version = PACKAGE_VERSION,
  .description = "data parallelism: gradient all-reduce (closed form)",
  .kind = PERFMOD_PLUGIN_PARALLELISM,
  .dimension = "dp",
  .explain = dp_explain,
};

PERFMOD_REGISTER_PLUGIN (plugin)
