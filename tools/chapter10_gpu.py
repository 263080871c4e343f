r"""Chapter 10's FlashAttention on a GPU: time and memory of attention as the sequence grows, for PyTorch's fused
kernels (the flash backend and the plain "math" backend of ``scaled_dot_product_attention``, bfloat16) and for the
chapter's own code (``flash_attention``, the block loop in plain PyTorch, and the explicit algorithm that forms the
T × T weights: Chapter 7's attention asked for its weights, float32; without them it would hand over to the fused
kernel). Writes book/10-modern-attention/results/flash-gpu.json: per T, the median time of a forward pass over
several repetitions, the TFLOP/s it implies (4·B·h·T²·d multiply-adds counted as 2 FLOPs each, halved for a causal
mask), and the memory allocated above the inputs at its peak.

    python tools/chapter10_gpu.py                 # a CUDA GPU; needs PyTorch only
    python tools/chapter10_gpu.py --device cpu --lengths 64,128 --block 16 --out /tmp/flash-cpu.json   # a check

On a CPU, which keeps no allocator statistics, the peak is that of the bytes of the tensors a pass creates that are
alive at once (``live_peak``); the test of this script runs it so, at tiny sizes.
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
#: The row of the explicit algorithm: softmax(QKᵀ/√d)V with the T × T weights formed and returned.
EXPLICIT = "course explicit attention (fp32)"


def tiled_name(block: int) -> str:
    """The row of the course's tiled ``flash_attention`` with blocks of ``block`` keys."""
    return f"course flash_attention, block {block} (fp32)"


def live_peak(fn, inputs=()) -> int:
    """The most bytes that the tensors ``fn()`` creates hold at once: each operation's new tensors counted when it
    creates them and freed when the last reference to them goes (a view shares its base's storage and counts once;
    the storages of ``inputs`` never count). What a CPU's allocator would have to hold."""
    import weakref

    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    class Live(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.held = {x.untyped_storage().data_ptr() for x in inputs}
            self.now = self.peak = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            for t in tree_flatten(out)[0]:
                if isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() not in self.held:
                    ptr, size = t.untyped_storage().data_ptr(), t.untyped_storage().nbytes()
                    self.held.add(ptr)
                    self.now += size
                    self.peak = max(self.peak, self.now)
                    weakref.finalize(t, self.free, ptr, size)
            return out

        def free(self, ptr: int, size: int) -> None:
            self.held.discard(ptr)
            self.now -= size

    with torch.no_grad(), Live() as live:
        fn()
    return live.peak


def measure(fn, repeats: int, device: str = "cuda", inputs=()) -> tuple[float, int]:
    """(median seconds, peak bytes allocated above what was allocated before) of ``fn()``: on a GPU, the allocator's
    own peak; on the CPU, ``live_peak`` (``inputs``: the tensors that were there before)."""
    import torch

    fn()                                                   # warm-up: kernels chosen, caches filled
    if device == "cpu":
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return statistics.median(times), live_peak(fn, inputs)
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
    parser.add_argument("--block", type=int, default=128, help="keys per block of the course's flash_attention")
    parser.add_argument("--lengths", default=",".join(map(str, LENGTHS)), help="sequence lengths T, comma-separated")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"),
                        help="cpu: a check of the script itself (no GPU's timings or allocator)")
    parser.add_argument("--out", type=Path, default=ROOT / "book/10-modern-attention/results/flash-gpu.json")
    args = parser.parse_args(argv)

    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as sdpa

    from attention_course.ch07_self_attention.torch import scaled_dot_product_attention as explicit
    from attention_course.ch10_modern_attention.torch import flash_attention
    from attention_course.core.machine import in_words

    device = args.device
    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("chapter10_gpu.py measures CUDA kernels: no CUDA GPU is visible to PyTorch")
    b, h, d = args.batch, args.heads, args.dim
    lengths = [int(t) for t in args.lengths.split(",")]
    rows = []
    for t in lengths:
        gen = torch.Generator(device=device).manual_seed(0)
        fp32 = [torch.randn(b, h, t, d, device=device, generator=gen) for _ in range(3)]     # q, k, v
        bf16 = [x.to(torch.bfloat16) for x in fp32]
        for causal in (False, True):
            flops = 4 * b * h * t * t * d / (2 if causal else 1)
            fused = partial(sdpa, *bf16, is_causal=causal)
            cases = {"fused, flash backend (bf16)": (SDPBackend.FLASH_ATTENTION, fused),
                     "fused, math backend (bf16)": (SDPBackend.MATH, fused)}
            if t <= args.max_own:
                cases[tiled_name(args.block)] = (None, partial(flash_attention, *fp32, causal=causal,
                                                               block=args.block))
                # asked for its weights, Chapter 7's attention forms the T × T matrix; without them it would hand
                # over to the fused kernel, whose memory is the output's
                cases[EXPLICIT] = (None, partial(explicit, *fp32, causal=causal, return_weights=True))
            for name, (backend, fn) in cases.items():
                try:
                    with torch.no_grad():
                        if backend is None:
                            seconds, peak = measure(fn, args.repeats, device, [*fp32, *bf16])
                        else:
                            with sdpa_kernel(backend):
                                seconds, peak = measure(fn, args.repeats, device, [*fp32, *bf16])
                except torch.OutOfMemoryError:
                    torch.cuda.empty_cache()
                    rows.append({"T": t, "causal": causal, "kernel": name, "error": "out of memory"})
                    continue
                except RuntimeError as err:                      # a backend this device lacks (flash on a CPU)
                    if device == "cuda":
                        raise
                    rows.append({"T": t, "causal": causal, "kernel": name, "error": str(err).split("\n")[0]})
                    continue
                rows.append({"T": t, "causal": causal, "kernel": name, "seconds": seconds,
                             "tflops": flops / seconds / 1e12, "peak_mb": peak / 2**20})
                print(f"T {t:6d} {'causal' if causal else 'full  '} {name:40s} {seconds * 1e3:9.3f} ms "
                      f"{flops / seconds / 1e12:7.1f} TFLOP/s {peak / 2**20:9.1f} MB", flush=True)
        del fp32, bf16, cases
        if device == "cuda":
            torch.cuda.empty_cache()
    results = {"command": "tools/chapter10_gpu.py " + " ".join(argv if argv is not None else sys.argv[1:]),
               "hardware": in_words(), "device": device,
               "gpu": torch.cuda.get_device_name() if device == "cuda" else None, "torch": torch.__version__,
               "python": platform.python_version(), "date": time.strftime("%Y-%m-%d"),
               "shape": {"batch": b, "heads": h, "dim": d}, "block": args.block, "repeats": args.repeats,
               "rows": rows}
    from tools import full_run

    args.out.parent.mkdir(parents=True, exist_ok=True)
    full_run.write(args.out, results)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
