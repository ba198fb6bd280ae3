/* json.c: what every command's JSON shares (doc/perfmod.schema.json): the envelope, the strategy and memory objects, null for what is absent. */
#include <config.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

json_t *
json_envelope (const char *command)
{
  return json_pack ("{s:s, s:s}", "perfmod", PACKAGE_VERSION, "command", command);
}

json_t *
json_num (double x)
{
  return isfinite (x) ? json_real (x) : json_null ();
}

json_t *
json_count (double x)
{
  if (isfinite (x) && x == floor (x) && fabs (x) < 9007199254740992.0)
    return json_integer ((json_int_t) x);
  return json_num (x);
}

json_t *
json_strategy (const struct strategy *s, bool train)
{
  char spec[16 * PM_MAX_STAGES + 512];
  json_t *o;
  if (train) {
    char mods[80];
    strategy_spec (s, spec, sizeof spec);
    o = json_pack ("{s:s, s:i, s:i, s:i, s:i, s:i, s:o, s:i, s:i, s:s, s:i, s:s, s:o, s:b, s:b, "
                   "s:s, s:s, s:b, s:b, s:i, s:b}", "spec", spec, "tp", s->tp, "pp", s->pp,
                   "dp", s->dp,
                   "cp", s->cp, "ep", s->ep,   /* etp null: the experts' tp is tp */
                   "etp", s->etp > 0 ? json_integer (s->etp) : json_null (), "mbs", s->mbs,
                   "vp", s->vp, "schedule", schedule_name (s->schedule), "zero", s->zero,
                   "recompute", recompute_name (s->recompute), "recompute_modules",
                   s->recompute == RECOMPUTE_SELECTIVE
                   ? json_string (rmod_names (strategy_rmods (s), mods, sizeof mods)) : json_null (),
                   "sp", s->sp, "tpo", s->tpo, "kernels", kernels_name (s->kernels),
                   "dispatcher", dispatcher_name (s->dispatcher), "a2a_overlap", s->a2a_overlap,
                   "shared_overlap", s->shared_overlap, "mtp", s->mtp,
                   "grad_fp32", !s->grad_low);
  }
  else {                                /* a serving replica's keys, and dp its replicas */
    int n = snprintf (spec, sizeof spec, "tp=%d,pp=%d,dp=%d,ep=%d", s->tp, s->pp, s->dp, s->ep);
    if (s->etp > 0)
      n += snprintf (spec + n, sizeof spec - (size_t) n, ",etp=%d", s->etp);
    if (s->dispatcher != PERFMOD_DISPATCH_ALLTOALL)
      snprintf (spec + n, sizeof spec - (size_t) n, ",dispatcher=%s",
                dispatcher_name (s->dispatcher));
    o = json_pack ("{s:s, s:i, s:i, s:i, s:i, s:o, s:s}", "spec", spec, "tp", s->tp, "pp", s->pp,
                   "dp", s->dp, "ep", s->ep,
                   "etp", s->etp > 0 ? json_integer (s->etp) : json_null (),
                   "dispatcher", dispatcher_name (s->dispatcher));
  }
  return o;
}

json_t *
json_memory_gib (const struct memory_estimate *m)
{
  return json_pack ("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "weights", m->weights / PM_GIB,
                    "gradients", m->gradients / PM_GIB, "optimizer", m->optimizer / PM_GIB,
                    "activations", m->activations / PM_GIB, "kv_cache", m->kv_cache / PM_GIB,
                    "reserve", m->reserve / PM_GIB, "total", m->total / PM_GIB,
                    "capacity", m->capacity / PM_GIB);
}

void
json_print (json_t *root, FILE *out)
{
  json_dumpf (root, out, JSON_INDENT (2) | JSON_REAL_PRECISION (10));
  fputc ('\n', out);
  json_decref (root);
}

/* One CSV cell as JSON: empty -> null, true/false, a finite number (an integer where it is
 * one), else the text. */
static json_t *
csv_cell_json (const char *s)
{
  char *end;
  double x;
  if (*s == '\0')
    return json_null ();
  if (strcmp (s, "true") == 0 || strcmp (s, "false") == 0)
    return json_boolean (s[0] == 't');
  errno = 0;
  x = strtod (s, &end);
  if (end != s && *end == '\0' && errno == 0) {
    if (!isfinite (x))
      return json_null ();
    if (strpbrk (s, ".eE") == NULL && fabs (x) < 9007199254740992.0)
      return json_integer ((json_int_t) x);
    return json_real (x);
  }
  return json_string (s);
}

/* The next field of an RFC 4180 record at *p (quotes doubled inside quoted fields) into a
 * fresh string; *eol true where the record ended after it. */
static char *
csv_field (const char **p, const char *end, bool *eol)
{
  size_t cap = 64, n = 0;
  char *out = xmalloc (cap);
  const char *s = *p;
  bool quoted = s < end && *s == '"';
  if (quoted)
    s++;
  for (; s < end; s++) {
    if (quoted && *s == '"') {
      if (s + 1 < end && s[1] == '"')
        s++;
      else {
        quoted = false;
        continue;
      }
    }
    else if (!quoted && (*s == ',' || *s == '\n'))
      break;
    if (n + 2 > cap)
      out = xrealloc (out, cap *= 2);
    out[n++] = *s;
  }
  out[n] = '\0';
  *eol = s >= end || *s == '\n';
  *p = s < end ? s + 1 : end;
  return out;
}

json_t *
json_from_csv (const char *text, size_t len)
{
  const char *p = text, *end = text + len;
  json_t *rows = json_array ();
  char **head = NULL;
  size_t nhead = 0;
  bool eol = false;
  while (p < end && !eol) {                     /* the header */
    head = xrealloc (head, (nhead + 1) * sizeof *head);
    head[nhead++] = csv_field (&p, end, &eol);
  }
  while (p < end) {
    json_t *row = json_object ();
    size_t i = 0;
    if (*p == '\n') {                          /* a blank line ends the table */
      json_decref (row);
      break;
    }
    for (eol = false; !eol; i++) {
      char *f = csv_field (&p, end, &eol);
      if (i < nhead)
        json_object_set_new (row, head[i], csv_cell_json (f));
      free (f);
    }
    for (; i < nhead; i++)                     /* a short row: its missing cells null */
      json_object_set_new (row, head[i], json_null ());
    json_array_append_new (rows, row);
  }
  for (size_t i = 0; i < nhead; i++)
    free (head[i]);
  free (head);
  return rows;
}
