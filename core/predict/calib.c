/* calib.c: a GPU's corrections of one predictor's kernel times, fitted on that GPU's measured kernels (perfmod calibrate) and applied by the core to every estimate of the predictor on it. */
#include <config.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "physics.h"

/* A residual per kernel class and dtype: measured = predicted x exp(a + b ln(predicted / 1 ms)
 * + c ln(FLOPs per byte)), fitted by least squares on ln(measured / predicted) and shrunk
 * toward none (a pseudo-count CALIB_PRIOR_N for a, CALIB_PRIOR_XX of ln-spread for b and c):
 * a few shapes move the prediction a little, many move it to what they measured.  The time
 * and the arithmetic intensity are the two things a GPU's difference shows in: a slower
 * clock or launch shifts the short kernels, other matrix units or caches the compute- or
 * the memory-bound ones (on L40S left out of training, fp8 GEMMs' median error 35 % goes to
 * 28 % with the time alone, 18 % with both, from 200 shapes).  Fewer than CALIB_MIN_N
 * shapes: no correction.  The slopes apply beyond the times and intensities they were
 * fitted on too (not clamped to that range yet). */
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

double
calib_factor (const struct calibration *c, const struct perfmod_gpu *gpu, int kclass, int dtype,
              double seconds, double intensity)
{
  if (c == NULL || gpu == NULL || gpu->name == NULL || strcmp (gpu->name, c->gpu) != 0 ||
      !(seconds > 0) || !(intensity > 0))
    return 1;
  for (size_t i = 0; i < c->ngroups; i++)
    if (c->groups[i].kclass == kclass && c->groups[i].dtype == dtype)
      return exp (c->groups[i].a + c->groups[i].b * log (seconds * 1e3)
                  + c->groups[i].c * log (intensity));
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

double
calib_intensity (const struct perfmod_kernel *k, const struct perfmod_gpu *gpu)
{
  struct phys_cost pc;
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
           "# group CLASS DTYPE SHAPES A B C\n", command, c->gpu, c->predictor, c->shapes);
  for (size_t i = 0; i < c->ngroups; i++)
    fprintf (fp, "group %s %s %zu %.9g %.9g %.9g\n", kclass_name (c->groups[i].kclass),
             dtype_name (c->groups[i].dtype), c->groups[i].n, c->groups[i].a, c->groups[i].b,
             c->groups[i].c);
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
    double a, b, cc;
    int used = 0;
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
    else if (sscanf (line, "group %31s %31s %zu %lf %lf %lf %n", key, v2, &n, &a, &b, &cc,
                     &used) == 6 && line[used] == '\0') {
      int kc = class_of (key), dt = dtype_parse (v2);
      if (kc < 0 || dt < 0 || !isfinite (a) || !isfinite (b) || !isfinite (cc) || fabs (a) > 10 ||
          fabs (b) > 10 || fabs (cc) > 10 || n < 1) {
        pm_error ("%s:%ld: group '%s %s': expected a kernel class (FC, BMM, EW, Softmax, LN, "
                  "ATTN, ...), a dtype, the shapes and three finite numbers within 10", path, ln,
                  key, v2);
        errors++;
        break;
      }
      c->groups = xrealloc (c->groups, (c->ngroups + 1) * sizeof *c->groups);
      c->groups[c->ngroups++] = (struct calib_group) { .kclass = kc, .dtype = dt, .n = n,
                                                       .a = a, .b = b, .c = cc };
    }
    else {
      pm_error ("%s:%ld: '%.60s': expected gpu = NAME, predictor = NAME, shapes = N or "
                "group CLASS DTYPE SHAPES A B", path, ln, line);
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
