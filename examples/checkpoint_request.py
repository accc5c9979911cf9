"""Checkpoint on request under `fulcrum run` (the request-file protocol).

fulcrum creates $FULCRUM_CHECKPOINT_REQUEST_FILE when it wants a checkpoint (on its cadence, and
before a stop for a preemption notice, SIGTERM or the budget). Call `checkpoint_requested()` at a
step boundary; when it returns True, save a complete checkpoint into $FULCRUM_CHECKPOINT_DIR.
With torch.distributed, rank 0 reads the file and every rank gets the same answer, so all ranks
save together. Touching $FULCRUM_READY_FILE (ready()) tells fulcrum that an opted-in checkpoint
signal may now be sent.
"""
import os
from pathlib import Path

import torch
import torch.distributed as dist


def ready():
    path = os.environ.get("FULCRUM_READY_FILE")
    if path:
        Path(path).touch()


def checkpoint_requested():
    path = os.environ.get("FULCRUM_CHECKPOINT_REQUEST_FILE")
    wanted = bool(path) and os.path.exists(path)
    if dist.is_available() and dist.is_initialized():
        device = "cuda" if dist.get_backend() == "nccl" else "cpu"  # NCCL broadcasts GPU tensors
        flag = torch.tensor([1 if wanted else 0], device=device)
        dist.broadcast(flag, src=0)  # rank 0 decides for everyone
        wanted = bool(flag.item())
    if wanted and path and (not dist.is_initialized() or dist.get_rank() == 0):
        Path(path).unlink(missing_ok=True)
    return wanted
