/* fixture-nopredict.c: a predictor without its mandatory predict callback; the loader must refuse it. */
#include "perfmod-plugin.h"

static struct perfmod_plugin plugin = {
  .name = "fixture_nopredict",
  .kind = PERFMOD_PLUGIN_PREDICTOR,
};

PERFMOD_REGISTER_PLUGIN (plugin)
