/* graph.c: the per-device op graph: nodes, their kernels per phase, and the repeated layer span. */
#include <config.h>

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The string pool: kernel op names repeat thousands of times, and a
 * traced graph or a kernel table may hold 10^5 distinct names, so they
 * are found by hash. */
static struct name_index pool;
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;   /* search's threads build graphs */

/* Each thread's recent names, by a hash of their text, in front of the
 * pool: perfmod search's threads intern every op of every graph they
 * build, and the pool's lock would serialise them.  An entry is checked
 * by its text (interned names never change). */
#define INTERN_CACHE 512
static __thread const char *intern_cache[INTERN_CACHE];

const char *
intern (const char *s)
{
  const struct name_slot *e;
  const char *name;
  uint32_t h = 2166136261u;
  for (const unsigned char *p = (const unsigned char *) s; *p; p++)
    h = (h ^ *p) * 16777619u;
  const char **slot = &intern_cache[h % INTERN_CACHE];
  if (*slot && strcmp (*slot, s) == 0)
    return *slot;
  pthread_mutex_lock (&pool_lock);
  if ((e = name_index_lookup (&pool, s)) != NULL)
    name = e->name;
  else {
    char *copy = xstrdup (s);
    name_index_put (&pool, copy, 0);
    name = copy;
  }
  pthread_mutex_unlock (&pool_lock);
  *slot = name;
  return name;
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
  int64_t copies = g->nodes[i].copies > 1 ? g->nodes[i].copies : 1;
  if (i < g->layer_begin || i >= g->layer_end)
    return copies;
  return (g->nodes[i].count > 0 ? g->nodes[i].count : g->repeat) * copies;
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
