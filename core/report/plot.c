/* plot.c: the SVG roofline chart of --plot: each kernel class, and each distinct kernel, against the GPU's roofs. */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define NCLASS (PERFMOD_KERNEL_MOE + 1)

/* Canvas and plot area, in pixels. */
enum { W = 980, H = 520, L = 90, R = 600, T = 60, B = 450, LEGEND = R + 170 };

static const char *const class_colour[NCLASS] = {
  "#777777", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
  "#bcbd22", "#17becf"
};

void
roofline_plot_kernel (void *ctx, const struct perfmod_kernel *k, double weight, double seconds)
{
  struct roofline_plot *p = ctx;
  struct plot_kernel *q;
  if (p->n == p->cap) {
    p->cap = p->cap ? 2 * p->cap : 256;
    p->k = xrealloc (p->k, p->cap * sizeof *p->k);
  }
  q = &p->k[p->n++];
  q->kclass = k->kclass >= 0 && k->kclass < NCLASS ? k->kclass : 0;
  q->op = k->op;
  q->dims[0] = k->b; q->dims[1] = k->m; q->dims[2] = k->n; q->dims[3] = k->k; q->dims[4] = k->h;
  kernel_cost (k, &q->flops, &q->bytes);
  q->seconds = seconds;
  q->count = weight;
}

void
roofline_plot_free (struct roofline_plot *p)
{
  free (p->k);
  memset (p, 0, sizeof *p);
}

static int
cmp_kernel (const void *a, const void *b)
{
  const struct plot_kernel *x = a, *y = b;
  int c;
  if (x->kclass != y->kclass)
    return x->kclass < y->kclass ? -1 : 1;
  if ((c = strcmp (x->op ? x->op : "", y->op ? y->op : "")) != 0)
    return c;
  for (int i = 0; i < 5; i++)
    if (x->dims[i] != y->dims[i])
      return x->dims[i] < y->dims[i] ? -1 : 1;
  if (x->seconds != y->seconds)
    return x->seconds < y->seconds ? -1 : 1;
  return x->bytes < y->bytes ? -1 : x->bytes > y->bytes;
}

/* Merge repeated kernels (same class, op, shape and time) into one, counted. */
static void
merge_kernels (struct roofline_plot *p)
{
  size_t n = 0;
  if (p->n == 0)
    return;
  qsort (p->k, p->n, sizeof *p->k, cmp_kernel);
  for (size_t i = 1; i < p->n; i++)
    if (cmp_kernel (&p->k[n], &p->k[i]) == 0)
      p->k[n].count += p->k[i].count;
    else
      p->k[++n] = p->k[i];
  p->n = n + 1;
}

static bool
placed (double flops, double bytes, double seconds)
{
  return flops > 0 && bytes > 0 && seconds > 0;
}

struct axes { double x0, x1, y0, y1; };   /* decades */

static double
px (const struct axes *a, double intensity)
{
  return L + (log10 (intensity) - a->x0) / (a->x1 - a->x0) * (R - L);
}

static double
py (const struct axes *a, double flops_per_s)
{
  return B - (log10 (flops_per_s) - a->y0) / (a->y1 - a->y0) * (B - T);
}

void
svg_put_escaped (FILE *fp, const char *s)
{
  for (; s && *s; s++)
    switch (*s) {
    case '&': fputs ("&amp;", fp); break;
    case '<': fputs ("&lt;", fp); break;
    case '>': fputs ("&gt;", fp); break;
    case '"': fputs ("&quot;", fp); break;
    default: fputc (*s, fp); break;
    }
}

/* The GPU's compute roofs: fp32 on its CUDA cores, then each matrix-unit
 * dtype, equal peaks sharing one roof. */
struct roof { double peak; char label[64]; };

static size_t
gpu_roofs (const struct perfmod_gpu *gpu, struct roof *r)
{
  size_t n = 0;
  if (gpu->fp32_gflops > 0) {
    r[n].peak = gpu->fp32_gflops * 1e9;
    snprintf (r[n++].label, sizeof r->label, "fp32");
  }
  for (int d = PERFMOD_DTYPE_FP32 + 1; d < PERFMOD_DTYPE_NTYPES; d++) {
    double peak = perfmod_gpu_peak_flops (gpu, d);
    size_t i;
    if (d == PERFMOD_DTYPE_FP8_BLOCK || !gpu_has_units (gpu, d))
      continue;                  /* fp8_block is fp8's roof */
    for (i = 0; i < n && r[i].peak != peak; i++)
      ;
    if (i == n) {
      r[n].peak = peak;
      snprintf (r[n++].label, sizeof r->label, "%s", dtype_name (d));
    }
    else {
      size_t len = strlen (r[i].label);
      snprintf (r[i].label + len, sizeof r->label - len, "/%s", dtype_name (d));
    }
  }
  return n;
}

static void
draw_axes (FILE *fp, const struct axes *a)
{
  fprintf (fp, "<g font-size=\"11\" fill=\"#333\">\n");
  for (int d = (int) a->x0; d <= (int) a->x1; d++) {
    double x = L + (d - a->x0) / (a->x1 - a->x0) * (R - L);
    fprintf (fp, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#e4e4e4\"/>\n", x, T,
             x, B);
    fprintf (fp, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n", x, B + 16,
             pow (10, d));
  }
  for (int d = (int) a->y0; d <= (int) a->y1; d++) {
    double y = B - (d - a->y0) / (a->y1 - a->y0) * (B - T);
    fprintf (fp, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>\n", L, y,
             R, y);
    fprintf (fp, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", L - 6, y + 4,
             pow (10, d) / 1e12);
  }
  fprintf (fp, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#333\"/>\n",
           L, T, R - L, B - T);
  fprintf (fp, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-size=\"13\">arithmetic "
           "intensity (FLOP/byte)</text>\n", (L + R) / 2, B + 38);
  fprintf (fp, "<text transform=\"translate(%d %d) rotate(-90)\" text-anchor=\"middle\" "
           "font-size=\"13\">predicted performance (TFLOP/s)</text>\n", L - 52, (T + B) / 2);
  fprintf (fp, "</g>\n");
}

/* The memory roof up to the highest compute roof, then each compute roof
 * from its ridge point; the run's dtype solid, the others dashed. */
static void
draw_roofs (FILE *fp, const struct axes *a, const struct perfmod_gpu *gpu, double bw,
            const struct roof *r, size_t nr, double selected)
{
  double top = 0, xe = pow (10, a->x1), xs = pow (10, a->x0);
  double slope_px = ((B - T) / (a->y1 - a->y0)) / ((R - L) / (a->x1 - a->x0));
  double lx = xs * 1.15, angle = -atan (slope_px) * 180 / M_PI;
  for (size_t i = 0; i < nr; i++)
    top = fmax (top, r[i].peak);
  fprintf (fp, "<g clip-path=\"url(#area)\" fill=\"none\" stroke-width=\"2\">\n");
  fprintf (fp, "<line class=\"roof\" data-roof=\"memory\" data-bytes-per-s=\"%.6g\" x1=\"%.1f\" "
           "y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#222\"/>\n", bw, px (a, xs),
           py (a, bw * xs), px (a, top / bw), py (a, top));
  for (size_t i = 0; i < nr; i++) {
    bool sel = r[i].peak == selected;
    fprintf (fp, "<line class=\"roof\" data-roof=\"%s\" data-flops-per-s=\"%.6g\" x1=\"%.1f\" "
             "y1=\"%.2f\" x2=\"%.1f\" y2=\"%.2f\" stroke=\"%s\"%s/>\n", r[i].label, r[i].peak,
             px (a, r[i].peak / bw), py (a, r[i].peak), px (a, xe), py (a, r[i].peak),
             sel ? "#222" : "#999", sel ? "" : " stroke-dasharray=\"6 4\"");
  }
  fprintf (fp, "</g>\n<g font-size=\"11\">\n");
  for (size_t i = 0; i < nr; i++)
    fprintf (fp, "<text x=\"%d\" y=\"%.1f\" fill=\"%s\"%s>%s %.4g TFLOP/s</text>\n", R + 6,
             py (a, r[i].peak) + 4,
             r[i].peak == selected ? "#222" : "#777",
             r[i].peak == selected ? " font-weight=\"bold\"" : "", r[i].label, r[i].peak / 1e12);
  if (bw * lx < pow (10, a->y1))
    fprintf (fp, "<text transform=\"translate(%.1f %.1f) rotate(%.1f)\" fill=\"#222\">memory "
             "%.4g GB/s</text>\n", px (a, lx), py (a, bw * lx) - 8, angle, gpu->mem_bw_gbps);
  fprintf (fp, "</g>\n");
}

int
roofline_plot_write (struct roofline_plot *p, const char *path, const struct perfmod_gpu *gpu,
                     int dtype, const char *title, const char *predictor)
{
  double cls_flops[NCLASS] = { 0 }, cls_bytes[NCLASS] = { 0 }, cls_s[NCLASS] = { 0 };
  double cls_n[NCLASS] = { 0 }, total = 0;
  double imin = INFINITY, imax = 0, pmin = INFINITY, top = 0;
  double bw = gpu->mem_bw_gbps * 1e9, selected = perfmod_gpu_peak_flops (gpu, dtype);
  struct roof roofs[PERFMOD_DTYPE_NTYPES + 1];
  size_t nr = gpu_roofs (gpu, roofs);
  struct axes a;
  char *tmp;
  FILE *fp;

  if (bw <= 0 || selected <= 0) {
    pm_error ("--plot: %s has no memory bandwidth or peak in gpus.d", gpu->name);
    return -1;
  }
  merge_kernels (p);
  for (size_t i = 0; i < p->n; i++) {
    const struct plot_kernel *q = &p->k[i];
    cls_flops[q->kclass] += q->count * q->flops;
    cls_bytes[q->kclass] += q->count * q->bytes;
    cls_s[q->kclass] += q->count * q->seconds;
    cls_n[q->kclass] += q->count;
    total += q->count * q->seconds;
    if (placed (q->flops, q->bytes, q->seconds)) {
      imin = fmin (imin, q->flops / q->bytes);
      imax = fmax (imax, q->flops / q->bytes);
      pmin = fmin (pmin, q->flops / q->seconds);
    }
  }
  for (size_t i = 0; i < nr; i++)
    top = fmax (top, roofs[i].peak);
  /* Whole decades around the kernels and the ridge points, at most nine
   * of performance (slower kernels sit on the bottom edge). */
  imin = fmin (imin, selected / bw);
  imax = fmax (imax, top / bw);
  a.x0 = floor (log10 (imin / 1.5));
  a.x1 = ceil (log10 (imax * 4));
  if (a.x1 - a.x0 < 2)
    a.x1 = a.x0 + 2;
  a.y1 = ceil (log10 (top * 1.3));
  a.y0 = floor (log10 (fmin (pmin, bw * pow (10, a.x0)) / 1.5));
  if (a.y0 < a.y1 - 9)
    a.y0 = a.y1 - 9;

  if ((fp = atomic_open (path, &tmp)) == NULL)
    return -1;
  fprintf (fp, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
           "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
           "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">\n", W, H, W, H);
  fprintf (fp, "<title>roofline: ");
  svg_put_escaped (fp, title);
  fprintf (fp, "</title>\n<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", W, H);
  fprintf (fp, "<defs><clipPath id=\"area\"><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>"
           "</clipPath></defs>\n", L, T, R - L, B - T);
  fprintf (fp, "<text x=\"%d\" y=\"24\" font-size=\"14\" font-weight=\"bold\">", L);
  svg_put_escaped (fp, title);
  fprintf (fp, "</text>\n<text x=\"%d\" y=\"42\" font-size=\"12\" fill=\"#555\">predictor ", L);
  svg_put_escaped (fp, predictor);
  fprintf (fp, ", %s, %s; every layer copy counted</text>\n", dtype_name (dtype), gpu->name);
  draw_axes (fp, &a);
  draw_roofs (fp, &a, gpu, bw, roofs, nr, selected);

  /* distinct kernels as dots, then each class's total as a circle whose
   * area is its share of the predicted time */
  fprintf (fp, "<g clip-path=\"url(#area)\">\n");
  for (size_t i = 0; i < p->n; i++) {
    const struct plot_kernel *q = &p->k[i];
    double y;
    if (!placed (q->flops, q->bytes, q->seconds))
      continue;
    y = fmin (py (&a, q->flops / q->seconds), B - 2);
    fprintf (fp, "<circle class=\"kernel\" cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\" "
             "fill-opacity=\"0.45\"><title>%s ", px (&a, q->flops / q->bytes), y,
             class_colour[q->kclass], kclass_name (q->kclass));
    svg_put_escaped (fp, q->op);
    if (q->kclass == PERFMOD_KERNEL_LINEAR || q->kclass == PERFMOD_KERNEL_BMM)
      fprintf (fp, " b=%lld m=%lld n=%lld k=%lld", (long long) q->dims[0], (long long) q->dims[1],
               (long long) q->dims[2], (long long) q->dims[3]);
    else
      fprintf (fp, " %lld x %lld", (long long) q->dims[0], (long long) q->dims[4]);
    fprintf (fp, ": %.4g us x %.0f, %.4g TFLOP/s at %.4g FLOP/byte</title></circle>\n",
             q->seconds * 1e6, q->count, q->flops / q->seconds / 1e12, q->flops / q->bytes);
  }
  /* each placed class's circle: centre (cx, cy) and radius, for the circle and its label */
  double cx[NCLASS], cy[NCLASS], rad[NCLASS];
  for (int c = 1; c < NCLASS; c++) {
    double share = total > 0 ? cls_s[c] / total : 0, in, perf;
    if (!placed (cls_flops[c], cls_bytes[c], cls_s[c]))
      continue;
    in = cls_flops[c] / cls_bytes[c];
    perf = cls_flops[c] / cls_s[c];
    cx[c] = px (&a, in);
    cy[c] = fmin (py (&a, perf), B - 2);
    rad[c] = 4 + 18 * sqrt (share);
    fprintf (fp, "<circle class=\"class\" data-class=\"%s\" data-kernels=\"%.0f\" "
             "data-ms=\"%.9g\" data-intensity=\"%.9g\" data-flops-per-s=\"%.9g\" cx=\"%.1f\" "
             "cy=\"%.1f\" r=\"%.1f\" fill=\"%s\" fill-opacity=\"0.75\" stroke=\"#222\"><title>%s: "
             "%.0f kernels, %.4g ms (%.1f%% of the time), %.4g TFLOP/s at %.4g FLOP/byte</title>"
             "</circle>\n", kclass_name (c), cls_n[c], cls_s[c] * 1e3, in, perf, cx[c], cy[c],
             rad[c], class_colour[c], kclass_name (c), cls_n[c], cls_s[c] * 1e3, 100 * share,
             perf / 1e12, in);
  }
  fprintf (fp, "</g>\n<g font-size=\"11\" font-weight=\"bold\">\n");
  /* labels right of their circle (above it near the right edge),
   * stepped down past the ones already placed */
  double lab_l[NCLASS], lab_r[NCLASS], lab_y[NCLASS];
  int nlab = 0;
  for (int c = 1; c < NCLASS; c++) {
    double r, x, y, w;
    if (!placed (cls_flops[c], cls_bytes[c], cls_s[c]))
      continue;
    r = rad[c];
    x = cx[c];
    y = cy[c] + 4;
    w = 7.0 * (double) (strlen (kclass_name (c)) + 6);
    if (x + r + 4 + w <= R)
      lab_l[nlab] = x + r + 4;
    else {                         /* no room on the right: above the circle */
      lab_l[nlab] = fmin (x - w / 2, R - w);
      y -= r + 8;
    }
    lab_r[nlab] = lab_l[nlab] + w;
    for (int j = 0; j < nlab; j++)
      if (lab_l[nlab] < lab_r[j] && lab_l[j] < lab_r[nlab] && fabs (y - lab_y[j]) < 12) {
        y = lab_y[j] + 12;
        j = -1;
      }
    lab_y[nlab] = y;
    fprintf (fp, "<text x=\"%.1f\" y=\"%.1f\">%s %.1f%%</text>\n", lab_l[nlab], y,
             kclass_name (c), 100 * cls_s[c] / total);
    nlab++;
  }
  fprintf (fp, "</g>\n");

  /* the legend: every class, placed or not */
  fprintf (fp, "<g font-size=\"11\">\n<text x=\"%d\" y=\"%d\" font-weight=\"bold\">class: "
           "kernels, share of time</text>\n", LEGEND, T + 4);
  int row = 0;
  for (int c = 1; c < NCLASS; c++) {
    int y = T + 24 + 18 * row;
    if (cls_n[c] == 0)
      continue;
    row++;
    fprintf (fp, "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/>\n", LEGEND,
             y - 9, class_colour[c]);
    fprintf (fp, "<text class=\"legend\" data-class=\"%s\" data-ms=\"%.9g\" x=\"%d\" "
             "y=\"%d\">%s: %.0f, %.1f%%%s</text>\n", kclass_name (c), cls_s[c] * 1e3,
             LEGEND + 16, y, kclass_name (c), cls_n[c], total > 0 ? 100 * cls_s[c] / total : 0,
             cls_flops[c] > 0 ? "" : " (no FLOPs)");
  }
  fprintf (fp, "<text x=\"%d\" y=\"%d\" fill=\"#555\">dots: distinct kernels</text>\n", LEGEND,
           T + 40 + 18 * row);
  fprintf (fp, "<text x=\"%d\" y=\"%d\" fill=\"#555\">circles: a class's total,</text>\n",
           LEGEND, T + 56 + 18 * row);
  fprintf (fp, "<text x=\"%d\" y=\"%d\" fill=\"#555\">area by share of time</text>\n", LEGEND,
           T + 70 + 18 * row);
  fprintf (fp, "<text x=\"%d\" y=\"%d\" fill=\"#555\">total %.4g ms predicted</text>\n", LEGEND,
           T + 90 + 18 * row, total * 1e3);
  fprintf (fp, "</g>\n</svg>\n");

  return atomic_commit (fp, tmp, path, true);
}
