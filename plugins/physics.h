/* physics.h: a kernel's work and bytes in physical units, and the floors no prediction may go under. */
#ifndef PERFMOD_PHYSICS_H
#define PERFMOD_PHYSICS_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "perfmod-plugin.h"

/* Fields of struct perfmod_kernel a core older than the plugin lacks read
 * as 0. */
#define PHYS_HAS(k, field) \
  ((k)->struct_size >= offsetof (struct perfmod_kernel, field) + sizeof (k)->field)
/* The same for struct perfmod_gpu. */
#define PHYS_HAS_GPU(g, field) \
  ((g)->struct_size >= offsetof (struct perfmod_gpu, field) + sizeof (g)->field)

struct phys_cost {
  double flops;        /* arithmetic, FLOPs */
  double bytes;        /* DRAM traffic if nothing stays on chip, bytes */
  double peak;         /* FLOP/s of the units that run it */
  double bw;           /* bytes/s: memory, or for collectives the link */
  double comm_bytes;   /* collectives: bytes each rank sends over its link */
};

/* Query-key pairs one head computes: every key for every query, less the
 * masked future of a causal prefill, less what a sliding window drops. */
static inline double
phys_attention_pairs (const struct perfmod_kernel *k)
{
  double m = (double) k->m, n = (double) k->n, w = PHYS_HAS (k, window) ? (double) k->window : 0;
  double pairs = m * n;
  bool causal = PHYS_HAS (k, causal) && k->causal && m == n;
  if (causal)
    pairs = m * (m + 1) / 2;
  if (w > 0 && w < n)            /* causal: the first w queries see all before them */
    pairs = causal ? w * (w + 1) / 2 + (m - w) * w : fmin (pairs, m * w);
  return pairs;
}

/* A fused attention's backward (op "attention_bwd") recomputes the
 * scores and runs five products to the forward's two: 2.5 times the
 * forward's FLOPs, the count FlashAttention's own benchmarks use.  It also
 * runs slower per FLOP.  On an H100 SXM5, head width 128, no mask, the
 * FlashAttention-3 paper (Shah et al. 2024, figures 5 and 6) measures
 * cuDNN's kernels at 617, 609 and 600 TFLOP/s forward and 465, 499 and
 * 518 backward at 2k, 4k and 8k tokens, FlashAttention-2's at 362, 368,
 * 370 and 291, 310, 318: the backward takes 2.9 to 3.3 times the forward's
 * time.  Predictors that learned the forward from measurements take
 * PHYS_ATTN_BWD_TIME times it; the roofline counts the work. */
#define PHYS_ATTN_BWD_WORK 2.5
#define PHYS_ATTN_BWD_TIME 3.0

static inline bool
phys_attention_bwd (const struct perfmod_kernel *k)
{
  return k->kclass == PERFMOD_KERNEL_ATTENTION && k->op && strcmp (k->op, "attention_bwd") == 0;
}

/* The collectives a COMM kernel names, in the order tile-mlp's network
 * reads them (tc-model.h) and perfmod kernel --coll lists them. */
static const char *const phys_comm_ops[] = { "all_reduce", "all_gather", "reduce_scatter",
                                             "alltoall", "send_recv" };
#define PHYS_COMM_NOPS 5

/* A GPU's bus bandwidth (bytes/s) within a node: the link at
 * link_efficiency; and across nodes, one NIC at nic_efficiency over the
 * network's oversubscription. */
static inline double
phys_link_bw (const struct perfmod_gpu *g)
{
  return g->link_gbps * 1e9 * (g->link_efficiency > 0 ? g->link_efficiency : 1);
}

static inline double
phys_nic_bw (const struct perfmod_gpu *g)
{
  return g->nic_gbps * 1e9 * (g->nic_efficiency > 0 ? g->nic_efficiency : 1)
         / (g->oversubscription >= 1 ? g->oversubscription : 1);
}

/* The ranks of a group of n that share a node: as many as fill one of
 * gpus_per_node (all of them where gpus.d does not say). */
static inline double
phys_node_ranks (const struct perfmod_gpu *g, double n)
{
  return g->gpus_per_node > 0 ? fmin (n, g->gpus_per_node) : n;
}

/* Of two shares sent side by side, a over bw_a and b over bw_b (0: none),
 * the slower: its bytes and bandwidth. */
static inline void
phys_slower_share (double a, double bw_a, double b, double bw_b, double *bytes, double *bw)
{
  bool second = bw_b > 0 && b / bw_b > a / bw_a;
  *bytes = second ? b : a;
  *bw = second ? bw_b : bw_a;
}

/* Bytes each rank moves over its link for a collective on `bytes` over n
 * ranks (ring algorithms: the bus bandwidth convention of nccl-tests). */
static inline double
phys_comm_bytes (const char *op, double bytes, double n)
{
  if (n < 2)
    return 0;
  if (op && strcmp (op, "all_reduce") == 0)
    return 2 * (n - 1) / n * bytes;
  if (op && (strcmp (op, "send_recv") == 0 || strcmp (op, "p2p") == 0))
    return bytes;
  return (n - 1) / n * bytes;     /* all_gather, reduce_scatter, alltoall */
}

/* NCCL's cost model (src/graph/tuning.cc, NCCL 2.19-2.23): each
 * algorithm and protocol costs a latency plus bytes over a bandwidth, and
 * NCCL runs the cheapest.  Latencies in microseconds: a base per protocol
 * (LL, LL128, Simple) plus one hardware latency per step of the
 * algorithm, per link (NVLink, PCIe, network); NVLS (NVLink SHARP) pays
 * its switch round trip once. */
enum phys_nccl_proto { PHYS_NCCL_LL, PHYS_NCCL_LL128, PHYS_NCCL_SIMPLE, PHYS_NCCL_NPROTO };
enum phys_nccl_algo { PHYS_NCCL_RING, PHYS_NCCL_TREE, PHYS_NCCL_NVLS, PHYS_NCCL_P2P,
                      PHYS_NCCL_NVLS_TREE };
static const double phys_nccl_base_us[2][PHYS_NCCL_NPROTO] = {
  { 6.6, 14.0, 8.4 },          /* ring (and the point-to-point steps of an all-to-all) */
  { 6.8, 14.0, 8.4 },          /* tree */
};
static const double phys_nccl_hw_us[3][2][PHYS_NCCL_NPROTO] = {
  { { 0.6, 1.9, 3.4 }, { 0.6, 1.25, 4.0 } },   /* NVLink: ring, tree */
  { { 1.0, 2.5, 5.7 }, { 1.0, 1.9, 4.0 } },    /* PCIe */
  { { 2.7, 4.0, 14.0 }, { 5.0, 8.5, 14.0 } },  /* network */
};
#define PHYS_NCCL_NVLS_US 25.0
/* NCCL (2.19-2.26) runs NVLS_TREE across servers, not across a
 * multi-node NVLink domain (MNNVL: its tuning turns it off): a GPU whose
 * domain (gpus_per_node) is more than a server's NVSwitch joins (an NVL72
 * rack) has none, however few of a group's ranks share one. */
#define PHYS_NVLS_TREE_MAX_PPN 8
/* Bus bandwidth kept by a protocol: LL sends a flag with every 8 bytes
 * and NCCL counts a quarter of the link for an all-reduce or across
 * nodes (a third otherwise), LL128 0.92 (NCCL's figure for 120 of every
 * 128 bytes), Simple all; a tree reaches 0.9 of the ring's.  NVLS: the switch sums what the GPUs load
 * and copies what they store, so each GPU sends its buffer and receives
 * its 1/n share summed, then sends that share and receives the whole sum:
 * (1 + 1/n) of the buffer each way, at the link's bus bandwidth. */
#define PHYS_NCCL_LL128_SHARE 0.92
#define PHYS_NCCL_TREE_SHARE 0.9
/* The point-to-point path of an all-to-all uses LL for steps up to this
 * many bytes per peer (NCCL_P2P_LL_THRESHOLD). */
#define PHYS_NCCL_P2P_LL_BYTES 16384.0

struct phys_nccl {
  double seconds;   /* the cheapest algorithm and protocol's time */
  double latency;   /* of it, the latency (seconds) */
  int algo, proto;  /* enum phys_nccl_algo, phys_nccl_proto */
  int nodes;        /* nodes the ranks span */
};

/* The time of one algorithm and protocol: lat microseconds plus `moved`
 * bytes over bw bytes/s, kept in *best if cheaper. */
static inline void
phys_nccl_try (struct phys_nccl *best, int algo, int proto, double lat_us, double moved,
               double bw)
{
  double t = lat_us * 1e-6 + moved / bw;
  if (bw > 0 && (best->seconds <= 0 || t < best->seconds)) {
    best->seconds = t;
    best->latency = lat_us * 1e-6;
    best->algo = algo;
    best->proto = proto;
  }
}

/* One step of point-to-point sends (a send/recv, an all-to-all's sends to
 * every peer at once): `moved` bytes over bw, at most `peer` bytes to one
 * peer, on link kind hw (0 NVLink, 1 PCIe, 2 network); LL where the peer's
 * share is small, else Simple. */
static inline void
phys_nccl_step (struct phys_nccl *r, double moved, double peer, double bw, int hw)
{
  for (int p = PHYS_NCCL_LL; p < PHYS_NCCL_NPROTO; p += 2)
    if (p == PHYS_NCCL_SIMPLE || peer <= PHYS_NCCL_P2P_LL_BYTES)
      phys_nccl_try (r, PHYS_NCCL_P2P, p, phys_nccl_base_us[0][p] + phys_nccl_hw_us[hw][0][p],
                     moved, p == PHYS_NCCL_LL ? bw / 3 : bw);
}

/* A collective (op as a COMM kernel names it) on `bytes` (the whole
 * buffer: nccl-tests' size) over n ranks of gpu, ppn of them in each node
 * (0: as many as fill a node of gpus_per_node), as NCCL runs it: the bus
 * bandwidth is the link's times link_efficiency within a node; what
 * crosses a node's boundary goes through its ppn NICs.  Returns -1 where
 * the GPU has no link bandwidth. */
static inline int
phys_nccl_time (const char *op, double bytes, double n, double ppn, const struct perfmod_gpu *g,
                struct phys_nccl *r)
{
  bool nvlink = PHYS_HAS_GPU (g, nvlink) && g->nvlink, nvls = PHYS_HAS_GPU (g, nvls) && g->nvls;
  double nodes, link = phys_link_bw (g), bus = link, nic = phys_nic_bw (g);
  int hw = nvlink ? 0 : 1;
  bool allreduce = op && strcmp (op, "all_reduce") == 0;
  bool a2a = op && strcmp (op, "alltoall") == 0;
  bool p2p = op && (strcmp (op, "send_recv") == 0 || strcmp (op, "p2p") == 0);
  memset (r, 0, sizeof *r);
  if (!(ppn > 0))
    ppn = phys_node_ranks (g, n);
  ppn = fmax (1, fmin (ppn, n));
  nodes = ceil (n / ppn);
  r->nodes = (int) nodes;
  if (!(g->link_gbps > 0) || n < 2 || !(bytes > 0))
    return n < 2 || !(bytes > 0) ? 0 : -1;
  if (nodes > 1 && !(nic > 0))
    return -1;
  if (p2p) {             /* to one peer: over the link, or its one NIC on another node */
    phys_nccl_step (r, bytes, bytes, nodes > 1 ? fmin (link, nic) : link, nodes > 1 ? 2 : hw);
    return 0;
  }
  if (nodes > 1)         /* a ring crosses each node boundary on every NIC of the node */
    bus = fmin (bus, ppn * nic);
  if (a2a) {
    /* every peer at once: (ppn-1)/n of the buffer over the links and
     * (n-ppn)/n over the GPU's own NIC, side by side (the slower's time) */
    double moved, bw;
    phys_slower_share ((ppn - 1) / n * bytes, link, (n - ppn) / n * bytes, nic, &moved, &bw);
    phys_nccl_step (r, moved, bytes / n, bw, nodes > 1 ? 2 : hw);
    return 0;
  }
  for (int p = 0; p < PHYS_NCCL_NPROTO; p++) {
    double steps = allreduce ? 2 * (n - 1) : n - 1;
    double inter = allreduce ? 2 * (nodes - 1) : nodes - 1, bw = bus, lat;
    /* LL's steps inside a node wait 1.8 times longer once the ranks span
     * nodes (NCCL's tuning) */
    double intra_ll = nodes > 1 && p == PHYS_NCCL_LL ? 1.8 : 1;
    if (p == PHYS_NCCL_LL128 && !nvlink)
      continue;          /* NCCL enables LL128 on NVLink alone */
    if (p == PHYS_NCCL_LL)
      bw = bus * (allreduce || nodes > 1 ? 0.25 : 1.0 / 3);
    else if (p == PHYS_NCCL_LL128)
      bw = bus * PHYS_NCCL_LL128_SHARE;
    lat = phys_nccl_base_us[0][p] + (steps - inter) * phys_nccl_hw_us[hw][0][p] * intra_ll
          + inter * phys_nccl_hw_us[2][0][p];
    phys_nccl_try (r, PHYS_NCCL_RING, p, lat, steps / n * bytes, bw);
    if (allreduce && nodes > 1) {    /* the tree: up and down ppn-1 links and log2 nodes hops */
      double tbw = bus * PHYS_NCCL_TREE_SHARE * (p == PHYS_NCCL_LL ? 1 / 3.8
                                                 : p == PHYS_NCCL_LL128 ? 0.915 : 1);
      lat = phys_nccl_base_us[1][p] + 2 * ((ppn - 1) * phys_nccl_hw_us[hw][1][p] * intra_ll
                                           + ceil (log2 (nodes)) * phys_nccl_hw_us[2][1][p]);
      /* two nodes: each node's NICs carry the buffer once each way (the
       * tree is one edge); beyond, twice (NCCL's tuning halves the tree's
       * inter-node bandwidth there) */
      phys_nccl_try (r, PHYS_NCCL_TREE, p, lat, (nodes > 2 ? 2 : 1) * bytes, tbw);
    }
  }
  if (allreduce && nvls && nodes == 1)
    phys_nccl_try (r, PHYS_NCCL_NVLS, PHYS_NCCL_SIMPLE, PHYS_NCCL_NVLS_US, (1 + 1 / n) * bytes,
                   bus);
  if (allreduce && nvls && nodes > 1 && ppn >= 2
      && !(g->gpus_per_node > PHYS_NVLS_TREE_MAX_PPN)) {
    /* NVLS_TREE (NCCL 2.18 on): each node sums its ranks' buffers in the
     * switch (NVLS over ppn ranks, each GPU then holding 1/ppn of the
     * node's sum), a tree across the nodes carries each share over its
     * GPU's NIC, and the switch copies the total back; the two halves
     * pipeline, so the slower sets the pace.  Across the nodes every NIC
     * moves its share of the buffer each way, twice beyond two nodes (NCCL's
     * tuning halves bwInter there); latency the switch's round trip and
     * the tree's network hops up and down.  One rank a node has no switch
     * to sum in: the tree alone. */
    double intra = link / (1 + 1 / ppn), inter = ppn * nic / (nodes > 2 ? 2 : 1);
    double lat = PHYS_NCCL_NVLS_US
                 + 2 * ceil (log2 (nodes)) * phys_nccl_hw_us[2][1][PHYS_NCCL_SIMPLE];
    phys_nccl_try (r, PHYS_NCCL_NVLS_TREE, PHYS_NCCL_SIMPLE, lat, bytes, fmin (intra, inter));
  }
  return 0;
}

/* DeepEP's expert-parallel dispatch and combine (deepseek-ai/DeepEP),
 * as COMM kernels: op "deepep_normal_dispatch", "deepep_normal_combine",
 * "deepep_ll_dispatch" or "deepep_ll_combine"; m tokens on each rank, k
 * the hidden width, top_k experts per token among h, ranks the
 * expert-parallel group, b the SMs the normal kernels run on (0: as many
 * as they need).  They send their dtype: SGLang's dispatch fp8 with a
 * float scale per 128 values, its combine bf16; Megatron-Core's both bf16.
 * The normal kernels send a token once to each rank holding one of
 * its experts, and once to each other node (forwarded over NVLink there);
 * the low-latency kernels send a copy per expert.  Each SM a normal
 * kernel runs on pushes about PHYS_DEEPEP_SM_BYTES_CLOCK bytes a clock
 * (an H100 measurement: aiconfigurator's DeepEP table moves 14-15 GB/s
 * per SM at 4 to 16 SMs, link-bound beyond), so few SMs cap the
 * bandwidth below the link's. */
#define PHYS_DEEPEP_SM_BYTES_CLOCK 7.5
/* The kernels' fixed costs on one node by [ll][combine], read off the same
 * H100 table at 1 to 4 tokens (normal 25-27 us dispatch, 39 us combine at
 * every SM count; low-latency 12 us each; GB200's are 34, 41 and 15). */
static const double phys_deepep_latency_s[2][2] = { { 26e-6, 39e-6 }, { 12e-6, 12e-6 } };
/* The SMs Megatron-Core's flex dispatcher and DeepEP's Buffer give the
 * normal kernels by default (num_sms). */
#define PHYS_DEEPEP_SMS 20

/* The bytes DeepEP's normal kernels register on each of `ranks` ranks, as
 * Megatron-Core's flex dispatcher asks for them (fused_a2a.get_buffer:
 * DeepEP's Config size hints for the rank count, 20 SMs, hidden_bytes the
 * width at 2 bytes): per channel (SMs / 2) and NVLink peer (8 at most) a
 * ring of received tokens (256 for one node, 288 to 64 ranks, 480 to 96,
 * 560 to 128, 720 beyond), each the hidden state and up to 128 top-k indices (int64),
 * weights and scales (float), 8 bytes of source metadata; across nodes
 * as much again per node for RDMA (128 tokens, twice); DeepEP's 32 MiB
 * workspace. */
static inline double
phys_deepep_buffer_bytes (int ranks, double hidden_bytes)
{
  double ch = PHYS_DEEPEP_SMS / 2, nvl = ranks < 8 ? ranks : 8, rdma = ranks / 8 > 1 ? ranks / 8 : 1;
  double recv = ranks <= 8 ? 256 : ranks <= 64 ? 288 : ranks <= 96 ? 480 : ranks <= 128 ? 560
                : 720;
  double tok = hidden_bytes + 8 + 128 * 8 + 128 * 4 + 128 * 4;
  double bytes = ch * nvl * ((2 * rdma + 3) * 4 + recv * tok);
  if (ranks > 8)
    bytes += ch * rdma * ((8 * 2 + 2) * 2 * 4 + 128 * 2 * (tok + 16));
  return bytes + 32.0 * 1048576;
}

/* DeepEP's four kernels by [ll][combine]. */
static const char *const phys_deepep_ops[2][2] = {
  { "deepep_normal_dispatch", "deepep_normal_combine" },
  { "deepep_ll_dispatch", "deepep_ll_combine" },
};

/* Whether op names one of DeepEP's kernels, and which (ll, combine may be
 * NULL). */
static inline bool
phys_deepep_op (const char *op, bool *ll, bool *combine)
{
  for (int i = 0; op && i < 4; i++)
    if (strcmp (op, phys_deepep_ops[i / 2][i % 2]) == 0) {
      if (ll)
        *ll = i / 2;
      if (combine)
        *combine = i % 2;
      return true;
    }
  return false;
}

/* The chance that a token's top_k of `experts` experts (spread evenly, a
 * balanced router) include one of the `held` a destination holds. */
static inline double
phys_deepep_reach (double experts, double held, double topk)
{
  double none = 1;
  for (int i = 0; i < (int) topk && i < 1024; i++)
    none *= fmax (0, (experts - held - i) / (experts - i));
  return 1 - none;
}

/* The other nodes of `nodes` a token's top_k experts reach.  Balanced:
 * each with the chance its experts are among them.  Group-limited
 * (DeepSeek-V3: the experts in G groups, a token's in g of them, groups
 * whole on a node, G / nodes a node): each node, its own as any other,
 * holds one of the token's groups with chance 1 - C(G - G/nodes, g) /
 * C(G, g), s of them on average when it does, and is reached when one of
 * the top_k among the g groups' experts falls in those s groups.  Where the
 * nodes do not divide the groups (a group split across nodes), the
 * balanced count. */
static inline double
phys_deepep_nodes (const struct perfmod_kernel *k, double experts, double nodes, double topk)
{
  double G = PHYS_HAS (k, route_group_topk) ? k->route_groups : 0;
  double g = PHYS_HAS (k, route_group_topk) ? k->route_group_topk : 0;
  double per_node, picked, s;
  if (nodes < 2)
    return 0;
  if (!(G >= 2 && g >= 1 && g < G && fmod (G, nodes) == 0 && fmod (experts, G) == 0))
    return (nodes - 1) * phys_deepep_reach (experts, experts / nodes, topk);
  per_node = G / nodes;
  picked = phys_deepep_reach (G, per_node, g);       /* the node holds a chosen group */
  s = g * per_node / G / picked;                     /* its chosen groups when it does */
  return (nodes - 1) * picked * phys_deepep_reach (g * experts / G, s * experts / G, topk);
}

struct phys_deepep {
  double link_bytes, nic_bytes;  /* each rank sends, over NVLink and over its NIC */
  double bw;                     /* bytes/s the link part reaches (the SMs may cap it) */
  double seconds;                /* the mechanism's time */
  int nodes;
};

/* DeepEP's kernel k over its ranks, ppn of them in each node (0: as many
 * as fill a node of gpus_per_node), as phys_nccl_time takes them; -1 for
 * a kernel that is not DeepEP's or lacks what its cost needs. */
static inline int
phys_deepep_time (const struct perfmod_kernel *k, const struct perfmod_gpu *g, double ppn,
                  struct phys_deepep *r)
{
  bool ll = false, combine = false;
  double n = PHYS_HAS (k, ranks) ? (double) k->ranks : 0, tok = (double) k->m;
  double hid = (double) k->k, topk = PHYS_HAS (k, top_k) ? (double) k->top_k : 0;
  double experts = (double) k->h, elem, link, nic, sms;
  memset (r, 0, sizeof *r);
  if (!phys_deepep_op (k->op, &ll, &combine) || n < 2 || !(tok > 0) || !(hid > 0) ||
      !(topk >= 1) || !(experts >= topk) || !(g->link_gbps > 0))
    return -1;
  elem = k->dtype == PERFMOD_DTYPE_FP8 ? 1 + 4.0 / 128     /* a float scale per 128 values */
         : k->elem_bytes > 0 ? k->elem_bytes : 2;
  if (!(ppn > 0))
    ppn = phys_node_ranks (g, n);
  ppn = fmax (1, fmin (ppn, n));
  r->nodes = (int) ceil (n / ppn);
  link = phys_link_bw (g);
  nic = phys_nic_bw (g);
  if (r->nodes > 1 && !(nic > 0))
    return -1;
  if (ll) {                  /* a copy per expert on another rank */
    r->link_bytes = tok * topk * (ppn - 1) / n * hid * elem;
    r->nic_bytes = tok * topk * (n - ppn) / n * hid * elem;
  }
  else {                     /* once per rank in the node, once per other node */
    double held = experts / n;
    r->link_bytes = tok * (ppn - 1) * phys_deepep_reach (experts, held, topk) * hid * elem;
    r->nic_bytes = tok * phys_deepep_nodes (k, experts, r->nodes, topk) * hid * elem;
  }
  r->bw = link;
  sms = (double) k->b;
  if (!ll && sms > 0 && g->clock_mhz > 0)
    r->bw = fmin (link, sms * PHYS_DEEPEP_SM_BYTES_CLOCK * g->clock_mhz * 1e6);
  r->seconds = phys_deepep_latency_s[ll][combine] + fmax (r->link_bytes / r->bw,
                                             nic > 0 ? r->nic_bytes / nic : 0);
  return 0;
}

/* A MOE kernel's experts per token (1 where a core older than it says none). */
static inline double
phys_moe_topk (const struct perfmod_kernel *k)
{
  return PHYS_HAS (k, top_k) && k->top_k > 0 ? (double) k->top_k : 1;
}

/* A MOE kernel's routed work on its rank: *assign the token-expert
 * assignments it computes (its even share, m top_k h / b, times
 * expert_load: the busiest rank's), *reached the experts they fall on
 * (spread over as many of its h experts as they can, as a balanced
 * router spreads them, or experts_reached where a skewed routing reaches
 * fewer), *per_expert the tokens each of those computes. */
static inline void
phys_moe_work (const struct perfmod_kernel *k, double *assign, double *reached,
               double *per_expert)
{
  double load = PHYS_HAS (k, expert_load) && k->expert_load > 1 ? k->expert_load : 1;
  double topk = phys_moe_topk (k);
  double local = k->h > 0 ? (double) k->h : 1, all = k->b > 0 ? (double) k->b : local;
  *assign = (double) k->m * topk * local / all * load;
  *reached = fmax (1, fmin (local, ceil (*assign - 1e-9)));
  if (PHYS_HAS (k, experts_reached) && k->experts_reached > 0)
    *reached = fmax (1, fmin (*reached, k->experts_reached));
  *per_expert = *assign / *reached;
}

/* Bytes per expert weight of a MOE kernel: its weight-only format's
 * where it has one (MXFP4), else its dtype's. */
static inline double
phys_moe_weight_bytes (const struct perfmod_kernel *k)
{
  if (PHYS_HAS (k, weight_bytes) && k->weight_bytes > 0)
    return k->weight_bytes;
  return k->elem_bytes > 0 ? k->elem_bytes : 4;
}

/* Widths of a MOE kernel's first grouped GEMM's output per expert (gate
 * and up side by side, or up alone). */
static inline double
phys_moe_fc1 (const struct perfmod_kernel *k)
{
  return (PHYS_HAS (k, gated) && k->gated ? 2.0 : 1.0) * (double) k->k;
}

/* The kernel's cost on gpu (NULL: its FLOPs and bytes alone, no peak or
 * bandwidth); -1 if its class has none. */
static inline int
phys_cost_of (const struct perfmod_kernel *k, const struct perfmod_gpu *gpu,
              struct phys_cost *c)
{
  double e = k->elem_bytes > 0 ? k->elem_bytes : 4;
  double eo = PHYS_HAS (k, out_elem_bytes) && k->out_elem_bytes > 0 ? k->out_elem_bytes : e;
  memset (c, 0, sizeof *c);
  if (gpu) {
    c->peak = perfmod_gpu_peak_flops (gpu, k->dtype);
    c->bw = gpu->mem_bw_gbps * 1e9;
  }
  switch (k->kclass) {
  case PERFMOD_KERNEL_LINEAR:
  case PERFMOD_KERNEL_BMM: {
    double b = k->kclass == PERFMOD_KERNEL_LINEAR ? 1 : (double) k->b;
    double m = (double) k->m, n = (double) k->n, kk = (double) k->k;
    double w = PHYS_HAS (k, weight_bytes) && k->weight_bytes > 0 ? k->weight_bytes : e;
    c->flops = 2 * b * m * n * kk;
    c->bytes = b * (m * n * e + n * kk * w + m * kk * eo);
    return 0;
  }
  case PERFMOD_KERNEL_ATTENTION: {
    double b = (double) k->b, h = (double) k->h, d = (double) k->k;
    double kvh = PHYS_HAS (k, kv_heads) && k->kv_heads > 0 ? (double) k->kv_heads : h;
    double kv = (double) k->n;
    if (PHYS_HAS (k, window) && k->window > 0 && k->window < k->n && k->m == 1)
      kv = (double) k->window;    /* a decode step reads only the window */
    double kvreads = PHYS_HAS (k, kv_shared) && k->kv_shared ? 1 : 2;  /* MLA's latent: once */
    c->flops = 4 * b * h * d * phys_attention_pairs (k);
    c->bytes = b * e * (2 * (double) k->m * h * d + kvreads * kv * kvh * d);
    if (phys_attention_bwd (k)) {  /* reads q, k, v, o, do; writes dq, dk, dv */
      c->flops *= PHYS_ATTN_BWD_WORK;
      c->bytes *= 2;
    }
    return 0;
  }
  case PERFMOD_KERNEL_ELEMENTWISE:
  case PERFMOD_KERNEL_SOFTMAX:
  case PERFMOD_KERNEL_LAYERNORM: {
    double mpo = PHYS_HAS (k, own_mem_per_output) && k->own_mem_per_output > 0
                 ? k->own_mem_per_output : k->mem_per_output;
    c->flops = (double) k->b * (double) k->h * k->ops_per_output;
    c->bytes = (double) k->b * (double) k->h * mpo;
    c->peak = gpu ? gpu->fp32_gflops * 1e9 : 0;   /* vector units */
    return 0;
  }
  case PERFMOD_KERNEL_MEMORY:
    c->bytes = k->bytes;
    return 0;
  case PERFMOD_KERNEL_MOE: {
    /* Each assignment runs fc1 (d to g f), the activation (g f to f) and
     * fc2 (f to d); the reached experts' weights are read once; the
     * activations (16-bit beside fp8 weights) are copied into expert
     * order, through both GEMMs and the activation, and summed back to
     * the tokens. */
    double a, r, te, d = (double) k->n, f = (double) k->k, g = phys_moe_fc1 (k);
    double topk = phys_moe_topk (k), ea = e < 2 ? 2 : e, w = phys_moe_weight_bytes (k);
    phys_moe_work (k, &a, &r, &te);
    c->flops = 2 * a * (g + f) * d;
    c->bytes = r * (g + f) * d * w + ea * a * (5 * d + 2 * g + 2 * f + d / topk);
    return 0;
  }
  case PERFMOD_KERNEL_COMM: {
    double n = PHYS_HAS (k, ranks) ? (double) k->ranks : 0;
    struct phys_deepep dp;
    if (gpu && phys_deepep_time (k, gpu, 0, &dp) == 0) {
      /* the slower of the link's share (at the link's full bandwidth: a
       * bound) and the NIC's */
      phys_slower_share (dp.link_bytes, gpu->link_gbps * 1e9, dp.nic_bytes, gpu->nic_gbps * 1e9,
                         &c->comm_bytes, &c->bw);
      return 0;
    }
    double gpn = gpu ? phys_node_ranks (gpu, n) : n;
    c->comm_bytes = phys_comm_bytes (k->op, k->bytes, n);
    c->bw = gpu ? gpu->link_gbps * 1e9 : 0;
    if (gpu && n > gpn && gpu->nic_gbps > 0) {
      /* ranks beyond a node (phys_nccl_time): an all-to-all sends (gpn-1)/n
       * of the buffer over the links and (n-gpn)/n over the GPU's own NIC
       * side by side; what else crosses the node's boundary goes through
       * its gpn NICs */
      double nic = gpu->nic_gbps * 1e9 / (gpu->oversubscription >= 1 ? gpu->oversubscription : 1);
      if (k->op && strcmp (k->op, "alltoall") == 0)
        phys_slower_share ((gpn - 1) / n * k->bytes, c->bw, (n - gpn) / n * k->bytes, nic,
                           &c->comm_bytes, &c->bw);
      else if (k->op && (strcmp (k->op, "send_recv") == 0 || strcmp (k->op, "p2p") == 0))
        c->bw = fmin (c->bw, nic);              /* one pair, one NIC */
      else
        c->bw = fmin (c->bw, gpn * nic);
      /* an all-reduce's tree (phys_nccl_time; NVLS_TREE's moves more within
       * the node): the slower of the buffer over the link and over the
       * node's NICs, twice beyond two nodes, where under the ring's */
      if (k->op && strcmp (k->op, "all_reduce") == 0) {
        double tb, tbw;
        phys_slower_share (k->bytes, gpu->link_gbps * 1e9, (n > 2 * gpn ? 2 : 1) * k->bytes,
                           gpn * nic, &tb, &tbw);
        if (tb / tbw < c->comm_bytes / c->bw) {
          c->comm_bytes = tb;
          c->bw = tbw;
        }
      }
    }
    /* NVLink SHARP's all-reduce within a node moves (1 + 1/n) of the
     * buffer each way (phys_nccl_time), less than a ring */
    if (gpu && PHYS_HAS_GPU (gpu, nvls) && gpu->nvls && n >= 2 && n <= gpn && k->op
        && strcmp (k->op, "all_reduce") == 0)
      c->comm_bytes = fmin (c->comm_bytes, (1 + 1 / n) * k->bytes);
    return 0;
  }
  default:
    return -1;
  }
}

/* The plain physical roofline: max (FLOPs / peak, bytes / bandwidth). */
static inline double
phys_roofline (const struct phys_cost *c)
{
  double t = 0;
  if (c->peak > 0)
    t = c->flops / c->peak;
  if (c->bw > 0)
    t = fmax (t, (c->comm_bytes > 0 ? c->comm_bytes : c->bytes) / c->bw);
  return t;
}

/* The floor no prediction may go under: the compute peak, and the memory
 * bandwidth for the bytes that cannot stay in L2 (a kernel whose operands
 * fit in L2 between timed repetitions can beat the DRAM roof). */
static inline double
phys_floor (const struct phys_cost *c, const struct perfmod_gpu *gpu)
{
  double t = c->peak > 0 ? c->flops / c->peak : 0;
  double beyond = c->bytes - gpu->l2_mb * 1e6;
  if (c->comm_bytes > 0)
    return c->bw > 0 ? fmax (t, c->comm_bytes / c->bw) : t;
  if (beyond > 0 && c->bw > 0)
    t = fmax (t, beyond / c->bw);
  return t;
}

#endif /* PERFMOD_PHYSICS_H */
