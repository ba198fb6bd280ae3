/* linreg-model.h: linreg's per-dtype groups on the modern tables, shared by perfmod train and the plugin. */
#ifndef PERFMOD_LINREG_MODEL_H
#define PERFMOD_LINREG_MODEL_H

#include "perfmod-plugin.h"
#include "physics.h"
#include "tc-model.h"

/* The groups are tile-mlp's tensor-core groups (tc-model.h): the same
 * kernels, fitted by a line instead of a network. */
#define LR_GEMM TC_GEMM
#define LR_ATTENTION TC_ATTENTION
#define LR_VECTOR TC_VECTOR
#define LR_COMM TC_COMM
#define LR_DEEPEP TC_DEEPEP
#define LR_NGROUPS TC_NGROUPS
#define lr_group_keys tc_group_keys
#define lr_group_of tc_group_of

/* The work a fit's slope multiplies. */
static inline double
lr_work (const struct perfmod_kernel *k, const struct phys_cost *c)
{
  if (k->kclass == PERFMOD_KERNEL_COMM)
    return c->comm_bytes;
  return c->flops > 0 && k->kclass != PERFMOD_KERNEL_ELEMENTWISE &&
         k->kclass != PERFMOD_KERNEL_SOFTMAX && k->kclass != PERFMOD_KERNEL_LAYERNORM &&
         k->kclass != PERFMOD_KERNEL_MEMORY ? c->flops : c->bytes;
}

/* What a GPU without a fit is scaled by: the dtype's peak, the bandwidth,
 * or the link. */
static inline double
lr_scale (int grp, int dtype, const struct perfmod_gpu *g)
{
  if (grp == LR_GEMM || grp == LR_ATTENTION)
    return perfmod_gpu_peak_flops (g, dtype) / 1e12;
  return grp == LR_COMM || grp == LR_DEEPEP ? g->link_gbps : g->mem_bw_gbps;
}

#endif /* PERFMOD_LINREG_MODEL_H */
