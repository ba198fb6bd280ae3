/* fuzz-model.c: libFuzzer target: a model config (model_cfg_load), then its parameter counts, memory and graphs, predicted with roofline. */
#include <config.h>

#include <math.h>
#include <stdlib.h>

#include "internal.h"
#include "fuzz.h"

static struct gpu_db gpus;
static const struct gpu_entry *h100;
static struct plugin_set set;
static struct plugin *roofline;

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  (void) argc; (void) argv;
  fuzz_setup ();
  if (gpu_db_load_data (&gpus) < 0 || (h100 = gpu_db_find (&gpus, "h100")) == NULL ||
      plugins_open (&set, NULL, 0, NULL, 0) < 0 ||
      (roofline = predictor_find (&set, "roofline")) == NULL)
    abort ();
  return 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  struct model_cfg m;
  double embed, head, experts;
  if (model_cfg_load (&m, fuzz_file ("model.json", data, size)) < 0)
    return 0;
  /* what every command asks of a loaded model first */
  (void) model_params (&m);
  model_param_parts (&m, &embed, &head, &experts);
  (void) family_name (m.family);
  /* what perfmod predict builds from it: inference, a decode step and
   * training, small enough that any size in range builds quickly */
  for (int i = 0; i < 3; i++) {
    struct build_options bo = { .batch = 2, .seq = 64, .train = i == 2, .flash = i != 2,
                                .kv_len = i == 1 ? 64 : 0 };
    struct memory_options mo = { .batch = bo.batch, .seq = bo.seq, .train = bo.train,
                                 .kv_len = bo.kv_len, .flash = bo.flash };
    struct memory_estimate me;
    struct run_options ro = { .train = bo.train };
    struct prediction pr;
    struct graph g;
    memory_estimate (&m, &mo, &h100->gpu, &me);
    if (graph_build (&g, &m, &bo) < 0)
      continue;
    /* a model accepted predicts a time, not a NaN, an infinity or less than nothing */
    if (predict_graph (roofline, &g, &h100->gpu, &ro, &pr) == 0) {
      if (!isfinite (pr.e2e_ms) || pr.e2e_ms < 0 || !(me.total >= 0)) {
        fprintf (stderr, "fuzz-model: e2e %g ms, memory %g bytes\n", pr.e2e_ms, me.total);
        abort ();
      }
      prediction_free (&pr);
    }
    graph_free (&g);
  }
  model_cfg_free (&m);
  return 0;
}
