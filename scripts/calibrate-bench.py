#!/usr/bin/env python3
# calibrate-bench.py: measure GEMMs (or fused attention, or NCCL collectives) on this machine's GPUs with PyTorch and write them in the shared tables' layout (aiconfigurator's gemm_perf.csv, context_attention_perf.csv and generation_attention_perf.csv, nccl_perf.csv), for perfmod calibrate --data DIR --gpu G.
#
# Usage: python3 scripts/calibrate-bench.py --out DIR [--shapes N] [--dtype bf16,fp8] [--seed S]
#        [--reps R] [--device NAME] [--dry-run]
#        python3 scripts/calibrate-bench.py --attention --out DIR [--shapes N] [--seed S] ...
#        torchrun --nproc-per-node N scripts/calibrate-bench.py --collectives --out DIR
#        [--sizes LO:HI] [--reps R] [--device NAME] [--dry-run [--gpus N]]
# Optional: nothing perfmod builds or tests needs it.  Needs PyTorch with a CUDA (or ROCm)
# device; fp8 needs torch._scaled_mm and a GPU with fp8 matrix units.  The shapes are those
# of transformer layers (tokens 1 to 16384 against widths 512 to 32768), drawn by the seed;
# each is timed by CUDA events over R runs after a warm-up, the median written in ms.
# --attention measures PyTorch's fused attention (scaled_dot_product_attention, bf16): N
# prefills (batch x tokens to 32768, causal) and N decode steps (one token a sequence against
# 128 to 32768 cached ones), 8 to 64 heads of 64 or 128 over 1 to 8 query heads a key/value
# head, drawn by the seed.
# --collectives measures, on the N GPUs torchrun starts (N >= 2; NCCL, fp16), all_reduce,
# all_gather, reduce_scatter and alltoall over the first 2, 4, ... N ranks at 2^LO to 2^HI
# elements (default 8:28, the shared tables' sizes; nccl-tests' size: all_gather's output,
# reduce_scatter's input, alltoall's per-rank buffer), each the median of R runs on each
# rank, the slowest rank's written.
# --dry-run lists the shapes and writes nothing (no GPU needed).  The device column is the
# GPU's name as torch reports it ("NVIDIA H100 80GB HBM3"), which gpus.d resolves; a GPU it
# does not know takes --device NAME, a gpus.d section or alias.
import argparse
import csv
import os
import random
import statistics
import sys


def shapes(n, seed):
    """n (m, n, k) of transformer layers: m tokens, the layer's output n and input k widths."""
    rng = random.Random(seed)
    tokens = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]
    widths = [512, 1024, 1536, 2048, 2560, 3072, 4096, 5120, 6144, 7168, 8192, 10240, 12288,
              14336, 16384, 18432, 24576, 28672, 32768]
    seen, out = set(), []
    while len(out) < n and len(seen) < len(tokens) * len(widths) ** 2:
        s = (rng.choice(tokens), rng.choice(widths), rng.choice(widths))
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out


def attention_plan(n, seed):
    """n prefills and n decode steps (fewer where fewer fit): (kind, batch, tokens (a
    prefill's, or the cached ones a decode step reads), heads, key/value heads, head width),
    drawn by the seed."""
    rng = random.Random(seed)
    heads, groups, dims = [8, 16, 32, 64], [1, 2, 4, 8], [64, 128]
    plan = []
    for kind, lens, batches, most in (("prefill", [128 << i for i in range(8)], [1, 2, 4, 8, 16],
                                       32768),
                                      ("decode", [128 << i for i in range(9)],
                                       [1 << i for i in range(9)], 1 << 21)):
        # at most 2^29 elements a tensor (1 GiB in bf16): a 24 GB GPU holds the three
        fit = sorted({(kind, b, t, h, h // g, d) for b in batches for t in lens for h in heads
                      for g in groups for d in dims if b * t <= most and b * t * h * d <= 1 << 29})
        plan += rng.sample(fit, min(n, len(fit)))
    return plan


COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "alltoall")
# the shared tables' columns (aiconfigurator's gemm_perf and nccl_perf), latency in ms
GEMM_HEADER = ["framework", "version", "device", "op_name", "kernel_source", "gemm_dtype",
               "m", "n", "k", "latency"]
NCCL_HEADER = ["framework", "version", "device", "op_name", "kernel_source", "nccl_dtype",
               "num_gpus", "message_size", "latency"]
# aiconfigurator's context_attention_perf and generation_attention_perf (a decode step reads
# isl + step cached tokens)
CONTEXT_HEADER = ["framework", "version", "device", "op_name", "kernel_source", "batch_size",
                  "isl", "num_heads", "num_key_value_heads", "head_dim", "window_size",
                  "beam_width", "attn_dtype", "kv_cache_dtype", "step", "latency"]
GENERATION_HEADER = ["framework", "version", "device", "op_name", "kernel_source", "batch_size",
                     "isl", "num_heads", "num_key_value_heads", "head_dim", "beam_width",
                     "attn_dtype", "kv_cache_dtype", "step", "latency"]


def attention_row(version, device, kind, b, t, h, kvh, d, ms):
    """A measured prefill or decode step as its table's row."""
    if kind == "prefill":
        return ("pytorch", version, device, "context_attention", "sdpa", b, t, h, kvh, d, 0, 1,
                "bfloat16", "bfloat16", 0, ms)
    return ("pytorch", version, device, "generation_attention", "sdpa", b, t, h, kvh, d, 1,
            "bfloat16", "bfloat16", 0, ms)


def write_attention(out, rows):
    """The prefills' and the decode steps' tables (each whole or not at all)."""
    os.makedirs(out, exist_ok=True)
    for name, header, op in (("context_attention_perf.csv", CONTEXT_HEADER, "context_attention"),
                             ("generation_attention_perf.csv", GENERATION_HEADER,
                              "generation_attention")):
        write_table(os.path.join(out, name), header, [r for r in rows if r[3] == op])


def collective_plan(world, lo, hi):
    """(op, ranks, elements): each collective over the first 2, 4, ... ranks up to world (and
    world itself), at 2^lo to 2^hi fp16 elements rounded down to a multiple of the ranks."""
    groups, g = [], 2
    while g <= world:
        groups.append(g)
        g *= 2
    if world >= 2 and world not in groups:
        groups.append(world)
    return [(op, g, (1 << e) // g * g) for op in COLLECTIVES for g in groups
            for e in range(lo, hi + 1) if (1 << e) >= g]


def write_table(path, header, rows):
    """The table written whole or not at all (a partial run leaves no half-written file)."""
    with open(path + ".tmp", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    os.replace(path + ".tmp", path)


def median_ms(torch, run, reps):
    """The median of reps timed runs of run() after a warm-up, by CUDA events, in ms."""
    for _ in range(3):
        run()
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        run()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


def import_torch():
    try:
        import torch
    except ImportError:
        sys.exit("calibrate-bench.py: PyTorch is not installed (pip install torch): nothing measured")
    if not torch.cuda.is_available():
        sys.exit("calibrate-bench.py: PyTorch sees no GPU: nothing measured")
    return torch


def gemms(a):
    if a.shapes < 1:
        sys.exit("calibrate-bench.py: --shapes takes a number of at least 1")
    dtypes = a.dtype.split(",")
    for d in dtypes:
        if d not in ("bf16", "fp16", "fp8"):
            sys.exit("calibrate-bench.py: --dtype '%s': expected bf16, fp16 or fp8" % d)
    todo = [(d,) + s for d in dtypes for s in shapes(a.shapes, a.seed)]
    if a.dry_run:
        for d, m, n, k in todo:
            print("%s %d %d %d" % (d, m, n, k))
        print("%d GEMMs to measure" % len(todo), file=sys.stderr)
        return 0
    torch = import_torch()
    dev = torch.device("cuda")
    name = a.device or torch.cuda.get_device_name(dev)
    rows = []
    for d, m, n, k in todo:
        if d == "fp8":
            if not hasattr(torch, "_scaled_mm"):
                sys.exit("calibrate-bench.py: this PyTorch has no torch._scaled_mm for fp8")
            x = torch.randn(m, k, device=dev).to(torch.float8_e4m3fn)
            w = torch.randn(n, k, device=dev).to(torch.float8_e4m3fn)
            one = torch.ones((), device=dev)
            run = lambda: torch._scaled_mm(x, w.t(), scale_a=one, scale_b=one,
                                           out_dtype=torch.bfloat16)
        else:
            t = torch.bfloat16 if d == "bf16" else torch.float16
            x = torch.randn(m, k, device=dev, dtype=t)
            w = torch.randn(n, k, device=dev, dtype=t)
            run = lambda: torch.nn.functional.linear(x, w)
        # aiconfigurator's layout: y(m, n) = x(m, k) w(n, k)^T, latency in ms
        rows.append(("pytorch", torch.__version__, name, "gemm", "calibrate-bench",
                     {"bf16": "bfloat16", "fp16": "float16", "fp8": "fp8"}[d], m, n, k,
                     "%.6f" % median_ms(torch, run, a.reps)))
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, "gemm_perf.csv")
    write_table(path, GEMM_HEADER, rows)
    print("%s: %d GEMMs measured on %s; now: perfmod calibrate --data %s --gpu GPU --out FILE"
          % (path, len(rows), name, a.out))
    return 0


def attention(a):
    if a.shapes < 1:
        sys.exit("calibrate-bench.py: --shapes takes a number of at least 1")
    plan = attention_plan(a.shapes, a.seed)
    if a.dry_run:
        for p in plan:
            print("%s %d %d %d %d %d" % p)
        print("%d attention kernels to measure" % len(plan), file=sys.stderr)
        return 0
    torch = import_torch()
    F = torch.nn.functional
    dev = torch.device("cuda")
    name = a.device or torch.cuda.get_device_name(dev)
    bf = torch.bfloat16
    try:                         # grouped key/value heads read in place (PyTorch 2.5 on)
        one = torch.zeros(1, 2, 1, 8, device=dev, dtype=bf)
        F.scaled_dot_product_attention(one, one[:, :1], one[:, :1], enable_gqa=True)
        gqa = True
    except TypeError:
        gqa = False
    try:                         # the fused kernels only: the math backend's scores do not fit
        from torch.nn.attention import SDPBackend, sdpa_kernel
        fused = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]
        if hasattr(SDPBackend, "CUDNN_ATTENTION"):
            fused.append(SDPBackend.CUDNN_ATTENTION)
        only_fused = lambda: sdpa_kernel(fused)
    except ImportError:
        import contextlib
        only_fused = contextlib.nullcontext
    rows, skipped = [], 0
    for kind, b, t, h, kvh, d in plan:
        try:
            q = torch.randn(b, h, t if kind == "prefill" else 1, d, device=dev, dtype=bf)
            k = torch.randn(b, kvh, t, d, device=dev, dtype=bf)
            v = torch.randn(b, kvh, t, d, device=dev, dtype=bf)
            extra, read = {}, kvh
            if kvh < h and gqa:
                extra["enable_gqa"] = True
            elif kvh < h:        # an older PyTorch: every head's keys and values, repeated
                k, v, read = k.repeat_interleave(h // kvh, 1), v.repeat_interleave(h // kvh, 1), h
            causal = kind == "prefill"
            with only_fused():
                run = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, **extra)
                ms = median_ms(torch, run, a.reps)
        except RuntimeError as e:    # torch.cuda.OutOfMemoryError is one
            skipped += 1         # no fused kernel for it, or no room: said, not written
            print("calibrate-bench.py: %s %d %d %d %d %d skipped: %s" % (kind, b, t, h, kvh, d,
                  str(e).splitlines()[0] if str(e) else type(e).__name__), file=sys.stderr)
            continue
        finally:
            q = k = v = None
            torch.cuda.empty_cache()
        rows.append(attention_row(torch.__version__, name, kind, b, t, h, read, d, "%.6f" % ms))
    if not rows:
        sys.exit("calibrate-bench.py: no attention kernel could be measured (%d skipped): "
                 "nothing written" % skipped)
    write_attention(a.out, rows)
    print("%s: %d attention kernels measured on %s%s; now: perfmod calibrate --data %s --gpu GPU "
          "--out FILE" % (a.out, len(rows), name,
                          " (%d skipped, said above)" % skipped if skipped else "", a.out))
    return 0


def collectives(a):
    try:
        lo, hi = (int(v) for v in a.sizes.split(":"))
    except ValueError:
        sys.exit("calibrate-bench.py: --sizes '%s': expected LO:HI, powers of two of the "
                 "elements (8:28)" % a.sizes)
    if not 0 <= lo <= hi <= 32:
        sys.exit("calibrate-bench.py: --sizes '%s': expected 0 <= LO <= HI <= 32" % a.sizes)
    world = a.gpus or int(os.environ.get("WORLD_SIZE", "1"))
    if a.dry_run:
        if world < 2:
            sys.exit("calibrate-bench.py: --collectives --dry-run: --gpus N (N >= 2) or "
                     "torchrun's WORLD_SIZE")
        plan = collective_plan(world, lo, hi)
        for op, g, elems in plan:
            print("%s %d %d" % (op, g, elems))
        print("%d collectives to measure" % len(plan), file=sys.stderr)
        return 0
    if world < 2:
        sys.exit("calibrate-bench.py: --collectives runs under torchrun --nproc-per-node N "
                 "(N >= 2): WORLD_SIZE is %d" % world)
    torch = import_torch()
    import torch.distributed as dist
    rank = int(os.environ.get("RANK", "0"))
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl")
    plan = collective_plan(dist.get_world_size(), lo, hi)
    name = a.device or torch.cuda.get_device_name()
    version = ".".join(str(v) for v in torch.cuda.nccl.version())
    groups = {g: dist.new_group(list(range(g))) for g in sorted({p[1] for p in plan})}
    rows = []
    for op, g, elems in plan:
        if rank < g:
            grp, h = groups[g], torch.float16
            buf = torch.ones(elems, dtype=h, device="cuda")
            part = torch.ones(elems // g, dtype=h, device="cuda")
            other = torch.empty(elems, dtype=h, device="cuda")
            run = {"all_reduce": lambda: dist.all_reduce(buf, group=grp),
                   "all_gather": lambda: dist.all_gather_into_tensor(buf, part, group=grp),
                   "reduce_scatter": lambda: dist.reduce_scatter_tensor(part, buf, group=grp),
                   "alltoall": lambda: dist.all_to_all_single(other, buf, group=grp)}[op]
            ms = torch.tensor([median_ms(torch, run, a.reps)], device="cuda")
            dist.all_reduce(ms, op=dist.ReduceOp.MAX, group=grp)   # the slowest rank's
            if rank == 0:
                rows.append(("pytorch", version, name, op, "NCCL", "half", g, elems,
                             "%.6f" % ms.item()))
        dist.barrier()
    if rank == 0:
        os.makedirs(a.out, exist_ok=True)
        path = os.path.join(a.out, "nccl_perf.csv")
        write_table(path, NCCL_HEADER, rows)
        print("%s: %d collectives measured on %s; now: perfmod calibrate --data %s --gpu GPU "
              "--out FILE" % (path, len(rows), name, a.out))
    dist.destroy_process_group()
    return 0


def main():
    ap = argparse.ArgumentParser(description="Measure GEMMs (or attention, or NCCL collectives) "
                                 "with PyTorch into the shared tables' layout for perfmod "
                                 "calibrate.")
    ap.add_argument("--out", required=True, help="folder for the tables")
    ap.add_argument("--shapes", type=int, default=300)
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--device", default=None)
    ap.add_argument("--attention", action="store_true")
    ap.add_argument("--collectives", action="store_true")
    ap.add_argument("--sizes", default="8:28")
    ap.add_argument("--gpus", type=int, default=0)
    ap.add_argument("--dry-run", action="store_true")
    a = ap.parse_args()
    if a.reps < 1:
        sys.exit("calibrate-bench.py: --reps takes a number of at least 1")
    if a.attention and a.collectives:
        sys.exit("calibrate-bench.py: --attention or --collectives, one at a time")
    return collectives(a) if a.collectives else attention(a) if a.attention else gemms(a)

if __name__ == "__main__":
    sys.exit(main())
