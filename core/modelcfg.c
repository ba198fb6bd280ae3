/* modelcfg.c: a model's dimensions from a Hugging Face config.json (GPT-2/3, OPT, BERT, Llama, Switch, Mixtral). */
#include <config.h>

#include <jansson.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The first of keys present in obj as a positive integer; 0 if none. */
static int64_t
get_int (json_t *obj, const char *const *keys, const char *path, int *errors)
{
  for (; *keys; keys++) {
    json_t *v = json_object_get (obj, *keys);
    if (v == NULL || json_is_null (v))
      continue;
    if (!json_is_integer (v) || json_integer_value (v) < 0) {
      pm_error ("%s: key '%s' must be a non-negative integer", path, *keys);
      (*errors)++;
      return 0;
    }
    return json_integer_value (v);
  }
  return 0;
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
  json_error_t jerr;
  json_t *root = json_load_file (path, 0, &jerr);
  json_t *mt;
  char *tmp;
  int errors = 0;

  memset (m, 0, sizeof *m);
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
  m->arch = xstrdup (json_is_string (mt) ? json_string_value (mt) : "unknown");
  m->layers = get_int (root, k_layers, path, &errors);
  m->hidden = get_int (root, k_hidden, path, &errors);
  m->heads = get_int (root, k_heads, path, &errors);
  m->ffn = get_int (root, k_ffn, path, &errors);
  m->vocab = get_int (root, k_vocab, path, &errors);
  m->experts = get_int (root, k_experts, path, &errors);
  m->top_k = get_int (root, k_topk, path, &errors);
  m->max_pos = get_int (root, k_pos, path, &errors);
  json_decref (root);
  if (m->ffn == 0)
    m->ffn = 4 * m->hidden;      /* GPT-2's n_inner: null means 4 x width */
  if (m->experts > 0 && m->top_k == 0)
    m->top_k = 1;                /* Switch routing */
  m->encoder = strcmp (m->arch, "bert") == 0;
  if (errors == 0) {
    const char *missing = m->layers == 0 ? "n_layer/num_hidden_layers/num_layers"
                        : m->hidden == 0 ? "n_embd/hidden_size/d_model"
                        : m->heads == 0 ? "n_head/num_attention_heads/num_heads"
                        : m->vocab == 0 ? "vocab_size" : NULL;
    if (missing) {
      pm_error ("%s: missing key %s", path, missing);
      errors++;
    }
    else if (m->hidden % m->heads != 0) {
      pm_error ("%s: hidden size %lld is not a multiple of %lld heads", path,
                (long long) m->hidden, (long long) m->heads);
      errors++;
    }
  }
  if (errors) {
    model_cfg_free (m);
    return -1;
  }
  return 0;
}

void
model_cfg_free (struct model_cfg *m)
{
  free (m->name);
  free (m->path);
  free (m->arch);
  memset (m, 0, sizeof *m);
}
