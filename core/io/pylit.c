/* pylit.c: a parser for the Python literals in NeuSight's traces: lists, tuples, sets, dicts' keys, ints, strings. */
#include <config.h>

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct pstate {
  const char *s, *p;
  const char *err;
  int depth;
};

static void
skip_ws (struct pstate *st)
{
  while (isspace ((unsigned char) *st->p))
    st->p++;
}

static int parse_value (struct pstate *st, struct pyv *v);

static int
fail (struct pstate *st, const char *msg)
{
  if (st->err == NULL)
    st->err = msg;
  return -1;
}

static int
parse_seq (struct pstate *st, struct pyv *v, char close)
{
  size_t cap = 0;
  v->type = PYV_LIST;
  v->items = NULL;
  v->n = 0;
  if (++st->depth > 64)
    return fail (st, "nesting too deep");
  skip_ws (st);
  while (*st->p != close) {
    struct pyv item;
    if (parse_value (st, &item) < 0) {
      pyv_free (&item);
      return -1;
    }
    if (v->n == cap) {
      cap = cap ? cap * 2 : 4;
      v->items = xrealloc (v->items, cap * sizeof *v->items);
    }
    v->items[v->n++] = item;
    skip_ws (st);
    if (*st->p == ':' && close == '}') {    /* dict: keep keys and values */
      st->p++;
      continue;
    }
    if (*st->p == ',') {
      st->p++;
      skip_ws (st);
      continue;
    }
    if (*st->p != close)
      return fail (st, "expected ',' or a closing bracket");
  }
  st->p++;
  st->depth--;
  return 0;
}

static int
parse_value (struct pstate *st, struct pyv *v)
{
  memset (v, 0, sizeof *v);
  skip_ws (st);
  switch (*st->p) {
  case '[': st->p++; return parse_seq (st, v, ']');
  case '(': st->p++; return parse_seq (st, v, ')');
  case '{': st->p++; return parse_seq (st, v, '}');
  case '\'': case '"': {
    char q = *st->p++;
    const char *b = st->p;
    while (*st->p && *st->p != q) {
      if (*st->p == '\\' && st->p[1])
        st->p++;
      st->p++;
    }
    if (*st->p != q)
      return fail (st, "unterminated string");
    v->type = PYV_STR;
    v->s = xmalloc ((size_t) (st->p - b) + 1);
    memcpy (v->s, b, (size_t) (st->p - b));
    v->s[st->p - b] = '\0';
    st->p++;
    return 0;
  }
  default:
    break;
  }
  if (strncmp (st->p, "set()", 5) == 0) {
    st->p += 5;
    v->type = PYV_LIST;
    return 0;
  }
  if (strncmp (st->p, "None", 4) == 0) {
    st->p += 4;
    v->type = PYV_NONE;
    return 0;
  }
  if (*st->p == '-' || isdigit ((unsigned char) *st->p)) {
    char *end;
    const char *b = st->p;
    errno = 0;
    v->i = strtoll (b, &end, 10);
    if (*end == '.' || *end == 'e' || *end == 'E') {
      v->type = PYV_FLOAT;
      v->f = strtod (b, &end);
    }
    else {
      v->type = PYV_INT;
      v->f = (double) v->i;
    }
    if (errno != 0 || end == b)
      return fail (st, "bad number");
    st->p = end;
    return 0;
  }
  return fail (st, "unexpected character");
}

int
pyv_parse (const char *text, struct pyv *out, const char **err, size_t *errpos)
{
  struct pstate st = { text, text, NULL, 0 };
  if (parse_value (&st, out) == 0) {
    skip_ws (&st);
    if (*st.p == '\0')
      return 0;
    fail (&st, "trailing text");
  }
  pyv_free (out);
  memset (out, 0, sizeof *out);
  *err = st.err;
  *errpos = (size_t) (st.p - text);
  return -1;
}

void
pyv_free (struct pyv *v)
{
  if (v == NULL)
    return;
  for (size_t i = 0; i < v->n; i++)
    pyv_free (&v->items[i]);
  free (v->items);
  free (v->s);
  v->items = NULL;
  v->s = NULL;
  v->n = 0;
}
