/* modelcfg.c: a model's dimensions from a Hugging Face config.json (GPT-2/3, OPT, BERT, Llama, Switch, Mixtral). */
#include <config.h>

#include <jansson.h>
#include <libgen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* The first of keys present in obj as an integer from 0 to max; 0 if none. */
static int64_t
get_int (json_t *obj, const char *const *keys, int64_t max, const char *path, int *errors)
{
  for (; *keys; keys++) {
    json_t *v = json_object_get (obj, *keys);
    if (v == NULL || json_is_null (v))
      continue;
    if (!json_is_integer (v) || json_integer_value (v) < 0 || json_integer_value (v) > max) {
      pm_error ("%s: key '%s' must be an integer from 0 to %lld", path, *keys, (long long) max);
      (*errors)++;
      return 0;
    }
    return json_integer_value (v);
  }
  return 0;
}

static const struct {
  const char *model_type;
  int family;
} families[] = {
  { "gpt2", FAM_GPT2 }, { "opt", FAM_OPT }, { "bert", FAM_BERT }, { "llama", FAM_LLAMA },
  { "mistral", FAM_LLAMA }, { "mixtral", FAM_MIXTRAL }, { "switch_transformers", FAM_SWITCH },
};

const char *
family_name (int family)
{
  for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
    if (families[i].family == family)
      return families[i].model_type;
  return "?";
}

static bool
get_bool (json_t *obj, const char *key, bool dflt)
{
  json_t *v = json_object_get (obj, key);
  return json_is_boolean (v) ? json_is_true (v) : dflt;
}

int
model_cfg_load (struct model_cfg *m, const char *path)
{
  static const char *const k_layers[] = { "n_layer", "num_hidden_layers", "num_layers", NULL };
  static const char *const k_hidden[] = { "n_embd", "hidden_size", "d_model", NULL };
  static const char *const k_heads[] = { "n_head", "num_attention_heads", "num_heads", NULL };
  static const char *const k_ffn[] = { "n_inner", "intermediate_size", "ffn_dim", "d_ff", NULL };
  static const char *const k_vocab[] = { "vocab_size", NULL };
  static const char *const k_experts[] = { "num_experts", "num_local_experts", NULL };
  static const char *const k_topk[] = { "num_experts_per_tok", "moe_top_k", NULL };
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
    pm_error ("%s: missing key model_type (one of gpt2, opt, bert, llama, mistral, mixtral, "
              "switch_transformers)", path);
    json_decref (root);
    model_cfg_free (m);
    return -1;
  }
  m->arch = xstrdup (json_string_value (mt));
  for (f = 0; f < sizeof families / sizeof families[0]; f++)
    if (strcmp (m->arch, families[f].model_type) == 0)
      break;
  if (f == sizeof families / sizeof families[0]) {
    pm_error ("%s: model_type '%s' is not an architecture perfmod builds (gpt2, opt, bert, "
              "llama, mistral, mixtral, switch_transformers); import a traced graph with "
              "--opgraph instead", path, m->arch);
    json_decref (root);
    model_cfg_free (m);
    return -1;
  }
  m->family = families[f].family;
  m->layers = get_int (root, k_layers, PM_MAX_COUNT, path, &errors);
  m->hidden = get_int (root, k_hidden, PM_MAX_DIM, path, &errors);
  m->heads = get_int (root, k_heads, PM_MAX_DIM, path, &errors);
  m->ffn = get_int (root, k_ffn, PM_MAX_DIM, path, &errors);
  m->vocab = get_int (root, k_vocab, PM_MAX_DIM, path, &errors);
  m->experts = get_int (root, k_experts, PM_MAX_COUNT, path, &errors);
  m->top_k = get_int (root, k_topk, PM_MAX_COUNT, path, &errors);
  m->max_pos = get_int (root, k_pos, PM_MAX_DIM, path, &errors);
  m->kv_heads = get_int (root, k_kv, PM_MAX_DIM, path, &errors);
  m->head_dim = get_int (root, k_dkv, PM_MAX_DIM, path, &errors);
  m->dec_layers = get_int (root, k_dec, PM_MAX_COUNT, path, &errors);
  m->sparse_step = get_int (root, k_step, PM_MAX_COUNT, path, &errors);
  m->capacity = get_int (root, k_cap, PM_MAX_DIM, path, &errors);
  /* Hugging Face's defaults: Llama-family configs say tie_word_embeddings
   * when true; GPT-2, OPT, BERT and T5 tie unless told otherwise. */
  m->tied = get_bool (root, "tie_word_embeddings",
                      m->family != FAM_LLAMA && m->family != FAM_MIXTRAL);
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
                        : (m->family == FAM_MIXTRAL || m->family == FAM_SWITCH) && m->experts == 0
                          ? "num_local_experts/num_experts"
                        : m->family == FAM_MIXTRAL && m->top_k == 0 ? "num_experts_per_tok"
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
  default:
    return 0;
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
model_cfg_free (struct model_cfg *m)
{
  free (m->name);
  free (m->path);
  free (m->arch);
  memset (m, 0, sizeof *m);
}

int
model_cfg_open (struct model_cfg *m, const char *name)
{
  if (strchr (name, '/') || strstr (name, ".json"))
    return model_cfg_load (m, name);
  return model_cfg_builtin (m, name);
}
