/* calib.c: a GPU's corrections of one predictor's kernel times, fitted on that GPU's measured kernels (perfmod calibrate) and applied by the core to every estimate of the predictor on it. */
#include <config.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "physics.h"

/* A residual per kernel class and dtype: measured = predicted x exp(a + b ln(predicted / 1 ms)
 * + c ln(FLOPs per byte)) (a collective's ranks for its FLOPs per byte), fitted by least
 * squares on ln(measured / predicted) and shrunk toward none (a pseudo-count CALIB_PRIOR_N
 * for a, CALIB_PRIOR_XX of ln-spread for b and c): a few shapes move the prediction a
 * little, many move it to what they measured.  The time
 * and the arithmetic intensity are the two things a GPU's difference shows in: a slower
 * clock or launch shifts the short kernels, other matrix units or caches the compute- or
 * the memory-bound ones (on L40S left out of training, fp8 GEMMs' median error 35 % goes to
 * 28 % with the time alone, 18 % with both, from 200 shapes).  Fewer than CALIB_MIN_N
 * shapes: no correction.  A kernel beyond the times and intensities a group was fitted on
 * is corrected as at their edge: the slopes are not extrapolated. */
#define CALIB_PRIOR_N 2.0
#define CALIB_PRIOR_XX 1.0
#define CALIB_MIN_N 3

void
calib_free (struct calibration *c)
{
  free (c->gpu);
  free (c->predictor);
  free (c->groups);
  memset (c, 0, sizeof *c);
}

bool
calib_covers (const struct calibration *c, const struct perfmod_gpu *gpu, int kclass)
{
  if (c == NULL || gpu == NULL || gpu->name == NULL || strcmp (gpu->name, c->gpu) != 0)
    return false;
  for (size_t i = 0; i < c->ngroups; i++)
    if (c->groups[i].kclass == kclass)
      return true;
  return false;
}

double
calib_factor (const struct calibration *c, const struct perfmod_gpu *gpu, int kclass, int dtype,
              double seconds, double intensity)
{
  if (c == NULL || gpu == NULL || gpu->name == NULL || strcmp (gpu->name, c->gpu) != 0 ||
      !(seconds > 0) || !(intensity > 0))
    return 1;
  for (size_t i = 0; i < c->ngroups; i++) {
    const struct calib_group *g = &c->groups[i];
    double x1 = log (seconds * 1e3), x2 = log (intensity);
    /* a collective's time is its bytes, whatever their type: its group
     * corrects any */
    if (g->kclass != kclass || (g->dtype != dtype && kclass != PERFMOD_KERNEL_COMM))
      continue;
    if (g->lo1 <= g->hi1) {
      x1 = fmin (fmax (x1, g->lo1), g->hi1);
      x2 = fmin (fmax (x2, g->lo2), g->hi2);
    }
    return exp (g->a + g->b * x1 + g->c * x2);
  }
  return 1;
}

/* ln(measured / predicted) against x1 = ln(predicted ms) and x2 = ln(FLOPs per byte) of one
 * group's n shapes: the slopes by ridge regression on the centred inputs, then the
 * intercept shrunk by the pseudo-count. */
static void
fit_group (const double *x1, const double *x2, const double *y, size_t n, struct calib_group *g)
{
  double m1 = 0, m2 = 0, my = 0, s11 = CALIB_PRIOR_XX, s22 = CALIB_PRIOR_XX, s12 = 0;
  double s1y = 0, s2y = 0, det;
  for (size_t i = 0; i < n; i++) {
    m1 += x1[i] / (double) n;
    m2 += x2[i] / (double) n;
    my += y[i] / (double) n;
  }
  for (size_t i = 0; i < n; i++) {
    double d1 = x1[i] - m1, d2 = x2[i] - m2, dy = y[i] - my;
    s11 += d1 * d1;
    s22 += d2 * d2;
    s12 += d1 * d2;
    s1y += d1 * dy;
    s2y += d2 * dy;
  }
  g->lo1 = g->hi1 = x1[0];
  g->lo2 = g->hi2 = x2[0];
  for (size_t i = 1; i < n; i++) {
    g->lo1 = fmin (g->lo1, x1[i]), g->hi1 = fmax (g->hi1, x1[i]);
    g->lo2 = fmin (g->lo2, x2[i]), g->hi2 = fmax (g->hi2, x2[i]);
  }
  det = s11 * s22 - s12 * s12;  /* > 0: the prior makes the matrix positive definite */
  g->b = (s22 * s1y - s12 * s2y) / det;
  g->c = (s11 * s2y - s12 * s1y) / det;
  g->a = (double) n * (my - g->b * m1 - g->c * m2) / ((double) n + CALIB_PRIOR_N);
}

int
calib_fit (struct calibration *c, const struct calib_shape *s, size_t n)
{
  double *x1 = xcalloc (n + 1, sizeof *x1), *x2 = xcalloc (n + 1, sizeof *x2);
  double *y = xcalloc (n + 1, sizeof *y);
  c->ngroups = 0;
  c->shapes = 0;
  for (int kc = 0; kc < 16; kc++)
    for (int dt = 0; dt < PERFMOD_DTYPE_NTYPES; dt++) {
      size_t m = 0;
      for (size_t i = 0; i < n; i++)
        if (s[i].kclass == kc && s[i].dtype == dt && s[i].predicted > 0 && s[i].measured > 0 &&
            s[i].intensity > 0) {
          x1[m] = log (s[i].predicted * 1e3);
          x2[m] = log (s[i].intensity);
          y[m++] = log (s[i].measured / s[i].predicted);
        }
      if (m < CALIB_MIN_N)
        continue;
      c->groups = xrealloc (c->groups, (c->ngroups + 1) * sizeof *c->groups);
      struct calib_group *g = &c->groups[c->ngroups++];
      g->kclass = kc;
      g->dtype = dt;
      g->n = m;
      fit_group (x1, x2, y, m, g);
      c->shapes += m;
    }
  free (x1);
  free (x2);
  free (y);
  return c->ngroups > 0 ? 0 : -1;
}

/* A collective does no arithmetic: its second input is its ranks, where GPUs differ as
 * their links do.  One group corrects every collective of a dtype: with a group per
 * operation (tried) the left-out NVLink GPUs' errors after 25-100 shapes were as large or
 * larger, each group fitted on a quarter of the shapes (doc/precision.md). */
double
calib_intensity (const struct perfmod_kernel *k, const struct perfmod_gpu *gpu)
{
  struct phys_cost pc;
  if (k->kclass == PERFMOD_KERNEL_COMM)
    return k->ranks >= 2 ? (double) k->ranks : 0;
  if (phys_cost_of (k, gpu, &pc) != 0 || !(pc.bytes > 0) || !(pc.flops > 0))
    return 0;
  return pc.flops / pc.bytes;
}

int
calib_write (const struct calibration *c, const char *path, const char *command)
{
  char *tmp;
  FILE *fp = atomic_open (path, &tmp);
  if (fp == NULL)
    return -1;
  fprintf (fp, "# perfmod calibration: a predictor's kernel times on one GPU, corrected as\n"
           "#   measured = predicted x exp(a + b ln(predicted / 1 ms) + c ln(FLOPs per byte))\n"
           "#   per kernel class and dtype\n"
           "# made by: %s\ngpu = %s\npredictor = %s\nshapes = %zu\n"
           "# group CLASS DTYPE SHAPES A B C [MS_LO MS_HI INTENSITY_LO INTENSITY_HI]\n"
           "#   (the predicted times and FLOPs per byte fitted on: beyond them, as at the edge)\n",
           command, c->gpu, c->predictor, c->shapes);
  for (size_t i = 0; i < c->ngroups; i++) {
    const struct calib_group *g = &c->groups[i];
    fprintf (fp, "group %s %s %zu %.9g %.9g %.9g %.9g %.9g %.9g %.9g\n", kclass_name (g->kclass),
             dtype_name (g->dtype), g->n, g->a, g->b, g->c, exp (g->lo1), exp (g->hi1),
             exp (g->lo2), exp (g->hi2));
  }
  return atomic_commit (fp, tmp, path, !ferror (fp));
}

/* The kernel class of a group line's CLASS (kclass_name's names), or -1. */
static int
class_of (const char *label)
{
  for (int kc = 0; kc < 16; kc++)
    if (strcmp (kclass_name (kc), label) == 0 && strcmp (label, "?") != 0)
      return kc;
  return -1;
}

int
calib_load (struct calibration *c, const char *path)
{
  FILE *fp;
  char line[512];
  long ln = 0;
  int errors = 0;
  memset (c, 0, sizeof *c);
  if (input_file_check (path, "a calibration file") < 0)
    return -1;
  if ((fp = fopen (path, "r")) == NULL) {
    pm_error ("%s: cannot read it: %s", path, strerror (errno));
    return -1;
  }
  input_note (path);
  while (fgets (line, sizeof line, fp) && errors == 0) {
    char key[32], v1[128], v2[32];
    size_t n;
    double a, b, cc, r[4];
    int used = 0;
    bool range;              /* the group line gives the ranges fitted on */
    ln++;
    if (strchr (line, '\n') == NULL && !feof (fp)) {
      pm_error ("%s:%ld: a line longer than %zu bytes", path, ln, sizeof line - 2);
      errors++;
      break;
    }
    line[strcspn (line, "\r\n")] = '\0';
    if (line[strspn (line, " \t")] == '\0' || line[strspn (line, " \t")] == '#')
      continue;
    if (sscanf (line, "gpu = %127s %n", v1, &used) == 1 && line[used] == '\0') {
      free (c->gpu);
      c->gpu = xstrdup (v1);
    }
    else if (sscanf (line, "predictor = %127s %n", v1, &used) == 1 && line[used] == '\0') {
      free (c->predictor);
      c->predictor = xstrdup (v1);
    }
    else if (sscanf (line, "shapes = %zu %n", &n, &used) == 1 && line[used] == '\0')
      c->shapes = n;
    else if ((range = sscanf (line, "group %31s %31s %zu %lf %lf %lf %lf %lf %lf %lf %n", key,
                              v2, &n, &a, &b, &cc, &r[0], &r[1], &r[2], &r[3], &used) == 10
                      && line[used] == '\0') ||
             (sscanf (line, "group %31s %31s %zu %lf %lf %lf %n", key, v2, &n, &a, &b, &cc,
                      &used) == 6 && line[used] == '\0')) {
      int kc = class_of (key), dt = dtype_parse (v2);
      if (kc < 0 || dt < 0 || !isfinite (a) || !isfinite (b) || !isfinite (cc) || fabs (a) > 10 ||
          fabs (b) > 10 || fabs (cc) > 10 || n < 1 ||
          (range && !(r[0] > 0 && r[0] <= r[1] && isfinite (r[1]) && r[2] > 0 && r[2] <= r[3] &&
                      isfinite (r[3])))) {
        pm_error ("%s:%ld: group '%s %s': expected a kernel class (FC, BMM, EW, Softmax, LN, "
                  "ATTN, ...), a dtype, the shapes, three finite numbers within 10 and, if "
                  "given, two positive ranges (ms, FLOPs per byte)", path, ln, key, v2);
        errors++;
        break;
      }
      c->groups = xrealloc (c->groups, (c->ngroups + 1) * sizeof *c->groups);
      c->groups[c->ngroups++] = (struct calib_group) {
        .kclass = kc, .dtype = dt, .n = n, .a = a, .b = b, .c = cc,
        .lo1 = range ? log (r[0]) : 1, .hi1 = range ? log (r[1]) : 0,
        .lo2 = range ? log (r[2]) : 1, .hi2 = range ? log (r[3]) : 0 };
    }
    else {
      pm_error ("%s:%ld: '%.60s': expected gpu = NAME, predictor = NAME, shapes = N or "
                "group CLASS DTYPE SHAPES A B C [MS_LO MS_HI INTENSITY_LO INTENSITY_HI]", path, ln,
                line);
      errors++;
    }
  }
  fclose (fp);
  if (errors == 0 && (c->gpu == NULL || c->predictor == NULL || c->ngroups == 0)) {
    pm_error ("%s: a calibration names its gpu, its predictor and at least one group", path);
    errors++;
  }
  if (errors) {
    calib_free (c);
    return -1;
  }
  return 0;
}

void
calib_describe (const struct calibration *c, const char *path, char *buf, size_t len)
{
  snprintf (buf, len, "%s calibrated on %zu shapes of %s (%s)", c->predictor, c->shapes, c->gpu,
            path);
}

int
calib_attach (const char *path, struct plugin_set *set, struct calibration *cal)
{
  struct plugin *pl;
  if (calib_load (cal, path) < 0)
    return -1;
  if ((pl = plugins_find (set, cal->predictor, PERFMOD_PLUGIN_PREDICTOR)) == NULL) {
    pm_error ("%s: predictor '%s' is not loaded (see perfmod plugins)", path, cal->predictor);
    calib_free (cal);
    return -1;
  }
  pl->calib = cal;
  return 0;
}
