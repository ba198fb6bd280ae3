/* t-learning.c: unit tests of the network engine, parameter files, tile rules, kernel datasets and line fits. */
#include <config.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "tap.h"
#include "tilemlp-model.h"
#include "physics.h"

static char tmpdir[] = "/tmp/perfmod-learning.XXXXXX";

static char *
write_tmp (const char *name, const char *text)
{
  static char *last;           /* the previous path, freed on the next call */
  free (last);
  char *path = xasprintf ("%s/%s", tmpdir, name);
  FILE *fp = fopen (path, "w");
  fputs (text, fp);
  fclose (fp);
  last = path;
  return path;
}

static char *
write_tmpf (const char *name, const char *fmt, ...)
{
  va_list ap;
  char *text, *p;
  va_start (ap, fmt);
  if (vasprintf (&text, fmt, ap) < 0)
    abort ();
  va_end (ap);
  p = write_tmp (name, text);
  free (text);
  return p;
}

/* stderr of a call, captured through a file. */
static int saved_fd = -1;
static char *cap_path;

static void
capture_begin (void)
{
  fflush (stderr);
  free (cap_path);
  cap_path = xasprintf ("%s/stderr", tmpdir);
  saved_fd = dup (2);
  int fd = open (cap_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  dup2 (fd, 2);
  close (fd);
}

static char *
capture_end (void)
{
  static char buf[4096];
  FILE *fp;
  size_t n;
  fflush (stderr);
  dup2 (saved_fd, 2);
  close (saved_fd);
  fp = fopen (cap_path, "r");
  n = fp ? fread (buf, 1, sizeof buf - 1, fp) : 0;
  buf[n] = '\0';
  if (fp)
    fclose (fp);
  return buf;
}

static size_t
file_bytes (const char *path, unsigned char **out)
{
  FILE *fp = fopen (path, "rb");
  size_t n = 0, cap = 0;
  int c;
  *out = NULL;
  while (fp && (c = fgetc (fp)) != EOF) {
    if (n == cap)
      *out = xrealloc (*out, cap = cap ? 2 * cap : 4096);
    (*out)[n++] = (unsigned char) c;
  }
  if (fp)
    fclose (fp);
  return n;
}

/* ---- engine ---- */

/* A smooth synthetic target: y = 1 + x0^2 + 0.5 x1, always positive. */
static void
make_data (double *x, double *y, size_t n, uint64_t seed)
{
  for (size_t i = 0; i < n; i++) {
    x[2 * i] = rng_uniform (&seed) * 2 - 1;
    x[2 * i + 1] = rng_uniform (&seed) * 2 - 1;
    y[i] = 1.5 + x[2 * i] * x[2 * i] + 0.5 * x[2 * i + 1];
  }
}

static void
test_gradients (void)
{
  static const int sizes[] = { 2, 5, 4, 1 };
  double x[40], y[20], loss, lp, lm, *gw[3], *gb[3], *sw[3], *sb[3], worst = 0;
  struct mlp m;
  struct nn_fit f = { .label = "grad", .loss = NN_LOSS_MAPE };
  struct nn_data d = { 20, x, y };
  uint64_t seed = 7;

  make_data (x, y, 20, 3);
  mlp_create (&m, sizes, 3, NN_SIGMOID, NN_NONE);
  for (int l = 0; l < 3; l++) {
    for (int i = 0; i < m.size[l + 1] * m.size[l]; i++)
      m.w[l][i] = rng_uniform (&seed) - 0.5;
    for (int i = 0; i < m.size[l + 1]; i++)
      m.b[l][i] = rng_uniform (&seed) - 0.5;
    gw[l] = xcalloc ((size_t) m.size[l + 1] * m.size[l], sizeof (double));
    gb[l] = xcalloc ((size_t) m.size[l + 1], sizeof (double));
    sw[l] = xcalloc ((size_t) m.size[l + 1] * m.size[l], sizeof (double));
    sb[l] = xcalloc ((size_t) m.size[l + 1], sizeof (double));
  }
  /* Outputs far from the targets: MAPE is smooth there. */
  m.b[2][0] = 5;
  nn_gradients (&m, &d, &f, gw, gb, &loss);
  for (int l = 0; l < 3; l++)
    for (int i = 0; i < m.size[l + 1] * m.size[l]; i++) {
      double keep = m.w[l][i], h = 1e-5, num, e;
      m.w[l][i] = keep + h;
      nn_gradients (&m, &d, &f, sw, sb, &lp);
      m.w[l][i] = keep - h;
      nn_gradients (&m, &d, &f, sw, sb, &lm);
      m.w[l][i] = keep;
      num = (lp - lm) / (2 * h);
      e = fabs (num - gw[l][i]) / (fabs (num) + fabs (gw[l][i]) + 1e-9);
      if (e > worst)
        worst = e;
    }
  ok (worst < 1e-4, "engine: backprop gradients match finite differences (worst relative %.2g)",
      worst);
  for (int l = 0; l < 3; l++) {
    free (gw[l]);
    free (gb[l]);
    free (sw[l]);
    free (sb[l]);
  }
  mlp_free (&m);
}

static void
train_small (struct mlp *m, uint64_t seed, struct nn_fit_result *res, double *first_loss)
{
  static const int sizes[] = { 2, 16, 16, 1 };
  static double x[2 * 400], y[400];
  struct nn_fit f = { .label = "tiny", .epochs = 1, .batch = 32, .lr = 3e-3, .weight_decay = 1e-4,
                      .val_frac = 0.2, .seed = seed, .loss = NN_LOSS_MAPE };
  struct nn_data d = { 400, x, y };
  make_data (x, y, 400, 11);
  mlp_create (m, sizes, 3, NN_RELU, NN_NONE);
  nn_train (m, &d, &f, res);
  *first_loss = res->train_loss;
  mlp_free (m);
  mlp_create (m, sizes, 3, NN_RELU, NN_NONE);
  f.epochs = 60;
  nn_train (m, &d, &f, res);
}

static void
test_training (void)
{
  struct mlp a, b;
  struct nn_fit_result ra, rb;
  double first, ignore;
  bool same = true;

  train_small (&a, 5, &ra, &first);
  ok (ra.train_loss < first / 3, "engine: a tiny training run's loss falls (%.3f -> %.3f)", first,
      ra.train_loss);
  ok (ra.val_mape < 10, "engine: validation MAPE of the tiny run is %.2f%% (< 10)", ra.val_mape);
  ok (ra.best_epoch >= 1 && ra.best_epoch <= ra.epochs_run, "engine: best epoch is recorded");
  train_small (&b, 5, &rb, &ignore);
  for (int l = 0; l < a.nl; l++)
    same &= memcmp (a.w[l], b.w[l], (size_t) a.size[l + 1] * a.size[l] * sizeof (double)) == 0;
  ok (same && ra.val_mape == rb.val_mape, "engine: the same seed gives bit-identical weights");
  mlp_free (&b);
  train_small (&b, 6, &rb, &ignore);
  ok (memcmp (a.w[0], b.w[0], (size_t) a.size[1] * a.size[0] * sizeof (double)) != 0,
      "engine: another seed gives other weights");
  mlp_free (&b);
  mlp_free (&a);
}

/* ---- parameter files ---- */

static void
test_params (void)
{
  static const int sizes[] = { 3, 4, 2 };
  struct mlp m, back;
  struct params p, q;
  char *f1 = xasprintf ("%s/a.params", tmpdir), *f2 = xasprintf ("%s/b.params", tmpdir);
  unsigned char *b1, *b2;
  size_t n1, n2;
  uint64_t s = 9;
  double x[3] = { 0.5, -2, 7 }, y1[2], y2[2];
  struct mlp_ws ws;
  char *e;

  mlp_create (&m, sizes, 2, NN_RELU, NN_SIGMOID);
  for (int l = 0; l < 2; l++)
    for (int i = 0; i < m.size[l + 1] * m.size[l]; i++)
      m.w[l][i] = (rng_uniform (&s) - 0.5) / 3.0;   /* not representable in short decimals */
  m.mean[1] = 1.0 / 3;
  m.std[2] = M_PI;
  params_init (&p);
  params_set (&p, "predictor", "test");
  params_set (&p, "command", "perfmod train --x\nwith a newline");
  mlp_to_params (&m, &p, "net");
  ok (params_save (&p, f1) == 0, "params: saved");
  ok (params_load (&q, f1) == 0, "params: loaded");
  ok (q.nkv == p.nkv && strcmp (params_get (&q, "command"), "perfmod train --x with a newline") == 0,
      "params: header keys survive, newlines flattened");
  ok (params_save (&q, f2) == 0, "params: saved again");
  n1 = file_bytes (f1, &b1);
  n2 = file_bytes (f2, &b2);
  ok (n1 > 0 && n1 == n2 && memcmp (b1, b2, n1) == 0, "params: save/load/save is bit-exact (%zu bytes)", n1);
  ok (mlp_from_params (&back, &q, "net", 3, 2) == 0, "params: the network loads back");
  mlp_ws_init (&ws, &m, 1);
  mlp_forward (&m, &ws, x, 1, y1);
  mlp_forward (&back, &ws, x, 1, y2);
  ok (memcmp (y1, y2, sizeof y1) == 0, "params: the loaded network gives bit-identical outputs");
  mlp_ws_free (&ws);
  mlp_free (&back);

  /* The data starts at a multiple of 8, so a little-endian host maps it. */
  const unsigned char *d = memmem (b1, n1, "\ndata\n", 6);
  const double one = 1.0;
  bool le = ((const unsigned char *) &one)[7] == 0x3f;
  ok (d && (size_t) (d - b1 + 6) % 8 == 0, "params: the saved data starts 8-byte aligned");
  ok (le ? q.map != NULL && q.t[0].mapped : q.map == NULL,
      "params: an aligned file is used in place on a little-endian host");
  ok (params_get (&q, "pad") == NULL, "params: the alignment padding is not a key");
  /* An unaligned file (35 header bytes) is read instead, to the same values. */
  {
    static const double want[2] = { 1.5, -2.25 };
    struct params u;
    char *f3 = xasprintf ("%s/u.params", tmpdir);
    FILE *fu = fopen (f3, "wb");
    fputs ("perfmod-params 1\ntensor t 1 2\ndata\n", fu);
    for (int i = 0; i < 2; i++) {
      uint64_t bits;
      memcpy (&bits, &want[i], 8);
      for (int j = 0; j < 8; j++)
        fputc ((int) ((bits >> (8 * j)) & 0xff), fu);
    }
    fclose (fu);
    ok (params_load (&u, f3) == 0 && u.map == NULL && !u.t[0].mapped &&
        u.t[0].v[0] == want[0] && u.t[0].v[1] == want[1],
        "params: an unaligned file is read and decoded");
    params_free (&u);
    free (f3);
  }

  capture_begin ();
  int rc = mlp_from_params (&back, &q, "net", 4, 2);
  e = capture_end ();
  ok (rc < 0 && strstr (e, "3 inputs -> 2 outputs; this predictor needs 4 -> 2"),
      "params: a network of another shape is refused, saying both shapes");
  capture_begin ();
  rc = mlp_from_params (&back, &q, "other", 0, 0);
  e = capture_end ();
  ok (rc < 0 && strstr (e, "no 'other.layers' key"), "params: a missing network is named");

  /* Another version. */
  b1[strlen ("perfmod-params ")] = '7';
  FILE *fp = fopen (f2, "wb");
  fwrite (b1, 1, n1, fp);
  fclose (fp);
  params_free (&q);
  capture_begin ();
  rc = params_load (&q, f2);
  e = capture_end ();
  ok (rc < 0 && strstr (e, ":1: parameter file version 7; this perfmod reads version 1"),
      "params: a file of another version is refused with file:line and both versions");
  /* Truncated data. */
  fp = fopen (f2, "wb");
  b1[strlen ("perfmod-params ")] = '1';
  fwrite (b1, 1, n1 - 3, fp);
  fclose (fp);
  capture_begin ();
  rc = params_load (&q, f2);
  e = capture_end ();
  ok (rc < 0 && strstr (e, "truncated"), "params: a truncated file is refused");
  /* Not a parameter file at all. */
  char *junk = write_tmp ("junk.params", "hello\n");
  capture_begin ();
  rc = params_load (&q, junk);
  e = capture_end ();
  ok (rc < 0 && strstr (e, "junk.params:1: not a perfmod parameter file"),
      "params: another file is refused with file:line");

  params_free (&p);
  mlp_free (&m);
  free (b1);
  free (b2);
  free (f1);
  free (f2);
}

/* ---- tile rules ---- */

static void
test_tiles (const char *srcdir)
{
  struct tile_rules r;
  char *dir = xasprintf ("%s/tiles.d", srcdir), *e;
  double t[2];
  int64_t grid[3] = { 25025, 1, 1 };
  static const struct { const char *name; double r, c; } names[] = {
    { "ampere_sgemm_128x64_tn", 128, 64 },
    { "volta_sgemm_32x128_tn", 32, 128 },
    { "maxwell_sgemm_128x64_nn", 128, 64 },
    { "ampere_sgemm_128x32_sliced1x4_tn", 128, 32 },
    { "sgemm_128x128x8_NT_vec", 128, 128 },
    { "void cutlass::Kernel<cutlass_80_simt_sgemm_128x128_8x5_nn_align1>(cutlass_80_simt_sgemm_128x128_8x5_nn_align1::Params)", 128, 128 },
    { "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x256x32_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas", 128, 256 },
    { "Cijk_Ailk_Bljk_SB_MT64x128x16_SN_1LDSB0_APM1_ABV0", 64, 128 },
  };

  int loaded = tile_rules_load (&r, dir);
  ok (loaded == 0 && r.n >= 5, "tiles: the shipped rules load (%zu rules)", r.n);
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    ok (tile_of (&r, PERFMOD_KERNEL_BMM, names[i].name, 1, 0, grid, t) == 0 && t[0] == names[i].r &&
        t[1] == names[i].c, "tiles: %.40s... -> %gx%g", names[i].name, names[i].r, names[i].c);
  /* NeuSight's vector rule: 13021*984 / 25025 = 511.99, ceil 512 = 2^9. */
  ok (tile_of (&r, PERFMOD_KERNEL_ELEMENTWISE, "void at::native::vectorized_elementwise_kernel<4>",
               13021, 984, grid, t) == 0 && t[0] == 512 && t[1] == 0,
      "tiles: element-wise tile from the grid, rounded up to a power of two");
  ok (tile_of (&r, PERFMOD_KERNEL_SOFTMAX, "cunn_SoftMaxForward", 32768, 1600, grid, t) == 0 &&
      t[0] == 1600, "tiles: softmax tile is the row");
  capture_begin ();
  int rc = tile_of (&r, PERFMOD_KERNEL_LINEAR, "my_custom_gemm_kernel", 1, 0, grid, t);
  e = capture_end ();
  ok (rc < 0 && strstr (e, "kernel 'my_custom_gemm_kernel'") && strstr (e, "no tile rule"),
      "tiles: an unmatched kernel is an error naming it");
  tile_rules_free (&r);
  free (dir);

  /* Bad rule files cite file:line. */
  char *bad = xasprintf ("%s/badtiles", tmpdir);
  mkdir (bad, 0700);
  write_tmp ("badtiles/1.ini", "[r]\nclasses = bmm\npattern = sgemm_([0-9]+\n");
  capture_begin ();
  rc = tile_rules_load (&r, bad);
  e = capture_end ();
  ok (rc < 0 && strstr (e, "1.ini:3: pattern:"), "tiles: a bad regular expression cites file:line");
  write_tmp ("badtiles/1.ini", "[r]\nclasses = bmm\npattern = sgemm_[0-9]+\n");
  capture_begin ();
  rc = tile_rules_load (&r, bad);
  e = capture_end ();
  ok (rc < 0 && strstr (e, "1.ini:3: pattern needs two capture groups"),
      "tiles: a pattern without two groups is refused");
  write_tmp ("badtiles/1.ini", "[r]\nclasses = bmm, conv\ntile = grid\n");
  capture_begin ();
  rc = tile_rules_load (&r, bad);
  e = capture_end ();
  ok (rc < 0 && strstr (e, "1.ini:2: classes: unknown kernel class 'conv'"),
      "tiles: an unknown class is refused with file:line");
  write_tmp ("badtiles/1.ini", "[r]\nclasses = bmm\n");
  capture_begin ();
  rc = tile_rules_load (&r, bad);
  e = capture_end ();
  ok (rc < 0 && strstr (e, "1.ini:1: [r] needs classes and exactly one of pattern or tile"),
      "tiles: a rule without pattern or tile is refused");
  free (bad);
}

/* ---- kernel datasets ---- */

static void
test_kdata (const char *srcdir)
{
  struct gpu_db gpus;
  struct tile_rules tiles;
  struct kset ks = { 0 };
  struct perfmod_kernel k;
  char *gdir = xasprintf ("%s/gpus.d", srcdir), *tdir = xasprintf ("%s/tiles.d", srcdir), *e, *p;
  const char *hdr = "OPName,Latency,Device,Torch Version,CUDNN Version,Kernel Name,Warps per SM,"
                    "Blocks per SM,Grid x,Grid y,Grid z,Block x,Block y,Block z,CUDA Version,B,H,large\n";
  const char *add = "\"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
                    "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)\"";
  int rc;

  gpu_db_load (&gpus, gdir);
  tile_rules_load (&tiles, tdir);
  p = write_tmpf ("elem.csv", "%s"
        "add,0.5,Tesla P100-PCIE-16GB,p2.1.0,8902,%s,1787.5,446.875,25025,1,1,128,1,1,cu121,13021,984,True\n"
        "relu,0.25,NVIDIA H100 80GB HBM3,p2.1.0,8902,relu_kernel,1,1,8,1,1,128,1,1,cu121,64,128,True\n", hdr, add);
  ok (kset_load_file (&ks, p, &gpus, &tiles) == 0 && ks.n == 2, "kdata: two rows, kernel name with commas");
  ok (ks.v[0].kclass == PERFMOD_KERNEL_ELEMENTWISE && ks.v[0].b == 13021 && ks.v[0].h == 984 &&
      fabs (ks.v[0].latency_s - 0.5e-3) < 1e-15 && strcmp (ks.v[0].gpu->name, "Tesla_P100-PCIE-16GB") == 0 &&
      ks.v[0].tile[0] == 512 && ks.v[0].line == 2,
      "kdata: class, dimensions, latency in seconds, GPU joined by alias, tile, line");
  krow_kernel (&ks.v[0], &k);
  double binary = k.mem_per_output;
  krow_kernel (&ks.v[1], &k);
  ok (binary == 12 && k.mem_per_output == 8,
      "kdata: binary ops move 12 bytes per output, unary 8 (NeuSight's MemPerO)");
  kset_free (&ks);

  p = write_tmpf ("bad1.csv", "%s"
        "add,0.5,Tesla P100-PCIE-16GB,p2.1.0,8902,k,1,1,1,1,1,128,1,1,cu121,4,4,True\n"
        "add,-1,Tesla P100-PCIE-16GB,p2.1.0,8902,k,1,1,1,1,1,128,1,1,cu121,4,4,True\n", hdr);
  capture_begin ();
  rc = kset_load_file (&ks, p, &gpus, &tiles);
  e = capture_end ();
  ok (rc < 0 && ks.n == 0 && strstr (e, "bad1.csv:3: Latency '-1'") && strstr (e, "refused"),
      "kdata: a negative latency refuses the file, citing file:line");
  kset_free (&ks);
  p = write_tmpf ("bad2.csv", "%s"
        "add,0.5,Radeon 9000,p2.1.0,8902,k,1,1,1,1,1,128,1,1,cu121,4,4,True\n", hdr);
  capture_begin ();
  rc = kset_load_file (&ks, p, &gpus, &tiles);
  e = capture_end ();
  ok (rc < 0 && strstr (e, "bad2.csv:2: Device 'Radeon 9000' is not in gpus.d"),
      "kdata: an unknown GPU is named with file:line");
  kset_free (&ks);
  p = write_tmpf ("bad3.csv", "%s"
        "conv,0.5,Tesla T4,p2.1.0,8902,k,1,1,1,1,1,128,1,1,cu121,4,4,True\n"
        "add,0.5,Tesla T4,p2.1.0,8902,k,1,1,1,1,1,128,1,1,cu121,4,x4,True\n"
        "add,0.5,Tesla T4,p2.1.0,8902,k,1,1,1,1,1,128,1,1,cu121,4\n", hdr);
  capture_begin ();
  rc = kset_load_file (&ks, p, &gpus, &tiles);
  e = capture_end ();
  ok (rc < 0 && strstr (e, "bad3.csv:2: unknown operator 'conv'") &&
      strstr (e, "bad3.csv:3: column 'H': 'x4' is not an integer") &&
      strstr (e, "bad3.csv:4: 16 fields, the header has 18"),
      "kdata: unknown operator, non-numeric field and short row each cite file:line");
  kset_free (&ks);
  p = write_tmp ("bad4.csv", "OPName,Latency,Device\nadd,1,Tesla T4\n");
  capture_begin ();
  rc = kset_load_file (&ks, p, &gpus, &tiles);
  e = capture_end ();
  ok (rc < 0 && strstr (e, "bad4.csv:1: no 'Kernel Name' column"), "kdata: a missing column is named");
  kset_free (&ks);
  p = write_tmp ("bad5.csv", "OPName,Latency,Device,Kernel Name,Grid x,Grid y,Grid z,B,M,N,K\n"
                 "bmm,1,Tesla T4,my_gemm,1,1,1,2,3,4,5\n");
  capture_begin ();
  rc = kset_load_file (&ks, p, &gpus, &tiles);
  e = capture_end ();
  ok (rc < 0 && strstr (e, "kernel 'my_gemm'") && strstr (e, "bad5.csv:2"),
      "kdata: a matrix kernel no tile rule matches is refused, naming kernel and line");
  kset_free (&ks);
  tile_rules_free (&tiles);
  gpu_db_free (&gpus);
  free (gdir);
  free (tdir);
}

static void
test_fit_line (void)
{
  double x[50], y[50], a, b;
  uint64_t s = 1;
  for (int i = 0; i < 50; i++) {
    x[i] = 1e9 * (i + 1);
    y[i] = 3.5e-13 * x[i] + 2e-5;
  }
  ok (fit_line (x, y, 50, &a, &b) == 0 && fabs (a / 3.5e-13 - 1) < 1e-9 && fabs (b / 2e-5 - 1) < 1e-6,
      "linreg fit: exact data give back slope and intercept");
  for (int i = 0; i < 50; i++)
    y[i] = 3.5e-13 * x[i] + 2e-5 + (rng_uniform (&s) - 0.5) * 1e-6;
  ok (fit_line (x, y, 50, &a, &b) == 0 && fabs (a / 3.5e-13 - 1) < 1e-3,
      "linreg fit: noisy data give the slope within 0.1%%");
  for (int i = 0; i < 50; i++)
    x[i] = 5;
  ok (fit_line (x, y, 50, &a, &b) < 0, "linreg fit: no spread in x is refused");
}

/* ---- tile-mlp's formulation, by hand ---- */

static void
test_tilemlp (void)
{
  /* A V100 (NeuSight's numbers) and a Linear 1000 x 512 -> 300 on a 128x64 tile. */
  struct tw_gpu g = { 80, 14029, 32, 900, 6 };
  struct tw_case c;
  double out[3] = { -50, 0, 50 }, d[3], t, num;
  ok (tw_matrix (&g, TW_FEAT_NEUSIGHT, 1, 1000, 512, 300, 128, 64, &c) == 0 && c.nfeat == 4,
      "tile-mlp: matrix case, NeuSight's four inputs");
  /* M in tiles of 64 (16), K in tiles of 128 (3): 48 tiles, one wave of 80 SMs. */
  ok (c.waves == 1, "tile-mlp: ceil(16 x 3 / 80) = 1 wave");
  /* Padded work 2*1024*512*384 GFLOP over 4*(1000*512+512*300+1000*300) GiB is
   * 111.9 FLOP/byte: compute-bound, the roofline is the FP32 peak. */
  ok (c.roof_gflops == 14029, "tile-mlp: roofline bound = min(peak, intensity x bandwidth)");
  is_double (c.wave_gflop, 2.0 * 64 * 512 * 128 / 1e9 * 80, 1e-12, "tile-mlp: wave work = tile FLOPs x SMs");
  is_double (c.x[0], log2 ((2.0 * 64 * 512 * 128 / 1e9) / (14029.0 / 1000 / 80)), 1e-12,
             "tile-mlp: feature 1 = log2(tile GFLOP / per-SM TFLOP/s)");
  is_double (c.x[3], log2 (4.0 * (64 * 512 + 512 * 128 + 64 * 128) / 1048576.0 / (6.0 * 1024 / 80)),
             1e-12, "tile-mlp: feature 4 = log2(waves x tile MB / per-SM L2 KB)");
  t = tw_time (&c, out, d);
  is_double (t, c.wave_gflop / 14029, 1e-9, "tile-mlp: alpha 0, gamma 1: time = waves x wave work / roofline");
  out[0] = 0.3;
  out[2] = 1.7;
  t = tw_time (&c, out, d);
  is_double (t, c.wave_gflop / (14029 * (tw_sigmoid (1.7) - tw_sigmoid (0.3))), 1e-12,
             "tile-mlp: time = waves x wave work / (roofline x (gamma - alpha / waves))");
  out[0] += 1e-6;
  num = (tw_time (&c, out, NULL) - t) / 1e-6;
  out[0] -= 1e-6;
  is_double (d[0], num, 1e-4, "tile-mlp: d time / d alpha-logit matches a finite difference");
  out[2] += 1e-6;
  num = (tw_time (&c, out, NULL) - t) / 1e-6;
  is_double (d[2], num, 1e-4, "tile-mlp: d time / d gamma-logit matches a finite difference");
  /* A vector kernel: 4096 rows of 1024, tile 512, 12 bytes and 1 op per output. */
  ok (tw_vector (&g, TW_FEAT_NEUSIGHT, 4096, 1024, 12, 1, 512, &c) == 0 &&
      c.waves == ceil (4096.0 * 2 / 80) &&
      c.roof_gflops == fmin (14029, (1024 / 1e9) / (12 * 1024 / 1073741824.0) * 900),
      "tile-mlp: vector tiles, waves and memory-bound roofline");
  ok (tw_matrix (&g, TW_FEAT_NEUSIGHT, 1, 10, 10, 10, 0, 64, &c) < 0, "tile-mlp: no tile, no case");
  /* perfmod's inputs: the same four, then 1000 x 300 useful of 1024 x 384
   * padded, and 48 tiles over one wave of 80 SMs. */
  ok (tw_matrix (&g, TW_FEAT_EXTENDED, 1, 1000, 512, 300, 128, 64, &c) == 0 && c.nfeat == 6,
      "tile-mlp: matrix case, perfmod's six inputs");
  is_double (c.x[0], log2 ((2.0 * 64 * 512 * 128 / 1e9) / (14029.0 / 1000 / 80)), 1e-12,
             "tile-mlp extended: the per-tile inputs are NeuSight's");
  is_double (c.x[4], 1000.0 * 300 / (1024.0 * 384), 1e-12,
             "tile-mlp extended: edge efficiency = useful / padded tile work");
  is_double (c.x[5], 48.0 / 80, 1e-12, "tile-mlp extended: occupancy = tiles / (waves x SMs)");
  /* 4096 rows of 1000 in tiles of 512: 8192 tiles, 103 waves. */
  ok (tw_vector (&g, TW_FEAT_EXTENDED, 4096, 1000, 12, 1, 512, &c) == 0 && c.waves == 103,
      "tile-mlp extended: vector case");
  is_double (c.x[4], 1000.0 / 1024, 1e-12, "tile-mlp extended: vector edge efficiency");
  is_double (c.x[5], 8192.0 / (103 * 80), 1e-12, "tile-mlp extended: vector occupancy");
  /* portable: tile compute and memory times, log2 of the waves, then
   * extended's two; memory capacity and L2 are not read. */
  ok (tw_vector (&g, TW_FEAT_PORTABLE, 4096, 1000, 12, 1, 512, &c) == 0 && c.nfeat == 5,
      "tile-mlp: vector case, portable's five inputs");
  is_double (c.x[2], log2 (103), 1e-12, "tile-mlp portable: input 3 = log2(waves)");
  is_double (c.x[3], 1000.0 / 1024, 1e-12, "tile-mlp portable: edge efficiency after it");
  is_double (c.x[4], 8192.0 / (103 * 80), 1e-12, "tile-mlp portable: occupancy last");
  {
    struct tw_gpu other = g;
    struct tw_case c2;
    other.mem_gb = 80;
    other.l2_mb = 0;            /* not known: portable does not need it */
    ok (tw_matrix (&g, TW_FEAT_PORTABLE, 1, 1000, 512, 300, 128, 64, &c) == 0 &&
        tw_matrix (&other, TW_FEAT_PORTABLE, 1, 1000, 512, 300, 128, 64, &c2) == 0 &&
        memcmp (c.x, c2.x, 5 * sizeof c.x[0]) == 0 &&
        c.x[1] == log2 (4.0 * (64 * 512 + 512 * 128 + 64 * 128) / 1048576.0 / (900.0 / 80)),
        "tile-mlp portable: the same inputs whatever the memory capacity and L2");
    ok (tw_matrix (&other, TW_FEAT_EXTENDED, 1, 1000, 512, 300, 128, 64, &c2) < 0,
        "tile-mlp extended: no case without the L2 size");
  }
  /* extended-waves: extended with log2 of the waves in place of the memory
   * capacity input. */
  {
    struct tw_gpu bigger = g;
    struct tw_case c2;
    bigger.mem_gb = 80;
    ok (tw_matrix (&g, TW_FEAT_WAVES, 1, 1000, 512, 300, 128, 64, &c) == 0 && c.nfeat == 6 &&
        c.x[2] == 0 && tw_matrix (&bigger, TW_FEAT_WAVES, 1, 1000, 512, 300, 128, 64, &c2) == 0 &&
        memcmp (c.x, c2.x, 6 * sizeof c.x[0]) == 0,
        "tile-mlp extended-waves: log2(1 wave) = 0 in place of the capacity input, which it ignores");
    is_double (c.x[3], log2 (4.0 * (64 * 512 + 512 * 128 + 64 * 128) / 1048576.0 / (6.0 * 1024 / 80)),
               1e-12, "tile-mlp extended-waves: the L2 input is extended's");
    bigger.l2_mb = 12;
    ok (tw_matrix (&bigger, TW_FEAT_WAVES, 1, 1000, 512, 300, 128, 64, &c2) == 0 &&
        c2.x[3] == c.x[3] - 1, "tile-mlp extended-waves: twice the L2, one less");
  }
  ok (tw_features_of ("portable") == TW_FEAT_PORTABLE &&
      tw_features_of ("neusight") == TW_FEAT_NEUSIGHT && tw_features_of ("wavelets") < 0,
      "tile-mlp: input sets by name");
}

/* NCCL's cost model (physics.h), by hand on an 8-GPU NVSwitch node of
 * 450 GB/s links at 0.8 (360 GB/s of bus bandwidth, NVLink SHARP) and
 * an 8-GPU PCIe node of 32 GB/s links at 0.8 (25.6 GB/s). */
static void
test_nccl (void)
{
  struct perfmod_gpu nv, pci;
  struct phys_nccl r;
  memset (&nv, 0, sizeof nv);
  nv.struct_size = sizeof nv;
  nv.link_gbps = 450;
  nv.link_efficiency = 0.8;
  nv.nic_gbps = 50;
  nv.nic_efficiency = 0.8;
  nv.gpus_per_node = 8;
  nv.nvlink = nv.nvls = 1;
  pci = nv;
  pci.link_gbps = 32;
  pci.nvlink = pci.nvls = 0;

  /* 1 KiB over 8: the ring's LL, 6.6 + 14 steps x 0.6 us, 2 x 7/8 KiB at a quarter of 360 GB/s */
  ok (phys_nccl_time ("all_reduce", 1024, 8, 0, &nv, &r) == 0 && r.algo == PHYS_NCCL_RING &&
      r.proto == PHYS_NCCL_LL && fabs (r.seconds - (15.0e-6 + 1.75 * 1024 / 90e9)) < 1e-12 &&
      fabs (r.latency - 15.0e-6) < 1e-12, "nccl: 1 KiB all-reduce over 8 NVLink GPUs: ring, LL");
  /* 1 GiB: NVLS, 25 us + 9/8 GiB over 360 GB/s, against the ring's 1.75 GiB */
  ok (phys_nccl_time ("all_reduce", 1073741824.0, 8, 0, &nv, &r) == 0 && r.algo == PHYS_NCCL_NVLS &&
      fabs (r.seconds - (25e-6 + 1.125 * 1073741824.0 / 360e9)) < 1e-12,
      "nccl: 1 GiB all-reduce over 8 NVSwitch GPUs: NVLink SHARP, (1 + 1/n) of the buffer");
  /* the same without SHARP: the ring's Simple, 8.4 + 14 x 3.4 us */
  nv.nvls = 0;
  ok (phys_nccl_time ("all_reduce", 1073741824.0, 8, 0, &nv, &r) == 0 && r.algo == PHYS_NCCL_RING &&
      r.proto == PHYS_NCCL_SIMPLE &&
      fabs (r.seconds - (56e-6 + 1.75 * 1073741824.0 / 360e9)) < 1e-12,
      "nccl: without NVLS, the ring's Simple protocol");
  /* an all-gather of 64 MiB over 4: ring Simple, 8.4 + 3 x 3.4 us + 3/4 of it */
  ok (phys_nccl_time ("all_gather", 67108864.0, 4, 0, &nv, &r) == 0 && r.proto == PHYS_NCCL_SIMPLE &&
      fabs (r.seconds - (18.6e-6 + 0.75 * 67108864.0 / 360e9)) < 1e-12,
      "nccl: all-gather: n-1 steps, (n-1)/n of the buffer");
  /* PCIe: no LL128; 1 MiB over 2 PCIe GPUs: LL (6.6 + 2 x 1.0 us, a quarter of 25.6 GB/s)
   * against Simple (8.4 + 2 x 5.7 us, all of it): Simple */
  ok (phys_nccl_time ("all_reduce", 1048576.0, 2, 0, &pci, &r) == 0 && r.proto == PHYS_NCCL_SIMPLE &&
      fabs (r.seconds - (19.8e-6 + 1048576.0 / 25.6e9)) < 1e-12,
      "nccl: 1 MiB all-reduce over 2 PCIe GPUs: Simple, PCIe latencies");
  /* an all-to-all: one step's latency, (n-1)/n of the buffer; LL up to 16 KiB a peer */
  ok (phys_nccl_time ("alltoall", 8 * 65536.0, 8, 0, &nv, &r) == 0 && r.algo == PHYS_NCCL_P2P &&
      r.proto == PHYS_NCCL_SIMPLE && fabs (r.seconds - (11.8e-6 + 7 * 65536.0 / 360e9)) < 1e-12,
      "nccl: all-to-all of 64 KiB a peer: one Simple step");
  /* 16 ranks span 2 nodes: the ring's bandwidth is the node's 8 NICs' (8 x 40 GB/s) where
   * lower than the links'; an inter-node step pays the network's latency */
  nv.link_gbps = 900;
  ok (phys_nccl_time ("all_gather", 1073741824.0, 16, 0, &nv, &r) == 0 && r.nodes == 2 &&
      r.proto == PHYS_NCCL_SIMPLE &&
      fabs (r.seconds - ((8.4 + 14 * 3.4 + 14.0) * 1e-6 + 15.0 / 16 * 1073741824.0 / 320e9)) < 1e-12,
      "nccl: 16 ranks over 2 nodes: the NICs' bandwidth, one network step");
  /* an all-reduce of 1 GiB over the 2 nodes: NCCL's tree, one edge between them, so each
   * node's 8 NICs (320 GB/s) carry the buffer once each way at 0.9 of that; 8.4 us and
   * 7 NVLink (4.0) and 1 network (14.0) hops up and down */
  nv.link_gbps = 450;
  ok (phys_nccl_time ("all_reduce", 1073741824.0, 16, 0, &nv, &r) == 0 && r.algo == PHYS_NCCL_TREE &&
      r.proto == PHYS_NCCL_SIMPLE &&
      fabs (r.seconds - ((8.4 + 2 * (7 * 4.0 + 14.0)) * 1e-6 + 1073741824.0 / 288e9)) < 1e-12,
      "nccl: 1 GiB all-reduce over 2 nodes: the tree, the buffer once over the NICs");
  /* with NVLink SHARP, NVLS_TREE: the switch's 9/8 of the buffer over 360 GB/s (320) beside
   * the NICs' 320 GB/s; the switch's 25 us and a network hop up and down */
  nv.nvls = 1;
  ok (phys_nccl_time ("all_reduce", 1073741824.0, 16, 0, &nv, &r) == 0 &&
      r.algo == PHYS_NCCL_NVLS_TREE &&
      fabs (r.seconds - ((25 + 2 * 14.0) * 1e-6 + 1073741824.0 / 320e9)) < 1e-12,
      "nccl: 1 GiB all-reduce over 2 NVSwitch nodes: NVLS_TREE, the slower of switch and NICs");
  /* one rank a node (a group strided across nodes): no switch to sum in */
  ok (phys_nccl_time ("all_reduce", 1073741824.0, 2, 1, &nv, &r) == 0 && r.nodes == 2 &&
      r.algo != PHYS_NCCL_NVLS_TREE, "nccl: one rank a node: no NVLS_TREE");
  /* four nodes: NVLS_TREE's NICs carry the buffer twice (NCCL's bwInter / 2: 1 GiB over
   * 160 GB/s), so the ring's 62/32 of it over 320 GB/s is sooner, as in NCCL's model: 8.4
   * us, 56 NVLink steps (3.4) and 6 network ones (14.0) */
  ok (phys_nccl_time ("all_reduce", 1073741824.0, 32, 0, &nv, &r) == 0 &&
      r.algo == PHYS_NCCL_RING && r.proto == PHYS_NCCL_SIMPLE &&
      fabs (r.seconds - ((8.4 + 56 * 3.4 + 6 * 14.0) * 1e-6 + 62.0 / 32 * 1073741824.0 / 320e9))
      < 1e-12, "nccl: over 4 nodes NVLS_TREE's NICs carry the buffer twice: the ring is sooner");
  /* a multi-node NVLink domain (72 a rack): no NVLS_TREE across racks (NCCL's MNNVL) */
  nv.gpus_per_node = 72;
  ok (phys_nccl_time ("all_reduce", 1073741824.0, 144, 0, &nv, &r) == 0 && r.nodes == 2 &&
      r.algo != PHYS_NCCL_NVLS_TREE &&
      phys_nccl_time ("all_reduce", 1073741824.0, 16, 8, &nv, &r) == 0 && r.nodes == 2 &&
      r.algo != PHYS_NCCL_NVLS_TREE,
      "nccl: across NVL72 racks, no NVLS_TREE (a whole rack's ranks or 8 of them a rack)");
  nv.gpus_per_node = 8;
  ok (phys_nccl_time ("all_reduce", 1e6, 1, 0, &nv, &r) == 0 && r.seconds == 0 &&
      phys_nccl_time ("all_reduce", 0, 8, 0, &nv, &r) == 0 && r.seconds == 0,
      "nccl: one rank or no bytes: no time");
  nv.link_gbps = 0;
  ok (phys_nccl_time ("all_reduce", 1e6, 8, 0, &nv, &r) < 0, "nccl: no link bandwidth: refused");
}

/* A predictor that answers 1 ms with the interval in fake_iv. */
static double fake_iv[2];

static int
fake_estimate (void *state, const struct perfmod_kernel *k, const struct perfmod_gpu *gpu,
               struct perfmod_estimate *e)
{
  (void) state, (void) k, (void) gpu;
  e->seconds = 1e-3;
  e->low = fake_iv[0];
  e->high = fake_iv[1];
  return 0;
}

/* An estimate's 80 % interval: passed through when it holds the time,
 * refused when it does not; a MoE layer predicted as its parts adds the
 * parts' bounds. */
static void
test_interval (void)
{
  struct plugin pl;
  struct perfmod_kernel k;
  struct perfmod_gpu g;
  struct perfmod_estimate e;
  memset (&pl, 0, sizeof pl);
  memset (&k, 0, sizeof k);
  memset (&g, 0, sizeof g);
  pl.p.name = "fake";
  pl.p.estimate = fake_estimate;
  k.struct_size = sizeof k;
  k.kclass = PERFMOD_KERNEL_LINEAR;
  k.op = "linear";
  k.b = 1, k.m = k.n = k.k = 64;
  kernel_set_dtype (&k, PERFMOD_DTYPE_FP32);
  g.struct_size = sizeof g;
  g.name = "g";
  g.fp32_gflops = 1000;
  g.mem_bw_gbps = 1000;
  ok (PERFMOD_ESTIMATE_HAS (&pm_host, high), "the core says it reads an estimate's interval");
  fake_iv[0] = 0.5e-3, fake_iv[1] = 2e-3;
  ok (plugin_estimate (&pl, &k, &g, &e) == 0 && e.low == 0.5e-3 && e.high == 2e-3,
      "an interval around the time is passed on");
  fake_iv[0] = 1.5e-3, fake_iv[1] = 2e-3;
  ok (plugin_estimate (&pl, &k, &g, &e) < 0 && strstr (pm_plugin_errmsg, "invalid interval"),
      "an interval that does not hold the time is refused");
  fake_iv[0] = 0, fake_iv[1] = 2e-3;
  ok (plugin_estimate (&pl, &k, &g, &e) < 0, "an interval from 0 is refused");
  fake_iv[0] = fake_iv[1] = 0;
  ok (plugin_estimate (&pl, &k, &g, &e) == 0 && e.low == 0 && e.high == 0,
      "no interval: both 0");
}

int
main (void)
{
  const char *srcdir = getenv ("top_srcdir");
  if (mkdtemp (tmpdir) == NULL)
    return 1;
  test_gradients ();
  test_training ();
  test_params ();
  test_tiles (srcdir ? srcdir : ".");
  test_kdata (srcdir ? srcdir : ".");
  test_fit_line ();
  test_tilemlp ();
  test_nccl ();
  test_interval ();
  done_testing ();
  char *cmd = xasprintf ("rm -rf '%s'", tmpdir);
  if (system (cmd) != 0)
    diag ("could not remove %s", tmpdir);
  free (cmd);
  return exit_status ();
}
