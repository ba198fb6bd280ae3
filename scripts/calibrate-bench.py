#!/usr/bin/env python3
# calibrate-bench.py: measure GEMMs on this machine's GPU with PyTorch and write them in the shared tables' layout (aiconfigurator's gemm_perf.csv), for perfmod calibrate --data DIR --gpu G.
#
# Usage: python3 scripts/calibrate-bench.py --out DIR [--shapes N] [--dtype bf16,fp8] [--seed S]
#        [--reps R] [--device NAME] [--dry-run]
# Optional: nothing perfmod builds or tests needs it.  Needs PyTorch with a CUDA (or ROCm)
# device; fp8 needs torch._scaled_mm and a GPU with fp8 matrix units.  The shapes are those
# of transformer layers (tokens 1 to 16384 against widths 512 to 32768), drawn by the seed;
# each is timed by CUDA events over R runs after a warm-up, the median written in ms.
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


def main():
    ap = argparse.ArgumentParser(description="Measure GEMMs with PyTorch into gemm_perf.csv "
                                 "for perfmod calibrate.")
    ap.add_argument("--out", required=True, help="folder for gemm_perf.csv")
    ap.add_argument("--shapes", type=int, default=300)
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--device", default=None)
    ap.add_argument("--dry-run", action="store_true")
    a = ap.parse_args()
    if a.shapes < 1 or a.reps < 1:
        sys.exit("calibrate-bench.py: --shapes and --reps take a number of at least 1")
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
    try:
        import torch
    except ImportError:
        sys.exit("calibrate-bench.py: PyTorch is not installed (pip install torch): nothing measured")
    if not torch.cuda.is_available():
        sys.exit("calibrate-bench.py: PyTorch sees no GPU: nothing measured")
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
        for _ in range(3):
            run()
        times = []
        for _ in range(a.reps):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            run()
            e.record()
            torch.cuda.synchronize()
            times.append(s.elapsed_time(e))
        # aiconfigurator's layout: y(m, n) = x(m, k) w(n, k)^T, latency in ms
        rows.append(("pytorch", torch.__version__, name, "gemm", "calibrate-bench",
                     {"bf16": "bfloat16", "fp16": "float16", "fp8": "fp8"}[d], m, n, k,
                     "%.6f" % statistics.median(times)))
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, "gemm_perf.csv")
    with open(path + ".tmp", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["framework", "version", "device", "op_name", "kernel_source", "gemm_dtype",
                    "m", "n", "k", "latency"])
        w.writerows(rows)
    os.replace(path + ".tmp", path)
    print("%s: %d GEMMs measured on %s; now: perfmod calibrate --data %s --gpu GPU --out FILE"
          % (path, len(rows), name, a.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
