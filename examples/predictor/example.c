/* example.c: a commented example perfmod predictor, the template for third-party plugins.
 *
 * It predicts every kernel as "bytes moved at a fraction of peak bandwidth,
 * or FLOPs at a fraction of peak compute, whichever is slower", with the
 * fraction given by the EXAMPLE_EFFICIENCY environment variable (default
 * 0.8).  Build it out of tree with the Makefile beside it:
 *
 *   make PKG_CONFIG_PATH=$prefix/lib/pkgconfig
 *   perfmod --plugin-path . --predictor example
 */
#include <stdlib.h>
#include <string.h>

#include <perfmod-plugin.h>     /* the only header a plugin needs */

/* Plugin state lives from init to fini; perfmod never looks inside it. */
struct example_state {
  double efficiency;
};

/* The host's services: errors, logging, allocation.  Keep the pointer. */
static const struct perfmod_host *host;

/* init: allocate state.  Report failures through host->error and return -1:
 * perfmod then refuses the plugin with that message and goes on without it. */
static int
example_init (const struct perfmod_host *h, void **state)
{
  struct example_state *st;
  const char *e = getenv ("EXAMPLE_EFFICIENCY");

  host = h;
  st = host->alloc (sizeof *st);
  st->efficiency = e ? atof (e) : 0.8;
  if (!(st->efficiency > 0 && st->efficiency <= 1)) {
    host->error ("EXAMPLE_EFFICIENCY must be in (0, 1], got '%s'", e);
    host->free (st);
    return -1;
  }
  *state = st;
  return 0;
}

static void
example_fini (void *state)
{
  host->free (state);
}

/* predict: seconds for one kernel.  The core owns kernel and gpu; the
 * plugin must not keep pointers to them after returning.  Never print to
 * stdout: the report is perfmod's. */
static int
example_predict (void *state, const struct perfmod_kernel *k, const struct perfmod_gpu *gpu,
                 double *seconds)
{
  const struct example_state *st = state;
  double flops = 0, bytes = 0;
  double peak = perfmod_gpu_peak_flops (gpu, k->dtype) * st->efficiency;
  double bw = gpu->mem_bw_gbps * 1e9 * st->efficiency;

  switch (k->kclass) {
  case PERFMOD_KERNEL_LINEAR:
  case PERFMOD_KERNEL_BMM:
    flops = 2.0 * (double) k->b * (double) k->m * (double) k->n * (double) k->k;
    bytes = k->elem_bytes * (double) k->b *
            ((double) k->m * (double) k->n + (double) k->n * (double) k->k + (double) k->m * (double) k->k);
    break;
  case PERFMOD_KERNEL_ELEMENTWISE:
  case PERFMOD_KERNEL_SOFTMAX:
  case PERFMOD_KERNEL_LAYERNORM:
    bytes = (double) k->b * (double) k->h * k->mem_per_output;
    flops = (double) k->b * (double) k->h * k->ops_per_output;
    break;
  case PERFMOD_KERNEL_MEMORY:
    bytes = k->bytes;
    break;
  case PERFMOD_KERNEL_ATTENTION:
    /* fused attention: QK^T and PV over every query-key pair (half of
     * them under a causal mask); the backward does 2.5 times the work */
    flops = 4.0 * (double) k->b * (double) k->h * (double) k->m * (double) k->n * (double) k->k
            * (k->causal ? 0.5 : 1) * (strcmp (k->op, "attention_bwd") == 0 ? 2.5 : 1);
    bytes = k->elem_bytes * (double) k->b * (double) k->k *
            (2.0 * (double) k->m * (double) k->h + 2.0 * (double) k->n * (double) k->kv_heads);
    break;
  default:
    host->error ("kernel class %d is not supported", k->kclass);
    return -1;
  }
  *seconds = flops / peak > bytes / bw ? flops / peak : bytes / bw;
  return 0;
}

/* Fill what you implement; the macro sets abi_version and struct_size and
 * exports perfmod_plugin_init, the plugin's only symbol.  The name must
 * equal the file name: this one builds as example.so. */
static struct perfmod_plugin plugin = {
  .name = "example",
  .version = "1.0",
  .description = "example: max(FLOPs, bytes) at a fixed fraction of the GPU's peaks",
  .kind = PERFMOD_PLUGIN_PREDICTOR,
  .init = example_init,
  .fini = example_fini,
  .predict = example_predict,
};

PERFMOD_REGISTER_PLUGIN (plugin)
