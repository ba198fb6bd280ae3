/* fuzz.h: what the libFuzzer targets share: the entry points, the input as a file, the data of the source tree. */
#ifndef PERFMOD_FUZZ_H
#define PERFMOD_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* libFuzzer's entry points (the targets define them). */
int LLVMFuzzerInitialize (int *argc, char ***argv);
int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

/* Point PERFMOD_DATADIR and PERFMOD_PLUGIN_DIR at the build's source and
 * plugins unless set, and make the scratch directory. */
void fuzz_setup (void);
/* The scratch directory ($TMPDIR or /tmp), removed at exit. */
const char *fuzz_dir (void);
/* data written as NAME in the scratch directory (made with its parents,
 * so "gpus.d/10-fuzz.ini" works); the path is valid until the next call. */
const char *fuzz_file (const char *name, const uint8_t *data, size_t size);
/* data as a NUL-terminated string (up to its first NUL); free it. */
char *fuzz_string (const uint8_t *data, size_t size);

#endif /* PERFMOD_FUZZ_H */
