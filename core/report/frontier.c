/* frontier.c: the serving search's chart: output tokens/s per GPU against tokens/s per user, every deployment simulated as a dot, the Pareto frontier joined and labelled, the best within the targets marked. */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define FW 960
#define FH 600
#define FL 80
#define FR 930
#define FT 60
#define FB 540

/* A round step for an axis of about 6 ticks up to max. */
static double
tick_step (double max)
{
  double raw = max / 6, p = pow (10, floor (log10 (raw))), f = raw / p;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

/* Whether a label box [x0, x1] x [y0, y1] overlaps one drawn. */
struct box {
  double x0, y0, x1, y1;
};

static bool
overlaps (const struct box *b, size_t n, const struct box *c)
{
  for (size_t i = 0; i < n; i++)
    if (c->x0 < b[i].x1 && b[i].x0 < c->x1 && c->y0 < b[i].y1 && b[i].y0 < c->y1)
      return true;
  return false;
}

/* Whether box c meets the curve through the m points (px, py), each segment sampled every
 * pixel. */
static bool
crosses (const struct box *c, const double *px, const double *py, size_t m)
{
  for (size_t i = 0; i + 1 < m; i++) {
    int steps = (int) fmax (1, hypot (px[i + 1] - px[i], py[i + 1] - py[i]));
    for (int k = 0; k <= steps; k++) {
      double x = px[i] + (px[i + 1] - px[i]) * k / steps, y = py[i] + (py[i + 1] - py[i]) * k / steps;
      if (x > c->x0 && x < c->x1 && y > c->y0 && y < c->y1)
        return true;
    }
  }
  return false;
}

int
frontier_plot_write (const char *path, const char *title, const struct frontier_point *p,
                     size_t n)
{
  double xmax = 0, ymax = 0, xs, ys;
  struct box *drawn = xcalloc (n + 1, sizeof *drawn);
  size_t ndrawn = 0;
  char *tmp;
  FILE *fp;

  for (size_t i = 0; i < n; i++) {
    xmax = fmax (xmax, p[i].x);
    ymax = fmax (ymax, p[i].y);
  }
  if (n == 0 || !(xmax > 0) || !(ymax > 0)) {
    pm_error ("--plot %s: no deployment fits: nothing to draw", path);
    free (drawn);
    return -1;
  }
  xs = tick_step (xmax);
  ys = tick_step (ymax);
  xmax = ceil (xmax / xs) * xs;
  ymax = ceil (ymax / ys) * ys;
#define X(v) (FL + (v) / xmax * (FR - FL))
#define Y(v) (FB - (v) / ymax * (FB - FT))
  if ((fp = atomic_open (path, &tmp)) == NULL) {
    free (drawn);
    return -1;
  }
  fprintf (fp, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
           "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">\n"
           "<title>serving frontier: ", FW, FH, FW, FH);
  svg_put_escaped (fp, title);
  fprintf (fp, "</title>\n<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n<text x=\"%d\" "
           "y=\"24\" font-size=\"14\" font-weight=\"bold\">", FW, FH, FL);
  svg_put_escaped (fp, title);
  fprintf (fp, "</text>\n<text x=\"%d\" y=\"42\" font-size=\"12\" fill=\"#555\">every deployment "
           "and batch simulated (grey), the Pareto frontier (blue), the best within the targets "
           "(orange)</text>\n<g font-size=\"11\" fill=\"#333\">\n", FL);
  for (double v = 0; v <= xmax + xs / 2; v += xs)
    fprintf (fp, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#e4e4e4\"/>\n"
             "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n", X (v), FT, X (v), FB,
             X (v), FB + 16, v);
  for (double v = 0; v <= ymax + ys / 2; v += ys)
    fprintf (fp, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>\n"
             "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", FL, Y (v), FR, Y (v),
             FL - 6, Y (v) + 4, v);
  fprintf (fp, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#333\"/>\n"
           "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-size=\"13\">output tokens/s per "
           "user (1000 / TPOT)</text>\n<text transform=\"translate(%d %d) rotate(-90)\" "
           "text-anchor=\"middle\" font-size=\"13\">output tokens/s per GPU</text>\n</g>\n",
           FL, FT, FR - FL, FB - FT, (FL + FR) / 2, FB + 38, FL - 56, (FT + FB) / 2);
  /* the axes' tick labels are drawn boxes too: the labels keep off them */
  for (size_t i = 0; i < n; i++)
    if (!p[i].frontier)
      fprintf (fp, "<circle class=\"point\" cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"#bbb\">"
               "<title>%s: %.1f per user, %.1f per GPU</title></circle>\n", X (p[i].x),
               Y (p[i].y), p[i].label, p[i].x, p[i].y);
  fprintf (fp, "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\" points=\"");
  for (size_t i = 0, k = 0; i < n; i++)
    if (p[i].frontier)
      fprintf (fp, "%s%.1f,%.1f", k++ ? " " : "", X (p[i].x), Y (p[i].y));
  fprintf (fp, "\"/>\n<g font-size=\"10\">\n");
  /* the curve, which labels keep off too */
  double *px = xcalloc (n, sizeof *px), *py = xcalloc (n, sizeof *py);
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (p[i].frontier) {
      px[m] = X (p[i].x);
      py[m++] = Y (p[i].y);
    }
  for (size_t i = 0; i < n; i++) {
    /* 10 px sans-serif: about 0.6 em a character */
    double x = X (p[i].x), y = Y (p[i].y), w = 6.0 * (double) strlen (p[i].label);
    struct box c;
    if (!p[i].frontier)
      continue;
    fprintf (fp, "<circle class=\"frontier\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\">"
             "<title>%s: %.1f per user, %.1f per GPU</title></circle>\n", x, y,
             p[i].best ? "#ff7f0e" : "#1f77b4", p[i].label, p[i].x, p[i].y);
    /* a label above right of its point, else above left, below right, below left: the
     * first that overlaps no other, crosses no curve and stays in the plot; none where
     * none fits (the point's title still names it) */
    for (int side = 0; side < 4; side++) {
      c.x0 = side % 2 ? x - 8 - w : x + 8;
      c.x1 = c.x0 + w;
      c.y0 = side < 2 ? y - 14 : y + 4;
      c.y1 = c.y0 + 12;
      if (c.x0 < FL + 2 || c.x1 > FR - 2 || c.y0 < FT + 2 || c.y1 > FB - 2 ||
          overlaps (drawn, ndrawn, &c) || crosses (&c, px, py, m))
        continue;
      drawn[ndrawn++] = c;
      fprintf (fp, "<text class=\"label\" x=\"%.1f\" y=\"%.1f\" fill=\"#1f77b4\">", c.x0, c.y1 - 2);
      svg_put_escaped (fp, p[i].label);
      fprintf (fp, "</text>\n");
      break;
    }
  }
  for (size_t i = 0; i < n; i++)
    if (p[i].best)
      fprintf (fp, "<circle class=\"best\" cx=\"%.1f\" cy=\"%.1f\" r=\"7\" fill=\"none\" "
               "stroke=\"#ff7f0e\" stroke-width=\"2\"/>\n", X (p[i].x), Y (p[i].y));
  fprintf (fp, "</g>\n</svg>\n");
#undef X
#undef Y
  free (px);
  free (py);
  free (drawn);
  return atomic_commit (fp, tmp, path, !ferror (fp));
}
