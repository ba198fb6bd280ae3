/* t-parsers.c: unit tests of the CSV reader, the Python-literal parser, strategy specs and op-graph import. */
#include <config.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "tap.h"

static char tmpdir[] = "/tmp/perfmod-parsers.XXXXXX";

static char *
write_tmp (const char *name, const char *text)
{
  char *path = xasprintf ("%s/%s", tmpdir, name);
  FILE *fp = fopen (path, "w");
  fputs (text, fp);
  fclose (fp);
  return path;
}

static void
test_csv (void)
{
  struct csv_reader r;
  char *p = write_tmp ("a.csv", "a,b,c\n\"x,1\",\"say \"\"hi\"\"\",\"two\nlines\"\nlast,,row");
  csv_open (&r, p);
  ok (csv_next (&r) == 1 && r.nfields == 3 && strcmp (r.fields[2], "c") == 0, "csv: header");
  ok (csv_next (&r) == 1 && r.nfields == 3 && strcmp (r.fields[0], "x,1") == 0 &&
      strcmp (r.fields[1], "say \"hi\"") == 0 && strcmp (r.fields[2], "two\nlines") == 0,
      "csv: quoted comma, doubled quote, newline inside quotes");
  ok (r.line == 2, "csv: record line is where it starts");
  ok (csv_next (&r) == 1 && r.nfields == 3 && r.fields[1][0] == '\0' && r.line == 4,
      "csv: empty field, last line without newline, line numbers count quoted newlines");
  ok (csv_next (&r) == 0, "csv: end of file");
  csv_close (&r);
  free (p);
  p = write_tmp ("b.csv", "a\n\"open\n");
  csv_open (&r, p);
  csv_next (&r);
  ok (csv_next (&r) == -1, "csv: unterminated quote is an error");
  csv_close (&r);
  free (p);
  p = write_tmp ("c.csv", "\"a\"b\n");
  csv_open (&r, p);
  ok (csv_next (&r) == -1, "csv: text after a closing quote is an error");
  csv_close (&r);
  free (p);
}

/* Interning by hash: equal names, one copy; 10^5 distinct names each
 * found again (a linear pool made this quadratic). */
static void
test_intern (void)
{
  enum { N = 100000 };
  const char **v = xcalloc (N, sizeof *v);
  char name[32];
  int bad = 0;
  for (int i = 0; i < N; i++) {
    snprintf (name, sizeof name, "kernel_%d", i);
    v[i] = intern (name);
    bad += strcmp (v[i], name) != 0;
  }
  for (int i = 0; i < N; i++) {
    snprintf (name, sizeof name, "kernel_%d", i);
    bad += intern (name) != v[i];
  }
  ok (bad == 0 && intern ("kernel_7") != intern ("kernel_8"),
      "intern: 100000 distinct names, each interned once and found again");
  free (v);
}

static void
test_pylit (void)
{
  struct pyv v;
  const char *err;
  size_t pos;
  ok (pyv_parse ("[['Linear', (4096, 1280, 3840)], ['MEM', ((1,), (4, 1024))]]", &v, &err, &pos) == 0 &&
      v.n == 2 && v.items[0].items[1].n == 3 && v.items[0].items[1].items[2].i == 3840 &&
      strcmp (v.items[1].items[0].s, "MEM") == 0 && v.items[1].items[1].items[0].n == 1,
      "pylit: nested lists, tuples, one-element tuples, strings");
  pyv_free (&v);
  ok (pyv_parse ("set()", &v, &err, &pos) == 0 && v.type == PYV_LIST && v.n == 0, "pylit: set()");
  pyv_free (&v);
  ok (pyv_parse ("{'a', \"b\"}", &v, &err, &pos) == 0 && v.n == 2, "pylit: a set of strings");
  pyv_free (&v);
  ok (pyv_parse ("[1, 2", &v, &err, &pos) < 0 && err != NULL, "pylit: unclosed list refused");
  ok (pyv_parse ("[1, x]", &v, &err, &pos) < 0 && pos == 4, "pylit: bad token reported at its offset");
  ok (pyv_parse ("(1,) 2", &v, &err, &pos) < 0 && strcmp (err, "trailing text") == 0,
      "pylit: trailing text refused");
  ok (pyv_parse ("['unterminated", &v, &err, &pos) < 0, "pylit: unterminated string refused");
}

static void
test_strategy (void)
{
  struct strategy s;
  strategy_init (&s);
  ok (strategy_parse (&s, "tp=8, pp=4,schedule=interleaved,vp=2,zero=1,recompute=selective,mbs=2",
                      "t") == 0 && s.tp == 8 && s.pp == 4 && s.vp == 2 &&
      s.schedule == SCHED_INTERLEAVED && s.zero == 1 && s.recompute == RECOMPUTE_SELECTIVE &&
      s.mbs == 2 && s.dp == 1, "strategy: every key parsed, dp defaults to 1");
  strategy_init (&s);
  ok (strategy_parse (&s, "tp=4", "t") == 0 && strategy_resolve (&s, 32, true, 64) == 0 && s.dp == 8,
      "strategy: dp derived from the GPUs given (32 / tp=4)");
  strategy_init (&s);
  ok (strategy_parse (&s, "tp=3", "t") == 0 && strategy_resolve (&s, 32, true, 64) < 0,
      "strategy: tp not dividing the GPUs is refused");
  strategy_init (&s);
  ok (strategy_parse (&s, "vp=2", "t") < 0, "strategy: vp without interleaved refused");
  strategy_init (&s);
  ok (strategy_parse (&s, "ep=4,dp=2", "t") == 0 && strategy_resolve (&s, 8, false, 8) < 0,
      "strategy: ep must divide tp x dp");
  strategy_init (&s);
  ok (strategy_parse (&s, "tp=", "t") < 0, "strategy: empty value refused");
}

static void
test_opgraph (void)
{
  struct graph g;
  char *p = write_tmp ("g.csv",
    "Name,OpName,FwOps,BwOps,AccOps,Prev,Next,InputShapes,OutputShape\n"
    "emb,EMBEDDING,\"[['MEM', ((2, 8), (2, 8, 4))]]\",[],[],set(),{'x'},\"[(2, 8)]\",\"(2, 8, 4)\"\n"
    "transformer_h_0_ln_1,VECln,\"[['VECln', (16, 4)]]\",[],[],set(),set(),\"[(2, 8, 4)]\",\"(2, 8, 4)\"\n"
    "transformer_h_0_mlp,Linear,\"[['Linear', (16, 4, 16)]]\",\"[['Linear', (16, 16, 4)], ['Linear', (16, 16, 4)]]\",\"[['VECadd', [1, 64]]]\",set(),set(),\"[(16, 4)]\",\"(16, 16)\"\n"
    "drop,dropout,\"[['MEM', ((16,), (16,))]]\",[],[],set(),set(),\"[(16,)]\",\"(16,)\"\n"
    "add_15,VECadd,\"[['VECadd', (16, 4)]]\",[],[],set(),set(),\"[(2, 8, 4), (2, 8, 4)]\",\"(2, 8, 4)\"\n"
    "view,misc,[],[],[],set(),set(),[],[]\n"
    "ln_f,VECln,\"[['VECln', (16, 4)]]\",[],[],set(),set(),\"[(2, 8, 4)]\",\"(2, 8, 4)\"\n");
  ok (opgraph_import (&g, p, 12) == 0, "opgraph: import a small trace");
  ok (g.n == 7 && g.layer_begin == 1 && g.layer_end == 6 && g.repeat == 12,
      "opgraph: the layer runs from ln_1 through the residual add and trailing misc, x12");
  ok (g.nodes[2].nops[PHASE_BW] == 2 && g.nodes[2].ops[PHASE_BW][0].n == 16 &&
      g.nodes[2].ops[PHASE_ACC][0].kclass == PERFMOD_KERNEL_ELEMENTWISE,
      "opgraph: phases keep their kernels and dimensions");
  ok (g.nodes[0].ops[0][0].elems == 16 + 64 && g.nodes[4].in_elems == 128 && g.nodes[4].out_elems == 64,
      "opgraph: MEM elements and node shapes");
  ok (graph_weight (&g, 0) == 1 && graph_weight (&g, 3) == 12 && graph_layer (&g, 6) == -1,
      "opgraph: weights and layers");
  graph_free (&g);
  free (p);

  p = write_tmp ("bad.csv", "Name,OpName,FwOps,BwOps,AccOps,Prev,Next,InputShapes,OutputShape\n"
                 "a,Linear,\"[['Conv', (1, 2)]]\",[],[],set(),set(),[],\"(1,)\"\n");
  ok (opgraph_import (&g, p, 1) < 0, "opgraph: unknown kernel refused");
  free (p);
  p = write_tmp ("bad2.csv", "Name,OpName,FwOps,BwOps,AccOps,Prev,Next,InputShapes,OutputShape\n"
                 "a,Linear,\"[['Linear', (1, 2)\",[],[],set(),set(),[],\"(1,)\"\n");
  ok (opgraph_import (&g, p, 1) < 0, "opgraph: malformed literal refused");
  free (p);
  p = write_tmp ("bad3.csv", "Name,OpName,FwOps\n");
  ok (opgraph_import (&g, p, 1) < 0, "opgraph: missing columns refused");
  free (p);
}

int
main (void)
{
  if (mkdtemp (tmpdir) == NULL)
    return 1;
  test_csv ();
  test_intern ();
  test_pylit ();
  test_strategy ();
  test_opgraph ();
  done_testing ();
  {
    char *cmd = xasprintf ("rm -rf %s", tmpdir);
    if (system (cmd) != 0)
      diag ("could not remove %s", tmpdir);
    free (cmd);
  }
  return exit_status ();
}
