/* kernel.c: perfmod kernel: one kernel (gemm, bmm, attention, decode, elementwise, norm, softmax, copy, collective, moe, deepep) predicted by each predictor asked for. */
#include <config.h>

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "physics.h"

static void
kernel_usage (FILE *fp)
{
  fputs ("Usage: perfmod kernel --op OP --gpu NAME [--dtype D] [--predictor LIST]\n"
         "               [--format table|csv|json] [--calibration FILE] [--plugin-path DIR]...\n"
         "               [--plugin-opt N:K=V]...\n"
         "  gemm         --m M --n N --k K [--input-quantised]\n"
         "                                          (M x K) by (K x N); in fp8, block-scaled\n"
         "                                          fp8 or nvfp4 a serving engine's call, its\n"
         "                                          input quantised first (--input-quantised:\n"
         "                                          the GEMM alone, as a training step's are)\n"
         "  bmm          --batch B --m M --n N --k K [--input-quantised]\n"
         "  attention    --batch B --seq S --heads H [--kv-heads G] --head-dim D\n"
         "               [--window W] [--no-causal] [--backward]\n"
         "                                          fused prefill over S tokens (or its backward)\n"
         "  decode       --batch B --kv-len L --heads H [--kv-heads G] --head-dim D\n"
         "               [--window W] [--latent]     one token against L cached ones (--latent:\n"
         "                                          the keys are the values, read once, as\n"
         "                                          MLA's latent: --kv-heads 1 --head-dim 576)\n"
         "  elementwise  --rows R --cols C [--fn add|mul|gelu|relu|silu_mul|rope]\n"
         "  norm         --rows R --cols C           layer norm or RMSNorm\n"
         "  softmax      --rows R --cols C\n"
         "  copy         --bytes N                   a copy or cast moving N bytes in all\n"
         "  collective   --coll all_reduce|all_gather|reduce_scatter|alltoall|send_recv\n"
         "               --bytes N --ranks G         one buffer of N bytes over G GPUs\n"
         "  moe          --tokens T --hidden D --ffn F --experts E --top-k K [--ep N]\n"
         "               [--engine vllm|sglang|trtllm] [--no-gate] [--load L]\n"
         "                                          a MoE layer's routed experts on one of\n"
         "                                          N ranks, fused (F: each expert's width;\n"
         "                                          --dtype mxfp4: MXFP4 experts widened to bf16)\n"
         "  deepep       --coll dispatch|combine [--ll] --tokens T --hidden D --experts E\n"
         "               --top-k K --ranks R [--sms S] [--groups G --group-top-k g]\n"
         "                                          DeepEP's normal (or low-latency) kernel: T\n"
         "                                          tokens a rank over R ranks, on S SMs, each\n"
         "                                          token's experts in g of G groups; the\n"
         "                                          dispatch sends fp8, the combine bf16\n"
         "--dtype defaults to bf16 where the GPU has bf16 matrix units, else fp16, else fp32.\n",
         fp);
}

struct kopts {
  const char *op, *gpu, *dtype, *predictors, *format, *fn, *coll, *engine;
  const char *calibration;  /* --calibration FILE: perfmod calibrate's corrections */
  int64_t m, n, k, batch, seq, heads, kv_heads, head_dim, kv_len, window, rows, cols, ranks;
  int64_t tokens, hidden, ffn, experts, top_k, ep, sms;
  int64_t groups, group_top_k; /* deepep: group-limited routing (0: none) */
  double bytes, load;
  bool no_gate;
  bool ll;               /* deepep: the low-latency kernels */
  bool no_causal;
  bool backward;         /* attention: the backward kernel */
  bool latent;           /* decode: keys and values one tensor (MLA's latent) */
  bool input_quantised;  /* gemm, bmm: the GEMM alone, its input quantised apart */
  char **paths, **popts;
  size_t npaths, npopts;
};

static bool
opt_int (const char *name, const char *arg, int64_t min, int64_t *out)
{
  if (!parse_int64 (arg, out) || *out < min || *out > ((int64_t) 1 << 40)) {
    pm_error ("--%s '%s': expected an integer from %lld to 2^40", name, arg, (long long) min);
    return false;
  }
  return true;
}

/* A missing dimension the op needs: reported, naming the option. */
static bool
need (int64_t v, const char *opt, const char *op)
{
  if (v > 0)
    return true;
  pm_error ("kernel --op %s needs --%s", op, opt);
  return false;
}

/* The kernel's class and shape the options describe; -1 after a message. */
static int
build_shape (const struct kopts *o, int dtype, struct perfmod_kernel *k)
{
  static const struct { const char *fn; int inputs; double ops; } fns[] = {
    { "add", 2, 1 }, { "mul", 2, 1 }, { "gelu", 1, 8 }, { "relu", 1, 1 }, { "silu_mul", 2, 5 },
    { "rope", 1, 3 },
  };
  memset (k, 0, sizeof *k);
  k->struct_size = sizeof *k;
  k->op = o->op;
  if (o->backward && strcmp (o->op, "attention") != 0) {
    pm_error ("--backward: only fused attention's backward is its own kernel (--op attention)");
    return -1;
  }
  if (o->latent && strcmp (o->op, "decode") != 0) {
    pm_error ("--latent: a decode step's latent attention (--op decode)");
    return -1;
  }
  if (o->input_quantised && strcmp (o->op, "gemm") != 0 && strcmp (o->op, "bmm") != 0) {
    pm_error ("--input-quantised: a GEMM's (--op gemm or bmm)");
    return -1;
  }
  if (strcmp (o->op, "gemm") == 0 || strcmp (o->op, "bmm") == 0) {
    bool bmm = o->op[0] == 'b';
    if (!need (o->m, "m", o->op) || !need (o->n, "n", o->op) || !need (o->k, "k", o->op) ||
        (bmm && !need (o->batch, "batch", o->op)))
      return -1;
    /* perfmod's (M, N, K): an (M x N) input through a Linear(N -> K) */
    k->kclass = bmm ? PERFMOD_KERNEL_BMM : PERFMOD_KERNEL_LINEAR;
    k->op = bmm ? "bmm" : "linear";
    k->b = bmm ? o->batch : 1;
    k->m = o->m;
    k->n = o->k;
    k->k = o->n;
    k->input_quantised = o->input_quantised;
    return 0;
  }
  if (strcmp (o->op, "copy") == 0) {
    if (!(o->bytes > 0))
      return pm_error ("kernel --op copy needs --bytes"), -1;
    k->kclass = PERFMOD_KERNEL_MEMORY;
    k->op = "copy";
    k->bytes = o->bytes;
    return 0;
  }
  if (strcmp (o->op, "attention") == 0 || strcmp (o->op, "decode") == 0) {
    bool decode = o->op[0] == 'd';
    if (!need (o->batch, "batch", o->op) || !need (o->heads, "heads", o->op) ||
        !need (o->head_dim, "head-dim", o->op) ||
        !need (decode ? o->kv_len : o->seq, decode ? "kv-len" : "seq", o->op))
      return -1;
    if (o->kv_heads > o->heads || (o->kv_heads > 0 && o->heads % o->kv_heads)) {
      pm_error ("--kv-heads %lld: must divide --heads %lld", (long long) o->kv_heads,
                (long long) o->heads);
      return -1;
    }
    k->kclass = PERFMOD_KERNEL_ATTENTION;
    k->op = decode ? "attention_decode" : o->backward ? "attention_bwd" : "attention";
    k->b = o->batch;
    k->m = decode ? 1 : o->seq;
    k->n = decode ? o->kv_len : o->seq;
    k->k = o->head_dim;
    k->h = o->heads;
    k->kv_heads = o->kv_heads > 0 ? o->kv_heads : o->heads;
    k->window = o->window;
    k->causal = !decode && !o->no_causal;
    k->kv_shared = o->latent;
    return 0;
  }
  if (strcmp (o->op, "elementwise") == 0 || strcmp (o->op, "norm") == 0 ||
      strcmp (o->op, "softmax") == 0) {
    int inputs = 1;
    double ops = o->op[0] == 'n' ? 6 : 5;
    if (!need (o->rows, "rows", o->op) || !need (o->cols, "cols", o->op))
      return -1;
    k->kclass = o->op[0] == 'e' ? PERFMOD_KERNEL_ELEMENTWISE
              : o->op[0] == 'n' ? PERFMOD_KERNEL_LAYERNORM : PERFMOD_KERNEL_SOFTMAX;
    k->op = o->op[0] == 'n' ? "ln" : o->op;
    if (o->op[0] == 'e') {
      const char *fn = o->fn ? o->fn : "add";
      size_t i;
      for (i = 0; i < sizeof fns / sizeof fns[0] && strcmp (fns[i].fn, fn); i++)
        ;
      if (i == sizeof fns / sizeof fns[0]) {
        pm_error ("--fn '%s': expected add, mul, gelu, relu, silu_mul or rope", fn);
        return -1;
      }
      k->op = fns[i].fn;
      inputs = fns[i].inputs;
      ops = fns[i].ops;
    }
    k->b = o->rows;
    k->h = o->cols;
    k->mem_per_output = (inputs + 1) * dtype_bytes (dtype);
    k->own_mem_per_output = k->mem_per_output;
    k->ops_per_output = ops;
    return 0;
  }
  if (strcmp (o->op, "collective") == 0) {
    size_t i;
    if (o->coll == NULL) {
      pm_error ("kernel --op collective needs --coll");
      return -1;
    }
    for (i = 0; i < PHYS_COMM_NOPS && strcmp (phys_comm_ops[i], o->coll); i++)
      ;
    if (i == PHYS_COMM_NOPS) {
      pm_error ("--coll '%s': expected all_reduce, all_gather, reduce_scatter, alltoall or "
                "send_recv", o->coll);
      return -1;
    }
    if (!(o->bytes > 0) || !need (o->ranks, "ranks", o->op))
      return o->bytes > 0 ? -1 : (pm_error ("kernel --op collective needs --bytes"), -1);
    if (o->ranks < 2 || o->ranks > 1 << 20) {
      pm_error ("--ranks %lld: a collective takes 2 to 2^20 GPUs", (long long) o->ranks);
      return -1;
    }
    k->kclass = PERFMOD_KERNEL_COMM;
    k->op = phys_comm_ops[i];
    k->bytes = o->bytes;
    k->ranks = (int) o->ranks;
    return 0;
  }
  if (strcmp (o->op, "moe") == 0) {
    const struct serve_engine *eng = o->engine ? serve_engine_find (o->engine) : NULL;
    int64_t ep = o->ep > 0 ? o->ep : 1;
    if (!need (o->tokens, "tokens", o->op) || !need (o->hidden, "hidden", o->op) ||
        !need (o->ffn, "ffn", o->op) || !need (o->experts, "experts", o->op) ||
        !need (o->top_k, "top-k", o->op))
      return -1;
    if (o->top_k > o->experts || o->experts % ep != 0) {
      pm_error (o->top_k > o->experts ? "--top-k %lld: more than the %lld experts"
                : "--ep %lld does not divide the %lld experts",
                (long long) (o->top_k > o->experts ? o->top_k : ep), (long long) o->experts);
      return -1;
    }
    if (o->engine && eng == NULL) {
      pm_error ("--engine '%s': expected %s", o->engine, serve_engine_names);
      return -1;
    }
    k->engine = eng ? eng->name : NULL;
    k->kclass = PERFMOD_KERNEL_MOE;
    k->m = o->tokens;
    k->n = o->hidden;
    k->k = o->ffn;
    k->b = o->experts;
    k->h = o->experts / ep;
    k->top_k = o->top_k;
    k->gated = !o->no_gate;
    k->expert_load = o->load > 1 ? o->load : 1;
    return 0;
  }
  if (strcmp (o->op, "deepep") == 0) {
    bool combine = o->coll && strcmp (o->coll, "combine") == 0;
    if (o->coll == NULL || (!combine && strcmp (o->coll, "dispatch") != 0)) {
      pm_error ("kernel --op deepep needs --coll dispatch or --coll combine");
      return -1;
    }
    if (!need (o->tokens, "tokens", o->op) || !need (o->hidden, "hidden", o->op) ||
        !need (o->experts, "experts", o->op) || !need (o->top_k, "top-k", o->op) ||
        !need (o->ranks, "ranks", o->op))
      return -1;
    if (o->ranks < 2 || o->ranks > 1 << 20) {
      pm_error ("--ranks %lld: DeepEP takes 2 to 2^20 GPUs", (long long) o->ranks);
      return -1;
    }
    if (o->top_k > o->experts || o->top_k > 1024) {
      pm_error ("--top-k %lld: more than the %lld experts (or 1024)", (long long) o->top_k,
                (long long) o->experts);
      return -1;
    }
    if (o->ll && o->sms > 0) {
      pm_error ("--sms: the low-latency kernels take the SMs they need");
      return -1;
    }
    if ((o->groups > 0) != (o->group_top_k > 0) || o->group_top_k > o->groups ||
        (o->groups > 0 && (o->groups > 1024 || o->experts % o->groups != 0 ||
                           o->top_k > o->group_top_k * (o->experts / o->groups)))) {
      pm_error ("--groups %lld --group-top-k %lld: give both, g of G groups, G (at most 1024) "
                "dividing the %lld experts, g groups holding the top %lld",
                (long long) o->groups, (long long) o->group_top_k, (long long) o->experts,
                (long long) o->top_k);
      return -1;
    }
    k->kclass = PERFMOD_KERNEL_COMM;
    k->op = phys_deepep_ops[o->ll][combine];
    kernel_set_dtype (k, combine ? PERFMOD_DTYPE_BF16 : PERFMOD_DTYPE_FP8);
    k->m = o->tokens;
    k->k = o->hidden;
    k->h = o->experts;
    k->top_k = o->top_k;
    k->ranks = (int) o->ranks;
    k->b = o->sms;
    k->route_groups = (int) o->groups;
    k->route_group_topk = (int) o->group_top_k;
    k->bytes = (double) o->tokens * (double) o->top_k * (double) o->hidden * k->elem_bytes;
    return 0;
  }
  pm_error ("--op '%s': expected gemm, bmm, attention, decode, elementwise, norm, softmax, "
            "copy, collective, moe or deepep", o->op);
  return -1;
}

/* The kernel the options describe, in dtype; -1 after a message. */
static int
build_kernel (const struct kopts *o, int dtype, struct perfmod_kernel *k)
{
  if (build_shape (o, dtype, k) < 0)
    return -1;
  if (strcmp (o->op, "deepep") != 0)     /* DeepEP's kernels have their own dtypes */
    kernel_set_dtype (k, dtype);
  return 0;
}

static int
parse (int argc, char **argv, struct kopts *o)
{
  enum { K_OP = 256, K_GPU, K_DTYPE, K_PRED, K_FORMAT, K_FN, K_COLL, K_M, K_N, K_K, K_BATCH,
         K_SEQ, K_HEADS, K_KVH, K_HD, K_KVLEN, K_WIN, K_ROWS, K_COLS, K_RANKS, K_BYTES,
         K_NOCAUSAL, K_BACKWARD, K_PPATH, K_POPT, K_TOKENS, K_HIDDEN, K_FFN, K_EXPERTS, K_TOPK,
         K_EP, K_ENGINE, K_NOGATE, K_LOAD, K_LL, K_SMS, K_GROUPS, K_GROUPTOPK, K_CALIB,
         K_LATENT, K_INQ };
  static const struct option opts[] = {
    { "op", required_argument, NULL, K_OP }, { "gpu", required_argument, NULL, K_GPU },
    { "dtype", required_argument, NULL, K_DTYPE },
    { "predictor", required_argument, NULL, K_PRED },
    { "format", required_argument, NULL, K_FORMAT }, { "fn", required_argument, NULL, K_FN },
    { "calibration", required_argument, NULL, K_CALIB },
    { "coll", required_argument, NULL, K_COLL }, { "m", required_argument, NULL, K_M },
    { "n", required_argument, NULL, K_N }, { "k", required_argument, NULL, K_K },
    { "batch", required_argument, NULL, K_BATCH }, { "seq", required_argument, NULL, K_SEQ },
    { "heads", required_argument, NULL, K_HEADS },
    { "kv-heads", required_argument, NULL, K_KVH },
    { "head-dim", required_argument, NULL, K_HD },
    { "kv-len", required_argument, NULL, K_KVLEN },
    { "window", required_argument, NULL, K_WIN }, { "rows", required_argument, NULL, K_ROWS },
    { "cols", required_argument, NULL, K_COLS }, { "ranks", required_argument, NULL, K_RANKS },
    { "bytes", required_argument, NULL, K_BYTES },
    { "no-causal", no_argument, NULL, K_NOCAUSAL },
    { "backward", no_argument, NULL, K_BACKWARD }, { "latent", no_argument, NULL, K_LATENT },
    { "input-quantised", no_argument, NULL, K_INQ },
    { "tokens", required_argument, NULL, K_TOKENS }, { "hidden", required_argument, NULL, K_HIDDEN },
    { "ffn", required_argument, NULL, K_FFN }, { "experts", required_argument, NULL, K_EXPERTS },
    { "top-k", required_argument, NULL, K_TOPK }, { "ep", required_argument, NULL, K_EP },
    { "engine", required_argument, NULL, K_ENGINE }, { "no-gate", no_argument, NULL, K_NOGATE },
    { "load", required_argument, NULL, K_LOAD }, { "ll", no_argument, NULL, K_LL },
    { "sms", required_argument, NULL, K_SMS },
    { "groups", required_argument, NULL, K_GROUPS },
    { "group-top-k", required_argument, NULL, K_GROUPTOPK },
    { "plugin-path", required_argument, NULL, K_PPATH },
    { "plugin-opt", required_argument, NULL, K_POPT },
    { "verbose", no_argument, NULL, 'v' }, { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 }
  };
  int opt;
  optind = 1;
  opterr = 0;                    /* getopt_error says it in one line */
  while ((opt = pm_getopt_long (argc, argv, ":hv", opts)) != -1) {
    bool ok = true;
    switch (opt) {
    case K_OP: o->op = optarg; break;
    case K_GPU: o->gpu = optarg; break;
    case K_DTYPE: o->dtype = optarg; break;
    case K_PRED: o->predictors = optarg; break;
    case K_FORMAT: o->format = optarg; break;
    case K_CALIB: o->calibration = optarg; break;
    case K_FN: o->fn = optarg; break;
    case K_COLL: o->coll = optarg; break;
    case K_M: ok = opt_int ("m", optarg, 1, &o->m); break;
    case K_N: ok = opt_int ("n", optarg, 1, &o->n); break;
    case K_K: ok = opt_int ("k", optarg, 1, &o->k); break;
    case K_BATCH: ok = opt_int ("batch", optarg, 1, &o->batch); break;
    case K_SEQ: ok = opt_int ("seq", optarg, 1, &o->seq); break;
    case K_HEADS: ok = opt_int ("heads", optarg, 1, &o->heads); break;
    case K_KVH: ok = opt_int ("kv-heads", optarg, 1, &o->kv_heads); break;
    case K_HD: ok = opt_int ("head-dim", optarg, 1, &o->head_dim); break;
    case K_KVLEN: ok = opt_int ("kv-len", optarg, 1, &o->kv_len); break;
    case K_WIN: ok = opt_int ("window", optarg, 0, &o->window); break;
    case K_ROWS: ok = opt_int ("rows", optarg, 1, &o->rows); break;
    case K_COLS: ok = opt_int ("cols", optarg, 1, &o->cols); break;
    case K_RANKS: ok = opt_int ("ranks", optarg, 1, &o->ranks); break;
    case K_BYTES:
      if (!parse_double (optarg, &o->bytes) || !(o->bytes >= 1) || o->bytes > 1e15) {
        pm_error ("--bytes '%s': expected a number of bytes from 1 to 1e15", optarg);
        ok = false;
      }
      break;
    case K_NOCAUSAL: o->no_causal = true; break;
    case K_LATENT: o->latent = true; break;
    case K_INQ: o->input_quantised = true; break;
    case K_TOKENS: ok = opt_int ("tokens", optarg, 1, &o->tokens); break;
    case K_HIDDEN: ok = opt_int ("hidden", optarg, 1, &o->hidden); break;
    case K_FFN: ok = opt_int ("ffn", optarg, 1, &o->ffn); break;
    case K_EXPERTS: ok = opt_int ("experts", optarg, 1, &o->experts); break;
    case K_TOPK: ok = opt_int ("top-k", optarg, 1, &o->top_k); break;
    case K_EP: ok = opt_int ("ep", optarg, 1, &o->ep); break;
    case K_ENGINE: o->engine = optarg; break;
    case K_NOGATE: o->no_gate = true; break;
    case K_LL: o->ll = true; break;
    case K_SMS: ok = opt_int ("sms", optarg, 1, &o->sms); break;
    case K_GROUPS: ok = opt_int ("groups", optarg, 1, &o->groups); break;
    case K_GROUPTOPK: ok = opt_int ("group-top-k", optarg, 1, &o->group_top_k); break;
    case K_LOAD:
      if (!parse_double (optarg, &o->load) || !(o->load >= 1) || o->load > 1e6) {
        pm_error ("--load '%s': expected the busiest rank's load over the even share, 1 or more",
                  optarg);
        ok = false;
      }
      break;
    case K_BACKWARD: o->backward = true; break;
    case K_PPATH: ptrv_push (&o->paths, &o->npaths, optarg); break;
    case K_POPT: ptrv_push (&o->popts, &o->npopts, optarg); break;
    case 'v': pm_verbose = 1; break;
    case 'h': kernel_usage (stdout); return 1;
    default: getopt_error (opt, argv, opts, "perfmod kernel"); ok = false; break;
    }
    if (!ok)
      return -1;
  }
  if (optind < argc) {
    pm_error ("kernel: unexpected argument '%s'", argv[optind]);
    return -1;
  }
  if (o->op == NULL) {
    pm_error ("kernel needs --op (gemm, bmm, attention, decode, elementwise, norm, softmax, "
              "copy, collective, moe, deepep)");
    return -1;
  }
  if (strcmp (o->format, "table") && strcmp (o->format, "csv") && strcmp (o->format, "json")) {
    pm_error ("--format '%s': expected table, csv or json", o->format);
    return -1;
  }
  return 0;
}

int
kernel_main (int argc, char **argv)
{
  struct kopts o;
  struct gpu_db gpus = { NULL, 0 };
  struct plugin_set set = { NULL, 0 };
  struct calibration cal;
  const struct gpu_entry *ge;
  struct perfmod_kernel k;
  struct phys_cost pc;
  char **preds = NULL;
  int dtype, rc = EXIT_USAGE, p;
  bool json, csv;

  memset (&o, 0, sizeof o);
  memset (&cal, 0, sizeof cal);
  o.format = "table";
  if ((p = parse (argc, argv, &o)) != 0) {
    free (o.paths);
    free (o.popts);
    return p < 0 ? EXIT_USAGE : 0;
  }
  json = strcmp (o.format, "json") == 0;
  csv = strcmp (o.format, "csv") == 0;
  if (gpu_db_load_data (&gpus) < 0)
    goto out;
  if ((ge = gpu_db_find (&gpus, o.gpu ? o.gpu : "h100")) == NULL) {
    pm_error ("--gpu '%s': no such GPU (see perfmod gpus)", o.gpu);
    goto out;
  }
  /* the inference precision of that name: its GEMMs' dtype, and the
   * experts' own width where it keeps them weight-only (mxfp4) */
  const struct precision *pr = o.dtype ? precision_infer_named (o.dtype) : NULL;
  if (o.dtype && pr == NULL) {
    pm_error ("--dtype '%s': expected " DTYPE_NAMES_TEXT " (mxfp4 for --op moe)", o.dtype);
    goto out;
  }
  if (precision_weight_only_experts (pr) && strcmp (o.op, "moe") != 0) {
    pm_error ("--dtype %s: MXFP4 experts widened to bf16, for --op moe", o.dtype);
    goto out;
  }
  dtype = pr ? pr->gemm : default_dtype (&ge->gpu);
  if (o.dtype && !gpu_has_units (&ge->gpu, dtype)) {
    pm_error ("--dtype %s: %s has no %s matrix units in gpus.d", o.dtype, ge->name,
              dtype_name (dtype));
    goto out;
  }
  if (build_kernel (&o, dtype, &k) < 0)
    goto out;
  if (precision_weight_only_experts (pr))
    k.weight_bytes = pr->expert_bytes;
  if (strcmp (o.op, "deepep") == 0) {
    if (o.dtype && dtype != k.dtype) {
      pm_error ("--dtype %s: DeepEP's %s sends %s", o.dtype, o.coll, dtype_name (k.dtype));
      goto out;
    }
    dtype = k.dtype;
  }
  if (plugins_open (&set, o.paths, o.npaths, o.popts, o.npopts) < 0 ||
      (o.calibration && calib_attach (o.calibration, &set, &cal) < 0))
    goto out;
  preds = strv_split (o.predictors ? o.predictors : "roofline,tile-mlp", ',');
  for (size_t i = 0; preds[i]; i++)
    if (predictor_find (&set, preds[i]) == NULL)
      goto out;
  phys_cost_of (&k, &ge->gpu, &pc);
  /* Every prediction first: a failure prints nothing but its reason. */
  size_t np = strv_len (preds);
  struct perfmod_estimate *est = xcalloc (np, sizeof *est);
  for (size_t i = 0; i < np; i++)
    if (plugin_estimate (predictor_find (&set, preds[i]), &k, &ge->gpu, &est[i]) < 0) {
      pm_error ("%s: %s", preds[i], pm_plugin_errmsg);
      free (est);
      /* a predictor's bad input file is bad input; a kernel it cannot predict is not */
      rc = plugins_input_fault () ? EXIT_USAGE : EXIT_RUNTIME;
      goto out;
    }
  double moved = k.kclass == PERFMOD_KERNEL_COMM ? pc.comm_bytes : pc.bytes;
  char calib_text[512] = "";
  if (cal.gpu) {
    calib_text[0] = ';';
    calib_text[1] = ' ';
    calib_describe (&cal, o.calibration, calib_text + 2, sizeof calib_text - 2);
  }
  /* the dtype as printed: mxfp4 experts run a bf16 kernel */
  const char *shown = k.weight_bytes > 0 ? "mxfp4" : dtype_name (dtype);
  if (!json && !csv)
    printf ("perfmod kernel: %s, %s, on %s; %.4g GFLOP, %.4g MB%s\n"
            "assumed: %s%s%s\n\n%-12s %12s %10s %10s  %-19s  %s\n", o.op, shown,
            ge->name, pc.flops / 1e9, moved / 1e6,
            k.kclass == PERFMOD_KERNEL_COMM ? " over the link per GPU" : "",
            o.dtype ? "" : "--dtype ", o.dtype ? "nothing" : dtype_name (dtype), calib_text,
            "predictor", "ms", "TFLOP/s", "GB/s", "80% interval (ms)", "note");
  else if (csv)
    printf ("predictor,op,dtype,gpu,ms,spread_ms,tflops,gbps,note,low_ms,high_ms\n");
  json_t *root = NULL, *arr = NULL;
  if (json) {
    root = json_envelope ("kernel");
    arr = json_array ();
    json_object_set_new (root, "op", json_string (o.op));
    json_object_set_new (root, "dtype", json_string (shown));
    json_object_set_new (root, "gpu", json_string (ge->name));
    json_object_set_new (root, "flops", json_count (pc.flops));
    json_object_set_new (root, "bytes", json_count (moved));
  }
  for (size_t i = 0; i < np; i++) {
    struct plugin *pl = predictor_find (&set, preds[i]);
    char note[160] = "";
    double ms = est[i].seconds * 1e3, sec = est[i].seconds > 0 ? est[i].seconds : INFINITY;
    if (pl->p.dtypes && !(pl->p.dtypes (pl->state, k.kclass) & (1u << dtype)))
      snprintf (note, sizeof note, "not trained on %s %s kernels", dtype_name (dtype),
                kclass_name (k.kclass));
    else if (est[i].basis)
      snprintf (note, sizeof note, "%s", est[i].basis);
    /* the interval where the predictor measured one: "-" / empty / null */
    bool iv = est[i].high > 0;
    char lo[32] = "", hi[32] = "", span[48] = "-";
    if (iv) {
      snprintf (lo, sizeof lo, "%.9g", est[i].low * 1e3);
      snprintf (hi, sizeof hi, "%.9g", est[i].high * 1e3);
      snprintf (span, sizeof span, "%.4f-%.4f", est[i].low * 1e3, est[i].high * 1e3);
    }
    if (json)                           /* null: no spread, interval or note */
      json_array_append_new (arr, json_pack ("{s:s, s:f, s:o, s:f, s:f, s:o, s:o, s:o}",
                                             "predictor", preds[i], "ms", ms, "spread_ms",
                                             est[i].spread > 0 ? json_real (est[i].spread * 1e3)
                                                               : json_null (),
                                             "tflops", pc.flops / sec / 1e12, "gbps",
                                             moved / sec / 1e9, "note",
                                             note[0] ? json_string (note) : json_null (),
                                             "low_ms", iv ? json_real (est[i].low * 1e3)
                                                          : json_null (),
                                             "high_ms", iv ? json_real (est[i].high * 1e3)
                                                           : json_null ()));
    else if (csv)
      printf ("%s,%s,%s,%s,%.9g,%.9g,%.9g,%.9g,%s,%s,%s\n", preds[i], o.op, shown,
              ge->name, ms, est[i].spread * 1e3, pc.flops / sec / 1e12, moved / sec / 1e9, note,
              lo, hi);
    else
      printf ("%-12s %12.4f %10.1f %10.1f  %-19s  %s\n", preds[i], ms, pc.flops / sec / 1e12,
              moved / sec / 1e9, span, note);
  }
  if (json) {
    json_object_set_new (root, "predictions", arr);
    json_print (root, stdout);
  }
  plugins_note_fallbacks (&set, stderr);
  free (est);
  rc = 0;
out:
  strv_free (preds);
  plugins_unload (&set);
  calib_free (&cal);
  gpu_db_free (&gpus);
  free (o.paths);
  free (o.popts);
  return rc;
}
