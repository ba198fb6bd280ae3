/* fixture-initfail.c: a plugin whose init fails with a reason; the loader must refuse it and go on. */
#include "perfmod-plugin.h"

static int
initfail_init (const struct perfmod_host *host, void **state)
{
  (void) state;
  host->error ("parameter file fixture.bin is missing");
  return -1;
}

static int
initfail_predict (void *s, const struct perfmod_kernel *k, const struct perfmod_gpu *g, double *t)
{
  (void) s; (void) k; (void) g;
  *t = 1;
  return 0;
}

static struct perfmod_plugin plugin = {
  .name = "fixture_initfail",
  .kind = PERFMOD_PLUGIN_PREDICTOR,
  .init = initfail_init,
  .predict = initfail_predict,
};

PERFMOD_REGISTER_PLUGIN (plugin)
