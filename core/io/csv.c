/* csv.c: an RFC 4180 reader (quoted fields may hold commas, quotes and newlines), plain or gzip-compressed. */
#include <config.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "internal.h"

int
csv_open (struct csv_reader *r, const char *path)
{
  struct stat st;
  memset (r, 0, sizeof *r);
  /* A directory opens, then fails at the first read with a line number. */
  if (stat (path, &st) == 0 && S_ISDIR (st.st_mode)) {
    errno = EISDIR;
    return -1;
  }
  /* zlib reads a file that is not gzip-compressed as it is. */
  r->gz = gzopen (path, "rb");
  if (r->gz == NULL) {
    if (errno == 0)
      errno = ENOMEM;
    return -1;
  }
  gzbuffer (r->gz, 1 << 17);
  input_note (path);
  pm_limits (&r->lim);
  r->path = path;
  r->next_line = 1;
  return 0;
}

static void
push (struct csv_reader *r, size_t *len, int c)
{
  if (*len + 1 >= r->cap) {
    r->cap = r->cap ? r->cap * 2 : 1024;
    r->buf = xrealloc (r->buf, r->cap);
  }
  r->buf[(*len)++] = (char) c;
}

int
csv_next (struct csv_reader *r)
{
  size_t len = 0, nstart = 0;
  size_t *starts = NULL, ns = 0, scap = 0;
  bool quoted = false, any = false, after_quote = false;
  int c;

  r->line = r->next_line;
  for (;;) {
    c = gzgetc (r->gz);
    if (c != EOF) {
      bool bad = true;
      if (++r->bytes > r->lim.bytes)
        pm_error ("%s:%ld: more bytes (decompressed) than the limit, %llu (PERFMOD_MAX_INPUT_BYTES "
                  "raises it)", r->path, r->line, (unsigned long long) r->lim.bytes);
      else if (len >= r->lim.line)
        pm_error ("%s:%ld: a record longer than the limit, %llu bytes (PERFMOD_MAX_LINE raises it)",
                  r->path, r->line, (unsigned long long) r->lim.line);
      else if (c == '\0')
        pm_error ("%s:%ld: a NUL byte (a binary file, not CSV text)", r->path, r->line);
      else
        bad = false;
      if (bad) {
        free (starts);
        return -1;
      }
    }
    if (c == EOF) {
      int zerr;
      const char *msg = gzerror (r->gz, &zerr);
      if (zerr != Z_OK && zerr != Z_BUF_ERROR) {
        pm_error ("%s:%ld: %s", r->path, r->line,
                  zerr == Z_ERRNO ? strerror (errno) : msg);
        free (starts);
        return -1;
      }
      /* A gzip stream cut short reads as EOF with Z_BUF_ERROR. */
      if (zerr == Z_BUF_ERROR) {
        pm_error ("%s:%ld: compressed data ends early (truncated file)", r->path, r->line);
        free (starts);
        return -1;
      }
      if (quoted) {
        pm_error ("%s:%ld: unterminated quoted field", r->path, r->line);
        free (starts);
        return -1;
      }
      if (!any && ns == 0) {
        free (starts);
        return 0;
      }
      break;
    }
    any = true;
    /* A UTF-8 byte order mark (spreadsheets write one) is no part of
     * the first field: kept until all three bytes match, then dropped. */
    if (r->bom >= 0) {
      static const unsigned char mark[3] = { 0xef, 0xbb, 0xbf };
      if (c == mark[r->bom] && len == (size_t) r->bom) {
        push (r, &len, c);
        if (++r->bom == 3) {
          len = 0;
          r->bom = -1;
        }
        continue;
      }
      r->bom = -1;
    }
    if (quoted) {
      if (c == '"') {
        int d = gzgetc (r->gz);
        if (d == '"')
          push (r, &len, '"');
        else {
          quoted = false;
          after_quote = true;
          if (d != EOF)
            gzungetc (d, r->gz);
        }
      }
      else {
        if (c == '\n')
          r->next_line++;
        push (r, &len, c);
      }
      continue;
    }
    if (c == '\r') {          /* CRLF, or a lone CR (old Mac files): a line's end */
      int d = gzgetc (r->gz);
      if (d == '\n')
        r->bytes++;
      else if (d != EOF)
        gzungetc (d, r->gz);
      c = '\n';
    }
    if (c == '"' && len == nstart && !after_quote) {
      quoted = true;
      continue;
    }
    if (c == ',' || c == '\n') {
      if (ns + 1 >= scap) {
        scap = scap ? scap * 2 : 32;
        starts = xrealloc (starts, scap * sizeof *starts);
      }
      starts[ns++] = nstart;
      push (r, &len, '\0');
      nstart = len;
      after_quote = false;
      if (c == '\n') {
        r->next_line++;
        break;
      }
      continue;
    }
    if (after_quote) {
      pm_error ("%s:%ld: text after a closing quote", r->path, r->line);
      free (starts);
      return -1;
    }
    push (r, &len, c);
  }
  if (c == EOF) {            /* last record without a newline */
    if (ns + 1 >= scap) {
      scap = scap + 2;
      starts = xrealloc (starts, scap * sizeof *starts);
    }
    starts[ns++] = nstart;
    push (r, &len, '\0');
  }
  if (ns > r->fcap) {
    r->fcap = ns;
    r->fields = xrealloc (r->fields, r->fcap * sizeof *r->fields);
  }
  for (size_t i = 0; i < ns; i++)
    r->fields[i] = r->buf + starts[i];
  r->nfields = ns;
  free (starts);
  if ((uint64_t) ++r->records > r->lim.rows) {
    pm_error ("%s:%ld: more records than the limit, %llu (PERFMOD_MAX_ROWS raises it)", r->path,
              r->line, (unsigned long long) r->lim.rows);
    return -1;
  }
  return 1;
}

void
csv_close (struct csv_reader *r)
{
  if (r->gz)
    gzclose (r->gz);
  free (r->buf);
  free (r->fields);
  memset (r, 0, sizeof *r);
}

bool
csv_int (const struct csv_reader *r, size_t col, const char *name, int64_t min, int64_t *out)
{
  const char *v = r->fields[col];
  double d;
  /* Some writers print integral columns as floats ("128.0"). */
  if (parse_int64 (v, out) && *out >= min)
    return true;
  if (parse_double (v, &d) && d == floor (d) && d >= (double) min && d < 9e15) {
    *out = (int64_t) d;
    return true;
  }
  pm_error ("%s:%ld: column '%s': '%s' is not an integer >= %lld", r->path, r->line, name, v,
            (long long) min);
  return false;
}

int
csv_column (char **header, size_t n, const char *name)
{
  for (size_t i = 0; i < n; i++)
    if (strcmp (header[i], name) == 0)
      return (int) i;
  return -1;
}

void
csv_quoted (FILE *out, const char *s)
{
  fputc ('"', out);
  for (; *s; s++)
    fprintf (out, *s == '"' ? "\"\"" : "%c", *s);
  fputc ('"', out);
}
