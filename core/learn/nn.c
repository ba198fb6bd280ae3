/* nn.c: a small multilayer-perceptron engine: dense layers, ReLU/sigmoid, backprop through CBLAS, AdamW, early stopping. */
#include <config.h>

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* ---- deterministic random numbers (splitmix64) ---- */

uint64_t
rng_next (uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double
rng_uniform (uint64_t *s)
{
  return (double) (rng_next (s) >> 11) * (1.0 / 9007199254740992.0);
}

static double
rng_normal (uint64_t *s)
{
  double u1 = rng_uniform (s), u2 = rng_uniform (s);
  if (u1 < 1e-300)
    u1 = 1e-300;
  return sqrt (-2.0 * log (u1)) * cos (2.0 * M_PI * u2);
}

void
rng_shuffle (size_t *v, size_t n, uint64_t *s)
{
  for (size_t i = n; i > 1; i--) {
    size_t j = (size_t) (rng_next (s) % i), t = v[i - 1];
    v[i - 1] = v[j];
    v[j] = t;
  }
}

/* ---- the network ---- */

static const char *const act_names[] = { "none", "relu", "sigmoid" };

const char *
nn_act_name (int act)
{
  return act >= 0 && act <= NN_SIGMOID ? act_names[act] : "?";
}

static int
act_parse (const char *s)
{
  for (int i = 0; i <= NN_SIGMOID; i++)
    if (strcmp (s, act_names[i]) == 0)
      return i;
  return -1;
}

int
mlp_create (struct mlp *m, const int *sizes, int nl, int hidden_act, int out_act)
{
  memset (m, 0, sizeof *m);
  if (nl < 1 || nl > NN_MAX_LAYERS) {
    pm_error ("a network has 1 to %d dense layers, not %d", NN_MAX_LAYERS, nl);
    return -1;
  }
  m->nl = nl;
  m->hidden_act = hidden_act;
  m->out_act = out_act;
  for (int l = 0; l <= nl; l++) {
    if (sizes[l] < 1 || sizes[l] > 4096) {
      pm_error ("layer width %d out of range 1..4096", sizes[l]);
      return -1;
    }
    m->size[l] = sizes[l];
  }
  for (int l = 0; l < nl; l++) {
    m->w[l] = xcalloc ((size_t) sizes[l + 1] * sizes[l], sizeof (double));
    m->b[l] = xcalloc ((size_t) sizes[l + 1], sizeof (double));
  }
  m->mean = xcalloc ((size_t) sizes[0], sizeof (double));
  m->std = xcalloc ((size_t) sizes[0], sizeof (double));
  for (int i = 0; i < sizes[0]; i++)
    m->std[i] = 1;
  return 0;
}

void
mlp_free (struct mlp *m)
{
  if (!m->borrowed) {
    for (int l = 0; l < m->nl; l++) {
      free (m->w[l]);
      free (m->b[l]);
    }
    free (m->mean);
    free (m->std);
  }
  memset (m, 0, sizeof *m);
}

size_t
mlp_nparams (const struct mlp *m)
{
  size_t n = 0;
  for (int l = 0; l < m->nl; l++)
    n += (size_t) m->size[l + 1] * (m->size[l] + 1);
  return n;
}

/* He initialisation for ReLU layers, Xavier for the rest; biases zero. */
static void
mlp_init_weights (struct mlp *m, uint64_t *rng)
{
  for (int l = 0; l < m->nl; l++) {
    int act = l == m->nl - 1 ? m->out_act : m->hidden_act;
    double sd = act == NN_RELU ? sqrt (2.0 / m->size[l]) : sqrt (1.0 / m->size[l]);
    for (size_t i = 0; i < (size_t) m->size[l + 1] * m->size[l]; i++)
      m->w[l][i] = rng_normal (rng) * sd;
    memset (m->b[l], 0, (size_t) m->size[l + 1] * sizeof (double));
  }
}

void
mlp_ws_init (struct mlp_ws *ws, const struct mlp *m, size_t rows)
{
  memset (ws, 0, sizeof *ws);
  ws->rows = rows;
  for (int l = 0; l <= m->nl; l++) {
    ws->a[l] = xcalloc (rows * (size_t) m->size[l], sizeof (double));
    ws->d[l] = xcalloc (rows * (size_t) m->size[l], sizeof (double));
  }
  ws->nl = m->nl;
}

void
mlp_ws_free (struct mlp_ws *ws)
{
  for (int l = 0; l <= ws->nl; l++) {
    free (ws->a[l]);
    free (ws->d[l]);
  }
  memset (ws, 0, sizeof *ws);
}

static void
activate (double *z, size_t n, int act)
{
  if (act == NN_RELU)
    for (size_t i = 0; i < n; i++)
      z[i] = z[i] > 0 ? z[i] : 0;
  else if (act == NN_SIGMOID)
    for (size_t i = 0; i < n; i++)
      z[i] = 1.0 / (1.0 + exp (-z[i]));
}

/* Forward rows of inputs already standardised in ws->a[0]; output in ws->a[nl]. */
static void
forward_ws (const struct mlp *m, struct mlp_ws *ws, size_t rows)
{
  for (int l = 0; l < m->nl; l++) {
    int in = m->size[l], out = m->size[l + 1];
    double *z = ws->a[l + 1];
    for (size_t r = 0; r < rows; r++)
      memcpy (z + r * out, m->b[l], (size_t) out * sizeof (double));
    /* one row (a prediction) is a matrix-vector product: dgemm's packing
     * would cost more than the arithmetic */
    if (rows == 1)
      cblas_dgemv (CblasRowMajor, CblasNoTrans, out, in, 1.0, m->w[l], in, ws->a[l], 1, 1.0, z, 1);
    else
      cblas_dgemm (CblasRowMajor, CblasNoTrans, CblasTrans, (int) rows, out, in, 1.0, ws->a[l],
                   in, m->w[l], in, 1.0, z, out);
    activate (z, rows * out, l == m->nl - 1 ? m->out_act : m->hidden_act);
  }
}

static void
standardise (const struct mlp *m, const double *x, double *out)
{
  for (int i = 0; i < m->size[0]; i++)
    out[i] = (x[i] - m->mean[i]) / m->std[i];
}

void
mlp_forward (const struct mlp *m, struct mlp_ws *ws, const double *x, size_t rows, double *y)
{
  int nin = m->size[0], nout = m->size[m->nl];
  for (size_t start = 0; start < rows; start += ws->rows) {
    size_t n = rows - start < ws->rows ? rows - start : ws->rows;
    for (size_t r = 0; r < n; r++)
      standardise (m, x + (start + r) * nin, ws->a[0] + r * nin);
    forward_ws (m, ws, n);
    memcpy (y + start * nout, ws->a[m->nl], n * nout * sizeof (double));
  }
}

/* Gradients of the loss with respect to weights and biases, given dL/d(out)
 * in ws->d[nl] for the rows of the last forward pass. */
static void
backward_ws (const struct mlp *m, struct mlp_ws *ws, size_t rows, double **gw, double **gb)
{
  for (int l = m->nl - 1; l >= 0; l--) {
    int in = m->size[l], out = m->size[l + 1];
    int act = l == m->nl - 1 ? m->out_act : m->hidden_act;
    double *dz = ws->d[l + 1], *a = ws->a[l + 1];
    if (act == NN_RELU)
      for (size_t i = 0; i < rows * out; i++)
        dz[i] = a[i] > 0 ? dz[i] : 0;
    else if (act == NN_SIGMOID)
      for (size_t i = 0; i < rows * out; i++)
        dz[i] *= a[i] * (1 - a[i]);
    cblas_dgemm (CblasRowMajor, CblasTrans, CblasNoTrans, out, in, (int) rows, 1.0, dz, out,
                 ws->a[l], in, 0.0, gw[l], in);
    for (int j = 0; j < out; j++) {
      double s = 0;
      for (size_t r = 0; r < rows; r++)
        s += dz[r * out + j];
      gb[l][j] = s;
    }
    if (l > 0)
      cblas_dgemm (CblasRowMajor, CblasNoTrans, CblasNoTrans, (int) rows, in, out, 1.0, dz, out,
                   m->w[l], in, 0.0, ws->d[l], in);
  }
}

/* ---- losses and heads ---- */

/* Loss of one prediction and its derivative. */
static double
loss_of (int loss, double pred, double target, double *dpred)
{
  if (loss == NN_LOSS_SMAPE) {
    double den = fabs (pred) + fabs (target) + 1e-30, diff = pred - target;
    double sgn = diff > 0 ? 1 : diff < 0 ? -1 : 0;
    double sp = pred > 0 ? 1 : pred < 0 ? -1 : 0;
    *dpred = 2 * (sgn * den - fabs (diff) * sp) / (den * den);
    return 2 * fabs (diff) / den;
  }
  *dpred = (pred > target ? 1.0 : pred < target ? -1.0 : 0.0) / target;
  return fabs (pred - target) / target;
}

static void
identity_head (void *ctx, size_t row, const double *out, int nout, double *pred, double *dpred)
{
  (void) ctx;
  (void) row;
  (void) nout;
  *pred = out[0];
  dpred[0] = 1;
}

static double
nn_loss (const struct mlp *m, struct mlp_ws *ws, const struct nn_data *d, const size_t *rows,
         size_t n, const struct nn_fit *f)
{
  int nin = m->size[0], nout = m->size[m->nl];
  nn_head head = f->head ? f->head : identity_head;
  double total = 0, jac[NN_MAX_OUT];
  for (size_t r = 0; r < n; r++)
    standardise (m, d->x + rows[r] * nin, ws->a[0] + r * nin);
  forward_ws (m, ws, n);
  for (size_t r = 0; r < n; r++) {
    double pred, dl;
    head (f->ctx, rows[r], ws->a[m->nl] + r * nout, nout, &pred, jac);
    total += loss_of (f->loss, pred, d->y[rows[r]], &dl);
    for (int j = 0; j < nout; j++)
      ws->d[m->nl][r * nout + j] = dl * jac[j] / (double) n;
  }
  return total / (double) n;
}

/* Mean absolute percentage error (%) of the model on the given rows. */
double
nn_mape (const struct mlp *m, struct mlp_ws *ws, const struct nn_data *d, const size_t *rows,
         size_t n, const struct nn_fit *f)
{
  int nin = m->size[0], nout = m->size[m->nl];
  nn_head head = f->head ? f->head : identity_head;
  double total = 0, jac[NN_MAX_OUT];
  for (size_t start = 0; start < n; start += ws->rows) {
    size_t k = n - start < ws->rows ? n - start : ws->rows;
    for (size_t r = 0; r < k; r++)
      standardise (m, d->x + rows[start + r] * nin, ws->a[0] + r * nin);
    forward_ws (m, ws, k);
    for (size_t r = 0; r < k; r++) {
      double pred;
      head (f->ctx, rows[start + r], ws->a[m->nl] + r * nout, nout, &pred, jac);
      total += fabs (pred - d->y[rows[start + r]]) / d->y[rows[start + r]];
    }
  }
  return n ? 100.0 * total / (double) n : 0;
}

/* ---- training ---- */

struct adamw {
  double *m[NN_MAX_LAYERS][2], *v[NN_MAX_LAYERS][2];
  long t;
};

static void
adamw_step (struct mlp *mlp, struct adamw *o, double **gw, double **gb, const struct nn_fit *f)
{
  const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
  double c1, c2;
  o->t++;
  c1 = 1 - pow (b1, (double) o->t);
  c2 = 1 - pow (b2, (double) o->t);
  for (int l = 0; l < mlp->nl; l++)
    for (int k = 0; k < 2; k++) {
      double *p = k == 0 ? mlp->w[l] : mlp->b[l], *g = k == 0 ? gw[l] : gb[l];
      double *m = o->m[l][k], *v = o->v[l][k];
      size_t n = (size_t) mlp->size[l + 1] * (k == 0 ? mlp->size[l] : 1);
      for (size_t i = 0; i < n; i++) {
        m[i] = b1 * m[i] + (1 - b1) * g[i];
        v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
        /* Decoupled weight decay, on weights only. */
        if (k == 0)
          p[i] -= f->lr * f->weight_decay * p[i];
        p[i] -= f->lr * (m[i] / c1) / (sqrt (v[i] / c2) + eps);
      }
    }
}

static void
copy_weights (struct mlp *dst, const struct mlp *src)
{
  for (int l = 0; l < src->nl; l++) {
    memcpy (dst->w[l], src->w[l], (size_t) src->size[l + 1] * src->size[l] * sizeof (double));
    memcpy (dst->b[l], src->b[l], (size_t) src->size[l + 1] * sizeof (double));
  }
}

int
nn_train (struct mlp *m, const struct nn_data *d, const struct nn_fit *f, struct nn_fit_result *res)
{
  uint64_t rng = f->seed;
  size_t n = d->n, nval, ntrain, *idx, bs = (size_t) (f->batch > 0 ? f->batch : 256);
  int nin = m->size[0], stall = 0;
  struct mlp best;
  struct mlp_ws ws;
  struct adamw opt;
  double *gw[NN_MAX_LAYERS], *gb[NN_MAX_LAYERS], t0 = pm_now (), best_val = INFINITY;
  bool tty = f->progress && isatty (STDERR_FILENO);

  memset (res, 0, sizeof *res);
  if (n < 10) {
    pm_error ("%s: %zu training rows; at least 10 are needed", f->label, n);
    return -1;
  }
  idx = xmalloc (n * sizeof *idx);
  for (size_t i = 0; i < n; i++)
    idx[i] = i;
  rng_shuffle (idx, n, &rng);
  nval = (size_t) ((double) n * f->val_frac);
  if (f->val_frac > 0 && nval < 1)
    nval = 1;
  ntrain = n - nval;

  /* Standardisation from the training rows only. */
  for (int j = 0; j < nin; j++) {
    double s = 0, s2 = 0;
    for (size_t i = 0; i < ntrain; i++)
      s += d->x[idx[i] * nin + j];
    m->mean[j] = s / (double) ntrain;
    for (size_t i = 0; i < ntrain; i++) {
      double e = d->x[idx[i] * nin + j] - m->mean[j];
      s2 += e * e;
    }
    m->std[j] = sqrt (s2 / (double) ntrain);
    if (!(m->std[j] > 0))
      m->std[j] = 1;
  }
  mlp_init_weights (m, &rng);
  mlp_create (&best, m->size, m->nl, m->hidden_act, m->out_act);
  copy_weights (&best, m);
  mlp_ws_init (&ws, m, bs);
  memset (&opt, 0, sizeof opt);
  for (int l = 0; l < m->nl; l++) {
    size_t nw = (size_t) m->size[l + 1] * m->size[l], nb = (size_t) m->size[l + 1];
    gw[l] = xcalloc (nw, sizeof (double));
    gb[l] = xcalloc (nb, sizeof (double));
    opt.m[l][0] = xcalloc (nw, sizeof (double));
    opt.v[l][0] = xcalloc (nw, sizeof (double));
    opt.m[l][1] = xcalloc (nb, sizeof (double));
    opt.v[l][1] = xcalloc (nb, sizeof (double));
  }

  for (int e = 1; e <= f->epochs; e++) {
    double sum = 0, val;
    size_t batches = 0;
    rng_shuffle (idx, ntrain, &rng);
    for (size_t s = 0; s < ntrain; s += bs) {
      size_t k = ntrain - s < bs ? ntrain - s : bs;
      sum += nn_loss (m, &ws, d, idx + s, k, f);
      backward_ws (m, &ws, k, gw, gb);
      adamw_step (m, &opt, gw, gb, f);
      batches++;
    }
    val = nval ? nn_mape (m, &ws, d, idx + ntrain, nval, f) : 0;
    res->epochs_run = e;
    res->train_loss = sum / (double) batches;
    if (!isfinite (res->train_loss)) {
      pm_error ("%s: training diverged at epoch %d (loss %g)", f->label, e, res->train_loss);
      break;
    }
    if (nval == 0 || val < best_val) {
      best_val = val;
      res->best_epoch = e;
      copy_weights (&best, m);
      stall = 0;
    }
    else
      stall++;
    if (tty)
      fprintf (stderr, "\r%s: epoch %d/%d  loss %.4f  val %.2f%%  best %.2f%% (epoch %d)  %.1f s ",
               f->label, e, f->epochs, res->train_loss, val, best_val, res->best_epoch,
               pm_now () - t0);
    if (f->patience > 0 && stall >= f->patience)
      break;
  }
  if (tty)
    fputc ('\n', stderr);
  copy_weights (m, &best);
  res->val_mape = nval ? best_val : NAN;
  res->seconds = pm_now () - t0;

  for (int l = 0; l < m->nl; l++) {
    free (gw[l]);
    free (gb[l]);
    for (int k = 0; k < 2; k++) {
      free (opt.m[l][k]);
      free (opt.v[l][k]);
    }
  }
  mlp_ws_free (&ws);
  mlp_free (&best);
  free (idx);
  return isfinite (res->train_loss) ? 0 : -1;
}

/* ---- gradients for tests ---- */

int
nn_gradients (struct mlp *m, const struct nn_data *d, const struct nn_fit *f, double **gw,
              double **gb, double *loss)
{
  struct mlp_ws ws;
  size_t *rows = xmalloc (d->n * sizeof *rows);
  for (size_t i = 0; i < d->n; i++)
    rows[i] = i;
  mlp_ws_init (&ws, m, d->n);
  *loss = nn_loss (m, &ws, d, rows, d->n, f);
  backward_ws (m, &ws, d->n, gw, gb);
  mlp_ws_free (&ws);
  free (rows);
  return 0;
}

/* ---- parameter files ---- */

int
mlp_to_params (const struct mlp *m, struct params *p, const char *prefix)
{
  char key[160], widths[256] = "";
  size_t off = 0;
  for (int l = 0; l <= m->nl; l++)
    off += (size_t) snprintf (widths + off, sizeof widths - off, "%s%d", l ? "," : "", m->size[l]);
  snprintf (key, sizeof key, "%s.layers", prefix);
  params_set (p, key, "%s", widths);
  snprintf (key, sizeof key, "%s.hidden_act", prefix);
  params_set (p, key, "%s", nn_act_name (m->hidden_act));
  snprintf (key, sizeof key, "%s.output_act", prefix);
  params_set (p, key, "%s", nn_act_name (m->out_act));
  snprintf (key, sizeof key, "%s.mean", prefix);
  memcpy (params_add_tensor (p, key, 1, (size_t) m->size[0]), m->mean, m->size[0] * sizeof (double));
  snprintf (key, sizeof key, "%s.std", prefix);
  memcpy (params_add_tensor (p, key, 1, (size_t) m->size[0]), m->std, m->size[0] * sizeof (double));
  for (int l = 0; l < m->nl; l++) {
    snprintf (key, sizeof key, "%s.w%d", prefix, l);
    memcpy (params_add_tensor (p, key, (size_t) m->size[l + 1], (size_t) m->size[l]), m->w[l],
            (size_t) m->size[l + 1] * m->size[l] * sizeof (double));
    snprintf (key, sizeof key, "%s.b%d", prefix, l);
    memcpy (params_add_tensor (p, key, 1, (size_t) m->size[l + 1]), m->b[l],
            (size_t) m->size[l + 1] * sizeof (double));
  }
  return 0;
}

int
mlp_from_params (struct mlp *m, const struct params *p, const char *prefix, int nin, int nout)
{
  char key[160];
  const char *v;
  const struct ptensor *t;
  char **w;
  int sizes[NN_MAX_LAYERS + 1], nl, hact, oact;
  const char *file = p->path ? p->path : "parameters";

  memset (m, 0, sizeof *m);
  snprintf (key, sizeof key, "%s.layers", prefix);
  if ((v = params_get (p, key)) == NULL) {
    pm_error ("%s: no '%s' key: not a network for %s", file, key, prefix);
    return -1;
  }
  w = strv_split (v, ',');
  nl = (int) strv_len (w) - 1;
  for (int l = 0; l <= nl && l <= NN_MAX_LAYERS; l++) {
    int64_t x;
    if (!parse_int64 (w[l], &x) || x < 1 || x > 4096) {
      pm_error ("%s: %s: bad width '%s'", file, key, w[l]);
      strv_free (w);
      return -1;
    }
    sizes[l] = (int) x;
  }
  strv_free (w);
  if (nl < 1 || nl > NN_MAX_LAYERS) {
    pm_error ("%s: %s: %d layers; 1 to %d supported", file, key, nl, NN_MAX_LAYERS);
    return -1;
  }
  if ((nin && sizes[0] != nin) || (nout && sizes[nl] != nout)) {
    pm_error ("%s: %s is %d inputs -> %d outputs; this predictor needs %d -> %d", file, prefix,
              sizes[0], sizes[nl], nin, nout);
    return -1;
  }
  snprintf (key, sizeof key, "%s.hidden_act", prefix);
  hact = act_parse ((v = params_get (p, key)) ? v : "");
  snprintf (key, sizeof key, "%s.output_act", prefix);
  oact = act_parse ((v = params_get (p, key)) ? v : "");
  if (hact < 0 || oact < 0) {
    pm_error ("%s: %s: missing or unknown activation (none, relu, sigmoid)", file, prefix);
    return -1;
  }
  /* The network reads the file's tensors in place (no copy of the
   * megabytes an ensemble holds); it is only evaluated, never trained. */
  m->nl = nl;
  m->hidden_act = hact;
  m->out_act = oact;
  m->borrowed = true;
  memcpy (m->size, sizes, (size_t) (nl + 1) * sizeof *sizes);
  snprintf (key, sizeof key, "%s.mean", prefix);
  if ((t = params_need (p, key, 1, (size_t) sizes[0])) == NULL)
    goto fail;
  m->mean = t->v;
  snprintf (key, sizeof key, "%s.std", prefix);
  if ((t = params_need (p, key, 1, (size_t) sizes[0])) == NULL)
    goto fail;
  m->std = t->v;
  for (int l = 0; l < nl; l++) {
    snprintf (key, sizeof key, "%s.w%d", prefix, l);
    if ((t = params_need (p, key, (size_t) sizes[l + 1], (size_t) sizes[l])) == NULL)
      goto fail;
    m->w[l] = t->v;
    snprintf (key, sizeof key, "%s.b%d", prefix, l);
    if ((t = params_need (p, key, 1, (size_t) sizes[l + 1])) == NULL)
      goto fail;
    m->b[l] = t->v;
  }
  return 0;
fail:
  memset (m, 0, sizeof *m);
  return -1;
}
