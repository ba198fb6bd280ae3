/* dp.c: data parallelism: gradient all-reduce or ZeRO-1/2/3 sharding and its collectives; and the seeds' closed form. */
#include <config.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

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

static struct {
  const struct perfmod_host *host;
  int overlap;          /* gradient buckets reduced during the backward pass; -1: as the
                           framework does (Megatron-Core yes, the rest no) */
  int bucket_view;      /* gradients are views of the buckets: no copy */
} S = { NULL, -1, 0 };

static int
dp_init (const struct perfmod_host *host, void **state)
{
  /* the defaults again: a restart forgets the last run's options */
  S.overlap = -1;
  S.bucket_view = 0;
  S.host = host;
  *state = &S;
  return 0;
}

static const char *const dp_keys[] = { "overlap", "bucket_view", NULL };

static int
dp_config (void *state, const char *key, const char *value)
{
  (void) state;
  if (strcmp (value, "0") && strcmp (value, "1")) {
    S.host->error ("%s=%s: expected 0 or 1", key, value);
    return -1;
  }
  *(strcmp (key, "overlap") == 0 ? &S.overlap : &S.bucket_view) = value[0] == '1';
  return 0;
}

/* Over X replicas.  ZeRO-0: the gradients are all-reduced once per step.
 * ZeRO-1 (Megatron's distributed optimizer): each replica updates 1/X of
 * the parameters, so gradients are reduce-scattered and the updated
 * parameters all-gathered.  ZeRO-2 also keeps 1/X of the gradients;
 * ZeRO-3 (FSDP) 1/X of the weights too, all-gathering each layer's before
 * its forward and its backward (prefetched, so they may overlap).
 * Megatron reduces gradients after the backward pass unless asked to
 * overlap them (--overlap-grad-reduce; here dp:overlap=1). */
static int
dp_plan (void *state, const struct perfmod_parallel_case *c, struct perfmod_plan *p)
{
  double x = c->degree, grads = c->grad_bytes;
  double ge = c->struct_size >= offsetof (struct perfmod_parallel_case, grad_elem_bytes)
                                + sizeof c->grad_elem_bytes && c->grad_elem_bytes > 0
              ? c->grad_elem_bytes : 4;
  double params = grads / ge * (c->elem_bytes < 4 ? 2 : 4);
  bool mcore = c->struct_size >= offsetof (struct perfmod_parallel_case, megatron_core)
                                 + sizeof c->megatron_core && c->megatron_core;
  int overlap = S.overlap >= 0 ? S.overlap : mcore;
  (void) state;
  /* PyTorch's DistributedDataParallel copies the gradients into its
   * all-reduce buckets unless gradient_as_bucket_view is set: one more
   * copy of the unsharded gradients (dp:bucket_view=1 drops it).
   * Megatron-Core's buffer is the buckets: no copy. */
  if (c->zero < 2 && !S.bucket_view && !mcore)
    p->gradient_buffers = 1;
  if (c->zero == 0)
    return perfmod_plan_comm (p, PERFMOD_COLL_ALLREDUCE, PERFMOD_SITE_GRADS, 1, grads, overlap);
  p->optimizer = x;
  if (c->zero >= 2)
    p->gradients = x;
  perfmod_plan_comm (p, PERFMOD_COLL_REDUCE_SCATTER, PERFMOD_SITE_GRADS, 1, grads,
                     overlap || c->zero == 3);
  /* Megatron-Core's distributed optimizer gathers the updated parameters
   * bucket by bucket as the next step's forward reaches them
   * (--overlap-param-gather, with --overlap-grad-reduce in its recipes) */
  if (c->zero < 3)
    return perfmod_plan_comm (p, PERFMOD_COLL_ALLGATHER, PERFMOD_SITE_GRADS, 0, params,
                              overlap && mcore);
  p->weights = x;
  perfmod_plan_comm (p, PERFMOD_COLL_ALLGATHER, PERFMOD_SITE_PARAMS, 0, c->layer_param_bytes, 1);
  return perfmod_plan_comm (p, PERFMOD_COLL_ALLGATHER, PERFMOD_SITE_PARAMS, 1,
                            c->layer_param_bytes, 1);
}

static struct perfmod_plugin plugin = {
  .name = "dp",
  .version = PACKAGE_VERSION,
  .description = "data parallelism: gradient all-reduce, ZeRO-1/2/3 sharding",
  .kind = PERFMOD_PLUGIN_PARALLELISM,
  .dimension = "dp",
  .init = dp_init,
  .explain = dp_explain,
  .plan = dp_plan,
  .config_keys = dp_keys,
  .config = dp_config,
};

PERFMOD_REGISTER_PLUGIN (plugin)
