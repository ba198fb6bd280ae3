/* serve.c: perfmod serve: the options and the report of the library's serving simulation (core/serve, perfmod_serve): requests through an engine's iterations, their times to first token, per output token, between tokens and end to end, the throughput and the KV cache. */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cblas.h>
#include <jansson.h>

#include "perfmod.h"
#include "cli.h"

static void
serve_usage (FILE *fp)
{
  fputs ("Usage: perfmod serve --model NAME|config.json --isl N --osl N\n"
         "               (--concurrency C | --rate R | --trace FILE.csv)\n"
         "               [--gpu NAME] [--strategy tp=..,pp=..,ep=..,etp=..,dispatcher=..,dp=..]\n"
         "               [--engine vllm|sglang|trtllm]\n"
         "               [--dtype bf16|fp16|fp8|fp8_block|nvfp4|mxfp4] [--kv-dtype fp8]\n"
         "               [--routing uniform|powerlaw[:A]]\n"
         "               [--requests N] [--max-batch N] [--max-tokens N] [--seed S]\n"
         "               [--prefill SPEC --decode SPEC [--prefill-workers N]\n"
         "                [--decode-workers N] [--prefill-max-batch N]]\n"
         "               [--spec mtp|eagle|ngram --spec-accept A [--spec-tokens K]]\n"
         "               [--predictor NAME] [--gpus-per-node N] [--format table|csv|json]\n"
         "               [--html FILE.html] [--calibration FILE]\n"
         "               [--plugin-path DIR]... [--plugin-opt NAME:KEY=VALUE]...\n"
         "Requests arrive (a closed loop of C clients, each sending its next request when\n"
         "its last ends, as benchmark tools run; a Poisson rate of R a second; or a trace of\n"
         "arrival_ms, isl, osl), the engine schedules each iteration as its scheduler does\n"
         "(continuous batching, chunked prefill under its token budget, its batch limit, the\n"
         "paged KV cache its memory leaves, preemption), each iteration lasts its kernels as\n"
         "the predictor predicts them, and each request's times come out: time to first\n"
         "token, per output token, between tokens and end to end (mean, p50, p90, p99), the\n"
         "throughput and the KV cache's use.  --prefill and --decode (with their workers)\n"
         "disaggregate: prompts on prefill replicas, their KV cache sent to decode ones.\n"
         "Defaults: --engine vllm, --predictor tile-mlp, --gpu h100, the GPU's dtype, one\n"
         "GPU, 10 requests per client (at least 100), 1000 at a rate, an MoE router's\n"
         "tokens over its experts as a power law of exponent 1.01; doc/serving.md.\n", fp);
}

struct vopts {
  struct perfmod_serve_request req;
  const char *format;
  const char *html;      /* --html FILE: the answer as one page */
  const char *calibration; /* --calibration FILE: perfmod calibrate's corrections */
  char **paths, **popts;
  size_t npaths, npopts;
};

static bool
opt_real (const char *name, const char *arg, double *out)
{
  if (!parse_double (arg, out) || !isfinite (*out) || *out <= 0) {
    pm_error ("--%s '%s': expected a number above 0", name, arg);
    return false;
  }
  return true;
}

/* 0: go on; 1: --help; -1: bad usage (reported). */
static int
parse (int argc, char **argv, struct vopts *o)
{
  enum { V_MODEL = 256, V_GPU, V_DTYPE, V_KVDTYPE, V_STRAT, V_ENGINE, V_PRED, V_CONC, V_RATE,
         V_TRACE, V_ISL, V_OSL, V_REQS, V_MAXB, V_MAXT, V_GPN, V_SEED, V_PRE, V_DEC, V_PREW,
         V_DECW, V_PREMB, V_SPEC, V_SPECT, V_SPECA, V_FORMAT, V_PPATH, V_POPT, V_HTML, V_CALIB,
         V_ROUTING };
  static const struct option opts[] = {
    { "model", required_argument, NULL, V_MODEL }, { "gpu", required_argument, NULL, V_GPU },
    { "dtype", required_argument, NULL, V_DTYPE },
    { "kv-dtype", required_argument, NULL, V_KVDTYPE },
    { "strategy", required_argument, NULL, V_STRAT },
    { "engine", required_argument, NULL, V_ENGINE },
    { "predictor", required_argument, NULL, V_PRED },
    { "concurrency", required_argument, NULL, V_CONC },
    { "rate", required_argument, NULL, V_RATE }, { "trace", required_argument, NULL, V_TRACE },
    { "isl", required_argument, NULL, V_ISL }, { "osl", required_argument, NULL, V_OSL },
    { "requests", required_argument, NULL, V_REQS },
    { "max-batch", required_argument, NULL, V_MAXB },
    { "max-tokens", required_argument, NULL, V_MAXT },
    { "gpus-per-node", required_argument, NULL, V_GPN },
    { "seed", required_argument, NULL, V_SEED },
    { "prefill", required_argument, NULL, V_PRE }, { "decode", required_argument, NULL, V_DEC },
    { "prefill-workers", required_argument, NULL, V_PREW },
    { "decode-workers", required_argument, NULL, V_DECW },
    { "prefill-max-batch", required_argument, NULL, V_PREMB },
    { "spec", required_argument, NULL, V_SPEC },
    { "spec-tokens", required_argument, NULL, V_SPECT },
    { "spec-accept", required_argument, NULL, V_SPECA },
    { "routing", required_argument, NULL, V_ROUTING },
    { "format", required_argument, NULL, V_FORMAT },
    { "html", required_argument, NULL, V_HTML },
    { "calibration", required_argument, NULL, V_CALIB },
    { "plugin-path", required_argument, NULL, V_PPATH },
    { "plugin-opt", required_argument, NULL, V_POPT },
    { "verbose", no_argument, NULL, 'v' }, { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 }
  };
  struct perfmod_serve_request *r = &o->req;
  int opt;
  int64_t v;
  optind = 1;
  opterr = 0;
  while ((opt = pm_getopt_long (argc, argv, ":hv", opts)) != -1) {
    bool ok = true;
    switch (opt) {
    case V_MODEL: r->model = optarg; break;
    case V_GPU: r->gpu = optarg; break;
    case V_DTYPE: r->dtype = optarg; break;
    case V_KVDTYPE: r->kv_dtype = optarg; break;
    case V_STRAT: r->strategy = optarg; break;
    case V_ENGINE: r->engine = optarg; break;
    case V_PRED: r->predictor = optarg; break;
    case V_CONC: ok = parse_int_range ("--concurrency", optarg, 1, PM_MAX_BATCH, &r->concurrency); break;
    case V_RATE: ok = opt_real ("rate", optarg, &r->rate); break;
    case V_TRACE: r->trace = optarg; break;
    case V_ISL: ok = parse_int_range ("--isl", optarg, 1, PM_MAX_SEQ, &r->isl); break;
    case V_OSL: ok = parse_int_range ("--osl", optarg, 1, PM_MAX_SEQ, &r->osl); break;
    case V_REQS: ok = parse_int_range ("--requests", optarg, 1, (int64_t) 1 << 24, &r->requests); break;
    case V_MAXB: ok = parse_int_range ("--max-batch", optarg, 1, PM_MAX_BATCH, &r->max_batch); break;
    case V_MAXT: ok = parse_int_range ("--max-tokens", optarg, 1, PM_MAX_SEQ, &r->max_tokens); break;
    case V_GPN: ok = parse_int_range ("--gpus-per-node", optarg, 1, PM_MAX_GPUS, &r->gpus_per_node); break;
    case V_SEED:
      ok = parse_int_range ("--seed", optarg, 1, INT64_MAX, &v);
      r->seed = (uint64_t) v;
      break;
    case V_PRE: r->prefill_strategy = optarg; break;
    case V_DEC: r->decode_strategy = optarg; break;
    case V_PREW: ok = parse_int_range ("--prefill-workers", optarg, 1, PM_MAX_GPUS, &r->prefill_workers); break;
    case V_DECW: ok = parse_int_range ("--decode-workers", optarg, 1, PM_MAX_GPUS, &r->decode_workers); break;
    case V_PREMB: ok = parse_int_range ("--prefill-max-batch", optarg, 1, PM_MAX_BATCH, &r->prefill_max_batch); break;
    case V_SPEC: r->spec = optarg; break;
    case V_ROUTING: r->routing = optarg; break;
    case V_SPECT: ok = parse_int_range ("--spec-tokens", optarg, 1, 64, &r->spec_tokens); break;
    case V_SPECA:
      if (!parse_double (optarg, &r->spec_accept) || !(r->spec_accept > 0 && r->spec_accept < 1)) {
        pm_error ("--spec-accept '%s': expected a probability between 0 and 1", optarg);
        ok = false;
      }
      break;
    case V_FORMAT: o->format = optarg; break;
    case V_HTML: o->html = optarg; break;
    case V_CALIB: o->calibration = optarg; break;
    case V_PPATH: ptrv_push (&o->paths, &o->npaths, optarg); break;
    case V_POPT: ptrv_push (&o->popts, &o->npopts, optarg); break;
    case 'v': pm_verbose++; break;
    case 'h': serve_usage (stdout); return 1;
    default: getopt_error (opt, argv, opts, "perfmod serve"); return -1;
    }
    if (!ok)
      return -1;
  }
  if (optind < argc) {
    pm_error ("serve: unexpected argument '%s'", argv[optind]);
    return -1;
  }
  if (r->model == NULL) {
    pm_error ("serve needs --model (and --isl, --osl and one of --concurrency, --rate, --trace)");
    return -1;
  }
  if (strcmp (o->format, "table") && strcmp (o->format, "csv") && strcmp (o->format, "json")) {
    pm_error ("--format '%s': expected table, csv or json", o->format);
    return -1;
  }
  return 0;
}

/* ---- the report ---- */
static const char *const stat_names[] = { "ttft_ms", "tpot_ms", "itl_ms", "e2e_ms" };

static const struct perfmod_serve_stats *
stat_of (const struct perfmod_serve_result *r, int i)
{
  const struct perfmod_serve_stats *v[] = { &r->ttft_ms, &r->tpot_ms, &r->itl_ms, &r->e2e_ms };
  return v[i];
}

/* A replica's layout as the strategy object (the run's one: the default tp=1 where none was
 * given); null where the run has none (a disaggregated run's whole, a joint run's
 * prefill and decode). */
static json_t *
layout_json (const char *spec, bool run)
{
  struct strategy s;
  strategy_init (&s);
  if (spec == NULL && !run)
    return json_null ();
  if (spec && strategy_parse (&s, spec, "--strategy") < 0)   /* parsed before: not reached */
    return json_pack ("{s:s}", "spec", spec);
  return json_strategy (&s, false);
}

static void
report_json (const struct perfmod_serve_request *q, const struct perfmod_serve_result *r,
             const char *gpu, FILE *out)
{
  json_t *root = json_envelope ("serve"), *lat = json_object ();
  json_object_set_new (root, "model", json_string (q->model));
  json_object_set_new (root, "gpu", json_string (gpu));
  json_object_set_new (root, "engine", json_string (r->engine));
  json_object_set_new (root, "strategy", layout_json (q->strategy, !q->prefill_strategy));
  json_object_set_new (root, "prefill", layout_json (q->prefill_strategy, false));
  json_object_set_new (root, "decode", layout_json (q->decode_strategy, false));
  json_object_set_new (root, "concurrency", q->concurrency ? json_integer (q->concurrency)
                                                           : json_null ());
  json_object_set_new (root, "rate", q->rate > 0 ? json_real (q->rate) : json_null ());
  json_object_set_new (root, "isl", q->isl ? json_integer (q->isl) : json_null ());
  json_object_set_new (root, "osl", q->osl ? json_integer (q->osl) : json_null ());
  json_object_set_new (root, "gpus", json_integer (r->gpus));
  json_object_set_new (root, "assumed", json_string (r->assumed));
  json_object_set_new (root, "oom", json_boolean (r->oom));
  for (int i = 0; i < 4; i++) {
    const struct perfmod_serve_stats *s = stat_of (r, i);
    json_object_set_new (lat, stat_names[i],
                         json_pack ("{s:o, s:o, s:o, s:o}", "mean", json_num (s->mean), "p50",
                                    json_num (s->p50), "p90", json_num (s->p90), "p99",
                                    json_num (s->p99)));
  }
  json_object_update (root, lat);
  json_decref (lat);
  json_object_set_new (root, "output_tokens_per_s", json_num (r->output_tokens_per_s));
  json_object_set_new (root, "output_tokens_per_s_per_gpu", json_num (r->output_tokens_per_s_per_gpu));
  json_object_set_new (root, "output_tokens_per_s_per_user",
                       json_num (r->output_tokens_per_s_per_user));
  json_object_set_new (root, "requests_per_s", json_num (r->requests_per_s));
  json_object_set_new (root, "duration_s", json_num (r->duration_s));
  json_object_set_new (root, "requests", json_integer (r->requests));
  json_object_set_new (root, "preemptions", json_integer (r->preemptions));
  json_object_set_new (root, "iterations", json_integer (r->iterations));
  json_object_set_new (root, "batch_mean", json_num (r->batch_mean));
  json_object_set_new (root, "kv_capacity_tokens", json_integer (r->kv_capacity_tokens));
  json_object_set_new (root, "kv_peak", json_num (r->kv_peak));
  json_object_set_new (root, "kv_mean", json_num (r->kv_mean));
  json_object_set_new (root, "memory_gib", json_pack ("{s:o, s:o, s:o}", "weights",
                                                      json_num (r->weights_gib), "kv_cache",
                                                      json_num (r->kv_cache_gib), "capacity",
                                                      json_num (r->capacity_gib)));
  json_object_set_new (root, "max_batch", json_integer (r->max_batch));
  json_object_set_new (root, "max_tokens", json_integer (r->max_tokens));
  json_object_set_new (root, "transfer_ms", q->prefill_strategy ? json_num (r->transfer_ms)
                                                               : json_null ());
  json_print (root, out);
}

static void
report_csv (const struct perfmod_serve_result *r, FILE *out)
{
  for (int i = 0; i < 4; i++)
    fprintf (out, "%s_mean,%s_p50,%s_p90,%s_p99,", stat_names[i], stat_names[i], stat_names[i],
             stat_names[i]);
  fprintf (out, "output_tokens_per_s,output_tokens_per_s_per_gpu,output_tokens_per_s_per_user,"
           "requests_per_s,duration_s,requests,preemptions,iterations,batch_mean,"
           "kv_capacity_tokens,kv_peak,kv_mean,weights_gib,kv_cache_gib,capacity_gib,gpus,oom\n");
  for (int i = 0; i < 4; i++) {
    const struct perfmod_serve_stats *s = stat_of (r, i);
    fprintf (out, "%.9g,%.9g,%.9g,%.9g,", s->mean, s->p50, s->p90, s->p99);
  }
  fprintf (out, "%.9g,%.9g,%.9g,%.9g,%.9g,%lld,%lld,%lld,%.6g,%lld,%.6g,%.6g,%.6g,%.6g,%.6g,%lld,"
           "%s\n", r->output_tokens_per_s, r->output_tokens_per_s_per_gpu,
           r->output_tokens_per_s_per_user, r->requests_per_s, r->duration_s,
           (long long) r->requests, (long long) r->preemptions, (long long) r->iterations,
           r->batch_mean, (long long) r->kv_capacity_tokens, r->kv_peak, r->kv_mean,
           r->weights_gib, r->kv_cache_gib, r->capacity_gib, (long long) r->gpus,
           r->oom ? "true" : "false");
}

static void
report_table (const struct perfmod_serve_request *q, const struct perfmod_serve_result *r,
              const char *gpu, FILE *out)
{
  fprintf (out, "perfmod %s serve: %s on %lld x %s, ", PACKAGE_VERSION, q->model,
           (long long) r->gpus, gpu);
  if (q->prefill_strategy)
    fprintf (out, "prefill %lld x {%s}, decode %lld x {%s}", (long long) (q->prefill_workers ?
             q->prefill_workers : 1), q->prefill_strategy, (long long) (q->decode_workers ?
             q->decode_workers : 1), q->decode_strategy);
  else
    fprintf (out, "%s", q->strategy ? q->strategy : "tp=1");
  if (q->concurrency)
    fprintf (out, ", %lld clients", (long long) q->concurrency);
  else if (q->rate > 0)
    fprintf (out, ", %g requests/s", q->rate);
  else
    fprintf (out, ", trace %s", q->trace);
  if (q->isl)
    fprintf (out, ", isl %lld, osl %lld", (long long) q->isl, (long long) q->osl);
  fprintf (out, "\nassumed: %s\n", r->assumed);
  if (r->oom) {
    fprintf (out, "\ndoes not fit: the weights (%.2f GiB per GPU of %.2f) leave the KV cache "
             "%lld tokens, less than one request's\n", r->weights_gib, r->capacity_gib,
             (long long) r->kv_capacity_tokens);
    return;
  }
  fprintf (out, "\n%-10s %12s %12s %12s %12s\n", "", "mean", "p50", "p90", "p99");
  for (int i = 0; i < 4; i++) {
    const struct perfmod_serve_stats *s = stat_of (r, i);
    fprintf (out, "%-10s %12.2f %12.2f %12.2f %12.2f\n", stat_names[i], s->mean, s->p50, s->p90,
             s->p99);
  }
  fprintf (out, "\noutput tokens/s %.1f (%.1f per GPU, %.1f per user), %.3f requests/s, "
           "%lld requests over %.2f s\n", r->output_tokens_per_s, r->output_tokens_per_s_per_gpu,
           r->output_tokens_per_s_per_user, r->requests_per_s, (long long) r->requests,
           r->duration_s);
  fprintf (out, "batch: %.1f requests a decoding iteration on average, %lld iterations\n",
           r->batch_mean, (long long) r->iterations);
  fprintf (out, "KV cache: %lld tokens a %sreplica (%.2f GiB per GPU beside %.2f GiB of weights, of "
           "%.2f), peak %.0f %%, mean %.0f %%; %lld preemptions\n",
           (long long) r->kv_capacity_tokens, q->prefill_strategy ? "decode " : "",
           r->kv_cache_gib, r->weights_gib, r->capacity_gib, r->kv_peak * 100, r->kv_mean * 100,
           (long long) r->preemptions);
  if (q->prefill_strategy)
    fprintf (out, "KV transfer: %.3f ms a request on average\n", r->transfer_ms);
  fprintf (out, "\n(ttft: arrival to first token; tpot: per request (last - first token) / "
           "(osl - 1); itl: between tokens; e2e: arrival to last token)\n");
}

/* --html FILE: the JSON answer as one page. */
static int
serve_html (const struct vopts *o, const struct perfmod_serve_result *r, const char *gpu)
{
  char *json = NULL, *title;
  size_t len = 0;
  FILE *mem = open_memstream (&json, &len);
  int rc;
  if (mem == NULL) {
    pm_error ("--html %s: cannot hold the answer: %s", o->html, strerror (errno));
    return -1;
  }
  report_json (&o->req, r, gpu, mem);
  fclose (mem);
  title = xasprintf ("%s served by %s on %lld x %s, isl %lld, osl %lld", o->req.model, r->engine,
                     (long long) r->gpus, gpu, (long long) o->req.isl, (long long) o->req.osl);
  rc = html_page_write (o->html, title, json, len, NULL, 0);
  free (title);
  free (json);
  return rc;
}

int
serve_main (int argc, char **argv)
{
  struct vopts o;
  struct perfmod_serve_result res;
  struct gpu_db gpus = { NULL, 0 };
  struct plugin_set set = { NULL, 0 };
  struct calibration cal;
  const struct gpu_entry *ge;
  int p, rc = EXIT_USAGE;

  memset (&cal, 0, sizeof cal);
  memset (&o, 0, sizeof o);
  o.req.struct_size = sizeof o.req;
  o.format = "table";
  memset (&res, 0, sizeof res);
  res.struct_size = sizeof res;
  if ((p = parse (argc, argv, &o)) != 0) {
    free (o.paths);
    free (o.popts);
    return p < 0 ? EXIT_USAGE : 0;
  }
  if (o.html && output_check (o.html) < 0) {
    rc = EXIT_RUNTIME;
    goto out;
  }
  if (gpu_db_load_data (&gpus) < 0)
    goto out;
  if (plugins_open (&set, o.paths, o.npaths, o.popts, o.npopts) < 0 ||
      (o.calibration && calib_attach (o.calibration, &set, &cal) < 0))
    goto out;
  if (cal.gpu) {
    char what[512];
    calib_describe (&cal, o.calibration, what, sizeof what);
    fprintf (stderr, "perfmod serve: %s\n", what);
  }
  openblas_set_num_threads (1);   /* one network row at a time: its threads only contend */
  if ((p = serve_run (&set, &gpus, &o.req, &res, NULL)) < 0) {
    rc = plugins_exit_status (p == -1 ? EXIT_USAGE : EXIT_RUNTIME);
    goto out;
  }
  ge = gpu_db_find (&gpus, o.req.gpu ? o.req.gpu : DEFAULT_GPU);
  if (o.html && serve_html (&o, &res, ge->name) < 0) {
    rc = EXIT_RUNTIME;
    goto out;
  }
  if (strcmp (o.format, "json") == 0)
    report_json (&o.req, &res, ge->name, stdout);
  else if (strcmp (o.format, "csv") == 0)
    report_csv (&res, stdout);
  else
    report_table (&o.req, &res, ge->name, stdout);
  plugins_note_fallbacks (&set, stderr);
  rc = 0;
out:
  plugins_unload (&set);
  calib_free (&cal);
  gpu_db_free (&gpus);
  free (o.paths);
  free (o.popts);
  return rc;
}

/* ---- perfmod search --serve ---- */

static void
search_serve_usage (FILE *fp)
{
  fputs ("Usage: perfmod search --serve --model NAME|config.json --gpus N --isl N --osl N\n"
         "               [--gpu NAME] [--engine vllm|sglang|trtllm] [--dtype D] [--kv-dtype fp8]\n"
         "               [--routing uniform|powerlaw[:A]]\n"
         "               [--ttft MS] [--tpot MS] [--max-tp N] [--no-disagg] [--top N]\n"
         "               [--predictor NAME] [--gpus-per-node N] [--jobs N]\n"
         "               [--format table|csv|json] [--plot FILE.svg] [--html FILE.html]\n"
         "               [--calibration FILE]\n"
         "               [--plugin-path DIR]... [--plugin-opt NAME:KEY=VALUE]...\n"
         "Every serving deployment of the model on the GPUs: a replica's tp (to --max-tp, default\n"
         "a node), pp 1 or 2 and, with experts, ep over tp's ranks, as many replicas as fill\n"
         "the GPUs; or prefill and decode pools of their own layouts splitting them; each at\n"
         "batches 1 to 512 per replica (its clients and its batch limit) simulated as perfmod\n"
         "serve does.  Prints the Pareto frontier of output tokens/s per GPU against tokens/s\n"
         "per user (1000 / TPOT), the best per GPU within --ttft and --tpot, and each point's\n"
         "perfmod serve options and the engine's launch command; --plot draws the frontier.\n",
         fp);
}

static int
search_serve_parse (int argc, char **argv, struct serve_search_opts *o, const char **format,
                    const char **plot, const char **html, const char **calibration,
                    int64_t *top, char ***paths, size_t *npaths, char ***popts, size_t *npopts)
{
  enum { W_SERVE = 256, W_MODEL, W_GPU, W_GPUS, W_GPN, W_ISL, W_OSL, W_TTFT, W_TPOT, W_ENGINE,
         W_DTYPE, W_KVDTYPE, W_PRED, W_MAXTP, W_NODIS, W_JOBS, W_FORMAT, W_PLOT, W_TOP, W_PPATH,
         W_POPT, W_HTML, W_CALIB, W_ROUTING };
  static const struct option opts[] = {
    { "serve", no_argument, NULL, W_SERVE }, { "model", required_argument, NULL, W_MODEL },
    { "gpu", required_argument, NULL, W_GPU }, { "gpus", required_argument, NULL, W_GPUS },
    { "gpus-per-node", required_argument, NULL, W_GPN },
    { "isl", required_argument, NULL, W_ISL }, { "osl", required_argument, NULL, W_OSL },
    { "ttft", required_argument, NULL, W_TTFT }, { "tpot", required_argument, NULL, W_TPOT },
    { "engine", required_argument, NULL, W_ENGINE }, { "dtype", required_argument, NULL, W_DTYPE },
    { "kv-dtype", required_argument, NULL, W_KVDTYPE },
    { "routing", required_argument, NULL, W_ROUTING },
    { "predictor", required_argument, NULL, W_PRED },
    { "max-tp", required_argument, NULL, W_MAXTP },
    { "no-disagg", no_argument, NULL, W_NODIS }, { "jobs", required_argument, NULL, W_JOBS },
    { "format", required_argument, NULL, W_FORMAT }, { "plot", required_argument, NULL, W_PLOT },
    { "html", required_argument, NULL, W_HTML },
    { "calibration", required_argument, NULL, W_CALIB },
    { "top", required_argument, NULL, W_TOP },
    { "plugin-path", required_argument, NULL, W_PPATH },
    { "plugin-opt", required_argument, NULL, W_POPT },
    { "verbose", no_argument, NULL, 'v' }, { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 }
  };
  int opt;
  int64_t v;
  optind = 1;
  opterr = 0;
  while ((opt = pm_getopt_long (argc, argv, ":hv", opts)) != -1) {
    bool ok = true;
    switch (opt) {
    case W_SERVE: break;
    case W_MODEL: o->model = optarg; break;
    case W_GPU: o->gpu = optarg; break;
    case W_GPUS: ok = parse_int_range ("--gpus", optarg, 1, 1 << 16, &o->gpus); break;
    case W_GPN: ok = parse_int_range ("--gpus-per-node", optarg, 1, PM_MAX_GPUS, &o->gpus_per_node); break;
    case W_ISL: ok = parse_int_range ("--isl", optarg, 1, PM_MAX_SEQ, &o->isl); break;
    case W_OSL: ok = parse_int_range ("--osl", optarg, 1, PM_MAX_SEQ, &o->osl); break;
    case W_TTFT: ok = opt_real ("ttft", optarg, &o->ttft); break;
    case W_TPOT: ok = opt_real ("tpot", optarg, &o->tpot); break;
    case W_ENGINE: o->engine = optarg; break;
    case W_DTYPE: o->dtype = optarg; break;
    case W_KVDTYPE: o->kv_dtype = optarg; break;
    case W_ROUTING: ok = routing_parse ("--routing", optarg, &o->routing) == 0; break;
    case W_PRED: o->predictor = optarg; break;
    case W_MAXTP: ok = parse_int_range ("--max-tp", optarg, 1, 1 << 16, &o->max_tp); break;
    case W_NODIS: o->disagg = false; break;
    case W_JOBS:
      ok = parse_int_range ("--jobs", optarg, 1, 1024, &v);
      o->jobs = (int) v;
      break;
    case W_FORMAT: *format = optarg; break;
    case W_PLOT: *plot = optarg; break;
    case W_HTML: *html = optarg; break;
    case W_CALIB: *calibration = optarg; break;
    case W_TOP: ok = parse_int_range ("--top", optarg, 1, 100000, top); break;
    case W_PPATH: ptrv_push (paths, npaths, optarg); break;
    case W_POPT: ptrv_push (popts, npopts, optarg); break;
    case 'v': pm_verbose++; break;
    case 'h': search_serve_usage (stdout); return 1;
    default: getopt_error (opt, argv, opts, "perfmod search --serve"); return -1;
    }
    if (!ok)
      return -1;
  }
  if (optind < argc) {
    pm_error ("search --serve: unexpected argument '%s'", argv[optind]);
    return -1;
  }
  if (o->model == NULL || o->gpus == 0 || o->isl == 0 || o->osl == 0) {
    pm_error ("search --serve needs --model, --gpus, --isl and --osl");
    return -1;
  }
  if (strcmp (*format, "table") && strcmp (*format, "csv") && strcmp (*format, "json")) {
    pm_error ("--format '%s': expected table, csv or json", *format);
    return -1;
  }
  return 0;
}

/* The perfmod serve command of a search's point. */
static char *
point_command (const struct serve_point *p, const struct serve_search_opts *o)
{
  char *s = xasprintf ("perfmod serve --model %s", o->model), *t;
  const char *keys[] = { "--gpu", "--engine", "--dtype", "--kv-dtype", "--predictor" };
  const char *vals[] = { o->gpu, o->engine, o->dtype, o->kv_dtype, o->predictor };
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    if (vals[i]) {
      t = xasprintf ("%s %s %s", s, keys[i], vals[i]);
      free (s);
      s = t;
    }
  if (o->routing != 0) {
    t = o->routing < 0 ? xasprintf ("%s --routing uniform", s)
                       : xasprintf ("%s --routing powerlaw:%.17g", s, o->routing);
    free (s);
    s = t;
  }
  t = xasprintf ("%s --isl %lld --osl %lld %s", s, (long long) o->isl, (long long) o->osl,
                 p->command);
  free (s);
  return t;
}

static json_t *
point_json (const struct serve_point *p, const struct serve_search_opts *o)
{
  json_t *j = json_pack ("{s:s, s:I, s:I, s:I, s:o, s:o, s:o, s:o, s:b, s:b}",
                         "deployment", p->deploy, "gpus", (json_int_t) p->gpus,
                         "batch", (json_int_t) p->batch, "concurrency", (json_int_t) p->concurrency,
                         "ttft_ms", json_num (p->ttft), "tpot_ms", json_num (p->tpot),
                         "output_tokens_per_s_per_gpu", json_num (p->tps_gpu),
                         "output_tokens_per_s_per_user", json_num (p->tps_user),
                         "frontier", p->frontier, "within_targets", p->slo);
  char *cmd = point_command (p, o);
  json_object_set_new (j, "rerun", json_string (cmd));
  json_object_set_new (j, "launch", json_string (p->launch));
  json_object_set_new (j, "launch_prefill", p->launch_prefill[0] ? json_string (p->launch_prefill)
                                                                : json_null ());
  free (cmd);
  return j;
}

/* search --serve's JSON answer to out. */
static void
search_serve_json (const struct serve_search_opts *o, const struct serve_search_result *res,
                   const struct gpu_db *gpus, FILE *out)
{
  json_t *root = json_envelope ("search --serve"), *fr = json_array ();
  const struct gpu_entry *ge = gpu_db_find (gpus, o->gpu ? o->gpu : DEFAULT_GPU);
  json_object_set_new (root, "model", json_string (o->model));
  json_object_set_new (root, "gpu", json_string (ge ? ge->name : o->gpu ? o->gpu : DEFAULT_GPU));
  json_object_set_new (root, "gpus", json_integer (o->gpus));
  json_object_set_new (root, "isl", json_integer (o->isl));
  json_object_set_new (root, "osl", json_integer (o->osl));
  json_object_set_new (root, "ttft_target_ms", o->ttft > 0 ? json_real (o->ttft) : json_null ());
  json_object_set_new (root, "tpot_target_ms", o->tpot > 0 ? json_real (o->tpot) : json_null ());
  /* as perfmod search's: every one enumerated, those predicted, the rest pruned by reason
   * (layouts the model cannot take, batches past saturation) */
  json_object_set_new (root, "configurations",
                       json_integer ((json_int_t) (res->configurations + res->refused
                                                   + res->pruned)));
  json_object_set_new (root, "predicted", json_integer ((json_int_t) res->configurations));
  json_object_set_new (root, "pruned", json_pack ("{s:I, s:I}", "layout",
                                                  (json_int_t) res->refused, "saturation",
                                                  (json_int_t) res->pruned));
  json_object_set_new (root, "seconds", json_real (res->seconds));
  for (size_t i = 0; i < res->n; i++)
    if (res->pts[i].frontier)
      json_array_append_new (fr, point_json (&res->pts[i], o));
  json_object_set_new (root, "frontier", fr);
  json_object_set_new (root, "best", res->best >= 0 ? point_json (&res->pts[res->best], o)
                                                    : json_null ());
  json_print (root, out);
}

/* The frontier chart of every point that fits into path: 0, or EXIT_RUNTIME (said). */
static int
frontier_draw (const struct serve_search_opts *o, const struct serve_search_result *res,
               const char *path)
{
  struct frontier_point *fp = xcalloc (res->n + 1, sizeof *fp);
  size_t n = 0;
  char *title;
  int rc;
  for (size_t i = 0; i < res->n; i++)
    if (!res->pts[i].oom) {
      fp[n].x = res->pts[i].tps_user;
      fp[n].y = res->pts[i].tps_gpu;
      fp[n].frontier = res->pts[i].frontier;
      fp[n].best = (int64_t) i == res->best;
      snprintf (fp[n].label, sizeof fp[n].label, "%s, batch %lld", res->pts[i].deploy,
                (long long) res->pts[i].batch);
      n++;
    }
  title = xasprintf ("%s on %lld x %s, isl %lld, osl %lld", o->model, (long long) o->gpus,
                     o->gpu ? o->gpu : DEFAULT_GPU, (long long) o->isl, (long long) o->osl);
  rc = frontier_plot_write (path, title, fp, n) < 0 ? EXIT_RUNTIME : 0;
  free (title);
  free (fp);
  return rc;
}

/* --html FILE: the JSON answer and the frontier chart as one page. */
static int
search_serve_html (const struct serve_search_opts *o, const struct serve_search_result *res,
                   const struct gpu_db *gpus, const char *html)
{
  char *json = NULL, *svg = NULL, *title, *aside = NULL;
  size_t jlen = 0, slen = 0;
  FILE *mem = open_memstream (&json, &jlen);
  int rc = 0;
  if (mem == NULL) {
    pm_error ("--html %s: cannot hold the answer: %s", html, strerror (errno));
    return EXIT_RUNTIME;
  }
  search_serve_json (o, res, gpus, mem);
  fclose (mem);
  /* the chart drawn aside for the page (--plot's file is drawn after) */
  if ((aside = aside_file ()) == NULL) {
    pm_error ("--html %s: no file for its chart: %s", html, strerror (errno));
    rc = EXIT_RUNTIME;
  }
  else {
    if (frontier_draw (o, res, aside) != 0 || slurp (aside, &svg, &slen) < 0)
      rc = EXIT_RUNTIME;
    unlink (aside);
    free (aside);
  }
  title = xasprintf ("%s on %lld x %s, isl %lld, osl %lld: serving deployments", o->model,
                     (long long) o->gpus, o->gpu ? o->gpu : DEFAULT_GPU, (long long) o->isl,
                     (long long) o->osl);
  if (rc == 0 && html_page_write (html, title, json, jlen, svg, slen) < 0)
    rc = EXIT_RUNTIME;
  free (title);
  free (json);
  free (svg);
  return rc;
}

int
search_serve_main (int argc, char **argv)
{
  struct serve_search_opts o;
  struct serve_search_result res;
  struct gpu_db gpus = { NULL, 0 };
  struct plugin_set set = { NULL, 0 };
  const char *format = "table", *plot = NULL, *html = NULL, *calibration = NULL;
  struct calibration cal;
  int64_t top = 20;
  char **paths = NULL, **popts = NULL;
  size_t npaths = 0, npopts = 0;
  int p, rc = EXIT_USAGE;

  memset (&o, 0, sizeof o);
  memset (&res, 0, sizeof res);
  o.disagg = true;
  memset (&cal, 0, sizeof cal);
  if ((p = search_serve_parse (argc, argv, &o, &format, &plot, &html, &calibration, &top, &paths,
                               &npaths, &popts, &npopts)) != 0) {
    free (paths);
    free (popts);
    return p < 0 ? EXIT_USAGE : 0;
  }
  if (plot && atomic_reserve (plot) < 0) {
    plot = NULL;
    rc = EXIT_RUNTIME;
    goto out;
  }
  if (html && output_check (html) < 0) {
    rc = EXIT_RUNTIME;
    goto out;
  }
  if (gpu_db_load_data (&gpus) < 0)
    goto out;
  if (plugins_open (&set, paths, npaths, popts, npopts) < 0 ||
      (calibration && calib_attach (calibration, &set, &cal) < 0))
    goto out;
  if (cal.gpu) {
    char what[512];
    calib_describe (&cal, calibration, what, sizeof what);
    fprintf (stderr, "perfmod search --serve: %s\n", what);
  }
  openblas_set_num_threads (1);
  if (o.jobs == 0) {
    long n = sysconf (_SC_NPROCESSORS_ONLN);
    o.jobs = n > 0 ? (int) (n < 64 ? n : 64) : 1;
  }
  if (o.max_tp == 0) {
    const struct gpu_entry *ge = gpu_db_find (&gpus, o.gpu ? o.gpu : DEFAULT_GPU);
    o.max_tp = o.gpus_per_node ? o.gpus_per_node : ge && ge->gpu.gpus_per_node > 0
             ? ge->gpu.gpus_per_node : 8;
  }
  p = serve_search (&set, &gpus, &o, &res);
  if (p != 0) {
    rc = p == SEARCH_BAD_REQUEST ? EXIT_USAGE : EXIT_RUNTIME;
    goto out;
  }
  if (html && (rc = search_serve_html (&o, &res, &gpus, html)) != 0)
    goto out;
  if (strcmp (format, "json") == 0)
    search_serve_json (&o, &res, &gpus, stdout);
  else if (strcmp (format, "csv") == 0) {
    printf ("deployment,gpus,batch,concurrency,ttft_ms,tpot_ms,output_tokens_per_s_per_gpu,"
            "output_tokens_per_s_per_user,frontier,within_targets\n");
    for (size_t i = 0; i < res.n; i++) {
      const struct serve_point *q = &res.pts[i];
      if (q->oom)
        continue;
      printf ("\"%s\",%lld,%lld,%lld,%.6g,%.6g,%.6g,%.6g,%s,%s\n", q->deploy, (long long) q->gpus,
              (long long) q->batch, (long long) q->concurrency, q->ttft, q->tpot, q->tps_gpu,
              q->tps_user, q->frontier ? "true" : "false", q->slo ? "true" : "false");
    }
  }
  else {
    int64_t shown = 0;
    size_t oom = 0;
    for (size_t i = 0; i < res.n; i++)
      oom += res.pts[i].oom != 0;
    printf ("perfmod %s search --serve: %s on %lld x %s, isl %lld, osl %lld%s: %llu "
            "configurations tried in %.2f s (%.0f a second), %zu of them out of memory; %llu "
            "pruned: %llu of layouts the model cannot take, the rest batches past saturation\n",
            PACKAGE_VERSION, o.model, (long long) o.gpus, o.gpu ? o.gpu : DEFAULT_GPU,
            (long long) o.isl, (long long) o.osl, o.engine ? "" : ", engine vllm",
            (unsigned long long) res.configurations, res.seconds,
            res.seconds > 0 ? (double) res.configurations / res.seconds : 0, oom,
            (unsigned long long) (res.refused + res.pruned), (unsigned long long) res.refused);
    printf ("\nthe frontier: output tokens/s per GPU against per user (1000 / TPOT)\n"
            "%-44s %5s %6s %10s %9s %12s %12s\n", "deployment", "gpus", "batch", "ttft_ms",
            "tpot_ms", "tok/s/gpu", "tok/s/user");
    for (size_t i = 0; i < res.n && shown < top; i++) {
      const struct serve_point *q = &res.pts[i];
      if (!q->frontier)
        continue;
      printf ("%-44s %5lld %6lld %10.1f %9.2f %12.1f %12.1f%s\n", q->deploy, (long long) q->gpus,
              (long long) q->batch, q->ttft, q->tpot, q->tps_gpu, q->tps_user,
              (int64_t) i == res.best ? "  <- best" : q->slo ? "" : "  (misses the targets)");
      shown++;
    }
    if (res.best >= 0) {
      const struct serve_point *q = &res.pts[res.best];
      printf ("\nbest%s: %s, batch %lld per replica: TTFT %.1f ms, TPOT %.2f ms, %.1f tokens/s "
              "per GPU, %.1f per user\n", o.ttft > 0 || o.tpot > 0 ? " within the targets" : "",
              q->deploy, (long long) q->batch, q->ttft, q->tpot, q->tps_gpu, q->tps_user);
      char *cmd = point_command (q, &o);
      printf ("  %s\n", cmd);
      free (cmd);
      if (q->launch_prefill[0])
        printf ("  prefill: %s\n  decode:  %s\n", q->launch_prefill, q->launch);
      else
        printf ("  %s\n", q->launch);
    }
    else if (res.n > 0 && oom == res.n)
      printf ("\nno deployment fits: every one is out of memory\n");
    else if (o.ttft > 0 || o.tpot > 0)
      printf ("\nno deployment within the targets (--ttft %g, --tpot %g ms)\n", o.ttft, o.tpot);
    else
      printf ("\nno deployment\n");
  }
  if (plot && (rc = frontier_draw (&o, &res, plot)) != 0)
    goto out;
  plugins_note_fallbacks (&set, stderr);
  rc = 0;
out:
  if (plot && rc != 0)
    atomic_release (plot);
  free (res.pts);
  plugins_unload (&set);
  calib_free (&cal);
  gpu_db_free (&gpus);
  free (paths);
  free (popts);
  return rc;
}
