/* gpu.c: the GPU database, the gpus.d INI files read in sorted order, later keys overriding earlier ones. */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Numeric keys: name, where in struct perfmod_gpu, integer or not,
 * whether 0 is refused (a capacity: no SMs, no bandwidth) or allowed
 * (none, e.g. no fp8 units), and whether only 0 and 1 are (a flag). */
struct gpu_key {
  const char *name;
  size_t offset;
  bool integer;
  bool positive;
  bool flag;             /* 0 or 1 only */
};

#define F(field) offsetof (struct perfmod_gpu, field)
static const struct gpu_key gpu_keys[] = {
  { "sms", F (sms), true, true, false },
  { "cores_per_sm", F (cores_per_sm), true, true, false },
  { "clock_mhz", F (clock_mhz), false, true, false },
  { "fp32_gflops", F (fp32_gflops), false, true, false },
  { "tf32_tflops", F (tensor_tflops[PERFMOD_DTYPE_TF32]), false, false, false },
  { "fp16_tflops", F (tensor_tflops[PERFMOD_DTYPE_FP16]), false, false, false },
  { "bf16_tflops", F (tensor_tflops[PERFMOD_DTYPE_BF16]), false, false, false },
  { "fp8_tflops", F (tensor_tflops[PERFMOD_DTYPE_FP8]), false, false, false },
  { "mem_gb", F (mem_gb), false, true, false },
  { "mem_bw_gbps", F (mem_bw_gbps), false, true, false },
  { "l2_mb", F (l2_mb), false, true, false },
  { "gpus_per_node", F (gpus_per_node), true, true, false },
  { "link_gbps", F (link_gbps), false, true, false },
  { "nic_gbps", F (nic_gbps), false, true, false },
  { "link_efficiency", F (link_efficiency), false, false, false },
  { "link_latency_us", F (link_latency_us), false, false, false },
  { "nic_efficiency", F (nic_efficiency), false, false, false },
  { "nic_latency_us", F (nic_latency_us), false, false, false },
  { "oversubscription", F (oversubscription), false, false, false },
  { "fp4_tflops", F (fp4_tflops), false, false, false },
  { "fp32_matrix_tflops", F (fp32_matrix_tflops), false, false, false },
  { "tdp_w", F (tdp_w), false, true, false },
  { "base_clock_mhz", F (base_clock_mhz), false, true, false },
  /* the engine's all-reduce per group size (2, 4, 8): all five of a size or none */
  { "engine_ar2_oneshot_us", F (engine_ar[0].oneshot_us), false, true, false },
  { "engine_ar2_oneshot_gbps", F (engine_ar[0].oneshot_gbps), false, true, false },
  { "engine_ar2_twoshot_bytes", F (engine_ar[0].twoshot_bytes), false, true, false },
  { "engine_ar2_twoshot_us", F (engine_ar[0].twoshot_us), false, true, false },
  { "engine_ar2_twoshot_gbps", F (engine_ar[0].twoshot_gbps), false, true, false },
  { "engine_ar4_oneshot_us", F (engine_ar[1].oneshot_us), false, true, false },
  { "engine_ar4_oneshot_gbps", F (engine_ar[1].oneshot_gbps), false, true, false },
  { "engine_ar4_twoshot_bytes", F (engine_ar[1].twoshot_bytes), false, true, false },
  { "engine_ar4_twoshot_us", F (engine_ar[1].twoshot_us), false, true, false },
  { "engine_ar4_twoshot_gbps", F (engine_ar[1].twoshot_gbps), false, true, false },
  { "engine_ar8_oneshot_us", F (engine_ar[2].oneshot_us), false, true, false },
  { "engine_ar8_oneshot_gbps", F (engine_ar[2].oneshot_gbps), false, true, false },
  { "engine_ar8_twoshot_bytes", F (engine_ar[2].twoshot_bytes), false, true, false },
  { "engine_ar8_twoshot_us", F (engine_ar[2].twoshot_us), false, true, false },
  { "engine_ar8_twoshot_gbps", F (engine_ar[2].twoshot_gbps), false, true, false },
  { "nvlink", F (nvlink), true, false, true },
  { "nvls", F (nvls), true, false, true },
};
#undef F
#define NKEYS (sizeof gpu_keys / sizeof gpu_keys[0])
/* Which keys an entry set is a uint64_t bit mask. */
typedef char gpu_keys_fit_in_mask[NKEYS <= 64 ? 1 : -1];
#define KEYBIT(i) ((uint64_t) 1 << (i))
static const char *const mandatory[] = { "sms", "fp32_gflops", "mem_gb", "mem_bw_gbps" };

/* Parse state: the entries, the one for [defaults], the line counter. */
struct gpu_parse {
  struct gpu_db *db;
  struct gpu_entry defaults;
  bool have_defaults;
  struct ini_file ini;
  int errors;
  /* which numeric keys each entry set, for [defaults] and source checks */
  uint64_t *set;
  uint64_t defaults_set;
  int dup_line;          /* the repeated section said last (said once) */
};

static void
set_source (struct gpu_entry *e, const char *key, const char *val)
{
  for (size_t i = 0; i < e->nsrc; i++)
    if (strcmp (e->src_keys[i], key) == 0) {
      free (e->src_vals[i]);
      e->src_vals[i] = xstrdup (val);
      return;
    }
  e->src_keys = xrealloc (e->src_keys, (e->nsrc + 1) * sizeof *e->src_keys);
  e->src_vals = xrealloc (e->src_vals, (e->nsrc + 1) * sizeof *e->src_vals);
  e->src_keys[e->nsrc] = xstrdup (key);
  e->src_vals[e->nsrc] = xstrdup (val);
  e->nsrc++;
}

const char *
gpu_source (const struct gpu_entry *e, const char *key)
{
  for (size_t i = 0; i < e->nsrc; i++)
    if (strcmp (e->src_keys[i], key) == 0)
      return e->src_vals[i];
  return e->source;
}

static struct gpu_entry *
entry_for (struct gpu_parse *ps, const char *section, uint64_t **setp)
{
  struct gpu_db *db = ps->db;
  struct gpu_entry *e;
  if (strcmp (section, "defaults") == 0) {
    ps->have_defaults = true;
    *setp = &ps->defaults_set;
    return &ps->defaults;
  }
  for (size_t i = 0; i < db->n; i++)
    if (strcmp (db->v[i].name, section) == 0) {
      /* a later file refines an earlier one's GPU key by key (a local
       * 99-*.ini); the same section twice in one file is a mistake */
      if (db->v[i].line != ps->ini.section_line && strcmp (db->v[i].file, ps->ini.path) == 0) {
        if (ps->dup_line != ps->ini.section_line) {
          pm_error ("%s:%d: [%s] again (first at %s:%d): one section per GPU in a file",
                    ps->ini.path, ps->ini.section_line, section, db->v[i].file, db->v[i].line);
          ps->errors++;
        }
        ps->dup_line = ps->ini.section_line;
        return NULL;
      }
      *setp = &ps->set[i];
      return &db->v[i];
    }
  db->v = xrealloc (db->v, (db->n + 1) * sizeof *db->v);
  ps->set = xrealloc (ps->set, (db->n + 1) * sizeof *ps->set);
  e = &db->v[db->n];
  memset (e, 0, sizeof *e);
  e->name = xstrdup (section);
  e->file = xstrdup (ps->ini.path);
  e->line = ps->ini.section_line;
  ps->set[db->n] = 0;
  *setp = &ps->set[db->n];
  db->n++;
  return e;
}

static int
handler (void *user, const char *section, const char *name, const char *value)
{
  struct gpu_parse *ps = user;
  uint64_t *set;
  struct gpu_entry *e;

  if (section[0] == '\0') {
    pm_error ("%s:%d: key '%s' outside any [section]", ps->ini.path, ps->ini.line, name);
    ps->errors++;
    return 1;
  }
  if ((e = entry_for (ps, section, &set)) == NULL)
    return 1;
  for (size_t i = 0; i < NKEYS; i++) {
    if (strcmp (name, gpu_keys[i].name) != 0)
      continue;
    double d;
    int64_t iv;
    char *p = (char *) &e->gpu + gpu_keys[i].offset;
    if (gpu_keys[i].integer) {
      if (gpu_keys[i].flag && (!parse_int64 (value, &iv) || iv < 0 || iv > 1)) {
        pm_error ("%s:%d: %s: '%s' is not 0 or 1", ps->ini.path, ps->ini.line, name, value);
        ps->errors++;
        return 1;
      }
      if (!parse_int64 (value, &iv) || iv < gpu_keys[i].positive || iv > 1000000) {
        pm_error ("%s:%d: %s: '%s' is not a %s integer (at most 1000000)", ps->ini.path,
                  ps->ini.line, name, value, gpu_keys[i].positive ? "positive" : "non-negative");
        ps->errors++;
        return 1;
      }
      *(int *) p = (int) iv;
    }
    else {
      /* parse_double refuses inf and nan; 1e12 is beyond any GPU's GB,
       * GB/s, TFLOP/s, MHz, watts or bytes (mem_gb = 1e308 overflowed) */
      if (!parse_double (value, &d) || d < 0 || (d == 0 && gpu_keys[i].positive) || d > 1e12) {
        pm_error ("%s:%d: %s: '%s' is not a %s number (at most 1e12)", ps->ini.path,
                  ps->ini.line, name, value, gpu_keys[i].positive ? "positive" : "non-negative");
        ps->errors++;
        return 1;
      }
      *(double *) p = d;
    }
    *set |= KEYBIT (i);
    return 1;
  }
  if (strcmp (name, "aliases") == 0) {
    strv_free (e->aliases);
    e->aliases = strv_split (value, ',');
  }
  else if (strcmp (name, "vendor") == 0) {
    free (e->vendor);
    e->vendor = xstrdup (value);
  }
  else if (strcmp (name, "source") == 0) {
    free (e->source);
    e->source = xstrdup (value);
  }
  else if (strcmp (name, "source.engine_ar") == 0) {
    /* one source for every engine_ar* key (a key's own source. overrides it) */
    for (size_t i = 0; i < NKEYS; i++)
      if (strncmp (gpu_keys[i].name, "engine_ar", 9) == 0)
        set_source (e, gpu_keys[i].name, value);
  }
  else if (strncmp (name, "source.", 7) == 0) {
    bool known = false;
    for (size_t i = 0; i < NKEYS; i++)
      known |= strcmp (name + 7, gpu_keys[i].name) == 0;
    if (!known) {
      pm_error ("%s:%d: '%s' names no GPU key", ps->ini.path, ps->ini.line, name);
      ps->errors++;
      return 1;
    }
    set_source (e, name + 7, value);
  }
  else if (strcmp (name, "note") != 0) {
    pm_error ("%s:%d: unknown key '%s' in [%s]", ps->ini.path, ps->ini.line, name, section);
    ps->errors++;
  }
  return 1;
}

static void
entry_free (struct gpu_entry *e)
{
  free (e->name);
  free (e->vendor);
  free (e->source);
  free (e->file);
  strv_free (e->aliases);
  for (size_t i = 0; i < e->nsrc; i++) {
    free (e->src_keys[i]);
    free (e->src_vals[i]);
  }
  free (e->src_keys);
  free (e->src_vals);
}

/* Apply [defaults], check mandatory keys, sources and alias clashes. */
static int
finish (struct gpu_parse *ps)
{
  struct gpu_db *db = ps->db;
  int errors = 0;
  for (size_t i = 0; i < db->n; i++) {
    struct gpu_entry *e = &db->v[i];
    for (size_t k = 0; k < NKEYS; k++) {
      if (!(ps->set[i] & KEYBIT (k)) && ps->have_defaults && (ps->defaults_set & KEYBIT (k))) {
        size_t len = gpu_keys[k].integer ? sizeof (int) : sizeof (double);
        memcpy ((char *) &e->gpu + gpu_keys[k].offset,
                (char *) &ps->defaults.gpu + gpu_keys[k].offset, len);
        /* the value came from [defaults], and so does its source */
        const char *src = gpu_source (&ps->defaults, gpu_keys[k].name);
        set_source (e, gpu_keys[k].name, src ? src : "[defaults]");
        ps->set[i] |= KEYBIT (k);
      }
      if ((ps->set[i] & KEYBIT (k)) && gpu_source (e, gpu_keys[k].name) == NULL) {
        pm_error ("%s:%d: [%s]: %s has no source (add source = or source.%s =)",
                  e->file, e->line, e->name, gpu_keys[k].name, gpu_keys[k].name);
        errors++;
      }
    }
    for (size_t k = 0; k < sizeof mandatory / sizeof mandatory[0]; k++) {
      size_t idx = 0;
      while (strcmp (gpu_keys[idx].name, mandatory[k]) != 0)
        idx++;
      if (!(ps->set[i] & KEYBIT (idx))) {
        pm_error ("%s:%d: [%s]: missing mandatory key '%s'", e->file, e->line, e->name, mandatory[k]);
        errors++;
      }
    }
    /* the engine's all-reduce of a group size: all five keys or none */
    for (size_t k = 0; k < NKEYS; k++) {
      unsigned have = 0;
      if (strncmp (gpu_keys[k].name, "engine_ar", 9) != 0 || strstr (gpu_keys[k].name, "_oneshot_us") == NULL)
        continue;
      for (size_t j = k; j < k + 5; j++)
        have += (ps->set[i] & KEYBIT (j)) != 0;
      if (have != 0 && have != 5) {
        for (size_t j = k; j < k + 5; j++)
          if (!(ps->set[i] & KEYBIT (j)))
            pm_error ("%s:%d: [%s]: %s is missing (the engine's all-reduce takes all five "
                      "keys of its group size or none)", e->file, e->line, e->name, gpu_keys[j].name);
        errors++;
      }
    }
    if (e->gpu.base_clock_mhz > 0 && e->gpu.clock_mhz > 0 && e->gpu.base_clock_mhz > e->gpu.clock_mhz) {
      pm_error ("%s:%d: [%s]: base_clock_mhz %g is above the boost clock clock_mhz %g",
                e->file, e->line, e->name, e->gpu.base_clock_mhz, e->gpu.clock_mhz);
      errors++;
    }
    if (e->vendor == NULL)
      e->vendor = xstrdup ("nvidia");
    e->gpu.struct_size = sizeof e->gpu;
    e->gpu.name = e->name;
    e->gpu.vendor = e->vendor;
    if (e->gpu.gpus_per_node == 0)
      e->gpu.gpus_per_node = 1;
    if (e->gpu.oversubscription < 1)
      e->gpu.oversubscription = 1;
  }
  /* Every name and alias means one section. */
  for (size_t i = 0; i < db->n; i++)
    for (char **a = db->v[i].aliases; a && *a; a++)
      for (size_t j = 0; j < db->n; j++) {
        if (j == i)
          continue;
        bool clash = name_eq (*a, db->v[j].name);
        for (char **b = db->v[j].aliases; !clash && b && *b; b++)
          clash = j > i && name_eq (*a, *b);
        if (clash) {
          pm_error ("%s:%d: [%s]: alias '%s' also names [%s] (%s:%d)",
                    db->v[i].file, db->v[i].line, db->v[i].name, *a,
                    db->v[j].name, db->v[j].file, db->v[j].line);
          errors++;
        }
      }
  return errors;
}

int
gpu_db_load (struct gpu_db *db, const char *dir)
{
  struct gpu_parse ps;
  char **files = list_dir (dir, ".ini");

  memset (db, 0, sizeof *db);
  memset (&ps, 0, sizeof ps);
  ps.db = db;
  if (files == NULL) {
    pm_error ("%s: cannot read the GPU directory", dir);
    return -1;
  }
  for (char **f = files; *f; f++)
    if (ini_file_parse (&ps.ini, *f, handler, &ps) < 0)
      ps.errors++;
  if (ps.errors == 0)
    ps.errors += finish (&ps);
  if (db->n == 0 && ps.errors == 0) {
    pm_error ("%s: no GPU sections found", dir);
    ps.errors++;
  }
  entry_free (&ps.defaults);
  free (ps.set);
  strv_free (files);
  if (ps.errors) {
    gpu_db_free (db);
    return -1;
  }
  return 0;
}

int
gpu_db_load_data (struct gpu_db *db)
{
  char *dir = xasprintf ("%s/gpus.d", pm_datadir ());
  int rc = gpu_db_load (db, dir);
  free (dir);
  return rc;
}

const struct gpu_entry *
gpu_db_find (const struct gpu_db *db, const char *name)
{
  for (size_t i = 0; i < db->n; i++)
    if (name_eq (db->v[i].name, name))
      return &db->v[i];
  for (size_t i = 0; i < db->n; i++)
    for (char **a = db->v[i].aliases; a && *a; a++)
      if (name_eq (*a, name))
        return &db->v[i];
  return NULL;
}

void
gpu_db_free (struct gpu_db *db)
{
  for (size_t i = 0; i < db->n; i++)
    entry_free (&db->v[i]);
  free (db->v);
  memset (db, 0, sizeof *db);
}
