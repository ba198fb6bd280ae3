/* predict.c: libperfmod from C: a training step of a model on GPUs under a strategy, printed as perfmod prints it.  Usage: predict MODEL GPU STRATEGY BATCH SEQ [PREDICTOR] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <perfmod.h>

int
main (int argc, char **argv)
{
  char err[512];
  perfmod_ctx *ctx;
  struct perfmod_request req;
  struct perfmod_result res;

  if (argc < 6) {
    fprintf (stderr, "usage: %s MODEL GPU STRATEGY BATCH SEQ [PREDICTOR]\n", argv[0]);
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
  req.strategy = argv[3];
  req.batch = atoll (argv[4]);
  req.seq = atoll (argv[5]);
  req.predictor = argc > 6 ? argv[6] : NULL;
  memset (&res, 0, sizeof res);
  res.struct_size = sizeof res;
  if (perfmod_predict (ctx, &req, &res, err, sizeof err) < 0) {
    fprintf (stderr, "perfmod_predict: %s\n", err);
    perfmod_close (ctx);
    return 1;
  }
  printf ("libperfmod %s: step_ms %.6f, mfu %.4f, tokens/s %.1f, memory %.3f GiB%s\n",
          perfmod_version (), res.step_ms, res.mfu, res.tokens_per_s, res.memory_total_gib,
          res.oom ? " (does not fit)" : "");
  perfmod_close (ctx);
  return 0;
}
