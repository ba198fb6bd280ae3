/* tap.h: a tiny TAP emitter for perfmod's C tests (plan, ok, is_double, diag, skip_all). */
#ifndef PERFMOD_TAP_H
#define PERFMOD_TAP_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int tap_n, tap_failed;

static inline void
plan (int n)
{
  printf ("1..%d\n", n);
}

static inline void
done_testing (void)
{
  printf ("1..%d\n", tap_n);
}

static inline void
skip_all (const char *why)
{
  printf ("1..0 # SKIP %s\n", why);
  exit (0);
}

static inline void
diag (const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  printf ("# ");
  vprintf (fmt, ap);
  printf ("\n");
  va_end (ap);
}

static inline int
ok (int cond, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  printf ("%sok %d - ", cond ? "" : "not ", ++tap_n);
  vprintf (fmt, ap);
  printf ("\n");
  va_end (ap);
  if (!cond)
    tap_failed++;
  return cond;
}

/* Passes when |got - want| <= rel * |want| (or both are zero). */
static inline int
is_double (double got, double want, double rel, const char *what)
{
  int cond = fabs (got - want) <= rel * fabs (want) || (got == 0 && want == 0);
  ok (cond, "%s", what);
  if (!cond)
    diag ("got %.12g, want %.12g (relative tolerance %g)", got, want, rel);
  return cond;
}

static inline int
exit_status (void)
{
  return tap_failed ? 1 : 0;
}

#endif
