/* t-parallel.c: unit tests of the collectives' costs (NCCL's model), the pipeline schedules and the sharded activation memory, on hand-computed cases. */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tap.h"

/* Two levels: NVLink of 100 GB/s and NICs of 10 GB/s, both at full
 * efficiency, 8 GPUs a node, no NVLink SHARP: every figure below is
 * NCCL's latency (physics.h's table, microseconds) plus bytes over a
 * bandwidth. */
static struct perfmod_gpu
fabric (void)
{
  struct perfmod_gpu g;
  memset (&g, 0, sizeof g);
  g.struct_size = sizeof g;
  g.gpus_per_node = 8;
  g.link_gbps = 100;
  g.nic_gbps = 10;
  g.link_efficiency = g.nic_efficiency = 1;
  g.oversubscription = 1;
  g.nvlink = 1;
  return g;
}

static void
test_collectives (void)
{
  struct perfmod_gpu g = fabric ();
  double B = 1e9;
  int q, nodes;

  /* Simple (8.4 + 6 x 3.4 us) beats LL128 (14 + 6 x 1.9 us, 0.92 of the link) and LL */
  is_double (collective_seconds (PERFMOD_COLL_ALLREDUCE, B, 4, 1, 8, &g),
             28.8e-6 + 2.0 * 3 / 4 * B / 100e9, 1e-12,
             "ring all-reduce in a node: 2(p-1)/p of the bytes, Simple's 2(p-1) steps");
  is_double (collective_seconds (PERFMOD_COLL_ALLREDUCE, 1e3, 8, 1, 8, &g),
             15.0e-6 + 2.0 * 7 / 8 * 1e3 / 25e9, 1e-12,
             "a small all-reduce: LL, 6.6 + 14 x 0.6 us, a quarter of the link");
  is_double (collective_seconds (PERFMOD_COLL_REDUCE_SCATTER, B, 4, 1, 8, &g),
             18.6e-6 + 3.0 / 4 * B / 100e9, 1e-12, "reduce-scatter: (p-1)/p of the bytes, p-1 steps");
  is_double (collective_seconds (PERFMOD_COLL_ALLGATHER, B, 4, 8, 8, &g),
             (8.4 + 3 * 14.0) * 1e-6 + 3.0 / 4 * B / 10e9, 1e-12,
             "all-gather across nodes (stride 8): one NIC a node, network steps");
  /* two nodes: the tree's one edge carries the buffer once over the node's 8 NICs (0.9 of
   * 80 GB/s), under the ring's 2 x 15/16 of it; 7 NVLink and 1 network step up and down */
  is_double (collective_seconds (PERFMOD_COLL_ALLREDUCE, B, 16, 1, 8, &g),
             (8.4 + 2 * (7 * 4.0 + 14.0)) * 1e-6 + B / 72e9, 1e-12,
             "all-reduce over 2 nodes of 8: the tree, the buffer once through the node's 8 NICs");
  is_double (collective_seconds (PERFMOD_COLL_ALLREDUCE, 1e3, 16, 1, 8, &g),
             (6.8 + 2 * (7 * 0.6 * 1.8 + 5.0)) * 1e-6 + 1e3 / (80e9 * 0.9 / 3.8), 1e-12,
             "a small all-reduce over 2 nodes: the tree's LL, its in-node steps 1.8 times longer");
  /* four nodes: the tree carries it twice, the ring is sooner */
  is_double (collective_seconds (PERFMOD_COLL_ALLREDUCE, B, 32, 1, 8, &g),
             (8.4 + 56 * 3.4 + 6 * 14.0) * 1e-6 + 62.0 / 32 * B / 80e9, 1e-12,
             "all-reduce over 4 nodes of 8: the ring through the node's 8 NICs, 6 network steps");
  is_double (collective_seconds (PERFMOD_COLL_ALLTOALL, B, 16, 1, 8, &g),
             22.4e-6 + 8.0 / 16 * B / 10e9, 1e-12, "all-to-all over two nodes: the NIC share dominates");
  is_double (collective_seconds (PERFMOD_COLL_ALLTOALL, B, 4, 1, 8, &g),
             11.8e-6 + 3.0 / 4 * B / 100e9, 1e-12, "all-to-all in a node: (p-1)/p over the links");
  is_double (collective_seconds (PERFMOD_COLL_SENDRECV, B, 2, 4, 8, &g), 11.8e-6 + B / 100e9,
             1e-12, "send/recv to a peer in the node");
  is_double (collective_seconds (PERFMOD_COLL_SENDRECV, B, 2, 8, 8, &g), 22.4e-6 + B / 10e9,
             1e-12, "send/recv to the next node");
  g.nvls = 1;
  is_double (collective_seconds (PERFMOD_COLL_ALLREDUCE, B, 8, 1, 8, &g),
             25e-6 + 9.0 / 8 * B / 100e9, 1e-12, "NVLink SHARP: (1 + 1/p) of the bytes each way");
  g.nvls = 0;
  g.oversubscription = 2;
  is_double (collective_seconds (PERFMOD_COLL_ALLGATHER, B, 4, 8, 8, &g),
             (8.4 + 3 * 14.0) * 1e-6 + 3.0 / 4 * B / 5e9, 1e-12,
             "2:1 oversubscription halves the NIC bandwidth");
  ok (collective_seconds (PERFMOD_COLL_ALLREDUCE, B, 1, 1, 8, &g) == 0,
      "a group of one costs nothing");
  g.link_gbps = 0;
  ok (collective_seconds (PERFMOD_COLL_ALLREDUCE, B, 4, 1, 8, &g) == HUGE_VAL,
      "no link bandwidth: no collective");
  group_layout (4, 1, 8, &q, &nodes);
  ok (q == 4 && nodes == 1, "tp=4 at stride 1 stays in a node");
  group_layout (16, 8, 8, &q, &nodes);
  ok (q == 1 && nodes == 16, "dp at stride 8 puts every member on its own node");
  group_layout (8, 2, 8, &q, &nodes);
  ok (q == 4 && nodes == 2, "8 members at stride 2: 4 per node over 2 nodes");
}

static int
run_pipe (int p, int v, int m, enum pm_schedule sched, const double *fw, const double *bw,
          double p2p, struct pipe_result *r)
{
  struct pipe_input in;
  memset (&in, 0, sizeof in);
  in.stages = p;
  in.vp = v;
  in.microbatches = m;
  in.schedule = sched;
  in.backward = true;
  in.fw_ms = fw;
  in.bw_ms = bw;
  in.p2p_ms = p2p;
  return pipeline_simulate (&in, r);
}

static void
test_pipeline (void)
{
  double f4[8] = { 1, 1, 1, 1, 0.5, 0.5, 0.5, 0.5 }, b4[8] = { 2, 2, 2, 2, 1, 1, 1, 1 };
  double f8[8], b8[8];
  struct pipe_result r;

  ok (run_pipe (4, 1, 8, SCHED_1F1B, f4, b4, 0, &r) == 0, "1F1B runs");
  is_double (r.step_ms, (8 + 4 - 1) * 3.0, 1e-12, "1F1B on uniform stages: (m+p-1)(tf+tb)");
  is_double (r.bubble, 3.0 / 11, 1e-12, "1F1B bubble is (p-1)/(m+p-1) exactly");
  run_pipe (4, 1, 8, SCHED_GPIPE, f4, b4, 0, &r);
  is_double (r.step_ms, 33, 1e-12, "GPipe on uniform stages: the same step");
  is_double (r.bubble, 3.0 / 11, 1e-12, "GPipe bubble (p-1)/(m+p-1)");
  run_pipe (4, 1, 1, SCHED_1F1B, f4, b4, 0, &r);
  is_double (r.step_ms, 4 * 3.0, 1e-12, "one micro-batch: the stages one after another");
  is_double (r.bubble, 0.75, 1e-12, "one micro-batch over 4 stages idles 3/4");
  /* interleaved: 2 chunks per rank of half a stage each */
  for (int i = 0; i < 8; i++) {
    f8[i] = 0.5;
    b8[i] = 1;
  }
  ok (run_pipe (4, 2, 8, SCHED_INTERLEAVED, f8, b8, 0, &r) == 0, "interleaved 1F1B runs");
  is_double (r.bubble, (3.0 / 2) / (8 + 3.0 / 2), 1e-12,
             "interleaved bubble is (p-1)/v / (m + (p-1)/v)");
  ok (run_pipe (4, 2, 6, SCHED_INTERLEAVED, f8, b8, 0, &r) < 0,
      "interleaved refuses micro-batches that are not a multiple of pp");
  /* uneven: stage 1 twice as slow; hand-simulated in the comments */
  {
    double fu[2] = { 1, 2 }, bu[2] = { 2, 4 };
    /* rank 0: F0 0-1, F1 1-2, B0 7-9, B1 13-15; rank 1: F0 1-3, B0 3-7, F1 7-9, B1 9-13 */
    run_pipe (2, 1, 2, SCHED_1F1B, fu, bu, 0, &r);
    is_double (r.step_ms, 15, 1e-12, "1F1B on uneven stages follows the slow stage");
    is_double (r.bubble, 1 - 18.0 / 30, 1e-12, "uneven stages: bubble from the simulation");
    /* with a 0.5 transfer each way: rank 1 F0 1.5-3.5, B0 3.5-7.5, F1 7.5-9.5, B1 9.5-13.5;
     * rank 0 B0 8-10, B1 14-16 */
    run_pipe (2, 1, 2, SCHED_1F1B, fu, bu, 0.5, &r);
    is_double (r.step_ms, 16, 1e-12, "transfers between stages delay the dependent pass");
    run_pipe (2, 1, 2, SCHED_GPIPE, fu, bu, 0, &r);
    /* rank 0: F0 0-1, F1 1-2; rank 1: F0 1-3, F1 3-5, B0 5-9, B1 9-13; rank 0 B0 9-11, B1 13-15 */
    is_double (r.step_ms, 15, 1e-12, "GPipe on uneven stages");
  }
}

static void
test_memory (void)
{
  /* GPT-3 2.7B's shape, fp16: Korthikanti's sbh(10 + 24/t + 5as/ht) per
   * layer with tensor parallelism, sbh(34/t + 5as/ht) with sequence
   * parallelism (table 2). */
  struct model_cfg m;
  struct memory_options mo;
  struct mem_shard ms;
  struct memory_estimate e;
  struct perfmod_gpu g = fabric ();
  double s = 2048, b = 1, h = 2560, a = 32, t = 8, sbh = s * b * h;
  memset (&m, 0, sizeof m);
  m.name = (char *) "t";
  m.family = FAM_GPT2;
  m.layers = 32;
  m.hidden = 2560;
  m.heads = 32;
  m.kv_heads = 32;
  m.head_dim = 80;
  m.ffn = 4 * 2560;
  m.vocab = 50257;
  memset (&ms, 0, sizeof ms);
  ms.tp = 8;
  ms.params = 1e9;
  ms.layer_copies = 1;
  ms.vocab = 8;
  ms.weights = ms.gradients = ms.optimizer = 1;
  memset (&mo, 0, sizeof mo);
  mo.prec = precision_train ("amp-fp16");
  mo.batch = 1;
  mo.seq = 2048;
  mo.train = true;
  mo.shard = &ms;
  memory_estimate (&m, &mo, &g, &e);
  is_double (e.activations, sbh * (10 + 24 / t + 5 * a * s / (h * t)), 1e-12,
             "tp=8: Korthikanti's sbh(10 + 24/t + 5as/ht)");
  ms.sp = true;
  memory_estimate (&m, &mo, &g, &e);
  is_double (e.activations, sbh * (34 / t + 5 * a * s / (h * t)), 1e-12,
             "tp=8 with sequence parallelism: sbh(34/t + 5as/ht)");
  mo.recompute = RECOMPUTE_SELECTIVE;
  memory_estimate (&m, &mo, &g, &e);
  is_double (e.activations, sbh * 34 / t, 1e-12, "selective recomputation: sbh 34/t");
  is_double (e.weights + e.gradients + e.optimizer, 18e9, 1e-12,
             "mixed precision: 18 bytes per parameter held");
  ms.optimizer = 4;
  ms.gradients = 4;
  ms.gradient_buffers = 1;
  memory_estimate (&m, &mo, &g, &e);
  is_double (e.optimizer, 12e9 / 4, 1e-12, "ZeRO divides the optimizer state");
  is_double (e.gradients, 4e9 / 4 + 4e9, 1e-12, "sharded gradients plus one bucket copy");
}

int
main (void)
{
  test_collectives ();
  test_pipeline ();
  test_memory ();
  done_testing ();
  return exit_status ();
}
