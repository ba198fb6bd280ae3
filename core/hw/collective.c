/* collective.c: collectives under an alpha-beta model over two fabric levels (the GPUs of a node, the network between nodes). */
#include <config.h>

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "internal.h"

static const char *const coll_names[] = { "?", "allreduce", "reduce_scatter", "allgather",
                                          "alltoall", "sendrecv" };

const char *
collective_name (int coll)
{
  return coll >= PERFMOD_COLL_ALLREDUCE && coll <= PERFMOD_COLL_SENDRECV ? coll_names[coll] : "?";
}

/* One level of the fabric: effective bandwidth (bytes/s) and per-step latency (s). */
struct level {
  double bw, lat;
};

static struct level
intra_level (const struct perfmod_gpu *gpu)
{
  struct level l;
  l.bw = gpu->link_gbps * 1e9 * (gpu->link_efficiency > 0 ? gpu->link_efficiency : 1);
  l.lat = gpu->link_latency_us * 1e-6;
  return l;
}

static struct level
inter_level (const struct perfmod_gpu *gpu)
{
  struct level l;
  double over = gpu->oversubscription >= 1 ? gpu->oversubscription : 1;
  l.bw = gpu->nic_gbps * 1e9 * (gpu->nic_efficiency > 0 ? gpu->nic_efficiency : 1) / over;
  l.lat = gpu->nic_latency_us * 1e-6;
  return l;
}

/* Ring reduce-scatter or all-gather of a `bytes` buffer over n ranks:
 * n-1 steps, each moving a 1/n share. */
static double
ring_half (double bytes, double n, struct level l)
{
  return n <= 1 ? 0 : (n - 1) / n * bytes / l.bw + (n - 1) * l.lat;
}

/* All-reduce on one level: the ring (a reduce-scatter and an all-gather)
 * or the tree (reduce up and broadcast down a pipelined binary tree:
 * twice the buffer through each link, 2 log2 n latency steps), whichever
 * is faster, as NCCL's tuner picks. */
static double
allreduce_level (double bytes, double n, struct level l, int algo)
{
  double ring = 2 * ring_half (bytes, n, l);
  double tree = n <= 1 ? 0 : 2 * bytes / l.bw + 2 * ceil (log2 (n)) * l.lat;
  if (algo == COLL_ALGO_RING)
    return ring;
  if (algo == COLL_ALGO_TREE)
    return tree;
  return ring < tree ? ring : tree;
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

double
collective_seconds (int coll, double bytes, int size, int64_t stride, int gpus_per_node,
                    const struct perfmod_gpu *gpu, int algo)
{
  struct level in = intra_level (gpu), out = inter_level (gpu);
  int q, nodes;
  double n = size;

  if (size <= 1 || bytes <= 0)
    return 0;
  group_layout (size, stride, gpus_per_node, &q, &nodes);
  switch (coll) {
  case PERFMOD_COLL_ALLREDUCE:
    if (nodes == 1)
      return allreduce_level (bytes, n, in, algo);
    if (q == 1)
      return allreduce_level (bytes, n, out, algo);
    /* hierarchical: reduce-scatter in the node, all-reduce of each GPU's
     * share across nodes on its own NIC, all-gather in the node */
    return 2 * ring_half (bytes, q, in) + allreduce_level (bytes / q, nodes, out, algo);
  case PERFMOD_COLL_REDUCE_SCATTER:
  case PERFMOD_COLL_ALLGATHER:
    if (nodes == 1)
      return ring_half (bytes, n, in);
    if (q == 1)
      return ring_half (bytes, n, out);
    return ring_half (bytes, q, in) + ring_half (bytes / q, nodes, out);
  case PERFMOD_COLL_ALLTOALL: {
    /* each rank sends (n-1)/n of its buffer: to the q-1 peers in its node
     * over the links, to the others over its NIC, both at once */
    double t_in = (q - 1) / n * bytes / in.bw;
    double t_out = nodes > 1 ? (n - q) / n * bytes / out.bw : 0;
    return (t_in > t_out ? t_in : t_out) + (q - 1) * in.lat + (nodes - 1) * out.lat;
  }
  case PERFMOD_COLL_SENDRECV: {
    /* to the next rank at `stride`: in the node while the group's
     * members share one */
    struct level l = stride < gpus_per_node ? in : out;
    return bytes / l.bw + l.lat;
  }
  default:
    return 0;
  }
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
  double t = collective_seconds (coll, bytes, size, stride, gpus_per_node, gpu, COLL_ALGO_AUTO);
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
