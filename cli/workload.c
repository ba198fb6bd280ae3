/* workload.c: the options resolved into a workload: the model, the GPU, the precision, the kernels, the strategy, and the assumed: line. */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

void
assume (struct cli *c, const char *what)
{
  char *s = c->assumed ? xasprintf ("%s, %s", c->assumed, what) : xstrdup (what);
  free (c->assumed);
  c->assumed = s;
}

void
assume_replace (struct cli *c, const char *old, const char *what)
{
  char *at = c->assumed ? strstr (c->assumed, old) : NULL;
  size_t len = strlen (old);
  if (at == NULL)
    return;
  if (what) {
    char *s = xasprintf ("%.*s%s%s", (int) (at - c->assumed), c->assumed, what, at + len);
    free (c->assumed);
    c->assumed = s;
    return;
  }
  /* removed with the ", " that joins it to the others */
  if (at[len] == ',' && at[len + 1] == ' ')
    len += 2;
  else if (at > c->assumed + 1 && at[-2] == ',')
    at -= 2, len += 2;
  memmove (at, at + len, strlen (at + len) + 1);
  if (c->assumed[0] == '\0') {  /* nothing left: none, not an empty one */
    free (c->assumed);
    c->assumed = NULL;
  }
}

static int
resolve_model (struct cli *c, struct model_cfg *m)
{
  const char *name = c->model;
  if (name == NULL) {
    name = DEFAULT_MODEL;
    assume (c, "--model " DEFAULT_MODEL);
  }
  if (model_cfg_open (m, name) < 0)
    return -1;
  /* --layers applies to a built model too (it counts an imported graph's
   * repeats otherwise); the encoder-decoder's two stacks are not one count */
  if (c->layers > 0 && c->opgraph == NULL) {
    if (m->family == FAM_SWITCH) {
      pm_error ("--layers: %s has an encoder and a decoder stack; give its config instead",
                m->name);
      model_cfg_free (m);
      return -1;
    }
    model_cfg_set_layers (m, c->layers);
  }
  /* learned position embeddings end at max_pos: a longer sequence has no
   * model to predict (rotary ones extrapolate and are let through) */
  if (c->seq > 0 && m->max_pos > 0 && c->seq > m->max_pos &&
      (m->family == FAM_GPT2 || m->family == FAM_OPT || m->family == FAM_BERT)) {
    pm_error ("--seq %lld: %s has %lld learned positions", (long long) c->seq, m->name,
              (long long) m->max_pos);
    model_cfg_free (m);
    return -1;
  }
  return 0;
}

/* --strategy SPEC or PRESET, fitted to --nodes x --gpus-per-node and the batch. */
int
strategy_load (const struct cli *c, struct strategy *s, int gpn, int64_t batch)
{
  strategy_init (s);
  if (c->strategy && strchr (c->strategy, '=') == NULL) {
    struct preset_db pdb;
    const struct preset *p;
    char *dir = xasprintf ("%s/strategies.d", pm_datadir ()), *where;
    int rc = preset_db_load (&pdb, dir);
    free (dir);
    if (rc < 0)
      return -1;
    p = preset_db_find (&pdb, c->strategy);
    if (p == NULL) {
      pm_error ("--strategy '%s': no such preset (see perfmod strategies) and not KEY=VALUE",
                c->strategy);
      preset_db_free (&pdb);
      return -1;
    }
    where = xasprintf ("%s:%d", p->file, p->line);
    rc = strategy_parse (s, p->spec, where);
    free (where);
    preset_db_free (&pdb);
    if (rc < 0)
      return -1;
  }
  else if (c->strategy && strategy_parse (s, c->strategy, "--strategy") < 0)
    return -1;
  int64_t nodes = c->nodes ? c->nodes : 1, gpus;
  if (!ck_mul64 (nodes, gpn, &gpus) || gpus > PM_MAX_GPUS) {
    pm_error ("--nodes %lld x --gpus-per-node %d: more than %d GPUs", (long long) nodes, gpn,
              PM_MAX_GPUS);
    return -1;
  }
  return strategy_resolve (s, c->nodes, gpn, batch ? batch : 1);
}

void
workload_free (struct workload *w)
{
  if (w->have_graph)
    graph_free (&w->g);
  model_cfg_free (&w->m);
  gpu_db_free (&w->gpus);
}

/* The run's precision: --precision (training), --dtype (inference, or the
 * training precision of that name), else what users run on the GPU;
 * fp32 for an imported trace, as NeuSight traced fp32 runs.  A given one
 * the GPU has no units for is refused. */
static int
precision_resolve (struct cli *c, struct workload *w, int dtype)
{
  const char *opt = c->precision ? "--precision" : "--dtype";
  const char *val = c->precision ? c->precision : c->dtype;
  char *what = NULL;
  if (c->precision)
    w->prec = precision_train (c->precision);
  else if (c->dtype) {
    w->prec = w->train ? precision_of_dtype (dtype, true) : precision_infer_named (c->dtype);
    if (strcmp (w->prec->name, c->dtype) != 0)
      what = xasprintf ("--precision %s (--dtype %s in training)", w->prec->name, c->dtype);
  }
  else if (c->opgraph) {
    w->prec = precision_of_dtype (PERFMOD_DTYPE_FP32, w->train);
    what = xasprintf ("%s fp32 (NeuSight's traces are of fp32 runs)",
                      w->train ? "--precision" : "--dtype");
  }
  else {
    w->prec = precision_of_dtype (default_dtype (&w->ge->gpu), w->train);
    what = xasprintf ("%s %s (default for %s)", w->train ? "--precision" : "--dtype",
                      w->prec->name, c->gpu);
  }
  if (what) {
    assume (c, what);
    free (what);
  }
  for (int i = 0; i < 2 && val; i++) {
    int d = i ? w->prec->other : w->prec->gemm;
    if (!gpu_has_units (&w->ge->gpu, d)) {
      pm_error ("%s %s: %s has no %s matrix units in gpus.d", opt, val, w->ge->name,
                dtype_name (d));
      return -1;
    }
  }
  return 0;
}

/* The attention kernel and whose layer a built graph runs.  Fused
 * attention (FlashAttention, cuDNN's, PyTorch's SDPA) needs 16-bit
 * attention on a GPU of the Ampere generation or later, which gpus.d
 * tells by its bf16 matrix units; it is the default there.  A mixed-
 * precision training step of GPT, Llama or Mixtral is the one
 * Megatron-Core runs with Transformer Engine; the rest run the eager
 * PyTorch modules (Hugging Face's, as NeuSight traced them). */
static int
kernels_resolve (struct cli *c, struct workload *w)
{
  bool can = flash_supported (&w->ge->gpu, w->prec);
  if (attention_resolve ("--attention", c->attention, &w->ge->gpu, w->prec, &w->flash) < 0)
    return -1;
  w->kernels = default_kernels (&w->m, w->prec, w->train);
  if (c->opgraph)
    return 0;                    /* an imported graph runs the kernels it traced */
  if (c->attention == NULL)
    assume (c, w->flash ? "--attention flash" : can ? "--attention unfused"
                        : "--attention unfused (fused attention needs bf16/fp16 on a GPU with "
                          "bf16 matrix units)");
  if (w->train)
    assume (c, w->kernels == KERNELS_TE ? KERNELS_ASSUMED_TE : KERNELS_ASSUMED_EAGER);
  return 0;
}

/* Resolve the options into a workload; an exit status on failure (the
 * workload is then freed). */
int
workload_load (struct cli *c, struct workload *w)
{
  int dtype = PERFMOD_DTYPE_FP32;
  memset (w, 0, sizeof *w);
  if (c->mode == NULL) {
    c->mode = "inf";
    assume (c, "--mode inf");
  }
  if (strcmp (c->mode, "inf") != 0 && strcmp (c->mode, "train") != 0) {
    pm_error ("--mode '%s': expected inf or train", c->mode);
    return EXIT_USAGE;
  }
  w->train = strcmp (c->mode, "train") == 0;
  if (c->dtype && strcmp (c->dtype, "mxfp4") == 0) {
    if (w->train) {
      pm_error ("--dtype mxfp4: a checkpoint's MXFP4 experts are modelled for inference and "
                "serving (an engine's MoE kernel widens them), not training");
      return EXIT_USAGE;
    }
    dtype = PERFMOD_DTYPE_BF16;   /* the GEMMs' (precision_resolve takes its name) */
  }
  else if (c->dtype && (dtype = dtype_parse (c->dtype)) < 0) {
    pm_error ("--dtype '%s': expected %s", c->dtype,
              w->train ? DTYPE_NAMES_TEXT : INFER_NAMES_TEXT);
    return EXIT_USAGE;
  }
  if (c->dtype && w->train && precision_of_dtype (dtype, true) == NULL) {
    pm_error ("--dtype %s: training is modelled in fp32, tf32, fp16, bf16 and fp8 "
              "(Transformer Engine's per-tensor recipe); %s is modelled for inference and "
              "serving", c->dtype, c->dtype);
    return EXIT_USAGE;
  }
  if (c->precision && precision_train (c->precision) == NULL) {
    pm_error ("--precision '%s': expected fp32, amp-fp16, bf16, fp8 or fp8-cs (or tf32: fp32 with TF32 "
              "GEMMs)", c->precision);
    return EXIT_USAGE;
  }
  if (c->precision && !w->train) {
    pm_error ("--precision %s: a training precision (--mode train); inference takes --dtype",
              c->precision);
    return EXIT_USAGE;
  }
  if (c->precision && c->dtype &&
      precision_of_dtype (dtype, true) != precision_train (c->precision)) {
    pm_error ("--dtype %s and --precision %s disagree: give training its --precision alone",
              c->dtype, c->precision);
    return EXIT_USAGE;
  }
  if (strcmp (c->format, "table") && strcmp (c->format, "csv") && strcmp (c->format, "json")) {
    pm_error ("--format '%s': expected table, csv or json", c->format);
    return EXIT_USAGE;
  }
  if (gpu_db_load_data (&w->gpus) < 0)
    return EXIT_USAGE;
  bool gpu_default = c->gpu == NULL;
  if (gpu_default)
    c->gpu = DEFAULT_GPU;
  w->ge = gpu_db_find (&w->gpus, c->gpu);
  if (w->ge == NULL) {
    pm_error ("--gpu '%s': no such GPU (see perfmod gpus)", c->gpu);
    goto fail;
  }
  /* A default or an alias: say which gpus.d section it resolved to. */
  if (gpu_default || !name_eq (c->gpu, w->ge->name)) {
    char *s = name_eq (c->gpu, w->ge->name) ? xasprintf ("--gpu %s", c->gpu)
                                            : xasprintf ("--gpu %s = %s", c->gpu, w->ge->name);
    assume (c, s);
    free (s);
  }
  if (precision_resolve (c, w, dtype) < 0)
    goto fail;
  if (c->opgraph == NULL || c->model != NULL || c->explain) {
    if (resolve_model (c, &w->m) < 0)
      goto fail;
    w->have_model = true;
  }
  if (kernels_resolve (c, w) < 0)
    goto fail;
  if (precision_check_experts (w->prec, w->have_model ? w->m.experts : 0,
                               c->engine_name != NULL && c->opgraph == NULL, "--dtype") < 0)
    goto fail;
  if (c->opgraph && (c->engine || c->fusion)) {
    pm_error ("%s with --opgraph: a traced graph's kernels are the ones it recorded",
              c->engine ? "--engine" : "--fusion");
    goto fail;
  }
  if (c->opgraph) {
    int64_t layers = c->layers ? c->layers : w->have_model ? w->m.layers : 1;
    if (opgraph_import (&w->g, c->opgraph, layers) < 0)
      goto fail;
    if (w->train) {              /* a training step needs the trace's backward */
      size_t bw = 0;
      for (size_t i = 0; i < w->g.n; i++)
        bw += w->g.nodes[i].nops[PHASE_BW] + w->g.nodes[i].nops[PHASE_ACC];
      if (bw == 0) {
        pm_error ("--mode train: %s has no backward ops (BwOps and AccOps are empty in every "
                  "row): an inference trace; use --mode inf", c->opgraph);
        graph_free (&w->g);
        goto fail;
      }
    }
    if (!w->have_model && c->layers == 0 && w->g.repeat == 1 && w->g.layer_end == 0)
      pm_debug ("%s: no --model or --layers: the graph is taken as complete", c->opgraph);
  }
  else {
    if (c->batch == 0) {
      c->batch = DEFAULT_BATCH;
      assume (c, "--batch 4");
    }
    if (c->seq == 0) {
      c->seq = DEFAULT_SEQ;
      assume (c, "--seq 1024");
    }
    struct build_options bo = { .batch = c->batch, .seq = c->seq, .train = w->train,
                                .fusion = c->fusion, .flash = w->flash,
                                .te = w->kernels == KERNELS_TE, .engine = c->engine,
                                .engine_name = c->engine_name, .routing = c->routing };
    if (graph_build (&w->g, &w->m, &bo) < 0)
      goto fail;
  }
  w->have_graph = true;
  w->batch = c->batch ? c->batch : w->g.batch;
  w->seq = c->seq ? c->seq : w->g.seq;
  return 0;
fail:
  workload_free (w);
  return EXIT_USAGE;
}

/* --explain's text: after the table, or on stderr so that CSV and JSON
 * on stdout stay machine-readable. */
FILE *
explain_stream (const struct cli *c)
{
  return strcmp (c->format, "table") == 0 ? stdout : stderr;
}

/* The run's options for a prediction under strategy s. */
void
dist_options_init (struct dist_options *o, const struct cli *c, const struct workload *w,
                   const struct strategy *s, int gpn)
{
  memset (o, 0, sizeof *o);
  o->s = s;
  o->prec = w->prec;
  o->train = w->train;
  o->fusion = c->fusion;
  o->engine = c->engine;
  o->engine_name = c->engine_name;
  o->routing = c->routing;
  o->flash = w->flash;
  o->batch = w->batch;
  o->seq = w->seq;
  o->gpus_per_node = gpn;
}

/* fp's contents from its start into *text (NUL-terminated) and *len: 0, or -1 with errno. */
static int
read_whole (FILE *fp, char **text, size_t *len)
{
  long n;
  if (fseek (fp, 0, SEEK_END) != 0 || (n = ftell (fp)) < 0 || fseek (fp, 0, SEEK_SET) != 0)
    return -1;
  *text = xmalloc ((size_t) n + 1);
  *len = fread (*text, 1, (size_t) n, fp);
  (*text)[*len] = '\0';
  return 0;
}

int
capture_stdout (int (*fn) (void *), void *arg, char **text, size_t *len)
{
  FILE *tmp = tmpfile ();
  int saved = -1, rc;
  *text = NULL;
  *len = 0;
  if (tmp == NULL || fflush (stdout) != 0 || (saved = dup (STDOUT_FILENO)) < 0 ||
      dup2 (fileno (tmp), STDOUT_FILENO) < 0) {
    pm_error ("cannot hold the answer: %s", strerror (errno));
    if (saved >= 0)
      close (saved);
    if (tmp)
      fclose (tmp);
    return EXIT_RUNTIME;
  }
  rc = fn (arg);
  fflush (stdout);
  dup2 (saved, STDOUT_FILENO);
  close (saved);
  if (read_whole (tmp, text, len) < 0) {
    pm_error ("cannot read the answer back: %s", strerror (errno));
    rc = EXIT_RUNTIME;
  }
  fclose (tmp);
  return rc;
}

int
slurp (const char *path, char **text, size_t *len)
{
  FILE *fp = fopen (path, "rb");
  int rc = fp ? read_whole (fp, text, len) : -1;
  if (rc < 0) {
    *text = NULL;
    *len = 0;
    pm_error ("%s: cannot read it back: %s", path, strerror (errno));
  }
  if (fp)
    fclose (fp);
  return rc;
}

char *
aside_file (void)
{
  const char *dir = getenv ("TMPDIR");
  char *path = xasprintf ("%s/perfmod-chart-XXXXXX", dir && *dir ? dir : "/tmp");
  int fd = mkstemp (path);
  if (fd < 0) {
    free (path);
    return NULL;
  }
  close (fd);
  return path;
}
