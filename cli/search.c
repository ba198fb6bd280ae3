/* search.c: perfmod search: the options, the MPI ranks' shares gathered, the progress line and the report of the library's search (core/parallel/search.c, perfmod_search): every parallel configuration of a model on a cluster predicted, the impossible ones pruned with their reason, the best few printed. */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cblas.h>
#include <jansson.h>

#ifdef HAVE_MPI
#include <mpi.h>
#endif

#include "perfmod.h"
#include "cli.h"

static void
search_usage (FILE *fp)
{
  fputs ("Usage: perfmod search --model NAME|config.json --gpus N[,N...] --global-batch B\n"
         "               [--gpu NAME[,NAME...]] [--seq S] [--precision P] [--tokens T]\n"
         "               [--price-per-gpu-hour USD[,USD...]] [--predictor NAME] [--top N]\n"
         "               [--objective time|cost|tokens-per-s] [--format table|csv|json]\n"
         "               [--fix KEY=VALUE[,KEY=VALUE...]] [--max-tp N] [--max-cp N]\n"
         "               [--gpus-per-node N]\n"
         "               [--jobs N] [--plot FILE.svg] [--html FILE.html] [--print megatron|nemo]\n"
         "               [--calibration FILE]\n"
         "       perfmod search --serve ...: serving deployments (search --serve --help)\n"
         "               [--plugin-path DIR]... [--plugin-opt NAME:KEY=VALUE]...\n"
         "Every tp, pp, cp, dp, ep, micro-batch, schedule (1F1B, GPipe, interleaved with vp),\n"
         "uneven layer split, ZeRO stage, recomputation, sequence parallelism and tp\n"
         "communication overlap (tpo), and for MoE models expert tp (etp=1), token dispatcher\n"
         "and expert-parallel overlaps, of the model's training step on the GPUs, predicted; the\n"
         "configurations that cannot run are pruned and counted by reason; the best --top\n"
         "are printed with a --strategy string that reruns each one.  --plot draws the best\n"
         "one's time to train (step time without --tokens) against the GPUs: --gpus N searches\n"
         "N/4, N/2, N, 2N and 4N GPUs for it, --gpus N,M,... those counts (N: the table's).\n"
         "--print megatron|nemo prints the best one as Megatron-LM's arguments or as\n"
         "Megatron-Bridge (NeMo) recipe overrides instead of the table.\n", fp);
}

struct sopts {
  const char *model, *gpu, *precision, *predictor, *format, *objective, *fix, *plot;
  const char *print;     /* --print megatron|nemo: the best layout's arguments instead */
  const char *html;      /* --html FILE: the answer as one page */
  const char *calibration; /* --calibration FILE: perfmod calibrate's corrections */
  int64_t *counts;       /* --gpus N,M,...: every count given (the first is gpus) */
  size_t ncounts;
  int64_t gpus, batch, seq, top, max_tp, max_cp, gpus_per_node, jobs;
  double tokens, price;
  double *prices;        /* --price-per-gpu-hour A,B,...: one per GPU of a --gpu list */
  size_t nprices;
  char **paths, **popts;
  size_t npaths, npopts;
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
         S_PLOT, S_PRINT, S_HTML, S_CALIB };
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
    { "print", required_argument, NULL, S_PRINT },
    { "html", required_argument, NULL, S_HTML },
    { "calibration", required_argument, NULL, S_CALIB },
    { "verbose", no_argument, NULL, 'v' }, { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 }
  };
  int opt;
  optind = 1;
  opterr = 0;                    /* getopt_error says it in one line */
  while ((opt = pm_getopt_long (argc, argv, ":hv", opts)) != -1) {
    bool ok = true;
    switch (opt) {
    case S_MODEL: o->model = optarg; break;
    case S_GPU: o->gpu = optarg; break;
    case S_GPUS: ok = parse_counts (optarg, o); break;
    case S_BATCH: ok = parse_int_range ("--global-batch", optarg, 1, (int64_t) 1 << 31, &o->batch); break;
    case S_SEQ: ok = parse_int_range ("--seq", optarg, 1, (int64_t) 1 << 31, &o->seq); break;
    case S_PREC: o->precision = optarg; break;
    case S_TOKENS: ok = opt_num ("tokens", optarg, 1, &o->tokens); break;
    case S_PRICE: {                      /* one price, or one per GPU of a --gpu list */
      char **items = strv_split (optarg, ',');
      free (o->prices);
      o->nprices = strv_len (items);
      o->prices = xcalloc (o->nprices ? o->nprices : 1, sizeof *o->prices);
      for (size_t i = 0; ok && i < o->nprices; i++)
        ok = opt_num ("price-per-gpu-hour", items[i], 0, &o->prices[i]);
      o->price = o->nprices ? o->prices[0] : 0;
      strv_free (items);
      break;
    }
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
    case S_HTML: o->html = optarg; break;
    case S_CALIB: o->calibration = optarg; break;
    case S_PRINT:
      if ((ok = strcmp (optarg, "megatron") == 0 || strcmp (optarg, "nemo") == 0))
        o->print = optarg;
      else
        pm_error ("--print '%s': expected megatron or nemo", optarg);
      break;
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
  size_t ngpu = 1;
  for (const char *c = o->gpu; c && *c; c++)
    ngpu += *c == ',';
  if (o->nprices > 1 && o->nprices != ngpu) {
    pm_error ("--price-per-gpu-hour: %zu prices for %zu GPUs (one, or one per --gpu)",
              o->nprices, ngpu);
    return -1;
  }
  if (ngpu > 1 && strcmp (o->objective, "cost") == 0 && !(o->tokens > 0)) {
    pm_error ("--objective cost over a --gpu list needs --tokens (the cost to train them; "
              "without, every layout costs nothing)");
    return -1;
  }
  if (ngpu > 1 && (o->plot || o->print || o->html)) {
    pm_error ("--gpu %s: a list ranks the GPUs' best layouts in one table; %s takes one GPU",
              o->gpu, o->plot ? "--plot" : o->print ? "--print" : "--html");
    return -1;
  }
  if (o->html && o->print) {
    pm_error ("--html with --print: the page holds the table; --print prints arguments instead");
    return -1;
  }
  return 0;
}

#ifdef HAVE_MPI
/* Rank 0 gets every rank's predicted and out-of-memory counts and best
 * (as bytes: the ranks run the same program) and merges them; a failure
 * on any rank fails all.  -1 if MPI fails. */
static int
gather (struct perfmod_search_result *res, size_t top, int *rc, int rank, int size)
{
  unsigned long local[3] = { res->predicted, res->pruned[PERFMOD_PRUNE_MEMORY].n, *rc != 0 };
  unsigned long sum[3];
  int nb = (int) (res->nbest * res->row_size), *counts = NULL, *displs = NULL;
  char *all = NULL;
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
  if (MPI_Gatherv (res->best, nb, MPI_BYTE, all, counts, displs, MPI_BYTE, 0, MPI_COMM_WORLD)
      != MPI_SUCCESS)
    return -1;
  if (rank == 0) {
    size_t n = 0;
    res->predicted = sum[0];
    res->pruned[PERFMOD_PRUNE_MEMORY].n = sum[1];
    if (sum[2] && *rc == 0)
      *rc = EXIT_RUNTIME;
    for (int r = 0; r < size; r++)
      n += (size_t) counts[r] / res->row_size;
    /* rank 0's own rows are among all: merge into an empty best */
    res->nbest = 0;
    if (*rc == 0 && search_merge (res, (const struct perfmod_search_row *) all, n, top) < 0)
      *rc = EXIT_RUNTIME;
  }
  free (counts);
  free (displs);
  free (all);
  return 0;
}
#endif

/* A row's time to train and cost exist where --tokens (and a price) were
 * given: null in JSON, an empty CSV cell, '-' in the table otherwise. */
static bool
hours_given (const struct sopts *o)
{
  return o->tokens > 0;
}

static bool
cost_given (const struct sopts *o)
{
  return o->tokens > 0 && o->price > 0;
}

/* One best row, as JSON (gpu NULL: a single GPU's search). */
static json_t *
row_json (const struct sopts *o, const struct perfmod_search_row *f, size_t rank, const char *gpu)
{
  struct strategy s;                    /* the row's spec as predict's strategy object */
  strategy_init (&s);
  json_t *st = strategy_parse (&s, f->strategy, "search") == 0 ? json_strategy (&s, true)
                                                              : json_pack ("{s:s}", "spec", f->strategy);
  json_t *r = json_pack ("{s:I, s:o, s:f, s:f, s:f, s:{s:f}}", "rank", (json_int_t) rank,
                         "strategy", st, "step_ms", f->step_ms, "tokens_per_s", f->tokens_per_s,
                         "mfu", f->mfu, "memory_gib", "total", f->memory_gib);
  if (gpu)
    json_object_set_new (r, "gpu", json_string (gpu));
  json_object_set_new (r, "train_hours", hours_given (o) ? json_real (f->train_hours) : json_null ());
  json_object_set_new (r, "cost_usd", cost_given (o) ? json_real (f->cost_usd) : json_null ());
  return r;
}

/* One best row of the CSV (gpu NULL: no gpu column). */
static void
row_csv (const struct sopts *o, const struct perfmod_search_row *f, size_t rank, const char *gpu,
         FILE *out)
{
  fprintf (out, "%zu,", rank);
  if (gpu)
    fprintf (out, "%s,", gpu);
  fprintf (out, "\"%s\",%.9g,%.9g,%.6f,%.6g,", f->strategy, f->step_ms, f->tokens_per_s, f->mfu,
           f->memory_gib);
  if (hours_given (o))
    fprintf (out, "%.6g", f->train_hours);
  fputc (',', out);
  if (cost_given (o))
    fprintf (out, "%.2f", f->cost_usd);
  fputc ('\n', out);
}

/* One best row of the table (gpu NULL: no gpu column). */
static void
row_table (const struct sopts *o, const struct perfmod_search_row *f, size_t rank,
           const char *gpu, FILE *out)
{
  char hours[24] = "-", cost[24] = "-";
  if (hours_given (o))
    snprintf (hours, sizeof hours, "%.1f", f->train_hours);
  if (cost_given (o) && f->cost_usd >= 1000)   /* 7934727, not 7.935e+06 */
    snprintf (cost, sizeof cost, "%.0f", f->cost_usd);
  else if (cost_given (o))
    snprintf (cost, sizeof cost, "%.2f", f->cost_usd);
  fprintf (out, "%4zu ", rank);
  if (gpu)
    fprintf (out, "%-24s ", gpu);
  fprintf (out, "%11.1f %12.0f %6.1f %8.1f %10s %10s  %s\n", f->step_ms, f->tokens_per_s,
           100 * f->mfu, f->memory_gib, hours, cost, f->strategy);
}

static void
report (const struct sopts *o, const struct perfmod_search_result *res, double seconds, FILE *out)
{
  size_t pruned = 0;
  bool csv = strcmp (o->format, "csv") == 0, json = strcmp (o->format, "json") == 0;
  for (int i = 0; i < res->npruned; i++)
    pruned += res->pruned[i].n;
  if (json) {
    json_t *root = json_envelope ("search"), *arr = json_array (), *pr = json_object ();
    json_object_set_new (root, "model", json_string (res->model));
    json_object_set_new (root, "gpu", json_string (res->gpu));
    json_object_set_new (root, "gpus", json_integer (res->gpus));
    json_object_set_new (root, "global_batch", json_integer (res->global_batch));
    json_object_set_new (root, "seq", json_integer (res->seq));
    json_object_set_new (root, "precision", json_string (res->precision));
    json_object_set_new (root, "predictor", json_string (res->predictor));
    json_object_set_new (root, "objective", json_string (res->objective));
    json_object_set_new (root, "configurations", json_integer ((json_int_t) res->configurations));
    json_object_set_new (root, "predicted", json_integer ((json_int_t) res->predicted));
    for (int i = 0; i < res->npruned; i++)
      json_object_set_new (pr, res->pruned[i].key, json_integer ((json_int_t) res->pruned[i].n));
    json_object_set_new (root, "pruned", pr);
    json_object_set_new (root, "seconds", json_real (seconds));
    for (size_t i = 0; i < res->nbest; i++)
      json_array_append_new (arr, row_json (o, &res->best[i], i + 1, NULL));
    json_object_set_new (root, "best", arr);
    json_print (root, out);
    return;
  }
  if (csv) {
    fprintf (out, "rank,strategy,step_ms,tokens_per_s,mfu,memory_gib,train_hours,cost_usd\n");
    for (size_t i = 0; i < res->nbest; i++)
      row_csv (o, &res->best[i], i + 1, NULL, out);
    return;
  }
  fprintf (out, "perfmod search: %s on %lld x %s, global batch %lld x seq %lld, %s, %s\n",
           res->model, (long long) res->gpus, res->gpu, (long long) res->global_batch,
           (long long) res->seq, res->precision, res->predictor);
  fprintf (out, "%llu configurations, %llu predicted, %zu pruned, in %.2f s (%.0f per second)\n",
           (unsigned long long) res->configurations, (unsigned long long) res->predicted, pruned,
           seconds, seconds > 0 ? (double) res->configurations / seconds : 0);
  for (int i = 0; i < res->npruned; i++)
    if (res->pruned[i].n)
      fprintf (out, "  pruned: %-36s %llu\n", res->pruned[i].what,
               (unsigned long long) res->pruned[i].n);
  fprintf (out, "\n%4s %11s %12s %6s %8s %10s %10s  %s\n", "rank", "step_ms", "tokens/s", "mfu_%",
           "mem_GiB", "train_h", "cost_$", "strategy");
  for (size_t i = 0; i < res->nbest; i++)
    row_table (o, &res->best[i], i + 1, NULL, out);
  if (res->nbest)
    fprintf (out, "\nrerun the best: perfmod --model %s --gpu %s --mode train --precision %s "
             "--batch %lld --seq %lld --nodes %lld --gpus-per-node %lld --predictor %s "
             "--strategy %s --explain\n", o->model, res->gpu, res->precision,
             (long long) res->global_batch, (long long) res->seq,
             (long long) ((res->gpus + res->gpus_per_node - 1) / res->gpus_per_node),
             (long long) res->gpus_per_node, res->predictor, res->best[0].strategy);
  else
    fprintf (out, "\nno configuration fits: every one was pruned (see the counts)\n");
}

/* --html FILE: the JSON answer, and --plot's chart where one was drawn, as one page. */
static int
search_html (const struct sopts *o, const struct perfmod_search_result *res, double seconds)
{
  struct sopts j = *o;
  char *json = NULL, *svg = NULL, *title;
  size_t jlen = 0, slen = 0;
  FILE *mem = open_memstream (&json, &jlen);
  int rc = 0;
  if (mem == NULL) {
    pm_error ("--html %s: cannot hold the answer: %s", o->html, strerror (errno));
    return EXIT_RUNTIME;
  }
  j.format = "json";
  report (&j, res, seconds, mem);
  fclose (mem);
  if (o->plot && res->configurations > 0 && slurp (o->plot, &svg, &slen) < 0)
    rc = EXIT_RUNTIME;
  title = xasprintf ("%s on %lld x %s, global batch %lld x seq %lld: the best layouts",
                     res->model, (long long) res->gpus, res->gpu, (long long) res->global_batch,
                     (long long) res->seq);
  if (rc == 0 && html_page_write (o->html, title, json, jlen, svg, slen) < 0)
    rc = EXIT_RUNTIME;
  free (title);
  free (json);
  free (svg);
  return rc;
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

/* The best configuration on `gpus` GPUs, the request otherwise as given;
 * *found false when none fits.  0, or an exit status. */
static int
search_at (struct plugin_set *set, const struct gpu_db *gpus_db,
           const struct perfmod_search_request *req, int64_t gpus, int rank, int size,
           struct perfmod_search_row *best, bool *found)
{
  struct perfmod_search_request r = *req;
  struct perfmod_search_result res;
  int rc;
  memset (&res, 0, sizeof res);
  res.struct_size = sizeof res;
  res.row_size = sizeof (struct perfmod_search_row);
  r.gpus = gpus;
  r.top = 1;
  rc = search_run (set, gpus_db, &r, &res) == 0 ? 0 : EXIT_RUNTIME;
  if (r.progress)
    fputs ("\r\033[K", stderr);
#ifdef HAVE_MPI
  if (size > 1 && gather (&res, 1, &rc, rank, size) < 0)
    rc = EXIT_RUNTIME;
#else
  (void) rank;
  (void) size;
#endif
  *found = rc == 0 && res.nbest > 0;
  if (*found)
    *best = res.best[0];
  search_result_free (&res);
  return rc;
}

/* Search the chart's other counts and draw it (rank 0): the best per
 * count, and res's best at the requested count.  0, or an exit status. */
static int
scaling_chart (struct plugin_set *set, const struct gpu_db *gpus_db,
               const struct perfmod_search_request *req, const struct sopts *o,
               const struct perfmod_search_result *res, int rank, int size, FILE *out)
{
  int64_t counts[64];
  size_t n = chart_counts (o, counts), np = 0;
  struct scaling_point *pts = xcalloc (n, sizeof *pts);
  struct scaling_point *top = xcalloc (res->nbest ? res->nbest : 1, sizeof *top);
  char *title = NULL, *ylabel = NULL;
  int rc = 0;

  for (size_t i = 0; i < n && rc == 0; i++) {
    struct perfmod_search_row f;
    bool found;
    if (counts[i] == o->gpus) {
      found = res->nbest > 0;
      if (found)
        f = res->best[0];
    }
    else
      rc = search_at (set, gpus_db, req, counts[i], rank, size, &f, &found);
    if (rc != 0 || rank > 0)
      continue;
    if (!found) {
      fprintf (stderr, "perfmod search: --plot: no configuration fits on %lld GPUs: the chart "
               "leaves the count out\n", (long long) counts[i]);
      continue;
    }
    pts[np].gpus = counts[i];
    pts[np].value = o->tokens > 0 ? f.train_hours : f.step_ms;
    snprintf (pts[np].label, sizeof pts[np].label, "%s", f.strategy);
    np++;
  }
  if (rc == 0 && rank == 0) {
    for (size_t i = 0; i < res->nbest; i++) {
      top[i].gpus = o->gpus;
      top[i].value = o->tokens > 0 ? res->best[i].train_hours : res->best[i].step_ms;
      snprintf (top[i].label, sizeof top[i].label, "%s", res->best[i].strategy);
    }
    title = xasprintf ("%s on %s: global batch %lld x seq %lld, %s, predictor %s", res->model,
                       res->gpu, (long long) res->global_batch, (long long) res->seq,
                       res->precision, res->predictor);
    ylabel = o->tokens > 0 ? xasprintf ("time to train %.4g tokens (hours)", o->tokens)
             : xstrdup ("step time (ms)");
    if (scaling_plot_write (o->plot, title, ylabel, pts, np, top, res->nbest) < 0)
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

/* The progress line on a terminal while the threads predict. */
static void
progress (void *arg, uint64_t done, uint64_t total)
{
  (void) arg;
  fprintf (stderr, "\rperfmod search: %llu of %llu configurations predicted   ",
           (unsigned long long) done, (unsigned long long) total);
}

/* --print: the best layout as Megatron-LM's arguments or Megatron-Bridge's
 * overrides (core/parallel/launch.c), dp's overlap as the dp plugin runs it. */
static int
print_launch (const struct sopts *o, const struct perfmod_search_result *res)
{
  struct strategy s;
  struct model_cfg m;
  const struct precision *pr = precision_train (res->precision);
  bool overlap;
  char args[4096];
  int rc = EXIT_USAGE;
  if (res->nbest == 0) {
    pm_error ("--print %s: no layout fits, nothing to print", o->print);
    return EXIT_RUNTIME;
  }
  strategy_init (&s);
  if (pr == NULL || strategy_parse (&s, res->best[0].strategy, "search") < 0 ||
      model_cfg_open (&m, o->model) < 0)
    return EXIT_RUNTIME;
  overlap = dp_overlaps (o->popts, o->npopts, &s);
  if (launch_args (strcmp (o->print, "nemo") == 0 ? LAUNCH_NEMO : LAUNCH_MEGATRON, &s, &m, pr,
                   res->global_batch, res->seq, overlap, args, sizeof args) == 0) {
    puts (args);
    rc = 0;
  }
  model_cfg_free (&m);
  return rc;
}

/* One GPU's best rows of a --gpu list. */
struct gpu_row {
  const char *gpu;                       /* as gpus.d names it (the result's) */
  struct perfmod_search_row row;
  size_t order;                          /* GPU by GPU, each one's rank: ties keep it */
};

static const char *cmp_objective;       /* qsort has no context argument */

static int
cmp_rows (const void *pa, const void *pb)
{
  const struct perfmod_search_row *a = &((const struct gpu_row *) pa)->row;
  const struct perfmod_search_row *b = &((const struct gpu_row *) pb)->row;
  double x = a->step_ms, y = b->step_ms;
  if (strcmp (cmp_objective, "cost") == 0)
    x = a->cost_usd, y = b->cost_usd;
  else if (strcmp (cmp_objective, "tokens-per-s") == 0)
    x = -a->tokens_per_s, y = -b->tokens_per_s;
  if (x != y)
    return x < y ? -1 : 1;
  size_t oa = ((const struct gpu_row *) pa)->order, ob = ((const struct gpu_row *) pb)->order;
  return (oa > ob) - (oa < ob);
}

/* perfmod search --gpu A,B,...: each GPU searched in turn (its own price
 * where a list gives one), their best layouts ranked together by the
 * objective.  Nothing is printed unless every GPU was searched. */
static int
search_gpus (const struct sopts *o, struct plugin_set *set, const struct gpu_db *gpus,
             struct perfmod_search_request *req)
{
  char **names = strv_split (o->gpu, ',');
  size_t n = strv_len (names), nrows = 0;
  struct perfmod_search_result *res = xcalloc (n, sizeof *res);
  struct gpu_row *rows = NULL;
  bool csv = strcmp (o->format, "csv") == 0, json = strcmp (o->format, "json") == 0;
  int rc = 0;

  for (size_t i = 0; i < n && rc == 0; i++) {
    int p;
    if (names[i][0] == '\0') {
      pm_error ("--gpu %s: an empty name in the list", o->gpu);
      rc = EXIT_USAGE;
      break;
    }
    res[i].struct_size = sizeof res[i];
    res[i].row_size = sizeof (struct perfmod_search_row);
    req->gpu = names[i];
    req->price_per_gpu_hour = o->nprices > 1 ? o->prices[i] : o->price;
    p = search_run (set, gpus, req, &res[i]);
    if (p != 0)
      rc = p == SEARCH_BAD_REQUEST ? EXIT_USAGE : EXIT_RUNTIME;
    else {
      rows = xrealloc (rows, (nrows + res[i].nbest) * sizeof *rows);
      for (size_t k = 0; k < res[i].nbest; k++) {
        rows[nrows].gpu = res[i].gpu;
        rows[nrows].order = nrows;
        rows[nrows++].row = res[i].best[k];
      }
    }
  }
  if (req->progress)
    fputs ("\r\033[K", stderr);
  if (rc != 0)
    goto out;
  cmp_objective = o->objective;
  qsort (rows, nrows, sizeof *rows, cmp_rows);
  if (nrows > (size_t) o->top)
    nrows = (size_t) o->top;
  if (json) {
    json_t *root = json_envelope ("search"), *arr = json_array (), *per = json_array ();
    json_object_set_new (root, "model", json_string (res[0].model));
    json_object_set_new (root, "gpus", json_integer (res[0].gpus));
    json_object_set_new (root, "global_batch", json_integer (res[0].global_batch));
    json_object_set_new (root, "seq", json_integer (res[0].seq));
    json_object_set_new (root, "precision", json_string (res[0].precision));
    json_object_set_new (root, "predictor", json_string (res[0].predictor));
    json_object_set_new (root, "objective", json_string (o->objective));
    for (size_t i = 0; i < n; i++) {
      json_t *pr = json_object ();
      for (int k = 0; k < res[i].npruned; k++)
        json_object_set_new (pr, res[i].pruned[k].key,
                             json_integer ((json_int_t) res[i].pruned[k].n));
      json_array_append_new (per, json_pack ("{s:s, s:I, s:I, s:o, s:f}", "gpu", res[i].gpu,
                                             "configurations", (json_int_t) res[i].configurations,
                                             "predicted", (json_int_t) res[i].predicted,
                                             "pruned", pr, "seconds", res[i].seconds));
    }
    json_object_set_new (root, "searched", per);
    for (size_t i = 0; i < nrows; i++)
      json_array_append_new (arr, row_json (o, &rows[i].row, i + 1, rows[i].gpu));
    json_object_set_new (root, "best", arr);
    json_print (root, stdout);
    goto out;
  }
  if (csv)
    printf ("rank,gpu,strategy,step_ms,tokens_per_s,mfu,memory_gib,train_hours,cost_usd\n");
  else {
    printf ("perfmod search: %s on %lld GPUs of each kind, global batch %lld x seq %lld, %s, "
            "ranked by %s\n", res[0].model, (long long) res[0].gpus,
            (long long) res[0].global_batch, (long long) res[0].seq, res[0].predictor,
            o->objective);
    for (size_t i = 0; i < n; i++) {    /* each GPU's own best, whatever the ranking shows */
      printf ("  %-24s %llu configurations, %llu predicted, %.2f s; ", res[i].gpu,
              (unsigned long long) res[i].configurations, (unsigned long long) res[i].predicted,
              res[i].seconds);
      if (res[i].nbest && cost_given (o))
        printf ("its best %.1f ms a step, %.0f tokens/s, $%.2f\n", res[i].best[0].step_ms,
                res[i].best[0].tokens_per_s, res[i].best[0].cost_usd);
      else if (res[i].nbest)
        printf ("its best %.1f ms a step, %.0f tokens/s\n", res[i].best[0].step_ms,
                res[i].best[0].tokens_per_s);
      else
        printf ("none fits\n");
    }
    printf ("\n%4s %-24s %11s %12s %6s %8s %10s %10s  %s\n", "rank", "gpu", "step_ms",
            "tokens/s", "mfu_%", "mem_GiB", "train_h", "cost_$", "strategy");
  }
  for (size_t i = 0; i < nrows; i++)
    (csv ? row_csv : row_table) (o, &rows[i].row, i + 1, rows[i].gpu, stdout);
  if (!csv && nrows == 0)
    printf ("\nno configuration fits on any of them: every one was pruned (see the counts)\n");
out:
  for (size_t i = 0; i < n; i++)
    search_result_free (&res[i]);
  free (res);
  free (rows);
  strv_free (names);
  return rc;
}

int
search_main (int argc, char **argv)
{
  for (int i = 1; i < argc; i++)
    if (strcmp (argv[i], "--serve") == 0)
      return search_serve_main (argc, argv);
  struct sopts o;
  struct perfmod_search_request req;
  struct perfmod_search_result res;
  struct gpu_db gpus = { NULL, 0 };
  struct plugin_set set = { NULL, 0 };
  struct calibration cal;
  int p, rc = EXIT_USAGE, mpi_rank = 0, mpi_size = 1;
  char rank_err[512];
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
  memset (&res, 0, sizeof res);
  memset (&cal, 0, sizeof cal);
  res.struct_size = sizeof res;
  res.row_size = sizeof (struct perfmod_search_row);
  o.format = "table";
  o.objective = "time";
  o.top = 10;
  o.seq = 0;
  if ((p = parse (argc, argv, &o)) != 0) {
    free (o.paths);
    free (o.popts);
    free (o.prices);
#ifdef HAVE_MPI
    if (mpi)
      MPI_Finalize ();
#endif
    free (o.counts);
    return p < 0 ? EXIT_USAGE : 0;
  }
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
  if (o.html && output_check (o.html) < 0) {
    rc = EXIT_RUNTIME;
    goto out;
  }
  if (gpu_db_load_data (&gpus) < 0)
    goto out;
  if (plugins_open (&set, o.paths, o.npaths, o.popts, o.npopts) < 0 ||
      (o.calibration && calib_attach (o.calibration, &set, &cal) < 0))
    goto out;
  if (cal.gpu && mpi_rank == 0) {
    char what[512];
    calib_describe (&cal, o.calibration, what, sizeof what);
    fprintf (stderr, "perfmod search: %s\n", what);
  }
  memset (&req, 0, sizeof req);
  req.struct_size = sizeof req;
  req.model = o.model;
  req.gpu = o.gpu;
  req.precision = o.precision;
  req.predictor = o.predictor;
  req.objective = o.objective;
  req.fix = o.fix;
  req.gpus = o.gpus;
  req.global_batch = o.batch;
  req.seq = o.seq;
  req.gpus_per_node = o.gpus_per_node;
  req.max_tp = o.max_tp;
  req.max_cp = o.max_cp;
  req.top = o.top;
  req.jobs = o.jobs;
  req.tokens = o.tokens;
  req.price_per_gpu_hour = o.price;
  req.part = mpi_rank;
  req.nparts = mpi_size;
  if (isatty (STDERR_FILENO))
    req.progress = progress;
  /* the threads are the search's: OpenBLAS's own would only contend (a
   * network evaluates one row at a time) */
  openblas_set_num_threads (1);
  /* each configuration's graphs are built and freed: glibc would hand the
   * freed top of the heap back to the kernel every time and fault it in
   * again (a tenth of the search's time) */
#if defined M_TRIM_THRESHOLD && defined M_MMAP_THRESHOLD
  mallopt (M_TRIM_THRESHOLD, 256 << 20);
  mallopt (M_MMAP_THRESHOLD, 64 << 20);
#endif
  if (strchr (o.gpu ? o.gpu : "", ',')) {
    if (mpi_size > 1) {
      pm_error ("--gpu %s: a list is searched by one process, not under mpirun", o.gpu);
      rc = EXIT_USAGE;
    }
    else
      rc = search_gpus (&o, &set, &gpus, &req);
    if (rc == 0)
      plugins_note_fallbacks (&set, stderr);
    goto out;
  }
  t0 = pm_now ();
  if (mpi_rank > 0)               /* rank 0 says why a request is refused */
    pm_error_capture (rank_err, sizeof rank_err);
  p = search_run (&set, &gpus, &req, &res);
  if (mpi_rank > 0) {
    pm_error_capture (NULL, 0);
    if (p == SEARCH_FAILED)
      pm_error ("%s", rank_err);
  }
  if (p == SEARCH_BAD_REQUEST)
    goto out;                     /* the same on every rank: no gather */
  rc = p == 0 ? 0 : EXIT_RUNTIME;
  if (req.progress)
    fputs ("\r\033[K", stderr);
#ifdef HAVE_MPI
  if (mpi_size > 1 && gather (&res, (size_t) o.top, &rc, mpi_rank, mpi_size) < 0)
    rc = EXIT_RUNTIME;
#endif
  if (rc == 0 && mpi_rank == 0 && o.print)   /* the best layout's arguments, no table */
    rc = print_launch (&o, &res);
  else if (rc == 0 && mpi_rank == 0)          /* rank 0 reports */
    report (&o, &res, mpi_size > 1 ? pm_now () - t0 : res.seconds, stdout);
  /* every rank searches the chart's counts; rank 0 draws it */
  if (rc == 0 && o.plot && res.configurations > 0)
    rc = scaling_chart (&set, &gpus, &req, &o, &res, mpi_rank, mpi_size, stdout);
  if (rc == 0 && mpi_rank == 0 && o.html)
    rc = search_html (&o, &res, mpi_size > 1 ? pm_now () - t0 : res.seconds);
  if (mpi_rank == 0)
    plugins_note_fallbacks (&set, stderr);
out:
  if (o.plot && rc != 0 && mpi_rank == 0)
    atomic_release (o.plot);
  search_result_free (&res);
  plugins_unload (&set);
  calib_free (&cal);
  gpu_db_free (&gpus);
  free (o.paths);
  free (o.popts);
  free (o.counts);
  free (o.prices);
#ifdef HAVE_MPI
  if (mpi)
    MPI_Finalize ();
#endif
  return rc;
}
