/* model.h: models and their op graphs: configurations and the per-device graph; included by core/internal.h, in its order. */
#ifndef PERFMOD_MODEL_H
#define PERFMOD_MODEL_H

/* ---- modelcfg.c ---- */
enum model_family {
  FAM_GPT2,              /* GPT-2 and GPT-3 (Hugging Face gpt2): Conv1D, gelu_new, learned positions */
  FAM_OPT,               /* OPT: pre-LN, separate q/k/v, ReLU */
  FAM_BERT,              /* BERT: post-LN encoder */
  FAM_LLAMA,             /* Llama 2/3: RMSNorm, rotary, grouped-query attention, SwiGLU */
  FAM_MIXTRAL,           /* Mixtral: Llama attention, top-k routed SwiGLU experts */
  FAM_SWITCH,            /* Switch Transformer: T5 encoder-decoder, every other FFN routed */
  FAM_QWEN,              /* Qwen2/Qwen3: Llama layer, q/k/v biases (2) or q/k RMSNorm (3) */
  FAM_QWEN_MOE,          /* Qwen2-MoE/Qwen3-MoE: routed experts, Qwen2-MoE's gated shared one */
  FAM_DEEPSEEK,          /* DeepSeek-V2/V3: latent attention (MLA), shared + routed experts */
  FAM_GPT_OSS,           /* gpt-oss: sliding/full layers, attention sinks, biased experts */
  FAM_GEMMA,             /* Gemma 1/2/3: GeGLU, tied vocabulary; 2/3 sliding layers */
  FAM_NEOX               /* GPT-NeoX: parallel attention + MLP residual, partial rotary */
};
/* model_cfg.layer_kind: what layer i is (the new families; NULL: all alike) */
#define LAYER_MOE 1      /* its feed-forward block is routed experts */
#define LAYER_SLIDING 2  /* its attention looks back `window` tokens only */
struct model_cfg {
  char *name;            /* file stem or built-in name */
  char *path;
  char *arch;            /* model_type */
  int family;            /* enum model_family */
  int64_t layers, hidden, heads, ffn, vocab, experts, top_k, max_pos;
  int64_t kv_heads;      /* key/value heads (grouped-query attention); = heads otherwise */
  int64_t head_dim;      /* per-head width (T5's d_kv may differ from hidden / heads) */
  int64_t dec_layers;    /* encoder-decoder: decoder layers (layers counts the encoder's) */
  int64_t sparse_step;   /* Switch: every sparse_step-th FFN is routed */
  int64_t capacity;      /* Switch: tokens per expert (expert_capacity), 0: unbounded */
  bool encoder;          /* bidirectional (BERT) */
  bool tied;             /* output layer shares the embedding's weights */
  /* The families after Switch (zero for the others): */
  unsigned char *layer_kind; /* per layer LAYER_MOE | LAYER_SLIDING; NULL: every layer
                                routed when experts > 0, none sliding */
  int64_t window;        /* sliding layers' window in tokens (0: none) */
  int64_t moe_ffn;       /* a routed expert's width (0: ffn, which dense layers use) */
  int64_t shared_ffn;    /* shared experts' width, one SwiGLU beside the routed (0: none) */
  bool shared_gate;      /* Qwen2-MoE: the shared expert's sigmoid gate (d -> 1) */
  bool router_bias;      /* a bias per expert in the router (gpt-oss, DeepSeek-V3) */
  /* group-limited routing (DeepSeek-V2/V3's n_group, topk_group): each token's
   * experts in route_group_topk of route_groups groups; 0: none */
  int64_t route_groups, route_group_topk;
  /* Multi-head latent attention (kv_lora_rank > 0): queries through a
   * q_lora_rank bottleneck (0: one projection), keys and values from a
   * kv_lora_rank latent plus a shared rope key of qk_rope_dim */
  int64_t q_lora_rank, kv_lora_rank, qk_nope_dim, qk_rope_dim, v_head_dim;
  int64_t rotary_dim;    /* rotated width of a head (GPT-NeoX's rotary_pct); 0: head_dim */
  bool qkv_bias, o_bias, mlp_bias; /* linear biases */
  bool qk_norm;          /* RMSNorm of each query and key head (Qwen3, Gemma 3) */
  bool post_norms;       /* Gemma 2/3: norms after attention and MLP as well */
  bool softcap;          /* Gemma 2: tanh soft-capped scores and logits */
  bool gelu;             /* GeGLU (Gemma) or GeLU (NeoX) instead of SwiGLU */
  bool layernorm;        /* LayerNorm with bias (NeoX) instead of RMSNorm */
  bool parallel_residual; /* NeoX: x + attn(ln1 x) + mlp(ln2 x) */
  bool sinks;            /* gpt-oss: a learned sink logit per head */
  int64_t mtp_layers;    /* DeepSeek-V3's multi-token prediction layers: not built */
};
/* Whether layer i is routed / sliding; the attention span of layer i
 * over `context` tokens (min(window, context) for sliding ones). */
bool model_layer_moe (const struct model_cfg *m, int64_t i);
bool model_layer_sliding (const struct model_cfg *m, int64_t i);
int64_t model_layer_span (const struct model_cfg *m, int64_t i, int64_t context);
/* Layer i's kind, 0 to MODEL_LAYER_KINDS - 1: bit 0 routed, bit 1 sliding.
 * A stage's graph is built from how many of its layers are of each kind
 * (count[]), not from where they are: at[] (NULL: not wanted) gets the
 * first of each kind, for the nodes' names. */
#define MODEL_LAYER_KINDS 4
int model_layer_kind (const struct model_cfg *m, int64_t i);
void model_layer_counts (const struct model_cfg *m, int64_t first, int64_t n,
                         int64_t count[MODEL_LAYER_KINDS], int64_t at[MODEL_LAYER_KINDS]);
/* Key/value elements one token caches in one layer (MLA: the latent and
 * the rope key; else keys and values of every key/value head). */
double model_kv_width (const struct model_cfg *m);
/* Whether the layers differ (dense-first, sliding pattern). */
bool model_layers_mixed (const struct model_cfg *m);
int model_cfg_load (struct model_cfg *m, const char *path);
void model_cfg_free (struct model_cfg *m);
/* A built-in: DATADIR/models/NAME.json, named NAME; refused naming it. */
int model_cfg_builtin (struct model_cfg *m, const char *name);
/* Another layer count (--layers): more layers than the config's repeat its
 * pattern of layer kinds from the first. */
void model_cfg_set_layers (struct model_cfg *m, int64_t layers);
/* name as --model takes it: a config.json path (a '/' or ".json" in it), else a built-in. */
int model_cfg_open (struct model_cfg *m, const char *name);
/* Parameters of the model (weights, counting tied ones once). */
double model_params (const struct model_cfg *m);
/* Of those: the input embeddings (with positions), the untied output
 * layer, and the routed experts' weights. */
void model_param_parts (const struct model_cfg *m, double *embed, double *head, double *experts);
/* Parameters a token uses: all less the routed experts it is not sent to. */
double model_active_params (const struct model_cfg *m);
const char *family_name (int family);

/* ---- graph.c: the per-device op graph ---- */
enum phase { PHASE_FW = 0, PHASE_BW = 1, PHASE_ACC = 2 };
#define NPHASES 3
struct kop {             /* one kernel of a node */
  int kclass;            /* enum perfmod_kernel_class */
  const char *op;        /* interned */
  int64_t b, m, n, k, h;
  double elems;          /* MEMORY/COMM: elements moved */
  double traffic;        /* vector kernels: elements read+written per output element;
                            0: the node's tensors' (NeuSight's convention) */
  double own_traffic;    /* with traffic 0: what the kernel itself moves, if known */
  /* COMM kernels of a built graph: the buffer, the strategy dimension whose
   * group runs it (enum pdim; 0: an imported trace's, over the run's GPUs),
   * and whether it may hide behind computation. */
  double bytes;
  int dim;
  int overlap;           /* enum perfmod_overlap */
  int dtype;             /* DeepEP's kernels: what they send (enum perfmod_dtype); they
                            carry their tokens in m, width in k, the model's experts in h,
                            top_k, the routing's groups and their SMs in b */
  int route_groups, route_group_topk;
  /* ATTENTION kernels: key/value heads, sliding window, causal mask */
  int64_t kv_heads, window;
  bool causal;
  bool kv_shared;        /* the keys are the values too (MLA's latent), read once */
  /* Megatron-Core's fp8 training (Transformer Engine): quant, a cast of a GEMM's input or
   * incoming gradient to fp8 before it, run only when the precision's GEMMs are fp8,
   * block-scaled fp8 or nvfp4; high, a GEMM outside Transformer Engine's fp8 (the output
   * layer, the router): in those precisions, in their other (16-bit) dtype; cast_apart, a
   * GEMM whose input a quant of its node casts (its time is the GEMM's alone) */
  bool quant, high, cast_apart;
  /* MOE kernels (perfmod-plugin.h): experts per token, gated, the busiest
   * rank's load over the even share, the engine's name; the experts the
   * busiest rank's tokens reach under random routing (0: as many as its
   * assignments can) */
  int64_t top_k;
  bool gated;
  double load;
  const char *engine;
  double reached;
};
/* Megatron-Core's recompute modules (--recompute-modules): which nodes
 * of its layer (kernels=te) selective recomputation may run again. */
enum pm_rmod {
  RM_CORE_ATTN = 1,      /* the attention core (Korthikanti et al.'s selective) */
  RM_LAYERNORM = 2,      /* the input and pre-MLP norms (their outputs discarded) */
  RM_MOE_ACT = 4,        /* the routed experts' activation (fc2's input discarded) */
  RM_MLA_UP = 8,         /* MLA's up-projections and rotary (the expanded q, k, v) */
  RM_MLP = 16            /* a dense layer's MLP (checkpointed: its input kept) */
};
#define RM_NAMES 5
struct node {
  char *name;
  char *opname;          /* NeuSight's node class: Linear, VECadd, fused, misc... */
  double in_elems;       /* sum of input tensor elements */
  double out_elems;      /* output tensor elements */
  struct kop *ops[NPHASES];
  size_t nops[NPHASES];
  bool fused;            /* a fused element-wise chain: one kernel per phase */
  int64_t count;         /* in the layer span: layers of this node's kind (0: the graph's repeat) */
  int64_t copies;        /* identical copies a layer runs (the experts reached under even
                            routing, built once); 0: one */
  bool attn_core;        /* the attention core: re-run by selective recomputation */
  bool moe_fed;          /* a serving engine's routed experts and their dispatch and combine:
                            the work the tokens fed to them (every attention-DP replica's) set */
  unsigned char rmod;    /* enum pm_rmod: the recompute module it belongs to; 0: none */
  size_t gemm;           /* a site's collectives: 1 + the index of the GEMM node their
                            PERFMOD_OVERLAP_GEMM ones are pipelined with; 0: none */
  bool shared_expert;    /* Megatron-Core's shared experts (what ep's dispatch and combine
                            run beside with shared_overlap=1) */
  /* the host's side (training): launches one copy issues per phase besides its kernels
   * (small kernels and copies of framework code not modelled as device work), and
   * whether the host waits for the device after its forward (a device-to-host copy) */
  unsigned short host_launches[NPHASES];
  bool host_sync;
  bool host_once;        /* its copies are one launch (one kernel over every copy's data) */
};
struct graph {
  char *source;          /* file it came from, or "builder" */
  struct node *nodes;
  size_t n, cap;
  size_t layer_begin, layer_end; /* [begin, end) is the traced layer */
  int64_t repeat;        /* how many times the layer runs (1: complete graph) */
  int64_t batch, seq;
  bool train;
};
struct node *graph_add_node (struct graph *g, const char *name, const char *opname);
struct kop *node_add_op (struct node *nd, int phase, int kclass, const char *op);
const char *intern (const char *s);
void graph_free (struct graph *g);
/* Multiplicity of node i (repeat inside the layer span, 1 outside). */
int64_t graph_weight (const struct graph *g, size_t i);
/* Layer of node i: -1 outside the span. */
int graph_layer (const struct graph *g, size_t i);

/* opgraph.c: NeuSight's traced operator graphs. */
int opgraph_import (struct graph *g, const char *path, int64_t n_layer);
/* builder.c: a transformer graph from a model config. */
struct comm_site {       /* a collective the plan puts at a site of the model */
  int collective, site, phase, dim;
  double bytes;
  int overlap;           /* enum perfmod_overlap */
  int expert_group;      /* the gradients' collectives of the routed experts: over the expert
                            data-parallel group (comm_groups' edp_*), not dim's */
};
struct shard {           /* one rank's share of the model (divisors 1: none) */
  int heads, ffn, vocab, tokens, experts;
  double expert_load;
  int64_t layers;        /* layers of this pipeline stage; 0: all */
  int64_t first_layer;   /* the model's index of the stage's first layer */
  bool embed, head;      /* the stage has the input embedding, the output layer and loss */
  const struct comm_site *comms;
  size_t ncomms;
  int expert_ffn;        /* the routed experts' width divisor; 0: ffn's */
  bool ep_in_tp;         /* the expert-parallel ranks are the tensor-parallel ones: each
                            has every token, none come from other ranks */
  int moe_feeds;         /* the ranks with tokens of their own a rank's experts serve: ep's;
                            1 with ep within the tp ranks; the replicas under attention data
                            parallelism (the tp ranks of one have the same tokens); 0: ep's */
  /* Megatron-Core's routed layer under sequence parallelism: the router
   * and the permutation run over the rank's tokens/tokens share, and the
   * routed copies are gathered over tp after dispatch (scattered back
   * before combine), so the block has no MLP_IN/MLP_OUT site of its own
   * (its shared experts, a tp MLP, keep them) */
  bool moe_tp_after;
};
struct build_options {
  int64_t batch, seq;    /* sequences and tokens per sequence */
  bool train;
  bool fusion;           /* element-wise chains fused (inference) */
  bool megatron;         /* Megatron-LM's GPT layer kernels (GPT-2/GPT-3 family) */
  bool te;               /* Megatron-Core's layer with Transformer Engine's kernels */
  bool flash;            /* fused (FlashAttention) attention, else scores materialised */
  int64_t cp;            /* context parallelism: seq is this rank's 1/cp of the sequence */
  int64_t kv_len;        /* > 0: one decode step over a cache of kv_len tokens */
  bool engine;           /* a serving engine's kernels (inference; Llama, Mixtral and the
                            families after Switch): fused add+norm, one QKV GEMM, rope with
                            the cache write, gate/up GEMM + act-and-mul, grouped key/value
                            heads read in place, logits of the last token only */
  const char *engine_name; /* the engine (a static name): its fused MoE kernel; NULL: none */
  double routing;        /* the engine's router (routing.c): 0 the default power law,
                            ROUTING_UNIFORM, or a power law's exponent */
  const struct shard *shard; /* NULL: the whole model on one device */
  int64_t mtp;           /* Megatron-Core's multi-token prediction layers after the output
                            layer (kernels=te training, the last stage); 0: none */
};
int graph_build (struct graph *g, const struct model_cfg *m, const struct build_options *o);

/* ---- routing.c: how a serving engine's router spreads tokens over the experts ---- */
/* A uniform router: each token's top_k experts drawn alike (the experts
 * reached, expected, and the busiest rank's excess: builder.c). */
#define ROUTING_UNIFORM (-1.0)
/* aiconfigurator's default (its ModelConfig's workload_distribution
 * "power_law", drawn at exponent 1.01; its authors' estimate for
 * DeepSeek-V3/R1 on CNN/DailyMail and OpenOrca by latency matching). */
#define ROUTING_POWERLAW_DEFAULT 1.01
/* Under the power law of exponent alpha that aiconfigurator's collectors
 * draw each expert's tokens from, for `tokens` tokens' top_k of `experts`
 * over ep ranks: the busiest rank's expected assignments over the even
 * share, and in *reached its experts that get a token. */
double routing_powerlaw (int64_t tokens, int64_t experts, int64_t topk, int64_t ep, double alpha,
                         double *reached);
/* "uniform", "powerlaw" or "powerlaw:A" (1 < A <= 4) into *alpha
 * (ROUTING_UNIFORM or the exponent); -1 after pm_error naming `what` (the
 * option or field) if none of those. */
int routing_parse (const char *what, const char *text, double *alpha);
/* A build's routing (0: the default) as an exponent, or ROUTING_UNIFORM. */
double routing_alpha (double routing);
/* Whether Megatron-Core's layer (kernels=te) is modelled for m's family. */
bool te_layer_exists (const struct model_cfg *m);
/* Whose layer a run builds by default: Megatron-Core's with Transformer
 * Engine for mixed-precision training of the families it has, else the
 * eager PyTorch modules. */
struct precision;   /* predict/predict.h */
enum pm_kernels default_kernels (const struct model_cfg *m, const struct precision *pr, bool train);

#endif /* PERFMOD_MODEL_H */
