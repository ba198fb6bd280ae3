/* tiles.c: tile sizes of library kernels, from PCRE2 rules in tiles.d (names) or from the launch grid (vector kernels). */
#include <config.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <math.h>
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct tile_parse {
  struct tile_rules *rules;
  struct ini_file ini;
  int errors;
};

static const struct { const char *name; int kclass; } class_names[] = {
  { "linear", PERFMOD_KERNEL_LINEAR }, { "bmm", PERFMOD_KERNEL_BMM },
  { "elementwise", PERFMOD_KERNEL_ELEMENTWISE }, { "softmax", PERFMOD_KERNEL_SOFTMAX },
  { "layernorm", PERFMOD_KERNEL_LAYERNORM },
};

static struct tile_rule *
rule_for (struct tile_parse *ps, const char *section)
{
  struct tile_rules *r = ps->rules;
  for (size_t i = 0; i < r->n; i++)
    if (strcmp (r->v[i].name, section) == 0)
      return &r->v[i];
  r->v = xrealloc (r->v, (r->n + 1) * sizeof *r->v);
  memset (&r->v[r->n], 0, sizeof r->v[r->n]);
  r->v[r->n].name = xstrdup (section);
  r->v[r->n].file = xstrdup (ps->ini.path);
  r->v[r->n].line = ps->ini.section_line;
  return &r->v[r->n++];
}

static int
handler (void *user, const char *section, const char *name, const char *value)
{
  struct tile_parse *ps = user;
  struct tile_rule *t;

  if (section[0] == '\0') {
    pm_error ("%s:%d: key '%s' outside any [rule]", ps->ini.path, ps->ini.line, name);
    ps->errors++;
    return 1;
  }
  t = rule_for (ps, section);
  if (strcmp (name, "classes") == 0) {
    char **v = strv_split (value, ',');
    t->classes = 0;
    for (char **c = v; *c; c++) {
      size_t k;
      for (k = 0; k < sizeof class_names / sizeof class_names[0]; k++)
        if (strcmp (*c, class_names[k].name) == 0)
          break;
      if (k == sizeof class_names / sizeof class_names[0]) {
        pm_error ("%s:%d: classes: unknown kernel class '%s' (linear, bmm, elementwise, "
                  "softmax, layernorm)", ps->ini.path, ps->ini.line, *c);
        ps->errors++;
      }
      else
        t->classes |= 1u << class_names[k].kclass;
    }
    strv_free (v);
  }
  else if (strcmp (name, "pattern") == 0) {
    int code;
    PCRE2_SIZE off;
    if (t->re)
      pcre2_code_free (t->re);
    t->re = pcre2_compile ((PCRE2_SPTR) value, PCRE2_ZERO_TERMINATED, PCRE2_CASELESS, &code, &off,
                           NULL);
    if (t->re == NULL) {
      PCRE2_UCHAR msg[160];
      pcre2_get_error_message (code, msg, sizeof msg);
      pm_error ("%s:%d: pattern: %s at offset %zu", ps->ini.path, ps->ini.line, (char *) msg,
                (size_t) off);
      ps->errors++;
    }
    else {
      uint32_t groups = 0;
      pcre2_pattern_info (t->re, PCRE2_INFO_CAPTURECOUNT, &groups);
      if (groups < 2) {
        pm_error ("%s:%d: pattern needs two capture groups (tile rows, tile columns)",
                  ps->ini.path, ps->ini.line);
        ps->errors++;
      }
    }
  }
  else if (strcmp (name, "tile") == 0) {
    if (strcmp (value, "grid") == 0)
      t->derive = TILE_FROM_GRID;
    else if (strcmp (value, "row") == 0)
      t->derive = TILE_FROM_ROW;
    else {
      pm_error ("%s:%d: tile: expected grid or row, not '%s'", ps->ini.path, ps->ini.line, value);
      ps->errors++;
    }
  }
  else if (strcmp (name, "example") != 0 && strcmp (name, "note") != 0) {
    pm_error ("%s:%d: unknown key '%s' in [%s] (classes, pattern, tile, example, note)",
              ps->ini.path, ps->ini.line, name, section);
    ps->errors++;
  }
  return 1;
}

void
tile_rules_free (struct tile_rules *r)
{
  for (size_t i = 0; i < r->n; i++) {
    free (r->v[i].name);
    free (r->v[i].file);
    if (r->v[i].re)
      pcre2_code_free (r->v[i].re);
  }
  free (r->v);
  r->v = NULL;
  r->n = 0;
}

int
tile_rules_load (struct tile_rules *r, const char *dir)
{
  struct tile_parse ps = { r, { 0 }, 0 };
  char **files = list_dir (dir, ".ini");

  r->v = NULL;
  r->n = 0;
  if (files == NULL) {
    pm_error ("%s: cannot read the tile rules directory", dir);
    return -1;
  }
  for (char **f = files; *f; f++)
    if (ini_file_parse (&ps.ini, *f, handler, &ps) < 0)
      ps.errors++;
  strv_free (files);
  for (size_t i = 0; i < r->n && ps.errors == 0; i++) {
    const struct tile_rule *t = &r->v[i];
    if (t->classes == 0 || (t->re == NULL) == (t->derive == TILE_FROM_NAME)) {
      pm_error ("%s:%d: [%s] needs classes and exactly one of pattern or tile", t->file, t->line,
                t->name);
      ps.errors++;
    }
  }
  if (ps.errors) {
    tile_rules_free (r);
    return -1;
  }
  return 0;
}

/* Launch-derived tile of element-wise kernels: outputs per block, rounded
 * up to a power of two (NeuSight's dataset.py). */
static double
grid_tile (int64_t b, int64_t h, const int64_t grid[3])
{
  double blocks = (double) grid[0] * (double) grid[1] * (double) grid[2];
  double per = ceil ((double) b * (double) h / (blocks > 0 ? blocks : 1));
  return per <= 1 ? 1 : pow (2, ceil (log2 (per)));
}

/* The number a capture group matched, [start, end) of s, read to its end
 * and no further ("sgemm_([0-9])([0-9])" on sgemm_128x64 is 1 by 2):
 * -1 for a group that did not take part or holds no whole number. */
static int
group_number (const char *s, PCRE2_SIZE start, PCRE2_SIZE end, double *out)
{
  char buf[32];
  if (start == PCRE2_UNSET || end < start || end - start >= sizeof buf)
    return -1;
  memcpy (buf, s + start, end - start);
  buf[end - start] = '\0';
  return parse_double (buf, out) ? 0 : -1;
}

int
tile_of (const struct tile_rules *r, int kclass, const char *kname, int64_t b, int64_t h,
         const int64_t grid[3], double tile[2])
{
  for (size_t i = 0; i < r->n; i++) {
    const struct tile_rule *t = &r->v[i];
    if (!(t->classes & (1u << kclass)))
      continue;
    if (t->derive == TILE_FROM_ROW) {
      tile[0] = (double) h;
      tile[1] = 0;
      return 0;
    }
    if (t->derive == TILE_FROM_GRID) {
      tile[0] = grid_tile (b, h, grid);
      tile[1] = 0;
      return 0;
    }
    if (kname == NULL)
      continue;
    pcre2_match_data *md = pcre2_match_data_create_from_pattern (t->re, NULL);
    int rc = pcre2_match (t->re, (PCRE2_SPTR) kname, PCRE2_ZERO_TERMINATED, 0, 0, md, NULL);
    if (rc >= 3) {
      PCRE2_SIZE *ov = pcre2_get_ovector_pointer (md);
      int bad = group_number (kname, ov[2], ov[3], &tile[0]) < 0 ||
                group_number (kname, ov[4], ov[5], &tile[1]) < 0;
      pcre2_match_data_free (md);
      if (!bad && tile[0] >= 1 && tile[1] >= 1)
        return 0;
      pm_error ("kernel '%s': rule [%s] (%s:%d) gives %s", kname, t->name, t->file, t->line,
                bad ? "no number in its first two groups" : "an empty tile");
      return -1;
    }
    pcre2_match_data_free (md);
  }
  pm_error ("kernel '%s' (%s): no tile rule in tiles.d matches it", kname ? kname : "(no name)",
            kclass_name (kclass));
  return -1;
}
