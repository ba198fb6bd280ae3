/* search.c: the search engine of perfmod search and perfmod_search: every parallel configuration of a training step enumerated, the impossible ones pruned with their reason, the rest predicted on threads with caches, the best kept. */
#include <config.h>

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

static const char *const prune_keys[SEARCH_NPRUNE] = {   /* JSON */
  "tp", "ep", "batch", "interleave", "zero3_pp", "memory", "fixed", "cp",
};
static const char *const prune_names[SEARCH_NPRUNE] = {
  "tp does not divide heads/ffn", "ep does not divide the experts",
  "batch not a multiple of dp x mbs (or > 2^20 of them)", "layers or micro-batches vs pp x vp",
  "zero=3 with pp > 1 (not modelled)", "out of memory", "outside --fix/--max-tp",
  "cp: unfused attention or seq not 2cp chunks",
};

/* One predicted configuration. */
struct found {
  struct strategy s;
  size_t index;          /* in the enumeration: breaks ties, whatever the threads */
  double step_ms, tokens_s, mfu, mem_gib, train_h, cost;
  double score;          /* lower is better */
};

/* A configuration as enumerated, packed: struct strategy holds a split of
 * up to 256 stages (1,120 bytes), and a DeepSeek-V3 space of 300,000 would
 * keep 330 MB of them.  Everything else is strategy_init's; an uneven one's
 * split is strategy_uneven_split's, redone when unpacked (the enumeration
 * sets no other). */
struct config {
  int32_t tp, pp, dp, ep, cp, mbs, vp;
  uint8_t uneven, kernels, dispatcher, a2a_overlap, shared_overlap, schedule, zero, recompute, sp,
    tpo, etp, grad_low;
};

static void
config_pack (struct config *c, const struct strategy *s)
{
  memset (c, 0, sizeof *c);
  c->tp = s->tp;
  c->pp = s->pp;
  c->dp = s->dp;
  c->ep = s->ep;
  c->cp = s->cp;
  c->mbs = s->mbs;
  c->vp = s->vp;
  c->uneven = s->nsplit > 0;
  c->kernels = (uint8_t) s->kernels;
  c->dispatcher = (uint8_t) s->dispatcher;
  c->a2a_overlap = s->a2a_overlap;
  c->shared_overlap = s->shared_overlap;
  c->schedule = (uint8_t) s->schedule;
  c->zero = (uint8_t) s->zero;
  c->recompute = (uint8_t) s->recompute;
  c->sp = s->sp;
  c->tpo = s->tpo;
  c->etp = (uint8_t) s->etp;
  c->grad_low = s->grad_low;
}

static void
config_unpack (const struct config *c, const struct model_cfg *m, struct strategy *s)
{
  strategy_init (s);
  s->tp = c->tp;
  s->pp = c->pp;
  s->dp = c->dp;
  s->dp_set = true;
  s->ep = c->ep;
  s->cp = c->cp;
  s->mbs = c->mbs;
  s->vp = c->vp;
  if (c->uneven)
    strategy_uneven_split (s, m->layers);
  s->kernels = (enum pm_kernels) c->kernels;
  s->kernels_set = true;
  s->dispatcher = c->dispatcher;
  s->a2a_overlap = c->a2a_overlap;
  s->shared_overlap = c->shared_overlap;
  s->schedule = (enum pm_schedule) c->schedule;
  s->zero = c->zero;
  s->recompute = (enum pm_recompute) c->recompute;
  s->sp = c->sp;
  s->tpo = c->tpo;
  s->etp = c->etp;
  s->grad_low = c->grad_low;
}

/* The search's state: the fixed inputs, the counters, the best so far. */
struct search {
  int64_t gpus, batch, seq, max_tp, max_cp;
  size_t top;
  double tokens, price;
  const struct model_cfg *m;
  const struct gpu_entry *ge;
  const struct precision *pr;
  struct plugin_set *set;
  struct plugin *pred;
  const char *datadir;             /* the caller's, for the threads */
  struct strategy fixed;           /* the fix values; `fixed_mask` says which count */
  unsigned fixed_mask;
  bool flash;
  enum pm_kernels kernels;
  int gpn;
  size_t tried, predicted, pruned[SEARCH_NPRUNE];
  struct config *configs;          /* enumerated and not pruned: to predict */
  size_t nconfigs;
  struct found *best;
  size_t nbest;
  size_t done;                     /* predicted so far, all threads (progress) */
  int finished;                    /* threads done */
  size_t lo, hi;                   /* this part's configurations */
  size_t next;                     /* the next block of them a thread takes (atomic) */
};

/* Configurations a thread takes at once: neighbours in the enumeration
 * share their chunk graphs (they differ in the ZeRO stage, recomputation,
 * the schedule...), so a block keeps them on one thread's chunk cache. */
#define SEARCH_BLOCK 256

/* One thread: the blocks it takes, its chunk cache, its best. */
struct worker {
  struct search *x;
  struct dist_cache *cache;
  struct memo *memo;               /* its kernel estimates, kept across configurations */
  struct found *best;
  size_t nbest, predicted, oom;
  int rc;
  char err[512];
};

enum { FX_TP, FX_PP, FX_DP, FX_EP, FX_MBS, FX_VP, FX_ZERO, FX_RECOMPUTE, FX_SP, FX_SCHEDULE,
       FX_KERNELS, FX_CP, FX_TPO, FX_DISPATCHER, FX_A2A_OVERLAP, FX_SHARED_OVERLAP, FX_ETP,
       FX_GRAD_FP32 };

/* Which keys fix gives: parsed as a strategy, each key's presence found
 * by name. */
static int
fix_parse (struct search *x, const char *fix)
{
  static const char *const keys[] = { "tp", "pp", "dp", "ep", "mbs", "vp", "zero", "recompute",
                                      "sp", "schedule", "kernels", "cp", "tpo", "dispatcher",
                                      "a2a_overlap", "shared_overlap", "etp", "grad_fp32" };
  char **items;
  strategy_init (&x->fixed);
  x->fixed_mask = 0;
  if (fix == NULL)
    return 0;
  items = strv_split (fix, ',');
  for (char **it = items; *it; it++) {
    char *eq = strchr (*it, '=');
    int k;
    if (eq)
      *eq = '\0';
    if ((k = word_index (*it, keys, sizeof keys / sizeof keys[0])) < 0) {
      pm_error ("--fix: %s cannot be fixed (fixable: tp, pp, dp, ep, etp, mbs, vp, zero, "
                "recompute, sp, tpo, schedule, kernels, cp, dispatcher, a2a_overlap, "
                "shared_overlap, grad_fp32)", *it);
      strv_free (items);
      return -1;
    }
    x->fixed_mask |= 1u << k;
  }
  strv_free (items);
  if (strategy_parse (&x->fixed, fix, "--fix") < 0)
    return -1;
  if ((x->fixed.a2a_overlap || x->fixed.shared_overlap) &&
      x->fixed.dispatcher == PERFMOD_DISPATCH_ALLGATHER) {
    pm_error ("--fix: %s=1 with dispatcher=allgather: Megatron-Core overlaps the all-to-all "
              "and flex dispatchers only", x->fixed.a2a_overlap ? "a2a_overlap" : "shared_overlap");
    return -1;
  }
  if (x->fixed.a2a_overlap && x->fixed.shared_overlap) {
    pm_error ("--fix: a2a_overlap=1 with shared_overlap=1: Megatron-Core runs one or the other");
    return -1;
  }
  return 0;
}

static bool
fixed_ok (const struct search *x, int key, int value)
{
  const struct strategy *f = &x->fixed;
  int want[] = { f->tp, f->pp, f->dp, f->ep, f->mbs, f->vp, f->zero, f->recompute, f->sp,
                 f->schedule, f->kernels, f->cp, f->tpo, f->dispatcher, f->a2a_overlap,
                 f->shared_overlap, f->etp, f->grad_low ? 0 : 1 };
  return !(x->fixed_mask & 1u << key) || want[key] == value;
}

static bool
better (const struct found *a, const struct found *b)
{
  return a->score < b->score || (a->score == b->score && a->index < b->index);
}

/* Keep f in best[0..*n) if it is among the top (sorted, best first). */
static void
keep (struct found *best, size_t *n, size_t top, const struct found *f)
{
  size_t i;
  if (*n == top && !better (f, &best[*n - 1]))
    return;
  i = *n < top ? *n : *n - 1;
  while (i > 0 && better (f, &best[i - 1])) {
    best[i] = best[i - 1];
    i--;
  }
  best[i] = *f;
  if (*n < top)
    (*n)++;
}

/* Megatron-Core's --overlap-moe-expert-parallel-comm runs with its own
 * layer, ep > 1, interleaving where pp > 1 and no full recomputation. */
static bool
a2a_overlap_runs (const struct strategy *s)
{
  return s->ep > 1 && s->kernels == KERNELS_TE && !(s->pp > 1 && s->vp < 2) &&
         s->recompute != RECOMPUTE_FULL && s->dispatcher != PERFMOD_DISPATCH_ALLGATHER;
}

/* --moe-shared-expert-overlap: its layer, shared experts, tokens to
 * dispatch by all-to-all or flex. */
static bool
shared_overlap_runs (const struct search *x, const struct strategy *s)
{
  return s->ep > 1 && s->kernels == KERNELS_TE && x->m->shared_ffn > 0 &&
         s->dispatcher != PERFMOD_DISPATCH_ALLGATHER;
}

/* Count s, and keep it for prediction unless fix or what is not
 * modelled prunes it. */
static void
consider (struct search *x, const struct strategy *s)
{
  x->tried++;
  if (!fixed_ok (x, FX_ZERO, s->zero) || !fixed_ok (x, FX_RECOMPUTE, s->recompute) ||
      !fixed_ok (x, FX_SP, s->sp) || !fixed_ok (x, FX_SCHEDULE, s->schedule) ||
      !fixed_ok (x, FX_TPO, s->tpo)) {
    x->pruned[SEARCH_PRUNE_FIXED]++;
    return;
  }
  if (s->zero == 3 && s->pp > 1) {
    x->pruned[SEARCH_PRUNE_ZERO3_PP]++;
    return;
  }
  /* a fixed dispatcher or overlap where Megatron-Core would not run it
   * (consider_moe enumerates only those it runs) */
  if ((s->dispatcher != PERFMOD_DISPATCH_ALLTOALL && s->ep < 2) ||
      (s->etp && s->dispatcher == PERFMOD_DISPATCH_ALLGATHER) ||
      (s->a2a_overlap && !a2a_overlap_runs (s)) ||
      (s->shared_overlap && !shared_overlap_runs (x, s))) {
    x->pruned[SEARCH_PRUNE_FIXED]++;
    return;
  }
  if ((x->nconfigs & (x->nconfigs - 1)) == 0)
    x->configs = xrealloc (x->configs, (x->nconfigs ? 2 * x->nconfigs : 1) * sizeof *x->configs);
  config_pack (&x->configs[x->nconfigs++], s);
}

/* s with each way Megatron-Core moves ep's tokens, where ep > 1: its
 * dispatchers (all-to-all, all-gather, DeepEP's flex where the GPUs have
 * NVLink and the activations are 16-bit) and, beside the all-to-all and
 * flex ones, the 1F1B all-to-all overlap (a2a_overlap) and the shared
 * experts' (shared_overlap) where each runs.  No overlap is tried but
 * where shared_overlap runs: that one hides time for the SMs its
 * collectives hold and costs no memory, so it never loses to none, while
 * a2a_overlap holds another micro-batch's activations (it may not fit
 * where none does).  A key that --fix gives takes its value alone. */
static void
consider_moe (struct search *x, const struct strategy *b)
{
  static const int dispatchers[] = { PERFMOD_DISPATCH_ALLTOALL, PERFMOD_DISPATCH_ALLGATHER,
                                     PERFMOD_DISPATCH_FLEX };
  static const int ov_key[3] = { -1, FX_A2A_OVERLAP, FX_SHARED_OVERLAP };
  bool deepep = x->ge->gpu.nvlink && x->pr->act_bytes <= 2;
  if (b->ep < 2 || x->m->experts == 0) {
    consider (x, b);
    return;
  }
  for (size_t d = 0; d < sizeof dispatchers / sizeof dispatchers[0]; d++) {
    struct strategy s = *b;
    bool tried[3] = { false, false, false };
    if (x->fixed_mask & 1u << FX_DISPATCHER ? dispatchers[d] != x->fixed.dispatcher
        : (dispatchers[d] == PERFMOD_DISPATCH_FLEX && !deepep) ||
          (dispatchers[d] == PERFMOD_DISPATCH_ALLGATHER && b->etp))
      continue;
    s.dispatcher = dispatchers[d];
    s.a2a_overlap = s.shared_overlap = false;
    /* an overlap: where --fix asks for it (consider prunes it where it
     * does not run) or where it runs */
    tried[1] = fixed_ok (x, FX_A2A_OVERLAP, 1) && fixed_ok (x, FX_SHARED_OVERLAP, 0) &&
               (x->fixed_mask & 1u << FX_A2A_OVERLAP || a2a_overlap_runs (&s));
    tried[2] = fixed_ok (x, FX_SHARED_OVERLAP, 1) && fixed_ok (x, FX_A2A_OVERLAP, 0) &&
               (x->fixed_mask & 1u << FX_SHARED_OVERLAP || shared_overlap_runs (x, &s));
    tried[0] = fixed_ok (x, FX_A2A_OVERLAP, 0) && fixed_ok (x, FX_SHARED_OVERLAP, 0) &&
               !tried[2];
    for (int ov = 0; ov < 3; ov++) {
      if (!tried[ov])
        continue;
      s.a2a_overlap = ov_key[ov] == FX_A2A_OVERLAP;
      s.shared_overlap = ov_key[ov] == FX_SHARED_OVERLAP;
      consider (x, &s);
    }
  }
}

/* Predict configuration i into the worker's best; -1 on a predictor
 * failure (w->err says why). */
static int
predict_one (struct worker *w, size_t i)
{
  struct search *x = w->x;
  struct dist_options d;
  struct dist_result r;
  struct found f;
  struct strategy s;
  double peak = perfmod_gpu_peak_flops (&x->ge->gpu, x->pr->gemm), tokens;
  int rc;

  config_unpack (&x->configs[i], x->m, &s);
  memset (&d, 0, sizeof d);
  d.s = &s;
  d.prec = x->pr;
  d.train = true;
  d.flash = x->flash;
  d.batch = x->batch;
  d.seq = x->seq;
  d.gpus_per_node = x->gpn;
  d.cache = w->cache;
  d.memo = w->memo;
  d.stop_if_oom = true;
  pm_error_capture (w->err, sizeof w->err);
  rc = dist_predict (x->set, x->pred, x->m, &x->ge->gpu, &d, &r);
  pm_error_capture (NULL, 0);
  if (rc < 0)
    return -1;
  __atomic_fetch_add (&x->done, 1, __ATOMIC_RELAXED);
  if (r.mem.oom) {
    w->oom++;
    return 0;
  }
  w->predicted++;
  tokens = (double) x->batch * (double) x->seq;
  memset (&f, 0, sizeof f);
  f.s = s;
  f.index = i;
  f.step_ms = r.step_ms;
  f.tokens_s = tokens / (r.step_ms / 1e3);
  f.mfu = r.step_ms > 0 ? r.flops / (r.step_ms / 1e3) / peak : 0;
  f.mem_gib = r.mem.total / PM_GIB;
  f.train_h = x->tokens > 0 ? x->tokens / f.tokens_s / 3600 : 0;
  f.cost = f.train_h * (double) x->gpus * x->price;
  /* with a fixed GPU count every objective ranks by step time */
  f.score = r.step_ms;
  keep (w->best, &w->nbest, x->top, &f);
  return 0;
}

static void *
work (void *arg)
{
  struct worker *w = arg;
  struct search *x = w->x;
  pm_datadir_use (x->datadir);
  while (w->rc == 0) {
    size_t b = __atomic_fetch_add (&x->next, SEARCH_BLOCK, __ATOMIC_RELAXED);
    if (b >= x->hi)
      break;
    for (size_t i = b; i < x->hi && i < b + SEARCH_BLOCK && w->rc == 0; i++)
      if (predict_one (w, i) < 0)
        w->rc = -1;
  }
  pm_datadir_use (NULL);
  __atomic_fetch_add (&w->x->finished, 1, __ATOMIC_RELAXED);
  return NULL;
}

/* Predict this part's share of the kept configurations (the part-th of
 * nparts contiguous ranges) on `jobs` threads, each taking blocks of
 * neighbours for its own chunk cache, and merge their best: the result
 * is the same for any number of threads or parts (ties go to the lower
 * index).  The share's first configuration is predicted alone first, so
 * that the predictor's lazily loaded parameters are loaded once. */
static int
predict_all (struct search *x, int jobs, size_t part, size_t nparts,
             const struct perfmod_search_request *req)
{
  struct worker *w = xcalloc ((size_t) jobs, sizeof *w);
  pthread_t *th = xcalloc ((size_t) jobs, sizeof *th);
  bool *started = xcalloc ((size_t) jobs, sizeof *started);
  int rc = 0;

  for (int kc = 0; kc < 16; kc++)       /* the dtypes() answers asked before the threads */
    for (int dt = 0; dt < PERFMOD_DTYPE_NTYPES; dt++)
      plugin_covers (x->pred, kc, dt);
  x->lo = x->nconfigs / nparts * part + (part < x->nconfigs % nparts ? part : x->nconfigs % nparts);
  x->hi = x->lo + x->nconfigs / nparts + (part < x->nconfigs % nparts ? 1 : 0);
  struct dist_cache *chunks = dist_cache_new ();   /* the threads' chunk predictions */
  for (int j = 0; j < jobs; j++) {
    w[j].x = x;
    w[j].cache = dist_cache_new_sharing (chunks);
    w[j].memo = kernel_memo_new ();
    w[j].best = xcalloc (x->top, sizeof *w[j].best);
  }
  x->next = x->lo;
  if (x->lo < x->hi && predict_one (&w[0], x->lo) < 0)
    w[0].rc = -1;
  x->next = x->lo + 1;                   /* its first is done */
  for (int j = 0; j < jobs && w[0].rc == 0; j++) {
    if (pthread_create (&th[j], NULL, work, &w[j]) == 0)
      started[j] = true;
    else
      work (&w[j]);                      /* a thread that could not start: here */
  }
  /* the caller's progress while the threads run */
  while (req->progress && __atomic_load_n (&x->finished, __ATOMIC_RELAXED) < jobs) {
    struct timespec nap = { 0, 250000000 };
    nanosleep (&nap, NULL);
    req->progress (req->progress_arg, __atomic_load_n (&x->done, __ATOMIC_RELAXED), x->nconfigs);
  }
  for (int j = 0; j < jobs; j++)
    if (started[j])
      pthread_join (th[j], NULL);
  for (int j = 0; j < jobs; j++) {
    if (w[j].rc < 0 && rc == 0) {
      pm_error ("%s", w[j].err);
      rc = -1;
    }
    x->predicted += w[j].predicted;
    x->pruned[SEARCH_PRUNE_MEMORY] += w[j].oom;
    {
      size_t hits, misses;
      dist_cache_stats (w[j].cache, &hits, &misses);
      pm_debug ("search: thread %d: %zu configurations, chunk cache %zu hits, %zu misses", j,
                w[j].predicted, hits, misses);
    }
    for (size_t i = 0; i < w[j].nbest; i++)
      keep (x->best, &x->nbest, x->top, &w[j].best[i]);
    dist_cache_free (w[j].cache);
    kernel_memo_free (w[j].memo);
    free (w[j].best);
  }
  dist_cache_free (chunks);
  free (w);
  free (th);
  free (started);
  return rc;
}

/* One configuration counted and pruned before prediction. */
static void
prune (struct search *x, enum search_prune why)
{
  x->tried++;
  x->pruned[why]++;
}

/* The most pipeline chunks (pp x vp) an uneven split is searched for:
 * its --strategy string (split=a:b:...) stays within a row's 256 bytes. */
#define SEARCH_MAX_UNEVEN 16

/* The layouts of one (tp, pp, cp, dp, ep, etp): micro-batch, interleaving,
 * schedule, ZeRO stage, recomputation, sp and tpo, each with the MoE
 * communication consider_moe tries. */
static void
enumerate_layouts (struct search *x, int tp, int64_t pp, int cp, int64_t dp, int64_t ep, int etp,
                   enum pm_kernels kernels)
{
  const struct model_cfg *m = x->m;
  for (int mbs = 1; mbs <= 16; mbs *= 2) {
    int64_t micro;
    if (!fixed_ok (x, FX_MBS, mbs)) {
      prune (x, SEARCH_PRUNE_FIXED);
      continue;
    }
    if (x->batch % (dp * mbs) != 0) {
      prune (x, SEARCH_PRUNE_BATCH);
      continue;
    }
    micro = x->batch / (dp * mbs);
    if (micro > PM_MAX_MICROBATCHES) {   /* beyond what dist_check models */
      prune (x, SEARCH_PRUNE_BATCH);
      continue;
    }
    for (int64_t vp = 1; vp <= (pp > 1 ? m->layers / pp : 1); vp++) {
      bool uneven = m->layers % (pp * vp) != 0;
      if (!fixed_ok (x, FX_VP, (int) vp)) {
        prune (x, SEARCH_PRUNE_FIXED);
        continue;
      }
      /* Interleaving needs the micro-batches in whole rounds of
       * pp, as Megatron does; chunks that do not divide the layers
       * split them unevenly (strategy_uneven_split), up to
       * SEARCH_MAX_UNEVEN chunks. */
      if ((vp > 1 && micro % pp != 0) || (uneven && pp * vp > SEARCH_MAX_UNEVEN)) {
        if (m->layers % pp == 0 || vp == 1)   /* each (pp, vp) counted once */
          prune (x, SEARCH_PRUNE_INTERLEAVE);
        continue;
      }
      /* the strategy every choice below starts from */
      struct strategy b;
      strategy_init (&b);
      b.tp = tp;
      b.pp = (int) pp;
      b.dp = (int) dp;
      b.dp_set = true;
      b.ep = (int) ep;
      b.etp = etp;
      b.cp = cp;
      b.mbs = mbs;
      b.vp = (int) vp;
      if (uneven)
        strategy_uneven_split (&b, m->layers);
      b.kernels = kernels;
      b.kernels_set = true;
      b.dispatcher = x->fixed.dispatcher;
      b.a2a_overlap = x->fixed.a2a_overlap;
      b.shared_overlap = x->fixed.shared_overlap;
      b.grad_low = x->fixed.grad_low;   /* a recipe's setting, not searched */
      /* one chunk per rank: GPipe beside 1F1B; tpo (Transformer
       * Engine's userbuffers) with sp and TE's layer */
      for (int sc = 0; sc < (pp > 1 && vp == 1 ? 2 : 1); sc++) {
        /* ZeRO over dp, or ZeRO-1 over the routed experts' replicas (etp=1 with dp 1) */
        int zmax = dp > 1 ? 3 : m->experts > 0 && dist_expert_replicas (&b) > 1 ? 1 : 0;
        for (int zero = 0; zero <= zmax; zero++) {
          for (int rc = RECOMPUTE_NONE; rc <= RECOMPUTE_FULL; rc++) {
            for (int sp = etp; sp <= (tp > 1 ? 1 : 0); sp++) {   /* etp=1: sp */
              for (int tpo = 0; tpo <= (sp && kernels == KERNELS_TE ? 1 : 0); tpo++) {
                struct strategy s = b;
                s.schedule = vp > 1 ? SCHED_INTERLEAVED : sc ? SCHED_GPIPE : SCHED_1F1B;
                s.zero = zero;
                s.recompute = (enum pm_recompute) rc;
                s.sp = sp;
                s.tpo = tpo;
                consider_moe (x, &s);
              }
            }
          }
        }
      }
    }
  }
}

/* Every configuration, in a fixed order (the result does not depend on
 * it: ties are broken by that order). */
static void
enumerate (struct search *x)
{
  const struct model_cfg *m = x->m;
  int64_t gpus = x->gpus, max_tp = x->max_tp ? x->max_tp : x->gpn;
  int64_t max_cp = x->max_cp ? x->max_cp : 8;
  enum pm_kernels kernels = (x->fixed_mask & 1u << FX_KERNELS) ? x->fixed.kernels : x->kernels;
  for (int tp = 1; tp <= gpus && tp <= max_tp; tp *= 2) {
    if (gpus % tp != 0)
      continue;
    if (!fixed_ok (x, FX_TP, tp)) {
      prune (x, SEARCH_PRUNE_FIXED);
      continue;
    }
    if (m->heads % tp || m->kv_heads % tp || m->ffn % tp) {
      prune (x, SEARCH_PRUNE_TP);
      continue;
    }
    for (int64_t pp = 1; pp <= gpus / tp && pp <= m->layers; pp++)
    for (int cp = 1; cp <= max_cp && cp <= gpus / tp / pp; cp *= 2) {
      int64_t dp;
      if ((gpus / tp) % pp != 0 || (gpus / tp / pp) % cp != 0)
        continue;
      dp = gpus / tp / pp / cp;
      if (!fixed_ok (x, FX_PP, (int) pp) || !fixed_ok (x, FX_DP, (int) dp) ||
          !fixed_ok (x, FX_CP, cp)) {
        prune (x, SEARCH_PRUNE_FIXED);
        continue;
      }
      /* Megatron's ring attention: fused attention, 2 x cp equal chunks */
      if (cp > 1 && (!x->flash || x->seq % (2 * cp) != 0)) {
        prune (x, SEARCH_PRUNE_CP);
        continue;
      }
      /* ep within dp (Megatron-Core's default expert tp, = tp), and with
       * etp=1 (experts whole, the ep ranks drawn from tp x dp: TE's layer,
       * tp > 1 beside sp) any divisor of those, as --strategy takes */
      int64_t fold = (int64_t) tp * dp;
      for (int64_t ep = 1; ep <= fold; ep++) {
        bool within_dp = dp % ep == 0;
        bool whole = tp > 1 && kernels == KERNELS_TE && ep > 1 && fold % ep == 0;
        if ((!within_dp && !whole) || (ep > 1 && m->experts == 0))
          continue;
        if (!fixed_ok (x, FX_EP, (int) ep)) {
          prune (x, SEARCH_PRUNE_FIXED);
          continue;
        }
        if (ep > 1 && m->experts % ep != 0) {
          prune (x, SEARCH_PRUNE_EP);
          continue;
        }
        for (int etp = 0; etp <= 1; etp++) {
          if (etp ? !whole : !within_dp)
            continue;
          if (!fixed_ok (x, FX_ETP, etp)) {
            prune (x, SEARCH_PRUNE_FIXED);
            continue;
          }
          enumerate_layouts (x, tp, pp, cp, dp, ep, etp, kernels);
        }
      }
    }
  }
}

/* The first struct_size bytes of res and the caller's row_size bytes of
 * each row: what a caller built against an older header has. */
#define RES_HAS(res, field) \
  ((res)->struct_size >= offsetof (struct perfmod_search_result, field) + sizeof (res)->field)

static bool
row_better (const struct perfmod_search_row *a, const struct perfmod_search_row *b)
{
  return a->step_ms < b->step_ms || (a->step_ms == b->step_ms && a->index < b->index);
}

int
search_merge (struct perfmod_search_result *res, const struct perfmod_search_row *rows, size_t n,
              size_t top)
{
  size_t rs = res->row_size, nb = 0;
  struct perfmod_search_row *all;
  if (rs < offsetof (struct perfmod_search_row, index) + sizeof rows->index) {
    pm_error ("search: row_size is not sizeof (struct perfmod_search_row)");
    return -1;
  }
  /* res->best and rows, as full rows, sorted by insertion */
  all = xcalloc (res->nbest + n + 1, sizeof *all);
  for (size_t i = 0; i < res->nbest + n; i++) {
    struct perfmod_search_row r;
    size_t k;
    memset (&r, 0, sizeof r);
    if (i < res->nbest)
      memcpy (&r, (const char *) res->best + i * rs, rs < sizeof r ? rs : sizeof r);
    else
      memcpy (&r, (const char *) rows + (i - res->nbest) * rs, rs < sizeof r ? rs : sizeof r);
    for (k = nb; k > 0 && row_better (&r, &all[k - 1]); k--)
      all[k] = all[k - 1];
    all[k] = r;
    nb++;
  }
  if (nb > top)
    nb = top;
  free (res->best);
  res->best = xcalloc (nb + 1, rs);
  for (size_t i = 0; i < nb; i++)
    memcpy ((char *) res->best + i * rs, &all[i], rs < sizeof all[i] ? rs : sizeof all[i]);
  res->nbest = nb;
  free (all);
  return 0;
}

void
search_result_free (struct perfmod_search_result *res)
{
  free (res->model);
  free (res->gpu);
  free (res->precision);
  free (res->predictor);
  free (res->objective);
  free (res->best);
  res->model = res->gpu = res->precision = res->predictor = res->objective = NULL;
  res->best = NULL;
  res->nbest = 0;
}

/* The request's numbers in range: 0, or -1 said. */
static int
request_check (const struct perfmod_search_request *req)
{
  const char *obj = req->objective ? req->objective : "time";
  if (req->model == NULL) {
    pm_error ("search: no model");
    return -1;
  }
  if (req->gpus < 1 || req->gpus > 1 << 20) {
    pm_error ("search: gpus %lld: expected 1 to 1048576", (long long) req->gpus);
    return -1;
  }
  if (req->global_batch < 1 || req->global_batch > (int64_t) 1 << 31) {
    pm_error ("search: global batch %lld: expected 1 to 2^31", (long long) req->global_batch);
    return -1;
  }
  if (req->seq < 0 || req->seq > (int64_t) 1 << 31) {
    pm_error ("search: seq %lld: expected 1 to 2^31 (0: the model's)", (long long) req->seq);
    return -1;
  }
  if (req->gpus_per_node < 0 || req->gpus_per_node > 1 << 20 || req->max_tp < 0 ||
      req->max_tp > 1 << 20 || req->max_cp < 0 || req->max_cp > 1 << 20) {
    pm_error ("search: gpus per node, max tp and max cp: expected 1 to 1048576 (0: the default)");
    return -1;
  }
  if (req->top < 0 || req->top > 1000) {
    pm_error ("search: top %lld: expected 1 to 1000 (0: 10)", (long long) req->top);
    return -1;
  }
  if (req->jobs < 0 || req->jobs > 1024) {
    pm_error ("search: jobs %lld: expected 1 to 1024 (0: the CPUs)", (long long) req->jobs);
    return -1;
  }
  if (!isfinite (req->tokens) || req->tokens < 0 || !isfinite (req->price_per_gpu_hour) ||
      req->price_per_gpu_hour < 0) {
    pm_error ("search: tokens and price per GPU hour: expected finite numbers of at least 0");
    return -1;
  }
  if (req->nparts < 0 || req->part < 0 || (req->nparts == 0 && req->part != 0) ||
      (req->nparts > 0 && req->part >= req->nparts)) {
    pm_error ("search: part %lld of %lld: expected 0 <= part < nparts", (long long) req->part,
              (long long) req->nparts);
    return -1;
  }
  if (strcmp (obj, "time") && strcmp (obj, "cost") && strcmp (obj, "tokens-per-s")) {
    pm_error ("search: objective '%s': expected time, cost or tokens-per-s", obj);
    return -1;
  }
  if (strcmp (obj, "cost") == 0 && !(req->price_per_gpu_hour > 0)) {
    pm_error ("search: the cost objective needs a price per GPU hour");
    return -1;
  }
  return 0;
}

int
search_run (struct plugin_set *set, const struct gpu_db *gpus,
            const struct perfmod_search_request *req, struct perfmod_search_result *res)
{
  struct search x;
  struct model_cfg m;
  bool have_model = false;
  int rc = SEARCH_BAD_REQUEST;
  int64_t jobs;
  size_t rs;
  double t0;

  /* sizes from an older header are read as far as they go; larger ones
   * than this library's are refused (it cannot know what they hold) */
  if (req->struct_size < offsetof (struct perfmod_search_request, progress_arg) + sizeof (void *) ||
      req->struct_size > sizeof *req || !RES_HAS (res, nbest) || res->struct_size > sizeof *res ||
      res->row_size < offsetof (struct perfmod_search_row, index) + sizeof (uint64_t) ||
      res->row_size > sizeof (struct perfmod_search_row)) {
    pm_error ("perfmod_search: set struct_size of the request and the result, and the result's "
              "row_size, to their sizeof (request %u, result %u, row %u; this library's %zu, "
              "%zu, %zu)", (unsigned) req->struct_size, (unsigned) res->struct_size,
              (unsigned) res->row_size, sizeof *req, sizeof *res,
              sizeof (struct perfmod_search_row));
    return SEARCH_BAD_REQUEST;
  }
  rs = res->row_size;
  memset ((char *) res + 2 * sizeof (uint32_t), 0, res->struct_size - 2 * sizeof (uint32_t));
  if (request_check (req) < 0)
    return SEARCH_BAD_REQUEST;
  memset (&x, 0, sizeof x);
  x.gpus = req->gpus;
  x.batch = req->global_batch;
  x.seq = req->seq;
  x.max_tp = req->max_tp;
  x.max_cp = req->max_cp;
  x.top = req->top ? (size_t) req->top : 10;
  x.tokens = req->tokens;
  x.price = req->price_per_gpu_hour;
  x.set = set;
  x.datadir = pm_datadir ();
  if ((x.ge = gpu_db_find (gpus, req->gpu ? req->gpu : DEFAULT_GPU)) == NULL) {
    pm_error ("--gpu '%s': no such GPU (see perfmod gpus)", req->gpu);
    goto out;
  }
  x.gpn = req->gpus_per_node ? (int) req->gpus_per_node : x.ge->gpu.gpus_per_node;
  if (x.gpn < 1)
    x.gpn = 1;
  if (req->precision) {
    if ((x.pr = precision_train (req->precision)) == NULL) {
      pm_error ("--precision '%s': expected fp32, amp-fp16, bf16, fp8 or fp8-cs",
                req->precision);
      goto out;
    }
    if (!gpu_has_units (&x.ge->gpu, x.pr->gemm)) {
      pm_error ("--precision %s: %s has no %s matrix units in gpus.d", req->precision,
                x.ge->name, dtype_name (x.pr->gemm));
      goto out;
    }
  }
  else
    x.pr = precision_of_dtype (default_dtype (&x.ge->gpu), true);
  if (model_cfg_open (&m, req->model) < 0)
    goto out;
  have_model = true;
  x.m = &m;
  if (x.seq == 0)
    x.seq = m.max_pos > 0 && m.max_pos < 2048 ? m.max_pos : 2048;
  x.flash = flash_supported (&x.ge->gpu, x.pr);
  x.kernels = default_kernels (&m, x.pr, true);
  if (fix_parse (&x, req->fix) < 0)
    goto out;
  if ((x.pred = predictor_find (set, req->predictor ? req->predictor : PM_DEFAULT_PREDICTOR)) == NULL)
    goto out;
  x.best = xcalloc (x.top, sizeof *x.best);
  t0 = pm_now ();
  enumerate (&x);
  if (x.nconfigs == 0) {
    /* impossible constraints: nothing reaches a prediction */
    pm_error ("search: no configuration of %s on %lld GPUs with global batch %lld is left "
              "to predict (%zu tried: %zu %s, %zu %s, %zu %s, %zu %s, %zu %s)", m.name,
              (long long) x.gpus, (long long) x.batch, x.tried,
              x.pruned[SEARCH_PRUNE_FIXED], prune_names[SEARCH_PRUNE_FIXED],
              x.pruned[SEARCH_PRUNE_TP], prune_names[SEARCH_PRUNE_TP],
              x.pruned[SEARCH_PRUNE_BATCH], prune_names[SEARCH_PRUNE_BATCH],
              x.pruned[SEARCH_PRUNE_INTERLEAVE], prune_names[SEARCH_PRUNE_INTERLEAVE],
              x.pruned[SEARCH_PRUNE_EP] + x.pruned[SEARCH_PRUNE_ZERO3_PP], "other");
    goto out;
  }
  if ((jobs = req->jobs) == 0) {
    long n = sysconf (_SC_NPROCESSORS_ONLN);
    jobs = n > 0 ? n : 1;
  }
  if (predict_all (&x, (int) jobs, (size_t) req->part, req->nparts ? (size_t) req->nparts : 1,
                   req) < 0) {
    rc = SEARCH_FAILED;
    goto out;
  }
  res->seconds = pm_now () - t0;
  res->model = xstrdup (m.name);
  res->gpu = xstrdup (x.ge->name);
  res->precision = xstrdup (x.pr->name);
  res->predictor = xstrdup (x.pred->p.name);
  res->objective = xstrdup (req->objective ? req->objective : "time");
  res->gpus = x.gpus;
  res->global_batch = x.batch;
  res->seq = x.seq;
  res->gpus_per_node = x.gpn;
  res->configurations = x.tried;
  res->predicted = x.predicted;
  for (int i = 0; i < SEARCH_NPRUNE; i++) {
    res->pruned[i].key = prune_keys[i];
    res->pruned[i].what = prune_names[i];
    res->pruned[i].n = x.pruned[i];
  }
  res->npruned = SEARCH_NPRUNE;
  res->best = xcalloc (x.nbest + 1, rs);
  for (size_t i = 0; i < x.nbest; i++) {
    const struct found *f = &x.best[i];
    struct perfmod_search_row r;
    memset (&r, 0, sizeof r);
    strategy_spec (&f->s, r.strategy, sizeof r.strategy);
    r.step_ms = f->step_ms;
    r.tokens_per_s = f->tokens_s;
    r.mfu = f->mfu;
    r.memory_gib = f->mem_gib;
    r.train_hours = f->train_h;
    r.cost_usd = f->cost;
    r.tp = f->s.tp;
    r.pp = f->s.pp;
    r.dp = f->s.dp;
    r.cp = f->s.cp;
    r.ep = f->s.ep;
    r.mbs = f->s.mbs;
    r.vp = f->s.vp;
    r.zero = f->s.zero;
    r.sp = f->s.sp;
    r.index = f->index;
    r.tpo = f->s.tpo;
    memcpy ((char *) res->best + i * rs, &r, rs < sizeof r ? rs : sizeof r);
  }
  res->nbest = x.nbest;
  rc = 0;
out:
  if (rc != 0)
    search_result_free (res);
  free (x.configs);
  free (x.best);
  if (have_model)
    model_cfg_free (&m);
  return rc;
}
