/* api.c: libperfmod's public functions (include/perfmod.h): a context of GPUs and plugins, a prediction as perfmod --strategy makes it, a search as perfmod search makes it, and serving as perfmod serve simulates it. */
#include <config.h>

#include <cblas.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "perfmod.h"
#include "internal.h"

struct perfmod_ctx {
  char *datadir;                 /* NULL: the process's (pm_datadir) */
  struct gpu_db gpus;
  struct plugin_set set;
};

/* The contexts open now: a call on one that is not (closed already, or
 * never a context) is refused without reading it, a second close ignored. */
static perfmod_ctx **open_ctx;
static size_t nopen, capopen;
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;

static void
ctx_add (perfmod_ctx *ctx)
{
  pthread_mutex_lock (&open_lock);
  if (nopen == capopen) {
    capopen = capopen ? 2 * capopen : 8;
    open_ctx = xrealloc (open_ctx, capopen * sizeof *open_ctx);
  }
  open_ctx[nopen++] = ctx;
  pthread_mutex_unlock (&open_lock);
}

/* Whether ctx is open; removed from the open ones as well with `take`. */
static bool
ctx_open (const perfmod_ctx *ctx, bool take)
{
  bool found = false;
  pthread_mutex_lock (&open_lock);
  for (size_t i = 0; i < nopen && !found; i++)
    if (open_ctx[i] == ctx) {
      found = true;
      if (take)
        open_ctx[i] = open_ctx[--nopen];
    }
  pthread_mutex_unlock (&open_lock);
  return found;
}

/* The checks every call makes: 0, or -1 with the reason in err. */
static int
call_check (const char *fn, const perfmod_ctx *ctx, const void *req, const void *res, char *err,
            size_t errlen)
{
  const char *why = NULL;
  if (ctx == NULL || req == NULL || res == NULL)
    why = "a NULL context, request or result";
  else if (!ctx_open (ctx, false))
    why = "a context that is not open (closed already?)";
  if (why == NULL)
    return 0;
  if (err && errlen)
    snprintf (err, errlen, "%s: %s", fn, why);
  return -1;
}

/* OpenBLAS on one thread while the library runs, as the command runs it: the networks
 * multiply small matrices, one kernel at a time on each of the library's own threads,
 * where OpenBLAS's threads only contend (Python's search ran 6 times slower).  The
 * caller's setting comes back when the last call in flight returns. */
static pthread_mutex_t blas_lock = PTHREAD_MUTEX_INITIALIZER;
static int blas_users, blas_saved;

static void
blas_enter (void)
{
  pthread_mutex_lock (&blas_lock);
  if (blas_users++ == 0) {
    blas_saved = openblas_get_num_threads ();
    openblas_set_num_threads (1);
  }
  pthread_mutex_unlock (&blas_lock);
}

static void
blas_leave (void)
{
  pthread_mutex_lock (&blas_lock);
  if (--blas_users == 0 && blas_saved > 1)
    openblas_set_num_threads (blas_saved);
  pthread_mutex_unlock (&blas_lock);
}

/* Run the library's code with ctx's data directory and errors into err:
 * both per thread, so contexts and threads do not see each other's. */
static void
enter (const perfmod_ctx *ctx, char *err, size_t errlen)
{
  static _Thread_local char sink[2];   /* no buffer given: the reason dropped, not printed */
  blas_enter ();
  pm_datadir_use (ctx ? ctx->datadir : NULL);
  if (err && errlen)
    pm_error_capture (err, errlen);
  else
    pm_error_capture (sink, sizeof sink);
}

static void
leave (void)
{
  pm_error_capture (NULL, 0);
  pm_datadir_use (NULL);
  blas_leave ();
}

const char *
perfmod_version (void)
{
  return PACKAGE_VERSION;
}

perfmod_ctx *
perfmod_open (const char *datadir, const char *plugindir, char *err, size_t errlen)
{
  perfmod_ctx *ctx = xcalloc (1, sizeof *ctx);
  char *dirs[2] = { NULL, NULL };
  char **defaults = NULL;
  ctx->datadir = datadir ? xstrdup (datadir) : NULL;
  enter (ctx, err, errlen);
  if (gpu_db_load_data (&ctx->gpus) < 0) {
    leave ();
    free (ctx->datadir);
    free (ctx);
    return NULL;
  }
  if (plugindir)
    dirs[0] = (char *) plugindir;
  else
    defaults = plugin_search_dirs (NULL, 0);
  plugins_load (&ctx->set, plugindir ? dirs : defaults);
  strv_free (defaults);
  /* Each predictor's dtypes() answers asked now, not lazily from several
   * threads (this also loads the learned predictors' parameters). */
  for (size_t i = 0; i < ctx->set.n; i++)
    if (ctx->set.v[i].p.kind == PERFMOD_PLUGIN_PREDICTOR)
      for (int kc = 0; kc < 16; kc++)
        for (int dt = 0; dt < PERFMOD_DTYPE_NTYPES; dt++)
          plugin_covers (&ctx->set.v[i], kc, dt);
  leave ();
  ctx_add (ctx);
  return ctx;
}

void
perfmod_close (perfmod_ctx *ctx)
{
  if (ctx == NULL || !ctx_open (ctx, true))
    return;
  plugins_unload (&ctx->set);
  gpu_db_free (&ctx->gpus);
  free (ctx->datadir);
  free (ctx);
}

/* The request's precision: a training precision, or an inference dtype;
 * NULL where the name is neither. */
static const struct precision *
request_precision (const struct perfmod_request *req, const struct gpu_entry *ge, bool train)
{
  int dtype;
  if (req->precision == NULL)
    return precision_of_dtype (default_dtype (&ge->gpu), train);
  if (train && precision_train (req->precision))
    return precision_train (req->precision);
  if (!train)
    return precision_infer_named (req->precision);
  if ((dtype = dtype_parse (req->precision)) < 0)
    return NULL;
  return precision_of_dtype (dtype, train);
}

static int
predict (perfmod_ctx *ctx, const struct perfmod_request *req, struct perfmod_result *res)
{
  const struct gpu_entry *ge;
  const struct precision *pr;
  struct model_cfg m;
  struct strategy s;
  struct dist_options d;
  struct dist_result r;
  struct plugin *pred;
  bool train, flash;
  int gpn, rc = -1;
  int64_t batch = req->batch ? req->batch : 4, seq = req->seq ? req->seq : 1024;

  if (req->struct_size < offsetof (struct perfmod_request, gpus_per_node) + sizeof (int64_t) ||
      req->struct_size > sizeof *req ||
      res->struct_size < offsetof (struct perfmod_result, microbatches) + sizeof (int) ||
      res->struct_size > sizeof *res) {
    pm_error ("perfmod_predict: set struct_size of the request and the result to their sizeof "
              "(request %u, result %u; this library's %zu, %zu)", (unsigned) req->struct_size,
              (unsigned) res->struct_size, sizeof *req, sizeof *res);
    return -1;
  }
  /* the command line's ranges (perfmod(1), LIMITS); 0: the default */
  {
    static const struct field_range counts[] = {
      { "batch", PM_MAX_BATCH, offsetof (struct perfmod_request, batch) },
      { "seq", PM_MAX_SEQ, offsetof (struct perfmod_request, seq) },
      { "nodes", PM_MAX_GPUS, offsetof (struct perfmod_request, nodes) },
      { "gpus_per_node", PM_MAX_GPUS, offsetof (struct perfmod_request, gpus_per_node) },
    };
    if (fields_in_range (req, counts, sizeof counts / sizeof counts[0], "perfmod_predict") < 0)
      return -1;
  }
  if (req->model == NULL) {
    pm_error ("perfmod_predict: no model");
    return -1;
  }
  train = req->mode == NULL || strcmp (req->mode, "train") == 0;
  if (!train && strcmp (req->mode, "inf") != 0) {
    pm_error ("mode '%s': expected train or inf", req->mode);
    return -1;
  }
  if ((ge = gpu_db_find (&ctx->gpus, req->gpu ? req->gpu : DEFAULT_GPU)) == NULL) {
    pm_error ("gpu '%s': no such GPU", req->gpu);
    return -1;
  }
  if ((pr = request_precision (req, ge, train)) == NULL) {
    pm_error ("precision '%s': expected fp32, amp-fp16, bf16, fp8, fp8-cs or tf32 in training, "
              "or a dtype (" INFER_NAMES_TEXT ") in inference", req->precision);
    return -1;
  }
  if (!gpu_has_units (&ge->gpu, pr->gemm) || !gpu_has_units (&ge->gpu, pr->other)) {
    pm_error ("precision %s: %s has no %s matrix units in gpus.d", pr->name, ge->name,
              dtype_name (gpu_has_units (&ge->gpu, pr->gemm) ? pr->other : pr->gemm));
    return -1;
  }
  if ((pred = predictor_find (&ctx->set, req->predictor ? req->predictor : PM_DEFAULT_PREDICTOR)) == NULL)
    return -1;
  if (model_cfg_open (&m, req->model) < 0)
    return -1;
  gpn = req->gpus_per_node > 0 ? (int) req->gpus_per_node : ge->gpu.gpus_per_node;
  strategy_init (&s);
  if (req->strategy && strategy_parse (&s, req->strategy, "strategy") < 0)
    goto out;
  if (strategy_resolve (&s, req->nodes, gpn, batch) < 0)
    goto out;
  /* the command line's defaults (cli/workload.c kernels_resolve) */
  if (attention_resolve ("attention", req->attention, &ge->gpu, pr, &flash) < 0)
    goto out;
  if (!s.kernels_set)
    s.kernels = default_kernels (&m, pr, train);
  if (strategy_check_attention (&s, "attention", req->attention) < 0)
    goto out;
  strategy_default_zero (&s, train);
  memset (&d, 0, sizeof d);
  if (req->struct_size >= offsetof (struct perfmod_request, engine) + sizeof req->engine &&
      req->engine) {
    const struct serve_engine *e = serve_engine_find (req->engine);
    if (e == NULL || train) {
      if (e)
        pm_error ("engine '%s': a serving engine's kernels are for mode inf", req->engine);
      else
        pm_error ("engine '%s': expected %s", req->engine, serve_engine_names);
      goto out;
    }
    d.engine = true;
    d.engine_name = e->name;
  }
  if (req->struct_size >= offsetof (struct perfmod_request, routing) + sizeof req->routing &&
      req->routing) {
    if (!d.engine) {
      pm_error ("routing '%s': a serving engine's router (give engine)", req->routing);
      goto out;
    }
    if (routing_parse ("routing", req->routing, &d.routing) < 0)
      goto out;
  }
  if (precision_check_experts (pr, m.experts, d.engine_name != NULL, "precision") < 0)
    goto out;
  d.s = &s;
  d.prec = pr;
  d.train = train;
  d.flash = flash;
  d.batch = batch;
  d.seq = seq;
  d.gpus_per_node = gpn;
  if (dist_predict (&ctx->set, pred, &m, &ge->gpu, &d, &r) < 0)
    goto out;
  memset ((char *) res + sizeof res->struct_size, 0, res->struct_size - sizeof res->struct_size);
  res->step_ms = r.step_ms;
  res->pipeline_ms = r.pipeline_ms;
  res->bubble = r.bubble;
  res->bubble_ms = r.bubble_ms;
  res->grads_ms = r.grads_ms;
  res->optimizer_ms = r.optimizer_ms;
  res->recompute_ms = r.recompute_ms;
  res->mfu = r.step_ms > 0 ? r.flops / (r.step_ms / 1e3) / perfmod_gpu_peak_flops (&ge->gpu, pr->gemm)
           : 0;
  res->tokens_per_s = r.step_ms > 0 ? (double) batch * (double) seq / (r.step_ms / 1e3) : 0;
  res->memory_total_gib = r.mem.total / PM_GIB;
  res->memory_weights_gib = r.mem.weights / PM_GIB;
  res->memory_gradients_gib = r.mem.gradients / PM_GIB;
  res->memory_optimizer_gib = r.mem.optimizer / PM_GIB;
  res->memory_activations_gib = r.mem.activations / PM_GIB;
  res->memory_kv_cache_gib = r.mem.kv_cache / PM_GIB;
  res->memory_reserve_gib = r.mem.reserve / PM_GIB;
  res->capacity_gib = r.mem.capacity / PM_GIB;
  res->oom = r.mem.oom;
  res->microbatches = r.microbatches;
  if (res->struct_size >= offsetof (struct perfmod_result, host_wait_ms) + sizeof res->host_wait_ms)
    res->host_wait_ms = r.host_ms;
  rc = 0;
out:
  model_cfg_free (&m);
  return rc;
}

int
perfmod_predict (perfmod_ctx *ctx, const struct perfmod_request *req,
                 struct perfmod_result *res, char *err, size_t errlen)
{
  int rc;
  if (call_check ("perfmod_predict", ctx, req, res, err, errlen) < 0)
    return -1;
  enter (ctx, err, errlen);
  rc = predict (ctx, req, res);
  leave ();
  return rc;
}

int
perfmod_search (perfmod_ctx *ctx, const struct perfmod_search_request *req,
                struct perfmod_search_result *res, char *err, size_t errlen)
{
  int rc;
  if (call_check ("perfmod_search", ctx, req, res, err, errlen) < 0)
    return -1;
  enter (ctx, err, errlen);
  rc = search_run (&ctx->set, &ctx->gpus, req, res);
  leave ();
  return rc == 0 ? 0 : -1;
}

int
perfmod_serve (perfmod_ctx *ctx, const struct perfmod_serve_request *req,
               struct perfmod_serve_result *res, char *err, size_t errlen)
{
  int rc;
  if (call_check ("perfmod_serve", ctx, req, res, err, errlen) < 0)
    return -1;
  enter (ctx, err, errlen);
  rc = serve_run (&ctx->set, &ctx->gpus, req, res, NULL);
  leave ();
  return rc < 0 ? -1 : 0;
}

void
perfmod_search_result_free (struct perfmod_search_result *res)
{
  if (res)
    search_result_free (res);
}
