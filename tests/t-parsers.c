/* t-parsers.c: unit tests of the CSV reader, the Python-literal parser, strategy specs, op-graph import, interning, INI lines and tile rules. */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

/* Byte order marks and directories (issue 23). */
static void
test_csv_hostile (void)
{
  struct csv_reader r;
  char msg[512];
  char *p = write_tmp ("bom.csv", "\xef\xbb\xbfName,b\n1,2\n");
  ok (csv_open (&r, p) == 0 && csv_next (&r) == 1 && strcmp (r.fields[0], "Name") == 0 &&
      csv_next (&r) == 1 && strcmp (r.fields[0], "1") == 0 && r.line == 2,
      "csv: a UTF-8 byte order mark is no part of the first column's name");
  csv_close (&r);
  free (p);
  p = write_tmp ("bomq.csv", "\xef\xbb\xbf\"Name\",b\n");
  ok (csv_open (&r, p) == 0 && csv_next (&r) == 1 && strcmp (r.fields[0], "Name") == 0,
      "csv: a quoted first field after a byte order mark");
  csv_close (&r);
  free (p);
  p = write_tmp ("nobom.csv", "\xef\xbbx,b\n");
  ok (csv_open (&r, p) == 0 && csv_next (&r) == 1 && strcmp (r.fields[0], "\xef\xbbx") == 0,
      "csv: two bytes of a mark and then text are text");
  csv_close (&r);
  free (p);
  errno = 0;
  ok (csv_open (&r, tmpdir) < 0 && errno == EISDIR, "csv: a directory is refused at open, EISDIR");

  struct graph g;
  p = write_tmp ("bomg.csv", "\xef\xbb\xbfName,OpName,FwOps,BwOps,AccOps,Prev,Next,InputShapes,"
                 "OutputShape\na,Linear,\"[['Linear', (1, 2, 3)]]\",[],[],set(),set(),[],\"(1, 3)\"\n");
  pm_error_capture (msg, sizeof msg);
  int rc = opgraph_import (&g, p, 1);
  pm_error_capture (NULL, 0);
  ok (rc == 0 && g.n == 1, "opgraph: a trace written with a byte order mark loads (%s)", msg);
  if (rc == 0)
    graph_free (&g);
  free (p);
  pm_error_capture (msg, sizeof msg);
  rc = opgraph_import (&g, tmpdir, 1);
  pm_error_capture (NULL, 0);
  ok (rc < 0 && strstr (msg, tmpdir) && strstr (msg, "Is a directory"),
      "opgraph: a directory is refused, naming it: %s", msg);
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

static int
ini_note (void *user, const char *section, const char *name, const char *value)
{
  (void) section;
  if (strcmp (name, "note") == 0)
    *(size_t *) user = strlen (value);
  else
    *(size_t *) user = (size_t) -1;     /* any other key: a cut line's tail */
  return 1;
}

/* inih's line limit (Debian: 200 bytes) and what lies past it. */
static void
test_ini_lines (void)
{
  struct ini_file f;
  char msg[512], line[512];
  size_t got = 0;
  int rc;
  /* a 300-character note and nothing after it, not even a newline */
  memset (line, 'x', sizeof line);
  memcpy (line, "note = ", 7);
  snprintf (line + 300, sizeof line - 300, "%s", "");
  char *text = xasprintf ("[g]\n%s", line);
  char *p = write_tmp ("long.ini", text);
  pm_error_capture (msg, sizeof msg);
  rc = ini_file_parse (&f, p, ini_note, &got);
  pm_error_capture (NULL, 0);
  ok (rc < 0 && strstr (msg, "long.ini:2: line longer than"),
      "ini: a 300-character line at the end of the file is refused with file:line: %s", msg);
  free (text);
  free (p);
  /* a long note whose tail would parse as a key of its own */
  memcpy (line + 199, "mem_gb = 1\n", 12);
  text = xasprintf ("[g]\n%s", line);
  p = write_tmp ("tail.ini", text);
  got = 0;
  pm_error_capture (msg, sizeof msg);
  rc = ini_file_parse (&f, p, ini_note, &got);
  pm_error_capture (NULL, 0);
  ok (rc < 0 && got != (size_t) -1 && strstr (msg, "tail.ini:2: line longer than"),
      "ini: the tail of a cut line never reaches the handler as a key");
  free (text);
  free (p);
  /* the longest line inih keeps whole (199 characters) is read as it is */
  memset (line, 'y', sizeof line);
  memcpy (line, "note = ", 7);
  snprintf (line + 199, sizeof line - 199, "\n[h]\nnote = z\n");
  text = xasprintf ("[g]\n%s", line);
  p = write_tmp ("fits.ini", text);
  got = 0;
  pm_error_capture (msg, sizeof msg);
  rc = ini_file_parse (&f, p, ini_note, &got);
  pm_error_capture (NULL, 0);
  ok (rc == 0 && got == 1 && f.line == 4, "ini: a line of 199 characters and the lines after it are read");
  free (text);
  free (p);
}

/* Each capture group read to its end and no further (issue 23). */
static void
test_tile_groups (void)
{
  struct tile_rules r;
  char msg[512];
  double t[2] = { 0, 0 };
  int64_t grid[3] = { 1, 1, 1 };
  char *dir = xasprintf ("%s/tiles.d", tmpdir);
  mkdir (dir, 0700);
  char *p = write_tmp ("tiles.d/10-t.ini",
                       "[digits]\nclasses = linear\npattern = sgemm_([0-9])([0-9])\n"
                       "[optional]\nclasses = bmm\npattern = (?:mt([0-9]+)_)?gemm_([0-9]+)\n");
  ok (tile_rules_load (&r, dir) == 0, "tiles: rules with one-digit groups load");
  ok (tile_of (&r, PERFMOD_KERNEL_LINEAR, "ampere_sgemm_128x64_tn", 1, 1, grid, t) == 0 &&
      t[0] == 1 && t[1] == 2, "tiles: sgemm_([0-9])([0-9]) on sgemm_128x64 is 1 x 2 (%g x %g)",
      t[0], t[1]);
  pm_error_capture (msg, sizeof msg);
  int rc = tile_of (&r, PERFMOD_KERNEL_BMM, "xgemm_64", 1, 1, grid, t);
  pm_error_capture (NULL, 0);
  ok (rc < 0 && strstr (msg, "[optional]") && strstr (msg, "no number"),
      "tiles: a group that took no part is refused, naming the rule: %s", msg);
  tile_rules_free (&r);
  free (p);
  free (dir);
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
  ok (strategy_parse (&s, "tp=4", "t") == 0 && strategy_resolve (&s, 4, 8, 64) == 0 && s.dp == 8,
      "strategy: dp derived from the GPUs given (32 / tp=4)");
  strategy_init (&s);
  ok (strategy_parse (&s, "tp=3", "t") == 0 && strategy_resolve (&s, 4, 8, 64) < 0,
      "strategy: tp not dividing the GPUs is refused");
  strategy_init (&s);
  ok (strategy_parse (&s, "vp=2", "t") < 0, "strategy: vp without interleaved refused");
  strategy_init (&s);
  ok (strategy_parse (&s, "ep=4,dp=2", "t") == 0 && strategy_resolve (&s, 0, 8, 8) < 0,
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
  test_csv_hostile ();
  test_intern ();
  test_ini_lines ();
  test_tile_groups ();
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
