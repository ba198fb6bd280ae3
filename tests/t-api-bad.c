/* t-api-bad.c: libperfmod given every bad value in a table: each call returns -1 with a reason naming what was wrong, never aborts, exits or prints; closed contexts and struct sizes are checked. */
#include <config.h>

#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perfmod.h"
#include "tap.h"

/* A good request of each kind, then one field changed. */
static void
predict_request (struct perfmod_request *q)
{
  memset (q, 0, sizeof *q);
  q->struct_size = sizeof *q;
  q->model = "gpt2-large";
  q->gpu = "h100";
  q->batch = 8;
  q->seq = 512;
}

static void
serve_request (struct perfmod_serve_request *q)
{
  memset (q, 0, sizeof *q);
  q->struct_size = sizeof *q;
  q->model = "gpt2-large";
  q->predictor = "roofline";
  q->concurrency = 2;
  q->isl = 64;
  q->osl = 8;
  q->requests = 4;
}

static void
search_request (struct perfmod_search_request *q)
{
  memset (q, 0, sizeof *q);
  q->struct_size = sizeof *q;
  q->model = "gpt2-large";
  q->gpus = 2;
  q->global_batch = 8;
  q->seq = 512;
  q->fix = "mbs=1,vp=1";
  q->jobs = 1;
}

#define I64MIN INT64_MIN
#define I64MAX INT64_MAX
#define BIG ((int64_t) 1 << 32)

struct pcase {
  const char *what, *expect;   /* the case; a word the reason must hold */
  void (*set) (struct perfmod_request *, int64_t);
  int64_t v;
};

static void p_batch (struct perfmod_request *q, int64_t v) { q->batch = v; }
static void p_seq (struct perfmod_request *q, int64_t v) { q->seq = v; }
static void p_nodes (struct perfmod_request *q, int64_t v) { q->nodes = v; }
static void p_gpn (struct perfmod_request *q, int64_t v) { q->gpus_per_node = v; }
static void p_size (struct perfmod_request *q, int64_t v) { q->struct_size = (uint32_t) v; }
static void p_model (struct perfmod_request *q, int64_t v) { q->model = v ? "no-such-model" : NULL; }
static void p_mode (struct perfmod_request *q, int64_t v) { (void) v; q->mode = "serve"; }
static void p_strategy (struct perfmod_request *q, int64_t v) { (void) v; q->strategy = "tp=0"; }
static void p_megatron_flash (struct perfmod_request *q, int64_t v)
{
  (void) v;
  q->mode = "train";
  q->strategy = "tp=2,kernels=megatron";
  q->attention = "flash";
}

static const struct pcase pcases[] = {
  { "batch -8", "batch", p_batch, -8 },
  { "batch INT64_MIN", "batch", p_batch, I64MIN },
  { "batch 2^32", "batch", p_batch, BIG },
  { "seq -1", "seq", p_seq, -1 },
  { "seq INT64_MAX", "seq", p_seq, I64MAX },
  { "nodes -2", "nodes", p_nodes, -2 },
  { "nodes INT64_MAX", "nodes", p_nodes, I64MAX },
  { "gpus_per_node 2^32 + 8", "gpus_per_node", p_gpn, BIG + 8 },
  { "gpus_per_node -1", "gpus_per_node", p_gpn, -1 },
  { "struct_size 0", "struct_size", p_size, 0 },
  { "struct_size 4", "struct_size", p_size, 4 },
  { "no model", "model", p_model, 0 },
  { "an unknown model", "no-such-model", p_model, 1 },
  { "mode serve", "mode", p_mode, 0 },
  { "strategy tp=0", "tp", p_strategy, 0 },
  { "kernels=megatron with attention flash", "masked softmax", p_megatron_flash, 0 },
};

struct scase {
  const char *what, *expect;
  void (*set) (struct perfmod_serve_request *, int64_t);
  int64_t v;
};
static void s_conc (struct perfmod_serve_request *q, int64_t v) { q->concurrency = v; }
static void s_isl (struct perfmod_serve_request *q, int64_t v) { q->isl = v; }
static void s_osl (struct perfmod_serve_request *q, int64_t v) { q->osl = v; }
static void s_req (struct perfmod_serve_request *q, int64_t v) { q->requests = v; }
static void s_rate (struct perfmod_serve_request *q, int64_t v)
{
  q->concurrency = 0;
  q->rate = v == 0 ? NAN : v == 1 ? INFINITY : -1;
}
static void s_batch (struct perfmod_serve_request *q, int64_t v) { q->max_batch = v; }
static void s_gpn (struct perfmod_serve_request *q, int64_t v) { q->gpus_per_node = v; }
static void s_accept (struct perfmod_serve_request *q, int64_t v)
{
  q->spec = "mtp";
  q->spec_accept = v ? 1.5 : NAN;
}

static const struct scase scases[] = {
  { "concurrency -1", "concurrency", s_conc, -1 },
  { "concurrency INT64_MAX", "concurrency", s_conc, I64MAX },
  { "isl 0", "isl", s_isl, 0 },
  { "isl INT64_MIN", "isl", s_isl, I64MIN },
  { "osl 2^40", "osl", s_osl, (int64_t) 1 << 40 },
  { "requests -5", "requests", s_req, -5 },
  { "rate NaN", "rate", s_rate, 0 },
  { "rate infinite", "rate", s_rate, 1 },
  { "rate -1", "rate", s_rate, 2 },
  { "max_batch -3", "max-batch", s_batch, -3 },
  { "gpus_per_node 2^32", "gpus-per-node", s_gpn, BIG },
  { "spec_accept 1.5", "accept", s_accept, 1 },
  { "spec_accept NaN", "accept", s_accept, 0 },
};

struct qcase {
  const char *what, *expect;
  void (*set) (struct perfmod_search_request *, int64_t);
  int64_t v;
};
static void q_gpus (struct perfmod_search_request *q, int64_t v) { q->gpus = v; }
static void q_batch (struct perfmod_search_request *q, int64_t v) { q->global_batch = v; }
static void q_top (struct perfmod_search_request *q, int64_t v) { q->top = v; }
static void q_tokens (struct perfmod_search_request *q, int64_t v) { q->tokens = v ? -1 : NAN; }

static const struct qcase qcases[] = {
  { "gpus 0", "gpus", q_gpus, 0 },
  { "gpus INT64_MIN", "gpus", q_gpus, I64MIN },
  { "global_batch -1", "global batch", q_batch, -1 },
  { "top 5000", "top", q_top, 5000 },
  { "tokens NaN", "tokens", q_tokens, 0 },
  { "tokens -1", "tokens", q_tokens, 1 },
};

#define COUNT(v) (sizeof v / sizeof v[0])

/* rc -1, a reason holding `expect`, and one line. */
static void
expect_refused (int rc, const char *err, const char *expect, const char *what)
{
  bool good = rc == -1 && err[0] != '\0' && strstr (err, expect) != NULL && !strchr (err, '\n');
  ok (good, "%s: refused, saying '%s'", what, expect);
  if (!good)
    diag ("rc %d, err '%s'", rc, err);
}

int
main (void)
{
  char err[512];
  perfmod_ctx *ctx, *closed;
  struct perfmod_request pq;
  struct perfmod_result pr;
  struct perfmod_serve_request sq;
  struct perfmod_serve_result sr;
  struct perfmod_search_request qq;
  struct perfmod_search_result qr;
  int rc;

  plan ((int) (COUNT (pcases) + COUNT (scases) + COUNT (qcases)) + 12);
  ctx = perfmod_open (NULL, NULL, err, sizeof err);
  if (ctx == NULL) {
    printf ("Bail out! perfmod_open: %s\n", err);
    return 1;
  }
  predict_request (&pq);
  memset (&pr, 0, sizeof pr);
  pr.struct_size = sizeof pr;
  rc = perfmod_predict (ctx, &pq, &pr, err, sizeof err);
  ok (rc == 0 && pr.step_ms > 0, "the good prediction predicts (%s)", rc ? err : "ok");

  for (size_t i = 0; i < COUNT (pcases); i++) {
    predict_request (&pq);
    pcases[i].set (&pq, pcases[i].v);
    memset (&pr, 0, sizeof pr);
    pr.struct_size = sizeof pr;
    err[0] = '\0';
    rc = perfmod_predict (ctx, &pq, &pr, err, sizeof err);
    expect_refused (rc, err, pcases[i].expect, pcases[i].what);
  }
  /* a result larger than the library knows is not written past its size */
  predict_request (&pq);
  pr.struct_size = UINT32_MAX;
  err[0] = '\0';
  rc = perfmod_predict (ctx, &pq, &pr, err, sizeof err);
  expect_refused (rc, err, "struct_size", "a result struct_size of 2^32 - 1");

  serve_request (&sq);
  memset (&sr, 0, sizeof sr);
  sr.struct_size = sizeof sr;
  rc = perfmod_serve (ctx, &sq, &sr, err, sizeof err);
  ok (rc == 0 && sr.ttft_ms.mean > 0, "the good serving request simulates (%s)", rc ? err : "ok");
  for (size_t i = 0; i < COUNT (scases); i++) {
    serve_request (&sq);
    scases[i].set (&sq, scases[i].v);
    memset (&sr, 0, sizeof sr);
    sr.struct_size = sizeof sr;
    err[0] = '\0';
    rc = perfmod_serve (ctx, &sq, &sr, err, sizeof err);
    expect_refused (rc, err, scases[i].expect, scases[i].what);
  }

  search_request (&qq);
  memset (&qr, 0, sizeof qr);
  qr.struct_size = sizeof qr;
  qr.row_size = sizeof (struct perfmod_search_row);
  rc = perfmod_search (ctx, &qq, &qr, err, sizeof err);
  ok (rc == 0 && qr.nbest > 0, "the good search finds layouts (%s)", rc ? err : "ok");
  perfmod_search_result_free (&qr);
  for (size_t i = 0; i < COUNT (qcases); i++) {
    search_request (&qq);
    qcases[i].set (&qq, qcases[i].v);
    memset (&qr, 0, sizeof qr);
    qr.struct_size = sizeof qr;
    qr.row_size = sizeof (struct perfmod_search_row);
    err[0] = '\0';
    rc = perfmod_search (ctx, &qq, &qr, err, sizeof err);
    expect_refused (rc, err, qcases[i].expect, qcases[i].what);
    perfmod_search_result_free (&qr);
  }
  search_request (&qq);
  memset (&qr, 0, sizeof qr);
  qr.struct_size = UINT32_MAX;
  qr.row_size = sizeof (struct perfmod_search_row);
  err[0] = '\0';
  rc = perfmod_search (ctx, &qq, &qr, err, sizeof err);
  expect_refused (rc, err, "struct_size", "a search result struct_size of 2^32 - 1");
  memset (&qr, 0, sizeof qr);
  qr.struct_size = sizeof qr;
  qr.row_size = UINT32_MAX;
  err[0] = '\0';
  rc = perfmod_search (ctx, &qq, &qr, err, sizeof err);
  expect_refused (rc, err, "row_size", "a row_size of 2^32 - 1");

  /* NULLs */
  err[0] = '\0';
  rc = perfmod_predict (ctx, NULL, &pr, err, sizeof err);
  expect_refused (rc, err, "NULL", "a NULL request");
  rc = perfmod_predict (ctx, &pq, &pr, NULL, 0);
  ok (rc == -1, "no error buffer: still -1, nothing written");

  /* a closed context: refused, closed again harmlessly */
  closed = perfmod_open (NULL, NULL, err, sizeof err);
  perfmod_close (closed);
  predict_request (&pq);
  pr.struct_size = sizeof pr;
  err[0] = '\0';
  rc = perfmod_predict (closed, &pq, &pr, err, sizeof err);
  expect_refused (rc, err, "not open", "a prediction on a closed context");
  err[0] = '\0';
  rc = perfmod_serve (closed, &sq, &sr, err, sizeof err);
  expect_refused (rc, err, "not open", "serving on a closed context");
  perfmod_close (closed);
  ok (1, "a second perfmod_close of the same context returns (no crash)");
  rc = perfmod_predict (ctx, &pq, &pr, err, sizeof err);
  ok (rc == 0, "the open context still predicts after another was closed twice");

  perfmod_close (ctx);
  fflush (stdout);
  return tap_failed ? 1 : 0;
}
