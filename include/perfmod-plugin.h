/* perfmod-plugin.h: the one public header for perfmod plugins (predictors and parallelism). */
#ifndef PERFMOD_PLUGIN_H
#define PERFMOD_PLUGIN_H

/* ABI guarantee (see perfmod-plugin(3)): every struct below starts with a
 * size or version field and only ever grows at the end.  The loader copies
 * min(struct_size, sizeof ours) of a plugin's struct into a zeroed one, so a
 * plugin built against an older header keeps working; a plugin whose
 * abi_version differs from PERFMOD_ABI_VERSION is refused.  A member marked
 * "Appended" came after its struct's first layout: a plugin built against
 * an older header lacks it, so check struct_size before reading it. */

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PERFMOD_ABI_VERSION 1

/* Kinds of plugin. */
#define PERFMOD_PLUGIN_PREDICTOR   1
#define PERFMOD_PLUGIN_PARALLELISM 2

/* Numeric element types.  FP32 is NeuSight's convention and the default.
 * The first PERFMOD_DTYPE_COUNT have a slot in perfmod_gpu's
 * tensor_tflops; the ones appended after them (the ABI fixes that array's
 * size) take their peaks from fields of their own, and
 * perfmod_gpu_peak_flops gives every dtype's.  PERFMOD_DTYPE_NTYPES
 * counts them all. */
enum perfmod_dtype {
  PERFMOD_DTYPE_FP32 = 0,
  PERFMOD_DTYPE_TF32 = 1,
  PERFMOD_DTYPE_FP16 = 2,
  PERFMOD_DTYPE_BF16 = 3,
  PERFMOD_DTYPE_FP8  = 4,   /* e4m3, one scale per tensor (or per row): Hopper's and Ada's */
  /* Appended: Blackwell's 4-bit floats, e2m1 with an e4m3 scale per 16
   * values (and one fp32 scale per tensor); their peak is fp4_tflops. */
  PERFMOD_DTYPE_NVFP4 = 5,
  /* Appended: fp8 (e4m3) with a float scale per 128 values of a row and
   * per 128 x 128 block of a weight (DeepSeek-V3's); fp8's peak. */
  PERFMOD_DTYPE_FP8_BLOCK = 6
};
#define PERFMOD_DTYPE_COUNT 5
#define PERFMOD_DTYPE_NTYPES 7

/* Kernel classes.  Dimension conventions follow NeuSight: BMM (B,M,N,K)
 * multiplies (B,M,N) x (B,N,K) -> (B,M,K); LINEAR (M,N,K) is an (M,N) input
 * through a Linear(N->K), so N is the reduced dimension and B is 1. */
enum perfmod_kernel_class {
  PERFMOD_KERNEL_LINEAR      = 1,
  PERFMOD_KERNEL_BMM         = 2,
  PERFMOD_KERNEL_ELEMENTWISE = 3, /* b rows of h outputs */
  PERFMOD_KERNEL_SOFTMAX     = 4,
  PERFMOD_KERNEL_LAYERNORM   = 5,
  PERFMOD_KERNEL_MEMORY      = 6, /* copies, gathers, indexing: bytes moved */
  PERFMOD_KERNEL_COMM        = 7, /* collectives: costed by the core inside graphs */
  PERFMOD_KERNEL_ATTENTION   = 8, /* fused attention */
  PERFMOD_KERNEL_MOE         = 9  /* a MoE layer's routed experts, fused as engines run them */
};

/* One kernel, as the core hands it to a predictor.  The core owns it. */
struct perfmod_kernel {
  uint32_t struct_size;     /* sizeof (struct perfmod_kernel) of the core */
  int kclass;               /* enum perfmod_kernel_class */
  const char *op;           /* operator: "linear", "bmm", "add", "softmax", "ln", "gelu", "copy"... */
  int64_t b, m, n, k;       /* matrix dimensions (LINEAR: b = 1) */
  int64_t h;                /* vector kernels: outputs per row (b rows) */
  double mem_per_output;    /* vector kernels: bytes read+written per output element */
  double ops_per_output;    /* vector kernels: arithmetic operations per output element */
  double bytes;             /* MEMORY kernels: bytes moved in total */
  int dtype;                /* enum perfmod_dtype */
  double elem_bytes;        /* bytes per element for dtype */
  const char *library_name; /* library kernel name if known (e.g. "ampere_sgemm_128x64_tn"), else NULL */
  /* Appended (check struct_size): the library tile if known, from
   * tiles.d (matrix: rows x columns as named; vector: outputs per block),
   * else 0. */
  double tile[2];
  /* Appended (check struct_size): vector kernels, the bytes per
   * output the kernel itself reads and writes, where the graph knows them
   * and mem_per_output follows NeuSight's rule instead (the node's tensors:
   * a weight-gradient accumulation then inherits its node's activations);
   * else 0. */
  double own_mem_per_output;
  /* Appended (check struct_size): 1 where the kernel is predicted
   * as a benchmark harness times it, alone, each call paying its own launch
   * and synchronisation (perfmod eval); 0 inside a graph, where the CPU
   * queues kernels ahead of the GPU and that fixed cost is hidden. */
  int isolated;
  /* Appended (check struct_size): fused attention and collectives.
   * ATTENTION (FlashAttention-style, one kernel): b sequences, m query
   * tokens each (the prompt's length in a prefill, 1 in a decode step), n
   * key/value tokens each (the KV cache in a decode step), k the head
   * width, h the query heads; kv_heads the key/value heads (grouped-query
   * attention), window the sliding window (0: none), causal 1 when a
   * prefill masks the future.  COMM: op names the collective
   * ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "send_recv"),
   * bytes is the whole buffer and ranks the GPUs taking part. */
  int64_t kv_heads;
  int64_t window;
  int causal;
  int ranks;
  /* GEMMs whose operands are fp8 keep the output in bf16: the bytes per
   * element of the output, where it differs from elem_bytes; else 0. */
  double out_elem_bytes;
  /* Appended (check struct_size): MOE kernels, the routed experts of one
   * mixture-of-experts layer on one rank as a serving engine fuses them
   * (permute, grouped GEMMs, activation, weighted combine): m tokens the
   * layer routes across its expert-parallel group, n the model width, k
   * each expert's intermediate width on this rank, b the experts in all, h
   * those this rank holds; top_k experts per token; gated 1 for gate and
   * up (SwiGLU), 0 for one up projection; expert_load the busiest rank's
   * routed tokens over the even share (1: balanced, 0 taken as 1); engine
   * the kernel's source ("trtllm", "sglang", "vllm") or NULL;
   * experts_reached the rank's experts its tokens reach where the routing
   * is skewed (0: as many as its assignments can reach). */
  int64_t top_k;
  int gated;
  double expert_load;
  const char *engine;
  double experts_reached;
  /* Appended (check struct_size): group-limited routing (DeepSeek-V3's
   * n_group and topk_group): the experts fall in route_groups equal
   * groups and each token's top_k in route_group_topk of them; 0: none.
   * DeepEP's kernels (COMM) carry it. */
  int route_groups;
  int route_group_topk;
  /* Appended (check struct_size): ATTENTION kernels whose keys are also
   * their values, read once (MLA's latent in a decode step: FlashMLA
   * takes the values as the latent's first kv_lora_rank columns); 0:
   * keys and values apart. */
  int kv_shared;
  /* Appended (check struct_size): LINEAR and BMM kernels in fp8, block-scaled
   * fp8 or nvfp4 whose input a kernel of its own quantised before them
   * (Transformer Engine's casts in a training step, which the graph costs
   * apart): 1 where the GEMM alone is wanted, without the activations'
   * quantisation a serving engine's GEMM call runs first; 0: the call's. */
  int input_quantised;
  /* Appended (check struct_size): MOE kernels whose experts' weights are
   * stored narrower than dtype and widened to it inside the kernel
   * (weight-only quantisation: MXFP4's 4-bit values with an 8-bit scale
   * per 32, 0.53125 bytes, run on 16-bit tensor cores), and the products
   * of such a kernel's parts (LINEAR and BMM: their n x k operand): the
   * bytes per weight; 0: elem_bytes. */
  double weight_bytes;
};

/* One GPU, from gpus.d.  Units are in the field names. 0 means unknown/absent. */
struct perfmod_gpu {
  uint32_t struct_size;     /* sizeof (struct perfmod_gpu) of the core */
  const char *name;         /* gpus.d section name */
  const char *vendor;       /* "nvidia", "amd" */
  int sms;                  /* streaming multiprocessors / compute units */
  int cores_per_sm;         /* FP32 lanes per SM/CU */
  double clock_mhz;         /* boost clock */
  double fp32_gflops;       /* FP32 peak (non-tensor), GFLOP/s */
  double tensor_tflops[PERFMOD_DTYPE_COUNT]; /* dense matrix-unit peak per dtype, TFLOP/s */
  double mem_gb;            /* device memory, GB */
  double mem_bw_gbps;       /* memory bandwidth, GB/s */
  double l2_mb;             /* L2 cache, MB */
  int gpus_per_node;        /* GPUs sharing the intra-node fabric */
  double link_gbps;         /* intra-node GPU-to-GPU bandwidth per GPU per direction, GB/s */
  double nic_gbps;          /* inter-node bandwidth per GPU per direction, GB/s */
  /* Appended (check struct_size): the alpha-beta model of the two
   * fabric levels.  Efficiency is the fraction of the nominal bandwidth a
   * collective's bus achieves; latency is per step of an algorithm. */
  double link_efficiency;   /* intra-node, 0..1 */
  double link_latency_us;
  double nic_efficiency;    /* inter-node, 0..1 */
  double nic_latency_us;
  double oversubscription;  /* network oversubscription ratio (1: non-blocking) */
  /* Appended (check struct_size): more of the datasheet.  0 where
   * the chip has no such unit or gpus.d does not say. */
  double fp4_tflops;        /* dense FP4 matrix-unit peak, TFLOP/s */
  double fp32_matrix_tflops; /* dense FP32 matrix-core peak (AMD CDNA), TFLOP/s */
  double tdp_w;             /* board power (TDP/TBP), W */
  double base_clock_mhz;    /* base clock; clock_mhz is the boost clock */
  /* Appended (check struct_size): a serving engine's own all-reduce within
   * a node (TensorRT-LLM's, vLLM's, SGLang's one-shot/two-shot kernels),
   * for groups of 2, 4 and 8 GPUs (engine_ar[0], [1], [2]): below
   * twoshot_bytes oneshot_us + bytes / oneshot_gbps, from it twoshot_us +
   * bytes / twoshot_gbps (microseconds, GB/s).  All 0: not measured (the
   * NCCL model). */
  struct perfmod_engine_allreduce {
    double oneshot_us, oneshot_gbps, twoshot_bytes, twoshot_us, twoshot_gbps;
  } engine_ar[3];
  /* Appended (check struct_size): the intra-node fabric as NCCL sees it.
   * nvlink 1: every GPU of the node reaches every other over NVLink
   * (NVSwitch) or AMD's Infinity Fabric, 0: over PCIe; nvls 1: the
   * switches reduce in the network (NVLink SHARP, Hopper's NVSwitch and
   * later). */
  int nvlink;
  int nvls;
};

/* Peak FLOP/s of gpu's matrix units for a dtype (nvfp4 at fp4_tflops,
 * fp8_block at fp8's); 0 where it has none, and for FP32. */
static inline double
perfmod_gpu_matrix_flops (const struct perfmod_gpu *gpu, int dtype)
{
  if (dtype == PERFMOD_DTYPE_FP8_BLOCK)
    dtype = PERFMOD_DTYPE_FP8;
  if (dtype == PERFMOD_DTYPE_NVFP4)
    return gpu->struct_size >= offsetof (struct perfmod_gpu, fp4_tflops) + sizeof gpu->fp4_tflops
           && gpu->fp4_tflops > 0 ? gpu->fp4_tflops * 1e12 : 0;
  if (dtype > PERFMOD_DTYPE_FP32 && dtype < PERFMOD_DTYPE_COUNT && gpu->tensor_tflops[dtype] > 0)
    return gpu->tensor_tflops[dtype] * 1e12;
  return 0;
}

/* Peak FLOP/s a kernel of the given dtype can reach on gpu: FP32 uses the
 * FP32 units (NeuSight's SingleFLOPs); other dtypes the matrix units,
 * falling back to FP32 where the GPU has none for that dtype. */
static inline double
perfmod_gpu_peak_flops (const struct perfmod_gpu *gpu, int dtype)
{
  double m = perfmod_gpu_matrix_flops (gpu, dtype);
  return m > 0 ? m : gpu->fp32_gflops * 1e9;
}

/* A parallelism case: one strategy dimension applied to one workload,
 * as the core describes it to a parallelism plugin's explain(). */
struct perfmod_parallel_case {
  uint32_t struct_size;     /* sizeof of the core's struct */
  int degree;               /* this dimension's degree (X, Y, Z or stages) */
  double tokens;            /* B: tokens per step on the whole model (global batch x sequence) */
  double hidden;            /* D: model width */
  double ffn;               /* F: feed-forward width */
  double layers;            /* transformer layers */
  double experts_per_token; /* k: routed experts per token (MoE), 1 otherwise */
  double experts;           /* experts per MoE layer, 0 for dense models */
  double microbatches;      /* pipeline micro-batches */
  double stages;            /* pipeline stages */
  double chip_flops;        /* C: FLOP/s per chip at the run's dtype */
  double link_bytes_per_s;  /* W: bandwidth of the link this dimension's group uses */
  const char *link_name;    /* "intra-node" or "inter-node" */
  /* Appended (check struct_size): what plan() needs. */
  double mb_tokens;         /* tokens of one micro-batch on one rank (ep's case: those its
                               routed layers dispatch, 1/tp of them under Megatron-Core's
                               sequence parallelism) */
  double elem_bytes;        /* bytes per activation element */
  double heads, kv_heads;   /* attention heads and key/value heads */
  double vocab;             /* vocabulary rows */
  double grad_bytes;        /* gradient bytes of one device before data-parallel sharding */
  double layer_param_bytes; /* parameter bytes of one layer on one device (ZeRO-3 gathers) */
  int zero;                 /* ZeRO stage 0..3 */
  int sequence_parallel;    /* tp: the sequence-parallel variant */
  /* Appended: Megatron-Core runs the step (kernels=te): its
   * gradients accumulate in one contiguous buffer that the data-parallel
   * collectives use in place, and are reduced during the backward pass
   * (--overlap-grad-reduce, as its recipes run). */
  int megatron_core;
  /* Appended (check struct_size): tp's collectives are to be pipelined
   * with the GEMMs beside them (PERFMOD_OVERLAP_GEMM; strategy key tpo,
   * Megatron-Core's --tp-comm-overlap; only with sequence_parallel). */
  int tp_comm_overlap;
  /* Appended (check struct_size): how ep's tokens reach their experts
   * (enum perfmod_dispatcher; strategy key dispatcher, Megatron-Core's
   * --moe-token-dispatcher-type), and whether dispatch and combine hide
   * behind another micro-batch's computation (strategy key a2a_overlap,
   * Megatron-Core's --overlap-moe-expert-parallel-comm). */
  int dispatcher;
  int a2a_overlap;
  /* Appended (check struct_size): bytes per element in which tp's
   * all-gathers under sequence parallelism move what they gather (the
   * column-parallel GEMMs' inputs, forward and again for the weight
   * gradient, and the row-parallel ones' incoming gradients):
   * Transformer Engine quantises them first in fp8 training, 1; else
   * elem_bytes.  0: elem_bytes. */
  double gather_bytes;
  /* Appended (check struct_size): bytes of one gradient in grad_bytes,
   * 4 (fp32, mixed precision's) or 2 (strategy key grad_fp32=0, Megatron's
   * --grad-reduce-in-bf16).  0: 4. */
  double grad_elem_bytes;
};

/* How a routed layer's tokens reach the ranks of their experts. */
enum perfmod_dispatcher {
  PERFMOD_DISPATCH_ALLTOALL = 0, /* an all-to-all of each token's routed copies */
  PERFMOD_DISPATCH_ALLGATHER = 1, /* every rank gathers every token, reduce-scatters back */
  PERFMOD_DISPATCH_FLEX = 2      /* DeepEP's kernels (PERFMOD_COLL_DEEPEP) */
};

/* Graph-level parallelism.  A parallelism plugin's
 * plan() says how its dimension shards the per-device graph and which
 * collectives it adds where; the core builds the sharded graph, costs the
 * collectives over the fabric and runs the pipeline schedule. */
enum perfmod_collective {
  PERFMOD_COLL_ALLREDUCE = 1,
  PERFMOD_COLL_REDUCE_SCATTER = 2,
  PERFMOD_COLL_ALLGATHER = 3,
  PERFMOD_COLL_ALLTOALL = 4,
  PERFMOD_COLL_SENDRECV = 5,
  /* Appended: DeepEP's dispatch (at PERFMOD_SITE_MOE_DISPATCH) or combine
   * (at PERFMOD_SITE_MOE_COMBINE), its bytes an all-to-all's (the routed
   * copies of the rank's tokens); the core costs DeepEP's kernel over the
   * rank's tokens, the model's experts and top-k: the normal kernels, the
   * low-latency ones in a decode step.  Elsewhere refused. */
  PERFMOD_COLL_DEEPEP = 6
};

/* Where a collective runs: per layer and micro-batch, unless noted. */
enum perfmod_site {
  PERFMOD_SITE_ATTN_IN = 1,  /* the attention block's input (before its column-parallel GEMMs) */
  PERFMOD_SITE_ATTN_OUT = 2, /* its output (after the row-parallel GEMM) */
  PERFMOD_SITE_MLP_IN = 3,   /* the feed-forward block's input */
  PERFMOD_SITE_MLP_OUT = 4,  /* its output */
  PERFMOD_SITE_MOE_DISPATCH = 5, /* tokens to their experts' ranks (routed layers) */
  PERFMOD_SITE_MOE_COMBINE = 6,  /* expert outputs back */
  PERFMOD_SITE_EMBED = 7,    /* the input embedding's output: once per micro-batch */
  PERFMOD_SITE_LOGITS = 8,   /* the output layer's input: once per micro-batch */
  PERFMOD_SITE_STAGE = 9,    /* a pipeline stage boundary: once per micro-batch */
  PERFMOD_SITE_GRADS = 10,   /* the gradients: once per step, after the last backward */
  PERFMOD_SITE_PARAMS = 11   /* a layer's parameters before use (ZeRO-3) */
};

#define PERFMOD_MAX_COMMS 16
struct perfmod_comm {
  int collective;           /* enum perfmod_collective */
  int site;                 /* enum perfmod_site */
  int phase;                /* 0 forward, 1 backward */
  double bytes;             /* the whole buffer (all ranks' shares for gather and scatter) */
  int overlap;              /* enum perfmod_overlap: 0 on the critical path */
};

/* What a collective may hide behind (perfmod_comm.overlap). */
enum perfmod_overlap {
  PERFMOD_OVERLAP_NONE = 0,
  PERFMOD_OVERLAP_PHASE = 1, /* the computation of its phase (ZeRO-3 prefetch, ring attention,
                                bucketed gradients) */
  /* Appended: pipelined with the one GEMM beside its site only (the
   * column-parallel GEMM after an *_IN site, the row-parallel GEMM
   * before an *_OUT site), split into degree chunks: Transformer
   * Engine's userbuffers.  A core that predates it treats it as 1. */
  PERFMOD_OVERLAP_GEMM = 2
};

/* Filled by plan(); the core starts it at divisors 1 and no collectives. */
struct perfmod_plan {
  uint32_t struct_size;
  int heads;                /* attention (and key/value) heads split over this many ranks */
  int ffn;                  /* feed-forward width, dense and expert */
  int vocab;                /* embedding and output-layer rows */
  int tokens;               /* tokens of the norm, dropout and residual regions */
  int experts;              /* experts of a routed layer */
  double expert_load;       /* the busiest rank's routed tokens over the even share */
  double weights, gradients, optimizer; /* further divisors of these memory terms */
  struct perfmod_comm comm[PERFMOD_MAX_COMMS];
  int ncomm;
  double gradient_buffers;  /* extra copies of the gradients kept (communication buckets) */
};

/* Append a collective to a plan; -1 when it is full. */
static inline int
perfmod_plan_comm (struct perfmod_plan *p, int collective, int site, int phase, double bytes,
                   int overlap)
{
  struct perfmod_comm *c;
  if (p->ncomm >= PERFMOD_MAX_COMMS)
    return -1;
  c = &p->comm[p->ncomm++];
  c->collective = collective;
  c->site = site;
  c->phase = phase;
  c->bytes = bytes;
  c->overlap = overlap;
  return 0;
}

/* What explain() returns: per-layer times of the seeds' closed forms. */
struct perfmod_roofline {
  uint32_t struct_size;     /* set by the core */
  double t_math;            /* compute time, seconds */
  double t_comms;           /* communication time, seconds */
  double threshold;         /* the value at which the dimension turns comms-bound */
  char condition[160];      /* compute-bound condition in words, with numbers */
};

struct perfmod_graph;       /* opaque per-device op graph */
struct perfmod_params;      /* opaque parameter file */
struct perfmod_mlp;         /* opaque trained network */

/* A predictor's fuller answer for one kernel (see estimate below). */
struct perfmod_estimate {
  double seconds;           /* the prediction */
  double spread;            /* one standard deviation of it, seconds (e.g. over an
                               ensemble); 0 when the predictor has none */
  const char *basis;        /* NULL: the predictor's own model; else a short static
                               phrase saying what was used instead, e.g. "memory-bound" */
  /* Appended: write these only where the host's estimate_size holds
   * them (an older core's struct ends before them).  An 80 % interval of
   * the time, seconds, low <= seconds <= high, its width calibrated on
   * measurements the predictor was not trained on; both 0: none. */
  double low, high;
};

/* Services the core offers every plugin; passed to init(). */
struct perfmod_host {
  uint32_t struct_size;     /* sizeof (struct perfmod_host) of the core */
  const char *version;      /* perfmod's version string */
  /* Record an error message; the plugin then returns -1. */
  void (*error) (const char *fmt, ...);
  /* Log a line (shown with --verbose), prefixed "NAME: " by the core. */
  void (*log) (const char *fmt, ...);
  void *(*alloc) (size_t size);            /* never returns NULL */
  void (*free) (void *ptr);
  /* Graph access for parallelism transform() (later graph-level plugins). */
  size_t (*graph_size) (const struct perfmod_graph *g);
  struct perfmod_kernel *(*graph_kernel) (struct perfmod_graph *g, size_t i);
  int (*graph_add_comm) (struct perfmod_graph *g, const char *collective,
                         double bytes, int group_size, int phase);

  /* Appended; check struct_size before use (see perfmod-plugin(3)).
   * Parameter files written by perfmod train, and the networks in them. */
  /* perfmod's data directory: a predictor NAME's shipped parameters are
   * DATADIR/params/NAME.params. */
  const char *(*datadir) (void);
  /* Load a parameter file; NULL after reporting why. */
  struct perfmod_params *(*params_load) (const char *path);
  void (*params_free) (struct perfmod_params *p);
  /* A header value, or NULL. */
  const char *(*params_get) (const struct perfmod_params *p, const char *key);
  /* A tensor (row-major doubles) and its shape, or NULL. */
  const double *(*params_tensor) (const struct perfmod_params *p, const char *name,
                                  size_t *rows, size_t *cols);
  /* The network stored under prefix, which must take `inputs` raw features
   * and give `outputs` values (0: any); NULL after reporting why.  It reads
   * p's weights in place: free it before params_free(p). */
  struct perfmod_mlp *(*mlp_load) (const struct perfmod_params *p, const char *prefix,
                                   int inputs, int outputs);
  /* Evaluate one row: x has the network's inputs, y receives its outputs. */
  void (*mlp_eval) (struct perfmod_mlp *m, const double *x, double *y);
  void (*mlp_free) (struct perfmod_mlp *m);

  /* Appended.  Like error, for a fault of a file the plugin reads
   * (a parameter file of the wrong shape, say): perfmod then exits with
   * status 2, bad input, rather than 1.  params_load and mlp_load report
   * their own faults so. */
  void (*input_error) (const char *fmt, ...);

  /* Appended.  sizeof (struct perfmod_estimate) of the core: a member
   * appended to it may be written only where it ends within this. */
  size_t estimate_size;
};

/* Whether the core reads an estimate's member m (see estimate_size). */
#define PERFMOD_ESTIMATE_HAS(host, m)                                                        \
  ((host)->struct_size >= offsetof (struct perfmod_host, estimate_size) +                  \
   sizeof (host)->estimate_size &&                                                          \
   (host)->estimate_size >= offsetof (struct perfmod_estimate, m) +                         \
   sizeof (((struct perfmod_estimate *) 0)->m))

/* The plugin.  Fill the fields you implement; leave the rest NULL. */
struct perfmod_plugin {
  uint32_t abi_version;     /* set by PERFMOD_REGISTER_PLUGIN */
  uint32_t struct_size;     /* set by PERFMOD_REGISTER_PLUGIN */
  const char *name;         /* must equal the file name without ".so" */
  const char *version;
  const char *description;  /* one line */
  int kind;                 /* PERFMOD_PLUGIN_PREDICTOR or PERFMOD_PLUGIN_PARALLELISM */

  /* Optional: set up state; return 0, or -1 after host->error(). */
  int (*init) (const struct perfmod_host *host, void **state);
  /* Optional: release state. */
  void (*fini) (void *state);

  /* Predictors, mandatory: seconds for one kernel on one GPU.  Return 0,
   * or -1 after host->error() if the kernel cannot be predicted. */
  int (*predict) (void *state, const struct perfmod_kernel *kernel,
                  const struct perfmod_gpu *gpu, double *seconds);

  /* Parallelism plugins: the dimension's name ("dp", "tp", "ep", "pp"). */
  const char *dimension;
  /* Parallelism plugins, mandatory: the closed-form roofline of the dimension. */
  int (*explain) (void *state, const struct perfmod_parallel_case *c,
                  struct perfmod_roofline *out);
  /* Parallelism plugins, optional: shard the per-device graph and insert
   * communication through the host's graph services. */
  int (*transform) (void *state, struct perfmod_graph *graph,
                    const struct perfmod_parallel_case *c);

  /* Optional: NULL-terminated list of configuration keys the plugin accepts
   * (perfmod --plugin-opt NAME:KEY=VALUE), and the callback receiving them. */
  const char *const *config_keys;
  int (*config) (void *state, const char *key, const char *value);

  /* Appended.  Predictors, optional: like predict, with the
   * spread of the prediction and its basis.  The core zeroes *out before
   * the call and uses this instead of predict when it is set. */
  int (*estimate) (void *state, const struct perfmod_kernel *kernel,
                   const struct perfmod_gpu *gpu, struct perfmod_estimate *out);

  /* Appended.  Parallelism plugins, optional: this dimension's
   * sharding and collectives (see struct perfmod_plan).  Without it the
   * dimension is refused for graph-level prediction. */
  int (*plan) (void *state, const struct perfmod_parallel_case *c, struct perfmod_plan *p);

  /* Appended.  Predictors, optional: the dtypes the predictor's
   * own model covers for kernels of class kclass (enum
   * perfmod_kernel_class), one bit (1u << enum perfmod_dtype) each; NULL
   * means every dtype.  Kernels of other dtypes are still passed to
   * predict/estimate, which answers as best it can (e.g. with its fp32
   * model); perfmod says so in one line on stderr and marks the
   * predictor in its tables.  Called after a successful prediction of a
   * kernel of that class, once per class. */
  unsigned (*dtypes) (void *state, int kclass);
};

/* The single exported symbol of a plugin. */
typedef const struct perfmod_plugin *(*perfmod_plugin_init_fn) (void);

#ifdef __cplusplus
#define PERFMOD_EXTERN_C extern "C"
#else
#define PERFMOD_EXTERN_C
#endif

#define PERFMOD_REGISTER_PLUGIN(plugin)                                 \
  PERFMOD_EXTERN_C const struct perfmod_plugin *perfmod_plugin_init (void); \
  PERFMOD_EXTERN_C const struct perfmod_plugin *perfmod_plugin_init (void) \
  {                                                             \
    (plugin).abi_version = PERFMOD_ABI_VERSION;                 \
    (plugin).struct_size = sizeof (plugin);                     \
    return &(plugin);                                           \
  }

#ifdef __cplusplus
}
#endif

#endif /* PERFMOD_PLUGIN_H */
