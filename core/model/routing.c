/* routing.c: how a router spreads tokens over the experts: a uniform router's, or a power law's as aiconfigurator draws it (the serving engines' default). */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The routing of aiconfigurator's power-law rows (its collectors'
 * power_law_logits_v3): each of the E experts' tokens drawn from a power
 * law of exponent alpha on [1, 0.8 T] (on [0.01, 2] when the T top_k
 * assignments do not outnumber the experts), scaled to T top_k in all;
 * the rank timed is the busiest of the ep groups of E / ep experts.  The
 * expected busiest group's assignments over the even share, T top_k / ep,
 * and in *reached the experts of it that get a token, over POWERLAW_DRAWS
 * seeded draws (xorshift64*; the same on every host): the MOE kernel's
 * expert_load and experts_reached, for a table's row and a serving graph. */
#define POWERLAW_DRAWS 32
static double
powerlaw_draws (int64_t tokens, int64_t experts, int64_t topk, int64_t ep, double alpha,
                double *reached)
{
  double total = (double) tokens * (double) topk, sum = 0, reach = 0;
  double lo = total > (double) experts ? 1 : 0.01;
  double hi = total > (double) experts ? 0.8 * (double) tokens : 2;
  double a1 = 1 - alpha, l1 = pow (lo, a1), h1 = pow (hi, a1);
  int64_t per = experts / ep;
  uint64_t x = 0x9e3779b97f4a7c15ULL
               ^ ((uint64_t) tokens * 1000003u + (uint64_t) experts * 101u + (uint64_t) topk);
  double *draw = xmalloc ((size_t) experts * sizeof *draw);
  *reached = 0;
  if (hi <= lo || per < 1) {
    free (draw);
    return 1;
  }
  for (int d = 0; d < POWERLAW_DRAWS; d++) {
    double all = 0, busiest = 0;
    for (int64_t e = 0; e < experts; e++) {
      x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
      double u = (double) ((x * 0x2545f4914f6cdd1dULL) >> 11) / 9007199254740992.0;
      draw[e] = pow ((h1 - l1) * u + l1, 1 / a1);
      all += draw[e];
    }
    /* scaled to the assignments, none above T (a token picks an expert
     * once; the newer collectors redraw until so): the excess goes to
     * the others in proportion, until none is left */
    for (int pass = 0; pass < 64; pass++) {
      double excess = 0, free_share = 0;
      for (int64_t e = 0; e < experts; e++) {
        draw[e] *= total / all;
        if (draw[e] > (double) tokens) {
          excess += draw[e] - (double) tokens;
          draw[e] = (double) tokens;
        }
        else if (draw[e] < (double) tokens)
          free_share += draw[e];
      }
      all = total;
      if (excess <= 1e-9 * total || free_share <= 0)
        break;
      for (int64_t e = 0; e < experts; e++)
        if (draw[e] < (double) tokens)
          draw[e] += excess * draw[e] / free_share;
    }
    int64_t at = 0;
    for (int64_t g = 0; g < ep; g++) {
      double n = 0;
      for (int64_t e = g * per; e < (g + 1) * per; e++)
        n += draw[e];
      if (n > busiest)
        busiest = n, at = g;
    }
    sum += busiest / all * (double) ep;
    for (int64_t e = at * per; e < (at + 1) * per; e++)
      reach += draw[e] >= 0.5;          /* rounded to a token or more */
  }
  free (draw);
  *reached = reach / POWERLAW_DRAWS;
  return sum / POWERLAW_DRAWS;
}

/* routing_powerlaw remembered by its inputs, per thread: a serving
 * layout's graphs ask for the same few over and over. */
#define ROUTING_MEMO 256
struct routing_slot {
  int64_t t, e, k, ep;
  double alpha, load, reached;
  bool used;
};
static _Thread_local struct routing_slot routing_memo[ROUTING_MEMO];

double
routing_powerlaw (int64_t tokens, int64_t experts, int64_t topk, int64_t ep, double alpha,
                  double *reached)
{
  uint64_t h = ((uint64_t) tokens * 31u + (uint64_t) experts) * 1000003u
               + ((uint64_t) topk * 131u + (uint64_t) ep) * 7919u + (uint64_t) (alpha * 1000);
  struct routing_slot *s = &routing_memo[h % ROUTING_MEMO];
  if (!(s->used && s->t == tokens && s->e == experts && s->k == topk && s->ep == ep
        && s->alpha == alpha)) {
    s->used = true;
    s->t = tokens, s->e = experts, s->k = topk, s->ep = ep, s->alpha = alpha;
    s->load = powerlaw_draws (tokens, experts, topk, ep, alpha, &s->reached);
  }
  *reached = s->reached;
  return s->load;
}

int
routing_parse (const char *what, const char *text, double *alpha)
{
  char *end = NULL;
  double a = 0;
  if (strcmp (text, "uniform") == 0) {
    *alpha = ROUTING_UNIFORM;
    return 0;
  }
  if (strcmp (text, "powerlaw") == 0) {
    *alpha = ROUTING_POWERLAW_DEFAULT;
    return 0;
  }
  /* a plain decimal exponent: no sign, space or hexadecimal */
  if (strncmp (text, "powerlaw:", 9) == 0 && strspn (text + 9, "0123456789.") == strlen (text + 9))
    a = strtod (text + 9, &end);
  if (!(a > 1) || a > 4 || end == text + 9 || *end != '\0') {
    pm_error ("%s '%s': expected uniform, powerlaw or powerlaw:A (1 < A <= 4)", what, text);
    return -1;
  }
  *alpha = a;
  return 0;
}

double
routing_alpha (double routing)
{
  return routing == 0 ? ROUTING_POWERLAW_DEFAULT : routing;
}
