/* learned.h: what the learned predictor plugins share: finding, loading and checking their parameter file. */
#ifndef PERFMOD_LEARNED_H
#define PERFMOD_LEARNED_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "perfmod-plugin.h"

struct learned {
  const struct perfmod_host *host;
  const char *name;              /* the plugin's name, also the file's "predictor" key */
  char *path;                    /* --plugin-opt NAME:params=FILE, else DATADIR/params/NAME.params */
  struct perfmod_params *params;
  int failed;                    /* loading failed once: say so again, do not retry */
};

static const char *const learned_config_keys[] = { "params", NULL };

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
  return 0;
}

/* The parameters, loaded on first use; NULL after host->error(). */
static inline struct perfmod_params *
learned_params (struct learned *l)
{
  const char *who;
  if (l->params || l->failed) {
    if (l->failed)
      l->host->error ("no parameters (loading %s failed)", l->path);
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
    l->host->error ("%s holds parameters for '%s', not %s", l->path, who ? who : "(none)",
                    l->name);
    l->host->params_free (l->params);
    l->params = NULL;
    l->failed = 1;
  }
  return l->params;
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
