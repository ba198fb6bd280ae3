/* fixture-wrongabi.c: a plugin claiming a future ABI version; the loader must refuse it. */
#include "perfmod-plugin.h"

static int
wrongabi_predict (void *s, const struct perfmod_kernel *k, const struct perfmod_gpu *g, double *t)
{
  (void) s; (void) k; (void) g;
  *t = 1;
  return 0;
}

static struct perfmod_plugin plugin = {
  .name = "fixture_wrongabi",
  .kind = PERFMOD_PLUGIN_PREDICTOR,
  .predict = wrongabi_predict,
};

const struct perfmod_plugin *perfmod_plugin_init (void);
const struct perfmod_plugin *
perfmod_plugin_init (void)
{
  plugin.abi_version = PERFMOD_ABI_VERSION + 41;
  plugin.struct_size = sizeof plugin;
  return &plugin;
}
