/* t-header.c: the public header compiles as strict C99 and its registration macro works. */
#include "perfmod-plugin.h"
#include "perfmod.h"            /* libperfmod's header too: strict C99, C++ */

#include <stdio.h>

static int
header_predict (void *s, const struct perfmod_kernel *k, const struct perfmod_gpu *g, double *t)
{
  (void) s; (void) k;
  *t = 1.0 / perfmod_gpu_peak_flops (g, PERFMOD_DTYPE_FP32);
  return 0;
}

static struct perfmod_plugin plugin = {
  0, 0, "header", "1", "header test", PERFMOD_PLUGIN_PREDICTOR,
  NULL, NULL, header_predict, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
};

PERFMOD_REGISTER_PLUGIN (plugin)

int
main (void)
{
  const struct perfmod_plugin *p = perfmod_plugin_init ();
  struct perfmod_gpu g = { 0 };
  double t = 0;
  g.fp32_gflops = 1000;
  g.tensor_tflops[PERFMOD_DTYPE_BF16] = 2;
  printf ("1..3\n");
  printf ("%sok 1 - registration fills the ABI version\n", p->abi_version == PERFMOD_ABI_VERSION ? "" : "not ");
  p->predict (NULL, NULL, &g, &t);
  printf ("%sok 2 - fp32 peak comes from fp32_gflops\n", t == 1e-12 ? "" : "not ");
  printf ("%sok 3 - bf16 peak comes from the matrix units\n",
          perfmod_gpu_peak_flops (&g, PERFMOD_DTYPE_BF16) == 2e12 ? "" : "not ");
  return 0;
}
