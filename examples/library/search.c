/* search.c: libperfmod's search from C: the best ways to train a model on a cluster, printed as perfmod search --format csv prints them.  Usage: search MODEL GPU GPUS GLOBAL_BATCH SEQ [TOP [PREDICTOR]] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <perfmod.h>

int
main (int argc, char **argv)
{
  char err[512];
  perfmod_ctx *ctx;
  struct perfmod_search_request req;
  struct perfmod_search_result res;
  uint64_t pruned = 0;

  if (argc < 6) {
    fprintf (stderr, "usage: %s MODEL GPU GPUS GLOBAL_BATCH SEQ [TOP [PREDICTOR]]\n", argv[0]);
    return 2;
  }
  /* the installed data and plugins (or $PERFMOD_DATADIR, $PERFMOD_PLUGIN_DIR) */
  if ((ctx = perfmod_open (NULL, NULL, err, sizeof err)) == NULL) {
    fprintf (stderr, "perfmod_open: %s\n", err);
    return 1;
  }
  memset (&req, 0, sizeof req);
  req.struct_size = sizeof req;
  req.model = argv[1];
  req.gpu = argv[2];
  req.gpus = atoll (argv[3]);
  req.global_batch = atoll (argv[4]);
  req.seq = atoll (argv[5]);
  req.top = argc > 6 ? atoll (argv[6]) : 0;
  req.predictor = argc > 7 ? argv[7] : NULL;
  memset (&res, 0, sizeof res);
  res.struct_size = sizeof res;
  res.row_size = sizeof (struct perfmod_search_row);
  if (perfmod_search (ctx, &req, &res, err, sizeof err) < 0) {
    fprintf (stderr, "perfmod_search: %s\n", err);
    perfmod_close (ctx);
    return 1;
  }
  for (int i = 0; i < res.npruned; i++)
    pruned += res.pruned[i].n;
  fprintf (stderr, "libperfmod %s: %s on %lld x %s: %llu configurations, %llu predicted, "
           "%llu pruned\n", perfmod_version (), res.model, (long long) res.gpus, res.gpu,
           (unsigned long long) res.configurations, (unsigned long long) res.predicted,
           (unsigned long long) pruned);
  printf ("rank,strategy,step_ms,tokens_per_s,mfu,memory_gib,train_hours,cost_usd\n");
  /* no tokens or price were asked for: the time to train and the cost are
   * empty cells, as perfmod search leaves them (r->train_hours and
   * r->cost_usd hold 0) */
  for (size_t i = 0; i < res.nbest; i++) {
    const struct perfmod_search_row *r = &res.best[i];
    printf ("%zu,\"%s\",%.9g,%.9g,%.6f,%.6g,,\n", i + 1, r->strategy, r->step_ms,
            r->tokens_per_s, r->mfu, r->memory_gib);
  }
  perfmod_search_result_free (&res);
  perfmod_close (ctx);
  return 0;
}
