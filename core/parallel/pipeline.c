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

/* The order in which rank `rank` runs its operations. */
static size_t
rank_order (const struct pipe_input *in, int rank, struct pop *ops)
{
  int p = in->stages, m = in->microbatches, v = in->vp > 1 ? in->vp : 1;
  size_t n = 0;
  int total = m * v, warm;

  if (!in->backward) {
    for (int k = 0; k < total; k++)
      ops[n++] = v > 1 ? interleaved_op (k, false, p, v, rank) : (struct pop) { false, k, rank };
    return n;
  }
  switch (in->schedule) {
  case SCHED_GPIPE:
    for (int i = 0; i < m; i++)
      ops[n++] = (struct pop) { false, i, rank };
    for (int i = 0; i < m; i++)
      ops[n++] = (struct pop) { true, i, rank };
    return n;
  case SCHED_INTERLEAVED:
    warm = (p - rank - 1) * 2 + (v - 1) * p;
    if (warm > total)
      warm = total;
    for (int k = 0; k < warm; k++)
      ops[n++] = interleaved_op (k, false, p, v, rank);
    for (int k = 0; k < total - warm; k++) {
      ops[n++] = interleaved_op (warm + k, false, p, v, rank);
      ops[n++] = interleaved_op (k, true, p, v, rank);
    }
    for (int k = total - warm; k < total; k++)
      ops[n++] = interleaved_op (k, true, p, v, rank);
    return n;
  case SCHED_1F1B:
  default:
    warm = p - rank - 1 < m ? p - rank - 1 : m;
    for (int i = 0; i < warm; i++)
      ops[n++] = (struct pop) { false, i, rank };
    for (int i = 0; i < m - warm; i++) {
      ops[n++] = (struct pop) { false, warm + i, rank };
      ops[n++] = (struct pop) { true, i, rank };
    }
    for (int i = m - warm; i < m; i++)
      ops[n++] = (struct pop) { true, i, rank };
    return n;
  }
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
