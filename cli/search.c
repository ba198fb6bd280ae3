/* search.c: perfmod search: every parallel configuration of a model on a cluster predicted, the impossible ones pruned with their reason, the best few printed. */
#include <config.h>

#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cblas.h>
#include <jansson.h>

#ifdef HAVE_MPI
#include <mpi.h>
#endif

#include "internal.h"

static void
search_usage (FILE *fp)
{
  fputs ("Usage: perfmod search --model NAME|config.json --gpus N[,N...] --global-batch B\n"
         "               [--gpu NAME] [--seq S] [--precision P] [--tokens T]\n"
         "               [--price-per-gpu-hour USD] [--predictor NAME] [--top N]\n"
         "               [--objective time|cost|tokens-per-s] [--format table|csv|json]\n"
         "               [--fix KEY=VALUE[,KEY=VALUE...]] [--max-tp N] [--max-cp N]\n"
         "               [--gpus-per-node N]\n"
         "               [--jobs N] [--plot FILE.svg]\n"
         "               [--plugin-path DIR]... [--plugin-opt NAME:KEY=VALUE]...\n"
         "Every tp, pp, dp, ep, micro-batch, interleaving (vp), ZeRO stage, recomputation and\n"
         "sequence parallelism of the model's training step on the GPUs, predicted; the\n"
         "configurations that cannot run are pruned and counted by reason; the best --top\n"
         "are printed with a --strategy string that reruns each one.  --plot draws the best\n"
         "one's time to train (step time without --tokens) against the GPUs: --gpus N searches\n"
         "N/4, N/2, N, 2N and 4N GPUs for it, --gpus N,M,... those counts (N: the table's).\n", fp);
}

struct sopts {
  const char *model, *gpu, *precision, *predictor, *format, *objective, *fix, *plot;
  int64_t *counts;       /* --gpus N,M,...: every count given (the first is gpus) */
  size_t ncounts;
  int64_t gpus, batch, seq, top, max_tp, max_cp, gpus_per_node, jobs;
  double tokens, price;
  char **paths, **popts;
  size_t npaths, npopts;
};

/* Why a configuration was not predicted (or not kept). */
enum prune {
  PRUNE_TP,              /* tp does not divide the heads, key/value heads or ffn width */
  PRUNE_EP,              /* ep does not divide the experts */
  PRUNE_BATCH,           /* batch not a multiple of dp x mbs, or > 2^20 of them */
  PRUNE_INTERLEAVE,      /* layers not a multiple of pp x vp, or micro-batches of pp */
  PRUNE_ZERO3_PP,        /* ZeRO-3 with pipeline stages: not modelled */
  PRUNE_MEMORY,          /* predicted not to fit */
  PRUNE_FIXED,           /* outside --fix or --max-tp */
  PRUNE_CP,              /* cp needs fused attention and 2 x cp equal chunks of the sequence */
  NPRUNE
};
static const char *const prune_keys[NPRUNE] = {   /* JSON */
  "tp", "ep", "batch", "interleave", "zero3_pp", "memory", "fixed", "cp",
};
static const char *const prune_names[NPRUNE] = {
  "tp does not divide heads/ffn", "ep does not divide the experts",
  "batch not a multiple of dp x mbs (or > 2^20 of them)", "layers or micro-batches vs pp x vp",
  "zero=3 with pp > 1 (not modelled)", "out of memory", "outside --fix/--max-tp",
  "cp: unfused attention or seq not 2cp chunks",
};

/* One predicted configuration. */
struct found {
  struct strategy s;
  size_t index;          /* in the enumeration: breaks ties, whatever the threads */
  double step_ms, tokens_s, mfu, mem_gb, train_h, cost;
  double score;          /* lower is better */
};

static bool
opt_num (const char *name, const char *arg, double min, double *out)
{
  if (!parse_double (arg, out) || !isfinite (*out) || *out < min) {
    pm_error ("--%s '%s': expected a number of at least %g", name, arg, min);
    return false;
  }
  return true;
}

/* --gpus N or N,M,...: every count at least 1, none twice; gpus the first. */
static bool
parse_counts (const char *arg, struct sopts *o)
{
  char **items = strv_split (arg, ',');
  bool ok = items[0] != NULL;
  free (o->counts);
  o->counts = NULL;
  o->ncounts = 0;
  for (char **it = items; ok && *it; it++) {
    int64_t n;
    if (!(ok = parse_int_range ("--gpus", *it, 1, 1 << 20, &n)))
      break;
    for (size_t i = 0; i < o->ncounts; i++)
      if (o->counts[i] == n) {
        pm_error ("--gpus '%s': %lld GPUs given twice", arg, (long long) n);
        ok = false;
      }
    o->counts = xrealloc (o->counts, (o->ncounts + 1) * sizeof *o->counts);
    o->counts[o->ncounts++] = n;
  }
  if (!ok && items[0] == NULL)
    pm_error ("--gpus '%s': expected a number of GPUs, or a list of them", arg);
  if (ok)
    o->gpus = o->counts[0];
  strv_free (items);
  return ok;
}

/* 0: go on; 1: --help; -1: bad usage (reported). */
static int
parse (int argc, char **argv, struct sopts *o)
{
  enum { S_MODEL = 256, S_GPU, S_GPUS, S_BATCH, S_SEQ, S_PREC, S_TOKENS, S_PRICE, S_PRED,
         S_TOP, S_OBJ, S_FORMAT, S_FIX, S_MAXTP, S_MAXCP, S_GPN, S_JOBS, S_PPATH, S_POPT,
         S_PLOT };
  static const struct option opts[] = {
    { "model", required_argument, NULL, S_MODEL }, { "gpu", required_argument, NULL, S_GPU },
    { "gpus", required_argument, NULL, S_GPUS },
    { "global-batch", required_argument, NULL, S_BATCH },
    { "seq", required_argument, NULL, S_SEQ }, { "precision", required_argument, NULL, S_PREC },
    { "tokens", required_argument, NULL, S_TOKENS },
    { "price-per-gpu-hour", required_argument, NULL, S_PRICE },
    { "predictor", required_argument, NULL, S_PRED }, { "top", required_argument, NULL, S_TOP },
    { "objective", required_argument, NULL, S_OBJ },
    { "format", required_argument, NULL, S_FORMAT }, { "fix", required_argument, NULL, S_FIX },
    { "max-tp", required_argument, NULL, S_MAXTP },
    { "max-cp", required_argument, NULL, S_MAXCP },
    { "gpus-per-node", required_argument, NULL, S_GPN },
    { "jobs", required_argument, NULL, S_JOBS },
    { "plugin-path", required_argument, NULL, S_PPATH },
    { "plugin-opt", required_argument, NULL, S_POPT },
    { "plot", required_argument, NULL, S_PLOT },
    { "verbose", no_argument, NULL, 'v' }, { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 }
  };
  int opt;
  optind = 1;
  opterr = 0;                    /* getopt_error says it in one line */
  while ((opt = getopt_long (argc, argv, ":hv", opts, NULL)) != -1) {
    bool ok = true;
    switch (opt) {
    case S_MODEL: o->model = optarg; break;
    case S_GPU: o->gpu = optarg; break;
    case S_GPUS: ok = parse_counts (optarg, o); break;
    case S_BATCH: ok = parse_int_range ("--global-batch", optarg, 1, (int64_t) 1 << 31, &o->batch); break;
    case S_SEQ: ok = parse_int_range ("--seq", optarg, 1, (int64_t) 1 << 31, &o->seq); break;
    case S_PREC: o->precision = optarg; break;
    case S_TOKENS: ok = opt_num ("tokens", optarg, 1, &o->tokens); break;
    case S_PRICE: ok = opt_num ("price-per-gpu-hour", optarg, 0, &o->price); break;
    case S_PRED: o->predictor = optarg; break;
    case S_TOP: ok = parse_int_range ("--top", optarg, 1, 1000, &o->top); break;
    case S_OBJ: o->objective = optarg; break;
    case S_FORMAT: o->format = optarg; break;
    case S_FIX: o->fix = optarg; break;
    case S_MAXTP: ok = parse_int_range ("--max-tp", optarg, 1, 1 << 20, &o->max_tp); break;
    case S_MAXCP: ok = parse_int_range ("--max-cp", optarg, 1, 1 << 20, &o->max_cp); break;
    case S_GPN: ok = parse_int_range ("--gpus-per-node", optarg, 1, 1 << 20, &o->gpus_per_node); break;
    case S_JOBS: ok = parse_int_range ("--jobs", optarg, 1, 1024, &o->jobs); break;
    case S_PPATH: ptrv_push (&o->paths, &o->npaths, optarg); break;
    case S_POPT: ptrv_push (&o->popts, &o->npopts, optarg); break;
    case S_PLOT: o->plot = optarg; break;
    case 'v': pm_verbose++; break;
    case 'h': search_usage (stdout); return 1;
    default: getopt_error (opt, argv, opts, "perfmod search"); return -1;
    }
    if (!ok)
      return -1;
  }
  if (optind < argc) {
    pm_error ("search: unexpected argument '%s'", argv[optind]);
    return -1;
  }
  if (o->model == NULL || o->gpus == 0 || o->batch == 0) {
    pm_error ("search needs --model, --gpus and --global-batch");
    return -1;
  }
  if (o->ncounts > 1 && o->plot == NULL) {
    pm_error ("--gpus %lld,...: a list of GPU counts is searched for --plot's chart; without "
              "it give one count", (long long) o->gpus);
    return -1;
  }
  if (strcmp (o->format, "table") && strcmp (o->format, "csv") && strcmp (o->format, "json")) {
    pm_error ("--format '%s': expected table, csv or json", o->format);
    return -1;
  }
  if (strcmp (o->objective, "time") && strcmp (o->objective, "cost") &&
      strcmp (o->objective, "tokens-per-s")) {
    pm_error ("--objective '%s': expected time, cost or tokens-per-s", o->objective);
    return -1;
  }
  if (strcmp (o->objective, "cost") == 0 && !(o->price > 0)) {
    pm_error ("--objective cost needs --price-per-gpu-hour");
    return -1;
  }
  return 0;
}

/* The re-runnable --strategy string of s. */
static void
strategy_string (const struct strategy *s, char *buf, size_t len)
{
  snprintf (buf, len, "tp=%d,pp=%d,dp=%d,cp=%d,ep=%d,mbs=%d,vp=%d,schedule=%s,zero=%d,recompute=%s,"
            "sp=%d,kernels=%s", s->tp, s->pp, s->dp, s->cp, s->ep, s->mbs, s->vp,
            schedule_name (s->schedule), s->zero, recompute_name (s->recompute), s->sp,
            kernels_name (s->kernels));
}

/* The search's state: the fixed inputs, the counters, the best so far. */
struct search {
  const struct sopts *o;
  const struct model_cfg *m;
  const struct gpu_entry *ge;
  const struct precision *pr;
  struct plugin_set *set;
  struct plugin *pred;
  struct strategy fixed;           /* the --fix values; `fixed_mask` says which count */
  unsigned fixed_mask;
  bool flash;
  enum pm_kernels kernels;
  int gpn;
  size_t tried, predicted, pruned[NPRUNE];
  struct strategy *configs;        /* enumerated and not pruned: to predict */
  size_t nconfigs;
  struct found *best;
  size_t nbest;
  bool progress;
  size_t done;                     /* predicted so far, all threads (progress line) */
  int finished;                    /* threads done */
};

/* One thread's share: every jobs-th configuration from `first`. */
struct worker {
  struct search *x;
  size_t first, step;
  struct dist_cache *cache;
  struct found *best;
  size_t nbest, predicted, oom;
  int rc;
  char err[512];
};

enum { FX_TP, FX_PP, FX_DP, FX_EP, FX_MBS, FX_VP, FX_ZERO, FX_RECOMPUTE, FX_SP, FX_SCHEDULE,
       FX_KERNELS, FX_CP };

/* Which keys --fix gives: parsed as a strategy, each key's presence
 * found by name. */
static int
fix_parse (struct search *x, const char *fix)
{
  static const char *const keys[] = { "tp", "pp", "dp", "ep", "mbs", "vp", "zero", "recompute",
                                      "sp", "schedule", "kernels", "cp" };
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
      pm_error ("--fix: %s cannot be fixed (fixable: tp, pp, dp, ep, mbs, vp, zero, recompute, "
                "sp, schedule, kernels)", *it);
      strv_free (items);
      return -1;
    }
    x->fixed_mask |= 1u << k;
  }
  strv_free (items);
  return strategy_parse (&x->fixed, fix, "--fix");
}

static bool
fixed_ok (const struct search *x, int key, int value)
{
  const struct strategy *f = &x->fixed;
  int want[] = { f->tp, f->pp, f->dp, f->ep, f->mbs, f->vp, f->zero, f->recompute, f->sp,
                 f->schedule, f->kernels, f->cp };
  return !(x->fixed_mask & 1u << key) || want[key] == value;
}

static double
now_s (void)
{
  struct timespec t;
  clock_gettime (CLOCK_MONOTONIC, &t);
  return (double) t.tv_sec + (double) t.tv_nsec / 1e9;
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

/* Count s, and keep it for prediction unless --fix or what is not
 * modelled prunes it. */
static void
consider (struct search *x, const struct strategy *s)
{
  x->tried++;
  if (!fixed_ok (x, FX_ZERO, s->zero) || !fixed_ok (x, FX_RECOMPUTE, s->recompute) ||
      !fixed_ok (x, FX_SP, s->sp) || !fixed_ok (x, FX_SCHEDULE, s->schedule)) {
    x->pruned[PRUNE_FIXED]++;
    return;
  }
  if (s->zero == 3 && s->pp > 1) {
    x->pruned[PRUNE_ZERO3_PP]++;
    return;
  }
  if ((x->nconfigs & (x->nconfigs - 1)) == 0)
    x->configs = xrealloc (x->configs, (x->nconfigs ? 2 * x->nconfigs : 1) * sizeof *x->configs);
  x->configs[x->nconfigs++] = *s;
}

/* Predict configuration i into the worker's best; -1 on a predictor
 * failure (w->err says why). */
static int
predict_one (struct worker *w, size_t i)
{
  struct search *x = w->x;
  const struct sopts *o = x->o;
  struct dist_options d;
  struct dist_result r;
  struct found f;
  double peak = perfmod_gpu_peak_flops (&x->ge->gpu, x->pr->gemm), tokens;
  int rc;

  memset (&d, 0, sizeof d);
  d.s = &x->configs[i];
  d.prec = x->pr;
  d.train = true;
  d.flash = x->flash;
  d.batch = o->batch;
  d.seq = o->seq;
  d.gpus_per_node = x->gpn;
  d.cache = w->cache;
  pm_error_capture (w->err, sizeof w->err);
  rc = dist_predict (x->set, x->pred, x->m, &x->ge->gpu, &d, &r);
  pm_error_capture (NULL, 0);
  if (rc < 0)
    return -1;
  w->predicted++;
  __atomic_fetch_add (&x->done, 1, __ATOMIC_RELAXED);
  if (r.mem.oom) {
    w->oom++;
    return 0;
  }
  tokens = (double) o->batch * (double) o->seq;
  memset (&f, 0, sizeof f);
  f.s = x->configs[i];
  f.index = i;
  f.step_ms = r.step_ms;
  f.tokens_s = tokens / (r.step_ms / 1e3);
  f.mfu = r.step_ms > 0 ? r.flops / (r.step_ms / 1e3) / peak : 0;
  f.mem_gb = r.mem.total / 1e9;
  f.train_h = o->tokens > 0 ? o->tokens / f.tokens_s / 3600 : 0;
  f.cost = f.train_h * (double) o->gpus * o->price;
  /* with a fixed GPU count every objective ranks by step time */
  f.score = r.step_ms;
  keep (w->best, &w->nbest, (size_t) o->top, &f);
  return 0;
}

static void *
work (void *arg)
{
  struct worker *w = arg;
  for (size_t i = w->first; i < w->x->nconfigs && w->rc == 0; i += w->step)
    if (predict_one (w, i) < 0)
      w->rc = -1;
  __atomic_fetch_add (&w->x->finished, 1, __ATOMIC_RELAXED);
  return NULL;
}

/* Predict this rank's share of the kept configurations (every size-th
 * from rank) on `jobs` threads, each with its own chunk cache, and merge
 * their best: the result is the same for any number of threads or ranks.
 * The share's first configuration is predicted alone first, so that the
 * predictor's lazily loaded parameters are loaded once. */
static int
predict_all (struct search *x, int jobs, int rank, int size)
{
  struct worker *w = xcalloc ((size_t) jobs, sizeof *w);
  pthread_t *th = xcalloc ((size_t) jobs, sizeof *th);
  size_t top = (size_t) x->o->top;
  bool *started = xcalloc ((size_t) jobs, sizeof *started);
  int rc = 0;

  for (int kc = 0; kc < 16; kc++)       /* the dtypes() answers asked before the threads */
    for (int dt = 0; dt < PERFMOD_DTYPE_COUNT; dt++)
      plugin_covers (x->pred, kc, dt);
  for (int j = 0; j < jobs; j++) {
    w[j].x = x;
    w[j].first = (size_t) rank + (size_t) size * (size_t) j;
    w[j].step = (size_t) jobs * (size_t) size;
    w[j].cache = dist_cache_new ();
    w[j].best = xcalloc (top, sizeof *w[j].best);
  }
  if ((size_t) rank < x->nconfigs && predict_one (&w[0], (size_t) rank) < 0)
    w[0].rc = -1;
  w[0].first += w[0].step;               /* its first is done */
  for (int j = 0; j < jobs && w[0].rc == 0; j++) {
    if (pthread_create (&th[j], NULL, work, &w[j]) == 0)
      started[j] = true;
    else
      work (&w[j]);                      /* a thread that could not start: here */
  }
  /* a progress line on a terminal while the threads run */
  while (x->progress && __atomic_load_n (&x->finished, __ATOMIC_RELAXED) < jobs) {
    struct timespec nap = { 0, 250000000 };
    nanosleep (&nap, NULL);
    fprintf (stderr, "\rperfmod search: %zu of %zu configurations predicted   ",
             __atomic_load_n (&x->done, __ATOMIC_RELAXED), x->nconfigs);
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
    x->pruned[PRUNE_MEMORY] += w[j].oom;
    for (size_t i = 0; i < w[j].nbest; i++)
      keep (x->best, &x->nbest, top, &w[j].best[i]);
    dist_cache_free (w[j].cache);
    free (w[j].best);
  }
  free (w);
  free (th);
  free (started);
  return rc;
}

/* One configuration counted and pruned before prediction. */
static void
prune (struct search *x, enum prune why)
{
  x->tried++;
  x->pruned[why]++;
}

/* Every configuration, in a fixed order (the result does not depend on
 * it: ties are broken by that order). */
static void
enumerate (struct search *x)
{
  const struct model_cfg *m = x->m;
  const struct sopts *o = x->o;
  int64_t gpus = o->gpus, max_tp = o->max_tp ? o->max_tp : x->gpn;
  int64_t max_cp = o->max_cp ? o->max_cp : 8;
  for (int tp = 1; tp <= gpus && tp <= max_tp; tp *= 2) {
    if (gpus % tp != 0)
      continue;
    if (!fixed_ok (x, FX_TP, tp)) {
      prune (x, PRUNE_FIXED);
      continue;
    }
    if (m->heads % tp || m->kv_heads % tp || m->ffn % tp) {
      prune (x, PRUNE_TP);
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
        prune (x, PRUNE_FIXED);
        continue;
      }
      /* Megatron's ring attention: fused attention, 2 x cp equal chunks */
      if (cp > 1 && (!x->flash || o->seq % (2 * cp) != 0)) {
        prune (x, PRUNE_CP);
        continue;
      }
      for (int64_t ep = 1; ep <= dp; ep++) {
        if (dp % ep != 0 || (ep > 1 && m->experts == 0))
          continue;
        if (!fixed_ok (x, FX_EP, (int) ep)) {
          prune (x, PRUNE_FIXED);
          continue;
        }
        if (ep > 1 && m->experts % ep != 0) {
          prune (x, PRUNE_EP);
          continue;
        }
        for (int mbs = 1; mbs <= 16; mbs *= 2) {
          int64_t micro;
          if (!fixed_ok (x, FX_MBS, mbs)) {
            prune (x, PRUNE_FIXED);
            continue;
          }
          if (o->batch % (dp * mbs) != 0) {
            prune (x, PRUNE_BATCH);
            continue;
          }
          micro = o->batch / (dp * mbs);
          if (micro > PM_MAX_MICROBATCHES) {   /* beyond what dist_check models */
            prune (x, PRUNE_BATCH);
            continue;
          }
          for (int64_t vp = 1; vp <= (pp > 1 ? m->layers / pp : 1); vp++) {
            if (!fixed_ok (x, FX_VP, (int) vp)) {
              prune (x, PRUNE_FIXED);
              continue;
            }
            /* Megatron: layers split evenly; interleaving needs the
             * micro-batches in whole rounds of pp */
            if (m->layers % (pp * vp) != 0 || (vp > 1 && micro % pp != 0)) {
              if (m->layers % pp == 0 || vp == 1)   /* each (pp, vp) counted once */
                prune (x, PRUNE_INTERLEAVE);
              continue;
            }
            for (int zero = 0; zero <= (dp > 1 ? 3 : 0); zero++)
              for (int rc = RECOMPUTE_NONE; rc <= RECOMPUTE_FULL; rc++)
                for (int sp = 0; sp <= (tp > 1 ? 1 : 0); sp++) {
                  struct strategy s;
                  strategy_init (&s);
                  s.tp = tp;
                  s.pp = (int) pp;
                  s.dp = (int) dp;
                  s.dp_set = true;
                  s.ep = (int) ep;
                  s.cp = cp;
                  s.mbs = mbs;
                  s.vp = (int) vp;
                  s.schedule = vp > 1 ? SCHED_INTERLEAVED : SCHED_1F1B;
                  s.zero = zero;
                  s.recompute = (enum pm_recompute) rc;
                  s.sp = sp;
                  s.kernels = (x->fixed_mask & 1u << FX_KERNELS) ? x->fixed.kernels : x->kernels;
                  s.kernels_set = true;
                  consider (x, &s);
                }
          }
        }
      }
    }
  }
}

#ifdef HAVE_MPI
/* Rank 0 gets every rank's predicted and out-of-memory counts and best
 * (as bytes: the ranks run the same program) and merges them; a failure
 * on any rank fails all.  -1 if MPI fails. */
static int
gather (struct search *x, int *rc, int rank, int size)
{
  unsigned long local[3] = { x->predicted, x->pruned[PRUNE_MEMORY], *rc != 0 }, sum[3];
  int nb = (int) (x->nbest * sizeof *x->best), *counts = NULL, *displs = NULL;
  struct found *all = NULL;
  size_t top = (size_t) x->o->top;
  if (MPI_Reduce (local, sum, 3, MPI_UNSIGNED_LONG, MPI_SUM, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
    return -1;
  if (rank == 0) {
    counts = xcalloc ((size_t) size, sizeof *counts);
    displs = xcalloc ((size_t) size, sizeof *displs);
  }
  if (MPI_Gather (&nb, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
    return -1;
  if (rank == 0) {
    int total = 0;
    for (int r = 0; r < size; r++) {
      displs[r] = total;
      total += counts[r];
    }
    all = xcalloc ((size_t) total + 1, 1);
  }
  if (MPI_Gatherv (x->best, nb, MPI_BYTE, all, counts, displs, MPI_BYTE, 0, MPI_COMM_WORLD)
      != MPI_SUCCESS)
    return -1;
  if (rank == 0) {
    size_t n = 0;
    x->predicted = sum[0];
    x->pruned[PRUNE_MEMORY] = sum[1];
    if (sum[2] && *rc == 0)
      *rc = EXIT_RUNTIME;
    x->nbest = 0;
    for (int r = 0; r < size; r++)
      n += (size_t) counts[r] / sizeof *all;
    for (size_t i = 0; i < n; i++)
      keep (x->best, &x->nbest, top, &all[i]);
  }
  free (counts);
  free (displs);
  free (all);
  return 0;
}
#endif

static void
report (const struct search *x, double seconds, FILE *out)
{
  const struct sopts *o = x->o;
  char str[256];
  size_t pruned = 0;
  bool csv = strcmp (o->format, "csv") == 0, json = strcmp (o->format, "json") == 0;
  for (int i = 0; i < NPRUNE; i++)
    pruned += x->pruned[i];
  if (json) {
    json_t *root = json_object (), *arr = json_array (), *pr = json_object ();
    json_object_set_new (root, "model", json_string (x->m->name));
    json_object_set_new (root, "gpu", json_string (x->ge->name));
    json_object_set_new (root, "gpus", json_integer (o->gpus));
    json_object_set_new (root, "global_batch", json_integer (o->batch));
    json_object_set_new (root, "seq", json_integer (o->seq));
    json_object_set_new (root, "precision", json_string (x->pr->name));
    json_object_set_new (root, "predictor", json_string (x->pred->p.name));
    json_object_set_new (root, "objective", json_string (o->objective));
    json_object_set_new (root, "configurations", json_integer ((json_int_t) x->tried));
    json_object_set_new (root, "predicted", json_integer ((json_int_t) x->predicted));
    for (int i = 0; i < NPRUNE; i++)
      json_object_set_new (pr, prune_keys[i], json_integer ((json_int_t) x->pruned[i]));
    json_object_set_new (root, "pruned", pr);
    json_object_set_new (root, "seconds", json_real (seconds));
    for (size_t i = 0; i < x->nbest; i++) {
      const struct found *f = &x->best[i];
      strategy_string (&f->s, str, sizeof str);
      json_array_append_new (arr, json_pack ("{s:I, s:s, s:f, s:f, s:f, s:f, s:f, s:f}",
                                             "rank", (json_int_t) i + 1, "strategy", str,
                                             "step_ms", f->step_ms, "tokens_per_s", f->tokens_s,
                                             "mfu", f->mfu, "memory_gb", f->mem_gb,
                                             "train_hours", f->train_h, "cost_usd", f->cost));
    }
    json_object_set_new (root, "best", arr);
    json_dumpf (root, out, JSON_INDENT (2) | JSON_REAL_PRECISION (10));
    fputc ('\n', out);
    json_decref (root);
    return;
  }
  if (csv) {
    fprintf (out, "rank,strategy,step_ms,tokens_per_s,mfu,memory_gb,train_hours,cost_usd\n");
    for (size_t i = 0; i < x->nbest; i++) {
      const struct found *f = &x->best[i];
      strategy_string (&f->s, str, sizeof str);
      fprintf (out, "%zu,\"%s\",%.9g,%.9g,%.6f,%.6g,%.6g,%.6g\n", i + 1, str, f->step_ms,
               f->tokens_s, f->mfu, f->mem_gb, f->train_h, f->cost);
    }
    return;
  }
  fprintf (out, "perfmod search: %s on %lld x %s, global batch %lld x seq %lld, %s, %s\n",
           x->m->name, (long long) o->gpus, x->ge->name, (long long) o->batch,
           (long long) o->seq, x->pr->name, x->pred->p.name);
  fprintf (out, "%zu configurations, %zu predicted, %zu pruned, in %.2f s (%.0f per second)\n",
           x->tried, x->predicted, pruned, seconds, seconds > 0 ? (double) x->tried / seconds : 0);
  for (int i = 0; i < NPRUNE; i++)
    if (x->pruned[i])
      fprintf (out, "  pruned: %-36s %zu\n", prune_names[i], x->pruned[i]);
  fprintf (out, "\n%4s %11s %12s %6s %8s %10s %10s  %s\n", "rank", "step_ms", "tokens/s", "mfu_%",
           "mem_GB", "train_h", "cost_$", "strategy");
  for (size_t i = 0; i < x->nbest; i++) {
    const struct found *f = &x->best[i];
    strategy_string (&f->s, str, sizeof str);
    fprintf (out, "%4zu %11.1f %12.0f %6.1f %8.1f %10.4g %10.4g  %s\n", i + 1, f->step_ms,
             f->tokens_s, 100 * f->mfu, f->mem_gb, f->train_h, f->cost, str);
  }
  if (x->nbest) {
    strategy_string (&x->best[0].s, str, sizeof str);
    fprintf (out, "\nrerun the best: perfmod --model %s --gpu %s --mode train --precision %s "
             "--batch %lld --seq %lld --nodes %lld --gpus-per-node %d --predictor %s "
             "--strategy %s --explain\n", o->model, x->ge->name, x->pr->name,
             (long long) o->batch, (long long) o->seq,
             (long long) ((o->gpus + x->gpn - 1) / x->gpn), x->gpn, x->pred->p.name, str);
  }
  else
    fprintf (out, "\nno configuration fits: every one was pruned (see the counts)\n");
}

/* ---- --plot: the best configuration per GPU count ---- */

/* The counts the chart searches, ascending: the list given, else N/4,
 * N/2, N, 2N and 4N (the whole ones). */
static size_t
chart_counts (const struct sopts *o, int64_t *out)
{
  size_t n = 0;
  if (o->ncounts > 1)
    for (size_t i = 0; i < o->ncounts && n < 64; i++)
      out[n++] = o->counts[i];
  else
    for (int k = -2; k <= 2; k++) {
      int64_t g = k < 0 ? (o->gpus % (1 << -k) == 0 ? o->gpus >> -k : 0) : o->gpus << k;
      if (g >= 1 && g <= 1 << 20)
        out[n++] = g;
    }
  for (size_t i = 1; i < n; i++)
    for (size_t j = i; j > 0 && out[j] < out[j - 1]; j--) {
      int64_t t = out[j];
      out[j] = out[j - 1];
      out[j - 1] = t;
    }
  return n;
}

/* The best configuration on `gpus` GPUs, searched as x is set up; *found
 * false when none fits.  0, or an exit status. */
static int
search_at (const struct search *x, int64_t gpus, int jobs, int rank, int size, struct found *best,
           bool *found)
{
  struct sopts oc = *x->o;
  struct search y;
  int rc;
  oc.gpus = gpus;
  oc.top = 1;
  memset (&y, 0, sizeof y);
  y.o = &oc;
  y.m = x->m;
  y.ge = x->ge;
  y.pr = x->pr;
  y.set = x->set;
  y.pred = x->pred;
  y.fixed = x->fixed;
  y.fixed_mask = x->fixed_mask;
  y.flash = x->flash;
  y.kernels = x->kernels;
  y.gpn = x->gpn;
  y.progress = x->progress;
  y.best = xcalloc (1, sizeof *y.best);
  enumerate (&y);
  rc = predict_all (&y, jobs, rank, size) < 0 ? EXIT_RUNTIME : 0;
  if (y.progress)
    fputs ("\r\033[K", stderr);
#ifdef HAVE_MPI
  if (size > 1 && gather (&y, &rc, rank, size) < 0)
    rc = EXIT_RUNTIME;
#endif
  *found = rc == 0 && y.nbest > 0;
  if (*found)
    *best = y.best[0];
  free (y.configs);
  free (y.best);
  return rc;
}

/* Search the chart's other counts and draw it (rank 0): the best per
 * count, and x's best at the requested count.  0, or an exit status. */
static int
scaling_chart (const struct search *x, int jobs, int rank, int size, FILE *out)
{
  const struct sopts *o = x->o;
  int64_t counts[64];
  size_t n = chart_counts (o, counts), np = 0;
  struct scaling_point *pts = xcalloc (n, sizeof *pts);
  struct scaling_point *top = xcalloc (x->nbest ? x->nbest : 1, sizeof *top);
  char *title = NULL, *ylabel = NULL;
  int rc = 0;

  for (size_t i = 0; i < n && rc == 0; i++) {
    struct found f;
    bool found;
    if (counts[i] == o->gpus) {
      found = x->nbest > 0;
      if (found)
        f = x->best[0];
    }
    else
      rc = search_at (x, counts[i], jobs, rank, size, &f, &found);
    if (rc != 0 || rank > 0)
      continue;
    if (!found) {
      fprintf (stderr, "perfmod search: --plot: no configuration fits on %lld GPUs: the chart "
               "leaves the count out\n", (long long) counts[i]);
      continue;
    }
    pts[np].gpus = counts[i];
    pts[np].value = o->tokens > 0 ? f.train_h : f.step_ms;
    strategy_string (&f.s, pts[np].label, sizeof pts[np].label);
    np++;
  }
  if (rc == 0 && rank == 0) {
    for (size_t i = 0; i < x->nbest; i++) {
      top[i].gpus = o->gpus;
      top[i].value = o->tokens > 0 ? x->best[i].train_h : x->best[i].step_ms;
      strategy_string (&x->best[i].s, top[i].label, sizeof top[i].label);
    }
    title = xasprintf ("%s on %s: global batch %lld x seq %lld, %s, predictor %s", x->m->name,
                       x->ge->name, (long long) o->batch, (long long) o->seq, x->pr->name,
                       x->pred->p.name);
    ylabel = o->tokens > 0 ? xasprintf ("time to train %.4g tokens (hours)", o->tokens)
             : xstrdup ("step time (ms)");
    if (scaling_plot_write (o->plot, title, ylabel, pts, np, top, x->nbest) < 0)
      rc = EXIT_RUNTIME;
    else if (strcmp (o->format, "table") == 0) {
      fprintf (out, "\nscaling chart %s: the best on", o->plot);
      for (size_t i = 0; i < np; i++)
        fprintf (out, "%s %lld", i ? "," : "", (long long) pts[i].gpus);
      fprintf (out, " GPUs\n");
    }
  }
  free (pts);
  free (top);
  free (title);
  free (ylabel);
  return rc;
}

int
search_main (int argc, char **argv)
{
  struct sopts o;
  struct search x;
  struct gpu_db gpus = { NULL, 0 };
  struct plugin_set set = { NULL, 0 };
  struct model_cfg m;
  bool have_model = false;
  int p, rc = EXIT_USAGE, mpi_rank = 0, mpi_size = 1;
  double t0;
#ifdef HAVE_MPI
  /* launched by mpirun: every rank enumerates the same space and predicts
   * its share; rank 0 gathers the best and reports */
  bool mpi = getenv ("OMPI_COMM_WORLD_SIZE") != NULL;
  if (mpi) {
    MPI_Init (NULL, NULL);
    MPI_Comm_rank (MPI_COMM_WORLD, &mpi_rank);
    MPI_Comm_size (MPI_COMM_WORLD, &mpi_size);
  }
#endif

  memset (&o, 0, sizeof o);
  memset (&x, 0, sizeof x);
  o.format = "table";
  o.objective = "time";
  o.top = 10;
  o.seq = 0;
  if ((p = parse (argc, argv, &o)) != 0) {
    free (o.paths);
    free (o.popts);
    free (o.counts);
    return p < 0 ? EXIT_USAGE : 0;
  }
  x.o = &o;
  /* the chart's file can be written, before the long part (every rank
   * asks, so that all stop alike; rank 0 keeps its reservation) */
  if (o.plot) {
    if (atomic_reserve (o.plot) < 0) {
      o.plot = NULL;
      rc = EXIT_RUNTIME;
      goto out;
    }
    if (mpi_rank > 0)
      atomic_release (o.plot);
  }
  if (gpu_db_load_data (&gpus) < 0)
    goto out;
  if ((x.ge = gpu_db_find (&gpus, o.gpu ? o.gpu : DEFAULT_GPU)) == NULL) {
    pm_error ("--gpu '%s': no such GPU (see perfmod gpus)", o.gpu);
    goto out;
  }
  x.gpn = o.gpus_per_node ? (int) o.gpus_per_node : x.ge->gpu.gpus_per_node;
  if (x.gpn < 1)
    x.gpn = 1;
  if (o.precision) {
    if ((x.pr = precision_train (o.precision)) == NULL) {
      pm_error ("--precision '%s': expected fp32, amp-fp16, bf16 or fp8", o.precision);
      goto out;
    }
    if (x.pr->gemm != PERFMOD_DTYPE_FP32 && !(x.ge->gpu.tensor_tflops[x.pr->gemm] > 0)) {
      pm_error ("--precision %s: %s has no %s matrix units in gpus.d", o.precision, x.ge->name,
                dtype_name (x.pr->gemm));
      goto out;
    }
  }
  else
    x.pr = precision_of_dtype (default_dtype (&x.ge->gpu), true);
  if (model_cfg_open (&m, o.model) < 0)
    goto out;
  have_model = true;
  x.m = &m;
  if (o.seq == 0)
    o.seq = m.max_pos > 0 && m.max_pos < 2048 ? m.max_pos : 2048;
  x.flash = flash_supported (&x.ge->gpu, x.pr);
  x.kernels = default_kernels (&m, x.pr, true);
  if (fix_parse (&x, o.fix) < 0)
    goto out;
  if (plugins_open (&set, o.paths, o.npaths, o.popts, o.npopts) < 0)
    goto out;
  x.set = &set;
  if ((x.pred = predictor_find (&set, o.predictor ? o.predictor : "roofline")) == NULL)
    goto out;
  x.best = xcalloc ((size_t) o.top, sizeof *x.best);
  x.progress = isatty (STDERR_FILENO) != 0;
  /* the threads are the search's: OpenBLAS's own would only contend (a
   * network evaluates one row at a time) */
  openblas_set_num_threads (1);
  t0 = now_s ();
  enumerate (&x);
  if (o.jobs == 0) {
    long n = sysconf (_SC_NPROCESSORS_ONLN);
    o.jobs = n > 0 ? n : 1;
  }
  rc = predict_all (&x, (int) o.jobs, mpi_rank, mpi_size) < 0 ? EXIT_RUNTIME : 0;
  if (x.progress)
    fputs ("\r\033[K", stderr);
#ifdef HAVE_MPI
  if (mpi_size > 1 && gather (&x, &rc, mpi_rank, mpi_size) < 0)
    rc = EXIT_RUNTIME;
#endif
  if (rc == 0 && mpi_rank == 0) {   /* rank 0 reports */
    if (x.nconfigs == 0) {
      /* impossible constraints: nothing reached a prediction */
      pm_error ("search: no configuration of %s on %lld GPUs with global batch %lld is left "
                "to predict (%zu tried: %zu %s, %zu %s, %zu %s, %zu %s, %zu %s)", m.name,
                (long long) o.gpus, (long long) o.batch, x.tried,
                x.pruned[PRUNE_FIXED], prune_names[PRUNE_FIXED], x.pruned[PRUNE_TP],
                prune_names[PRUNE_TP], x.pruned[PRUNE_BATCH], prune_names[PRUNE_BATCH],
                x.pruned[PRUNE_INTERLEAVE], prune_names[PRUNE_INTERLEAVE],
                x.pruned[PRUNE_EP] + x.pruned[PRUNE_ZERO3_PP], "other");
      rc = EXIT_USAGE;
    }
    else
      report (&x, now_s () - t0, stdout);
  }
  /* every rank searches the chart's counts; rank 0 draws it */
  if (rc == 0 && o.plot && x.nconfigs > 0)
    rc = scaling_chart (&x, (int) o.jobs, mpi_rank, mpi_size, stdout);
  if (mpi_rank == 0)
    plugins_note_fallbacks (&set, stderr);
out:
  if (o.plot && rc != 0 && mpi_rank == 0)
    atomic_release (o.plot);
  free (o.counts);
  free (x.configs);
  free (x.best);
  if (have_model)
    model_cfg_free (&m);
  plugins_unload (&set);
  gpu_db_free (&gpus);
  free (o.paths);
  free (o.popts);
#ifdef HAVE_MPI
  if (mpi)
    MPI_Finalize ();
#endif
  return rc;
}
