/* predict.c: run one predictor over an op graph, memoising kernels by signature, and sum the phases. */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "physics.h"

static const char *const dtype_names[PERFMOD_DTYPE_NTYPES] = { "fp32", "tf32", "fp16", "bf16",
                                                                "fp8", "nvfp4", "fp8_block" };
/* nvfp4: half a byte and an e4m3 scale per 16 values; fp8_block's scales
 * (one float per 128 x 128 weights, per 128 activations) are left out. */
static const double dtype_sizes[PERFMOD_DTYPE_NTYPES] = { 4, 4, 2, 2, 1, 0.5 + 1.0 / 16, 1 };

double dtype_bytes (int dtype) { return dtype_sizes[dtype]; }

bool
dtype_mixed (int dtype)
{
  return dtype == PERFMOD_DTYPE_FP16 || dtype == PERFMOD_DTYPE_BF16 || dtype_low (dtype);
}

bool
dtype_low (int dtype)
{
  return dtype == PERFMOD_DTYPE_FP8 || dtype == PERFMOD_DTYPE_NVFP4 ||
         dtype == PERFMOD_DTYPE_FP8_BLOCK;
}
const char *dtype_name (int dtype) { return dtype_names[dtype]; }

/* ---- precisions ---- */

/* Training.  Bytes per parameter: the weights the kernels read, the fp32
 * master copy mixed precision keeps, the gradients, Adam's two moments.
 * fp32 and tf32 hold 4 + 4 + 8 = 16; the mixed ones Megatron's
 * 2 + 4 + (4 + 8) = 18 (16-bit weights, fp32 gradients as its main_grad
 * accumulates them, fp32 master and moments).  amp-fp16: GEMMs and
 * activations in fp16 (PyTorch AMP, or Megatron's fp16 with a loss
 * scale).  fp8 is Transformer Engine's recipe: LINEAR and BMM kernels
 * read fp8 and write bf16, everything else runs in bf16; the module's
 * weights stay bf16 and the optimizer keeps the fp32 master, so the
 * bytes per parameter are bf16's.  Assumed: TE casts a weight to fp8 as
 * each GEMM needs it, so the fp8 copies are transient and not counted
 * (with TE's weight caching across micro-batches they would add one or
 * two bytes per GEMM parameter); activations are kept in bf16.  fp8 casts
 * in one pass, as delayed scaling (the scale from past amaxes, the cast
 * recording this one) and the block-scaled recipes (each block's scale
 * found in the pass) do; fp8-cs is per-tensor current scaling, whose
 * scale needs the tensor's amax first: a pass of its own. */
static const struct precision train_precisions[] = {
  { "fp32", PERFMOD_DTYPE_FP32, PERFMOD_DTYPE_FP32, 4, 0, 4, 8, 4, false, 0 },
  { "tf32", PERFMOD_DTYPE_TF32, PERFMOD_DTYPE_FP32, 4, 0, 4, 8, 4, false, 0 },
  { "amp-fp16", PERFMOD_DTYPE_FP16, PERFMOD_DTYPE_FP16, 2, 4, 4, 8, 2, false, 0 },
  { "bf16", PERFMOD_DTYPE_BF16, PERFMOD_DTYPE_BF16, 2, 4, 4, 8, 2, false, 0 },
  { "fp8", PERFMOD_DTYPE_FP8, PERFMOD_DTYPE_BF16, 2, 4, 4, 8, 2, false, 0 },
  { "fp8-cs", PERFMOD_DTYPE_FP8, PERFMOD_DTYPE_BF16, 2, 4, 4, 8, 2, true, 0 },
};

/* Inference at one dtype: weights and activations (and the KV cache) in
 * it; tf32 is fp32 storage with TF32 GEMMs; fp8, fp8_block and nvfp4 are
 * weights and GEMMs in that dtype (as quantised checkpoints store them,
 * the activations quantised on the way into each GEMM) with bf16
 * activations, KV cache and other kernels. */
static const struct precision infer_precisions[PERFMOD_DTYPE_NTYPES] = {
  { "fp32", PERFMOD_DTYPE_FP32, PERFMOD_DTYPE_FP32, 4, 0, 0, 0, 4, false, 0 },
  { "tf32", PERFMOD_DTYPE_TF32, PERFMOD_DTYPE_FP32, 4, 0, 0, 0, 4, false, 0 },
  { "fp16", PERFMOD_DTYPE_FP16, PERFMOD_DTYPE_FP16, 2, 0, 0, 0, 2, false, 0 },
  { "bf16", PERFMOD_DTYPE_BF16, PERFMOD_DTYPE_BF16, 2, 0, 0, 0, 2, false, 0 },
  { "fp8", PERFMOD_DTYPE_FP8, PERFMOD_DTYPE_BF16, 1, 0, 0, 0, 2, false, 0 },
  { "nvfp4", PERFMOD_DTYPE_NVFP4, PERFMOD_DTYPE_BF16, 0.5 + 1.0 / 16, 0, 0, 0, 2, false, 0 },
  { "fp8_block", PERFMOD_DTYPE_FP8_BLOCK, PERFMOD_DTYPE_BF16, 1, 0, 0, 0, 2, false, 0 },
};

/* GPT-OSS's checkpoint as vLLM, SGLang and TensorRT-LLM run it on GPUs
 * without native fp4 GEMMs (Hopper, Ada, Ampere): attention, router and
 * the rest in bf16; the routed experts' MXFP4 weights dequantised to bf16
 * inside the MoE kernel (w4a16). */
static const struct precision infer_mxfp4 = {
  "mxfp4", PERFMOD_DTYPE_BF16, PERFMOD_DTYPE_BF16, 2, 0, 0, 0, 2, false, MXFP4_WEIGHT_BYTES
};

const struct precision *
precision_infer_named (const char *name)
{
  int dtype;
  if (name == NULL)
    return NULL;
  if (strcmp (name, "mxfp4") == 0)
    return &infer_mxfp4;
  return (dtype = dtype_parse (name)) < 0 ? NULL : precision_infer (dtype);
}

bool
precision_weight_only_experts (const struct precision *p)
{
  return p && p->expert_bytes > 0 && p->expert_bytes < p->weight_bytes;
}

int
precision_check_experts (const struct precision *p, int64_t experts, bool engine_moe,
                         const char *what)
{
  if (!precision_weight_only_experts (p) || (experts > 0 && engine_moe))
    return 0;
  pm_error ("%s %s: the routed experts' weights in MXFP4, widened by a serving engine's MoE "
            "kernel: %s", what, p->name,
            experts == 0 ? "this model has no routed experts"
                         : "give the engine (--engine=vllm|sglang|trtllm)");
  return -1;
}

const struct precision *
precision_train (const char *name)
{
  for (size_t i = 0; i < sizeof train_precisions / sizeof train_precisions[0]; i++)
    if (strcmp (name, train_precisions[i].name) == 0)
      return &train_precisions[i];
  return NULL;
}

const struct precision *
precision_infer (int dtype)
{
  return &infer_precisions[dtype >= 0 && dtype < PERFMOD_DTYPE_NTYPES ? dtype : 0];
}

const struct precision *
precision_of_dtype (int dtype, bool train)
{
  static const char *const train_names[PERFMOD_DTYPE_COUNT] = { "fp32", "tf32", "amp-fp16",
                                                                "bf16", "fp8" };
  if (dtype < 0 || dtype >= PERFMOD_DTYPE_NTYPES)
    dtype = PERFMOD_DTYPE_FP32;
  if (!train)
    return precision_infer (dtype);
  return dtype < PERFMOD_DTYPE_COUNT ? precision_train (train_names[dtype]) : NULL;
}

bool
precision_mixed (const struct precision *p)
{
  return p && p->weight_bytes < p->grad_bytes;
}

bool
precision_quantised (const struct precision *p)
{
  return p && (p->gemm == PERFMOD_DTYPE_FP8 || p->gemm == PERFMOD_DTYPE_FP8_BLOCK ||
               p->gemm == PERFMOD_DTYPE_NVFP4);
}

int
precision_dtype (const struct precision *p, int kclass)
{
  if (p == NULL)
    return PERFMOD_DTYPE_FP32;
  return kclass == PERFMOD_KERNEL_LINEAR || kclass == PERFMOD_KERNEL_BMM ||
         kclass == PERFMOD_KERNEL_MOE ? p->gemm : p->other;
}

/* A matrix unit runs dtype faster than the fp32 lanes could with packed
 * 16-bit arithmetic (twice fp32): P100's 18.7 fp16 TFLOP/s is half2 in
 * its fp32 cores, V100's 112 tensor cores. */
static bool
matrix_unit (const struct perfmod_gpu *gpu, int dtype)
{
  double t = gpu->tensor_tflops[dtype] * 1e3;
  return t > 0 && (dtype == PERFMOD_DTYPE_BF16 || t > 2 * gpu->fp32_gflops);
}

bool
gpu_has_units (const struct perfmod_gpu *gpu, int dtype)
{
  return dtype == PERFMOD_DTYPE_FP32 || perfmod_gpu_matrix_flops (gpu, dtype) > 0;
}

int
default_dtype (const struct perfmod_gpu *gpu)
{
  if (matrix_unit (gpu, PERFMOD_DTYPE_BF16))
    return PERFMOD_DTYPE_BF16;
  if (matrix_unit (gpu, PERFMOD_DTYPE_FP16))
    return PERFMOD_DTYPE_FP16;
  return PERFMOD_DTYPE_FP32;
}

/* Fused attention (FlashAttention, cuDNN's, PyTorch's SDPA) runs where the
 * run's attention is 16-bit (fp8's is bf16) on a GPU of the Ampere
 * generation or later, which gpus.d tells by its bf16 matrix units. */
bool
flash_supported (const struct perfmod_gpu *gpu, const struct precision *pr)
{
  return dtype_mixed (pr->other) && default_dtype (gpu) == PERFMOD_DTYPE_BF16;
}

int
attention_resolve (const char *opt, const char *attention, const struct perfmod_gpu *gpu,
                   const struct precision *pr, bool *flash)
{
  bool can = flash_supported (gpu, pr);
  if (attention && strcmp (attention, "flash") != 0 && strcmp (attention, "unfused") != 0) {
    pm_error ("%s '%s': expected flash or unfused", opt, attention);
    return -1;
  }
  if (attention && strcmp (attention, "flash") == 0 && !can) {
    pm_error ("%s flash: fused attention runs in bf16 or fp16 on GPUs with bf16 matrix units; "
              "this run's attention is %s on %s", opt, dtype_name (pr->other), gpu->name);
    return -1;
  }
  *flash = attention ? strcmp (attention, "flash") == 0 : can;
  return 0;
}

int
dtype_parse (const char *s)
{
  for (int i = 0; i < PERFMOD_DTYPE_NTYPES; i++)
    if (strcmp (s, dtype_names[i]) == 0)
      return i;
  return -1;
}

const char *
kclass_name (int kclass)
{
  switch (kclass) {
  case PERFMOD_KERNEL_LINEAR: return "FC";
  case PERFMOD_KERNEL_BMM: return "BMM";
  case PERFMOD_KERNEL_ELEMENTWISE: return "EW";
  case PERFMOD_KERNEL_SOFTMAX: return "Softmax";
  case PERFMOD_KERNEL_LAYERNORM: return "LN";
  case PERFMOD_KERNEL_MEMORY: return "MEM";
  case PERFMOD_KERNEL_COMM: return "COMM";
  case PERFMOD_KERNEL_ATTENTION: return "ATTN";
  case PERFMOD_KERNEL_MOE: return "MoE";
  default: return "?";
  }
}

/* Arithmetic operations per output element, as NeuSight counts them. */
static double
ops_per_output (const char *op)
{
  if (strcmp (op, "ln") == 0)
    return 6;        /* mean, var, sum, div, sqrt, acc */
  if (strcmp (op, "softmax") == 0)
    return 5;
  if (strcmp (op, "copy") == 0)
    return 0;
  return 1;
}

void
kernel_set_dtype (struct perfmod_kernel *k, int dtype)
{
  k->dtype = dtype;
  k->elem_bytes = dtype_sizes[dtype];
  k->out_elem_bytes = 0;
  if (dtype_low (dtype) &&
      (k->kclass == PERFMOD_KERNEL_LINEAR || k->kclass == PERFMOD_KERNEL_BMM))
    k->out_elem_bytes = dtype_sizes[PERFMOD_DTYPE_BF16];   /* fp8 and fp4 GEMMs write bf16 */
}

/* Each kernel gets its class's dtype under the run's precision. */
void
kop_to_kernel (const struct kop *o, const struct node *nd, const struct precision *pr,
               struct perfmod_kernel *k)
{
  /* a GEMM outside Transformer Engine's fp8 runs in the 16-bit dtype */
  int dtype = o->high && precision_quantised (pr) ? pr->other : precision_dtype (pr, o->kclass);
  double eb = dtype_sizes[dtype];
  memset (k, 0, sizeof *k);
  k->struct_size = sizeof *k;
  k->kclass = o->kclass;
  k->op = o->op;
  k->b = o->b;
  k->m = o->m;
  k->n = o->n;
  k->k = o->k;
  k->h = o->h;
  k->kv_heads = o->kv_heads;
  k->window = o->window;
  k->causal = o->causal;
  k->top_k = o->top_k;
  k->gated = o->gated;
  k->expert_load = o->load;
  k->engine = o->engine;
  k->experts_reached = o->reached;
  k->route_groups = o->route_groups;
  k->route_group_topk = o->route_group_topk;
  k->kv_shared = o->kv_shared;
  kernel_set_dtype (k, dtype);
  k->input_quantised = o->cast_apart && dtype_low (dtype);
  if (o->kclass == PERFMOD_KERNEL_MOE && precision_weight_only_experts (pr))
    k->weight_bytes = pr->expert_bytes;
  switch (o->kclass) {
  case PERFMOD_KERNEL_ELEMENTWISE:
  case PERFMOD_KERNEL_SOFTMAX:
  case PERFMOD_KERNEL_LAYERNORM:
    /* NeuSight takes the bytes per output from the node's tensors, not the
     * kernel's own arguments (so a bias-gradient add inherits the node's). */
    k->mem_per_output = o->traffic > 0 ? o->traffic * eb
                      : (nd->in_elems + nd->out_elems) * eb / nd->out_elems;
    k->own_mem_per_output = (o->traffic > 0 ? o->traffic : o->own_traffic) * eb;
    k->ops_per_output = ops_per_output (o->op);
    break;
  case PERFMOD_KERNEL_MEMORY:
  case PERFMOD_KERNEL_COMM:
    k->bytes = o->bytes > 0 ? o->bytes : o->elems * eb;
    if (o->quant && pr && pr->cast_amax)   /* the amax's pass: the 16-bit input read again */
      k->bytes *= 1.5;
    break;
  default:
    break;
  }
}

/* A fused element-wise chain is one kernel: the last op's shape, the
 * node's inputs and output as its traffic, every op's arithmetic. */
bool
fused_kernel (const struct node *nd, int phase, const struct precision *pr,
              struct perfmod_kernel *k)
{
  const struct kop *rep;
  double ops = 0;
  if (nd->nops[phase] == 0)
    return false;
  rep = &nd->ops[phase][nd->nops[phase] - 1];
  kop_to_kernel (rep, nd, pr, k);
  if (rep->kclass == PERFMOD_KERNEL_MEMORY) {
    k->bytes = (nd->in_elems + nd->out_elems) * k->elem_bytes;
    return true;
  }
  for (size_t i = 0; i < nd->nops[phase]; i++) {
    const struct kop *o = &nd->ops[phase][i];
    if (o->kclass != PERFMOD_KERNEL_MEMORY)
      ops += ops_per_output (o->op) * (double) o->b * (double) (o->h ? o->h : 1);
  }
  k->ops_per_output = ops / nd->out_elems;
  return true;
}

/* ---- memo: kernel signature -> seconds ---- */
struct memo_slot {
  bool used;
  struct perfmod_kernel key;
  struct perfmod_estimate est;
};
struct memo {
  struct memo_slot *slots;
  size_t cap, n;
};

static uint64_t
mix (uint64_t h, uint64_t v)
{
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

static uint64_t
dbl_bits (double d)
{
  uint64_t u;
  memcpy (&u, &d, sizeof u);
  return u;
}

static uint64_t
kernel_hash (const struct perfmod_kernel *k)
{
  uint64_t h = (uint64_t) k->kclass;
  h = mix (h, (uint64_t) (uintptr_t) k->op);
  h = mix (h, (uint64_t) k->b);
  h = mix (h, (uint64_t) k->m);
  h = mix (h, (uint64_t) k->n);
  h = mix (h, (uint64_t) k->k);
  h = mix (h, (uint64_t) k->h);
  h = mix (h, dbl_bits (k->mem_per_output));
  h = mix (h, dbl_bits (k->ops_per_output));
  h = mix (h, dbl_bits (k->bytes));
  h = mix (h, dbl_bits (k->own_mem_per_output));
  h = mix (h, (uint64_t) k->isolated);
  h = mix (h, (uint64_t) k->kv_heads);
  h = mix (h, (uint64_t) k->window);
  h = mix (h, (uint64_t) k->causal);
  h = mix (h, (uint64_t) k->kv_shared);
  h = mix (h, (uint64_t) k->top_k);
  h = mix (h, (uint64_t) (uintptr_t) k->engine);
  h = mix (h, (uint64_t) k->dtype);
  h = mix (h, (uint64_t) k->input_quantised);
  h = mix (h, dbl_bits (k->weight_bytes));
  /* the low bits index the table: every input bit made to reach them
   * (MurmurHash3's finaliser; without it the probes ran long) */
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  return h ^ (h >> 33);
}

static bool
kernel_same (const struct perfmod_kernel *a, const struct perfmod_kernel *b)
{
  return a->kclass == b->kclass && a->op == b->op && a->b == b->b && a->m == b->m &&
         a->n == b->n && a->k == b->k && a->h == b->h &&
         a->mem_per_output == b->mem_per_output && a->ops_per_output == b->ops_per_output &&
         a->bytes == b->bytes && a->dtype == b->dtype &&
         a->own_mem_per_output == b->own_mem_per_output && a->isolated == b->isolated &&
         a->out_elem_bytes == b->out_elem_bytes && a->kv_heads == b->kv_heads &&
         a->window == b->window && a->causal == b->causal && a->top_k == b->top_k &&
         a->gated == b->gated && a->expert_load == b->expert_load && a->engine == b->engine &&
         a->experts_reached == b->experts_reached && a->ranks == b->ranks &&
         a->route_groups == b->route_groups && a->route_group_topk == b->route_group_topk &&
         a->kv_shared == b->kv_shared && a->input_quantised == b->input_quantised &&
         a->weight_bytes == b->weight_bytes;
}

struct memo *
kernel_memo_new (void)
{
  return xcalloc (1, sizeof (struct memo));
}

void
kernel_memo_free (struct memo *m)
{
  if (m == NULL)
    return;
  free (m->slots);
  free (m);
}

static struct memo_slot *
memo_slot (struct memo *m, const struct perfmod_kernel *k)
{
  size_t i;
  if (m->n * 2 >= m->cap) {
    struct memo old = *m;
    m->cap = m->cap ? m->cap * 2 : 256;
    m->slots = xcalloc (m->cap, sizeof *m->slots);
    m->n = 0;
    for (size_t j = 0; j < old.cap; j++)
      if (old.slots[j].used) {
        struct memo_slot *s = memo_slot (m, &old.slots[j].key);
        *s = old.slots[j];
        m->n++;
      }
    free (old.slots);
  }
  i = kernel_hash (k) & (m->cap - 1);
  while (m->slots[i].used && !kernel_same (&m->slots[i].key, k))
    i = (i + 1) & (m->cap - 1);
  return &m->slots[i];
}

/* Collectives in imported graphs: a ring over the run's group, until the
 * graph-level parallelism plugins cost them. */
static double
comm_seconds (const struct perfmod_kernel *k, const struct perfmod_gpu *gpu, int group)
{
  double bw = gpu->link_gbps * 1e9;
  if (bw <= 0 || group <= 1)
    return 0;
  if (strcmp (k->op, "sendrecv") == 0)
    return k->bytes / bw;
  return 2.0 * (group - 1) / group * k->bytes / bw;
}

static void
describe (const struct perfmod_kernel *k, char *buf, size_t len)
{
  snprintf (buf, len, "%s %s (b=%lld m=%lld n=%lld k=%lld h=%lld)", kclass_name (k->kclass),
            k->op, (long long) k->b, (long long) k->m, (long long) k->n, (long long) k->k,
            (long long) k->h);
}

/* predict.h: NCCL's model, or a calibrated predictor's own estimate of one
 * node's NCCL collective (where it cannot give one, the model). */
double
step_collective_seconds (struct plugin *pred, int coll, double bytes, int dim, int size,
                         int64_t stride, int gpus_per_node, bool engine,
                         const struct perfmod_gpu *gpu)
{
  int q, nodes;
  if (pred && pred->calib && !engine && size > 1 && bytes > 0 &&
      coll >= PERFMOD_COLL_ALLREDUCE && coll <= PERFMOD_COLL_ALLTOALL &&
      calib_covers (pred->calib, gpu, PERFMOD_KERNEL_COMM)) {
    group_layout (size, stride, gpus_per_node, &q, &nodes);
    if (nodes == 1) {          /* what the calibration's tables measure: one node's */
      struct perfmod_kernel k;
      struct perfmod_estimate e;
      memset (&k, 0, sizeof k);
      k.struct_size = sizeof k;
      k.kclass = PERFMOD_KERNEL_COMM;
      k.op = collective_nccl_name (coll);
      k.bytes = bytes;
      k.ranks = size;
      kernel_set_dtype (&k, PERFMOD_DTYPE_BF16);
      if (plugin_estimate (pred, &k, gpu, &e) == 0)
        return e.seconds;
    }
  }
  return group_collective_seconds (coll, bytes, dim, size, stride, gpus_per_node, engine, gpu);
}

/* A built graph's collective over its dimension's group (nd its node, pr
 * the run's precision: DeepEP's kernels are kernels of the graph). */
static double
group_comm_seconds (struct plugin *pred, const struct kop *op, const struct node *nd,
                    const struct perfmod_gpu *gpu, const struct comm_groups *gr,
                    const struct precision *pr)
{
  static const struct { const char *name; int coll; } colls[] = {
    { "allreduce", PERFMOD_COLL_ALLREDUCE }, { "reduce_scatter", PERFMOD_COLL_REDUCE_SCATTER },
    { "allgather", PERFMOD_COLL_ALLGATHER }, { "alltoall", PERFMOD_COLL_ALLTOALL },
    { "sendrecv", PERFMOD_COLL_SENDRECV },
  };
  bool ll, combine;
  if (phys_deepep_op (op->op, &ll, &combine)) {
    struct perfmod_kernel k;
    kop_to_kernel (op, nd, pr, &k);
    kernel_set_dtype (&k, op->dtype);     /* what DeepEP sends, not the run's */
    return group_deepep_seconds (&k, gr->size[op->dim], gr->stride[op->dim], gr->gpus_per_node,
                                 gpu);
  }
  for (size_t i = 0; i < sizeof colls / sizeof colls[0]; i++)
    if (strcmp (op->op, colls[i].name) == 0)
      return step_collective_seconds (pred, colls[i].coll, op->bytes, op->dim,
                                      gr->size[op->dim], gr->stride[op->dim], gr->gpus_per_node,
                                      gr->engine, gpu);
  return 0;
}

static int kernel_estimate (struct plugin *pred, struct memo *memo,
                            const struct perfmod_kernel *k, const struct perfmod_gpu *gpu,
                            const struct run_options *o, struct perfmod_estimate *out,
                            size_t *unique);

/* A fused attention kernel for a predictor with no model of it at its
 * dtype: its two matrix products over every query-key pair (the scores
 * and the context, as batched products over the heads), scaled to the
 * pairs a causal mask leaves; the backward PHYS_ATTN_BWD_WORK times
 * that.  No scores travel through memory, as in the fused kernel.  The
 * run's note names the predictor's ATTN kernels as predicted outside its
 * own model. */
static int
attention_as_products (struct plugin *pred, struct memo *memo, const struct perfmod_kernel *k,
                       const struct perfmod_gpu *gpu, const struct run_options *o,
                       struct perfmod_estimate *out, size_t *unique)
{
  struct perfmod_kernel p = *k;
  struct perfmod_estimate e[2];
  double scale = phys_attention_pairs (k) / ((double) k->m * (double) k->n);
  p.kclass = PERFMOD_KERNEL_BMM;
  p.op = intern ("bmm");
  p.b = k->b * k->h;
  p.h = p.kv_heads = p.window = 0;
  p.causal = 0;
  kernel_set_dtype (&p, k->dtype);
  p.n = k->k;                    /* scores: (m x d) (d x n) */
  p.k = k->n;
  if (kernel_estimate (pred, memo, &p, gpu, o, &e[0], unique) < 0)
    return -1;
  p.n = k->n;                    /* context: (m x n) (n x d) */
  p.k = k->k;
  if (kernel_estimate (pred, memo, &p, gpu, o, &e[1], unique) < 0)
    return -1;
  if (phys_attention_bwd (k))
    scale *= PHYS_ATTN_BWD_WORK;
  memset (out, 0, sizeof *out);
  out->seconds = scale * (e[0].seconds + e[1].seconds);
  out->spread = scale * (e[0].spread + e[1].spread);
  out->basis = "as its matrix products";
  __atomic_fetch_or (&pred->fallback[k->dtype], 1u << PERFMOD_KERNEL_ATTENTION,
                     __ATOMIC_RELAXED);
  return 0;
}

static int
kernel_estimate (struct plugin *pred, struct memo *memo, const struct perfmod_kernel *k,
                 const struct perfmod_gpu *gpu, const struct run_options *o,
                 struct perfmod_estimate *out, size_t *unique)
{
  struct memo_slot *s;
  if (k->kclass == PERFMOD_KERNEL_COMM) {
    memset (out, 0, sizeof *out);
    out->seconds = comm_seconds (k, gpu, o->comm_group);
    return 0;
  }
  if (k->kclass == PERFMOD_KERNEL_ATTENTION && !plugin_covers (pred, k->kclass, k->dtype))
    return attention_as_products (pred, memo, k, gpu, o, out, unique);
  s = memo_slot (memo, k);
  if (!s->used) {
    if (plugin_estimate (pred, k, gpu, &s->est) < 0) {
      char d[160];
      describe (k, d, sizeof d);
      pm_error ("%s: cannot predict %s on %s: %s", pred->p.name, d, gpu->name, pm_plugin_errmsg);
      return -1;
    }
    s->used = true;
    s->key = *k;
    memo->n++;
    (*unique)++;
  }
  *out = s->est;
  return 0;
}

/* Add one kernel's estimate to a node's phase. */
static void
node_add (struct phase_times *t, int phase, const struct perfmod_estimate *e)
{
  t->t[phase] += e->seconds * 1e3;
  t->spread[phase] += e->spread * 1e3;
  if (e->basis && t->basis == NULL)
    t->basis = e->basis;
}

/* A predicted kernel: into its node's phase, and to the caller's hook. */
static void
kernel_done (struct phase_times *t, int phase, const struct perfmod_kernel *k,
             const struct perfmod_estimate *e, double weight, const struct run_options *o)
{
  node_add (t, phase, e);
  if (o->on_kernel)
    o->on_kernel (o->on_kernel_ctx, k, weight, e->seconds);
}

int
predict_graph (struct plugin *pred, const struct graph *g, const struct perfmod_gpu *gpu,
               const struct run_options *o, struct prediction *out)
{
  struct memo own = { NULL, 0, 0 }, *memo = o->memo ? o->memo : &own;
  double sum[NPHASES] = { 0, 0, 0 };
  int rc = 0;

  memset (out, 0, sizeof *out);
  out->predictor = pred->p.name;
  out->per_node = xcalloc (g->n, sizeof *out->per_node);
  for (size_t i = 0; i < g->n && rc == 0; i++) {
    const struct node *nd = &g->nodes[i];
    double w = (double) graph_weight (g, i);
    struct phase_times *t = &out->per_node[i];
    for (int p = 0; p < NPHASES && rc == 0; p++) {
      struct perfmod_estimate e;
      struct perfmod_kernel k;
      if (!o->train && p != PHASE_FW)
        continue;
      if (nd->fused) {
        if (fused_kernel (nd, p, o->prec, &k)) {
          rc = kernel_estimate (pred, memo, &k, gpu, o, &e, &out->unique_kernels);
          if (rc == 0)
            kernel_done (t, p, &k, &e, w, o);
          out->kernels += (size_t) w;
        }
      }
      else
        for (size_t j = 0; j < nd->nops[p] && rc == 0; j++) {
          const struct kop *op = &nd->ops[p][j];
          if (op->quant && !precision_quantised (o->prec))
            continue;
          if (op->kclass == PERFMOD_KERNEL_COMM && op->dim != DIM_NONE) {
            double ms = o->groups ? group_comm_seconds (pred, op, nd, gpu, o->groups,
                                                        o->prec) * 1e3 : 0;
            memset (&e, 0, sizeof e);
            e.seconds = ms / 1e3;
            node_add (t, p, &e);
            out->comm_ms[op->dim][p] += w * ms;
            if (op->overlap == PERFMOD_OVERLAP_PHASE)
              out->overlap_ms[p] += w * ms;
            out->kernels += (size_t) w;
            continue;
          }
          kop_to_kernel (op, nd, o->prec, &k);
          rc = kernel_estimate (pred, memo, &k, gpu, o, &e, &out->unique_kernels);
          if (rc == 0)
            kernel_done (t, p, &k, &e, w, o);
          out->kernels += (size_t) w;
        }
      sum[p] += w * t->t[p];
      out->spread_ms += w * t->spread[p];
    }
  }
  free (own.slots);
  if (rc < 0) {
    prediction_free (out);
    return -1;
  }
  out->fw_ms = sum[PHASE_FW];
  out->bw_ms = sum[PHASE_BW];
  out->acc_ms = sum[PHASE_ACC];
  out->e2e_ms = out->fw_ms + out->bw_ms + out->acc_ms;
  return 0;
}

void
prediction_free (struct prediction *p)
{
  free (p->per_node);
  p->per_node = NULL;
}
