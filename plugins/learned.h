/* learned.h: what the learned predictor plugins share: finding, loading and checking their parameter file. */
#ifndef PERFMOD_LEARNED_H
#define PERFMOD_LEARNED_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfmod-plugin.h"

struct learned {
  const struct perfmod_host *host;
  const char *name;              /* the plugin's name, also the file's "predictor" key */
  char *path;                    /* --plugin-opt NAME:params=FILE, else DATADIR/params/NAME.params */
  struct perfmod_params *params;
  int failed;                    /* loading failed once: say so again, do not retry */
  const char *suffix;            /* learned_optional's default file: NAME SUFFIX.params ("-tc") */
};

static const char *const learned_config_keys[] = { "params", NULL };

typedef void (*learned_error_fn) (const char *fmt, ...);

/* How to refuse the parameter file: host->input_error (perfmod exits 2,
 * bad input), or host->error from a core without it.  Called as
 * learned_bad (l) ("%s: ...", l->path). */
static inline learned_error_fn
learned_bad (const struct learned *l)
{
  const struct perfmod_host *h = l->host;
  if (h->struct_size >= offsetof (struct perfmod_host, input_error) + sizeof h->input_error &&
      h->input_error)
    return h->input_error;
  return h->error;
}

static inline struct perfmod_params *learned_params (struct learned *l);

static inline int
learned_init (struct learned *l, const struct perfmod_host *host, const char *name)
{
  memset (l, 0, sizeof *l);
  l->host = host;
  l->name = name;
  if (host->struct_size < offsetof (struct perfmod_host, mlp_free) + sizeof host->mlp_free) {
    host->error ("this perfmod offers no parameter files (host table too old)");
    return -1;
  }
  return 0;
}

static inline int
learned_config (struct learned *l, const char *key, const char *value)
{
  if (strcmp (key, "params") != 0 || l->params) {
    l->host->error (l->params ? "parameters already loaded" : "unknown key");
    return -1;
  }
  l->host->free (l->path);
  l->path = l->host->alloc (strlen (value) + 1);
  strcpy (l->path, value);
  /* A file named on the command line is read now: a bad one is refused
   * before anything is predicted, whatever the run would have needed. */
  return learned_params (l) ? 0 : -1;
}

/* The dtypes a parameter file's model covers, from its header: the key
 * "dtypes.CLASS" for one kernel class (CLASS: linear, bmm, elementwise,
 * softmax, layernorm, attention), else "dtypes" for every class, else
 * fp32 alone (NeuSight's measurements are fp32).  Each value is a comma
 * list of the dtypes' names; in the file's header, e.g.
 *   dtypes: fp32,bf16
 *   dtypes.linear: fp32,bf16,fp8
 * (perfmod train: params_set (p, "dtypes.linear", "fp32,bf16,fp8")).  An
 * unknown name refuses the file when it is loaded. */
static const char *const learned_dtype_names[PERFMOD_DTYPE_NTYPES] = {
  "fp32", "tf32", "fp16", "bf16", "fp8", "nvfp4", "fp8_block"
};
static const char *const learned_dtype_classes[] = {
  "linear", "bmm", "elementwise", "softmax", "layernorm", "attention", "moe"
};

/* The key's class name for kclass, or NULL. */
static inline const char *
learned_class_key (int kclass)
{
  switch (kclass) {
  case PERFMOD_KERNEL_LINEAR: return "linear";
  case PERFMOD_KERNEL_BMM: return "bmm";
  case PERFMOD_KERNEL_ELEMENTWISE: return "elementwise";
  case PERFMOD_KERNEL_SOFTMAX: return "softmax";
  case PERFMOD_KERNEL_LAYERNORM: return "layernorm";
  case PERFMOD_KERNEL_ATTENTION: return "attention";
  case PERFMOD_KERNEL_MOE: return "moe";
  default: return NULL;
  }
}

/* A comma list of dtype names as a mask; -1 (naming the key) on an
 * unknown or missing name. */
static inline int
learned_dtype_mask (struct learned *l, const char *key, const char *list, unsigned *mask)
{
  const char *p = list;
  *mask = 0;
  for (;;) {
    const char *e = strchr (p, ',');
    size_t n = e ? (size_t) (e - p) : strlen (p);
    int d;
    while (n > 0 && (*p == ' ' || *p == '\t'))
      p++, n--;
    while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
      n--;
    for (d = 0; d < PERFMOD_DTYPE_NTYPES; d++)
      if (strlen (learned_dtype_names[d]) == n && strncmp (p, learned_dtype_names[d], n) == 0)
        break;
    if (d == PERFMOD_DTYPE_NTYPES) {
      learned_bad (l) ("%s: %s: '%.*s' is no dtype (expected a comma list of fp32, tf32, "
                      "fp16, bf16, fp8, nvfp4, fp8_block)", l->path, key, (int) n, p);
      return -1;
    }
    *mask |= 1u << d;
    if (e == NULL)
      return 0;
    p = e + 1;
  }
}

/* The file's dtypes keys checked once it is loaded. */
static inline int
learned_check_dtypes (struct learned *l)
{
  char key[32];
  unsigned mask;
  const char *v = l->host->params_get (l->params, "dtypes");
  if (v && learned_dtype_mask (l, "dtypes", v, &mask) < 0)
    return -1;
  for (size_t i = 0; i < sizeof learned_dtype_classes / sizeof learned_dtype_classes[0]; i++) {
    snprintf (key, sizeof key, "dtypes.%s", learned_dtype_classes[i]);
    v = l->host->params_get (l->params, key);
    if (v && learned_dtype_mask (l, key, v, &mask) < 0)
      return -1;
  }
  return 0;
}

/* The plugin's dtypes() for a class it models (others: every dtype, as
 * bytes over bandwidth has no dtype to be wrong about). */
static inline unsigned
learned_dtypes (struct learned *l, int kclass, int modelled)
{
  const char *name = learned_class_key (kclass), *v;
  char key[32];
  unsigned mask = 1u << PERFMOD_DTYPE_FP32;
  if (!modelled || name == NULL)
    return ~0u;
  if (l->params == NULL && learned_params (l) == NULL)
    return mask;
  snprintf (key, sizeof key, "dtypes.%s", name);
  if ((v = l->host->params_get (l->params, key)) == NULL)
    v = l->host->params_get (l->params, strcpy (key, "dtypes"));
  if (v && learned_dtype_mask (l, key, v, &mask) < 0)
    return 1u << PERFMOD_DTYPE_FP32;        /* refused at loading; not reached */
  return mask;
}

/* The parameters, loaded on first use; NULL after host->error(). */
static inline struct perfmod_params *
learned_params (struct learned *l)
{
  const char *who;
  if (l->params || l->failed) {
    if (l->failed)
      learned_bad (l) ("no parameters (loading %s failed)", l->path);
    return l->params;
  }
  if (l->path == NULL) {
    const char *dir = l->host->datadir ();
    l->path = l->host->alloc (strlen (dir) + strlen (l->name) + 16);
    strcpy (l->path, dir);
    strcat (l->path, "/params/");
    strcat (l->path, l->name);
    strcat (l->path, ".params");
  }
  l->params = l->host->params_load (l->path);
  if (l->params == NULL) {
    l->failed = 1;
    return NULL;
  }
  who = l->host->params_get (l->params, "predictor");
  if (who == NULL || strcmp (who, l->name) != 0) {
    learned_bad (l) ("%s holds parameters for '%s', not %s", l->path, who ? who : "(none)",
                     l->name);
    l->host->params_free (l->params);
    l->params = NULL;
    l->failed = 1;
  }
  else if (learned_check_dtypes (l) < 0) {
    l->host->params_free (l->params);
    l->params = NULL;
    l->failed = 1;
  }
  return l->params;
}

/* The per-dtype models of the modern tables, a parameter file of their
 * own beside the fp32 one: DATADIR/params/NAME-tc.params if it is there,
 * or --plugin-opt NAME:tc_params=FILE, or none (tc_params=none).  *state:
 * 0 not tried, 1 loaded, -1 absent, left out or refused.  Returns 1 when
 * loaded, 0 when there is none, -1 after host->error() for a file that is
 * there but unusable. */
static inline int
learned_optional (struct learned *l, int *state)
{
  if (*state > 0)
    return 1;
  if (*state < 0) {
    if (l->failed)
      learned_bad (l) ("no per-dtype models (loading %s failed)", l->path);
    return l->failed ? -1 : 0;
  }
  *state = -1;
  if (l->path == NULL) {
    const char *dir = l->host->datadir ();
    FILE *fp;
    const char *suffix = l->suffix ? l->suffix : "-tc";
    l->path = l->host->alloc (strlen (dir) + strlen (l->name) + strlen (suffix) + 24);
    strcpy (l->path, dir);
    strcat (l->path, "/params/");
    strcat (l->path, l->name);
    strcat (l->path, suffix);
    strcat (l->path, ".params");
    if ((fp = fopen (l->path, "r")) == NULL)
      return 0;
    fclose (fp);
  }
  if (learned_params (l) == NULL)
    return -1;
  *state = 1;
  return 1;
}

/* tc_params=FILE or none for learned_optional. */
static inline int
learned_optional_config (struct learned *l, int *state, const char *value)
{
  if (strcmp (value, "none") == 0) {
    *state = -1;
    return 0;
  }
  return learned_config (l, "params", value);
}

/* Position of name in the comma-separated list under key, or -1. */
static inline int
learned_list_index (struct learned *l, const char *key, const char *name)
{
  const char *list = l->host->params_get (l->params, key);
  size_t len = strlen (name);
  int i = 0;
  for (const char *p = list; p && *p; i++) {
    const char *e = strchr (p, ',');
    size_t n = e ? (size_t) (e - p) : strlen (p);
    if (n == len && strncmp (p, name, len) == 0)
      return i;
    if (e == NULL)
      break;
    p = e + 1;
  }
  return -1;
}

static inline void
learned_fini (struct learned *l)
{
  if (l->params)
    l->host->params_free (l->params);
  l->host->free (l->path);
}

#endif /* PERFMOD_LEARNED_H */
