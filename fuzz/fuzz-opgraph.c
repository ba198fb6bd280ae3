/* fuzz-opgraph.c: libFuzzer target: a traced operator graph (opgraph_import), then predicted with roofline. */
#include <config.h>

#include <math.h>
#include <stdlib.h>

#include "internal.h"
#include "fuzz.h"

static struct gpu_db gpus;
static struct plugin_set set;
static struct plugin *roofline;

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  (void) argc; (void) argv;
  fuzz_setup ();
  if (gpu_db_load_data (&gpus) < 0 || plugins_open (&set, NULL, 0, NULL, 0) < 0 ||
      (roofline = predictor_find (&set, "roofline")) == NULL)
    abort ();
  return 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  struct graph g;
  /* 0: the trace as a whole; 24: GPT-2 Large's layers, to find a layer span */
  for (int64_t layers = 0; layers <= 24; layers += 24) {
    struct run_options ro = { .train = layers > 0, .comm_group = 4 };
    struct prediction pr;
    if (opgraph_import (&g, fuzz_file ("opgraph.csv", data, size), layers) < 0)
      return 0;
    for (size_t i = 0; i < g.n; i++)
      (void) graph_layer (&g, i);
    /* a graph accepted predicts a time, not a NaN, an infinity or less than nothing */
    if (predict_graph (roofline, &g, &gpu_db_find (&gpus, "h100")->gpu, &ro, &pr) == 0) {
      if (!isfinite (pr.e2e_ms) || pr.e2e_ms < 0) {
        fprintf (stderr, "fuzz-opgraph: e2e %g ms\n", pr.e2e_ms);
        abort ();
      }
      prediction_free (&pr);
    }
    graph_free (&g);
  }
  return 0;
}
