/* t-api.c: libperfmod through its public header alone: contexts, errors returned, predictions on several threads giving the numbers of one, and searches giving perfmod search's answer. */
#include <config.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "perfmod.h"
#include "tap.h"

static const char *const strategies[] = { "tp=2,dp=4", "tp=4,pp=2,recompute=selective",
                                          "dp=8,zero=1", "tp=8,sp=1,recompute=full" };
#define N (sizeof strategies / sizeof strategies[0])

struct job {
  perfmod_ctx *ctx;
  size_t i;
  struct perfmod_result res;
  int rc;
  char err[256];
};

static int
run (perfmod_ctx *ctx, const char *strategy, const char *predictor, struct perfmod_result *res,
     char *err, size_t len)
{
  struct perfmod_request req;
  memset (&req, 0, sizeof req);
  req.struct_size = sizeof req;
  req.model = "gpt3-2.7b";
  req.gpu = "h100";
  req.strategy = strategy;
  req.predictor = predictor;
  req.batch = 64;
  req.seq = 2048;
  memset (res, 0, sizeof *res);
  res->struct_size = sizeof *res;
  return perfmod_predict (ctx, &req, res, err, len);
}

static void *
worker (void *arg)
{
  struct job *j = arg;
  j->rc = run (j->ctx, strategies[j->i % N], j->i % 2 ? "tile-mlp" : "roofline", &j->res, j->err,
               sizeof j->err);
  return NULL;
}

/* Plugins that stay loaded when the last context lets them go, as the
 * fuzz targets keep them (fuzz-cli found tile-mlp's second fini freeing its
 * networks again, and habitat predicting with the networks it had freed). */
static void
keep_loaded (void)
{
  const char *dir = getenv ("PERFMOD_PLUGIN_DIR");
  for (int i = 0; dir && i < 2; i++) {
    char *so;
    if (asprintf (&so, "%s/%s.so", dir, i ? "habitat" : "tile-mlp") >= 0) {
      dlopen (so, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
      free (so);
    }
  }
}

/* The search of the tests: GPT-3 2.7B on 8 H100s, micro-batch 1 and no
 * interleaving fixed (a small space), on jobs threads. */
static void
search_request (struct perfmod_search_request *req, int jobs)
{
  memset (req, 0, sizeof *req);
  req->struct_size = sizeof *req;
  req->model = "gpt3-2.7b";
  req->gpu = "h100";
  req->gpus = 8;
  req->global_batch = 16;
  req->seq = 2048;
  req->fix = "mbs=1,vp=1";
  req->top = 6;
  req->jobs = jobs;
  req->tokens = 1e9;
  req->price_per_gpu_hour = 2;
}

static void
search_result_init (struct perfmod_search_result *res)
{
  memset (res, 0, sizeof *res);
  res->struct_size = sizeof *res;
  res->row_size = sizeof (struct perfmod_search_row);
}

/* perfmod search's JSON for the same request, run here ($top_builddir/perfmod). */
static json_t *
cli_search (void)
{
  const char *b = getenv ("top_builddir");
  char cmd[1024];
  FILE *fp;
  json_t *j;
  json_error_t e;
  snprintf (cmd, sizeof cmd, "'%s/perfmod' search --model gpt3-2.7b --gpu h100 --gpus 8 "
            "--global-batch 16 --seq 2048 --fix mbs=1,vp=1 --top 6 --tokens 1e9 "
            "--price-per-gpu-hour 2 --format json", b ? b : ".");
  if ((fp = popen (cmd, "r")) == NULL)
    return NULL;
  j = json_loadf (fp, 0, &e);
  if (pclose (fp) != 0 && j) {
    json_decref (j);
    j = NULL;
  }
  return j;
}

static bool
near (double a, double b)
{
  return a == b || fabs (a / b - 1) < 1e-9;
}

/* res against the CLI's JSON: the counts, and each row by name. */
static bool
same_as_cli (const struct perfmod_search_result *res, json_t *cli)
{
  json_t *best = json_object_get (cli, "best"), *pr = json_object_get (cli, "pruned");
  if (best == NULL || json_array_size (best) != res->nbest || res->nbest == 0 ||
      (json_int_t) res->configurations != json_integer_value (json_object_get (cli, "configurations")) ||
      (json_int_t) res->predicted != json_integer_value (json_object_get (cli, "predicted")) ||
      (int) json_object_size (pr) != res->npruned ||
      strcmp (res->gpu, json_string_value (json_object_get (cli, "gpu"))) ||
      res->seq != json_integer_value (json_object_get (cli, "seq")))
    return false;
  for (int i = 0; i < res->npruned; i++)
    if ((json_int_t) res->pruned[i].n != json_integer_value (json_object_get (pr, res->pruned[i].key)))
      return false;
  for (size_t i = 0; i < res->nbest; i++) {
    const struct perfmod_search_row *r = &res->best[i];
    json_t *row = json_array_get (best, i);
    const char *spec = json_string_value (json_object_get (json_object_get (row, "strategy"), "spec"));
    if (spec == NULL || strcmp (r->strategy, spec) ||
        !near (r->step_ms, json_real_value (json_object_get (row, "step_ms"))) ||
        !near (r->tokens_per_s, json_real_value (json_object_get (row, "tokens_per_s"))) ||
        !near (r->mfu, json_real_value (json_object_get (row, "mfu"))) ||
        !near (r->memory_gib, json_real_value (json_object_get (json_object_get (row, "memory_gib"),
                                                                "total"))) ||
        !near (r->train_hours, json_real_value (json_object_get (row, "train_hours"))) ||
        !near (r->cost_usd, json_real_value (json_object_get (row, "cost_usd"))))
      return false;
  }
  return true;
}

static bool
same_rows (const struct perfmod_search_result *a, const struct perfmod_search_result *b)
{
  if (a->nbest != b->nbest || a->predicted != b->predicted)
    return false;
  for (size_t i = 0; i < a->nbest; i++)
    if (strcmp (a->best[i].strategy, b->best[i].strategy) || a->best[i].step_ms != b->best[i].step_ms)
      return false;
  return true;
}

struct sjob {
  perfmod_ctx *ctx;
  struct perfmod_search_result res;
  int rc;
  char err[256];
};

static void *
search_worker (void *arg)
{
  struct sjob *j = arg;
  struct perfmod_search_request req;
  search_request (&req, 2);
  search_result_init (&j->res);
  j->rc = perfmod_search (j->ctx, &req, &j->res, j->err, sizeof j->err);
  return NULL;
}

static int
row_cmp (const void *pa, const void *pb)
{
  const struct perfmod_search_row *a = pa, *b = pb;
  if (a->step_ms != b->step_ms)
    return a->step_ms < b->step_ms ? -1 : 1;
  return a->index < b->index ? -1 : a->index > b->index;
}

/* The searches: the CLI's answer, on threads and contexts, in parts, and
 * bad requests refused with their reason. */
static void
searches (perfmod_ctx *a, perfmod_ctx *b)
{
  struct perfmod_search_request req;
  struct perfmod_search_result one, part[2];
  struct sjob sj[2];
  pthread_t th[2];
  char err[512];
  json_t *cli;
  int rc;

  search_request (&req, 1);
  search_result_init (&one);
  rc = perfmod_search (a, &req, &one, err, sizeof err);
  cli = cli_search ();
  ok (rc == 0 && cli && same_as_cli (&one, cli),
      "perfmod_search gives perfmod search --format json's counts and best %zu (%s: %s, %.3f ms)",
      one.nbest, rc ? err : "ok", one.nbest ? one.best[0].strategy : "-",
      one.nbest ? one.best[0].step_ms : 0.0);
  json_decref (cli);
  for (int i = 0; i < 2; i++) {
    sj[i].ctx = i ? b : a;
    pthread_create (&th[i], NULL, search_worker, &sj[i]);
  }
  for (int i = 0; i < 2; i++)
    pthread_join (th[i], NULL);
  ok (sj[0].rc == 0 && sj[1].rc == 0 && same_rows (&sj[0].res, &one) && same_rows (&sj[1].res, &one),
      "two searches at once on two contexts, 2 threads each: the single-threaded answer (%s)",
      sj[0].rc ? sj[0].err : sj[1].rc ? sj[1].err : "ok");
  perfmod_search_result_free (&sj[0].res);
  perfmod_search_result_free (&sj[1].res);
  /* parts 0 and 1 of 2, merged by step then enumeration index: the whole */
  {
    struct perfmod_search_row rows[12];
    size_t n = 0;
    bool same;
    rc = 0;
    for (int i = 0; i < 2; i++) {
      search_request (&req, 1);
      req.part = i;
      req.nparts = 2;
      search_result_init (&part[i]);
      rc |= perfmod_search (a, &req, &part[i], err, sizeof err);
      for (size_t k = 0; rc == 0 && k < part[i].nbest; k++)
        rows[n++] = part[i].best[k];
    }
    qsort (rows, n, sizeof *rows, row_cmp);
    same = rc == 0 && n >= one.nbest &&
           part[0].predicted + part[1].predicted == one.predicted &&
           part[0].configurations == one.configurations;
    for (size_t k = 0; same && k < one.nbest; k++)
      same = strcmp (rows[k].strategy, one.best[k].strategy) == 0 &&
             rows[k].step_ms == one.best[k].step_ms;
    ok (same, "parts 0 and 1 of 2, merged: the whole search's best and counts");
    perfmod_search_result_free (&part[0]);
    perfmod_search_result_free (&part[1]);
  }
  perfmod_search_result_free (&one);
  ok (one.best == NULL && one.nbest == 0 && one.model == NULL, "perfmod_search_result_free empties it");

  /* bad requests: -1, the reason, an empty result, and the process goes on */
  search_request (&req, 1);
  req.gpus = 0;
  search_result_init (&one);
  ok (perfmod_search (a, &req, &one, err, sizeof err) < 0 && strstr (err, "gpus 0") &&
      one.nbest == 0 && one.best == NULL, "gpus = 0: -1 and the reason (%s)", err);
  search_request (&req, 1);
  req.model = "gpt3-9b";
  ok (perfmod_search (a, &req, &one, err, sizeof err) < 0 && strstr (err, "gpt3-9b") &&
      one.best == NULL, "an unknown model: -1 and the reason (%s)", err);
  search_request (&req, 1);
  req.fix = "tp=3";
  ok (perfmod_search (a, &req, &one, err, sizeof err) < 0 && strstr (err, "left to predict") &&
      one.best == NULL, "impossible constraints (fix tp=3): -1 and the reason (%s)", err);
  search_request (&req, 1);
  req.fix = "split=2:2";
  ok (perfmod_search (a, &req, &one, err, sizeof err) < 0 && strstr (err, "split cannot be fixed"),
      "a key search does not vary: -1 and the reason (%s)", err);
  search_request (&req, 1);
  req.objective = "cost";
  req.price_per_gpu_hour = 0;
  ok (perfmod_search (a, &req, &one, err, sizeof err) < 0 && strstr (err, "price"),
      "the cost objective without a price: -1 and the reason (%s)", err);
  search_request (&req, 1);
  req.struct_size = 0;
  ok (perfmod_search (a, &req, &one, err, sizeof err) < 0 && strstr (err, "struct_size"),
      "a search request without struct_size is refused (%s)", err);
  search_request (&req, 1);
  ok (perfmod_search (NULL, &req, &one, err, sizeof err) < 0 && strstr (err, "NULL"),
      "a NULL context is refused (%s)", err);
  perfmod_search_result_free (&one);
}

int
main (void)
{
  char err[512];
  perfmod_ctx *a, *b;
  struct perfmod_result one[2 * N];
  struct job jobs[2 * N];
  pthread_t th[2 * N];
  int same = 1, fails = 0;

  keep_loaded ();
  a = perfmod_open (NULL, NULL, err, sizeof err);
  b = perfmod_open (NULL, NULL, err, sizeof err);
  ok (a != NULL && b != NULL, "two contexts open in one process");
  if (a == NULL || b == NULL) {
    done_testing ();
    return exit_status ();
  }
  ok (strcmp (perfmod_version (), PACKAGE_VERSION) == 0, "perfmod_version is configure's (%s)",
      perfmod_version ());
  for (size_t i = 0; i < 2 * N; i++)
    fails += run (a, strategies[i % N], i % 2 ? "tile-mlp" : "roofline", &one[i], err,
                  sizeof err) < 0;
  ok (fails == 0 && one[0].step_ms > 0 && one[0].memory_total_gib > 0,
      "sequential predictions (%s)", fails ? err : "ok");
  for (size_t i = 0; i < 2 * N; i++) {
    jobs[i].ctx = i % 2 ? a : b;
    jobs[i].i = i;
    pthread_create (&th[i], NULL, worker, &jobs[i]);
  }
  for (size_t i = 0; i < 2 * N; i++) {
    pthread_join (th[i], NULL);
    same &= jobs[i].rc == 0 && jobs[i].res.step_ms == one[i].step_ms &&
            jobs[i].res.memory_total_gib == one[i].memory_total_gib;
  }
  ok (same, "%zu predictions on as many threads over two contexts: the sequential numbers", 2 * N);
  ok (run (a, "tp=3", NULL, &one[0], err, sizeof err) < 0 && strstr (err, "tp=3") != NULL,
      "a strategy the model cannot take: -1 and the reason (%s)", err);
  ok (run (a, "tp=2,dp=4", "nosuch", &one[0], err, sizeof err) < 0 && strstr (err, "nosuch"),
      "an unknown predictor: -1 and the reason (%s)", err);
  {
    struct perfmod_request req;
    struct perfmod_result res;
    memset (&req, 0, sizeof req);
    memset (&res, 0, sizeof res);
    req.model = "gpt3-2.7b";
    ok (perfmod_predict (a, &req, &res, err, sizeof err) < 0 && strstr (err, "struct_size"),
        "a request without struct_size is refused (%s)", err);
  }
  ok (perfmod_open ("/nonexistent", NULL, err, sizeof err) == NULL && strstr (err, "/nonexistent"),
      "a missing data directory: NULL and the reason (%s)", err);
  searches (a, b);
  perfmod_close (a);
  perfmod_close (b);
  /* The plugins were stopped with the last context; a new one starts
   * them afresh, not from what the last run freed, even where the object
   * stayed loaded (keep_loaded). */
  {
    perfmod_ctx *c = perfmod_open (NULL, NULL, err, sizeof err);
    struct perfmod_result again[2];
    int rc = c ? run (c, strategies[1], "tile-mlp", &again[1], err, sizeof err) : -1;
    rc = rc < 0 ? rc : run (c, strategies[2], "habitat", &again[0], err, sizeof err);
    ok (rc == 0 && again[1].step_ms == one[1].step_ms && again[0].step_ms > 0,
        "a context opened after the last was closed predicts as the first did (%s)",
        rc ? err : "ok");
    if (c)
      perfmod_close (c);
  }
  done_testing ();
  return exit_status ();
}
