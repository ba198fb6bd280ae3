/* sim.c: the discrete-event simulation of serving: requests arrive (a closed loop of clients, a Poisson rate, a trace), each engine replica forms its iterations as its scheduler does (vLLM, SGLang, TensorRT-LLM), an iteration lasts its predicted kernels, disaggregated replicas hand the KV cache over a link, and each request's times are kept. */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ITLs are counted in a histogram of log-spaced bins 0.5 % wide from
 * 1 us: percentiles within half a percent, whatever the number of
 * tokens. */
#define ITL_MIN_MS 1e-3
#define ITL_BIN 1.005
#define ITL_BINS 4500

enum rstate { R_FUTURE, R_CLIENT, R_WAITING, R_RUNNING, R_MOVING, R_DONE };

struct req {
  double arrive, first, last, done;
  double ready;          /* R_CLIENT: when its client sends it; R_MOVING: when its KV
                            cache reaches the decode replica */
  int64_t isl, osl;
  int64_t target;        /* tokens to prefill before its next token: the prompt, or after a
                            preemption every token it had */
  int64_t filled;        /* of those, computed so far */
  int64_t ctx;           /* tokens in its KV cache */
  int64_t gen;           /* output tokens so far */
  int64_t pages;         /* KV pages held (ADMIT_RESERVE: reserved) */
  double spec_acc;       /* speculative decoding: accepted tokens not yet whole */
  int inst;              /* the replica it is on */
  int client;
  int state;
  bool prefilled;        /* disaggregated: its prompt was prefilled elsewhere */
};

/* One iteration's work for one request: q prompt tokens (q > 0) or a
 * decode step (q == 0). */
struct item {
  int r;
  int64_t q;
};

/* A double-ended queue of request indices (preempted requests go back
 * to the front). */
struct deque {
  int *v;
  size_t cap, head, n;
};

struct inst {            /* one engine replica */
  const struct serve_pool *pool;
  bool prefill_only, decode_only;
  int64_t page, pages_total, pages_used;
  struct deque waiting;
  int *running;          /* in admission order */
  size_t nrun;
  struct item *batch;    /* the iteration in flight */
  size_t nb;
  bool busy;
  double until;          /* busy: when the iteration ends */
  int64_t run;           /* decode-only iterations the batch runs in a row (1: one) */
  bool gone;             /* running[] holds requests no longer running */
  int64_t run_pages;     /* the pages those take beyond the first's */
  double run_first;      /* when the first of them ends */
  double ratio;          /* SGLang's new_token_ratio */
  int chunked;           /* SGLang: the request whose prompt is part-way (-1: none) */
  double kv_area, kv_last_t, kv_peak;  /* the KV pages' use over time */
  int group;             /* attention data parallelism: the replicas from this one that step
                            together (its pool's lockstep); 0: another leads its group; 1:
                            none (it steps alone, its experts fed as many tokens by each
                            replica as by it) */
};

struct sim {
  const struct serve_sim_input *in;
  const struct serve_engine *eng;
  struct req *r;
  int64_t n;             /* requests */
  int64_t issued;        /* LOAD_CLOSED: requests given a client so far */
  int64_t next;          /* the next request to arrive, in arrival order */
  int64_t done;
  struct inst *inst;
  int ninst, nprefill;   /* disaggregated: [0, nprefill) prefill, the rest decode */
  double now;
  /* results */
  double *ttft, *tpot, *e2e;
  int64_t nttft, ntpot;
  double itl_sum;
  int64_t itl_n;
  int64_t *itl_hist;
  double itl_last_ms;    /* the last gap binned, and its bin */
  int itl_last_bin;
  int64_t preemptions, iterations, decode_iters;
  double decode_batch_sum, transfer_sum;
  int64_t transfers;
  double first_arrival, last_token;
  double out_tokens, in_tokens;
  int *moving;           /* requests on their way: from a closed loop's client, or their
                            KV cache to a decode replica */
  size_t nmoving;
  uint64_t rng;
  bool load_open;        /* arrivals by time (a rate, a trace), not by clients */
  unsigned char *client_seen;  /* a closed loop's clients whose first request ended */
  int64_t clients_seen;
  double steady_t, steady_tokens;  /* when the last first request ended; tokens by then */
};

/* xorshift64*: uniform in [0, 1). */
static double
sim_uniform (uint64_t *x)
{
  *x ^= *x >> 12;
  *x ^= *x << 25;
  *x ^= *x >> 27;
  return (double) ((*x * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

/* The requests on their way, a binary heap by ready time (ties by
 * index: the order they were put in is kept for equal times). */
static bool
moving_before (const struct sim *s, int a, int b)
{
  double x = s->r[a].ready, y = s->r[b].ready;
  return x < y || (x == y && a < b);
}

static void
moving_push (struct sim *s, int r)
{
  size_t i = s->nmoving++;
  while (i > 0 && moving_before (s, r, s->moving[(i - 1) / 2])) {
    s->moving[i] = s->moving[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  s->moving[i] = r;
}

static int
moving_pop (struct sim *s)
{
  int top = s->moving[0], last = s->moving[--s->nmoving];
  size_t i = 0, n = s->nmoving;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n)
      break;
    if (c + 1 < n && moving_before (s, s->moving[c + 1], s->moving[c]))
      c++;
    if (!moving_before (s, s->moving[c], last))
      break;
    s->moving[i] = s->moving[c];
    i = c;
  }
  if (n > 0)
    s->moving[i] = last;
  return top;
}

static void
dq_init (struct deque *d, size_t cap)
{
  d->cap = cap + 1;
  d->v = xmalloc (d->cap * sizeof *d->v);
  d->head = d->n = 0;
}

static void
dq_push_back (struct deque *d, int x)
{
  d->v[(d->head + d->n++) % d->cap] = x;
}

static void
dq_push_front (struct deque *d, int x)
{
  d->head = (d->head + d->cap - 1) % d->cap;
  d->v[d->head] = x;
  d->n++;
}

static int
dq_front (const struct deque *d)
{
  return d->v[d->head];
}

static void
dq_pop_front (struct deque *d)
{
  d->head = (d->head + 1) % d->cap;
  d->n--;
}

static int64_t
pages_for (const struct inst *in, int64_t tokens)
{
  return (tokens + in->page - 1) / in->page;
}

/* Tokens a decode step processes per request: one, and the drafts. */
static int64_t
step_tokens (const struct sim *s)
{
  return 1 + (s->in->spec.kind != SPEC_NONE ? s->in->spec.tokens : 0);
}

static void
kv_account (struct sim *s, struct inst *in)
{
  double use = in->pages_total > 0 ? (double) in->pages_used / (double) in->pages_total : 0;
  in->kv_area += use * (s->now - in->kv_last_t);
  in->kv_last_t = s->now;
  if (use > in->kv_peak)
    in->kv_peak = use;
}

static void
pages_take (struct sim *s, struct inst *in, struct req *q, int64_t n)
{
  kv_account (s, in);
  q->pages += n;
  in->pages_used += n;
}

static void
pages_release (struct sim *s, struct inst *in, struct req *q)
{
  kv_account (s, in);
  in->pages_used -= q->pages;
  q->pages = 0;
}

static void
run_remove (struct inst *in, int r)
{
  size_t i;
  for (i = 0; i < in->nrun && in->running[i] != r; i++)
    ;
  if (i < in->nrun) {
    memmove (in->running + i, in->running + i + 1, (in->nrun - i - 1) * sizeof *in->running);
    in->nrun--;
  }
}

/* A running request loses its KV cache and waits at the front, to be
 * prefilled again with every token it has (vLLM's recompute, SGLang's
 * retraction). */
static void
preempt (struct sim *s, struct inst *in, int r)
{
  struct req *q = &s->r[r];
  pages_release (s, in, q);
  run_remove (in, r);
  q->target = q->isl + q->gen;
  q->filled = 0;
  q->ctx = 0;
  q->state = R_WAITING;
  dq_push_front (&in->waiting, r);
  s->preemptions++;
}

static void
batch_add (struct inst *in, int r, int64_t q)
{
  in->batch[in->nb].r = r;
  in->batch[in->nb].q = q;
  in->nb++;
}

static bool
prefilling (const struct req *q)
{
  return q->filled < q->target;
}

/* ---- the schedulers: each fills in->batch for the next iteration ---- */

/* vLLM V1 (scheduler.py schedule()): one token budget; the running
 * requests first in their order (a decode one token, a prompt its next
 * chunk), each allocating its pages, the last running request preempted
 * while none are left; then, if nothing was preempted, waiting requests
 * while budget, pages and max_num_seqs allow. */
static void
sched_vllm (struct sim *s, struct inst *in)
{
  int64_t budget = in->pool->max_tokens, step = step_tokens (s);
  bool preempted = false;
  for (size_t i = 0; i < in->nrun && budget > 0; i++) {
    int r = in->running[i];
    struct req *q = &s->r[r];
    int64_t n = prefilling (q) ? q->target - q->filled : step, need;
    if (n > budget)
      n = budget;
    need = pages_for (in, q->ctx + n) - q->pages;
    if (need < 0)
      need = 0;
    while (need > in->pages_total - in->pages_used && in->nrun > 0) {
      int victim = in->running[in->nrun - 1];
      preempt (s, in, victim);
      preempted = true;
      if (victim == r)
        break;
    }
    if (q->state != R_RUNNING)
      break;
    pages_take (s, in, q, need);
    batch_add (in, r, prefilling (q) ? n : 0);
    budget -= n;
  }
  if (preempted)
    return;
  while (in->waiting.n > 0 && budget > 0 && (int64_t) in->nrun < in->pool->max_seqs) {
    int r = dq_front (&in->waiting);
    struct req *q = &s->r[r];
    int64_t n = prefilling (q) ? q->target - q->filled : step, need;
    if (n > budget)
      n = budget;
    need = pages_for (in, q->ctx + n) - q->pages;
    if (need > in->pages_total - in->pages_used)
      break;
    dq_pop_front (&in->waiting);
    q->state = R_RUNNING;
    in->running[in->nrun++] = r;
    pages_take (s, in, q, need);
    batch_add (in, r, prefilling (q) ? n : 0);
    budget -= n;
  }
}

/* SGLang (scheduler.py get_next_batch_to_run, schedule_policy.py
 * PrefillAdder): a prefill batch whenever waiting requests fit, run with
 * the decodes paused: the part-way prompt first, then waiting requests in
 * order while the running ones stay under max_running_requests, the
 * prompt tokens under max_prefill_tokens and the room left after
 * reserving new_token_ratio of every running request's remaining output
 * (at most 4096) holds the prompt and its output; a prompt longer than
 * the chunk is split and ends the batch.  Else a decode step of every
 * running request, retracting the one with the fewest outputs while the
 * step finds no free token for each. */
#define SGLANG_CLIP_NEW_TOKENS 4096
static void
sched_sglang (struct sim *s, struct inst *in)
{
  int64_t chunk = in->pool->max_tokens, prompt_budget = s->eng->prefill_tokens;
  int64_t free_tokens = in->pages_total - in->pages_used, step = step_tokens (s);
  double reserve = 0;
  size_t decoding = 0;
  int64_t need;
  for (size_t i = 0; i < in->nrun; i++) {
    struct req *q = &s->r[in->running[i]];
    int64_t left = q->osl - q->gen;
    if (left > SGLANG_CLIP_NEW_TOKENS)
      left = SGLANG_CLIP_NEW_TOKENS;
    reserve += (double) left * in->ratio;
    decoding += !prefilling (q);
  }
  double room = (double) free_tokens - reserve;
  if (prompt_budget <= 0)
    prompt_budget = chunk;
  /* the part-way prompt goes first */
  if (in->chunked >= 0) {
    struct req *q = &s->r[in->chunked];
    int64_t n = q->target - q->filled;
    if (n > chunk)
      n = chunk;
    if (n <= free_tokens) {
      pages_take (s, in, q, n);
      batch_add (in, in->chunked, n);
      chunk -= n;
      prompt_budget -= n;
      room -= (double) n;
      if (q->filled + n < q->target)
        return;                        /* still part-way: the batch is this chunk */
      in->chunked = -1;
    }
  }
  while (in->waiting.n > 0 && chunk > 0 && prompt_budget > 0 &&
         (int64_t) (in->nrun) < in->pool->max_seqs) {
    int r = dq_front (&in->waiting);
    struct req *q = &s->r[r];
    int64_t n = q->target - q->filled, out = q->osl - q->gen;
    if (out > SGLANG_CLIP_NEW_TOKENS)
      out = SGLANG_CLIP_NEW_TOKENS;
    if ((double) (n + out) >= room)
      break;
    if (n > chunk)
      n = chunk;
    if (n > in->pages_total - in->pages_used)
      break;
    dq_pop_front (&in->waiting);
    q->state = R_RUNNING;
    in->running[in->nrun++] = r;
    pages_take (s, in, q, n);
    batch_add (in, r, n);
    room -= (double) (n + out);
    chunk -= n;
    prompt_budget -= n;
    if (q->filled + n < q->target) {  /* split: it ends the batch */
      in->chunked = r;
      break;
    }
  }
  if (in->nb > 0)
    return;
  /* a decode step: one free token per running request */
  while (decoding > 0 && (int64_t) decoding * step > in->pages_total - in->pages_used) {
    size_t pick = 0;
    bool found = false;
    for (size_t i = 0; i < in->nrun; i++) {
      struct req *q = &s->r[in->running[i]];
      struct req *p = &s->r[in->running[pick]];
      if (prefilling (q))
        continue;
      if (!found || q->gen < p->gen || (q->gen == p->gen && q->isl > p->isl))
        pick = i;
      found = true;
    }
    preempt (s, in, in->running[pick]);
    decoding--;
    in->ratio = s->eng->new_token_ratio;
  }
  for (size_t i = 0; i < in->nrun; i++) {
    int r = in->running[i];
    struct req *q = &s->r[r];
    if (prefilling (q))
      continue;
    need = pages_for (in, q->ctx + step) - q->pages;
    if (need > 0)
      pages_take (s, in, q, need);
    batch_add (in, r, 0);
  }
  if (in->nb > 0) {
    double decay = (s->eng->new_token_ratio - s->eng->min_token_ratio) / 600;
    in->ratio = in->ratio - decay > s->eng->min_token_ratio ? in->ratio - decay
              : s->eng->min_token_ratio;
  }
}

/* TensorRT-LLM (capacityScheduler.cpp GuaranteedNoEvictScheduler,
 * microBatchScheduler.cpp): running requests keep their pages, reserved
 * to completion at admission; waiting ones are admitted in order while
 * max_batch_size (less the slots the engine holds) and the pages for
 * their whole prompt and output allow, the first that does not fit
 * stopping the rest; then, in list order, a decode costs one token and a
 * prompt (whole, or its chunk with chunking on) its tokens of
 * max_num_tokens, the first that does not fit ending the batch. */
static void
sched_trtllm (struct sim *s, struct inst *in)
{
  int64_t budget = in->pool->max_tokens, step = step_tokens (s);
  while (in->waiting.n > 0 && (int64_t) in->nrun < in->pool->max_seqs) {
    int r = dq_front (&in->waiting);
    struct req *q = &s->r[r];
    int64_t need = pages_for (in, q->isl + q->osl + 1) - q->pages;
    if (need > in->pages_total - in->pages_used)
      break;
    dq_pop_front (&in->waiting);
    q->state = R_RUNNING;
    in->running[in->nrun++] = r;
    pages_take (s, in, q, need);
  }
  for (size_t i = 0; i < in->nrun && budget > 0; i++) {
    int r = in->running[i];
    struct req *q = &s->r[r];
    int64_t n = prefilling (q) ? q->target - q->filled : step;
    if (n > budget) {
      if (!prefilling (q) || !s->eng->chunked)
        break;
      n = budget;
    }
    batch_add (in, r, prefilling (q) ? n : 0);
    budget -= n;
  }
}

/* A prefill-only replica of a disaggregated deployment runs its engine's
 * prefill: waiting prompts in order under the token budget (chunked as
 * the engine chunks), no decodes. */
static void
sched_prefill_only (struct sim *s, struct inst *in)
{
  int64_t budget = in->pool->max_tokens;
  for (size_t i = 0; i < in->nrun && budget > 0; i++) {
    int r = in->running[i];
    struct req *q = &s->r[r];
    int64_t n = q->target - q->filled;
    if (n > budget)
      n = budget;
    batch_add (in, r, n);
    budget -= n;
  }
  while (in->waiting.n > 0 && budget > 0 && (int64_t) in->nrun < in->pool->max_seqs) {
    int r = dq_front (&in->waiting);
    struct req *q = &s->r[r];
    int64_t n = q->target - q->filled, need;
    if (n > budget) {
      if (!s->eng->chunked && in->nb > 0)
        break;
      n = budget;
    }
    need = pages_for (in, q->ctx + q->target) - q->pages;
    if (need > in->pages_total - in->pages_used)
      break;
    dq_pop_front (&in->waiting);
    q->state = R_RUNNING;
    in->running[in->nrun++] = r;
    pages_take (s, in, q, need);
    batch_add (in, r, n);
    budget -= n;
  }
}

/* A decode replica of a disaggregated deployment takes the requests
 * whose KV cache has landed as running decodes while its engine's limits
 * allow: pages for the cache (TensorRT-LLM's to completion), its batch
 * limit.  A request it preempted is prefilled again there, as its
 * scheduler runs prompts. */
static void
admit_prefilled (struct sim *s, struct inst *in)
{
  while (in->waiting.n > 0 && (int64_t) in->nrun < in->pool->max_seqs) {
    int r = dq_front (&in->waiting);
    struct req *q = &s->r[r];
    if (prefilling (q))
      break;                  /* preempted here: recomputed as the engine prefills */
    int64_t need = (s->eng->admit == ADMIT_RESERVE ? pages_for (in, q->isl + q->osl + 1)
                    : pages_for (in, q->ctx + step_tokens (s))) - q->pages;
    if (need > in->pages_total - in->pages_used)
      break;
    dq_pop_front (&in->waiting);
    q->state = R_RUNNING;
    in->running[in->nrun++] = r;
    pages_take (s, in, q, need);
  }
}

/* ---- an iteration's cost ---- */

/* The iteration's time from its kernels' (gpu) and its requests (n):
 * the host's work beside or after the GPU's. */
static double
with_host (const struct sim *s, double gpu, size_t n)
{
  double host = s->eng->host_ms + s->eng->host_us_per_request * 1e-3 * (double) n;
  return s->eng->overlap ? (gpu > host ? gpu : host) : gpu + host;
}

/* What `decodes` decoding requests add to an iteration beyond its GEMMs:
 * their attention over ctx cached tokens in all (the kernel reads the
 * cache at its width), and their drafts, a draft layer and the logits per
 * draft token (MTP, EAGLE).  (Attention-DP replicas in step: a draft
 * layer's experts keep the costs' own assumption, each replica sending as
 * many tokens.) */
static int
decodes_ms (struct sim *s, struct serve_costs *c, int64_t decodes, double ctx, double *ms)
{
  double attn, dense, logits;
  if (serve_cost_decode_attn (c, decodes, ctx, &attn) < 0)
    return -1;
  attn *= s->in->kv_read_scale;
  *ms = attn;
  if (s->in->spec.draft_layers > 0) {
    if (serve_cost_tokens (c, decodes, &dense) < 0 || serve_cost_logits (c, decodes, &logits) < 0)
      return -1;
    *ms += (double) s->in->spec.tokens * (s->in->spec.draft_layers * (dense + attn) + logits);
  }
  return 0;
}

/* Every kernel but attention for a replica's `tokens`, its routed
 * experts fed `fed` tokens in all by the pool's replicas stepping with it
 * (< 0: as many by each as by it, the costs' own assumption). */
static int
tokens_ms (const struct serve_pool *pool, int64_t tokens, double fed, double *ms)
{
  double own, all;
  if (serve_cost_tokens (pool->costs, tokens, ms) < 0)
    return -1;
  if (fed < 0)
    return 0;
  if (serve_cost_moe (pool->costs, (double) tokens * pool->lockstep, &own) < 0
      || serve_cost_moe (pool->costs, fed, &all) < 0)
    return -1;
  *ms += all - own;
  return 0;
}

/* A decode-only iteration of `decodes` requests over ctx cached tokens in
 * all: the CUDA graph's batch, the logits, attention, the drafts; its
 * experts fed `fed` tokens (tokens_ms). */
static int
decode_ms (struct sim *s, const struct serve_pool *pool, int64_t decodes, double ctx, double fed,
           double *ms)
{
  struct serve_costs *c = pool->costs;
  int64_t step = step_tokens (s);
  double t, part, rest;
  if (tokens_ms (pool, serve_graph_batch (s->eng, decodes) * step, fed, &t) < 0 ||
      serve_cost_logits (c, decodes * step, &part) < 0 ||
      decodes_ms (s, c, decodes, ctx, &rest) < 0)
    return -1;
  *ms = with_host (s, t + part + rest, (size_t) decodes);
  return 0;
}

/* The tokens in's batch runs through its layers: a decode-only
 * iteration's padded to the CUDA graph's batch. */
static int64_t
batch_tokens (const struct sim *s, const struct inst *in)
{
  int64_t tokens = 0, decodes = 0, step = step_tokens (s);
  for (size_t i = 0; i < in->nb; i++) {
    tokens += in->batch[i].q;
    decodes += in->batch[i].q == 0;
  }
  if (tokens == 0 && decodes > 0)
    return serve_graph_batch (s->eng, decodes) * step;
  return tokens + decodes * step;
}

/* in's iteration, its experts fed `fed` tokens in all (tokens_ms). */
static int
iteration_ms (struct sim *s, struct inst *in, double fed, double *ms)
{
  struct serve_costs *c = in->pool->costs;
  int64_t tokens = 0, rows = 0, decodes = 0, step = step_tokens (s);
  double ctx = 0, t = 0, part;
  for (size_t i = 0; i < in->nb; i++) {
    struct req *q = &s->r[in->batch[i].r];
    if (in->batch[i].q > 0) {
      tokens += in->batch[i].q;
      if (q->filled + in->batch[i].q >= q->target)
        rows++;
      if (serve_cost_prefill_attn (c, in->batch[i].q, q->ctx, &part) < 0)
        return -1;
      t += part;
    }
    else {
      decodes++;
      ctx += (double) q->ctx + 1;
    }
  }
  /* a decode-only iteration runs in the engine's CUDA graph, padded to
   * its captured batch */
  if (tokens == 0 && decodes > 0)
    return decode_ms (s, in->pool, decodes, ctx, fed, ms);
  tokens += decodes * step;
  rows += decodes * step;
  if (tokens_ms (in->pool, tokens, fed, &part) < 0)
    return -1;
  t += part;
  if (serve_cost_logits (c, rows, &part) < 0)
    return -1;
  t += part;
  if (decodes > 0) {
    if (decodes_ms (s, c, decodes, ctx, &part) < 0)
      return -1;
    t += part;
  }
  *ms = with_host (s, t, in->nb);
  return 0;
}

/* ---- results ---- */
static void
itl_add (struct sim *s, double ms, int64_t n)
{
  int b;
  /* an iteration's decodes mostly share their gap: its bin once */
  if (ms == s->itl_last_ms)
    b = s->itl_last_bin;
  else {
    b = ms > ITL_MIN_MS ? (int) (log (ms / ITL_MIN_MS) / log (ITL_BIN)) : 0;
    if (b >= ITL_BINS)
      b = ITL_BINS - 1;
    s->itl_last_ms = ms;
    s->itl_last_bin = b;
  }
  s->itl_hist[b] += n;
  s->itl_sum += ms * (double) n;
  s->itl_n += n;
}

/* Request r got n tokens at s->now. */
static void
tokens_out (struct sim *s, struct req *q, int64_t n)
{
  if (q->gen == 0) {
    q->first = s->now;
    s->ttft[s->nttft++] = s->now - q->arrive + s->eng->frontend_ms;
    if (n > 1)
      itl_add (s, 0, n - 1);
  }
  else
    itl_add (s, (s->now - q->last) / (double) n, n);
  q->gen += n;
  q->last = s->now;
  s->out_tokens += (double) n;
  if (s->now > s->last_token)
    s->last_token = s->now;
}

static int64_t pick_inst (struct sim *s, int from, int to);
static void spawn (struct sim *s, int client, double t);

static void
finish (struct sim *s, struct inst *in, int r)
{
  struct req *q = &s->r[r];
  pages_release (s, in, q);
  in->gone = true;               /* out of running[] once apply is done */
  q->state = R_DONE;
  q->done = s->now;
  s->e2e[s->done] = s->now - q->arrive;
  if (q->osl > 1)
    s->tpot[s->ntpot++] = (q->done - q->first) / (double) (q->osl - 1);
  s->done++;
  if (s->in->load.kind != LOAD_CLOSED)
    return;
  /* The benchmark's first requests go at once, a burst.  An engine that
   * mixes prompts into the decodes' iterations does not hold the burst's
   * wave in the measured runs (doc/serving.md): a client's second request
   * goes at a random point of its first one's time, and from then on the
   * clients are out of step.  An engine that pauses every decode for a
   * prefill batch (SGLang) keeps its clients in step: no shift. */
  double at = s->now;
  if (!s->client_seen[q->client]) {
    s->client_seen[q->client] = 1;
    if (s->eng->mixed)
      at += sim_uniform (&s->rng) * (q->done - q->arrive);
    if (++s->clients_seen == s->in->load.concurrency) {
      s->steady_t = s->now;
      s->steady_tokens = s->out_tokens;
    }
  }
  spawn (s, q->client, at);
}

/* The iteration of in ends at s->now: the tokens it made. */
static void
apply (struct sim *s, struct inst *in)
{
  const struct serve_spec *sp = &s->in->spec;
  double expected = 1;
  if (sp->kind != SPEC_NONE && sp->tokens > 0)  /* 1 + a + a^2 + ... + a^k */
    expected = sp->accept < 1 ? (1 - pow (sp->accept, sp->tokens + 1)) / (1 - sp->accept)
             : (double) sp->tokens + 1;
  if (in->run > 1) {                   /* decode_run's iterations: k tokens each */
    int64_t k = in->run;
    for (size_t i = 0; i < in->nb; i++) {
      struct req *q = &s->r[in->batch[i].r];
      int64_t need;
      itl_add (s, in->run_first - q->last, 1);
      q->gen += k;
      q->ctx += k;
      q->last = s->now;
      need = s->eng->admit == ADMIT_RESERVE ? 0 : pages_for (in, q->ctx) - q->pages;
      if (need > 0)
        pages_take (s, in, q, need);
    }
    s->out_tokens += (double) (k * (int64_t) in->nb);
    if (s->now > s->last_token)
      s->last_token = s->now;
    if (s->eng->id == ENGINE_SGLANG) {
      double decay = (s->eng->new_token_ratio - s->eng->min_token_ratio) / 600 * (double) (k - 1);
      in->ratio = in->ratio - decay > s->eng->min_token_ratio ? in->ratio - decay
                : s->eng->min_token_ratio;
    }
    in->nb = 0;
    in->run = 1;
    return;
  }
  for (size_t i = 0; i < in->nb; i++) {
    int r = in->batch[i].r;
    struct req *q = &s->r[r];
    if (q->state != R_RUNNING)
      continue;                        /* preempted meanwhile (not by these schedulers) */
    if (in->batch[i].q > 0) {
      q->filled += in->batch[i].q;
      q->ctx += in->batch[i].q;
      if (q->filled < q->target)
        continue;
      /* the prompt's last chunk: its next token */
      tokens_out (s, q, 1);
    }
    else {
      int64_t n;
      q->spec_acc += expected;
      n = (int64_t) q->spec_acc;
      q->spec_acc -= (double) n;
      if (n > q->osl - q->gen)
        n = q->osl - q->gen;
      q->ctx += n;
      tokens_out (s, q, n);
      /* pages beyond one token a step were taken for the drafts; keep
       * what the context holds */
    }
    if (q->gen >= q->osl)
      finish (s, in, r);
    else if (in->prefill_only) {
      /* its first token made: the KV cache moves to a decode replica */
      double bytes = in->pool->kv_bytes_per_token * (double) q->ctx;
      double ms = s->in->transfer_us / 1e3 + bytes / (s->in->transfer_gbps * 1e9) * 1e3;
      pages_release (s, in, q);
      in->gone = true;
      q->state = R_MOVING;
      q->ready = s->now + ms;
      moving_push (s, r);
      s->transfer_sum += ms;
      s->transfers++;
    }
  }
  in->nb = 0;
  if (in->gone) {                /* the finished and moved ones out, the order kept */
    size_t k = 0;
    for (size_t i = 0; i < in->nrun; i++)
      if (s->r[in->running[i]].state == R_RUNNING)
        in->running[k++] = in->running[i];
    in->nrun = k;
    in->gone = false;
  }
}

/* ---- arrivals and routing ---- */

/* The replica in [from, to) with the fewest requests (ties: the first). */
static int64_t
pick_inst (struct sim *s, int from, int to)
{
  int best = from;
  size_t load = SIZE_MAX;
  for (int i = from; i < to; i++) {
    size_t l = s->inst[i].nrun + s->inst[i].waiting.n;
    if (l < load) {
      load = l;
      best = i;
    }
  }
  return best;
}

/* LOAD_CLOSED: client sends its next request at t. */
static void
spawn (struct sim *s, int client, double t)
{
  struct req *q;
  if (s->issued >= s->n)
    return;
  q = &s->r[s->issued++];
  q->client = client;
  q->state = R_CLIENT;
  q->ready = t;
  moving_push (s, (int) (q - s->r));
}

/* Request r joins the least loaded replica of its pool: the decode
 * replicas for a prompt prefilled elsewhere, else the prefill ones (or
 * every replica, aggregated). */
static void
join (struct sim *s, int r, bool decode)
{
  struct req *q = &s->r[r];
  int from = decode ? s->nprefill : 0;
  int to = decode ? s->ninst : s->nprefill > 0 ? s->nprefill : s->ninst;
  int i = (int) pick_inst (s, from, to);
  q->inst = i;
  q->state = R_WAITING;
  q->prefilled = decode;
  dq_push_back (&s->inst[i].waiting, r);
}

/* Request r is sent at s->now. */
static void
send (struct sim *s, int r)
{
  struct req *q = &s->r[r];
  q->arrive = s->now;
  q->target = q->isl;
  s->in_tokens += (double) q->isl;
  if (s->now < s->first_arrival)
    s->first_arrival = s->now;
  join (s, r, false);
}

/* The next event outside replica in: an arrival, a request sent or its
 * cache landing, another replica's iteration ending. */
static double
next_outside (const struct sim *s, const struct inst *in)
{
  double t = INFINITY;
  if (s->load_open && s->next < s->n)
    t = s->r[s->next].arrive;
  if (s->nmoving > 0 && s->r[s->moving[0]].ready < t)
    t = s->r[s->moving[0]].ready;
  for (int i = 0; i < s->ninst; i++)
    if (&s->inst[i] != in && s->inst[i].busy && s->inst[i].until < t)
      t = s->inst[i].until;
  return t;
}

/* A batch of every running request decoding, none waiting, runs the same
 * way until a request is about to finish or something happens outside:
 * those iterations in one event (their times summed one by one, the
 * contexts growing), the requests brought up to date when it ends.  The
 * same numbers as iteration by iteration, at a fraction of the work. */
static int
decode_run (struct sim *s, struct inst *in, double first_ms)
{
  int64_t k, left = INT64_MAX, extra = 0, step = step_tokens (s);
  double ctx = 0, horizon, ms;
  if (in->nb != in->nrun || in->waiting.n > 0 || in->prefill_only || in->nb < 1 ||
      s->in->spec.kind != SPEC_NONE)
    return 0;
  for (size_t i = 0; i < in->nb; i++) {
    const struct req *q = &s->r[in->batch[i].r];
    if (in->batch[i].q != 0)
      return 0;
    if (q->osl - q->gen < left)
      left = q->osl - q->gen;
    ctx += (double) q->ctx + 1;
  }
  horizon = next_outside (s, in);
  /* iterations 2 .. k: none finishes a request (its last is the one after) */
  for (k = 1; k + 1 < left; k++) {
    int64_t need = 0;
    if (s->eng->admit != ADMIT_RESERVE)   /* the pages the next step takes */
      for (size_t i = 0; i < in->nb; i++) {
        const struct req *q = &s->r[in->batch[i].r];
        need += pages_for (in, q->ctx + k + step) - q->pages;
      }
    if (need > in->pages_total - in->pages_used)
      break;
    if (decode_ms (s, in->pool, (int64_t) in->nb, ctx + (double) (k * (int64_t) in->nb), -1,
                   &ms) < 0)
      return -1;
    if (in->until + ms > horizon)
      break;
    in->until += ms;
    extra = need;
    itl_add (s, ms, (int64_t) in->nb);  /* the later iterations' gaps, each request's */
  }
  in->run_first = s->now + first_ms;
  in->run = k;
  in->run_pages = extra;
  return 0;
}

/* in's scheduler forms its next batch (in->nb 0: nothing to run). */
static void
form (struct sim *s, struct inst *in)
{
  in->nb = 0;
  if (in->decode_only)
    admit_prefilled (s, in);
  if (in->prefill_only)
    sched_prefill_only (s, in);
  else if (s->eng->id == ENGINE_SGLANG)
    sched_sglang (s, in);
  else if (s->eng->id == ENGINE_TRTLLM)
    sched_trtllm (s, in);
  else
    sched_vllm (s, in);
}

/* An iteration of in started, lasting ms: counted (its decode runs' too). */
static void
counted (struct sim *s, struct inst *in, double ms)
{
  s->iterations++;
  if (pm_verbose > 1) {           /* perfmod serve -v -v: each iteration */
    int64_t pre = 0, dec = 0;
    for (size_t i = 0; i < in->nb; i++) {
      pre += in->batch[i].q;
      dec += in->batch[i].q == 0;
    }
    fprintf (stderr, "serve: replica %d at %.3f ms: %lld prompt tokens, %lld decodes, %zu running, "
             "%zu waiting, %.3f ms\n", (int) (in - s->inst), s->now, (long long) pre,
             (long long) dec, in->nrun, in->waiting.n, ms);
  }
  {
    size_t dec = 0;
    for (size_t i = 0; i < in->nb; i++)
      dec += in->batch[i].q == 0;
    if (dec > 0) {
      s->decode_iters += in->run;
      s->decode_batch_sum += (double) dec * (double) in->run;
    }
    s->iterations += in->run - 1;
  }
}

/* Start in's next iteration at s->now, if it has work; -1 on a cost
 * failure. */
static int
start (struct sim *s, struct inst *in)
{
  double ms;
  if (in->busy)
    return 0;
  form (s, in);
  if (in->nb == 0)
    return 0;
  if (iteration_ms (s, in, -1, &ms) < 0)
    return -1;
  in->busy = true;
  in->until = s->now + ms;
  in->run = 1;
  if (decode_run (s, in, ms) < 0)
    return -1;
  counted (s, in, ms);
  return 0;
}

/* The tokens the experts are fed when n replicas in step bring `sum` in
 * all, the most `most` (prompt tokens among them: `prompts`), as each
 * engine gathers them: vLLM pads every replica to the most whenever all
 * run CUDA graphs (vllm/v1/worker/dp_utils.py: padding when the ranks'
 * synced cudagraph mode is not NONE); SGLang gathers a decode step padded
 * to the most when that moves less than twice the sum, else (and for a
 * prompt) the sum (DpPaddingMode in sglang/srt/layers/dp_attention.py);
 * TensorRT-LLM each replica's own (a gather of their sizes). */
static double
group_fed (const struct sim *s, int n, int64_t sum, int64_t most, bool prompts)
{
  bool pad = s->eng->id == ENGINE_VLLM ? most <= s->eng->graph_max
           : s->eng->id == ENGINE_SGLANG ? !prompts && 2 * sum > most * n : false;
  return (double) (pad ? most * n : sum);
}

/* Attention data parallelism: the n replicas from `first` step together,
 * each MoE layer gathering every replica's tokens (or dispatching to
 * their experts) and none going on before all have.  Each forms its
 * batch; the iteration lasts the longest of theirs, each with the experts
 * fed the tokens of them all (group_fed); a replica with nothing to run
 * runs along (the engines' idle batch: padded, no longer than the
 * longest). */
static int
start_group (struct sim *s, int first, int n)
{
  double fed, longest = 0;
  int64_t sum = 0, most = 0;
  bool work = false, prompts = false;
  for (int k = 0; k < n; k++)
    if (s->inst[first + k].busy)
      return 0;
  for (int k = 0; k < n; k++) {
    struct inst *in = &s->inst[first + k];
    int64_t t;
    form (s, in);
    t = batch_tokens (s, in);
    sum += t;
    most = t > most ? t : most;
    for (size_t i = 0; i < in->nb; i++)
      prompts = prompts || in->batch[i].q > 0;
    work = work || in->nb > 0;
  }
  if (!work)
    return 0;
  fed = group_fed (s, n, sum, most, prompts);
  for (int k = 0; k < n; k++) {
    struct inst *in = &s->inst[first + k];
    double ms = 0;
    if (in->nb > 0 && iteration_ms (s, in, fed, &ms) < 0)
      return -1;
    if (ms > longest)
      longest = ms;
  }
  for (int k = 0; k < n; k++) {
    struct inst *in = &s->inst[first + k];
    in->busy = true;
    in->until = s->now + longest;
    in->run = 1;
    if (in->nb > 0)
      counted (s, in, longest);
  }
  return 0;
}

static double
quantile (const double *v, int64_t n, double p)
{
  double k;
  size_t i;
  if (n <= 0)
    return NAN;
  k = p * (double) (n - 1);
  i = (size_t) k;
  return i + 1 < (size_t) n ? v[i] + (k - (double) i) * (v[i + 1] - v[i]) : v[i];
}

static void
stats_of (double *v, int64_t n, struct serve_stats *st)
{
  double sum = 0;
  for (int64_t i = 0; i < n; i++)
    sum += v[i];
  qsort (v, (size_t) n, sizeof *v, cmp_double);
  st->mean = n > 0 ? sum / (double) n : NAN;
  st->p50 = quantile (v, n, 0.5);
  st->p90 = quantile (v, n, 0.9);
  st->p99 = quantile (v, n, 0.99);
}

static double
itl_quantile (const struct sim *s, double p)
{
  int64_t want = (int64_t) ceil (p * (double) s->itl_n), seen = 0;
  if (s->itl_n == 0)
    return NAN;
  if (want < 1)
    want = 1;
  for (int b = 0; b < ITL_BINS; b++) {
    seen += s->itl_hist[b];
    if (seen >= want)     /* the bin's middle */
      return b == 0 && s->itl_hist[0] > 0 && ITL_MIN_MS > 0 ? 0
           : ITL_MIN_MS * pow (ITL_BIN, (double) b + 0.5);
  }
  return NAN;
}

static void
inst_init (struct sim *s, struct inst *in, const struct serve_pool *pool, bool prefill_only,
           bool decode_only)
{
  in->pool = pool;
  in->prefill_only = prefill_only;
  in->decode_only = decode_only;
  in->page = serve_page_tokens (s->eng);
  in->pages_total = pool->kv_tokens / in->page;
  dq_init (&in->waiting, (size_t) s->n);
  in->running = xmalloc ((size_t) s->n * sizeof *in->running);
  in->batch = xmalloc ((size_t) s->n * sizeof *in->batch);
  in->ratio = s->eng->new_token_ratio;
  in->chunked = -1;
}

static void
inst_free (struct inst *in)
{
  free (in->waiting.v);
  free (in->running);
  free (in->batch);
}

/* The arrivals of LOAD_RATE (exponential gaps from a fixed seed:
 * xorshift64*) and LOAD_TRACE. */
static void
arrivals (struct sim *s)
{
  const struct serve_workload *w = &s->in->load;
  uint64_t x = w->seed ? w->seed : 1;
  double t = 0;
  for (int64_t i = 0; i < s->n; i++) {
    struct req *q = &s->r[i];
    q->isl = w->kind == LOAD_TRACE ? w->isl_v[i] : w->isl;
    q->osl = w->kind == LOAD_TRACE ? w->osl_v[i] : w->osl;
    q->client = -1;
    q->arrive = INFINITY;
    if (w->kind == LOAD_TRACE)
      q->arrive = w->arrival_ms[i];
    else if (w->kind == LOAD_RATE) {
      t += -log (1 - sim_uniform (&x)) / w->rate * 1e3;
      q->arrive = t;
    }
  }
  if (w->kind == LOAD_CLOSED)
    for (int64_t c = 0; c < w->concurrency && s->issued < s->n; c++)
      spawn (s, (int) c, 0);
}

int
serve_simulate (const struct serve_sim_input *in, struct serve_metrics *out)
{
  struct sim s;
  int rc = -1;
  bool disagg = in->decode.replicas > 0;

  memset (out, 0, sizeof *out);
  memset (&s, 0, sizeof s);
  s.in = in;
  s.eng = in->eng;
  s.n = in->load.requests;
  s.r = xcalloc ((size_t) s.n, sizeof *s.r);
  s.ttft = xmalloc ((size_t) s.n * sizeof *s.ttft);
  s.tpot = xmalloc ((size_t) s.n * sizeof *s.tpot);
  s.e2e = xmalloc ((size_t) s.n * sizeof *s.e2e);
  s.itl_hist = xcalloc (ITL_BINS, sizeof *s.itl_hist);
  s.itl_last_ms = -1;
  s.moving = xmalloc ((size_t) s.n * sizeof *s.moving);
  s.client_seen = xcalloc ((size_t) (in->load.concurrency > 0 ? in->load.concurrency : 1), 1);
  s.steady_t = -1;
  s.nprefill = disagg ? in->pool.replicas : 0;
  s.ninst = in->pool.replicas + (disagg ? in->decode.replicas : 0);
  s.inst = xcalloc ((size_t) s.ninst, sizeof *s.inst);
  for (int i = 0; i < s.ninst; i++) {
    const struct serve_pool *pool = i < in->pool.replicas ? &in->pool : &in->decode;
    int base = i < in->pool.replicas ? 0 : in->pool.replicas;
    inst_init (&s, &s.inst[i], pool, disagg && i < s.nprefill, disagg && i >= s.nprefill);
    /* attention data parallelism: a worker's replicas step together
     * where the pool holds whole workers */
    s.inst[i].group = pool->lockstep > 1 && pool->replicas % pool->lockstep == 0
                      ? ((i - base) % pool->lockstep == 0 ? pool->lockstep : 0) : 1;
  }
  s.first_arrival = INFINITY;
  s.rng = in->load.seed ? in->load.seed : 1;
  s.load_open = in->load.kind != LOAD_CLOSED;
  arrivals (&s);

  /* A request no replica can ever hold would wait for ever. */
  for (int64_t i = 0; i < s.n; i++) {
    const struct req *q = &s.r[i];
    for (int k = 0; k < s.ninst; k++) {
      const struct inst *x = &s.inst[k];
      int64_t need = x->prefill_only ? q->isl
                   : s.eng->admit == ADMIT_RESERVE ? q->isl + q->osl + 1 : q->isl + q->osl;
      if (pages_for (x, need) > x->pages_total) {
        pm_error ("a request of %lld prompt and %lld output tokens needs more KV cache than a "
                  "%s replica holds (%lld tokens)", (long long) q->isl, (long long) q->osl,
                  x->prefill_only ? "prefill" : x->decode_only ? "decode" : "serving",
                  (long long) x->pool->kv_tokens);
        out->stuck = true;
        goto out;
      }
    }
  }

  while (s.done < s.n) {
    double t = INFINITY;
    /* the next event: an arrival, an iteration's end, a KV cache landing */
    if (s.load_open && s.next < s.n && s.r[s.next].arrive < t)
      t = s.r[s.next].arrive;
    for (int i = 0; i < s.ninst; i++)
      if (s.inst[i].busy && s.inst[i].until < t)
        t = s.inst[i].until;
    if (s.nmoving > 0 && s.r[s.moving[0]].ready < t)
      t = s.r[s.moving[0]].ready;
    if (isinf (t)) {
      pm_error ("the simulation stopped with %lld of %lld requests unfinished: none could be "
                "scheduled (the engine's limits too small for them?)",
                (long long) (s.n - s.done), (long long) s.n);
      out->stuck = true;
      goto out;
    }
    s.now = t;
    for (int i = 0; i < s.ninst; i++)
      if (s.inst[i].busy && s.inst[i].until <= t) {
        s.inst[i].busy = false;
        apply (&s, &s.inst[i]);
      }
    /* arrivals in arrival order (a closed loop's clients send from the
     * in-flight list) */
    while (s.load_open && s.next < s.n && s.r[s.next].arrive <= t) {
      send (&s, (int) s.next);
      s.next++;
    }
    /* the clients' requests sent and the KV caches landed, in time order */
    while (s.nmoving > 0 && s.r[s.moving[0]].ready <= t) {
      int r = moving_pop (&s);
      if (s.r[r].state == R_CLIENT)
        send (&s, r);
      else
        join (&s, r, true);
    }
    for (int i = 0; i < s.ninst; i++)
      if (s.inst[i].group == 1 ? start (&s, &s.inst[i]) < 0
          : s.inst[i].group > 1 && start_group (&s, i, s.inst[i].group) < 0)
        goto out;
  }

  stats_of (s.ttft, s.nttft, &out->ttft);
  stats_of (s.tpot, s.ntpot, &out->tpot);
  stats_of (s.e2e, s.done, &out->e2e);
  out->itl.mean = s.itl_n ? s.itl_sum / (double) s.itl_n : NAN;
  out->itl.p50 = itl_quantile (&s, 0.5);
  out->itl.p90 = itl_quantile (&s, 0.9);
  out->itl.p99 = itl_quantile (&s, 0.99);
  out->duration_ms = s.last_token - s.first_arrival;
  out->output_tokens = s.out_tokens;
  /* the throughput of a closed loop once every client is past its first
   * request (the burst and the shift out of step are not the steady
   * state), where enough of the run is left after it */
  if (s.steady_t >= 0 && s.last_token - s.steady_t > 0.5 * out->duration_ms) {
    out->steady_ms = s.last_token - s.steady_t;
    out->steady_tokens = s.out_tokens - s.steady_tokens;
  }
  else {
    out->steady_ms = out->duration_ms;
    out->steady_tokens = s.out_tokens;
  }
  out->input_tokens = s.in_tokens;
  out->requests = s.done;
  out->preemptions = s.preemptions;
  out->iterations = s.iterations;
  out->batch_mean = s.decode_iters ? s.decode_batch_sum / (double) s.decode_iters : 0;
  out->transfer_ms = s.transfers ? s.transfer_sum / (double) s.transfers : 0;
  for (int i = 0; i < s.ninst; i++) {
    struct inst *x = &s.inst[i];
    if (x->prefill_only)
      continue;
    kv_account (&s, x);
    if (x->kv_peak > out->kv_peak)
      out->kv_peak = x->kv_peak;
    if (out->duration_ms > 0 && x->kv_area / out->duration_ms > out->kv_mean)
      out->kv_mean = x->kv_area / out->duration_ms;
  }
  rc = 0;
out:
  for (int i = 0; i < s.ninst; i++)
    inst_free (&s.inst[i]);
  free (s.inst);
  free (s.r);
  free (s.ttft);
  free (s.tpot);
  free (s.e2e);
  free (s.itl_hist);
  free (s.moving);
  free (s.client_seen);
  return rc;
}
