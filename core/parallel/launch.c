/* launch.c: a training strategy as the arguments that run it: Megatron-LM's command line, or the overrides of a Megatron-Bridge (NeMo) recipe. */
#include <config.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

struct out {
  char *buf;
  size_t len, n;
  bool cut;
};

static void put (struct out *o, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));

static void
put (struct out *o, const char *fmt, ...)
{
  va_list ap;
  int k;
  if (o->cut)
    return;
  va_start (ap, fmt);
  k = vsnprintf (o->buf + o->n, o->len - o->n, fmt, ap);
  va_end (ap);
  if (k < 0 || (size_t) k >= o->len - o->n) {
    o->cut = true;
    o->buf[o->n] = '\0';
    return;
  }
  o->n += (size_t) k;
}

/* One setting: Megatron-LM's flag (with its value, or alone for a switch
 * that is on) or the Bridge field=value.  value NULL: a switch. */
static void
arg (struct out *o, int tool, const char *flag, const char *field, const char *value)
{
  if ((tool == LAUNCH_MEGATRON ? flag : field) == NULL)   /* none in this tool */
    return;
  if (tool == LAUNCH_MEGATRON)
    put (o, value ? "%s%s %s" : "%s%s", o->n ? " " : "", flag, value);
  else
    put (o, "%s%s=%s", o->n ? " " : "", field, value ? value : "true");
}

static void
arg_int (struct out *o, int tool, const char *flag, const char *field, int64_t v)
{
  char num[24];
  snprintf (num, sizeof num, "%lld", (long long) v);
  arg (o, tool, flag, field, num);
}

/* Megatron-Core's --pipeline-model-parallel-layout of s's chunks in model
 * order: E the embedding, t*N N layers, L the loss, '|' between chunks
 * (chunk c on pipeline rank c mod pp), quoted for a shell. */
static void
layout (const struct strategy *s, int64_t layers, char *buf, size_t len)
{
  int chunks = s->pp * (s->vp > 1 ? s->vp : 1);
  size_t n = 0;
  n += (size_t) snprintf (buf, len, "'");
  for (int c = 0; c < chunks && n < len; c++) {
    int64_t k = strategy_chunk_layers (s, layers, c);
    n += (size_t) snprintf (buf + n, len - n, "%s%s", c ? "|" : "", c == 0 ? "E" : "");
    if (n < len && k > 0)
      n += (size_t) (k == 1 ? snprintf (buf + n, len - n, "t")
                     : snprintf (buf + n, len - n, "t*%lld", (long long) k));
    if (n < len && c == chunks - 1)
      n += (size_t) snprintf (buf + n, len - n, "L");
  }
  if (n < len)
    snprintf (buf + n, len - n, "'");
}

int
launch_args (int tool, const struct strategy *s, const struct model_cfg *m,
             const struct precision *pr, int64_t batch, int64_t seq, bool dp_overlap,
             char *buf, size_t len)
{
  static const char *const sharding[] = { NULL, NULL, "optim_grads", "optim_grads_params" };
  struct out o = { buf, len, 0, false };
  const char *why = s->kernels == KERNELS_EAGER
                    ? "kernels=eager is PyTorch running Hugging Face's modules, not Megatron"
                    : s->schedule == SCHED_GPIPE ? "Megatron runs 1F1B or interleaved 1F1B, not GPipe"
                    : s->etp > 1 ? "etp= above 1 is a serving engine's layout"
                    : s->tp > 1 && s->ep > 1 && !s->sp
                    ? "Megatron-Core needs sequence parallelism (sp=1) with tp > 1 and ep > 1"
                    : s->kernels == KERNELS_MEGATRON && tool == LAUNCH_NEMO
                    ? "Megatron-Bridge builds Megatron-Core's layer (kernels=te)" : NULL;
  char lay[16 * PM_MAX_STAGES + 8];

  if (len == 0)
    return -1;
  buf[0] = '\0';
  if (why) {
    pm_error ("--print %s: %s", tool == LAUNCH_MEGATRON ? "megatron" : "nemo", why);
    return -1;
  }
  arg_int (&o, tool, "--tensor-model-parallel-size", "model.tensor_model_parallel_size", s->tp);
  arg_int (&o, tool, "--pipeline-model-parallel-size", "model.pipeline_model_parallel_size",
           s->pp);
  if (strategy_uneven (s)) {            /* every chunk's layers, as perfmod splits them */
    layout (s, m->layers, lay, sizeof lay);
    arg (&o, tool, "--pipeline-model-parallel-layout", "model.pipeline_model_parallel_layout",
         lay);
  }
  else if (s->vp > 1)
    arg_int (&o, tool, "--num-virtual-stages-per-pipeline-rank",
             "model.virtual_pipeline_model_parallel_size", s->vp);
  if (s->cp > 1)
    arg_int (&o, tool, "--context-parallel-size", "model.context_parallel_size", s->cp);
  if (s->ep > 1)
    arg_int (&o, tool, "--expert-model-parallel-size", "model.expert_model_parallel_size", s->ep);
  if (s->etp == 1)                       /* whole experts (the default is tp) */
    arg_int (&o, tool, "--expert-tensor-parallel-size", "model.expert_tensor_parallel_size", 1);
  if (s->sp)
    arg (&o, tool, "--sequence-parallel", "model.sequence_parallel", NULL);
  arg_int (&o, tool, "--micro-batch-size", "train.micro_batch_size", s->mbs);
  arg_int (&o, tool, "--global-batch-size", "train.global_batch_size", batch);
  arg_int (&o, tool, "--seq-length", "dataset.sequence_length", seq);
  if (strategy_shards (s)) {
    if (s->zero >= 1)
      arg (&o, tool, "--use-distributed-optimizer", "ddp.use_distributed_optimizer", NULL);
    if (s->zero >= 2) {                 /* Megatron-FSDP's ZeRO-2 and ZeRO-3 */
      arg (&o, tool, "--use-megatron-fsdp", "ddp.use_megatron_fsdp", NULL);
      arg (&o, tool, "--data-parallel-sharding-strategy", "ddp.data_parallel_sharding_strategy",
           sharding[s->zero]);
    }
    if (dp_overlap) {
      arg (&o, tool, "--overlap-grad-reduce", "ddp.overlap_grad_reduce", NULL);
      if (s->zero >= 1)
        arg (&o, tool, "--overlap-param-gather", "ddp.overlap_param_gather", NULL);
    }
  }
  if (s->grad_low && precision_mixed (pr)) {   /* the Bridge sets both */
    arg (&o, tool, "--grad-reduce-in-bf16", NULL, NULL);
    arg (&o, tool, NULL, "ddp.grad_reduce_in_fp32", "false");
    arg (&o, tool, NULL, "mixed_precision.grad_reduce_in_fp32", "false");
  }
  if (s->recompute != RECOMPUTE_NONE)
    arg (&o, tool, "--recompute-granularity", "model.recompute_granularity",
         recompute_name (s->recompute));
  if (s->recompute == RECOMPUTE_SELECTIVE && s->recompute_modules) {
    /* Megatron-LM takes the modules as words, the Bridge as a list */
    char mods[80], list[96];
    rmod_names (s->recompute_modules, mods, sizeof mods);
    for (char *c = mods; *c; c++)
      if (*c == '+')
        *c = tool == LAUNCH_MEGATRON ? ' ' : ',';
    snprintf (list, sizeof list, tool == LAUNCH_MEGATRON ? "%s" : "[%s]", mods);
    arg (&o, tool, "--recompute-modules", "model.recompute_modules", list);
  }
  if (s->recompute == RECOMPUTE_FULL) {
    arg (&o, tool, "--recompute-method", "model.recompute_method", "uniform");
    arg_int (&o, tool, "--recompute-num-layers", "model.recompute_num_layers", 1);
  }
  if (s->tpo)
    arg (&o, tool, "--tp-comm-overlap", "comm_overlap.tp_comm_overlap", NULL);
  if (s->mtp > 0)
    arg_int (&o, tool, "--mtp-num-layers", "model.mtp_num_layers", s->mtp);
  if (m->experts > 0) {
    arg (&o, tool, "--moe-grouped-gemm", NULL, NULL);
    arg (&o, tool, "--moe-token-dispatcher-type", "model.moe_token_dispatcher_type",
         dispatcher_name (s->dispatcher));
    if (s->dispatcher == PERFMOD_DISPATCH_FLEX)
      arg (&o, tool, "--moe-flex-dispatcher-backend", "model.moe_flex_dispatcher_backend",
           "deepep");
    if (s->a2a_overlap)
      arg (&o, tool, "--overlap-moe-expert-parallel-comm",
           "comm_overlap.overlap_moe_expert_parallel_comm", NULL);
    if (s->shared_overlap)
      arg (&o, tool, "--moe-shared-expert-overlap", "model.moe_shared_expert_overlap", NULL);
  }
  arg (&o, tool, "--transformer-impl", NULL,
       s->kernels == KERNELS_TE ? "transformer_engine" : "local");
  /* the precision: Transformer Engine's fp8, e4m3 forward and e5m2
   * backward, in a bf16 model: delayed scaling (fp8), per-tensor current
   * scaling (fp8-cs) */
  if (strcmp (pr->name, "amp-fp16") == 0) {
    arg (&o, tool, "--fp16", NULL, NULL);
    arg (&o, tool, NULL, "mixed_precision", "fp16_mixed");
  }
  else if (strcmp (pr->name, "bf16") == 0) {
    arg (&o, tool, "--bf16", NULL, NULL);
    arg (&o, tool, NULL, "mixed_precision", "bf16_mixed");
  }
  else if (precision_quantised (pr)) {
    arg (&o, tool, "--bf16", NULL, NULL);
    arg (&o, tool, "--fp8-format", NULL, "hybrid");
    arg (&o, tool, "--fp8-recipe", NULL, pr->cast_amax ? "tensorwise" : "delayed");
    arg (&o, tool, NULL, "mixed_precision", pr->cast_amax ? "bf16_with_fp8_current_scaling_mixed"
                                                          : "bf16_with_fp8_mixed");
  }
  if (o.cut) {
    pm_error ("--print: the arguments do not fit in %zu bytes", len);
    return -1;
  }
  return 0;
}
