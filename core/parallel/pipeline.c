/* pipeline.c: a pipeline-parallel step simulated over its stages: GPipe, 1F1B and interleaved 1F1B. */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* One forward or backward of a micro-batch on a model chunk. */
struct pop {
  bool bw;
  int mb, chunk;
};

/* Megatron's interleaved order: the k-th forward (backward) of a rank
 * runs chunk (k mod p*v) / p (reversed for backward) on micro-batch
 * (k / p*v) * p + k mod p. */
static struct pop
interleaved_op (int k, bool bw, int p, int v, int rank)
{
  struct pop o;
  int in_group = k % (p * v), local = in_group / p;
  o.bw = bw;
  o.mb = (k / (p * v)) * p + k % p;
  o.chunk = (bw ? v - 1 - local : local) * p + rank;
  return o;
}

/* Operation idx of the order in which rank `rank` runs its operations. */
static struct pop
rank_op (const struct pipe_input *in, int rank, size_t idx)
{
  int p = in->stages, m = in->microbatches, v = in->vp > 1 ? in->vp : 1;
  int total = m * v, k = (int) idx, warm;
  bool interleaved = in->schedule == SCHED_INTERLEAVED;

  if (!in->backward)
    return v > 1 ? interleaved_op (k, false, p, v, rank) : (struct pop) { false, k, rank };
  if (in->schedule == SCHED_GPIPE)
    return k < m ? (struct pop) { false, k, rank } : (struct pop) { true, k - m, rank };
  if (interleaved) {
    warm = (p - rank - 1) * 2 + (v - 1) * p;
    if (warm > total)
      warm = total;
  }
  else {
    warm = p - rank - 1 < m ? p - rank - 1 : m;
    total = m;
  }
  if (k < warm)                                          /* warm-up forwards */
    return interleaved ? interleaved_op (k, false, p, v, rank) : (struct pop) { false, k, rank };
  if (k < warm + 2 * (total - warm)) {                   /* one forward, one backward */
    int j = (k - warm) / 2;
    bool bw = (k - warm) % 2 == 1;
    int at = bw ? j : warm + j;
    return interleaved ? interleaved_op (at, bw, p, v, rank) : (struct pop) { bw, at, rank };
  }
  k -= warm + 2 * (total - warm) - (total - warm);       /* the last backwards */
  return interleaved ? interleaved_op (k, true, p, v, rank) : (struct pop) { true, k, rank };
}

/* The order in which rank `rank` runs its operations, all of them. */
static size_t
rank_order (const struct pipe_input *in, int rank, struct pop *ops)
{
  size_t n = (size_t) (in->backward ? 2 : 1) * (size_t) in->microbatches
             * (size_t) (in->vp > 1 ? in->vp : 1);
  for (size_t k = 0; k < n; k++)
    ops[k] = rank_op (in, rank, k);
  return n;
}

void
pipe_log_free (struct pipe_log *l)
{
  free (l->ev);
  memset (l, 0, sizeof *l);
}

static void
log_event (struct pipe_log *l, int rank, int kind, const struct pop *o, double start, double end)
{
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 256;
    l->ev = xrealloc (l->ev, l->cap * sizeof *l->ev);
  }
  l->ev[l->n++] = (struct pipe_event) { rank, kind, o->mb, o->chunk, start, end };
}

/* The schedule simulated; inlined twice, so that the copy without a log
 * (the search's) pays nothing for recording. */
static inline __attribute__ ((always_inline)) int
simulate (const struct pipe_input *in, struct pipe_result *out, struct pipe_log *log)
{
  int p = in->stages, m = in->microbatches, v = in->vp > 1 ? in->vp : 1, chunks = p * v;
  size_t per_rank = (size_t) (in->backward ? 2 : 1) * (size_t) m * (size_t) v;
  struct pop *ops = xcalloc ((size_t) p * per_rank, sizeof *ops);
  size_t *next = xcalloc ((size_t) p, sizeof *next), done = 0, total = 0;
  double *fdone = xmalloc ((size_t) chunks * (size_t) m * sizeof *fdone);
  double *bdone = xmalloc ((size_t) chunks * (size_t) m * sizeof *bdone);
  double *clock = xcalloc ((size_t) p, sizeof *clock), step = 0, busy = 0;
  int rc = 0;

  memset (out, 0, sizeof *out);
  if (v > 1 && m % p != 0) {
    pm_error ("interleaved schedule: %d micro-batches is not a multiple of pp=%d (Megatron's "
              "requirement)", m, p);
    rc = -1;
    goto out;
  }
  for (size_t i = 0; i < (size_t) chunks * (size_t) m; i++)
    fdone[i] = bdone[i] = -1;
  for (int r = 0; r < p; r++)
    total += rank_order (in, r, ops + (size_t) r * per_rank);

  /* List scheduling: a rank runs its next operation as soon as its
   * inputs have arrived; a sweep that moves no rank means a deadlock. */
  while (done < total) {
    bool moved = false;
    for (int r = 0; r < p; r++) {
      while (next[r] < per_rank) {
        const struct pop *o = &ops[(size_t) r * per_rank + next[r]];
        size_t at = (size_t) o->chunk * (size_t) m + (size_t) o->mb;
        double ready = 0, cost, sent = -1;   /* sent: when what it waits for left */
        if (!o->bw) {
          if (o->chunk > 0) {
            double prev = fdone[at - (size_t) m];
            if (prev < 0)
              break;
            ready = prev + in->p2p_ms;
            sent = prev;
          }
          cost = in->fw_ms[o->chunk];
        }
        else {
          if (fdone[at] < 0)
            break;
          ready = fdone[at];
          if (o->chunk < chunks - 1) {
            double later = bdone[at + (size_t) m];
            if (later < 0)
              break;
            if (later + in->p2p_ms > ready) {
              ready = later + in->p2p_ms;
              sent = later;
            }
          }
          cost = in->bw_ms[o->chunk];
        }
        double start = clock[r] > ready ? clock[r] : ready;
        if (log) {
          /* the wait for a transfer that ran past the rank's own work */
          if (sent >= 0 && ready > clock[r] && in->p2p_ms > 0)
            log_event (log, r, PEV_P2P, o, sent > clock[r] ? sent : clock[r], ready);
          log_event (log, r, o->bw ? PEV_BW : PEV_FW, o, start, start + cost);
        }
        clock[r] = start + cost;
        busy += cost;
        (o->bw ? bdone : fdone)[at] = clock[r];
        next[r]++;
        done++;
        moved = true;
      }
    }
    if (!moved) {
      pm_error ("pipeline schedule %s deadlocked (a bug: please report it)",
                schedule_name (in->schedule));
      rc = -1;
      goto out;
    }
  }
  for (int r = 0; r < p; r++)
    if (clock[r] > step)
      step = clock[r];
  out->step_ms = step;
  out->bubble = step > 0 ? 1 - busy / ((double) p * step) : 0;
out:
  free (ops);
  free (next);
  free (fdone);
  free (bdone);
  free (clock);
  return rc;
}

int
pipeline_simulate (const struct pipe_input *in, struct pipe_result *out)
{
  return in->log ? simulate (in, out, in->log) : simulate (in, out, NULL);
}

/* ---- schedules compiled (perfmod search) ----
 * Which operation the list scheduling above runs next depends only on
 * which operations are done, never on their times (each finishes at or
 * after 0 when no time is negative): the order and each operation's
 * inputs are a function of the schedule's shape.  Compiled once, the
 * order reruns for any times as one pass, with the same additions and
 * comparisons in the same order as simulate(), so the same bits. */

/* One operation: its rank, its time (forward of chunk c: c; backward:
 * chunks + c), the operations whose ends it waits for (-1: none): a
 * forward the previous chunk's forward; a backward its own forward and
 * the next chunk's backward. */
struct pipe_step {
  uint16_t rank, cost;
  int32_t dep, dep2;
};
struct pipe_prog {
  int stages, vp, microbatches, backward;
  enum pm_schedule schedule;
  size_t n;
  struct pipe_step *step;
};
struct pipe_progs {
  struct pipe_prog *v;
  size_t n, cap, bytes;
  double *t;             /* scratch: each operation's end, the ranks' clocks, the times */
  size_t tcap;
};

/* Compiled programs a thread keeps at most (bytes); beyond, it starts again. */
#define PIPE_PROGS_BYTES ((size_t) 64 << 20)
/* Operations of the largest schedule compiled: larger ones are simulated. */
#define PIPE_PROG_MAX_STEPS ((size_t) 1 << 22)

struct pipe_progs *
pipe_progs_new (void)
{
  return xcalloc (1, sizeof (struct pipe_progs));
}

static void
progs_clear (struct pipe_progs *pp)
{
  for (size_t i = 0; i < pp->n; i++)
    free (pp->v[i].step);
  pp->n = 0;
  pp->bytes = 0;
}

void
pipe_progs_free (struct pipe_progs *pp)
{
  if (pp) {
    progs_clear (pp);
    free (pp->v);
    free (pp->t);
    free (pp);
  }
}

/* simulate()'s sweep, with what is done instead of when: false when it
 * would fail (a deadlock, micro-batches not in rounds of pp) or the
 * shape is too large to compile (simulate() then answers). */
static bool
prog_compile (const struct pipe_input *in, struct pipe_prog *pg)
{
  int p = in->stages, m = in->microbatches, v = in->vp > 1 ? in->vp : 1, chunks = p * v;
  size_t per_rank = (size_t) (in->backward ? 2 : 1) * (size_t) m * (size_t) v;
  size_t total = (size_t) p * per_rank, n = 0, *next;
  struct pop *cur;
  int32_t *fpos, *bpos;
  bool ok = true;

  if (p < 1 || m < 1 || (v > 1 && m % p != 0) || p > UINT16_MAX || 2 * (size_t) chunks > UINT16_MAX ||
      (size_t) p * per_rank > PIPE_PROG_MAX_STEPS)
    return false;
  cur = xcalloc ((size_t) p, sizeof *cur);
  next = xcalloc ((size_t) p, sizeof *next);
  fpos = xmalloc ((size_t) chunks * (size_t) m * sizeof *fpos);
  bpos = xmalloc ((size_t) chunks * (size_t) m * sizeof *bpos);
  for (size_t i = 0; i < (size_t) chunks * (size_t) m; i++)
    fpos[i] = bpos[i] = -1;
  for (int r = 0; r < p; r++)
    cur[r] = rank_op (in, r, 0);
  memset (pg, 0, sizeof *pg);
  pg->step = xmalloc (total * sizeof *pg->step);
  while (n < total && ok) {
    bool moved = false;
    for (int r = 0; r < p; r++) {
      while (next[r] < per_rank) {
        const struct pop *o = &cur[r];
        size_t at = (size_t) o->chunk * (size_t) m + (size_t) o->mb;
        int32_t dep = -1, dep2 = -1;
        if (!o->bw) {
          if (o->chunk > 0 && (dep = fpos[at - (size_t) m]) < 0)
            break;
        }
        else {
          if ((dep = fpos[at]) < 0)
            break;
          if (o->chunk < chunks - 1 && (dep2 = bpos[at + (size_t) m]) < 0)
            break;
        }
        pg->step[n] = (struct pipe_step) { (uint16_t) r,
                                           (uint16_t) (o->bw ? chunks + o->chunk : o->chunk),
                                           dep, dep2 };
        (o->bw ? bpos : fpos)[at] = (int32_t) n;
        n++;
        if (++next[r] < per_rank)
          cur[r] = rank_op (in, r, next[r]);
        moved = true;
      }
    }
    ok = moved;
  }
  free (cur);
  free (next);
  free (fpos);
  free (bpos);
  if (!ok) {
    free (pg->step);
    return false;
  }
  pg->stages = p;
  pg->vp = in->vp;
  pg->microbatches = m;
  pg->schedule = in->schedule;
  pg->backward = in->backward;
  pg->n = n;
  return true;
}

/* The compiled order run over in's times: simulate()'s arithmetic, step
 * by step. */
static void
prog_run (struct pipe_progs *pp, const struct pipe_prog *pg, const struct pipe_input *in,
          struct pipe_result *out)
{
  int p = pg->stages, chunks = p * (pg->vp > 1 ? pg->vp : 1);
  size_t need = pg->n + (size_t) p + 2 * (size_t) chunks;
  double *t, *clock, *cost, p2p = in->p2p_ms, step = 0, busy = 0;
  if (need > pp->tcap) {
    free (pp->t);
    pp->tcap = need;
    pp->t = xmalloc (need * sizeof *pp->t);
  }
  t = pp->t;
  clock = t + pg->n;
  cost = clock + p;
  memset (clock, 0, (size_t) p * sizeof *clock);
  memcpy (cost, in->fw_ms, (size_t) chunks * sizeof *cost);
  if (in->backward)
    memcpy (cost + chunks, in->bw_ms, (size_t) chunks * sizeof *cost);
  for (size_t i = 0; i < pg->n; i++) {
    const struct pipe_step *st = &pg->step[i];
    double ready, c = cost[st->cost], start;
    if (st->cost < chunks)
      ready = st->dep >= 0 ? t[st->dep] + p2p : 0;
    else {
      ready = t[st->dep];
      if (st->dep2 >= 0) {
        double later = t[st->dep2];
        if (later + p2p > ready)
          ready = later + p2p;
      }
    }
    start = clock[st->rank] > ready ? clock[st->rank] : ready;
    clock[st->rank] = start + c;
    busy += c;
    t[i] = clock[st->rank];
  }
  for (int r = 0; r < p; r++)
    if (clock[r] > step)
      step = clock[r];
  memset (out, 0, sizeof *out);
  out->step_ms = step;
  out->bubble = step > 0 ? 1 - busy / ((double) p * step) : 0;
}

int
pipeline_simulate_with (struct pipe_progs *pp, const struct pipe_input *in,
                        struct pipe_result *out)
{
  int chunks = in->stages * (in->vp > 1 ? in->vp : 1);
  struct pipe_prog *pg = NULL;
  if (pp == NULL || in->log || in->stages < 1)
    return pipeline_simulate (in, out);
  /* a negative time could end an operation before 0, which simulate()
   * takes for not done: its order would then depend on the times */
  for (int c = 0; c < chunks; c++)
    if (in->fw_ms[c] < 0 || (in->backward && in->bw_ms[c] < 0))
      return pipeline_simulate (in, out);
  for (size_t i = 0; i < pp->n && pg == NULL; i++)
    if (pp->v[i].stages == in->stages && pp->v[i].vp == in->vp &&
        pp->v[i].microbatches == in->microbatches && pp->v[i].schedule == in->schedule &&
        pp->v[i].backward == in->backward)
      pg = &pp->v[i];
  if (pg == NULL) {
    struct pipe_prog new;
    if (!prog_compile (in, &new))
      return pipeline_simulate (in, out);
    if (pp->bytes + new.n * sizeof *new.step > PIPE_PROGS_BYTES)
      progs_clear (pp);
    if (pp->n == pp->cap) {
      pp->cap = pp->cap ? 2 * pp->cap : 16;
      pp->v = xrealloc (pp->v, pp->cap * sizeof *pp->v);
    }
    pp->bytes += new.n * sizeof *new.step;
    pg = &pp->v[pp->n++];
    *pg = new;
  }
  prog_run (pp, pg, in, out);
  return 0;
}
