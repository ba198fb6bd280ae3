/* main.c: the perfmod command line: predict (default), graph, plugins, gpus, strategies, models, reproduce, train, eval. */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <cblas.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static const char usage_text[] =
         "Usage: perfmod [predict] [--model NAME|config.json] [--opgraph FILE.csv]\n"
         "               [--gpu NAME[,NAME...]] [--batch N] [--seq N] [--mode inf|train]\n"
         "               [--dtype fp32|tf32|fp16|bf16|fp8|fp8_block|nvfp4|mxfp4]\n"
         "               [--precision fp32|amp-fp16|bf16|fp8|fp8-cs]\n"
         "               [--predictor NAME[,NAME...]]\n"
         "               [--strategy SPEC|PRESET] [--nodes N] [--gpus-per-node N] [--explain]\n"
         "               [--per-op[=N]] [--format table|csv|json] [--plugin-path DIR]...\n"
         "               [--layers N] [--fusion] [--engine[=NAME]] [--routing R]\n"
         "               [--attention flash|unfused]\n"
         "               [--gen N] [--print megatron|nemo]\n"
         "               [--plot FILE.svg] [--html FILE.html] [--calibration FILE] [--verbose]\n"
         "       perfmod plugins | gpus | strategies [--plugin-path DIR]...\n"
         "       perfmod models [--model NAME|config.json] [--format table|csv|json]\n"
         "       perfmod graph [--model ...|--opgraph ...] [--format table|csv]: the kernels\n"
         "       perfmod reproduce [--neusight DIR] [--graph opgraph|builder]\n"
         "               [--table inf|train|perop|nodesum|distributed|all|published|\n"
         "                        collectives|serving]\n"
         "               [--published FILE] [--data MODERNDATA (--table serving)]\n"
         "               [--predictor LIST] [--format table|csv|json]\n"
         "       perfmod eval --data DIR [--predictor LIST] [--format table|csv|json] [--table LIST]\n"
         "               [--in-dist GPU,...] [--neusight DIR] [--per-op]\n"
         "               [--dtype D] [--gpu G] [--split all|holdout|train] [--calibration FILE]\n"
         "       perfmod kernel --op OP --gpu NAME [--dtype D] ...: one kernel (kernel --help)\n"
         "       perfmod search --model M --gpus N --global-batch B ...: the best ways to train\n"
         "               M on N GPUs (search --help)\n"
         "       perfmod serve --model M --isl N --osl N --concurrency C ...: requests through a\n"
         "               serving engine's iterations (serve --help)\n"
         "       perfmod train --predictor NAME --data DIR --out FILE [--seed S]\n"
         "               [--epochs N] [--members N] [--in-dist GPU,...] [--reference FILE]\n"
         "               [--keep-throttled] [--keep-floor] [--features SET]\n"
         "       perfmod calibrate --data DIR --gpu G --out FILE [--predictor NAME]\n"
         "               [--shapes N] [--seed S] [--table LIST] [--dtype D]: corrections\n"
         "               from G's measured kernels, used by --calibration FILE\n"
         "       (any command) [--plugin-opt NAME:KEY=VALUE]...\n"
         "       perfmod --help | --version\n"
         "\n"
         "With no arguments: GPT-2 Large inference, batch 4 x 1024 tokens, bf16, on one\n"
         "H100 (NeuSight's H100 80GB HBM3), with tile-mlp (the most accurate on the validated\n"
         "tables; the roofline is a bound).  --dtype (inference)\n"
         "and --precision (training) default to what users run on the GPU: bf16 where it has\n"
         "bf16 matrix units, fp16 where it has fp16 ones only, else fp32 (and fp32 for an\n"
         "imported NeuSight --opgraph trace, whose runs were fp32).\n"
         "Environment: PERFMOD_PLUGIN_DIR replaces the installed plugin directory,\n"
         "PERFMOD_DATADIR the data directory (gpus.d, strategies.d, tiles.d, models, params),\n"
         "PERFMOD_NEUSIGHT gives reproduce's and eval's default --neusight, PERFMOD_MODERNDATA\n"
         "reproduce --table serving's default --data.\n"
         "--in-dist defaults to NeuSight's training GPUs: " DEFAULT_IN_DIST ".\n"
         "Exit status: 0 success, 1 runtime failure, 2 bad usage or bad input.\n";

static void
usage (FILE *fp)
{
  fputs (usage_text, fp);
}

/* perfmod CMD --help: the lines of the usage that are CMD's (its synopsis and their
 * continuations), the options every command takes, and the exit status. */
static void
command_usage (const char *cmd, FILE *fp)
{
  size_t n = strlen (cmd);
  bool mine = false;
  fputs ("Usage:", fp);
  for (const char *p = usage_text; *p && *p != '\n'; p = strchr (p, '\n') + 1) {
    const char *eol = strchr (p, '\n'), *w = p + strspn (p, " ");
    if (w - p >= 15) {                               /* a continuation */
      if (mine)
        fprintf (fp, "%.*s\n", (int) (eol - p), p);
      continue;
    }
    if (strncmp (w, "Usage: ", 7) == 0)
      w += 7;
    mine = strncmp (w, "(any command)", 13) == 0;
    if (strncmp (w, "perfmod ", 8) == 0)    /* its words, up to the first option */
      for (const char *s = w + 8; s < eol && *s != '-' && !mine; s += strspn (s, " |[]")) {
        size_t len = strcspn (s, " |[]\n");
        mine = len == n && strncmp (s, cmd, n) == 0;
        s += len;
      }
    if (mine)
      fprintf (fp, " %.*s\n", (int) (eol - w), w);
  }
  fputs ("See perfmod(1); perfmod --help lists every command.\n"
         "Exit status: 0 success, 1 runtime failure, 2 bad usage or bad input.\n", fp);
}

/* ---- list commands ---- */

/* ---- predict ---- */

static void
cli_free (struct cli *c)
{
  free (c->plugin_paths);
  free (c->plugin_opts);
  free (c->command);
  free (c->assumed);
}

/* ---- train and eval ---- */

static char *
command_line (int argc, char **argv)
{
  char *s = xstrdup ("perfmod");
  for (int i = 1; i < argc; i++) {
    char *t = xasprintf ("%s %s", s, argv[i]);
    free (s);
    s = t;
  }
  return s;
}

int
perfmod_main (int argc, char **argv)
{
  enum { O_MODEL = 256, O_OPGRAPH, O_GPU, O_BATCH, O_SEQ, O_MODE, O_DTYPE, O_PRECISION, O_PRED,
         O_STRAT,
         O_NODES, O_GPN, O_PEROP, O_FORMAT, O_PPATH, O_EXPLAIN, O_NEUSIGHT, O_TABLE, O_LAYERS,
         O_DATA, O_OUT, O_SEED, O_EPOCHS, O_MEMBERS, O_REFERENCE, O_INDIST, O_POPT, O_FUSION, O_ENGINE, O_ATTENTION, O_PUBLISHED, O_GEN, O_GRAPH,
         O_PLOT, O_KEEPTHR, O_KEEPFLOOR, O_FEATURES, O_SPLIT, O_PRINT, O_HTML, O_CALIB,
         O_SHAPES, O_ROUTING };
  static const struct option opts[] = {
    { "model", required_argument, NULL, O_MODEL },
    { "opgraph", required_argument, NULL, O_OPGRAPH },
    { "gpu", required_argument, NULL, O_GPU },
    { "batch", required_argument, NULL, O_BATCH },
    { "seq", required_argument, NULL, O_SEQ },
    { "mode", required_argument, NULL, O_MODE },
    { "dtype", required_argument, NULL, O_DTYPE },
    { "precision", required_argument, NULL, O_PRECISION },
    { "predictor", required_argument, NULL, O_PRED },
    { "strategy", required_argument, NULL, O_STRAT },
    { "nodes", required_argument, NULL, O_NODES },
    { "gpus-per-node", required_argument, NULL, O_GPN },
    { "per-op", optional_argument, NULL, O_PEROP },
    { "format", required_argument, NULL, O_FORMAT },
    { "plugin-path", required_argument, NULL, O_PPATH },
    { "explain", no_argument, NULL, O_EXPLAIN },
    { "neusight", required_argument, NULL, O_NEUSIGHT },
    { "table", required_argument, NULL, O_TABLE },
    { "layers", required_argument, NULL, O_LAYERS },
    { "data", required_argument, NULL, O_DATA },
    { "out", required_argument, NULL, O_OUT },
    { "seed", required_argument, NULL, O_SEED },
    { "epochs", required_argument, NULL, O_EPOCHS },
    { "members", required_argument, NULL, O_MEMBERS },
    { "reference", required_argument, NULL, O_REFERENCE },
    { "in-dist", required_argument, NULL, O_INDIST },
    { "plugin-opt", required_argument, NULL, O_POPT },
    { "fusion", no_argument, NULL, O_FUSION },
    { "engine", optional_argument, NULL, O_ENGINE },
    { "routing", required_argument, NULL, O_ROUTING },
    { "attention", required_argument, NULL, O_ATTENTION },
    { "published", required_argument, NULL, O_PUBLISHED },
    { "gen", required_argument, NULL, O_GEN },
    { "graph", required_argument, NULL, O_GRAPH },
    { "plot", required_argument, NULL, O_PLOT },
    { "html", required_argument, NULL, O_HTML },
    { "calibration", required_argument, NULL, O_CALIB },
    { "shapes", required_argument, NULL, O_SHAPES },
    { "keep-throttled", no_argument, NULL, O_KEEPTHR },
    { "keep-floor", no_argument, NULL, O_KEEPFLOOR },
    { "features", required_argument, NULL, O_FEATURES },
    { "split", required_argument, NULL, O_SPLIT },
    { "print", required_argument, NULL, O_PRINT },
    { "verbose", no_argument, NULL, 'v' },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 }
  };
  struct cli c;
  struct plugin_set set = { NULL, 0 };
  struct calibration cal;
  const char *cmd = "predict";
  bool help = false, named = false;
  int opt, rc;

  /* perfmod kernel has options of its own (kernel.c). */
  if (argc > 1 && strcmp (argv[1], "kernel") == 0)
    return kernel_main (argc - 1, argv + 1);
  if (argc > 1 && strcmp (argv[1], "search") == 0)
    return search_main (argc - 1, argv + 1);
  if (argc > 1 && strcmp (argv[1], "serve") == 0)
    return serve_main (argc - 1, argv + 1);
  memset (&c, 0, sizeof c);
  memset (&cal, 0, sizeof cal);
  c.format = "table";
  c.command = command_line (argc, argv);   /* before getopt permutes argv */
  opterr = 0;                    /* getopt_error says it in one line */
  while ((opt = pm_getopt_long (argc, argv, ":hvV", opts)) != -1) {
    bool ok = true;
    switch (opt) {
    case O_MODEL: c.model = optarg; break;
    case O_OPGRAPH: c.opgraph = optarg; break;
    case O_GPU: c.gpu = optarg; break;
    /* every number within its documented range (perfmod(1), LIMITS) */
    case O_BATCH: ok = parse_int_range ("--batch", optarg, 1, PM_MAX_BATCH, &c.batch); break;
    case O_SEQ: ok = parse_int_range ("--seq", optarg, 1, PM_MAX_SEQ, &c.seq); break;
    case O_NODES: ok = parse_int_range ("--nodes", optarg, 1, PM_MAX_GPUS, &c.nodes); break;
    case O_GPN:
      ok = parse_int_range ("--gpus-per-node", optarg, 1, PM_MAX_GPUS, &c.gpus_per_node);
      break;
    case O_LAYERS: ok = parse_int_range ("--layers", optarg, 1, PM_MAX_COUNT, &c.layers); break;
    case O_GEN: ok = parse_int_range ("--gen", optarg, 1, PM_MAX_SEQ, &c.gen); break;
    case O_EPOCHS: ok = parse_int_range ("--epochs", optarg, 1, PM_MAX_EPOCHS, &c.epochs); break;
    case O_MEMBERS: ok = parse_int_range ("--members", optarg, 1, 16, &c.members); break;
    case O_SEED:
      ok = parse_int_range ("--seed", optarg, 0, INT64_MAX, &c.seed);
      c.seed_given = true;
      break;
    case O_DATA: c.data = optarg; break;
    case O_OUT: c.out = optarg; break;
    case O_REFERENCE: c.reference = optarg; break;
    case O_INDIST: c.in_dist = optarg; break;
    case O_POPT: ptrv_push (&c.plugin_opts, &c.nopts, optarg); break;
    case O_MODE: c.mode = optarg; break;
    case O_DTYPE: c.dtype = optarg; break;
    case O_PRECISION: c.precision = optarg; break;
    case O_PRED: c.predictors = optarg; break;
    case O_STRAT: c.strategy = optarg; break;
    case O_PEROP:
      c.per_op = true;
      if (optarg && (!parse_int64 (optarg, &c.per_op_chunk) || c.per_op_chunk < 0 ||
                     c.per_op_chunk >= PM_MAX_STAGES)) {
        pm_error ("--per-op=%s: expected a pipeline chunk, 0 to %d", optarg, PM_MAX_STAGES - 1);
        ok = false;
      }
      break;
    case O_FUSION: c.fusion = true; break;
    case O_ENGINE: {
      const struct serve_engine *e = optarg ? serve_engine_find (optarg) : NULL;
      if (optarg && e == NULL) {
        pm_error ("--engine=%s: expected %s", optarg, serve_engine_names);
        ok = false;
        break;
      }
      c.engine = true;
      c.engine_name = e ? e->name : NULL;
      break;
    }
    case O_ROUTING: ok = routing_parse ("--routing", optarg, &c.routing) == 0; break;
    case O_ATTENTION: c.attention = optarg; break;
    case O_PUBLISHED: c.published = optarg; break;
    case O_KEEPTHR: c.keep_throttled = true; break;
    case O_KEEPFLOOR: c.keep_floor = true; break;
    case O_FEATURES: c.features = optarg; break;
    case O_SPLIT: c.split = optarg; break;
    case O_PRINT:
      if (strcmp (optarg, "megatron") && strcmp (optarg, "nemo")) {
        pm_error ("--print '%s': expected megatron or nemo", optarg);
        ok = false;
      }
      c.print = optarg;
      break;
    case O_GRAPH: c.graph = optarg; break;
    case O_PLOT: c.plot = optarg; break;
    case O_HTML: c.html = optarg; break;
    case O_CALIB: c.calibration = optarg; break;
    case O_SHAPES: ok = parse_int_range ("--shapes", optarg, 1, 100000000, &c.shapes); break;
    case O_FORMAT: c.format = optarg; break;
    case O_EXPLAIN: c.explain = true; break;
    case O_NEUSIGHT: c.neusight = optarg; break;
    case O_TABLE: c.table = optarg; break;
    case O_PPATH: ptrv_push (&c.plugin_paths, &c.npaths, optarg); break;
    case 'v': pm_verbose = 1; break;
    case 'h': help = true; break;
    case 'V':
      printf ("perfmod %s (plugin ABI %d)\nplugin directory: %s\ndata directory: %s\n",
              PACKAGE_VERSION, PERFMOD_ABI_VERSION, PLUGINDIR, PKGDATADIR);
      cli_free (&c);
      return 0;
    default:
      getopt_error (opt, argv, opts, "perfmod");
      ok = false;
      break;
    }
    if (!ok)
      goto usage;
  }
  /* The command is the first word that is not an option, wherever it is. */
  if (optind < argc) {
    cmd = argv[optind++];
    named = true;
  }
  if (strcmp (cmd, "predict") && strcmp (cmd, "plugins") && strcmp (cmd, "gpus") &&
      strcmp (cmd, "strategies") && strcmp (cmd, "reproduce") && strcmp (cmd, "train") &&
      strcmp (cmd, "eval") && strcmp (cmd, "graph") && strcmp (cmd, "models") &&
      strcmp (cmd, "calibrate")) {
    pm_error ("unknown command '%s' (try perfmod --help)", cmd);
    cli_free (&c);
    return EXIT_USAGE;
  }
  if (help) {                    /* perfmod --help: every command; perfmod CMD --help: CMD */
    if (named)
      command_usage (cmd, stdout);
    else
      usage (stdout);
    cli_free (&c);
    return 0;
  }
  if (optind < argc) {
    pm_error ("unexpected argument '%s'", argv[optind]);
    goto usage;
  }
  if (c.calibration && strcmp (cmd, "predict") && strcmp (cmd, "eval") &&
      strcmp (cmd, "reproduce")) {
    pm_error ("--calibration: corrects predictions (perfmod predict, eval, reproduce, kernel, "
              "search, serve), not perfmod %s", cmd);
    goto usage;
  }
  if (c.routing != 0 && (strcmp (cmd, "predict") != 0 || c.engine_name == NULL)) {
    pm_error ("--routing: a serving engine's router (perfmod predict --mode inf --engine=NAME, "
              "perfmod serve)");
    goto usage;
  }
  if (c.shapes && strcmp (cmd, "calibrate") != 0) {
    pm_error ("--shapes: how many shapes perfmod calibrate fits on, not perfmod %s", cmd);
    goto usage;
  }
  if (c.html && strcmp (cmd, "predict") != 0) {
    pm_error ("--html: a page of a prediction, a search or a serving run, not perfmod %s", cmd);
    goto usage;
  }
  if (c.plot && strcmp (cmd, "predict") != 0) {
    pm_error ("--plot: a prediction draws the roofline chart, not perfmod %s", cmd);
    goto usage;
  }

  if ((strcmp (cmd, "gpus") == 0 || strcmp (cmd, "strategies") == 0 ||
       strcmp (cmd, "plugins") == 0) && strcmp (c.format, "table") != 0) {
    pm_error ("--format %s: perfmod %s prints a table", c.format, cmd);
    goto usage;
  }
  if (strcmp (cmd, "models") == 0) {
    if (strcmp (c.format, "table") && strcmp (c.format, "csv") && strcmp (c.format, "json")) {
      pm_error ("--format '%s': expected table, csv or json", c.format);
      goto usage;
    }
    rc = cmd_models (c.model, c.format);
    cli_free (&c);
    return rc;
  }
  if (strcmp (cmd, "gpus") == 0 || strcmp (cmd, "strategies") == 0) {
    cli_free (&c);
    return strcmp (cmd, "gpus") == 0 ? cmd_gpus () : cmd_strategies ();
  }
  if (strcmp (cmd, "train") == 0) {
    rc = cmd_train (&c);
    cli_free (&c);
    return rc;
  }
  rc = plugins_open (&set, c.plugin_paths, c.npaths, c.plugin_opts, c.nopts) < 0 ? EXIT_USAGE : 0;
  if (rc == 0 && c.calibration)
    rc = calibration_attach (&c, &set, &cal);
  if (rc)
    ;
  else if (strcmp (cmd, "calibrate") == 0)
    rc = cmd_calibrate (&c, &set);
  else if (strcmp (cmd, "plugins") == 0)
    rc = cmd_plugins (&set);
  else if (strcmp (cmd, "reproduce") == 0) {
    /* The tables are held (ro.out, and their CSV summary in ro.err)
     * until every row has succeeded: bad data leaves no half-written
     * table on stdout. */
    char *buf = NULL, *ebuf = NULL;
    size_t len = 0, elen = 0;
    struct reproduce_options ro;
    struct gpu_db gpus;
    const char *env = getenv ("PERFMOD_NEUSIGHT");
    char *published = NULL;
    ro.neusight = c.neusight ? c.neusight : env && *env ? env : NULL;
    ro.table = c.table ? c.table : "all";
    bool coll = strcmp (ro.table, "collectives") == 0;
    bool pub = strcmp (ro.table, "published") == 0 || coll;
    bool serving = strcmp (ro.table, "serving") == 0;
    char *serving_path = NULL;
    /* the serving runs: --data DIR (the moderndata folder) or the CSV
     * itself, else $PERFMOD_MODERNDATA, else the data directory's
     * ../shared/moderndata */
    if (serving) {
      const char *menv = getenv ("PERFMOD_MODERNDATA");
      char *dir = c.data ? xstrdup (c.data) : menv && *menv ? xstrdup (menv)
                : xasprintf ("%s/../shared/moderndata", pm_datadir ());
      size_t dl = strlen (dir);
      if (dl > 4 && strcmp (dir + dl - 4, ".csv") == 0)
        serving_path = dir;
      else {
        serving_path = xasprintf ("%s/aiconfigurator/silicon_sample_h100_sxm.csv", dir);
        if (access (serving_path, R_OK) != 0 && access (dir, R_OK) == 0) {
          char *flat = xasprintf ("%s/silicon_sample_h100_sxm.csv", dir);
          if (access (flat, R_OK) == 0) {
            free (serving_path);
            serving_path = flat;
          }
          else
            free (flat);
        }
        free (dir);
      }
    }
    ro.serving = serving_path;
    /* the installed runs, or the source tree's (./run) */
    if (pub && c.published == NULL) {
      const char *file = coll ? "published-collectives.csv" : "published-runs.csv";
      published = xasprintf ("%s/%s", pm_datadir (), file);
      if (access (published, R_OK) != 0) {
        free (published);
        published = xasprintf ("%s/tests/%s", pm_datadir (), file);
      }
    }
    ro.published = c.published ? c.published : published;
    /* JSON: the CSV's rows by its names */
    bool json_out = strcmp (c.format, "json") == 0;
    ro.format = json_out ? "csv" : c.format;
    ro.build = c.graph && strcmp (c.graph, "builder") == 0;
    if (c.graph && !ro.build && strcmp (c.graph, "opgraph") != 0) {
      pm_error ("--graph '%s': expected builder or opgraph", c.graph);
      rc = EXIT_USAGE;
    }
    else if (ro.build && (strcmp (ro.table, "perop") == 0 || strcmp (ro.table, "nodesum") == 0)) {
      pm_error ("--table %s needs NeuSight's traced graphs (--graph opgraph): its measured "
                "per-node latencies are joined by the traces' node names", ro.table);
      rc = EXIT_USAGE;
    }
    else if (c.data && !serving) {
      pm_error ("--data with reproduce goes with --table serving (the moderndata folder)");
      rc = EXIT_USAGE;
    }
    else if (serving && (c.graph || c.neusight || c.published)) {
      pm_error ("--table serving predicts built graphs of its runs: no --graph, --neusight or "
                "--published");
      rc = EXIT_USAGE;
    }
    else if (c.published && !pub) {
      pm_error ("--published FILE goes with --table published or collectives");
      rc = EXIT_USAGE;
    }
    else if (pub && (c.graph || c.neusight)) {
      pm_error ("--table %s predicts %s: no --graph or --neusight", ro.table,
                coll ? "its collectives" : "built graphs of its runs");
      rc = EXIT_USAGE;
    }
    else if (ro.neusight == NULL && !pub && !serving) {
      pm_error ("reproduce needs --neusight DIR (or PERFMOD_NEUSIGHT): the NeuSight artifact folder");
      rc = EXIT_USAGE;
    }
    else if (strcmp (ro.table, "inf") && strcmp (ro.table, "train") && strcmp (ro.table, "perop") &&
             strcmp (ro.table, "nodesum") && strcmp (ro.table, "distributed") &&
             strcmp (ro.table, "all") && !pub && !serving) {
      pm_error ("--table '%s': expected inf, train, perop, nodesum, distributed, all, "
                "published, collectives or serving", ro.table);
      rc = EXIT_USAGE;
    }
    else if (strcmp (ro.format, "table") && strcmp (ro.format, "csv") && !json_out) {
      pm_error ("--format '%s': reproduce prints table, csv or json", ro.format);
      rc = EXIT_USAGE;
    }
    else if (gpu_db_load_data (&gpus) < 0)
      rc = EXIT_USAGE;
    else if ((ro.out = open_memstream (&buf, &len)) == NULL ||
             (ro.err = open_memstream (&ebuf, &elen)) == NULL) {
      pm_error ("cannot hold the tables in memory: %s", strerror (errno));
      if (ro.out)
        fclose (ro.out);
      free (buf);
      gpu_db_free (&gpus);
      rc = EXIT_RUNTIME;
    }
    else {
      ro.predictors = strv_split (c.predictors ? c.predictors : pub ? "roofline,tile-mlp"
                                                                  : "roofline", ',');
      if (coll)
        rc = reproduce_collectives (&set, &gpus, &ro);
      else if (pub)
        rc = reproduce_published (&set, &gpus, &ro);   /* physical units */
      else if (serving) {
        openblas_set_num_threads (1);   /* a network row at a time: its threads only contend */
        rc = reproduce_serving (&set, &gpus, &ro);
      }
      else {
        plugins_neusight_units (&set);   /* the paper's tables, unit for unit */
        if (strcmp (ro.table, "distributed") == 0)
          rc = reproduce_distributed (&set, &gpus, &ro);
        else {
          rc = reproduce (&set, &gpus, &ro);
          /* all: the distributed table too, in table form (its CSV has its own rows) */
          if (rc == 0 && strcmp (ro.table, "all") == 0 && strcmp (ro.format, "table") == 0) {
            fputc ('\n', ro.out);
            rc = reproduce_distributed (&set, &gpus, &ro);
          }
        }
      }
      fclose (ro.out);
      fclose (ro.err);
      if (rc == 0 && json_out) {          /* the CSV's rows by its names */
        json_t *root = json_envelope ("reproduce");
        json_object_set_new (root, "table", json_string (ro.table));
        json_object_set_new (root, "rows", json_from_csv (buf, len));
        json_print (root, stdout);
        fflush (stdout);
        fwrite (ebuf, 1, elen, stderr);
      }
      else if (rc == 0) {
        fwrite (buf, 1, len, stdout);
        fflush (stdout);
        fwrite (ebuf, 1, elen, stderr);
      }
      free (buf);
      free (ebuf);
      strv_free (ro.predictors);
      gpu_db_free (&gpus);
    }
    free (published);
    free (serving_path);
  }
  else if (strcmp (cmd, "eval") == 0)
    rc = cmd_eval (&c, &set);
  else if (strcmp (cmd, "graph") == 0)
    rc = cmd_graph (&c, &set);
  else if (c.html)
    rc = predict_html (&c, &set);
  else
    rc = cmd_predict (&c, &set);
  /* once per run, whichever command predicted the kernels */
  plugins_note_fallbacks (&set, stderr);
  plugins_unload (&set);
  calib_free (&cal);
  cli_free (&c);
  return plugins_exit_status (rc);

usage:
  cli_free (&c);
  return EXIT_USAGE;
}

/* fuzz/fuzz-cli.c calls perfmod_main itself. */
#ifndef PERFMOD_NO_MAIN
int
main (int argc, char **argv)
{
  if (pm_limits_check () < 0)
    return EXIT_USAGE;
  return stdout_status (perfmod_main (argc, argv));
}
#endif
