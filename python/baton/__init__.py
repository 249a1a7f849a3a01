"""baton: checkpoints that survive eviction, for PyTorch and NumPy training loops.

    import baton.torch, baton.preemption
    ckpt = baton.torch.Checkpoint(model=model, optimizer=opt)
    start = (ckpt.restore() or -1) + 1

Modules: baton.checkpoint (Checkpointer over raw buffers), baton.torch (state dicts),
baton.preemption (SIGUSR1 -> every rank stops at the same step), baton.progress (the
progress note the node agent reads).
"""
from baton._baton import CheckpointError, CheckpointValueError, SupersededError

__all__ = ["CheckpointError", "CheckpointValueError", "SupersededError"]
