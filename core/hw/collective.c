/* collective.c: a strategy group's collectives under NCCL's cost model (physics.h), and a serving engine's own all-reduce. */
#include <config.h>

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "internal.h"
#include "physics.h"

static const char *const coll_names[] = { "?", "allreduce", "reduce_scatter", "allgather",
                                          "alltoall", "sendrecv", "deepep" };

const char *
collective_name (int coll)
{
  return coll >= PERFMOD_COLL_ALLREDUCE && coll <= PERFMOD_COLL_DEEPEP ? coll_names[coll] : "?";
}

const char *
collective_nccl_name (int coll)
{
  static const char *const names[] = { NULL, "all_reduce", "reduce_scatter", "all_gather",
                                       "alltoall", "send_recv" };
  return coll >= PERFMOD_COLL_ALLREDUCE && coll <= PERFMOD_COLL_SENDRECV ? names[coll] : NULL;
}

void
group_layout (int size, int64_t stride, int gpus_per_node, int *per_node, int *nodes)
{
  int q = 1;
  if (gpus_per_node < 1)
    gpus_per_node = 1;
  if (stride < gpus_per_node) {
    int64_t fit = gpus_per_node / (stride > 0 ? stride : 1);
    q = (int) (fit < size ? fit : size);
  }
  if (q < 1)
    q = 1;
  *per_node = q;
  *nodes = (size + q - 1) / q;
}

/* NCCL's cost model (physics.h, phys_nccl_time) over the group's layout:
 * its members per node decide which steps cross the network and how many
 * NICs carry them.  A GPU without the link bandwidth a collective needs
 * cannot run it: infinite time. */
double
collective_seconds (int coll, double bytes, int size, int64_t stride, int gpus_per_node,
                    const struct perfmod_gpu *gpu)
{
  struct phys_nccl r;
  int q, nodes;

  if (size <= 1 || bytes <= 0 || coll < PERFMOD_COLL_ALLREDUCE || coll > PERFMOD_COLL_SENDRECV)
    return 0;
  group_layout (size, stride, gpus_per_node, &q, &nodes);
  if (coll == PERFMOD_COLL_SENDRECV) {   /* one pair: the next rank, `stride` away */
    size = 2;
    q = stride < gpus_per_node ? 2 : 1;
  }
  if (phys_nccl_time (collective_nccl_name (coll), bytes, size, q, gpu, &r) < 0)
    return HUGE_VAL;
  return r.seconds;
}

/* DeepEP's kernel k (physics.h, phys_deepep_time) over a group of size
 * ranks, `stride` apart: its members per node decide what crosses the
 * network.  Infinite where the GPU lacks the links it needs. */
double
group_deepep_seconds (const struct perfmod_kernel *k, int size, int64_t stride,
                      int gpus_per_node, const struct perfmod_gpu *gpu)
{
  struct perfmod_kernel kk = *k;
  struct phys_deepep r;
  int q, nodes;
  if (size <= 1 || k->m < 1)
    return 0;
  group_layout (size, stride, gpus_per_node, &q, &nodes);
  kk.ranks = size;
  if (phys_deepep_time (&kk, gpu, q, &r) < 0)
    return HUGE_VAL;
  return r.seconds;
}

double
engine_allreduce_seconds (double bytes, int size, const struct perfmod_gpu *gpu)
{
  const struct perfmod_engine_allreduce *a;
  int idx = size == 2 ? 0 : size == 4 ? 1 : size == 8 ? 2 : -1;

  if (idx < 0 || bytes <= 0
      || gpu->struct_size < offsetof (struct perfmod_gpu, engine_ar) + sizeof gpu->engine_ar)
    return -1;
  a = &gpu->engine_ar[idx];
  if (a->oneshot_gbps <= 0 || a->twoshot_gbps <= 0)
    return -1;
  if (bytes < a->twoshot_bytes)
    return a->oneshot_us * 1e-6 + bytes / (a->oneshot_gbps * 1e9);
  return a->twoshot_us * 1e-6 + bytes / (a->twoshot_gbps * 1e9);
}

double
group_collective_seconds (int coll, double bytes, int dim, int size, int64_t stride,
                          int gpus_per_node, bool engine, const struct perfmod_gpu *gpu)
{
  double t = collective_seconds (coll, bytes, size, stride, gpus_per_node, gpu);
  int q, nodes;

  if (!engine || coll != PERFMOD_COLL_ALLREDUCE || dim != DIM_TP || size <= 1 || bytes <= 0)
    return t;
  group_layout (size, stride, gpus_per_node, &q, &nodes);
  if (nodes == 1) {
    double e = engine_allreduce_seconds (bytes, size, gpu);
    if (e >= 0 && e < t)
      t = e;
  }
  return t;
}

const char *
dim_name (int dim)
{
  static const char *const names[NDIMS] = { "run", "tp", "ep", "pp", "dp", "cp" };
  return dim >= 0 && dim < NDIMS ? names[dim] : "?";
}
