/* graph.c: perfmod graph: the kernels of a built or imported graph, with their FLOPs, bytes and regime. */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "cli.h"

int
cmd_graph (struct cli *c, struct plugin_set *set)
{
  struct workload w;
  int rc = workload_load (c, &w);
  if (rc)
    return rc;
  if (strcmp (c->format, "json") == 0) {
    pm_error ("--format json: graph prints table or csv");
    rc = EXIT_USAGE;
  }
  else if (c->strategy && (c->opgraph || !w.have_model)) {
    pm_error ("--strategy: graph shards built graphs (--model), not imported ones");
    rc = EXIT_USAGE;
  }
  else {
    if (c->strategy) {
      /* rank 0's share: its first pipeline chunk, one micro-batch */
      struct strategy s;
      struct dist_options o;
      int gpn = c->gpus_per_node ? (int) c->gpus_per_node : w.ge->gpu.gpus_per_node;
      if (strategy_load (c, &s, gpn, w.batch) < 0) {
        workload_free (&w);
        return EXIT_USAGE;
      }
      if (!s.kernels_set)
        s.kernels = w.kernels;
      dist_options_init (&o, c, &w, &s, gpn);
      graph_free (&w.g);
      w.have_graph = false;
      if (dist_graph (set, &w.m, &w.ge->gpu, &o, &w.g) < 0) {
        workload_free (&w);
        return EXIT_USAGE;
      }
      w.have_graph = true;
      w.batch = s.mbs;
    }
    if (strcmp (c->format, "table") == 0)
      printf ("%s: %s, batch %lld x seq %lld, %s, %s graph, %lld layers\n",
              w.have_model ? w.m.name : c->opgraph, w.train ? "training step" : "inference",
              (long long) w.batch, (long long) w.seq, w.prec->name,
              c->opgraph ? "imported" : "built", (long long) w.g.repeat);
    graph_report (&w.g, &w.ge->gpu, w.prec, w.train, strcmp (c->format, "csv") == 0, stdout);
  }
  workload_free (&w);
  return rc;
}
