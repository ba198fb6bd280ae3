/* io.h: files in and out: utilities, CSV and gzip, Python literals, parameter files; included by core/internal.h, in its order. */
#ifndef PERFMOD_IO_H
#define PERFMOD_IO_H

/* ---- util.c ---- */
/* Monotonic seconds, for timings. */
double pm_now (void);
/* The data directory: $PERFMOD_DATADIR, else the installed one. */
const char *pm_datadir (void);
/* This thread's data directory until called again with NULL (libperfmod). */
void pm_datadir_use (const char *dir);
void pm_error (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));
/* From here on pm_error keeps its first message in buf (len bytes)
 * instead of printing; buf NULL ends it, giving back the capture (or the
 * printing) it began in: captures nest, each begun one ended once. */
void pm_error_capture (char *buf, size_t len);
extern int pm_verbose;
/* The GPU of a run that names none. */
#define DEFAULT_GPU "h100"
void pm_debug (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));
void *xmalloc (size_t n);
void *xcalloc (size_t n, size_t size);
void *xrealloc (void *p, size_t n);
char *xstrdup (const char *s);
char *xasprintf (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));
/* Open path to write a result (core/io/output.c): a symlink is followed
 * to its target; a regular file (or a new one) is written aside (*tmp, a
 * sibling of the target) and renamed into place on commit, its mode
 * kept; a device, FIFO or socket is written directly (*tmp NULL), as is
 * stdout for "-".  Refused (NULL after pm_error): an empty name, a
 * directory, one of the run's inputs (input_note).  Commit reports a
 * failure with path and drops the file aside; ok false: the caller's
 * writes failed. */
FILE *atomic_open (const char *path, char **tmp);
int atomic_commit (FILE *fp, char *tmp, const char *path, bool ok);
/* Check before a long computation that path can be written: create its
 * file aside (reported if not: -1), kept until atomic_open reuses it or
 * atomic_release removes it. */
int atomic_reserve (const char *path);
void atomic_release (const char *path);
/* 0 if path may be written now (as atomic_open judges it: the inputs
 * read so far included), else -1 after pm_error. */
int output_check (const char *path);
/* path is one of this run's inputs: no output may replace it. */
void input_note (const char *path);
/* 0 if path exists and is no directory; else -1 after one line naming
 * path and what it was to be (e.g. "a model config"). */
int input_file_check (const char *path, const char *what);
/* Names to positions in O(1): the name strings are the caller's and must
 * outlive the index.  Zero-initialised is empty. */
struct name_slot {
  const char *name;
  size_t pos;
};
struct name_index {
  struct name_slot *v;
  size_t cap, n;
};
/* name's slot, or NULL. */
const struct name_slot *name_index_lookup (const struct name_index *x, const char *name);
/* Add name at pos, or move it there. */
void name_index_put (struct name_index *x, const char *name, size_t pos);
void name_index_free (struct name_index *x);
char *xvasprintf (const char *fmt, va_list ap) __attribute__ ((format (printf, 1, 0)));
bool parse_int64 (const char *s, int64_t *out);
bool parse_double (const char *s, double *out);
/* An integer option from min to max into *out; else false after one line
 * naming opt, arg and the range. */
bool parse_int_range (const char *opt, const char *arg, int64_t min, int64_t max, int64_t *out);
/* rc, or EXIT_RUNTIME after one line if stdout could not be written
 * whole (a full disk): what a command printed is its result. */
int stdout_status (int rc);
struct option;
/* getopt_long, but a long option must be spelled whole: a prefix of one
 * ("--mode" for "--model") is an unrecognized option ('?'). */
int pm_getopt_long (int argc, char **argv, const char *shortopts, const struct option *opts);
/* getopt_long's error for the option just read, as one line that says
 * what to try ("perfmod kernel", say): the caller sets opterr to 0 and
 * starts its short options with ':'. */
void getopt_error (int opt, char **argv, const struct option *opts, const char *cmd);
/* Sizes, FLOPs and bytes in int64: false if the exact result does not fit
 * (*out is then unspecified). */
bool ck_mul64 (int64_t a, int64_t b, int64_t *out);
bool ck_add64 (int64_t a, int64_t b, int64_t *out);
/* The ranges of numeric inputs (perfmod(1), LIMITS).  Within them the
 * products the builder and the strategies form fit in int64 or are
 * checked; beyond them no answer would mean anything. */
#define PM_MAX_BATCH ((int64_t) 1 << 31)   /* sequences in a batch */
#define PM_MAX_SEQ ((int64_t) 1 << 31)     /* tokens in a sequence, tokens generated */
#define PM_MAX_DIM ((int64_t) 1 << 40)     /* a model's width, a kernel's dimension */
#define PM_MAX_COUNT ((int64_t) 1 << 16)   /* layers, experts: the builder makes each */
#define PM_MAX_GPUS (1 << 20)              /* nodes, GPUs per node, GPUs in all */
#define PM_MAX_MICROBATCHES (1 << 20)      /* per step: the pipeline schedules each */
#define PM_MAX_EPOCHS 1000000
/* A request's int64 count at byte offset off, from 0 (its default) to max. */
struct field_range {
  const char *name;
  int64_t max;
  size_t off;
};
/* 0 if every field of req is in its range, else -1 after pm_error naming
 * who, the field, its value and the range. */
int fields_in_range (const void *req, const struct field_range *r, size_t n, const char *who);
/* qsort's order of doubles, ascending. */
int cmp_double (const void *a, const void *b);
/* The median of v[0..n), sorting v in place; NAN when n is 0. */
double median_sorting (double *v, size_t n);
/* Index of w among the n words of v, or -1. */
int word_index (const char *w, const char *const *v, size_t n);
char *trim (char *s);
/* Names compared ignoring case and treating ' ', '_' and '-' alike. */
bool name_eq (const char *a, const char *b);
/* Sorted list of regular files in dir ending in suffix (NULL-terminated;
 * free with strv_free).  Dotfiles are skipped.  NULL if dir is missing. */
char **list_dir (const char *dir, const char *suffix);
/* Sorted subdirectories of dir (full paths), as list_dir. */
char **list_subdirs (const char *dir);
void strv_free (char **v);
size_t strv_len (char *const *v);
/* Split s at sep into a NULL-terminated vector of trimmed copies. */
char **strv_split (const char *s, char sep);
/* Append s to the array *v of *n pointers (not a copy): a repeatable
 * option's values, in the order given. */
void ptrv_push (char ***v, size_t *n, char *s);
/* What one input file may hold (perfmod(1), LIMITS): a line (a CSV record,
 * a header line), its bytes once decompressed, its records.  The
 * environment raises them: PERFMOD_MAX_LINE, PERFMOD_MAX_INPUT_BYTES,
 * PERFMOD_MAX_ROWS (a value that is not a positive integer is left out
 * here; the command line refuses it, pm_limits_check). */
struct pm_limits {
  uint64_t line, bytes, rows;
};
void pm_limits (struct pm_limits *l);
/* 0, or -1 after pm_error naming a limit variable that is set but not a
 * positive integer. */
int pm_limits_check (void);
/* getline's line, at most max bytes with its newline: its length; -1 at
 * the end of the file (or on an error); -2 when the line is longer. */
ssize_t getline_max (char **line, size_t *cap, FILE *fp, size_t max);
/* Directories and files seen by device and inode: a walk through links
 * visits each once. */
struct visited {
  struct { uint64_t dev, ino; } *v;
  size_t n, cap;
};
/* true the first time path's file is seen (or when it cannot be stat'ed). */
bool visited_add (struct visited *s, const char *path);
void visited_free (struct visited *s);
/* An INI file read with inih, counting lines so handlers can cite file:line. */
struct ini_file {
  const char *path;
  FILE *fp;
  int line;              /* line just read */
  int section_line;      /* line of the last [section] header */
  int long_line;         /* a line did not fit inih's buffer of this many bytes */
};
typedef int (*ini_file_handler) (void *user, const char *section, const char *name,
                                 const char *value);
/* 0 on success; -1 (reported) if the file cannot be opened or has a syntax error. */
int ini_file_parse (struct ini_file *f, const char *path, ini_file_handler h, void *user);

/* ---- csv.c: RFC 4180 records, plain or gzip-compressed ---- */
struct gzFile_s;
struct csv_reader {
  struct gzFile_s *gz;   /* zlib's gzFile */
  const char *path;
  long line;           /* line where the current record starts */
  long next_line;
  char *buf;
  size_t cap;
  char **fields;
  size_t nfields, fcap;
  int bom;               /* bytes of a UTF-8 BOM read at the start; -1 past it */
  uint64_t bytes;        /* read so far, decompressed */
  int64_t records;
  struct pm_limits lim;
};
/* -1 with errno set if path cannot be opened (EISDIR for a directory). */
int csv_open (struct csv_reader *r, const char *path);
/* 1: a record in r->fields; 0: end of file; -1: malformed (reported). */
int csv_next (struct csv_reader *r);
void csv_close (struct csv_reader *r);
/* s as one quoted RFC 4180 field ("" for each quote) on out. */
void csv_quoted (FILE *out, const char *s);
/* Field col of the current record as an integer >= min ("128.0" too);
 * false after naming file:line, the column and the value. */
bool csv_int (const struct csv_reader *r, size_t col, const char *name, int64_t min,
              int64_t *out);
/* Column index of name in the header record, or -1. */
int csv_column (char **header, size_t n, const char *name);

/* ---- pylit.c: Python literals of NeuSight's traces ---- */
enum pyv_type { PYV_INT, PYV_FLOAT, PYV_STR, PYV_LIST, PYV_NONE };
struct pyv {
  enum pyv_type type;
  int64_t i;
  double f;
  char *s;
  struct pyv *items;
  size_t n;
};
/* Parse text; on error return -1 and set *err to a static message and
 * *errpos to the offending offset. */
int pyv_parse (const char *text, struct pyv *out, const char **err, size_t *errpos);
void pyv_free (struct pyv *v);

/* ---- params.c: parameter files ---- */
#define PARAMS_VERSION 1
struct ptensor {
  char *name;
  size_t rows, cols;
  double *v;             /* rows x cols, row-major */
  bool mapped;           /* v lies in the file's read-only mapping: never write it */
  int line;              /* its line in the file's header, when loaded */
};
struct params {
  char *path;            /* file it was loaded from, if any */
  char **keys, **vals;
  size_t nkv;
  struct ptensor *t;
  size_t nt;
  void *map;             /* the loaded file, mapped, or NULL */
  size_t map_len;
  struct name_index kidx, tidx;  /* keys and tensors by name */
};
void params_init (struct params *p);
void params_free (struct params *p);
const char *params_get (const struct params *p, const char *key);
void params_set (struct params *p, const char *key, const char *fmt, ...)
  __attribute__ ((format (printf, 3, 4)));
const struct ptensor *params_tensor (const struct params *p, const char *name);
/* A tensor that must exist with the given shape (0: any); reported if not. */
const struct ptensor *params_need (const struct params *p, const char *name, size_t rows,
                                   size_t cols);
/* Zeroed storage for a (new or replaced) tensor. */
double *params_add_tensor (struct params *p, const char *name, size_t rows, size_t cols);
int params_save (const struct params *p, const char *path);
int params_load (struct params *p, const char *path);

#endif /* PERFMOD_IO_H */
