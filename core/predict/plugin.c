/* plugin.c: the only place that calls dlopen: finds, checks and starts plugins; the host services. */
#include <config.h>

#include <dlfcn.h>
#include <pthread.h>
#include <math.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "internal.h"
#include "physics.h"

/* Per thread: perfmod search predicts on several. */
_Thread_local const char *pm_current_plugin;
_Thread_local char pm_plugin_errmsg[512];
static char input_fault[512];          /* the process's: any thread's fault ends the run in 2 */
static pthread_mutex_t input_fault_lock = PTHREAD_MUTEX_INITIALIZER;

static void __attribute__ ((format (printf, 1, 2)))
host_error (const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (pm_plugin_errmsg, sizeof pm_plugin_errmsg, fmt, ap);
  va_end (ap);
}

/* The first fault of an input file a plugin reads: the run ends in 2. */
static void
note_input_fault (void)
{
  pthread_mutex_lock (&input_fault_lock);
  if (input_fault[0] == '\0')
    snprintf (input_fault, sizeof input_fault, "%s", pm_plugin_errmsg);
  pthread_mutex_unlock (&input_fault_lock);
}

static void __attribute__ ((format (printf, 1, 2)))
host_input_error (const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (pm_plugin_errmsg, sizeof pm_plugin_errmsg, fmt, ap);
  va_end (ap);
  note_input_fault ();
}

bool
plugins_input_fault (void)
{
  pthread_mutex_lock (&input_fault_lock);
  bool fault = input_fault[0] != '\0';
  pthread_mutex_unlock (&input_fault_lock);
  return fault;
}

int
plugins_exit_status (int rc)
{
  if (input_fault[0] == '\0' || rc == EXIT_USAGE)
    return rc;
  /* a bad file a plugin did not need to fail the run is still refused */
  if (rc == 0)
    pm_error ("%s", input_fault);
  return EXIT_USAGE;
}

static void __attribute__ ((format (printf, 1, 2)))
host_log (const char *fmt, ...)
{
  va_list ap;
  if (!pm_verbose)
    return;
  va_start (ap, fmt);
  fprintf (stderr, "perfmod: %s: ", pm_current_plugin ? pm_current_plugin : "plugin");
  vfprintf (stderr, fmt, ap);
  fputc ('\n', stderr);
  va_end (ap);
}

static size_t
host_graph_size (const struct perfmod_graph *g)
{
  (void) g;
  return 0;
}

static struct perfmod_kernel *
host_graph_kernel (struct perfmod_graph *g, size_t i)
{
  (void) g;
  (void) i;
  return NULL;
}

static int
host_graph_add_comm (struct perfmod_graph *g, const char *collective, double bytes,
                     int group_size, int phase)
{
  (void) g; (void) collective; (void) bytes; (void) group_size; (void) phase;
  host_error ("graph transforms are not supported by this perfmod yet");
  return -1;
}

static void host_free (void *p) { free (p); }

static const char *
host_datadir (void)
{
  return pm_datadir ();
}

static struct perfmod_params *
host_params_load (const char *path)
{
  struct params *p = xmalloc (sizeof *p);
  struct timespec t0, t1;
  int rc;
  clock_gettime (CLOCK_MONOTONIC, &t0);
  /* The reason, which names the file (and line), becomes the plugin's
   * error: the core prints it once, in the line saying what failed. */
  pm_error_capture (pm_plugin_errmsg, sizeof pm_plugin_errmsg);
  rc = params_load (p, path);
  pm_error_capture (NULL, 0);
  if (rc < 0) {
    free (p);
    if (pm_plugin_errmsg[0] == '\0')
      host_error ("%s: cannot load the parameter file", path);
    note_input_fault ();
    return NULL;
  }
  clock_gettime (CLOCK_MONOTONIC, &t1);
  pm_debug ("%s: loaded in %.2f ms", path,
            (double) (t1.tv_sec - t0.tv_sec) * 1e3 + (double) (t1.tv_nsec - t0.tv_nsec) / 1e6);
  return (struct perfmod_params *) p;
}

static void
host_params_free (struct perfmod_params *pp)
{
  struct params *p = (struct params *) pp;
  if (p) {
    params_free (p);
    free (p);
  }
}

static const char *
host_params_get (const struct perfmod_params *p, const char *key)
{
  return params_get ((const struct params *) p, key);
}

static const double *
host_params_tensor (const struct perfmod_params *p, const char *name, size_t *rows, size_t *cols)
{
  const struct ptensor *t = params_tensor ((const struct params *) p, name);
  if (t == NULL)
    return NULL;
  if (rows)
    *rows = t->rows;
  if (cols)
    *cols = t->cols;
  return t->v;
}

/* A network and a one-row workspace. */
struct perfmod_mlp {
  struct mlp m;
  struct mlp_ws ws;
};
static pthread_t loader;         /* the thread that loads the networks */

static struct perfmod_mlp *
host_mlp_load (const struct perfmod_params *p, const char *prefix, int inputs, int outputs)
{
  struct perfmod_mlp *h = xmalloc (sizeof *h);
  int rc;
  pm_error_capture (pm_plugin_errmsg, sizeof pm_plugin_errmsg);
  rc = mlp_from_params (&h->m, (const struct params *) p, prefix, inputs, outputs);
  pm_error_capture (NULL, 0);
  if (rc < 0) {
    free (h);
    if (pm_plugin_errmsg[0] == '\0')
      host_error ("no usable network '%s' in the parameter file", prefix);
    note_input_fault ();
    return NULL;
  }
  mlp_ws_init (&h->ws, &h->m, 1);
  loader = pthread_self ();
  return h;
}

/* The thread that loaded a network evaluates it in the handle's
 * workspace; other threads (perfmod search's) each in their own, kept per
 * handle until the thread ends. */
struct thread_ws {
  const struct perfmod_mlp *h;
  struct mlp_ws ws;
};
struct thread_wss {
  struct thread_ws *v;
  size_t n;
};
static pthread_key_t ws_key;
static pthread_once_t ws_once = PTHREAD_ONCE_INIT;

static void
thread_wss_free (void *p)
{
  struct thread_wss *t = p;
  for (size_t i = 0; i < t->n; i++)
    mlp_ws_free (&t->v[i].ws);
  free (t->v);
  free (t);
}

static void
ws_key_init (void)
{
  pthread_key_create (&ws_key, thread_wss_free);
}

static struct mlp_ws *
thread_ws_of (struct perfmod_mlp *h)
{
  struct thread_wss *t;
  if (pthread_equal (pthread_self (), loader))
    return &h->ws;
  pthread_once (&ws_once, ws_key_init);
  if ((t = pthread_getspecific (ws_key)) == NULL) {
    t = xcalloc (1, sizeof *t);
    pthread_setspecific (ws_key, t);
  }
  for (size_t i = 0; i < t->n; i++)
    if (t->v[i].h == h)
      return &t->v[i].ws;
  t->v = xrealloc (t->v, (t->n + 1) * sizeof *t->v);
  t->v[t->n].h = h;
  mlp_ws_init (&t->v[t->n].ws, &h->m, 1);
  return &t->v[t->n++].ws;
}

static void
host_mlp_eval (struct perfmod_mlp *h, const double *x, double *y)
{
  mlp_forward (&h->m, thread_ws_of (h), x, 1, y);
}

static void
host_mlp_free (struct perfmod_mlp *h)
{
  if (h) {
    mlp_ws_free (&h->ws);
    mlp_free (&h->m);
    free (h);
  }
}

const struct perfmod_host pm_host = {
  .struct_size = sizeof (struct perfmod_host),
  .version = PACKAGE_VERSION,
  .error = host_error,
  .log = host_log,
  .alloc = xmalloc,
  .free = host_free,
  .graph_size = host_graph_size,
  .graph_kernel = host_graph_kernel,
  .graph_add_comm = host_graph_add_comm,
  .datadir = host_datadir,
  .params_load = host_params_load,
  .params_free = host_params_free,
  .params_get = host_params_get,
  .params_tensor = host_params_tensor,
  .mlp_load = host_mlp_load,
  .mlp_eval = host_mlp_eval,
  .mlp_free = host_mlp_free,
  .input_error = host_input_error,
  .estimate_size = sizeof (struct perfmod_estimate),
};

const char *
plugin_kind_name (int kind)
{
  return kind == PERFMOD_PLUGIN_PREDICTOR ? "predictor"
       : kind == PERFMOD_PLUGIN_PARALLELISM ? "parallelism" : "unknown";
}

/* Check a plugin's struct; NULL if acceptable, else why not. */
static const char *
check_plugin (const struct perfmod_plugin *p, const char *stem, char *buf, size_t len)
{
  if (p->abi_version != PERFMOD_ABI_VERSION) {
    snprintf (buf, len, "built for plugin ABI version %u, this perfmod speaks version %d; rebuild it",
              p->abi_version, PERFMOD_ABI_VERSION);
    return buf;
  }
  if (p->struct_size < offsetof (struct perfmod_plugin, predict))
    return "struct perfmod_plugin is truncated";
  if (p->name == NULL || strcmp (p->name, stem) != 0) {
    snprintf (buf, len, "declares the name '%s', but its file is named '%s'",
              p->name ? p->name : "(null)", stem);
    return buf;
  }
  if (p->kind == PERFMOD_PLUGIN_PREDICTOR) {
    if (p->predict == NULL)
      return "predictor without the mandatory predict callback";
  }
  else if (p->kind == PERFMOD_PLUGIN_PARALLELISM) {
    if (p->explain == NULL)
      return "parallelism plugin without the mandatory explain callback";
    if (p->dimension == NULL)
      return "parallelism plugin without a dimension";
  }
  else
    return "unknown plugin kind";
  return NULL;
}

static int
load_one (struct plugin_set *set, const char *path)
{
  char *tmp = xstrdup (path), *stem = basename (tmp), buf[256];
  const char *why;
  void *dl;
  perfmod_plugin_init_fn init;
  const struct perfmod_plugin *p;
  struct plugin pl;

  stem[strlen (stem) - 3] = '\0';        /* drop ".so" */
  dl = dlopen (path, RTLD_NOW | RTLD_LOCAL);
  if (dl == NULL) {
    pm_error ("%s: cannot load plugin: %s", path, dlerror ());
    free (tmp);
    return -1;
  }
  *(void **) (&init) = dlsym (dl, "perfmod_plugin_init");
  if (init == NULL) {
    pm_error ("%s: not a perfmod plugin (no perfmod_plugin_init)", path);
    dlclose (dl);
    free (tmp);
    return -1;
  }
  p = init ();
  why = p == NULL ? "perfmod_plugin_init returned NULL" : check_plugin (p, stem, buf, sizeof buf);
  if (why) {
    pm_error ("%s: refused: %s", path, why);
    dlclose (dl);
    free (tmp);
    return -1;
  }
  /* A later directory's plugin of the same name replaces an earlier one. */
  for (size_t i = 0; i < set->n; i++)
    if (strcmp (set->v[i].p.name, p->name) == 0) {
      pm_debug ("%s overrides %s", path, set->v[i].path);
      dlclose (set->v[i].dl);
      free (set->v[i].path);
      memmove (&set->v[i], &set->v[i + 1], (set->n - i - 1) * sizeof *set->v);
      set->n--;
      break;
    }
  memset (&pl, 0, sizeof pl);
  memcpy (&pl.p, p, p->struct_size < sizeof pl.p ? p->struct_size : sizeof pl.p);
  pl.path = xstrdup (path);
  pl.dl = dl;
  if (plugin_start (&pl) < 0) {
    pm_error ("%s: refused: its init failed", path);
    dlclose (dl);
    free (pl.path);
    free (tmp);
    return -1;
  }
  set->v = xrealloc (set->v, (set->n + 1) * sizeof *set->v);
  set->v[set->n++] = pl;
  free (tmp);
  return 0;
}

int
plugins_load (struct plugin_set *set, char *const *dirs)
{
  int refused = 0;
  for (; *dirs; dirs++) {
    char **files = list_dir (*dirs, ".so");
    if (files == NULL) {
      pm_debug ("plugin directory %s is missing", *dirs);
      continue;
    }
    for (char **f = files; *f; f++)
      if (load_one (set, *f) < 0)
        refused++;
    strv_free (files);
  }
  return refused;
}

struct plugin *
plugins_find (struct plugin_set *set, const char *name, int kind)
{
  for (size_t i = 0; i < set->n; i++)
    if (strcmp (set->v[i].p.name, name) == 0 && (kind == 0 || set->v[i].p.kind == kind))
      return &set->v[i];
  return NULL;
}

struct plugin *
predictor_find (struct plugin_set *set, const char *name)
{
  struct plugin *pl = plugins_find (set, name, PERFMOD_PLUGIN_PREDICTOR);
  if (pl == NULL)
    pm_error ("--predictor '%s': no such predictor plugin (see perfmod plugins)", name);
  return pl;
}

/* Plugins keep their state in their own statics, and dlopen gives two
 * plugin sets (two libperfmod contexts) the same object: they share one
 * started instance, stopped when the last set lets it go. */
struct instance {
  void *dl;
  void *state;
  int refs;              /* sets that started it */
};
static struct instance *instances;
static size_t ninstances;
static pthread_mutex_t instances_lock = PTHREAD_MUTEX_INITIALIZER;

static struct instance *
instance_of (void *dl)
{
  for (size_t i = 0; i < ninstances; i++)
    if (instances[i].dl == dl)
      return &instances[i];
  instances = xrealloc (instances, (ninstances + 1) * sizeof *instances);
  memset (&instances[ninstances], 0, sizeof *instances);
  instances[ninstances].dl = dl;
  return &instances[ninstances++];
}

int
plugin_start (struct plugin *pl)
{
  struct instance *in;
  int rc = 0;
  if (pl->initialised)
    return 0;
  pthread_mutex_lock (&instances_lock);
  in = instance_of (pl->dl);
  if (in->refs == 0 && pl->p.init) {
    pm_current_plugin = pl->p.name;
    pm_plugin_errmsg[0] = '\0';
    rc = pl->p.init (&pm_host, &in->state);
    pm_current_plugin = NULL;
    if (rc < 0)
      pm_error ("%s: init failed: %s", pl->p.name,
                pm_plugin_errmsg[0] ? pm_plugin_errmsg : "no reason given");
  }
  if (rc == 0) {
    in->refs++;
    pl->state = in->state;
    pl->initialised = true;
  }
  pthread_mutex_unlock (&instances_lock);
  return rc < 0 ? -1 : 0;
}

/* A set lets its started plugin go: the last one stops it. */
static void
plugin_stop (struct plugin *pl)
{
  struct instance *in;
  pthread_mutex_lock (&instances_lock);
  in = instance_of (pl->dl);
  if (--in->refs == 0) {
    if (pl->p.fini)
      pl->p.fini (in->state);
    in->state = NULL;
  }
  pthread_mutex_unlock (&instances_lock);
  pl->initialised = false;
}

/* A MOE kernel as the kernels it stands for (physics.h's work): the
 * copy of the rank's assignments into expert order, the first grouped
 * GEMM (a batch of the reached experts' products), the activation, the
 * second, and the weighted sum back to the tokens.  Returns the count. */
static int
moe_parts (const struct perfmod_kernel *k, struct perfmod_kernel part[5])
{
  double a, r, te, d = (double) k->n, f = (double) k->k, fc1 = phys_moe_fc1 (k);
  double ea = k->elem_bytes < 2 ? 2 : k->elem_bytes, topk = phys_moe_topk (k);
  int act = k->dtype == PERFMOD_DTYPE_FP8 ? PERFMOD_DTYPE_BF16 : k->dtype;
  phys_moe_work (k, &a, &r, &te);
  for (int i = 0; i < 5; i++) {
    memset (&part[i], 0, sizeof part[i]);
    part[i].struct_size = sizeof part[i];
    part[i].isolated = k->isolated;
  }
  part[0].kclass = part[4].kclass = PERFMOD_KERNEL_MEMORY;
  part[0].op = "moe_permute";
  part[0].bytes = 2 * a * d * ea;
  kernel_set_dtype (&part[0], act);
  part[1].kclass = part[3].kclass = PERFMOD_KERNEL_BMM;
  part[1].op = part[3].op = "bmm";
  part[1].b = part[3].b = (int64_t) r;
  part[1].m = part[3].m = (int64_t) ceil (te - 1e-9);
  part[1].n = k->n, part[1].k = (int64_t) fc1;
  part[3].n = k->k, part[3].k = k->n;
  kernel_set_dtype (&part[1], k->dtype);
  kernel_set_dtype (&part[3], k->dtype);
  /* weight-only experts (MXFP4): the products read them as narrow */
  if (PHYS_HAS (k, weight_bytes))
    part[1].weight_bytes = part[3].weight_bytes = k->weight_bytes;
  part[2].kclass = PERFMOD_KERNEL_ELEMENTWISE;
  part[2].op = fc1 > f ? "silu" : "gelu";
  part[2].b = (int64_t) ceil (a - 1e-9);
  part[2].h = k->k;
  kernel_set_dtype (&part[2], act);
  part[2].mem_per_output = part[2].own_mem_per_output = (fc1 / f + 1) * part[2].elem_bytes;
  part[2].ops_per_output = 5;
  part[4].op = "moe_combine";
  part[4].bytes = (a + a / topk) * d * ea;
  kernel_set_dtype (&part[4], act);
  return 5;
}

static int plugin_estimate_own (struct plugin *pl, const struct perfmod_kernel *k,
                                const struct perfmod_gpu *gpu, struct perfmod_estimate *e);

/* A predictor with no model of a MoE layer (it refuses the MOE kernel
 * for another reason than a bad input file) predicts the layer's parts. */
int
plugin_estimate (struct plugin *pl, const struct perfmod_kernel *k, const struct perfmod_gpu *gpu,
                 struct perfmod_estimate *e)
{
  struct perfmod_kernel part[5];
  struct perfmod_estimate pe;
  int n, rc;
  if ((rc = plugin_estimate_own (pl, k, gpu, e)) == 0 || k->kclass != PERFMOD_KERNEL_MOE ||
      plugins_input_fault ())
    return rc;
  n = moe_parts (k, part);
  memset (e, 0, sizeof *e);
  bool interval = true;
  for (int i = 0; i < n; i++) {
    if (plugin_estimate_own (pl, &part[i], gpu, &pe) < 0)
      return -1;
    e->seconds += pe.seconds;
    e->spread += pe.spread;
    /* the parts' errors taken as one (a GPU's bias moves them together):
     * the bounds add; none unless every part has one */
    interval = interval && pe.high > 0;
    e->low += pe.low;
    e->high += pe.high;
  }
  if (!interval)
    e->low = e->high = 0;
  e->basis = "the MoE layer's parts";
  return 0;
}

static int
plugin_estimate_own (struct plugin *pl, const struct perfmod_kernel *k,
                     const struct perfmod_gpu *gpu, struct perfmod_estimate *e)
{
  int rc;
  pm_current_plugin = pl->p.name;
  pm_plugin_errmsg[0] = '\0';
  memset (e, 0, sizeof *e);
  rc = pl->p.estimate ? pl->p.estimate (pl->state, k, gpu, e)
     : pl->p.predict (pl->state, k, gpu, &e->seconds);
  pm_current_plugin = NULL;
  if (rc < 0) {
    if (pm_plugin_errmsg[0] == '\0')
      snprintf (pm_plugin_errmsg, sizeof pm_plugin_errmsg, "no reason given");
    return -1;
  }
  if (!isfinite (e->seconds) || e->seconds < 0) {
    snprintf (pm_plugin_errmsg, sizeof pm_plugin_errmsg, "returned an invalid time (%g s)",
              e->seconds);
    return -1;
  }
  if (!isfinite (e->spread) || e->spread < 0) {
    snprintf (pm_plugin_errmsg, sizeof pm_plugin_errmsg, "returned an invalid spread (%g s)",
              e->spread);
    return -1;
  }
  if ((e->low != 0 || e->high != 0) &&
      !(isfinite (e->high) && e->low > 0 && e->low <= e->seconds && e->seconds <= e->high)) {
    snprintf (pm_plugin_errmsg, sizeof pm_plugin_errmsg,
              "returned an invalid interval (%g to %g s around %g s)", e->low, e->high, e->seconds);
    return -1;
  }
  /* perfmod calibrate's correction of this predictor on this GPU, before the floor */
  if (pl->calib) {
    double f = calib_factor (pl->calib, gpu, k->kclass, k->dtype, e->seconds,
                             calib_intensity (k, gpu));
    e->seconds *= f;
    e->spread *= f;
    e->low *= f;
    e->high *= f;
  }
  /* never faster than the GPU allows (physics.h): a prediction under the
   * compute peak or the bandwidth is taken at that floor, and said.  fp32
   * kernels are left as predicted: they are NeuSight's published runs,
   * which the reproduction tables match to the digit with its baselines'
   * own arithmetic (roofline:units=neusight, its linear fits). */
  {
    struct phys_cost pc;
    double fl;
    if (k->dtype != PERFMOD_DTYPE_FP32 && k->kclass >= 0 && k->kclass < 16 &&
        phys_cost_of (k, gpu, &pc) == 0 && e->seconds < (fl = phys_floor (&pc, gpu)) * 0.999) {
      e->seconds = fl;
      if (e->high > 0) {        /* the interval keeps to what the GPU allows too */
        e->low = fmax (e->low, fl);
        e->high = fmax (e->high, fl);
      }
      __atomic_fetch_or (&pl->floored, 1u << k->kclass, __ATOMIC_RELAXED);
    }
  }
  /* outside the predictor's own model: remembered for the note and the mark */
  if (!plugin_covers (pl, k->kclass, k->dtype))
    __atomic_fetch_or (&pl->fallback[k->dtype], 1u << k->kclass, __ATOMIC_RELAXED);
  return 0;
}

bool
plugin_covers (struct plugin *pl, int kclass, int dtype)
{
  if (pl->p.dtypes == NULL || kclass < 0 || kclass >= 16 || dtype < 0 ||
      dtype >= PERFMOD_DTYPE_NTYPES)
    return true;
  if (!(pl->dtypes_asked & 1u << kclass)) {
    pm_current_plugin = pl->p.name;
    pl->dtypes_of[kclass] = pl->p.dtypes (pl->state, kclass);
    pm_current_plugin = NULL;
    pl->dtypes_asked |= 1u << kclass;
  }
  return (pl->dtypes_of[kclass] >> dtype) & 1u;
}

bool
plugin_fell_back (const struct plugin *pl)
{
  for (int d = 0; d < PERFMOD_DTYPE_NTYPES; d++)
    if (pl->fallback[d])
      return true;
  return false;
}

/* "fp8 FC, BMM and bf16 EW, Softmax, LN kernels (it covers fp32)"; and
 * the kernels taken at the physical floor. */
void
plugins_note_fallbacks (const struct plugin_set *set, FILE *fp)
{
  for (size_t i = 0; i < set->n; i++) {
    const struct plugin *pl = &set->v[i];
    unsigned covered = 0;
    bool first = true;
    if (pl->floored) {
      fprintf (fp, "perfmod: note: %s predicted some ", pl->p.name);
      for (int c = 0; c < 16; c++)
        if (pl->floored & 1u << c) {
          fprintf (fp, "%s%s", first ? "" : ", ", kclass_name (c));
          first = false;
        }
      fprintf (fp, " kernels faster than the GPU's peak or memory bandwidth allows: they are "
               "taken at that floor\n");
      first = true;
    }
    if (!plugin_fell_back (pl))
      continue;
    /* Element-wise, softmax and norm kernels alone (tile-mlp's bf16 softmax in every
     * training step): said once, by the tables' * and JSON's dtype_fallback, not on
     * every run; -v says it here too.  A GEMM or attention outside the model is said. */
    unsigned classes = 0, vector = 1u << PERFMOD_KERNEL_ELEMENTWISE | 1u << PERFMOD_KERNEL_SOFTMAX
                                   | 1u << PERFMOD_KERNEL_LAYERNORM;
    for (int d = 0; d < PERFMOD_DTYPE_NTYPES; d++)
      classes |= pl->fallback[d];
    if ((classes & ~vector) == 0 && pm_verbose == 0)
      continue;
    fprintf (fp, "perfmod: note: %s has no model of its own for this run's ", pl->p.name);
    for (int d = 0; d < PERFMOD_DTYPE_NTYPES; d++) {
      bool firstc = true;
      if (!pl->fallback[d])
        continue;
      fprintf (fp, "%s%s ", first ? "" : " and ", dtype_name (d));
      first = false;
      for (int c = 0; c < 16; c++)
        if (pl->fallback[d] & 1u << c) {
          fprintf (fp, "%s%s", firstc ? "" : ", ", kclass_name (c));
          firstc = false;
          covered |= pl->dtypes_of[c];
        }
    }
    fprintf (fp, " kernels (it covers");
    first = true;
    for (int d = 0; d < PERFMOD_DTYPE_NTYPES; d++)
      if (covered & 1u << d) {
        fprintf (fp, "%s%s", first ? " " : ", ", dtype_name (d));
        first = false;
      }
    fprintf (fp, "%s): it predicts them with the model it has, an estimate outside what it "
             "learned (marked * in tables)\n", first ? " none" : "");
  }
}

int
plugin_predict (struct plugin *pl, const struct perfmod_kernel *k, const struct perfmod_gpu *gpu,
                double *seconds)
{
  struct perfmod_estimate e;
  int rc = plugin_estimate (pl, k, gpu, &e);
  *seconds = rc == 0 ? e.seconds : 0;
  return rc;
}

int
plugin_configure (struct plugin_set *set, const char *opt)
{
  const char *colon = strchr (opt, ':'), *eq = colon ? strchr (colon, '=') : NULL;
  struct plugin *pl = NULL;
  char *name, *key;
  int rc = -1;

  if (colon == NULL || eq == NULL || colon == opt || eq == colon + 1) {
    pm_error ("--plugin-opt '%s': expected NAME:KEY=VALUE", opt);
    return -1;
  }
  name = xasprintf ("%.*s", (int) (colon - opt), opt);
  key = xasprintf ("%.*s", (int) (eq - colon - 1), colon + 1);
  for (size_t i = 0; i < set->n; i++)
    if (strcmp (set->v[i].p.name, name) == 0)
      pl = &set->v[i];
  if (pl == NULL)
    pm_error ("--plugin-opt '%s': no plugin '%s' (see perfmod plugins)", opt, name);
  else {
    bool known = false;
    for (const char *const *k = pl->p.config_keys; k && *k; k++)
      known |= strcmp (*k, key) == 0;
    if (!known || pl->p.config == NULL)
      pm_error ("--plugin-opt '%s': %s accepts no key '%s'", opt, name, key);
    else {
      pm_current_plugin = pl->p.name;
      pm_plugin_errmsg[0] = '\0';
      rc = pl->p.config (pl->state, key, eq + 1);
      pm_current_plugin = NULL;
      if (rc < 0)
        pm_error ("--plugin-opt '%s': %s", opt, pm_plugin_errmsg[0] ? pm_plugin_errmsg
                                                                   : "refused by the plugin");
    }
  }
  free (name);
  free (key);
  return rc < 0 ? -1 : 0;
}

void
plugins_unload (struct plugin_set *set)
{
  for (size_t i = 0; i < set->n; i++) {
    if (set->v[i].initialised)
      plugin_stop (&set->v[i]);
    dlclose (set->v[i].dl);
    free (set->v[i].path);
  }
  free (set->v);
  memset (set, 0, sizeof *set);
}

char **
plugin_search_dirs (char *const *extra, size_t n)
{
  const char *env = getenv ("PERFMOD_PLUGIN_DIR");
  char **dirs = xcalloc (n + 2, sizeof *dirs);
  dirs[0] = xstrdup (env && *env ? env : PLUGINDIR);
  for (size_t i = 0; i < n; i++)
    dirs[i + 1] = xstrdup (extra[i]);
  return dirs;
}

/* NeuSight's tables are reproduced unit for unit: its roofline counts
 * matrix bytes in 2^30 against GB/s.  Only the shipped roofline has the
 * key; a set without it is left as it is. */
void
plugins_neusight_units (struct plugin_set *set)
{
  struct plugin *pl = plugins_find (set, "roofline", PERFMOD_PLUGIN_PREDICTOR);
  if (pl && pl->p.config && pl->p.config_keys && strcmp (pl->p.config_keys[0], "units") == 0)
    pl->p.config (pl->state, "units", "neusight");
}

int
plugins_open (struct plugin_set *set, char *const *paths, size_t npaths, char *const *opts,
              size_t nopts)
{
  char **dirs;
  /* the installed directory may be missing; one the user names may not */
  for (size_t i = 0; i < npaths; i++) {
    struct stat st;
    if (stat (paths[i], &st) < 0 || !S_ISDIR (st.st_mode)) {
      pm_error ("--plugin-path '%s': not a directory", paths[i]);
      return -1;
    }
  }
  dirs = plugin_search_dirs (paths, npaths);
  plugins_load (set, dirs);
  strv_free (dirs);
  for (size_t i = 0; i < nopts; i++)
    if (plugin_configure (set, opts[i]) < 0)
      return -1;
  return 0;
}
