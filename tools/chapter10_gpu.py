r"""Chapter 10's FlashAttention on a GPU: time and memory of attention as the sequence grows, for PyTorch's fused
kernels (the flash backend and the plain "math" backend of ``scaled_dot_product_attention``, bfloat16) and for the
chapter's own code (``flash_attention``, the block loop in plain PyTorch, and Chapter 7's attention that forms the
T × T weights, float32). Writes book/10-modern-attention/results/flash-gpu.json: per T, the median time of a
forward pass over several repetitions, the TFLOP/s it implies (4·B·h·T²·d multiply-adds counted as 2 FLOPs each,
halved for a causal mask), and the memory allocated above the inputs at its peak.

    python tools/chapter10_gpu.py                 # a CUDA GPU; needs PyTorch only
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LENGTHS = (512, 1024, 2048, 4096, 8192, 16384)


def measure(fn, repeats: int) -> tuple[float, int]:
    """(median seconds, peak bytes allocated above what was allocated before) of ``fn()`` on the GPU."""
    import torch

    fn()                                                   # warm-up: kernels chosen, caches filled
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1000)
    return statistics.median(times), torch.cuda.max_memory_allocated() - base


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--max-own", type=int, default=8192, help="longest T for the chapter's own code")
    parser.add_argument("--out", type=Path, default=ROOT / "book/10-modern-attention/results/flash-gpu.json")
    args = parser.parse_args(argv)

    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as sdpa

    from attention_course.ch07_self_attention.torch import scaled_dot_product_attention as explicit
    from attention_course.ch10_modern_attention.torch import flash_attention
    from attention_course.core.machine import in_words

    if not torch.cuda.is_available():
        raise SystemExit("chapter10_gpu.py measures CUDA kernels: no CUDA GPU is visible to PyTorch")
    b, h, d = args.batch, args.heads, args.dim
    rows = []
    for t in LENGTHS:
        gen = torch.Generator(device="cuda").manual_seed(0)
        fp32 = [torch.randn(b, h, t, d, device="cuda", generator=gen) for _ in range(3)]     # q, k, v
        bf16 = [x.to(torch.bfloat16) for x in fp32]
        for causal in (False, True):
            flops = 4 * b * h * t * t * d / (2 if causal else 1)
            fused = partial(sdpa, *bf16, is_causal=causal)
            cases = {"fused, flash backend (bf16)": (SDPBackend.FLASH_ATTENTION, fused),
                     "fused, math backend (bf16)": (SDPBackend.MATH, fused)}
            if t <= args.max_own:
                cases["course flash_attention, block 128 (fp32)"] = (
                    None, partial(flash_attention, *fp32, causal=causal, block=128))
                cases["course explicit attention (fp32)"] = (None, partial(explicit, *fp32, causal=causal))
            for name, (backend, fn) in cases.items():
                try:
                    with torch.no_grad():
                        if backend is None:
                            seconds, peak = measure(fn, args.repeats)
                        else:
                            with sdpa_kernel(backend):
                                seconds, peak = measure(fn, args.repeats)
                except torch.OutOfMemoryError:
                    torch.cuda.empty_cache()
                    rows.append({"T": t, "causal": causal, "kernel": name, "error": "out of memory"})
                    continue
                rows.append({"T": t, "causal": causal, "kernel": name, "seconds": seconds,
                             "tflops": flops / seconds / 1e12, "peak_mb": peak / 2**20})
                print(f"T {t:6d} {'causal' if causal else 'full  '} {name:40s} {seconds * 1e3:9.3f} ms "
                      f"{flops / seconds / 1e12:7.1f} TFLOP/s {peak / 2**20:9.1f} MB", flush=True)
        del fp32, bf16, cases
        torch.cuda.empty_cache()
    results = {"command": "tools/chapter10_gpu.py " + " ".join(argv if argv is not None else sys.argv[1:]),
               "hardware": in_words(), "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
               "python": platform.python_version(), "date": time.strftime("%Y-%m-%d"),
               "shape": {"batch": b, "heads": h, "dim": d}, "repeats": args.repeats, "rows": rows}
    from tools import full_run

    args.out.parent.mkdir(parents=True, exist_ok=True)
    full_run.write(args.out, results)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
