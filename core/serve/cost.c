/* cost.c: what one engine iteration of a serving replica costs, from the predicted kernels of its graphs: everything but attention by the iteration's tokens, attention per prompt chunk and over the decoding requests' caches, memoised on grids and interpolated. */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Token counts (and batch sizes) are predicted exactly up to GRID_LINEAR,
 * then at GRID_STEPS points an octave (4.4 % apart), linear between: a
 * GEMM's time is piecewise linear in its rows between tile waves, so the
 * interpolation stays within the spread of the kernels themselves. */
#define GRID_LINEAR 64
#define GRID_STEPS 16
#define GRID_N ((size_t) GRID_LINEAR + GRID_STEPS * 26)   /* to 2^32 tokens */
/* Decode contexts (cached tokens per request) from CTX_MIN, CTX_STEPS
 * points an octave. */
#define CTX_MIN 16
#define CTX_STEPS 8
#define CTX_N ((size_t) CTX_STEPS * 28)                 /* to 2^32 tokens */

struct serve_costs {
  struct serve_layout l;
  struct dist_cache *own;        /* the chunk cache when the layout brings none */
  struct memo *memo;             /* the kernels' estimates, across grid points */
  double *pre_dense, *pre_attn;  /* per token grid point; NAN: not predicted yet */
  double *pre_moe;               /* of pre_dense, the routed experts fed replicas x the point's
                                    tokens (moe_fed nodes) */
  double *dec_dense;             /* per batch grid point */
  double **dec_attn;             /* [batch point][context point], rows made on use */
  size_t evaluations;
  int64_t tok_pts[GRID_N], ctx_pts[CTX_N];  /* the grids' points */
};

static int64_t
grid_at (size_t i)
{
  if (i < GRID_LINEAR)
    return (int64_t) i + 1;
  return llround (GRID_LINEAR * exp2 ((double) (i - GRID_LINEAR + 1) / GRID_STEPS));
}

static int64_t
ctx_at (size_t j)
{
  return llround (CTX_MIN * exp2 ((double) j / CTX_STEPS));
}

/* The grid point at or below x (clamped to the grid) and x's fraction of
 * the way to the next: pts[0..n) are the points, increasing; the first
 * `linear` are 1, 2, 3..., the rest per_octave an octave from lo_x. */
static size_t
cell (double x, const int64_t *pts, size_t n, size_t linear, double lo_x, double per_octave,
      double *frac)
{
  size_t i;
  double a, b;
  if (x <= (double) pts[0]) {
    *frac = 0;
    return 0;
  }
  if (x <= (double) linear)
    i = (size_t) floor (x) - 1;
  else {
    double k = (double) (linear ? linear - 1 : 0) + per_octave * log2 (x / lo_x);
    i = k < 0 ? 0 : (size_t) k;
  }
  if (i > n - 2)
    i = n - 2;
  while (i > 0 && (double) pts[i] > x)
    i--;
  while (i < n - 2 && (double) pts[i + 1] <= x)
    i++;
  a = (double) pts[i];
  b = (double) pts[i + 1];
  *frac = x <= a ? 0 : x >= b ? 1 : (x - a) / (b - a);
  return i;
}

static size_t
token_cell (const struct serve_costs *c, double x, double *frac)
{
  return cell (x, c->tok_pts, GRID_N, GRID_LINEAR, GRID_LINEAR, GRID_STEPS, frac);
}

static size_t
ctx_cell (const struct serve_costs *c, double x, double *frac)
{
  return cell (x, c->ctx_pts, CTX_N, 0, CTX_MIN, CTX_STEPS, frac);
}

struct serve_costs *
serve_costs_new (const struct serve_layout *l)
{
  struct serve_costs *c = xcalloc (1, sizeof *c);
  c->l = *l;
  if (c->l.cache == NULL)
    c->l.cache = c->own = dist_cache_new ();
  c->memo = kernel_memo_new ();
  c->pre_dense = xmalloc (GRID_N * sizeof *c->pre_dense);
  c->pre_attn = xmalloc (GRID_N * sizeof *c->pre_attn);
  c->pre_moe = xmalloc (GRID_N * sizeof *c->pre_moe);
  c->dec_dense = xmalloc (GRID_N * sizeof *c->dec_dense);
  c->dec_attn = xcalloc (GRID_N, sizeof *c->dec_attn);
  for (size_t i = 0; i < GRID_N; i++)
    c->tok_pts[i] = grid_at (i);
  for (size_t j = 0; j < CTX_N; j++)
    c->ctx_pts[j] = ctx_at (j);
  for (size_t i = 0; i < GRID_N; i++)
    c->pre_dense[i] = c->pre_attn[i] = c->dec_dense[i] = NAN;
  return c;
}

void
serve_costs_free (struct serve_costs *c)
{
  if (c == NULL)
    return;
  for (size_t i = 0; i < GRID_N; i++)
    free (c->dec_attn[i]);
  free (c->dec_attn);
  free (c->pre_dense);
  free (c->pre_attn);
  free (c->pre_moe);
  free (c->dec_dense);
  dist_cache_free (c->own);
  kernel_memo_free (c->memo);
  free (c);
}

size_t
serve_costs_evaluations (const struct serve_costs *c)
{
  return c->evaluations;
}

/* One replica's forward of `batch` sequences: a prefill of `seq` tokens
 * each (kv_len 0), or a decode step over kv_len cached tokens. */
static int
predict (struct serve_costs *c, int64_t batch, int64_t seq, int64_t kv_len,
         struct dist_result *r)
{
  struct dist_options o;
  memset (&o, 0, sizeof o);
  o.s = &c->l.s;
  o.prec = c->l.prec;
  o.flash = flash_supported (c->l.gpu, c->l.prec);
  o.engine = true;
  o.engine_name = c->l.engine;
  o.routing = c->l.routing;
  o.fusion = true;
  o.batch = batch;
  o.seq = seq;
  o.gpus_per_node = c->l.gpus_per_node;
  o.replicas = c->l.replicas;
  o.cache = c->l.cache;
  o.memo = c->memo;
  c->evaluations++;
  return serving_predict (c->l.set, c->l.pred, c->l.m, c->l.gpu, &o, kv_len, r);
}

static int
prefill_point (struct serve_costs *c, size_t i)
{
  struct dist_result r;
  if (!isnan (c->pre_dense[i]))
    return 0;
  if (predict (c, 1, c->tok_pts[i], 0, &r) < 0)
    return -1;
  c->pre_attn[i] = r.attn_ms;
  c->pre_moe[i] = r.moe_ms;
  c->pre_dense[i] = r.pipeline_ms - r.attn_ms;
  return 0;
}

static int
decode_point (struct serve_costs *c, size_t i, size_t j)
{
  struct dist_result r;
  if (c->dec_attn[i] == NULL) {
    c->dec_attn[i] = xmalloc (CTX_N * sizeof **c->dec_attn);
    for (size_t k = 0; k < CTX_N; k++)
      c->dec_attn[i][k] = NAN;
  }
  if (!isnan (c->dec_attn[i][j]))
    return 0;
  if (predict (c, c->tok_pts[i], c->ctx_pts[j], c->ctx_pts[j], &r) < 0)
    return -1;
  c->dec_attn[i][j] = r.attn_ms;
  c->dec_dense[i] = r.pipeline_ms - r.attn_ms;
  return 0;
}

int
serve_cost_tokens (struct serve_costs *c, int64_t tokens, double *ms)
{
  double f;
  size_t i = token_cell (c, (double) tokens, &f);
  if (prefill_point (c, i) < 0 || (f > 0 && prefill_point (c, i + 1) < 0))
    return -1;
  *ms = f > 0 ? c->pre_dense[i] + f * (c->pre_dense[i + 1] - c->pre_dense[i]) : c->pre_dense[i];
  return 0;
}

/* The grid predicted the routed experts fed by every replica they serve
 * (attention data parallelism: `replicas` of them) each with the point's
 * tokens; `fed` tokens in all are the point of fed / replicas.  Below one
 * token a replica, the line through the first two points. */
int
serve_cost_moe (struct serve_costs *c, double fed, double *ms)
{
  double x = fed / (c->l.replicas > 1 ? c->l.replicas : 1), f;
  size_t i;
  if (!(fed > 0)) {
    *ms = 0;
    return 0;
  }
  if (x < 1) {
    if (prefill_point (c, 0) < 0 || prefill_point (c, 1) < 0)
      return -1;
    *ms = fmax (0, c->pre_moe[0] - (1 - x) * (c->pre_moe[1] - c->pre_moe[0]));
    return 0;
  }
  i = token_cell (c, x, &f);
  if (prefill_point (c, i) < 0 || (f > 0 && prefill_point (c, i + 1) < 0))
    return -1;
  *ms = f > 0 ? c->pre_moe[i] + f * (c->pre_moe[i + 1] - c->pre_moe[i]) : c->pre_moe[i];
  return 0;
}

/* The decode graph's kernels but attention at a batch grid point: any
 * context gives them (the shortest is the cheapest to predict). */
static int
decode_dense (struct serve_costs *c, size_t i, double *ms)
{
  if (isnan (c->dec_dense[i]) && decode_point (c, i, 0) < 0)
    return -1;
  *ms = c->dec_dense[i];
  return 0;
}

/* A decode graph has a logit row per sequence, a prefill graph of the
 * same tokens one: the difference is the rows' logits. */
int
serve_cost_logits (struct serve_costs *c, int64_t rows, double *ms)
{
  double f, d0, d1, p;
  size_t i;
  if (rows <= 1) {
    *ms = 0;
    return 0;
  }
  i = token_cell (c, (double) rows, &f);
  if (decode_dense (c, i, &d0) < 0 || prefill_point (c, i) < 0)
    return -1;
  d0 -= c->pre_dense[i];
  if (f > 0) {
    if (decode_dense (c, i + 1, &d1) < 0 || prefill_point (c, i + 1) < 0)
      return -1;
    d1 -= c->pre_dense[i + 1];
    p = d0 + f * (d1 - d0);
  }
  else
    p = d0;
  *ms = p > 0 ? p : 0;
  return 0;
}

/* A chunk of q prompt tokens after ctx cached ones attends to
 * q ctx + q (q + 1) / 2 query-key pairs, a whole prompt of S tokens to
 * S (S + 1) / 2.  The chunk's kernel costs at least the prompt's of as
 * many pairs (its FLOPs at a prompt's efficiency) and at least a decode
 * step's read of the ctx + q cached tokens (one request): the larger. */
int
serve_cost_prefill_attn (struct serve_costs *c, int64_t q, int64_t ctx, double *ms)
{
  double f, flops, read, qq = (double) q, s;
  size_t i;
  if (q <= 0) {
    *ms = 0;
    return 0;
  }
  s = ctx > 0 ? (sqrt (1 + 4 * (qq * (qq + 1) + 2 * qq * (double) ctx)) - 1) / 2 : qq;
  i = token_cell (c, s, &f);
  if (prefill_point (c, i) < 0 || (f > 0 && prefill_point (c, i + 1) < 0))
    return -1;
  flops = f > 0 ? c->pre_attn[i] + f * (c->pre_attn[i + 1] - c->pre_attn[i]) : c->pre_attn[i];
  if (ctx == 0) {
    *ms = flops;
    return 0;
  }
  if (serve_cost_decode_attn (c, 1, (double) (ctx + q), &read) < 0)
    return -1;
  *ms = flops > read ? flops : read;
  return 0;
}

/* Bilinear over batch and context per request: a decode attention kernel
 * reads every request's cache, so the mean context stands for them all. */
int
serve_cost_decode_attn (struct serve_costs *c, int64_t batch, double ctx, double *ms)
{
  double fb, fc, v[2][2];
  size_t i, j;
  if (batch <= 0) {
    *ms = 0;
    return 0;
  }
  i = token_cell (c, (double) batch, &fb);
  j = ctx_cell (c, ctx / (double) batch, &fc);
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 2; b++) {
      if ((a && fb == 0) || (b && fc == 0)) {
        v[a][b] = 0;
        continue;
      }
      if (decode_point (c, i + (size_t) a, j + (size_t) b) < 0)
        return -1;
      v[a][b] = c->dec_attn[i + (size_t) a][j + (size_t) b];
    }
  {
    double lo = fc > 0 ? v[0][0] + fc * (v[0][1] - v[0][0]) : v[0][0];
    double hi = fb > 0 ? (fc > 0 ? v[1][0] + fc * (v[1][1] - v[1][0]) : v[1][0]) : lo;
    /* below the shortest context point, the kernel's fixed cost: as there */
    *ms = lo + fb * (hi - lo);
  }
  return 0;
}
