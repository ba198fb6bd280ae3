/* strategy.c: parallelism strategies: "tp=8,pp=4" specs and named presets from strategies.d. */
#include <config.h>

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Megatron-Core's names of the modules, in enum pm_rmod's bit order. */
static const char *const rmod_list[RM_NAMES] = { "core_attn", "layernorm", "moe_act",
                                                 "mla_up_proj", "mlp" };

static const char *const sched_names[] = { "1f1b", "gpipe", "interleaved" };
static const char *const recompute_names[] = { "none", "selective", "full" };
static const char *const kernels_names[] = { "eager", "megatron", "te" };
static const char *const dispatcher_names[] = { "alltoall", "allgather", "flex" };

const char *schedule_name (enum pm_schedule s) { return sched_names[s]; }
const char *recompute_name (enum pm_recompute r) { return recompute_names[r]; }
const char *kernels_name (enum pm_kernels k) { return kernels_names[k]; }
const char *dispatcher_name (int d) { return dispatcher_names[d]; }

void
strategy_init (struct strategy *s)
{
  memset (s, 0, sizeof *s);
  s->tp = s->pp = s->dp = s->ep = s->mbs = s->vp = s->cp = 1;
  s->schedule = SCHED_1F1B;
  s->recompute = RECOMPUTE_NONE;
  s->host_us = PM_HOST_LAUNCH_US;
}

/* layers over s->pp x s->vp chunks that do not divide them: each chunk
 * gets layers / chunks or one more, the extra ones to the middle chunks
 * first (the first and last also hold the embedding and the output
 * layer), then the first, then the last. */
void
strategy_uneven_split (struct strategy *s, int64_t layers)
{
  int p = s->pp * (s->vp > 1 ? s->vp : 1), extra = (int) (layers % p), k = 0;
  for (int i = 0; i < p; i++)
    s->split[i] = (int) (layers / p);
  for (int i = 1; i < p - 1 && k < extra; i++, k++)
    s->split[i]++;
  if (k < extra)
    s->split[0]++, k++;
  if (k < extra)
    s->split[p - 1]++;
  s->nsplit = p;
}

/* Append the key fmt formats (its separator included) to buf when the
 * whole of it fits. */
static void append_key (char *buf, size_t len, const char *fmt, ...)
  __attribute__ ((format (printf, 3, 4)));

static void
append_key (char *buf, size_t len, const char *fmt, ...)
{
  char key[64];
  size_t n = strlen (buf);
  va_list ap;
  int k;
  va_start (ap, fmt);
  k = vsnprintf (key, sizeof key, fmt, ap);
  va_end (ap);
  if (k > 0 && (size_t) k < sizeof key && n + (size_t) k < len)
    memcpy (buf + n, key, (size_t) k + 1);
}

void
strategy_extra_keys (const struct strategy *s, char sep, char *buf, size_t len)
{
  char split[16 * PM_MAX_STAGES];
  size_t n = 0;
  if (len == 0)
    return;
  buf[0] = '\0';
  for (int i = 0; i < s->nsplit && n < sizeof split; i++)   /* a split whole or not at all */
    n += (size_t) (i ? snprintf (split + n, sizeof split - n, ":%d", s->split[i])
                   : snprintf (split, sizeof split, "%csplit=%d", sep, s->split[i]));
  if (s->nsplit && n < sizeof split && strlen (buf) + n < len)
    memcpy (buf, split, n + 1);
  if (s->first_layers)
    append_key (buf, len, "%cfirst_layers=%d", sep, s->first_layers);
  if (s->last_layers)
    append_key (buf, len, "%clast_layers=%d", sep, s->last_layers);
  if (s->account_embed)
    append_key (buf, len, "%caccount_embed=1", sep);
  if (s->account_loss)
    append_key (buf, len, "%caccount_loss=1", sep);
  if (s->dispatcher != PERFMOD_DISPATCH_ALLTOALL)
    append_key (buf, len, "%cdispatcher=%s", sep, dispatcher_name (s->dispatcher));
  if (s->a2a_overlap)
    append_key (buf, len, "%ca2a_overlap=1", sep);
  if (s->shared_overlap)
    append_key (buf, len, "%cshared_overlap=1", sep);
  if (s->mtp)
    append_key (buf, len, "%cmtp=%d", sep, s->mtp);
  if (s->host_us != PM_HOST_LAUNCH_US)
    append_key (buf, len, "%chost_us=%g", sep, s->host_us);
  if (s->grad_low)
    append_key (buf, len, "%cgrad_fp32=0", sep);
  if (s->recompute_modules) {
    char mods[80];
    append_key (buf, len, "%crecompute_modules=%s", sep,
                rmod_names (s->recompute_modules, mods, sizeof mods));
  }
}

/* The re-runnable --strategy string of s: every number, then the keys
 * given beyond the defaults. */
void
strategy_spec (const struct strategy *s, char *buf, size_t len)
{
  int n = snprintf (buf, len, "tp=%d,pp=%d,dp=%d,cp=%d,ep=%d", s->tp, s->pp, s->dp, s->cp, s->ep);
  if (s->etp > 0 && n > 0 && (size_t) n < len)
    n += snprintf (buf + n, len - (size_t) n, ",etp=%d", s->etp);
  if (n > 0 && (size_t) n < len)
    n += snprintf (buf + n, len - (size_t) n, ",mbs=%d,vp=%d,schedule=%s,zero=%d,recompute=%s,"
                   "sp=%d,kernels=%s", s->mbs, s->vp, schedule_name (s->schedule), s->zero,
                   recompute_name (s->recompute), s->sp, kernels_name (s->kernels));
  if (s->tpo && n > 0 && (size_t) n < len)
    n += snprintf (buf + n, len - (size_t) n, ",tpo=1");
  if (n > 0 && (size_t) n < len)
    strategy_extra_keys (s, ',', buf + n, len - (size_t) n);
}

unsigned
strategy_rmods (const struct strategy *s)
{
  return s->recompute_modules ? s->recompute_modules : RM_CORE_ATTN;
}

const char *
rmod_names (unsigned mask, char *buf, size_t len)
{
  size_t n = 0;
  if (len == 0)
    return buf;
  buf[0] = '\0';
  for (int b = 0; b < RM_NAMES; b++)
    if (mask & (1u << b)) {
      int k = snprintf (buf + n, len - n, "%s%s", n ? "+" : "", rmod_list[b]);
      if (k < 0 || (size_t) k >= len - n)
        break;
      n += (size_t) k;
    }
  return buf;
}

bool
strategy_uneven (const struct strategy *s)
{
  return s->nsplit || s->first_layers || s->last_layers || s->account_embed || s->account_loss;
}

/* Megatron-Core's rules (TransformerConfig): with first/last_layers the
 * first and last stages hold those layers and the others share the rest
 * evenly; with account_embed/loss the embedding and the loss count as a
 * layer each, the layers plus them split evenly over the chunks, the
 * first chunk one layer fewer for the embedding and the last for the
 * loss.  A stage's layers are split evenly over its vp chunks. */
int64_t
strategy_chunk_layers (const struct strategy *s, int64_t layers, int c)
{
  int p = s->pp, v = s->vp > 1 ? s->vp : 1, r = c % p;
  if (s->nsplit == p * v)
    return s->split[c];
  if (s->nsplit == p)
    return s->split[r] / v;
  if (s->first_layers || s->last_layers) {
    int mid = p - (s->first_layers > 0) - (s->last_layers > 0);
    int64_t stage = r == 0 && s->first_layers ? s->first_layers
                  : r == p - 1 && s->last_layers ? s->last_layers
                  : (layers - s->first_layers - s->last_layers) / (mid > 0 ? mid : 1);
    return stage / v;
  }
  if (s->account_embed || s->account_loss) {
    int64_t each = (layers + s->account_embed + s->account_loss) / ((int64_t) p * v);
    return each - (c == 0 && s->account_embed) - (c == p * v - 1 && s->account_loss);
  }
  return layers / ((int64_t) p * v);
}

int
strategy_check_split (const struct strategy *s, int64_t layers, const char *where)
{
  int p = s->pp, v = s->vp > 1 ? s->vp : 1;
  int64_t sum = 0;
  bool rules = s->first_layers || s->last_layers || s->account_embed || s->account_loss;
  if (!strategy_uneven (s))
    return 0;
  if (rules && s->nsplit) {
    pm_error ("%s: split= with first_layers, last_layers or account_*: give one or the other",
              where);
    return -1;
  }
  if ((s->first_layers || s->last_layers) && (s->account_embed || s->account_loss)) {
    pm_error ("%s: first_layers/last_layers with account_embed/account_loss: Megatron takes "
              "one or the other", where);
    return -1;
  }
  if (rules && p < 2) {
    pm_error ("%s: first_layers, last_layers and account_* split the layers over pp>1 stages",
              where);
    return -1;
  }
  if ((int64_t) p * v > PM_MAX_STAGES) {
    pm_error ("%s: an uneven split of %d x %d chunks: at most %d", where, p, v, PM_MAX_STAGES);
    return -1;
  }
  if (s->nsplit == p && v > 1)
    for (int r = 0; r < p; r++)
      if (s->split[r] % v != 0) {
        pm_error ("%s: split: stage %d's %d layers do not divide over vp=%d chunks (give one "
                  "number per chunk, pp x vp = %d of them)", where, r, s->split[r], v, p * v);
        return -1;
      }
  if (s->first_layers || s->last_layers) {
    int mid = p - (s->first_layers > 0) - (s->last_layers > 0);
    int64_t rest = layers - s->first_layers - s->last_layers;
    if (rest < 0 || (mid == 0 && rest != 0) || (mid > 0 && (rest < mid || rest % mid != 0))) {
      pm_error ("%s: first_layers=%d, last_layers=%d: the other %lld layers do not split "
                "evenly over the %d middle stages", where, s->first_layers, s->last_layers,
                (long long) rest, mid);
      return -1;
    }
    for (int r = 0; r < p; r++) {
      int64_t stage = strategy_chunk_layers (s, layers, r) * v;
      int64_t want = r == 0 && s->first_layers ? s->first_layers
                   : r == p - 1 && s->last_layers ? s->last_layers : rest / mid;
      if (stage != want) {
        pm_error ("%s: stage %d's %lld layers do not divide over vp=%d chunks", where, r,
                  (long long) want, v);
        return -1;
      }
    }
  }
  if ((s->account_embed || s->account_loss) &&
      (layers + s->account_embed + s->account_loss) % ((int64_t) p * v) != 0) {
    pm_error ("%s: account_embed/account_loss: %lld layers%s%s do not split evenly over pp x vp "
              "= %d chunks", where, (long long) layers, s->account_embed ? " + the embedding" : "",
              s->account_loss ? " + the loss" : "", p * v);
    return -1;
  }
  for (int c = 0; c < p * v; c++) {
    int64_t n = strategy_chunk_layers (s, layers, c);
    if (n < 1) {
      pm_error ("%s: pipeline chunk %d would hold no layer", where, c);
      return -1;
    }
    sum += n;
  }
  if (sum != layers) {
    pm_error ("%s: split gives %lld layers, the model has %lld", where, (long long) sum,
              (long long) layers);
    return -1;
  }
  return 0;
}

bool
strategy_shards (const struct strategy *s)
{
  /* dp's replicas, or the routed experts' beyond them (etp=1; a dense
   * model's are dp's) */
  return s->dp * s->cp > 1 || dist_expert_replicas (s) > 1;
}

bool
strategy_attention_dp (const struct strategy *s, int replicas)
{
  return s->etp >= 1 && replicas > 1 && (int64_t) s->ep * s->etp == (int64_t) s->tp * replicas;
}

int
strategy_dispatcher (const struct strategy *s, bool attention_dp)
{
  return attention_dp && !s->dispatcher_set ? PERFMOD_DISPATCH_ALLGATHER : s->dispatcher;
}

bool
strategy_default_zero (struct strategy *s, bool train)
{
  if (s->zero_set || !train || s->kernels != KERNELS_TE || !strategy_shards (s))
    return false;
  s->zero = 1;
  return true;
}

int
strategy_check_attention (const struct strategy *s, const char *opt, const char *attention)
{
  if (s->kernels != KERNELS_MEGATRON || attention == NULL || strcmp (attention, "flash") != 0)
    return 0;
  pm_error ("%s flash with kernels=megatron: Megatron's own layer runs its masked softmax, not "
            "fused attention (kernels=te or eager run it)", opt);
  return -1;
}

/* One key=value pair; seen is a bit set of keys already given. */
static int
set_key (struct strategy *s, const char *key, const char *val, const char *where,
         unsigned *seen)
{
  static const char *const keys[] = { "tp", "pp", "dp", "ep", "mbs", "vp", "zero",
                                      "schedule", "recompute", "sp", "kernels", "split", "cp",
                                      "etp", "tpo", "first_layers", "last_layers",
                                      "account_embed", "account_loss", "dispatcher",
                                      "a2a_overlap", "shared_overlap", "recompute_modules",
                                      "mtp", "host_us", "grad_fp32" };
  int idx = word_index (key, keys, sizeof keys / sizeof keys[0]);
  int64_t v;

  if (idx < 0) {
    pm_error ("%s: unknown strategy key '%s' (known: tp, pp, dp, cp, ep, etp, mbs, vp, zero, "
              "schedule, recompute, sp, tpo, kernels, split, first_layers, last_layers, "
              "account_embed, account_loss, dispatcher, a2a_overlap, shared_overlap, "
              "recompute_modules, mtp, host_us, grad_fp32)", where, key);
    return -1;
  }
  if (*seen & (1u << idx)) {
    pm_error ("%s: '%s' given twice", where, key);
    return -1;
  }
  *seen |= 1u << idx;
  if (idx == 7 || idx == 8 || idx == 10 || idx == 19) {
    static const struct {
      const char *const *names;
      size_t n;
      const char *expected;
    } enums[] = {
      { sched_names, 3, "gpipe, 1f1b or interleaved" },
      { recompute_names, 3, "none, selective or full" },
      { kernels_names, 3, "eager, megatron or te" },
      { dispatcher_names, 3, "alltoall, allgather or flex (DeepEP)" },
    };
    int which = idx == 7 ? 0 : idx == 8 ? 1 : idx == 10 ? 2 : 3;
    int e = word_index (val, enums[which].names, enums[which].n);
    if (e < 0) {
      pm_error ("%s: %s=%s: expected %s", where, key, val, enums[which].expected);
      return -1;
    }
    if (idx == 7)
      s->schedule = (enum pm_schedule) e;
    else if (idx == 8)
      s->recompute = (enum pm_recompute) e;
    else if (idx == 19) {
      s->dispatcher = e;
      s->dispatcher_set = true;
    }
    else {
      s->kernels = (enum pm_kernels) e;
      s->kernels_set = true;
    }
    return 0;
  }
  if (idx == 11) {                      /* layers per stage, "10:10:8:8" */
    char **parts = strv_split (val, ':');
    int rc = 0;
    s->nsplit = 0;
    for (char **p = parts; *p && rc == 0; p++) {
      int64_t n;
      if (!parse_int64 (*p, &n) || n < 1 || n > PM_MAX_COUNT) {
        pm_error ("%s: split=%s: '%s' is not a positive number of layers (at most %lld)", where,
                  val, *p, (long long) PM_MAX_COUNT);
        rc = -1;
      }
      else if (s->nsplit == PM_MAX_STAGES) {
        pm_error ("%s: split=%s: more than %d stages", where, val, PM_MAX_STAGES);
        rc = -1;
      }
      else
        s->split[s->nsplit++] = (int) n;
    }
    strv_free (parts);
    return rc;
  }
  if (idx == 22) {                      /* "layernorm+moe_act" */
    char **parts = strv_split (val, '+');
    int rc = 0;
    s->recompute_modules = 0;
    for (char **p = parts; *p && rc == 0; p++) {
      int b = word_index (*p, rmod_list, RM_NAMES);
      if (b < 0) {
        pm_error ("%s: recompute_modules=%s: '%s' is not a module (core_attn, layernorm, "
                  "moe_act, mla_up_proj, mlp; joined by +)", where, val, *p);
        rc = -1;
      }
      else
        s->recompute_modules |= 1u << b;
    }
    strv_free (parts);
    return rc;
  }
  if (idx == 24) {                      /* the host's us per kernel launch */
    char *end;
    double us = strtod (val, &end);
    if (end == val || *end || !(us >= 0 && us <= 1000)) {
      pm_error ("%s: host_us=%s: expected the host's microseconds per kernel launch, 0 to 1000 "
                "(0: the host never holds the device up)", where, val);
      return -1;
    }
    s->host_us = us;
    s->host_us_set = true;
    return 0;
  }
  if (idx == 25) {
    if (strcmp (val, "0") && strcmp (val, "1")) {
      pm_error ("%s: grad_fp32=%s: expected 0 or 1 (gradients kept and reduced in fp32, or in "
                "the weights' 16-bit dtype)", where, val);
      return -1;
    }
    s->grad_low = val[0] == '0';
    return 0;
  }
  if (idx == 9) {
    if (strcmp (val, "0") && strcmp (val, "1")) {
      pm_error ("%s: sp=%s: expected 0 or 1 (sequence parallelism with tp)", where, val);
      return -1;
    }
    s->sp = val[0] == '1';
    return 0;
  }
  if (idx == 14 || idx == 20 || idx == 21) {
    if (strcmp (val, "0") && strcmp (val, "1")) {
      pm_error ("%s: %s=%s: expected 0 or 1 (%s)", where, key, val,
                idx == 14 ? "tp communication overlapped with the GEMMs"
                : idx == 20 ? "ep's dispatch and combine overlapped with another micro-batch"
                : "ep's dispatch and combine overlapped with the shared experts");
      return -1;
    }
    *(idx == 14 ? &s->tpo : idx == 20 ? &s->a2a_overlap : &s->shared_overlap) = val[0] == '1';
    return 0;
  }
  if (idx == 17 || idx == 18) {
    if (strcmp (val, "0") && strcmp (val, "1")) {
      pm_error ("%s: %s=%s: expected 0 or 1 (the %s counted as a layer in the pipeline split)",
                where, key, val, idx == 17 ? "embedding" : "loss");
      return -1;
    }
    *(idx == 17 ? &s->account_embed : &s->account_loss) = val[0] == '1';
    return 0;
  }
  if (!parse_int64 (val, &v) || (idx == 6 ? (v < 0 || v > 3) : idx == 23 ? (v < 0 || v > 16)
                                 : (v < 1 || v > PM_MAX_GPUS))) {
    if (idx == 6)
      pm_error ("%s: %s=%s: expected a ZeRO stage 0, 1, 2 or 3", where, key, val);
    else if (idx == 23)
      pm_error ("%s: mtp=%s: expected 0 to 16 multi-token prediction layers", where, val);
    else
      pm_error ("%s: %s=%s: expected an integer from 1 to %d", where, key, val, PM_MAX_GPUS);
    return -1;
  }
  switch (idx) {
  case 0: s->tp = (int) v; break;
  case 1: s->pp = (int) v; break;
  case 2: s->dp = (int) v; s->dp_set = true; break;
  case 3: s->ep = (int) v; break;
  case 4: s->mbs = (int) v; break;
  case 5: s->vp = (int) v; break;
  case 6: s->zero = (int) v; s->zero_set = true; break;
  case 12: s->cp = (int) v; break;
  case 13: s->etp = (int) v; break;
  case 15: s->first_layers = (int) v; break;
  case 16: s->last_layers = (int) v; break;
  case 23: s->mtp = (int) v; break;
  }
  return 0;
}

int
strategy_parse (struct strategy *s, const char *spec, const char *where)
{
  char **items = strv_split (spec, ',');
  unsigned seen = 0;
  int rc = 0;
  for (char **it = items; *it && rc == 0; it++) {
    char *eq = strchr (*it, '=');
    if (**it == '\0' || eq == NULL || eq == *it || eq[1] == '\0') {
      pm_error ("%s: '%s': expected KEY=VALUE", where, *it);
      rc = -1;
      break;
    }
    *eq = '\0';
    rc = set_key (s, trim (*it), trim (eq + 1), where, &seen);
  }
  strv_free (items);
  /* modules are selective recomputation's: given alone they ask for it */
  if (rc == 0 && s->recompute_modules && !(seen & (1u << 8)) && s->recompute == RECOMPUTE_NONE)
    s->recompute = RECOMPUTE_SELECTIVE;
  if (rc == 0 && s->recompute_modules && s->recompute != RECOMPUTE_SELECTIVE) {
    pm_error ("%s: recompute_modules needs recompute=selective (not %s)", where,
              recompute_name (s->recompute));
    rc = -1;
  }
  if (rc == 0 && s->schedule == SCHED_INTERLEAVED && s->vp < 2) {
    pm_error ("%s: schedule=interleaved needs vp>=2 virtual stages per rank", where);
    rc = -1;
  }
  if (rc == 0 && s->vp > 1 && s->schedule != SCHED_INTERLEAVED) {
    pm_error ("%s: vp=%d needs schedule=interleaved", where, s->vp);
    rc = -1;
  }
  if (rc == 0 && s->nsplit && s->nsplit != s->pp && s->nsplit != s->pp * s->vp) {
    if (s->vp > 1)
      pm_error ("%s: split gives %d numbers: one per stage (pp=%d) or one per chunk (pp x vp = "
                "%d)", where, s->nsplit, s->pp, s->pp * s->vp);
    else
      pm_error ("%s: split gives %d stages, pp=%d", where, s->nsplit, s->pp);
    rc = -1;
  }
  return rc;
}

int
strategy_resolve (struct strategy *s, int64_t nodes, int gpus_per_node, int64_t batch)
{
  int64_t model, all, gpus = nodes * gpus_per_node;
  bool gpus_given = nodes > 0;
  /* Each degree is at most 2^20, so neither product overflows; their
   * bound keeps every rank count after this in an int.  Context
   * parallelism's ranks count with the model's (tp x pp x cp). */
  if (!ck_mul64 (s->tp, s->pp, &model) || !ck_mul64 (model, s->cp, &model) ||
      model > PM_MAX_GPUS) {
    pm_error ("tp=%d x pp=%d x cp=%d: more than %d GPUs", s->tp, s->pp, s->cp, PM_MAX_GPUS);
    return -1;
  }
  if (!s->dp_set && gpus_given) {
    if (gpus % model != 0) {
      pm_error ("tp=%d x pp=%d = %lld does not divide the %lld GPUs given",
                s->tp, s->pp, (long long) model, (long long) gpus);
      return -1;
    }
    s->dp = (int) (gpus / model);
  }
  if (!ck_mul64 (model, s->dp, &all) || all > PM_MAX_GPUS) {
    pm_error ("tp=%d x pp=%d x dp=%d: more than %d GPUs", s->tp, s->pp, s->dp, PM_MAX_GPUS);
    return -1;
  }
  /* --nodes says how many nodes the strategy's GPUs fill (the last one
   * perhaps in part): more or fewer is a contradiction, refused */
  if (gpus_given && (all > gpus || all <= gpus - gpus_per_node)) {
    pm_error ("tp=%d x pp=%d x dp=%d = %lld GPUs do not fill --nodes %lld of %d GPUs",
              s->tp, s->pp, s->dp, (long long) all, (long long) nodes, gpus_per_node);
    return -1;
  }
  if (s->ep > 1 && (s->dp * s->tp) % s->ep != 0) {
    pm_error ("ep=%d must divide tp x dp = %d (expert-parallel ranks come from the data- and tensor-parallel ranks)",
              s->ep, s->tp * s->dp);
    return -1;
  }
  if (batch % ((int64_t) s->dp * s->mbs) != 0) {
    pm_error ("--batch %lld is not a multiple of dp=%d x mbs=%d", (long long) batch, s->dp, s->mbs);
    return -1;
  }
  return 0;
}

/* ---- presets ---- */

struct preset_parse {
  struct preset_db *db;
  struct ini_file ini;
  int errors;
  const char *redefined_path;   /* the [section] last reported as a redefinition */
  int redefined_line;
};

static int
preset_handler (void *user, const char *section, const char *name, const char *value)
{
  struct preset_parse *ps = user;
  struct preset_db *db = ps->db;
  struct preset *p = NULL;
  char *where, *spec;
  struct strategy check;

  if (section[0] == '\0') {
    pm_error ("%s:%d: key '%s' outside any [preset]", ps->ini.path, ps->ini.line, name);
    ps->errors++;
    return 1;
  }
  for (size_t i = 0; i < db->n; i++)
    if (strcmp (db->v[i].name, section) == 0)
      p = &db->v[i];
  /* A preset is defined once: the second definition is the error, in
   * whichever file it is (keys are not merged across sections). */
  if (p && (strcmp (p->file, ps->ini.path) != 0 || p->line != ps->ini.section_line)) {
    if (ps->redefined_path != ps->ini.path || ps->redefined_line != ps->ini.section_line) {
      pm_error ("%s:%d: [%s] is already defined at %s:%d", ps->ini.path, ps->ini.section_line,
                section, p->file, p->line);
      ps->redefined_path = ps->ini.path;
      ps->redefined_line = ps->ini.section_line;
      ps->errors++;
    }
    return 1;
  }
  if (strcmp (name, "description") == 0)
    return 1;
  if (p == NULL) {
    db->v = xrealloc (db->v, (db->n + 1) * sizeof *db->v);
    p = &db->v[db->n++];
    p->name = xstrdup (section);
    p->spec = xstrdup ("");
    p->file = xstrdup (ps->ini.path);
    p->line = ps->ini.section_line;
  }
  /* Validate the key now so the error cites this file and line. */
  where = xasprintf ("%s:%d", ps->ini.path, ps->ini.line);
  spec = xasprintf ("%s=%s", name, value);
  strategy_init (&check);
  if (strategy_parse (&check, spec, where) < 0 &&
      !(strcmp (name, "schedule") == 0 || strcmp (name, "vp") == 0))
    ps->errors++;
  free (spec);
  free (where);
  spec = p->spec[0] ? xasprintf ("%s,%s=%s", p->spec, name, value)
                    : xasprintf ("%s=%s", name, value);
  free (p->spec);
  p->spec = spec;
  return 1;
}

int
preset_db_load (struct preset_db *db, const char *dir)
{
  struct preset_parse ps;
  char **files = list_dir (dir, ".ini");
  memset (db, 0, sizeof *db);
  memset (&ps, 0, sizeof ps);
  ps.db = db;
  if (files == NULL)
    return 0;          /* no presets is fine */
  for (char **f = files; *f; f++)
    if (ini_file_parse (&ps.ini, *f, preset_handler, &ps) < 0)
      ps.errors++;
  /* Each preset as a whole must parse (e.g. interleaved with vp). */
  for (size_t i = 0; i < db->n && ps.errors == 0; i++) {
    struct strategy s;
    char *where = xasprintf ("%s:%d: [%s]", db->v[i].file, db->v[i].line, db->v[i].name);
    strategy_init (&s);
    if (strategy_parse (&s, db->v[i].spec, where) < 0)
      ps.errors++;
    free (where);
  }
  strv_free (files);
  if (ps.errors) {
    preset_db_free (db);
    return -1;
  }
  return 0;
}

const struct preset *
preset_db_find (const struct preset_db *db, const char *name)
{
  for (size_t i = 0; i < db->n; i++)
    if (strcmp (db->v[i].name, name) == 0)
      return &db->v[i];
  return NULL;
}

void
preset_db_free (struct preset_db *db)
{
  for (size_t i = 0; i < db->n; i++) {
    free (db->v[i].name);
    free (db->v[i].spec);
    free (db->v[i].file);
  }
  free (db->v);
  memset (db, 0, sizeof *db);
}
