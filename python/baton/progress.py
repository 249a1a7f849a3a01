"""baton.progress: the progress note the node agent reads (FORMAT.md "Progress file"), for
programs that save their checkpoints themselves (torch.save, anything). baton.checkpoint
and baton.torch write it on their own; don't mix both in one job.

    torch.save(state, path); baton.progress.committed(step)   # rank 0, after the save

With it, `baton status` shows the job's last checkpoint and evictions count its lost work;
`saving(step)` before a long save tells the agent a save is under way. Outside baton
(neither BATON_PROGRESS_FILE nor BATON_CHECKPOINT_DIR set) both do nothing and return None.
"""
from typing import Optional

from baton import _baton

__all__ = ["committed", "saving", "failed"]

_last_committed = -1


def committed(step: int, path: str = "") -> Optional[str]:
    """Reports that the checkpoint of `step` is complete. Returns the file written."""
    global _last_committed
    written = _write("committed", step, step, path)
    _last_committed = step
    return written


def saving(step: int, path: str = "") -> Optional[str]:
    """Reports that the save of `step` has started."""
    return _write("saving", step, _last_committed, path)


def failed(step: int, path: str = "") -> Optional[str]:
    """Reports that the save of `step` failed (the last committed step still counts)."""
    return _write("failed", step, _last_committed, path)


def _write(state, step, committed_step, path):
    if not isinstance(step, int) or isinstance(step, bool) or step < 0:
        raise ValueError(f"step must be a non-negative int, got {step!r}")
    return _baton.write_progress(state=state, step=step, committed_step=committed_step,
                                 path=str(path), attempt=-1)
