/* graph.c: the per-device op graph: nodes, their kernels per phase, and the repeated layer span. */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* A tiny string pool: kernel op names repeat thousands of times. */
static char **pool;
static size_t npool;

const char *
intern (const char *s)
{
  for (size_t i = 0; i < npool; i++)
    if (strcmp (pool[i], s) == 0)
      return pool[i];
  pool = xrealloc (pool, (npool + 1) * sizeof *pool);
  pool[npool] = xstrdup (s);
  return pool[npool++];
}

struct node *
graph_add_node (struct graph *g, const char *name, const char *opname)
{
  struct node *nd;
  if (g->n == g->cap) {
    g->cap = g->cap ? g->cap * 2 : 64;
    g->nodes = xrealloc (g->nodes, g->cap * sizeof *g->nodes);
  }
  nd = &g->nodes[g->n++];
  memset (nd, 0, sizeof *nd);
  nd->name = xstrdup (name);
  nd->opname = xstrdup (opname);
  return nd;
}

struct kop *
node_add_op (struct node *nd, int phase, int kclass, const char *op)
{
  struct kop *o;
  nd->ops[phase] = xrealloc (nd->ops[phase], (nd->nops[phase] + 1) * sizeof (struct kop));
  o = &nd->ops[phase][nd->nops[phase]++];
  memset (o, 0, sizeof *o);
  o->kclass = kclass;
  o->op = intern (op);
  o->b = 1;
  return o;
}

int64_t
graph_weight (const struct graph *g, size_t i)
{
  return (i >= g->layer_begin && i < g->layer_end) ? g->repeat : 1;
}

int
graph_layer (const struct graph *g, size_t i)
{
  return (i >= g->layer_begin && i < g->layer_end) ? 0 : -1;
}

void
graph_free (struct graph *g)
{
  for (size_t i = 0; i < g->n; i++) {
    free (g->nodes[i].name);
    free (g->nodes[i].opname);
    for (int p = 0; p < NPHASES; p++)
      free (g->nodes[i].ops[p]);
  }
  free (g->nodes);
  free (g->source);
  memset (g, 0, sizeof *g);
}
