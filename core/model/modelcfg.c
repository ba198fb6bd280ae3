/* modelcfg.c: a model's dimensions from a Hugging Face config.json (GPT-2/3, OPT, BERT, Llama, Mixtral, Switch, Qwen2/3 and their MoEs, DeepSeek-V2/V3, gpt-oss, Gemma 1/2/3, GPT-NeoX). */
#include <config.h>

#include <ctype.h>
#include <dirent.h>
#include <jansson.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* The first of keys present in obj as an integer from min to max; 0 if
 * none (a count given as 0 where min is 1 is refused, not taken as absent). */
static int64_t
get_range (json_t *obj, const char *const *keys, int64_t min, int64_t max, const char *path,
           int *errors)
{
  for (; *keys; keys++) {
    json_t *v = json_object_get (obj, *keys);
    if (v == NULL || json_is_null (v))
      continue;
    if (!json_is_integer (v) || json_integer_value (v) < min || json_integer_value (v) > max) {
      pm_error ("%s: key '%s' must be an integer from %lld to %lld", path, *keys,
                (long long) min, (long long) max);
      (*errors)++;
      return 0;
    }
    return json_integer_value (v);
  }
  return 0;
}

static int64_t
get_int (json_t *obj, const char *const *keys, int64_t max, const char *path, int *errors)
{
  return get_range (obj, keys, 0, max, path, errors);
}

/* A count that cannot be 0 where it is given: layers, widths, heads. */
static int64_t
get_count (json_t *obj, const char *const *keys, int64_t max, const char *path, int *errors)
{
  return get_range (obj, keys, 1, max, path, errors);
}

static const struct {
  const char *model_type;
  int family;
} families[] = {
  { "gpt2", FAM_GPT2 }, { "opt", FAM_OPT }, { "bert", FAM_BERT }, { "llama", FAM_LLAMA },
  { "mistral", FAM_LLAMA }, { "mixtral", FAM_MIXTRAL }, { "switch_transformers", FAM_SWITCH },
  { "qwen2", FAM_QWEN }, { "qwen3", FAM_QWEN }, { "qwen2_moe", FAM_QWEN_MOE },
  { "qwen3_moe", FAM_QWEN_MOE }, { "deepseek_v2", FAM_DEEPSEEK }, { "deepseek_v3", FAM_DEEPSEEK },
  { "kimi_k2", FAM_DEEPSEEK },           /* Kimi K2: DeepSeek-V3's architecture, renamed */
  { "glm4_moe", FAM_QWEN_MOE },          /* GLM-4.5: grouped-query attention, dense-first */
  { "minimax_m2", FAM_QWEN_MOE },        /* MiniMax-M2: full attention, every layer's MLP routed */
  { "gpt_oss", FAM_GPT_OSS }, { "gemma", FAM_GEMMA }, { "gemma2", FAM_GEMMA },
  { "gemma3_text", FAM_GEMMA }, { "gpt_neox", FAM_NEOX },
};
#define MODEL_TYPES "gpt2, opt, bert, llama, mistral, mixtral, switch_transformers, qwen2, " \
  "qwen3, qwen2_moe, qwen3_moe, glm4_moe, minimax_m2, deepseek_v2, deepseek_v3, kimi_k2, " \
  "gpt_oss, gemma, " \
  "gemma2, gemma3_text, gpt_neox"

const char *
family_name (int family)
{
  for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
    if (families[i].family == family)
      return families[i].model_type;
  return "?";
}

/* key as true or false, dflt when absent or null; anything else (0 and 1
 * included: Hugging Face reads no integer as a flag) is refused by key. */
static bool
get_bool (json_t *obj, const char *key, bool dflt, const char *path, int *errors)
{
  json_t *v = json_object_get (obj, key);
  if (v == NULL || json_is_null (v))
    return dflt;
  if (!json_is_boolean (v)) {
    pm_error ("%s: key '%s' must be true or false", path, key);
    (*errors)++;
    return dflt;
  }
  return json_is_true (v);
}

static int64_t
get_one (json_t *obj, const char *key, int64_t max, const char *path, int *errors)
{
  const char *const keys[] = { key, NULL };
  return get_int (obj, keys, max, path, errors);
}

/* A field perfmod reads but cannot model with this value: named, with why. */
static void
refuse (const char *path, const char *key, const char *why, int *errors)
{
  pm_error ("%s: key '%s': %s", path, key, why);
  (*errors)++;
}

/* A number or null (soft-capping thresholds, rotary_pct); dflt if absent. */
static double
get_number (json_t *obj, const char *key, double dflt, const char *path, int *errors)
{
  json_t *v = json_object_get (obj, key);
  if (v == NULL || json_is_null (v))
    return dflt;
  if (!json_is_number (v) || !isfinite (json_number_value (v)) || json_number_value (v) < 0) {
    refuse (path, key, "must be a non-negative number or null", errors);
    return dflt;
  }
  return json_number_value (v);
}

static bool
arch_is (const struct model_cfg *m, const char *model_type)
{
  return strcmp (m->arch, model_type) == 0;
}

/* The fields of the families after Switch: what each layer is, the
 * attention's shape and the feed-forward blocks.  Fields that change
 * neither work nor memory (rope_theta, rms_norm_eps, routing's scoring
 * and grouping, dropout rates) are not read; those that would and that
 * perfmod cannot model are refused, naming the field. */
static void
modern_load (json_t *root, struct model_cfg *m, const char *path, int *errors)
{
  int64_t layers = m->layers > 0 ? m->layers : 0;
  int64_t first_dense = 0, moe_step = 1;
  json_t *v;

  m->moe_ffn = get_one (root, "moe_intermediate_size", PM_MAX_DIM, path, errors);
  v = json_object_get (root, "rope_scaling");
  if (v != NULL && !json_is_null (v) && !json_is_object (v))
    refuse (path, "rope_scaling", "must be an object or null", errors);
  v = json_object_get (root, "attention_type");
  if (v != NULL && !json_is_null (v)
      && !(m->family == FAM_DEEPSEEK && json_is_string (v)
           && strcmp (json_string_value (v), "mla") == 0))
    refuse (path, "attention_type", "perfmod builds the attention model_type defines "
            "(multi-head latent attention for deepseek_v2/v3, else grouped-query); no other "
            "attention_type is modelled", errors);
  if (layers > 0)
    m->layer_kind = xcalloc ((size_t) layers, 1);

  switch (m->family) {
  case FAM_QWEN_MOE:
    if (arch_is (m, "glm4_moe")) {
      /* GLM-4.5 (Glm4MoeForCausalLM): biased q/k/v (attention_bias), no
       * o bias, q/k head norms where use_qk_norm, rotary over
       * partial_rotary_factor of each head; first_k_dense_replace dense
       * layers, then routed experts with n_shared_experts ungated shared
       * ones and the expert bias (sigmoid, noaux_tc) */
      double pct = get_number (root, "partial_rotary_factor", 0.5, path, errors);
      m->qkv_bias = get_bool (root, "attention_bias", false, path, errors);
      m->qk_norm = get_bool (root, "use_qk_norm", false, path, errors);
      if (pct <= 0 || pct > 1)
        refuse (path, "partial_rotary_factor", "must be a fraction in (0, 1]", errors);
      else if (m->heads > 0)
        m->rotary_dim = (int64_t) ((double) (m->head_dim ? m->head_dim : m->hidden / m->heads)
                                   * pct);
      m->shared_ffn = get_one (root, "n_shared_experts", PM_MAX_COUNT, path, errors) * m->moe_ffn;
      m->router_bias = true;
      m->mtp_layers = get_one (root, "num_nextn_predict_layers", PM_MAX_COUNT, path, errors);
      first_dense = get_one (root, "first_k_dense_replace", PM_MAX_COUNT, path, errors);
      if (first_dense > layers)
        refuse (path, "first_k_dense_replace", "exceeds num_hidden_layers", errors);
      for (int64_t i = first_dense; i < layers && m->experts > 0; i++)
        m->layer_kind[i] |= LAYER_MOE;
      break;
    }
    if (arch_is (m, "minimax_m2")) {
      /* MiniMax-M2 (MiniMaxM2ForCausalLM): grouped-query attention without biases, q/k
       * norms (use_qk_norm), rotary over rotary_dim of each head; every layer's MLP routed
       * experts, intermediate_size an expert's width, the router's bias
       * (use_routing_bias, sigmoid), no shared expert; its MTP modules not built */
      int64_t rd = get_one (root, "rotary_dim", PM_MAX_DIM, path, errors);
      m->qk_norm = get_bool (root, "use_qk_norm", true, path, errors);
      m->router_bias = get_bool (root, "use_routing_bias", false, path, errors);
      if (get_one (root, "shared_intermediate_size", PM_MAX_DIM, path, errors) > 0)
        refuse (path, "shared_intermediate_size", "MiniMax-M2's shared expert is not "
                "modelled (its released configs have none)", errors);
      if (m->heads > 0 && rd > (m->head_dim ? m->head_dim : m->hidden / m->heads))
        refuse (path, "rotary_dim", "exceeds the head's dimension", errors);
      m->rotary_dim = rd;
      for (int64_t i = 0; i < layers && m->experts > 0; i++)
        m->layer_kind[i] |= LAYER_MOE;
      break;
    }
    /* fall through */
  case FAM_QWEN:
    if (arch_is (m, "qwen2") || arch_is (m, "qwen2_moe"))
      m->qkv_bias = true;        /* Qwen2's q, k and v projections have biases */
    else {
      m->qkv_bias = m->o_bias = get_bool (root, "attention_bias", false, path, errors);
      m->qk_norm = true;
    }
    if (get_bool (root, "use_sliding_window", false, path, errors)) {
      int64_t from = json_object_get (root, "max_window_layers") == NULL ? 28   /* HF's default */
                     : get_one (root, "max_window_layers", PM_MAX_COUNT, path, errors);
      m->window = get_one (root, "sliding_window", PM_MAX_SEQ, path, errors);
      if (m->window == 0)
        refuse (path, "sliding_window", "use_sliding_window is true: a window size is needed",
                errors);
      for (int64_t i = from; i < layers; i++)   /* Qwen slides from max_window_layers on */
        m->layer_kind[i] |= LAYER_SLIDING;
    }
    if (m->family == FAM_QWEN_MOE) {
      json_t *dense = json_object_get (root, "mlp_only_layers");
      size_t j;
      json_t *e;
      m->shared_ffn = get_one (root, "shared_expert_intermediate_size", PM_MAX_DIM, path, errors);
      m->shared_gate = m->shared_ffn > 0;
      if (json_object_get (root, "decoder_sparse_step") != NULL) {
        moe_step = get_one (root, "decoder_sparse_step", PM_MAX_COUNT, path, errors);
        if (moe_step == 0)
          refuse (path, "decoder_sparse_step", "must be at least 1", errors);
      }
      for (int64_t i = 0; i < layers && moe_step > 0; i++)
        if ((i + 1) % moe_step == 0)
          m->layer_kind[i] |= LAYER_MOE;
      if (dense != NULL && !json_is_null (dense) && !json_is_array (dense))
        refuse (path, "mlp_only_layers", "must be a list of layer indices", errors);
      json_array_foreach (dense, j, e) {
        if (!json_is_integer (e) || json_integer_value (e) < 0
            || json_integer_value (e) >= layers) {
          refuse (path, "mlp_only_layers", "must hold layer indices from 0 to "
                  "num_hidden_layers - 1", errors);
          break;
        }
        m->layer_kind[json_integer_value (e)] &= (unsigned char) ~LAYER_MOE;
      }
    }
    break;
  case FAM_DEEPSEEK:
    m->q_lora_rank = get_one (root, "q_lora_rank", PM_MAX_DIM, path, errors);
    m->kv_lora_rank = get_one (root, "kv_lora_rank", PM_MAX_DIM, path, errors);
    m->qk_nope_dim = get_one (root, "qk_nope_head_dim", PM_MAX_DIM, path, errors);
    m->qk_rope_dim = get_one (root, "qk_rope_head_dim", PM_MAX_DIM, path, errors);
    m->v_head_dim = get_one (root, "v_head_dim", PM_MAX_DIM, path, errors);
    if (*errors == 0) {
      const char *zero = m->kv_lora_rank == 0 ? "kv_lora_rank" : m->qk_nope_dim == 0
                         ? "qk_nope_head_dim" : m->qk_rope_dim == 0 ? "qk_rope_head_dim"
                         : m->v_head_dim == 0 ? "v_head_dim" : NULL;
      if (zero)
        refuse (path, zero, "multi-head latent attention needs it, a positive integer", errors);
    }
    /* queries and keys are nope + rope wide, values v_head_dim; every
     * head has its own keys and values (no grouping) */
    m->head_dim = m->qk_nope_dim + m->qk_rope_dim;
    m->kv_heads = 0;
    m->qkv_bias = m->o_bias = get_bool (root, "attention_bias", false, path, errors);
    m->shared_ffn = get_one (root, "n_shared_experts", PM_MAX_COUNT, path, errors) * m->moe_ffn;
    m->router_bias = arch_is (m, "deepseek_v3") || arch_is (m, "kimi_k2"); /* the expert bias */
    {                           /* group-limited routing unless topk_method says greedy */
      json_t *tm = json_object_get (root, "topk_method");
      bool greedy = json_is_string (tm) && strcmp (json_string_value (tm), "greedy") == 0;
      if (json_object_get (root, "n_group") != NULL && !greedy) {
        m->route_groups = get_one (root, "n_group", PM_MAX_COUNT, path, errors);
        m->route_group_topk = get_one (root, "topk_group", PM_MAX_COUNT, path, errors);
        if (*errors == 0 && m->route_groups > 1 &&
            (m->route_group_topk < 1 || m->route_group_topk > m->route_groups ||
             m->experts % m->route_groups != 0 ||
             m->top_k > m->route_group_topk * (m->experts / m->route_groups)))
          refuse (path, "topk_group", "needs 1 to n_group groups, n_group dividing the experts, "
                  "the chosen groups holding num_experts_per_tok experts", errors);
      }
    }
    m->mtp_layers = get_one (root, "num_nextn_predict_layers", PM_MAX_COUNT, path, errors);
    first_dense = get_one (root, "first_k_dense_replace", PM_MAX_COUNT, path, errors);
    if (json_object_get (root, "moe_layer_freq") != NULL) {
      moe_step = get_one (root, "moe_layer_freq", PM_MAX_COUNT, path, errors);
      if (moe_step == 0)
        refuse (path, "moe_layer_freq", "must be at least 1", errors);
    }
    if (first_dense > layers)
      refuse (path, "first_k_dense_replace", "exceeds num_hidden_layers", errors);
    for (int64_t i = first_dense; i < layers && m->experts > 0 && moe_step > 0; i++)
      if (i % moe_step == 0)
        m->layer_kind[i] |= LAYER_MOE;
    break;
  case FAM_GPT_OSS:
    m->qkv_bias = m->o_bias = get_bool (root, "attention_bias", true, path, errors);
    m->mlp_bias = m->router_bias = m->sinks = true;
    m->window = json_object_get (root, "sliding_window") == NULL ? 128
              : get_one (root, "sliding_window", PM_MAX_SEQ, path, errors);
    for (int64_t i = 0; i < layers; i++)     /* sliding and full layers alternate */
      m->layer_kind[i] = (unsigned char) (LAYER_MOE | (i % 2 == 0 ? LAYER_SLIDING : 0));
    break;
  case FAM_GEMMA:
    m->gelu = true;
    if (!arch_is (m, "gemma")) {
      int64_t period = 2;        /* Gemma 2: every other layer, from the first */
      m->post_norms = true;
      m->qk_norm = arch_is (m, "gemma3_text");
      m->softcap = get_number (root, "attn_logit_softcapping", 0, path, errors) > 0
                   || get_number (root, "final_logit_softcapping", 0, path, errors) > 0;
      m->window = get_one (root, "sliding_window", PM_MAX_SEQ, path, errors);
      if (m->qk_norm) {          /* Gemma 3: five sliding layers to one full */
        period = 6;
        if (json_object_get (root, "sliding_window_pattern") != NULL) {
          period = get_one (root, "sliding_window_pattern", PM_MAX_COUNT, path, errors);
          if (period == 0)
            refuse (path, "sliding_window_pattern", "must be at least 1", errors);
        }
      }
      for (int64_t i = 0; i < layers && m->window > 0 && period > 0; i++)
        if ((i + 1) % period != 0)
          m->layer_kind[i] |= LAYER_SLIDING;
    }
    break;
  case FAM_NEOX: {
    double pct = get_number (root, "rotary_pct", 0.25, path, errors);
    m->layernorm = m->gelu = m->mlp_bias = true;
    m->qkv_bias = m->o_bias = get_bool (root, "attention_bias", true, path, errors);
    m->parallel_residual = get_bool (root, "use_parallel_residual", true, path, errors);
    if (pct <= 0 || pct > 1)
      refuse (path, "rotary_pct", "must be a fraction in (0, 1]", errors);
    else if (m->heads > 0) {
      int64_t dh = m->head_dim ? m->head_dim : m->hidden / m->heads;
      m->rotary_dim = (int64_t) ((double) dh * pct);
    }
    break;
  }
  default:
    break;
  }

  /* Hugging Face's layer_types, where the config lists them, say which
   * layers slide. */
  v = json_object_get (root, "layer_types");
  if (v != NULL && !json_is_null (v) && *errors == 0) {
    size_t j;
    json_t *e;
    if (!json_is_array (v) || (int64_t) json_array_size (v) != layers)
      refuse (path, "layer_types", "must list num_hidden_layers attention types", errors);
    else
      json_array_foreach (v, j, e) {
        const char *t = json_is_string (e) ? json_string_value (e) : "";
        if (strcmp (t, "sliding_attention") == 0 && m->window > 0)
          m->layer_kind[j] |= LAYER_SLIDING;
        else if (strcmp (t, "full_attention") == 0)
          m->layer_kind[j] &= (unsigned char) ~LAYER_SLIDING;
        else {
          refuse (path, "layer_types", strcmp (t, "sliding_attention") == 0
                  ? "sliding_attention layers without a sliding_window"
                  : "only full_attention and sliding_attention layers are modelled", errors);
          break;
        }
      }
  }
  if (m->family == FAM_QWEN_MOE || m->family == FAM_GPT_OSS
      || (m->family == FAM_DEEPSEEK && m->experts > 0)) {
    if (m->moe_ffn == 0)
      m->moe_ffn = m->ffn;       /* gpt-oss: intermediate_size is an expert's */
    if (m->family == FAM_DEEPSEEK && json_object_get (root, "moe_intermediate_size") == NULL)
      refuse (path, "moe_intermediate_size", "missing: an expert's width", errors);
  }
}

int
model_cfg_load (struct model_cfg *m, const char *path)
{
  static const char *const k_layers[] = { "n_layer", "num_hidden_layers", "num_layers", NULL };
  static const char *const k_hidden[] = { "n_embd", "hidden_size", "d_model", NULL };
  static const char *const k_heads[] = { "n_head", "num_attention_heads", "num_heads", NULL };
  static const char *const k_ffn[] = { "n_inner", "intermediate_size", "ffn_dim", "d_ff", NULL };
  static const char *const k_vocab[] = { "vocab_size", NULL };
  static const char *const k_experts[] = { "num_experts", "num_local_experts", "n_routed_experts",
                                           NULL };
  static const char *const k_topk[] = { "num_experts_per_tok", "moe_top_k", "experts_per_token",
                                        NULL };
  static const char *const k_pos[] = { "n_positions", "max_position_embeddings", NULL };
  static const char *const k_kv[] = { "num_key_value_heads", NULL };
  static const char *const k_dkv[] = { "d_kv", "head_dim", NULL };
  static const char *const k_dec[] = { "num_decoder_layers", NULL };
  static const char *const k_step[] = { "encoder_sparse_step", NULL };
  static const char *const k_cap[] = { "expert_capacity", NULL };
  json_error_t jerr;
  json_t *root, *mt;
  char *tmp;
  int errors = 0;
  size_t f;

  memset (m, 0, sizeof *m);
  if (input_file_check (path, "a model config (.json)") < 0)
    return -1;
  root = json_load_file (path, 0, &jerr);
  if (root == NULL) {
    pm_error ("%s:%d: %s", path, jerr.line, jerr.text);
    return -1;
  }
  if (!json_is_object (root)) {
    pm_error ("%s: not a JSON object", path);
    json_decref (root);
    return -1;
  }
  m->path = xstrdup (path);
  tmp = xstrdup (path);
  m->name = xstrdup (basename (tmp));
  free (tmp);
  if (strlen (m->name) > 5 && strcmp (m->name + strlen (m->name) - 5, ".json") == 0)
    m->name[strlen (m->name) - 5] = '\0';
  mt = json_object_get (root, "model_type");
  if (!json_is_string (mt)) {
    pm_error ("%s: missing key model_type (one of %s)", path, MODEL_TYPES);
    json_decref (root);
    model_cfg_free (m);
    return -1;
  }
  m->arch = xstrdup (json_string_value (mt));
  for (f = 0; f < sizeof families / sizeof families[0]; f++)
    if (strcmp (m->arch, families[f].model_type) == 0)
      break;
  if (f == sizeof families / sizeof families[0]) {
    /* the families of 2025-2026 whose layers perfmod has no model of, by what
     * they have that it lacks */
    static const struct {
      const char *model_type, *why;
    } unmodelled[] = {
      { "qwen3_next", "Qwen3-Next's Gated DeltaNet layers (linear attention)" },
      { "qwen3_5", "Qwen3.5's Gated DeltaNet layers (linear attention)" },
      { "qwen3_5_moe", "Qwen3.5's Gated DeltaNet layers (linear attention)" },
      { "nemotron_h", "Nemotron-H's Mamba-2 layers (a selective state-space scan)" },
      { "mamba", "Mamba's selective state-space scan" },
      { "mamba2", "Mamba-2's selective state-space scan" },
      { "jamba", "Jamba's Mamba layers (a selective state-space scan)" },
      { "falcon_h1", "Falcon-H1's Mamba-2 heads (a selective state-space scan)" },
      { "minimax", "MiniMax's lightning attention (linear attention)" },
      { "minimax_m1", "MiniMax-M1's lightning attention (linear attention)" },
      { "deepseek_v32", "DeepSeek sparse attention's indexer and top-k key selection" },
      { "glm_moe_dsa", "DeepSeek sparse attention's indexer and top-k key selection" },
    };
    for (size_t u = 0; u < sizeof unmodelled / sizeof unmodelled[0]; u++)
      if (strcmp (m->arch, unmodelled[u].model_type) == 0) {
        pm_error ("%s: model_type '%s': perfmod has no model of %s; import a traced graph "
                  "with --opgraph instead", path, m->arch, unmodelled[u].why);
        json_decref (root);
        model_cfg_free (m);
        return -1;
      }
    pm_error ("%s: model_type '%s' is not an architecture perfmod builds (%s); import a "
              "traced graph with --opgraph instead", path, m->arch, MODEL_TYPES);
    json_decref (root);
    model_cfg_free (m);
    return -1;
  }
  m->family = families[f].family;
  m->layers = get_count (root, k_layers, PM_MAX_COUNT, path, &errors);
  m->hidden = get_count (root, k_hidden, PM_MAX_DIM, path, &errors);
  m->heads = get_count (root, k_heads, PM_MAX_DIM, path, &errors);
  m->ffn = get_int (root, k_ffn, PM_MAX_DIM, path, &errors);
  m->vocab = get_count (root, k_vocab, PM_MAX_DIM, path, &errors);
  m->experts = get_int (root, k_experts, PM_MAX_COUNT, path, &errors);
  m->top_k = get_int (root, k_topk, PM_MAX_COUNT, path, &errors);
  /* a model of experts given none: refused, not built dense */
  if (m->experts == 0 && errors == 0 &&
      (m->family == FAM_MIXTRAL || m->family == FAM_SWITCH || m->family == FAM_QWEN_MOE ||
       m->family == FAM_DEEPSEEK || m->family == FAM_GPT_OSS)) {
    for (const char *const *k = k_experts; *k; k++)
      if (json_is_integer (json_object_get (root, *k))) {
        pm_error ("%s: key '%s' must be an integer from 1 to %lld (model_type %s has experts)",
                  path, *k, (long long) PM_MAX_COUNT, m->arch);
        errors++;
        break;
      }
  }
  m->max_pos = get_int (root, k_pos, PM_MAX_DIM, path, &errors);
  m->kv_heads = get_count (root, k_kv, PM_MAX_DIM, path, &errors);
  m->head_dim = get_count (root, k_dkv, PM_MAX_DIM, path, &errors);
  m->dec_layers = get_int (root, k_dec, PM_MAX_COUNT, path, &errors);
  m->sparse_step = get_int (root, k_step, PM_MAX_COUNT, path, &errors);
  m->capacity = get_int (root, k_cap, PM_MAX_DIM, path, &errors);
  /* Hugging Face's defaults: Llama-family configs say tie_word_embeddings
   * when true; GPT-2, OPT, BERT and T5 tie unless told otherwise. */
  m->tied = get_bool (root, "tie_word_embeddings",
                      m->family < FAM_QWEN ? m->family != FAM_LLAMA && m->family != FAM_MIXTRAL
                      : m->family == FAM_GEMMA, path, &errors);
  if (m->family >= FAM_QWEN && errors == 0)
    modern_load (root, m, path, &errors);
  /* Llama, Mistral and Mixtral are built without biases: a config that
   * asks for them is refused, not built without them */
  if (m->family == FAM_LLAMA || m->family == FAM_MIXTRAL) {
    static const char *const biases[] = { "attention_bias", "mlp_bias" };
    for (size_t i = 0; i < 2; i++)
      if (get_bool (root, biases[i], false, path, &errors))
        refuse (path, biases[i], "true: perfmod builds this model type's layers without "
                "biases (their parameters and adds are not modelled)", &errors);
  }
  json_decref (root);
  if (m->ffn == 0 && m->family == FAM_GPT2)
    m->ffn = 4 * m->hidden;      /* GPT-2's n_inner: null means 4 x width */
  if (m->experts > 0 && m->top_k == 0 && m->family == FAM_SWITCH)
    m->top_k = 1;                /* Switch routing */
  if (m->family == FAM_SWITCH) {
    if (m->dec_layers == 0)
      m->dec_layers = m->layers;
    if (m->sparse_step == 0)
      m->sparse_step = 1;
  }
  m->encoder = m->family == FAM_BERT;
  if (errors == 0) {
    const char *missing = m->layers == 0 ? "n_layer/num_hidden_layers/num_layers"
                        : m->hidden == 0 ? "n_embd/hidden_size/d_model"
                        : m->heads == 0 ? "n_head/num_attention_heads/num_heads"
                        : m->vocab == 0 ? "vocab_size"
                        : m->ffn == 0 ? "intermediate_size/ffn_dim/d_ff"
                        : (m->family == FAM_MIXTRAL || m->family == FAM_SWITCH
                           || m->family == FAM_QWEN_MOE || m->family == FAM_GPT_OSS)
                          && m->experts == 0 ? "num_local_experts/num_experts"
                        : (m->family == FAM_MIXTRAL || m->family == FAM_QWEN_MOE
                           || m->family == FAM_GPT_OSS || m->family == FAM_DEEPSEEK)
                          && m->experts > 0 && m->top_k == 0 ? "num_experts_per_tok"
                        : NULL;
    if (missing) {
      pm_error ("%s: missing key %s (model_type %s)", path, missing, m->arch);
      errors++;
    }
    else if (m->head_dim == 0 && m->hidden % m->heads != 0) {
      pm_error ("%s: hidden size %lld is not a multiple of %lld heads", path,
                (long long) m->hidden, (long long) m->heads);
      errors++;
    }
  }
  if (errors == 0) {
    if (m->head_dim == 0)
      m->head_dim = m->hidden / m->heads;
    if (m->kv_heads == 0)
      m->kv_heads = m->heads;
    int64_t width;
    if (!ck_mul64 (m->heads, m->head_dim, &width) || width > PM_MAX_DIM) {
      pm_error ("%s: %lld heads x head_dim %lld: an attention width beyond %lld", path,
                (long long) m->heads, (long long) m->head_dim, (long long) PM_MAX_DIM);
      errors++;
    }
    else if (m->heads % m->kv_heads != 0) {
      pm_error ("%s: num_attention_heads %lld is not a multiple of num_key_value_heads %lld",
                path, (long long) m->heads, (long long) m->kv_heads);
      errors++;
    }
    else if (m->top_k > m->experts && m->experts > 0) {
      pm_error ("%s: num_experts_per_tok %lld exceeds %lld experts", path, (long long) m->top_k,
                (long long) m->experts);
      errors++;
    }
  }
  if (errors) {
    model_cfg_free (m);
    return -1;
  }
  return 0;
}

bool
model_layer_moe (const struct model_cfg *m, int64_t i)
{
  if (m->layer_kind)
    return m->experts > 0 && (m->layer_kind[i] & LAYER_MOE);
  return m->experts > 0;
}

bool
model_layer_sliding (const struct model_cfg *m, int64_t i)
{
  return m->layer_kind && m->window > 0 && (m->layer_kind[i] & LAYER_SLIDING);
}

int64_t
model_layer_span (const struct model_cfg *m, int64_t i, int64_t context)
{
  return model_layer_sliding (m, i) && m->window < context ? m->window : context;
}

int
model_layer_kind (const struct model_cfg *m, int64_t i)
{
  return (model_layer_moe (m, i) ? 1 : 0) | (model_layer_sliding (m, i) ? 2 : 0);
}

void
model_layer_counts (const struct model_cfg *m, int64_t first, int64_t n,
                    int64_t count[MODEL_LAYER_KINDS], int64_t at[MODEL_LAYER_KINDS])
{
  for (int k = 0; k < MODEL_LAYER_KINDS; k++) {
    count[k] = 0;
    if (at)
      at[k] = 0;
  }
  for (int64_t i = first; i < first + n && i < m->layers; i++) {
    int k = model_layer_kind (m, i);
    if (count[k]++ == 0 && at)
      at[k] = i;
  }
}

double
model_kv_width (const struct model_cfg *m)
{
  if (m->kv_lora_rank > 0)
    return (double) (m->kv_lora_rank + m->qk_rope_dim);
  return 2.0 * (double) m->kv_heads * (double) m->head_dim;
}

bool
model_layers_mixed (const struct model_cfg *m)
{
  for (int64_t i = 1; m->layer_kind && i < m->layers; i++)
    if (model_layer_moe (m, i) != model_layer_moe (m, 0)
        || model_layer_sliding (m, i) != model_layer_sliding (m, 0))
      return true;
  return false;
}

/* One routed expert of the new families: a gated (SwiGLU) block, with
 * biases in gpt-oss. */
static double
expert_params (const struct model_cfg *m)
{
  double d = (double) m->hidden, f = (double) m->moe_ffn;
  return 3 * d * f + (m->mlp_bias ? 2 * f + d : 0);
}

/* A layer of the new families, its routed experts (if any) included. */
static double
modern_layer_params (const struct model_cfg *m, bool moe)
{
  double d = (double) m->hidden, f = (double) m->ffn, h = (double) m->heads;
  double dh = (double) m->head_dim, kvh = (double) m->kv_heads, p;
  if (m->kv_lora_rank > 0) {     /* latent attention */
    double ql = (double) m->q_lora_rank, kvl = (double) m->kv_lora_rank;
    double qk = (double) (m->qk_nope_dim + m->qk_rope_dim), vd = (double) m->v_head_dim;
    p = ql > 0 ? d * ql + ql + ql * h * qk : d * h * qk;
    p += d * (kvl + (double) m->qk_rope_dim) + kvl + kvl * h * ((double) m->qk_nope_dim + vd);
    p += h * vd * d + (m->o_bias ? d : 0);
    if (m->o_bias)                /* attention_bias: the down projections' biases too */
      p += (ql > 0 ? ql : 0) + kvl + (double) m->qk_rope_dim;
  }
  else {
    p = 2 * d * h * dh + 2 * d * kvh * dh;
    if (m->qkv_bias)
      p += h * dh + 2 * kvh * dh;
    if (m->o_bias)
      p += d;
    if (m->qk_norm)
      p += 2 * dh;
    if (m->sinks)
      p += h;
  }
  p += (m->post_norms ? 4 : 2) * d * (m->layernorm ? 2 : 1);
  if (!moe)
    return p + (m->gelu && m->layernorm ? 2 * d * f + (m->mlp_bias ? f + d : 0)
                : 3 * d * f + (m->mlp_bias ? 2 * f + d : 0));
  p += d * (double) m->experts + (m->router_bias ? (double) m->experts : 0);
  p += (double) m->experts * expert_params (m);
  if (m->shared_ffn > 0)
    p += 3 * d * (double) m->shared_ffn + (m->shared_gate ? d : 0);
  return p;
}

static double
moe_layers (const struct model_cfg *m)
{
  double n = 0;
  for (int64_t i = 0; i < m->layers; i++)
    n += model_layer_moe (m, i);
  return n;
}

double
model_params (const struct model_cfg *m)
{
  double d = (double) m->hidden, f = (double) m->ffn, v = (double) m->vocab;
  double q = (double) (m->heads * m->head_dim), kv = (double) (m->kv_heads * m->head_dim);
  double e = (double) m->experts, l = (double) m->layers, pos = (double) m->max_pos;
  double emb = v * d, head = m->tied ? 0 : v * d, layer;
  switch (m->family) {
  case FAM_GPT2:       /* c_attn, c_proj, c_fc, c_proj with biases; two LayerNorms */
    layer = 4 * d * d + 4 * d + 2 * d * f + f + d + 4 * d;
    return emb + pos * d + l * layer + 2 * d + head;
  case FAM_OPT:        /* positions are offset by 2 in OPT's learned embedding */
    layer = 4 * d * d + 4 * d + 2 * d * f + f + d + 4 * d;
    return emb + (pos + 2) * d + l * layer + 2 * d + head;
  case FAM_BERT:       /* + token types, the pooler, the MLM transform and NSP heads */
    layer = 4 * d * d + 4 * d + 2 * d * f + f + d + 4 * d;
    return emb + pos * d + 2 * d + 2 * d + l * layer + (d * d + d) + (d * d + 3 * d + v)
           + (2 * d + 2) + head;
  case FAM_LLAMA:
    layer = d * q + 2 * d * kv + q * d + 3 * d * f + 2 * d;
    return emb + l * layer + d + head;
  case FAM_MIXTRAL:
    layer = d * q + 2 * d * kv + q * d + d * e + e * 3 * d * f + 2 * d;
    return emb + l * layer + d + head;
  case FAM_SWITCH: {
    double attn = 4 * d * q, dense = 2 * d * f, sparse = d * e + e * 2 * d * f;
    double step = (double) m->sparse_step, dl = (double) m->dec_layers;
    double enc_sparse = floor (l / step), dec_sparse = floor (dl / step);
    double enc = l * (attn + 2 * d) + enc_sparse * sparse + (l - enc_sparse) * dense;
    double dec = dl * (2 * attn + 3 * d) + dec_sparse * sparse + (dl - dec_sparse) * dense;
    /* relative position buckets (32 x heads) in each stack's first layer */
    return emb + enc + dec + 2 * 32 * (double) m->heads + 2 * d + head;
  }
  default: {
    double routed = moe_layers (m);
    return emb + routed * modern_layer_params (m, true) + (l - routed) * modern_layer_params (m,
                                                                                          false)
           + d * (m->layernorm ? 2 : 1) + head;
  }
  }
}

void
model_param_parts (const struct model_cfg *m, double *embed, double *head, double *experts)
{
  double d = (double) m->hidden, f = (double) m->ffn, v = (double) m->vocab;
  double e = (double) m->experts, pos = (double) m->max_pos;
  *embed = v * d + (m->family == FAM_GPT2 || m->family == FAM_OPT || m->family == FAM_BERT
                    ? pos * d : 0);
  *head = m->tied ? 0 : v * d;
  *experts = 0;
  if (m->family == FAM_MIXTRAL)
    *experts = (double) m->layers * e * 3 * d * f;
  else if (m->family == FAM_SWITCH)
    *experts = (floor ((double) m->layers / (double) m->sparse_step)
                + floor ((double) m->dec_layers / (double) m->sparse_step)) * e * 2 * d * f;
  else if (m->family >= FAM_QWEN)
    *experts = moe_layers (m) * e * expert_params (m);
}

double
model_active_params (const struct model_cfg *m)
{
  double emb, head, experts;
  model_param_parts (m, &emb, &head, &experts);
  if (m->experts == 0)
    return model_params (m);
  return model_params (m) - experts * (1 - (double) m->top_k / (double) m->experts);
}

int
model_cfg_builtin (struct model_cfg *m, const char *name)
{
  char *path = xasprintf ("%s/models/%s.json", pm_datadir (), name);
  int rc;
  if (access (path, R_OK) != 0) {
    pm_error ("--model '%s': no such built-in model and no such file (built-ins are in %s/models)",
              name, pm_datadir ());
    free (path);
    return -1;
  }
  rc = model_cfg_load (m, path);
  if (rc == 0) {
    free (m->name);
    m->name = xstrdup (name);
  }
  free (path);
  return rc;
}

void
model_cfg_set_layers (struct model_cfg *m, int64_t layers)
{
  if (m->layer_kind && layers > 0) {
    unsigned char *kind = xcalloc ((size_t) layers, 1);
    for (int64_t i = 0; i < layers; i++)
      kind[i] = m->layer_kind[i % m->layers];
    free (m->layer_kind);
    m->layer_kind = kind;
  }
  m->layers = layers;
}

void
model_cfg_free (struct model_cfg *m)
{
  free (m->name);
  free (m->path);
  free (m->arch);
  free (m->layer_kind);
  memset (m, 0, sizeof *m);
}

/* A Hugging Face model ID (ORG/NAME) read from the local Hugging Face cache, without the
 * network: HF_HUB_CACHE, else HF_HOME/hub, else XDG_CACHE_HOME/huggingface/hub, else
 * ~/.cache/huggingface/hub; the snapshot refs/main names (or the only one).  NULL: not an
 * ID (a path to be read as one); HF_NOT_CACHED: an ID the cache lacks (said). */
static char hf_not_cached;
#define HF_NOT_CACHED (&hf_not_cached)

static char *
hf_cached_config (const char *id)
{
  const char *slash = strchr (id, '/'), *env;
  char *hub, *repo, *ref = NULL, *path = NULL;
  if (id[0] == '.' || id[0] == '/' || slash == id || slash[1] == '\0' || strchr (slash + 1, '/'))
    return NULL;
  for (const char *p = id; *p; p++)
    if (!isalnum ((unsigned char) *p) && !strchr ("/-_.", *p))
      return NULL;
  if ((env = getenv ("HF_HUB_CACHE")) && *env)
    hub = xstrdup (env);
  else if ((env = getenv ("HF_HOME")) && *env)
    hub = xasprintf ("%s/hub", env);
  else if ((env = getenv ("XDG_CACHE_HOME")) && *env)
    hub = xasprintf ("%s/huggingface/hub", env);
  else
    hub = xasprintf ("%s/.cache/huggingface/hub", getenv ("HOME") ? getenv ("HOME") : "");
  repo = xasprintf ("%s/models--%.*s--%s", hub, (int) (slash - id), id, slash + 1);
  {                              /* refs/main: the commit whose snapshot is current */
    char *refs = xasprintf ("%s/refs/main", repo), buf[128];
    FILE *fp = fopen (refs, "r");
    if (fp && fgets (buf, sizeof buf, fp)) {
      buf[strcspn (buf, " \r\n")] = '\0';
      if (buf[0] && !strchr (buf, '/') && strcmp (buf, "..") != 0)
        ref = xstrdup (buf);
    }
    if (fp)
      fclose (fp);
    free (refs);
  }
  if (ref == NULL) {             /* no refs/main: the snapshot, if there is only one */
    char *snaps = xasprintf ("%s/snapshots", repo);
    DIR *d = opendir (snaps);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir (d)) != NULL)
      if (e->d_name[0] != '.' && n++ == 0)
        ref = xstrdup (e->d_name);
    if (d)
      closedir (d);
    free (snaps);
    if (n > 1) {
      pm_error ("--model %s: %d snapshots in %s and no refs/main: give the config.json's path",
                id, n, repo);
      free (ref);
      free (repo);
      free (hub);
      return HF_NOT_CACHED;
    }
  }
  if (ref)
    path = xasprintf ("%s/snapshots/%s/config.json", repo, ref);
  if (path == NULL || access (path, R_OK) != 0) {
    pm_error ("--model %s: not a file, and no config.json of it in the Hugging Face cache (%s); "
              "fetch it with: huggingface-cli download %s config.json", id, repo, id);
    free (path);
    path = HF_NOT_CACHED;
  }
  free (ref);
  free (repo);
  free (hub);
  return path;
}

int
model_cfg_open (struct model_cfg *m, const char *name)
{
  char *path;
  int rc;
  if (strstr (name, ".json") || !strchr (name, '/') || access (name, F_OK) == 0 ||
      (path = hf_cached_config (name)) == NULL)
    return strchr (name, '/') || strstr (name, ".json") ? model_cfg_load (m, name)
                                                         : model_cfg_builtin (m, name);
  if (path == HF_NOT_CACHED)
    return -1;
  rc = model_cfg_load (m, path);
  if (rc == 0) {                 /* named as the user named it */
    free (m->name);
    m->name = xstrdup (name);
  }
  free (path);
  return rc;
}
