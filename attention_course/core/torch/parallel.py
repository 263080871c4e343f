"""Data-parallel training in PyTorch: one process per device, started by ``torchrun``, each training on its share of
every mini-batch and summing the gradients with the others before the optimizer's step (what
``DistributedDataParallel`` does, written out: the weighting makes the step equal to one device's on the whole
mini-batch)::

    torchrun --nproc_per_node 4 tools/chapter8_full.py --size full      # four GPUs of one machine
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist
from torch import nn

from attention_course.core import parallel


def start() -> int:
    """Join the processes ``torchrun`` started (its ``WORLD_SIZE``, ``RANK``, ``LOCAL_RANK``, ``MASTER_ADDR`` and
    ``MASTER_PORT``): NCCL between GPUs, each process on GPU ``LOCAL_RANK``; gloo between CPU processes. Returns
    the number of processes (1, joining nothing, when not started by ``torchrun``)."""
    if parallel.processes() == 1 or dist.is_initialized():
        return parallel.processes()
    if torch.cuda.is_available():
        local = int(os.environ.get("LOCAL_RANK", "0"))
        if local >= torch.cuda.device_count():
            raise RuntimeError(f"process {parallel.rank()} is to use GPU {local}, but this machine has "
                               f"{torch.cuda.device_count()}: start at most that many processes per node")
        torch.cuda.set_device(local)
    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    return dist.get_world_size()


def processes() -> int:
    """How many processes train together (1 unless :func:`start` joined them)."""
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def same_start(model: nn.Module) -> None:
    """Give every process process 0's weights (they start equal whatever each one's random initialisation)."""
    for tensor in model.state_dict().values():
        dist.broadcast(tensor, src=0)


def total(*counts: float) -> torch.Tensor:
    """``counts`` summed over the processes, as one float64 tensor on the CPU (gloo) or this GPU."""
    t = torch.tensor(counts, dtype=torch.float64, device=_device())
    dist.all_reduce(t)
    return t


def sum_gradients(model: nn.Module) -> None:
    """Replace every parameter's gradient with its sum over the processes, in one all-reduce of one flat buffer
    (a parameter that took no gradient here counts as zero)."""
    params = [p for p in model.parameters() if p.requires_grad]
    flat = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in params])
    dist.all_reduce(flat)
    start = 0
    for p in params:
        p.grad = flat[start:start + p.numel()].view_as(p).clone()
        start += p.numel()


def barrier() -> None:
    """Wait until every process gets here (after process 0 wrote a checkpoint the others may read)."""
    if processes() > 1:
        dist.barrier()


def _device() -> torch.device:
    return torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")
