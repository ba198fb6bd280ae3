/* fixture-misnamed.c: a plugin whose declared name differs from its file name; the loader must refuse it. */
#include "perfmod-plugin.h"

static int
misnamed_predict (void *s, const struct perfmod_kernel *k, const struct perfmod_gpu *g, double *t)
{
  (void) s; (void) k; (void) g;
  *t = 1;
  return 0;
}

static struct perfmod_plugin plugin = {
  .name = "roofline",
  .kind = PERFMOD_PLUGIN_PREDICTOR,
  .predict = misnamed_predict,
};

PERFMOD_REGISTER_PLUGIN (plugin)
