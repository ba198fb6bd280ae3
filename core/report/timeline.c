/* timeline.c: the SVG charts of a step and of a search: a step's schedule per pipeline rank (perfmod --strategy --plot), and the best configuration's time against the GPUs (perfmod search --plot). */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The most rectangles a timeline draws: beyond, the file would be too
 * large to look at. */
#define MAX_SEGMENTS 200000

/* A tick step of 1, 2 or 5 times a power of ten, about span/n. */
static double
nice_step (double span, int n)
{
  double raw = span / n, p = pow (10, floor (log10 (raw))), f = raw / p;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

/* ---- the step's timeline ---- */

enum seg_kind { SEG_FW, SEG_BW, SEG_RECOMPUTE, SEG_COMM, SEG_P2P, SEG_GRADS, SEG_OPTIM, SEG_IDLE,
                NSEG };
static const char *const seg_key[NSEG] = {
  "fw", "bw", "recompute", "comm", "p2p", "grads", "optimizer", "idle"
};
static const char *const seg_legend[NSEG] = {
  "forward", "backward", "recompute (forward again)", "exposed tp/cp/ep collectives",
  "pipeline transfer waited for", "exposed dp gradient sync", "optimizer step",
  "idle (bubble)"
};
static const char *const seg_colour[NSEG] = {
  "#1f77b4", "#2ca02c", "#ff7f0e", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#e6e6e6"
};
/* interleaved chunks: a rank's later chunks in other shades */
static const char *const fw_shade[4] = { "#1f77b4", "#6baed6", "#08519c", "#9ecae1" };
static const char *const bw_shade[4] = { "#2ca02c", "#74c476", "#006d2c", "#a1d99b" };

enum { TW = 1100, TL = 80, TR = 1080, TT = 78 };

/* Operations narrower than this many pixels, GROUP_MIN or more in a row, are drawn as one
 * rectangle with their totals (a step of many micro-batches would be a barcode). */
#define GROUP_PX 3.0
#define GROUP_MIN 4

struct tl_seg {
  int kind, mb, chunk;
  double a, b;
};

struct tl_canvas {
  FILE *fp;
  const struct timeline *t;
  double rh, gap;        /* row height and the space between rows */
  size_t segments, groups;
  struct tl_seg *row;    /* the rank's segments, drawn by row_flush */
  size_t nrow, caprow;
};

static double
tx (const struct tl_canvas *c, double ms)
{
  return TL + ms / c->t->step_ms * (TR - TL);
}

static double
ty (const struct tl_canvas *c, int rank)
{
  return TT + rank * (c->rh + c->gap);
}

/* One rectangle of rank's row from a to b ms; mb and chunk -1 where
 * they do not apply. */
static void
seg_draw (struct tl_canvas *c, int rank, int kind, int mb, int chunk, double a, double b)
{
  const struct timeline *t = c->t;
  const char *fill = seg_colour[kind];
  double x0 = tx (c, a), x1 = tx (c, b), y = ty (c, rank);
  int local = chunk >= 0 ? chunk / t->stages : 0;
  if (!(b > a))
    return;
  c->segments++;
  if (kind == SEG_FW)
    fill = fw_shade[local % 4];
  else if (kind == SEG_BW)
    fill = bw_shade[local % 4];
  fprintf (c->fp, "<rect class=\"ev\" data-stage=\"%d\" data-kind=\"%s\" data-mb=\"%d\" "
           "data-chunk=\"%d\" data-start=\"%.9g\" data-end=\"%.9g\" x=\"%.2f\" y=\"%.1f\" "
           "width=\"%.2f\" height=\"%.1f\" fill=\"%s\"><title>stage %d: %s", rank, seg_key[kind],
           mb, chunk, a, b, x0, y, x1 - x0, c->rh, fill, rank, seg_legend[kind]);
  if (mb >= 0)
    fprintf (c->fp, ", micro-batch %d", mb);
  if (chunk >= 0 && t->vp > 1)
    fprintf (c->fp, ", chunk %d (the rank's %d of %d)", chunk, local + 1, t->vp);
  fprintf (c->fp, ": %.4f to %.4f ms (%.4f ms)</title></rect>\n", a, b, b - a);
  /* the micro-batch (and the rank's chunk) written on wide enough ones */
  if ((kind == SEG_FW || kind == SEG_BW) && mb >= 0 && x1 - x0 >= (t->vp > 1 ? 22 : 14) &&
      c->rh >= 10) {
    char lab[32];
    if (t->vp > 1)
      snprintf (lab, sizeof lab, "%d.%d", mb, local);
    else
      snprintf (lab, sizeof lab, "%d", mb);
    fprintf (c->fp, "<text x=\"%.2f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"%.0f\" "
             "fill=\"white\">%s</text>\n", (x0 + x1) / 2, y + c->rh / 2 + 3.5,
             fmin (10, c->rh - 4), lab);
  }
}

/* Segments [i, j) of the row as one rectangle: their span, each kind's total and the
 * micro-batches they belong to in data-* attributes and the title. */
static void
group_draw (struct tl_canvas *c, int rank, size_t i, size_t j)
{
  const struct tl_seg *g = c->row;
  double tot[NSEG] = { 0 }, a = g[i].a, b = g[j - 1].b, x0 = tx (c, a), x1 = tx (c, b);
  int lo = -1, hi = -1;
  for (size_t k = i; k < j; k++) {
    tot[g[k].kind] += g[k].b - g[k].a;
    if (g[k].mb >= 0) {
      lo = lo < 0 || g[k].mb < lo ? g[k].mb : lo;
      hi = g[k].mb > hi ? g[k].mb : hi;
    }
  }
  c->segments++;
  c->groups++;
  fprintf (c->fp, "<rect class=\"ev\" data-stage=\"%d\" data-kind=\"group\" data-ops=\"%zu\" "
           "data-start=\"%.9g\" data-end=\"%.9g\"", rank, j - i, a, b);
  for (int k = 0; k < NSEG; k++)
    fprintf (c->fp, " data-%s-ms=\"%.9g\"", seg_key[k], tot[k]);
  /* forwards alone in the forward's colour, backwards alone in the backward's, else both */
  const char *fill = tot[SEG_BW] + tot[SEG_RECOMPUTE] == 0 ? seg_colour[SEG_FW]
                   : tot[SEG_FW] == 0 ? seg_colour[SEG_BW] : "url(#grouped)";
  fprintf (c->fp, " x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\">"
           "<title>stage %d: %zu operations each narrower than %.0f px", x0, ty (c, rank),
           x1 - x0, c->rh, fill, rank, j - i, GROUP_PX);
  if (lo >= 0)
    fprintf (c->fp, " of micro-batches %d to %d", lo, hi);
  fprintf (c->fp, ", %.4f to %.4f ms:", a, b);
  for (int k = 0, first = 1; k < NSEG; k++)
    if (tot[k] > 0) {
      fprintf (c->fp, "%s %s %.4f ms", first ? "" : ",", seg_legend[k], tot[k]);
      first = 0;
    }
  fprintf (c->fp, "</title></rect>\n");
}

/* The rank's segments drawn: each on its own, but runs of GROUP_MIN or more narrower than
 * GROUP_PX as one group. */
static void
row_flush (struct tl_canvas *c, int rank)
{
  size_t i = 0;
  while (i < c->nrow) {
    size_t j = i;
    while (j < c->nrow && tx (c, c->row[j].b) - tx (c, c->row[j].a) < GROUP_PX)
      j++;
    if (j - i >= GROUP_MIN) {
      group_draw (c, rank, i, j);
      i = j;
      continue;
    }
    if (j == i)
      j = i + 1;
    for (; i < j; i++)
      seg_draw (c, rank, c->row[i].kind, c->row[i].mb, c->row[i].chunk, c->row[i].a,
                c->row[i].b);
  }
  c->nrow = 0;
}

/* A segment of the rank's row, held until row_flush draws the row. */
static void
segment (struct tl_canvas *c, int rank, int kind, int mb, int chunk, double a, double b)
{
  (void) rank;
  if (!(b > a))
    return;
  if (c->nrow == c->caprow) {
    c->caprow = c->caprow ? 2 * c->caprow : 256;
    c->row = xrealloc (c->row, c->caprow * sizeof *c->row);
  }
  c->row[c->nrow++] = (struct tl_seg) { .kind = kind, .mb = mb, .chunk = chunk, .a = a, .b = b };
}

static int
cmp_event (const void *a, const void *b)
{
  const struct pipe_event *x = a, *y = b;
  if (x->rank != y->rank)
    return x->rank < y->rank ? -1 : 1;
  if (x->start != y->start)
    return x->start < y->start ? -1 : 1;
  return (x->kind != PEV_P2P) - (y->kind != PEV_P2P);   /* a wait before what it waited for */
}

int
timeline_write (const struct timeline *t, const char *path, const char *title,
                const char *subtitle)
{
  struct tl_canvas c;
  struct pipe_event *ev;
  size_t n = t->log.n, segs;
  double bottom, step;
  int h;
  char *tmp;
  FILE *fp;

  if (!(t->step_ms > 0) || t->stages < 1) {
    pm_error ("--plot: the step takes no time: nothing to draw");
    return -1;
  }
  /* forward and backward split in up to three, the waits, the idle gaps,
   * the gradients and the optimizer */
  segs = 3 * n + 3 * (size_t) t->stages;
  if (segs > MAX_SEGMENTS) {
    pm_error ("--plot %s: %zu pipeline operations and waits are too many to draw (at most "
              "%d): fewer micro-batches or stages", path, n, MAX_SEGMENTS / 3);
    return -1;
  }
  memset (&c, 0, sizeof c);
  c.t = t;
  c.rh = t->stages <= 16 ? 26 : fmax (6, 416.0 / t->stages);
  c.gap = c.rh / 4;
  bottom = ty (&c, t->stages) - c.gap;
  h = (int) bottom + 128;
  ev = xmalloc ((n ? n : 1) * sizeof *ev);
  memcpy (ev, t->log.ev, n * sizeof *ev);
  qsort (ev, n, sizeof *ev, cmp_event);

  if ((fp = atomic_open (path, &tmp)) == NULL) {
    free (ev);
    return -1;
  }
  c.fp = fp;
  fprintf (fp, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
           "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
           "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" data-stages=\"%d\" data-vp=\"%d\" "
           "data-microbatches=\"%d\" data-step-ms=\"%.9g\" data-pipeline-ms=\"%.9g\" "
           "data-grads-ms=\"%.9g\" data-optimizer-ms=\"%.9g\" data-bubble=\"%.9g\">\n", TW, h,
           TW, h, t->stages, t->vp, t->microbatches, t->step_ms, t->pipeline_ms, t->grads_ms,
           t->optimizer_ms, t->bubble);
  fprintf (fp, "<title>timeline: ");
  svg_put_escaped (fp, title);
  fprintf (fp, "</title>\n<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", TW, h);
  /* a group of narrow operations: forward and backward stripes */
  fprintf (fp, "<defs><pattern id=\"grouped\" width=\"6\" height=\"6\" "
           "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\"><rect width=\"3\" "
           "height=\"6\" fill=\"%s\"/><rect x=\"3\" width=\"3\" height=\"6\" fill=\"%s\"/>"
           "</pattern></defs>\n", seg_colour[SEG_FW], seg_colour[SEG_BW]);
  fprintf (fp, "<text x=\"%d\" y=\"22\" font-size=\"14\" font-weight=\"bold\">", TL);
  svg_put_escaped (fp, title);
  fprintf (fp, "</text>\n<text x=\"%d\" y=\"40\" font-size=\"12\" fill=\"#555\">", TL);
  svg_put_escaped (fp, subtitle);
  fprintf (fp, "</text>\n<text x=\"%d\" y=\"57\" font-size=\"12\" fill=\"#555\">step %.4f ms = "
           "pipeline %.4f + exposed gradient sync %.4f + optimizer %.4f; bubble %.2f%% of the "
           "ranks' pipeline time</text>\n", TL, t->step_ms, t->pipeline_ms, t->grads_ms,
           t->optimizer_ms, 100 * t->bubble);

  /* the time axis: grid lines and ticks in ms */
  step = nice_step (t->step_ms, 10);
  fprintf (fp, "<g font-size=\"11\" fill=\"#333\">\n");
  for (double v = 0; v <= t->step_ms * (1 + 1e-9); v += step) {
    double x = tx (&c, v);
    fprintf (fp, "<line class=\"tick\" x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%.1f\" "
             "stroke=\"#e4e4e4\"/>\n<text x=\"%.2f\" y=\"%.1f\" text-anchor=\"middle\">%g"
             "</text>\n", x, TT - 4, x, bottom + 4, x, bottom + 18, v);
  }
  fprintf (fp, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"13\">time in the "
           "step (ms)</text>\n", (TL + TR) / 2, bottom + 36);
  for (int r = 0; r < t->stages; r++)
    fprintf (fp, "<text class=\"row\" data-stage=\"%d\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\" "
             "font-size=\"%.0f\">stage %d</text>\n", r, TL - 6, ty (&c, r) + c.rh / 2 + 4,
             fmin (11, c.rh), r);
  fprintf (fp, "</g>\n<g>\n");

  /* each rank's row: its operations, the waits and the gaps, in time */
  for (size_t i = 0; i < n;) {
    int r = ev[i].rank;
    double at = 0;
    for (; i < n && ev[i].rank == r; i++) {
      const struct pipe_event *e = &ev[i];
      int ch = e->chunk;
      if (e->start > at)
        segment (&c, r, SEG_IDLE, -1, -1, at, e->start);
      if (e->kind == PEV_P2P)
        segment (&c, r, SEG_P2P, e->mb, ch, e->start, e->end);
      else if (e->kind == PEV_FW) {
        segment (&c, r, SEG_FW, e->mb, ch, e->start, e->end - t->fw_comm[ch]);
        segment (&c, r, SEG_COMM, e->mb, ch, e->end - t->fw_comm[ch], e->end);
      }
      else {
        double rc = e->start + t->recompute[ch];
        segment (&c, r, SEG_RECOMPUTE, e->mb, ch, e->start, rc);
        segment (&c, r, SEG_BW, e->mb, ch, rc, e->end - t->bw_comm[ch]);
        segment (&c, r, SEG_COMM, e->mb, ch, e->end - t->bw_comm[ch], e->end);
      }
      if (e->end > at)
        at = e->end;
    }
    if (t->pipeline_ms > at)
      segment (&c, r, SEG_IDLE, -1, -1, at, t->pipeline_ms);
    /* after the pipeline: the gradients' exposed part, the optimizer */
    segment (&c, r, SEG_GRADS, -1, -1, t->pipeline_ms, t->pipeline_ms + t->grads_ms);
    segment (&c, r, SEG_OPTIM, -1, -1, t->pipeline_ms + t->grads_ms, t->step_ms);
    row_flush (&c, r);
  }
  free (c.row);
  fprintf (fp, "</g>\n");

  /* the legend: two rows of four */
  fprintf (fp, "<g font-size=\"11\">\n");
  for (int k = 0; k < NSEG; k++) {
    double x = TL + (k % 4) * 250, y = bottom + 58 + (k / 4) * 18;
    fprintf (fp, "<rect x=\"%.0f\" y=\"%.0f\" width=\"10\" height=\"10\" fill=\"%s\"/>\n"
             "<text class=\"legend\" data-kind=\"%s\" x=\"%.0f\" y=\"%.0f\">%s</text>\n", x,
             y - 9, seg_colour[k], seg_key[k], x + 16, y, seg_legend[k]);
  }
  if (t->vp > 1)
    fprintf (fp, "<text x=\"%d\" y=\"%.0f\" fill=\"#555\">interleaved: a rank's later chunks in "
             "other shades; labels micro-batch.chunk</text>\n", TL, bottom + 94);
  else
    fprintf (fp, "<text x=\"%d\" y=\"%.0f\" fill=\"#555\">labels: the micro-batch; collectives "
             "drawn at the end of their operation (their total, not their place)</text>\n", TL,
             bottom + 94);
  if (c.groups)
    fprintf (fp, "<rect x=\"%d\" y=\"%.0f\" width=\"10\" height=\"10\" fill=\"url(#grouped)\"/>\n"
             "<text class=\"legend\" data-kind=\"group\" x=\"%d\" y=\"%.0f\" fill=\"#555\">"
             "%d or more operations in a row, each narrower than %.0f px, drawn as one (%zu such; "
             "striped where forwards and backwards mix; hover for their totals)</text>\n", TL, bottom + 103, TL + 16, bottom + 112, GROUP_MIN,
             GROUP_PX, c.groups);
  fprintf (fp, "</g>\n</svg>\n");
  free (ev);
  return atomic_commit (fp, tmp, path, true);
}

/* ---- the search's scaling chart ---- */

enum { SW = 1000, SL = 90, SR = 700, ST = 70, SB = 440 };

/* The strategy string without the keys at their defaults. */
static void
short_label (const char *full, char *out, size_t len)
{
  static const char *const dflt[] = { "cp=1", "ep=1", "vp=1", "zero=0", "recompute=none", "sp=0",
                                      "schedule=", "kernels=" };
  char *copy = xstrdup (full), *save = NULL;
  size_t used = 0;
  out[0] = '\0';
  for (char *tok = strtok_r (copy, ",", &save); tok; tok = strtok_r (NULL, ",", &save)) {
    bool skip = false;
    for (size_t i = 0; i < sizeof dflt / sizeof dflt[0]; i++)
      if (dflt[i][strlen (dflt[i]) - 1] == '=' ? strncmp (tok, dflt[i], strlen (dflt[i])) == 0
          : strcmp (tok, dflt[i]) == 0)
        skip = true;
    if (!skip && used + strlen (tok) + 2 < len)
      used += (size_t) snprintf (out + used, len - used, "%s%s", used ? " " : "", tok);
  }
  free (copy);
}

/* A value for the list: whole units from 100 up (11730, not 1.173e+04), else 4 digits. */
static const char *
value_text (double v, char *buf, size_t len)
{
  if (v >= 100)
    snprintf (buf, len, "%.0f", v);
  else
    snprintf (buf, len, "%.4g", v);
  return buf;
}

int
scaling_plot_write (const char *path, const char *title, const char *ylabel,
                    const struct scaling_point *best, size_t nbest,
                    const struct scaling_point *top, size_t ntop)
{
  double gmin = INFINITY, gmax = 0, vmin = INFINITY, vmax = 0, x0, x1, y0, y1;
  char *tmp, lab[256];
  FILE *fp;
  /* the list beside the chart: two lines a count, as wide as its longest line (10 px
   * sans-serif: at most 0.62 em a character) */
  int height = (int) fmax (520, ST + 40 + 28 * (double) nbest), width = SW;
  char val[32];
  for (size_t i = 0; i < nbest; i++) {
    short_label (best[i].label, lab, sizeof lab);
    width = (int) fmax (width, SR + 24 + 6.2 * (double) strlen (lab) + 16);
  }

  for (size_t i = 0; i < nbest; i++) {
    gmin = fmin (gmin, (double) best[i].gpus);
    gmax = fmax (gmax, (double) best[i].gpus);
    vmin = fmin (vmin, best[i].value);
    vmax = fmax (vmax, best[i].value);
  }
  for (size_t i = 0; i < ntop; i++) {
    vmin = fmin (vmin, top[i].value);
    vmax = fmax (vmax, top[i].value);
  }
  if (nbest == 0 || !(vmin > 0)) {
    pm_error ("--plot %s: no GPU count has a configuration that fits: nothing to draw", path);
    return -1;
  }
  /* log-log: half a step of margin around the counts, whole decades of time */
  x0 = log2 (gmin) - 0.5;
  x1 = log2 (gmax) + 0.5;
  y0 = floor (log10 (vmin));
  y1 = ceil (log10 (vmax));
  if (y1 <= y0)
    y1 = y0 + 1;
#define SX(g) (SL + (log2 (g) - x0) / (x1 - x0) * (SR - SL))
#define SY(v) (SB - (log10 (v) - y0) / (y1 - y0) * (SB - ST))

  if ((fp = atomic_open (path, &tmp)) == NULL)
    return -1;
  fprintf (fp, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
           "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
           "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">\n<title>scaling: ", width, height,
           width, height);
  svg_put_escaped (fp, title);
  fprintf (fp, "</title>\n<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", width, height);
  fprintf (fp, "<text x=\"%d\" y=\"24\" font-size=\"14\" font-weight=\"bold\">", SL);
  svg_put_escaped (fp, title);
  fprintf (fp, "</text>\n<text x=\"%d\" y=\"42\" font-size=\"12\" fill=\"#555\">the best "
           "configuration per GPU count (filled, joined), the top %zu at the requested count "
           "(hollow); both axes logarithmic</text>\n", SL, ntop);

  /* axes: a tick per GPU count searched; decades (and 2, 5 within one) of time */
  fprintf (fp, "<g font-size=\"11\" fill=\"#333\">\n");
  for (size_t i = 0; i < nbest; i++) {
    double x = SX ((double) best[i].gpus);
    fprintf (fp, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#e4e4e4\"/>\n"
             "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%lld</text>\n", x, ST, x, SB, x,
             SB + 16, (long long) best[i].gpus);
  }
  for (int d = (int) y0; d <= (int) y1; d++)
    for (int f = 1; f <= (y1 - y0 <= 2 ? 5 : 1); f += (f == 1 ? 1 : 3)) {
      double v = f * pow (10, d), y = SY (v);
      if (d == (int) y1 && f > 1)
        break;
      fprintf (fp, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>\n"
               "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", SL, y, SR, y,
               SL - 6, y + 4, v);
    }
  fprintf (fp, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
           "stroke=\"#333\"/>\n", SL, ST, SR - SL, SB - ST);
  fprintf (fp, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-size=\"13\">GPUs</text>\n",
           (SL + SR) / 2, SB + 36);
  fprintf (fp, "<text transform=\"translate(%d %d) rotate(-90)\" text-anchor=\"middle\" "
           "font-size=\"13\">", SL - 56, (ST + SB) / 2);
  svg_put_escaped (fp, ylabel);
  fprintf (fp, "</text>\n</g>\n");

  /* the best per count, joined; the strategies in the list beside (hover: each point's) */
  fprintf (fp, "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\" points=\"");
  for (size_t i = 0; i < nbest; i++)
    fprintf (fp, "%s%.1f,%.1f", i ? " " : "", SX ((double) best[i].gpus), SY (best[i].value));
  fprintf (fp, "\"/>\n<g font-size=\"10\">\n");
  for (size_t i = 0; i < ntop; i++)
    fprintf (fp, "<circle class=\"top\" data-rank=\"%zu\" data-gpus=\"%lld\" "
             "data-value=\"%.9g\" data-strategy=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\" "
             "fill=\"none\" stroke=\"#ff7f0e\" stroke-width=\"1.5\"><title>#%zu: %.4g, %s"
             "</title></circle>\n", i + 1, (long long) top[i].gpus, top[i].value,
             top[i].label, SX ((double) top[i].gpus), SY (top[i].value), i + 1, top[i].value,
             top[i].label);
  for (size_t i = 0; i < nbest; i++)
    fprintf (fp, "<circle class=\"best\" data-gpus=\"%lld\" data-value=\"%.9g\" "
             "data-strategy=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#1f77b4\"><title>%lld "
             "GPUs: %.4g, %s</title></circle>\n", (long long) best[i].gpus, best[i].value,
             best[i].label, SX ((double) best[i].gpus), SY (best[i].value),
             (long long) best[i].gpus, best[i].value, best[i].label);
  fprintf (fp, "</g>\n");

  /* the strategies, to rerun: the count and its value, then the keys off their defaults */
  fprintf (fp, "<g font-size=\"10\" fill=\"#333\">\n<text x=\"%d\" y=\"%d\" font-weight=\"bold\" "
           "font-size=\"11\">best per count (--strategy)</text>\n", SR + 14, ST + 4);
  for (size_t i = 0; i < nbest; i++) {
    short_label (best[i].label, lab, sizeof lab);
    fprintf (fp, "<text x=\"%d\" y=\"%zu\">%lld GPUs: %s</text>\n<text x=\"%d\" y=\"%zu\" "
             "fill=\"#1f77b4\">%s</text>\n", SR + 14, ST + 22 + 28 * i,
             (long long) best[i].gpus, value_text (best[i].value, val, sizeof val), SR + 24,
             ST + 34 + 28 * i, lab);
  }
  fprintf (fp, "</g>\n</svg>\n");
#undef SX
#undef SY
  return atomic_commit (fp, tmp, path, true);
}
