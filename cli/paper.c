/* paper.c: NeuSight's paper as perfmod reads it: the artifact's name of each predictor and its per-op table, shared by eval and reproduce. */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* How the artifact names each perfmod predictor: the column prefix of
 * summary.csv and the row of perop.csv. */
static const struct paper_method {
  const char *predictor, *prefix, *name;
} paper_methods[] = {
  { "roofline", "roofline", "Roofline" },
  { "habitat", "habitat", "Habitat" },
  { "linreg", "micro", "Li et al." },
  { "tile-mlp", "neusight", "NeuSight" },
  { "tile-mlp-neusight", "neusight", "NeuSight" },
};

static const struct paper_method *
paper_method (const char *predictor)
{
  for (size_t i = 0; i < sizeof paper_methods / sizeof paper_methods[0]; i++)
    if (strcmp (predictor, paper_methods[i].predictor) == 0)
      return &paper_methods[i];
  return NULL;
}

const char *
paper_method_name (const char *predictor)
{
  const struct paper_method *m = paper_method (predictor);
  return m ? m->name : NULL;
}

const char *
paper_method_prefix (const char *predictor)
{
  const struct paper_method *m = paper_method (predictor);
  return m ? m->prefix : NULL;
}

/* summary/perop.csv: one row per method, 5 in-distribution then 5
 * out-of-distribution columns (BMM, FC, EW, Softmax, LN).  Fills
 * paper[split][class] with NAN where the file or the row is missing. */
void
paper_perop (const char *neusight, const char *predictor, double paper[2][PAPER_CLASSES])
{
  const char *row = paper_method_name (predictor);
  struct csv_reader r;
  char *path;

  for (int s = 0; s < 2; s++)
    for (int c = 0; c < PAPER_CLASSES; c++)
      paper[s][c] = NAN;
  if (neusight == NULL || row == NULL)
    return;
  path = xasprintf ("%s/summary/perop.csv", neusight);
  if (csv_open (&r, path) == 0) {
    while (csv_next (&r) == 1)
      if (r.nfields >= 11 && strcmp (r.fields[0], row) == 0)
        for (int s = 0; s < 2; s++)
          for (int c = 0; c < PAPER_CLASSES; c++)
            if (!parse_double (r.fields[1 + s * PAPER_CLASSES + c], &paper[s][c]))
              paper[s][c] = NAN;
    csv_close (&r);
  }
  else
    pm_debug ("%s: not readable; the paper column stays empty", path);
  free (path);
}

