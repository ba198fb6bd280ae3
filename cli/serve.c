/* serve.c: perfmod serve: the options and the report of the library's serving simulation (core/serve, perfmod_serve): requests through an engine's iterations, their times to first token, per output token, between tokens and end to end, the throughput and the KV cache. */
#include <config.h>

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <jansson.h>

#include "perfmod.h"
#include "cli.h"

static void
serve_usage (FILE *fp)
{
  fputs ("Usage: perfmod serve --model NAME|config.json --isl N --osl N\n"
         "               (--concurrency C | --rate R | --trace FILE.csv)\n"
         "               [--gpu NAME] [--strategy tp=..,pp=..,ep=..,etp=..,dp=..]\n"
         "               [--engine vllm|sglang|trtllm] [--dtype bf16|fp16|fp8] [--kv-dtype fp8]\n"
         "               [--requests N] [--max-batch N] [--max-tokens N] [--seed S]\n"
         "               [--prefill SPEC --decode SPEC [--prefill-workers N]\n"
         "                [--decode-workers N] [--prefill-max-batch N]]\n"
         "               [--spec mtp|eagle|ngram --spec-accept A [--spec-tokens K]]\n"
         "               [--predictor NAME] [--gpus-per-node N] [--format table|csv|json]\n"
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
         "GPU, 10 requests per client (at least 100), 1000 at a rate; doc/serving.md.\n", fp);
}

struct vopts {
  struct perfmod_serve_request req;
  const char *format;
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
         V_DECW, V_PREMB, V_SPEC, V_SPECT, V_SPECA, V_FORMAT, V_PPATH, V_POPT };
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
    { "format", required_argument, NULL, V_FORMAT },
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
  while ((opt = getopt_long (argc, argv, ":hv", opts, NULL)) != -1) {
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
    case V_SPECT: ok = parse_int_range ("--spec-tokens", optarg, 1, 64, &r->spec_tokens); break;
    case V_SPECA:
      if (!parse_double (optarg, &r->spec_accept) || !(r->spec_accept > 0 && r->spec_accept < 1)) {
        pm_error ("--spec-accept '%s': expected a probability between 0 and 1", optarg);
        ok = false;
      }
      break;
    case V_FORMAT: o->format = optarg; break;
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

/* A number, or JSON null where there is none (NaN: no request gave it). */
static json_t *
jnum (double x)
{
  return isfinite (x) ? json_real (x) : json_null ();
}

static void
report_json (const struct perfmod_serve_request *q, const struct perfmod_serve_result *r,
             const char *gpu, FILE *out)
{
  json_t *root = json_object (), *lat = json_object ();
  json_object_set_new (root, "perfmod", json_string (PACKAGE_VERSION));
  json_object_set_new (root, "command", json_string ("serve"));
  json_object_set_new (root, "model", json_string (q->model));
  json_object_set_new (root, "gpu", json_string (gpu));
  json_object_set_new (root, "engine", json_string (r->engine));
  json_object_set_new (root, "strategy", q->strategy ? json_string (q->strategy) : json_null ());
  json_object_set_new (root, "prefill", q->prefill_strategy ? json_string (q->prefill_strategy)
                                                            : json_null ());
  json_object_set_new (root, "decode", q->decode_strategy ? json_string (q->decode_strategy)
                                                          : json_null ());
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
                         json_pack ("{s:o, s:o, s:o, s:o}", "mean", jnum (s->mean), "p50",
                                    jnum (s->p50), "p90", jnum (s->p90), "p99", jnum (s->p99)));
  }
  json_object_update (root, lat);
  json_decref (lat);
  json_object_set_new (root, "output_tokens_per_s", jnum (r->output_tokens_per_s));
  json_object_set_new (root, "output_tokens_per_s_per_gpu", jnum (r->output_tokens_per_s_per_gpu));
  json_object_set_new (root, "output_tokens_per_s_per_user",
                       jnum (r->output_tokens_per_s_per_user));
  json_object_set_new (root, "requests_per_s", jnum (r->requests_per_s));
  json_object_set_new (root, "duration_s", jnum (r->duration_s));
  json_object_set_new (root, "requests", json_integer (r->requests));
  json_object_set_new (root, "preemptions", json_integer (r->preemptions));
  json_object_set_new (root, "iterations", json_integer (r->iterations));
  json_object_set_new (root, "batch_mean", jnum (r->batch_mean));
  json_object_set_new (root, "kv_capacity_tokens", json_integer (r->kv_capacity_tokens));
  json_object_set_new (root, "kv_peak", jnum (r->kv_peak));
  json_object_set_new (root, "kv_mean", jnum (r->kv_mean));
  json_object_set_new (root, "weights_gb", jnum (r->weights_gb));
  json_object_set_new (root, "kv_cache_gb", jnum (r->kv_cache_gb));
  json_object_set_new (root, "capacity_gb", jnum (r->capacity_gb));
  json_object_set_new (root, "max_batch", json_integer (r->max_batch));
  json_object_set_new (root, "max_tokens", json_integer (r->max_tokens));
  json_object_set_new (root, "transfer_ms", q->prefill_strategy ? jnum (r->transfer_ms)
                                                               : json_null ());
  json_dumpf (root, out, JSON_INDENT (2) | JSON_REAL_PRECISION (10));
  fputc ('\n', out);
  json_decref (root);
}

static void
report_csv (const struct perfmod_serve_result *r, FILE *out)
{
  for (int i = 0; i < 4; i++)
    fprintf (out, "%s_mean,%s_p50,%s_p90,%s_p99,", stat_names[i], stat_names[i], stat_names[i],
             stat_names[i]);
  fprintf (out, "output_tokens_per_s,output_tokens_per_s_per_gpu,output_tokens_per_s_per_user,"
           "requests_per_s,duration_s,requests,preemptions,iterations,batch_mean,"
           "kv_capacity_tokens,kv_peak,kv_mean,weights_gb,kv_cache_gb,capacity_gb,gpus,oom\n");
  for (int i = 0; i < 4; i++) {
    const struct perfmod_serve_stats *s = stat_of (r, i);
    fprintf (out, "%.9g,%.9g,%.9g,%.9g,", s->mean, s->p50, s->p90, s->p99);
  }
  fprintf (out, "%.9g,%.9g,%.9g,%.9g,%.9g,%lld,%lld,%lld,%.6g,%lld,%.6g,%.6g,%.6g,%.6g,%.6g,%lld,"
           "%s\n", r->output_tokens_per_s, r->output_tokens_per_s_per_gpu,
           r->output_tokens_per_s_per_user, r->requests_per_s, r->duration_s,
           (long long) r->requests, (long long) r->preemptions, (long long) r->iterations,
           r->batch_mean, (long long) r->kv_capacity_tokens, r->kv_peak, r->kv_mean,
           r->weights_gb, r->kv_cache_gb, r->capacity_gb, (long long) r->gpus,
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
    fprintf (out, "\ndoes not fit: the weights (%.2f GB per GPU of %.2f) leave the KV cache "
             "%lld tokens, less than one request's\n", r->weights_gb, r->capacity_gb,
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
  fprintf (out, "KV cache: %lld tokens a %sreplica (%.2f GB per GPU beside %.2f GB of weights, of "
           "%.2f), peak %.0f %%, mean %.0f %%; %lld preemptions\n",
           (long long) r->kv_capacity_tokens, q->prefill_strategy ? "decode " : "",
           r->kv_cache_gb, r->weights_gb, r->capacity_gb, r->kv_peak * 100, r->kv_mean * 100,
           (long long) r->preemptions);
  if (q->prefill_strategy)
    fprintf (out, "KV transfer: %.3f ms a request on average\n", r->transfer_ms);
  fprintf (out, "\n(ttft: arrival to first token; tpot: per request (last - first token) / "
           "(osl - 1); itl: between tokens; e2e: arrival to last token)\n");
}

int
serve_main (int argc, char **argv)
{
  struct vopts o;
  struct perfmod_serve_result res;
  struct gpu_db gpus = { NULL, 0 };
  struct plugin_set set = { NULL, 0 };
  const struct gpu_entry *ge;
  int p, rc = EXIT_USAGE;

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
  if (gpu_db_load_data (&gpus) < 0)
    goto out;
  if (plugins_open (&set, o.paths, o.npaths, o.popts, o.npopts) < 0)
    goto out;
  openblas_set_num_threads (1);   /* one network row at a time: its threads only contend */
  if ((p = serve_run (&set, &gpus, &o.req, &res, NULL)) < 0) {
    rc = plugins_exit_status (p == -1 ? EXIT_USAGE : EXIT_RUNTIME);
    goto out;
  }
  ge = gpu_db_find (&gpus, o.req.gpu ? o.req.gpu : DEFAULT_GPU);
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
  gpu_db_free (&gpus);
  free (o.paths);
  free (o.popts);
  return rc;
}
