/* engine.c: the serving engines' schedulers as their sources configure them (vLLM, SGLang, TensorRT-LLM): token budgets, batch limits, chunking, KV pages and memory, CUDA-graph sizes; doc/serving.md cites each default. */
#include <config.h>

#include <string.h>

#include "internal.h"

const char serve_engine_names[] = "vllm, sglang or trtllm";

/* frontend_ms, each engine's: the time to first token beyond the
 * iterations (the HTTP server, tokenizer and detokenizer, the response's
 * way out), the one constant not from a source: chosen on half A of
 * aiconfigurator's measured H100 runs (FNV-1a of id even), by the median
 * |error| of their TTFT, from a grid of 0 to 240 ms (doc/serving.md). */
static const struct serve_engine engines[] = {
  /* vLLM's V1 engine (vllm/v1/core/sched/scheduler.py; the defaults of
   * vllm/engine/arg_utils.py for the OpenAI server): running requests
   * first, then waiting ones, all under one token budget, prompts chunked
   * into it; 16-token pages allocated as tokens are scheduled, the newest
   * running request preempted (recomputed) when none is left. */
  { .id = ENGINE_VLLM, .name = "vllm", .title = "vLLM (V1 engine)",
    .max_tokens = 8192, .max_tokens_small = 2048, .max_seqs = 1024, .max_seqs_small = 256,
    .mixed = true, .chunked = true, .block = 16, .mem_fraction = 0.9,
    .admit = ADMIT_ON_DEMAND, .graph_max = 512, .frontend_ms = 50 },
  /* SGLang (python/sglang/srt/managers/scheduler.py, schedule_policy.py,
   * server_args.py): a prefill batch whenever waiting requests fit, run
   * alone with the decodes paused; its prompts chunked at
   * chunked_prefill_size; admission keeps room for new_token_ratio of the
   * running requests' outputs; one-token pages. */
  { .id = ENGINE_SGLANG, .name = "sglang", .title = "SGLang",
    .max_tokens = 8192, .max_tokens_small = 4096, .prefill_tokens = 16384,
    .mixed = false, .chunked = true, .block = 1, .mem_fraction = 0.85,
    .admit = ADMIT_RATIO, .graph_max = 256, .overlap = true, .new_token_ratio = 0.7,
    .min_token_ratio = 0.098, .frontend_ms = 60 },
  /* TensorRT-LLM's PyTorch executor (tensorrt_llm/_torch/pyexecutor): the
   * capacity scheduler GUARANTEED_NO_EVICT admits a request with pages for
   * its whole prompt and output; context and generation requests share
   * an iteration under max_num_tokens; a prompt is not chunked by
   * default; 32-token pages in 0.9 of the memory left free. */
  { .id = ENGINE_TRTLLM, .name = "trtllm", .title = "TensorRT-LLM (PyTorch backend)",
    .max_tokens = 8192, .max_tokens_small = 8192, .max_seqs = 2048, .max_seqs_small = 2048,
    .mixed = true, .chunked = false, .block = 32, .mem_fraction = 0.9, .fraction_of_free = true,
    .admit = ADMIT_RESERVE, .graph_max = 128, .overlap = true, .frontend_ms = 150 },
};

const struct serve_engine *
serve_engine_find (const char *name)
{
  for (size_t i = 0; i < sizeof engines / sizeof engines[0]; i++)
    if (name_eq (engines[i].name, name))
      return &engines[i];
  if (name_eq (name, "tensorrt-llm") || name_eq (name, "trt-llm"))
    return &engines[ENGINE_TRTLLM];
  return NULL;
}

int64_t
serve_graph_batch (const struct serve_engine *e, int64_t batch)
{
  int64_t b;
  if (batch > e->graph_max)
    return batch;
  switch (e->id) {
  case ENGINE_VLLM:      /* 1, 2, 4, then every 8 (vLLM's cudagraph_capture_sizes) */
    if (batch <= 4)
      return batch == 3 ? 4 : batch;
    return (batch + 7) / 8 * 8;
  case ENGINE_SGLANG:    /* 1, 2, 4, 8, 12, 16, 24, 32, then every 8 (cuda_graph_bs) */
    if (batch <= 2)
      return batch;
    if (batch <= 4)
      return 4;
    if (batch <= 16)
      return (batch + 3) / 4 * 4 < 8 ? 8 : (batch + 3) / 4 * 4;
    return (batch + 7) / 8 * 8;
  case ENGINE_TRTLLM:    /* powers of two (cuda_graph_config with padding) */
  default:
    for (b = 1; b < batch; b *= 2)
      ;
    return b;
  }
}
