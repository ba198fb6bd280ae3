/* explain.c: --explain: each strategy dimension's closed-form roofline, from its parallelism plugin. */
#include <config.h>

#include <string.h>

#include "internal.h"

/* Megatron's placement: tp innermost, then ep, then pp, dp outermost.  A
 * group whose members lie further apart than one node uses the NICs. */
static bool
spans_nodes (int64_t stride, int degree, int gpus_per_node)
{
  return stride * degree > gpus_per_node;
}

void
parallel_case_init (struct perfmod_parallel_case *c, int degree, const struct model_cfg *m,
                    const struct strategy *s, const struct perfmod_gpu *gpu, int dtype,
                    int64_t batch, int64_t seq)
{
  memset (c, 0, sizeof *c);
  c->struct_size = sizeof *c;
  c->degree = degree;
  c->tokens = (double) batch * (double) seq;
  c->hidden = (double) m->hidden;
  /* a routed expert's width where it differs from the dense layers' */
  c->ffn = (double) (m->experts > 0 && m->moe_ffn > 0 ? m->moe_ffn : m->ffn);
  c->layers = (double) m->layers;
  c->experts = (double) m->experts;
  c->experts_per_token = m->experts ? (double) m->top_k : 1;
  c->stages = s->pp;
  c->microbatches = (double) batch / ((double) s->dp * s->mbs);
  c->chip_flops = perfmod_gpu_peak_flops (gpu, dtype);
}

int
explain_strategy (struct plugin_set *set, const struct strategy *s, const struct model_cfg *m,
                  const struct perfmod_gpu *gpu, int64_t batch, int64_t seq, int dtype,
                  int gpus_per_node, FILE *out)
{
  static const char *const dims[] = { "tp", "ep", "pp", "dp" };
  int degrees[] = { s->tp, s->ep, s->pp, s->dp };
  int64_t strides[] = { 1, s->tp, (int64_t) s->tp * s->ep, (int64_t) s->tp * s->pp };
  int shown = 0;

  fprintf (out, "\nexplain: the seeds' closed forms per layer (C = %.4g TFLOP/s %s per chip)\n",
           perfmod_gpu_peak_flops (gpu, dtype) / 1e12, dtype_name (dtype));
  fprintf (out, "%-4s %6s %-11s %12s %12s %-8s %s\n", "dim", "degree", "link", "t_math_ms",
           "t_comms_ms", "bound", "stays compute-bound while");
  for (int i = 0; i < 4; i++) {
    struct perfmod_parallel_case c;
    struct perfmod_roofline r;
    struct plugin *pl;
    bool inter;

    if (degrees[i] <= 1)
      continue;
    shown++;
    pl = plugins_find (set, dims[i], PERFMOD_PLUGIN_PARALLELISM);
    if (pl == NULL) {
      pm_error ("no parallelism plugin for '%s' is installed", dims[i]);
      return -1;
    }
    inter = spans_nodes (strides[i], degrees[i], gpus_per_node);
    parallel_case_init (&c, degrees[i], m, s, gpu, dtype, batch, seq);
    c.link_bytes_per_s = (inter ? gpu->nic_gbps : gpu->link_gbps) * 1e9;
    c.link_name = inter ? "inter-node" : "intra-node";
    memset (&r, 0, sizeof r);
    r.struct_size = sizeof r;
    if (c.link_bytes_per_s <= 0) {
      pm_error ("GPU %s has no %s bandwidth in gpus.d", gpu->name, c.link_name);
      return -1;
    }
    pm_current_plugin = pl->p.name;
    pm_plugin_errmsg[0] = '\0';
    int rc = pl->p.explain (pl->state, &c, &r);
    pm_current_plugin = NULL;
    if (rc < 0) {
      pm_error ("%s: explain failed: %s", pl->p.name, pm_plugin_errmsg);
      return -1;
    }
    fprintf (out, "%-4s %6d %-11s %12.4f %12.4f %-8s %s\n", dims[i], degrees[i], c.link_name,
             r.t_math * 1e3, r.t_comms * 1e3, r.t_math >= r.t_comms ? "compute" : "comms",
             r.condition);
  }
  if (shown == 0)
    fprintf (out, "(one device: no parallel dimension to explain)\n");
  return 0;
}
