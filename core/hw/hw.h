/* hw.h: the hardware: the GPUs of gpus.d and the collectives between them; included by core/internal.h, in its order. */
#ifndef PERFMOD_HW_H
#define PERFMOD_HW_H

/* Bytes in a GiB: HBM capacities are binary (an "80 GB" H100 holds 80 GiB), and perfmod
 * reports every memory quantity in GiB, the datasheets' unit. */
#define PM_GIB 1073741824.0

/* ---- gpu.c: gpus.d ---- */
struct gpu_entry {
  struct perfmod_gpu gpu;
  char *name;
  char *vendor;
  char **aliases;
  char *source;          /* the section's default source */
  char *file;            /* where the section was (last) defined */
  int line;
  char **src_keys, **src_vals; /* per-key sources */
  size_t nsrc;
};
struct gpu_db {
  struct gpu_entry *v;
  size_t n;
};
int gpu_db_load (struct gpu_db *db, const char *dir);
/* The data directory's gpus.d (pm_datadir). */
int gpu_db_load_data (struct gpu_db *db);
const struct gpu_entry *gpu_db_find (const struct gpu_db *db, const char *name);
const char *gpu_source (const struct gpu_entry *e, const char *key);
void gpu_db_free (struct gpu_db *db);

/* ---- collective.c ---- */
/* The strategy dimensions, in Megatron's placement order (tp innermost). */
enum pdim { DIM_NONE = 0, DIM_TP = 1, DIM_EP = 2, DIM_PP = 3, DIM_DP = 4, DIM_CP = 5 };
#define NDIMS 6
const char *dim_name (int dim);
const char *collective_name (int coll);
/* An NCCL collective's (enum perfmod_collective, all-reduce to send/recv) name as
 * physics.h and the predictors' COMM kernels take it ("all_reduce"), or NULL. */
const char *collective_nccl_name (int coll);
/* A group of `size` ranks `stride` apart: members per node and nodes. */
void group_layout (int size, int64_t stride, int gpus_per_node, int *per_node, int *nodes);
/* Seconds of one collective (enum perfmod_collective) on a buffer of
 * `bytes` over such a group, as NCCL's cost model has it (HUGE_VAL where
 * gpu lacks the bandwidth). */
double collective_seconds (int coll, double bytes, int size, int64_t stride, int gpus_per_node,
                           const struct perfmod_gpu *gpu);
/* Seconds of a serving engine's own all-reduce (gpus.d engine_ar<size>_*)
 * of `bytes` over `size` GPUs of one node; -1 where gpu has none for that
 * size (or size is not 2, 4 or 8). */
double engine_allreduce_seconds (double bytes, int size, const struct perfmod_gpu *gpu);
/* A collective of a strategy dimension's group; with
 * `engine` (a serving engine's inference), a tensor-parallel all-reduce
 * within one node costs the engine's all-reduce where it is the cheaper. */
/* DeepEP's kernel k (op, tokens, width, experts, top_k, SMs, dtype set)
 * over a group of size ranks `stride` apart. */
double group_deepep_seconds (const struct perfmod_kernel *k, int size, int64_t stride,
                             int gpus_per_node, const struct perfmod_gpu *gpu);
double group_collective_seconds (int coll, double bytes, int dim, int size, int64_t stride,
                                 int gpus_per_node, bool engine, const struct perfmod_gpu *gpu);

#endif /* PERFMOD_HW_H */
