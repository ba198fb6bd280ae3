/* t-api.c: libperfmod through its public header alone: contexts, errors returned, and predictions on several threads giving the numbers of one. */
#include <config.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
  ok (fails == 0 && one[0].e2e_ms > 0 && one[0].memory_total_gb > 0,
      "sequential predictions (%s)", fails ? err : "ok");
  for (size_t i = 0; i < 2 * N; i++) {
    jobs[i].ctx = i % 2 ? a : b;
    jobs[i].i = i;
    pthread_create (&th[i], NULL, worker, &jobs[i]);
  }
  for (size_t i = 0; i < 2 * N; i++) {
    pthread_join (th[i], NULL);
    same &= jobs[i].rc == 0 && jobs[i].res.e2e_ms == one[i].e2e_ms &&
            jobs[i].res.memory_total_gb == one[i].memory_total_gb;
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
    ok (rc == 0 && again[1].e2e_ms == one[1].e2e_ms && again[0].e2e_ms > 0,
        "a context opened after the last was closed predicts as the first did (%s)",
        rc ? err : "ok");
    if (c)
      perfmod_close (c);
  }
  done_testing ();
  return exit_status ();
}
