/* fuzz-tiles.c: libFuzzer target: a tiles.d of one file (tile_rules_load), its rules applied to real kernel names. */
#include <config.h>

#include <stdlib.h>

#include "internal.h"
#include "fuzz.h"

/* Kernels of NeuSight's tables, one or two per class. */
static const struct {
  int kclass;
  const char *name;
} kernels[] = {
  { PERFMOD_KERNEL_BMM, "volta_sgemm_128x64_nn" },
  { PERFMOD_KERNEL_BMM, "ampere_sgemm_32x128_tn" },
  { PERFMOD_KERNEL_LINEAR, "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas" },
  { PERFMOD_KERNEL_LINEAR, "cutlass_80_tensorop_s1688gemm_256x128_16x3_nn_align4" },
  { PERFMOD_KERNEL_ELEMENTWISE, "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>, at::detail::Array<char*, 3> >(int, at::native::AddFunctor<float>, at::detail::Array<char*, 3>)" },
  { PERFMOD_KERNEL_SOFTMAX, "void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, false, false>(float*, float const*, int, int, int, bool const*, int, bool)" },
  { PERFMOD_KERNEL_LAYERNORM, "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, float const*, float const*, float const*, float*, float*, float*)" },
  { PERFMOD_KERNEL_LINEAR, "" },
};

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  (void) argc; (void) argv;
  fuzz_setup ();
  return 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  struct tile_rules r;
  static const int64_t grid[3] = { 120, 8, 2 };
  char *dir = xasprintf ("%s/tiles.d", fuzz_dir ());
  double tile[2];
  fuzz_file ("tiles.d/10-fuzz.ini", data, size);
  if (tile_rules_load (&r, dir) == 0) {
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++)
      (void) tile_of (&r, kernels[i].kclass, kernels[i].name, 16, 4096, grid, tile);
    tile_rules_free (&r);
  }
  free (dir);
  return 0;
}
