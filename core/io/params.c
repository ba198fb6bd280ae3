/* params.c: perfmod parameter files: a versioned text header of keys and tensor shapes, then little-endian float64 data. */
#include <config.h>

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/* Layout (version 1):
 *   perfmod-params 1\n
 *   key: value\n ...            (keys [A-Za-z0-9_.-]+, each once)
 *   tensor NAME ROWS COLS\n ... (in data order)
 *   pad: ...\n                  (optional: dots so that the data starts at a
 *                                 multiple of 8 bytes; not a key of the file)
 *   data\n
 *   ROWS*COLS IEEE-754 binary64 per tensor, little-endian, nothing after.
 * Bytes are assembled explicitly, so files move between hosts of either
 * endianness and a save/load/save cycle is bit-exact.  On a little-endian
 * host, aligned data is mapped and used in place (an ensemble's megabytes
 * load in about a millisecond instead of being copied). */
#define PARAMS_MAGIC "perfmod-params"
#define PAD_KEY "pad"
/* All tensors together (2 GiB of doubles): a header claims sizes, and a
 * file that is not a regular one has no size to check them against. */
#define PARAMS_MAX_VALUES ((size_t) 1 << 28)
#ifndef MAP_POPULATE
# define MAP_POPULATE 0          /* Linux's: fault the pages in at once */
#endif

void
params_init (struct params *p)
{
  memset (p, 0, sizeof *p);
}

void
params_free (struct params *p)
{
  for (size_t i = 0; i < p->nkv; i++) {
    free (p->keys[i]);
    free (p->vals[i]);
  }
  free (p->keys);
  free (p->vals);
  for (size_t i = 0; i < p->nt; i++) {
    free (p->t[i].name);
    if (!p->t[i].mapped)
      free (p->t[i].v);
  }
  free (p->t);
  free (p->path);
  name_index_free (&p->kidx);
  name_index_free (&p->tidx);
  if (p->map)
    munmap (p->map, p->map_len);
  params_init (p);
}

static bool
key_ok (const char *k)
{
  if (*k == '\0')
    return false;
  for (; *k; k++)
    if (!(isalnum ((unsigned char) *k) || *k == '_' || *k == '.' || *k == '-'))
      return false;
  return true;
}

const char *
params_get (const struct params *p, const char *key)
{
  const struct name_slot *e = name_index_lookup (&p->kidx, key);
  return e ? p->vals[e->pos] : NULL;
}

void
params_set (struct params *p, const char *key, const char *fmt, ...)
{
  va_list ap;
  char *v;
  va_start (ap, fmt);
  v = xvasprintf (fmt, ap);
  va_end (ap);
  for (char *c = v; *c; c++)   /* one line per key */
    if (*c == '\n')
      *c = ' ';
  const struct name_slot *e = name_index_lookup (&p->kidx, key);
  if (e) {
    free (p->vals[e->pos]);
    p->vals[e->pos] = v;
    return;
  }
  p->keys = xrealloc (p->keys, (p->nkv + 1) * sizeof *p->keys);
  p->vals = xrealloc (p->vals, (p->nkv + 1) * sizeof *p->vals);
  p->keys[p->nkv] = xstrdup (key);
  name_index_put (&p->kidx, p->keys[p->nkv], p->nkv);
  p->vals[p->nkv++] = v;
}

const struct ptensor *
params_tensor (const struct params *p, const char *name)
{
  const struct name_slot *e = name_index_lookup (&p->tidx, name);
  return e ? &p->t[e->pos] : NULL;
}

/* A tensor of the header, its values to come (read or mapped). */
static struct ptensor *
declare_tensor (struct params *p, const char *name, size_t rows, size_t cols)
{
  struct ptensor *t;
  p->t = xrealloc (p->t, (p->nt + 1) * sizeof *p->t);
  t = &p->t[p->nt++];
  t->name = xstrdup (name);
  t->rows = rows;
  t->cols = cols;
  t->mapped = false;
  t->v = NULL;
  t->line = 0;
  name_index_put (&p->tidx, t->name, p->nt - 1);
  return t;
}

double *
params_add_tensor (struct params *p, const char *name, size_t rows, size_t cols)
{
  const struct name_slot *e = name_index_lookup (&p->tidx, name);
  struct ptensor *t = NULL;
  if (e) {
    t = &p->t[e->pos];
    if (!t->mapped)
      free (t->v);
    t->mapped = false;
    t->rows = rows;
    t->cols = cols;
  }
  else
    t = declare_tensor (p, name, rows, cols);
  t->v = xcalloc (rows * cols, sizeof (double));
  return t->v;
}

static void
put_le64 (unsigned char *b, double d)
{
  uint64_t u;
  memcpy (&u, &d, sizeof u);
  for (int i = 0; i < 8; i++)
    b[i] = (unsigned char) (u >> (8 * i));
}

/* params_load reads each tensor's bytes into its own doubles. */
_Static_assert (sizeof (double) == 8, "parameter files hold 8-byte doubles");

/* Whether the host's doubles are the file's bytes as they are. */
static bool
host_is_le64 (void)
{
  const double one = 1.0;
  static const unsigned char le[8] = { 0, 0, 0, 0, 0, 0, 0xf0, 0x3f };
  return memcmp (&one, le, 8) == 0;
}

static double
get_le64 (const unsigned char *b)
{
  uint64_t u = 0;
  double d;
  for (int i = 0; i < 8; i++)
    u |= (uint64_t) b[i] << (8 * i);
  memcpy (&d, &u, sizeof d);
  return d;
}

int
params_save (const struct params *p, const char *path)
{
  char *tmp;
  FILE *fp = atomic_open (path, &tmp);
  unsigned char b[8];
  bool ok = true;

  if (fp == NULL)
    return -1;
  fprintf (fp, "%s %d\n", PARAMS_MAGIC, PARAMS_VERSION);
  for (size_t i = 0; i < p->nkv; i++)
    fprintf (fp, "%s: %s\n", p->keys[i], p->vals[i]);
  for (size_t i = 0; i < p->nt; i++)
    fprintf (fp, "tensor %s %zu %zu\n", p->t[i].name, p->t[i].rows, p->t[i].cols);
  /* "pad: " + dots + "\n" + "data\n" ends the header at a multiple of 8 */
  long at = ftell (fp) + (long) strlen (PAD_KEY ": \ndata\n");
  fprintf (fp, PAD_KEY ": %.*s\n", (int) ((8 - at % 8) % 8), ".......");
  fputs ("data\n", fp);
  for (size_t i = 0; i < p->nt && ok; i++)
    for (size_t j = 0; j < p->t[i].rows * p->t[i].cols; j++) {
      put_le64 (b, p->t[i].v[j]);
      if (fwrite (b, 1, 8, fp) != 8) {
        ok = false;
        break;
      }
    }
  return atomic_commit (fp, tmp, path, ok);
}

/* Use the data in place when the host reads it as it is and it starts
 * aligned: 0, or -1 to read it instead.  The size was checked. */
static int
map_data (struct params *p, FILE *fp, size_t file_size)
{
  long off = ftell (fp);
  unsigned char *map;
  if (!host_is_le64 () || off < 0 || off % 8 != 0)
    return -1;
  /* Read-only: loaded parameters are only read (plugins see them const;
   * params_add_tensor replaces a tensor rather than writing into it).  A
   * writable private mapping would be copied page by page when populated. */
  map = mmap (NULL, file_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fileno (fp), 0);
  if (map == MAP_FAILED)
    return -1;
  p->map = map;
  p->map_len = file_size;
  for (size_t i = 0, at = (size_t) off; i < p->nt; i++) {
    p->t[i].v = (double *) (void *) (map + at);
    p->t[i].mapped = true;
    at += 8 * p->t[i].rows * p->t[i].cols;
  }
  return 0;
}

/* A trained model's values are finite: an Inf or a NaN would predict
 * 0 ms or nonsense, so the file is refused, naming the tensor's line. */
static int
check_finite (const struct params *p, const char *path)
{
  for (size_t i = 0; i < p->nt; i++) {
    const struct ptensor *t = &p->t[i];
    for (size_t j = 0; j < t->rows * t->cols; j++)
      if (!isfinite (t->v[j])) {
        pm_error ("%s:%d: tensor '%s': row %zu, column %zu is %g (values must be finite)", path,
                  t->line, t->name, j / t->cols + 1, j % t->cols + 1, t->v[j]);
        return -1;
      }
  }
  return 0;
}

/* A header value that reads as a number must be a finite one (plugins
 * read "floor.*", "output_scale_s" and the like with atof). */
static bool
value_ok (const char *v)
{
  char *end;
  double d;
  errno = 0;
  d = strtod (v, &end);
  return end == v || *end != '\0' || isfinite (d);
}

int
params_load (struct params *p, const char *path)
{
  FILE *fp;
  char *line = NULL;
  size_t cap = 0, values = 0;
  ssize_t len;
  int lineno = 0, version;
  unsigned char b[8];
  struct stat st;
  struct pm_limits lim;
  bool sized;

  params_init (p);
  if (input_file_check (path, "a parameter file") < 0)
    return -1;
  if ((fp = fopen (path, "rb")) == NULL) {
    pm_error ("%s: %s", path, strerror (errno));
    return -1;
  }
  p->path = xstrdup (path);
  pm_limits (&lim);
  len = getline_max (&line, &cap, fp, (size_t) lim.line);
  lineno = 1;
  if (len <= 0 || sscanf (line, PARAMS_MAGIC " %d", &version) != 1) {
    pm_error ("%s:1: not a perfmod parameter file (no '" PARAMS_MAGIC " N' line)", path);
    goto fail;
  }
  if (version != PARAMS_VERSION) {
    pm_error ("%s:1: parameter file version %d; this perfmod reads version %d (rebuild it "
              "with perfmod train or make weights)", path, version, PARAMS_VERSION);
    goto fail;
  }
  for (;;) {
    char *colon, name[128];
    size_t rows, cols;
    int used = 0;
    len = getline_max (&line, &cap, fp, (size_t) lim.line);
    lineno++;
    if (len == -2) {
      pm_error ("%s:%d: a line longer than the limit, %llu bytes (PERFMOD_MAX_LINE raises it)",
                path, lineno, (unsigned long long) lim.line);
      goto fail;
    }
    if (len <= 0) {
      pm_error ("%s:%d: unexpected end of file before 'data'", path, lineno);
      goto fail;
    }
    if (line[len - 1] == '\n')
      line[--len] = '\0';
    if (strcmp (line, "data") == 0)
      break;
    if (sscanf (line, "tensor %127s %zu %zu%n", name, &rows, &cols, &used) == 3 &&
        line[used] == '\0') {
      if (params_tensor (p, name) || rows == 0 || cols == 0 || rows > 1u << 24 || cols > 1u << 24) {
        pm_error ("%s:%d: bad or repeated tensor '%s'", path, lineno, name);
        goto fail;
      }
      /* Each factor is below 2^24, so the product does not overflow. */
      if (rows * cols > PARAMS_MAX_VALUES - values) {
        pm_error ("%s:%d: tensor '%s' is %zux%zu: the tensors would hold more than %zu "
                  "values in all", path, lineno, name, rows, cols, (size_t) PARAMS_MAX_VALUES);
        goto fail;
      }
      values += rows * cols;
      declare_tensor (p, name, rows, cols)->line = lineno;
      continue;
    }
    colon = strstr (line, ": ");
    if (colon == NULL) {
      pm_error ("%s:%d: expected 'key: value', 'tensor NAME ROWS COLS' or 'data'", path, lineno);
      goto fail;
    }
    *colon = '\0';
    if (strcmp (line, PAD_KEY) == 0)
      continue;
    if (!key_ok (line) || params_get (p, line)) {
      pm_error ("%s:%d: bad or repeated key '%s'", path, lineno, line);
      goto fail;
    }
    if (!value_ok (colon + 2)) {
      pm_error ("%s:%d: %s: '%s' is not a finite number", path, lineno, line, colon + 2);
      goto fail;
    }
    params_set (p, line, "%s", colon + 2);
  }
  /* The data must be what the header declares, checked before anything
   * is allocated for it: a header may claim any size. */
  sized = fstat (fileno (fp), &st) == 0 && S_ISREG (st.st_mode) && ftell (fp) >= 0;
  if (sized && (uintmax_t) st.st_size - (uintmax_t) ftell (fp) != (uintmax_t) values * 8) {
    pm_error ("%s:%d: truncated or padded: the tensors declared hold %zu bytes, the file "
              "has %jd after 'data'", path, lineno, values * 8,
              (intmax_t) st.st_size - (intmax_t) ftell (fp));
    goto fail;
  }
  if (sized && map_data (p, fp, (size_t) st.st_size) == 0) {
    if (check_finite (p, path) < 0)
      goto fail;
    free (line);
    fclose (fp);
    return 0;
  }
  /* One read per tensor, decoded in place: the values are little-endian
   * doubles, the same width as the host's. */
  for (size_t i = 0; i < p->nt; i++) {
    size_t n = p->t[i].rows * p->t[i].cols;
    unsigned char *raw;
    p->t[i].v = xcalloc (n, sizeof (double));
    raw = (unsigned char *) p->t[i].v;
    if (fread (raw, 8, n, fp) != n) {
      pm_error ("%s: truncated: tensor '%s' is short of data", path, p->t[i].name);
      goto fail;
    }
    if (!host_is_le64 ())
      for (size_t j = 0; j < n; j++) {
        memcpy (b, raw + 8 * j, 8);
        p->t[i].v[j] = get_le64 (b);
      }
  }
  if (fread (b, 1, 1, fp) != 0) {
    pm_error ("%s: trailing bytes after the last tensor", path);
    goto fail;
  }
  if (check_finite (p, path) < 0)
    goto fail;
  free (line);
  fclose (fp);
  return 0;
fail:
  free (line);
  fclose (fp);
  params_free (p);
  return -1;
}

/* A tensor that must exist with the given shape (0: any). */
const struct ptensor *
params_need (const struct params *p, const char *name, size_t rows, size_t cols)
{
  const struct ptensor *t = params_tensor (p, name);
  if (t == NULL) {
    pm_error ("%s: no tensor '%s'", p->path ? p->path : "parameters", name);
    return NULL;
  }
  if ((rows && t->rows != rows) || (cols && t->cols != cols)) {
    pm_error ("%s: tensor '%s' is %zux%zu, expected %zux%zu", p->path ? p->path : "parameters",
              name, t->rows, t->cols, rows ? rows : t->rows, cols ? cols : t->cols);
    return NULL;
  }
  return t;
}
