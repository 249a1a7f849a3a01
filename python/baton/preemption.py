"""baton.preemption: SIGUSR1 (the node agent's "checkpoint and exit") turned into one step
that every rank agrees to stop at.

    baton.preemption.install()                 # at start: SIGUSR1 no longer kills the process
    for step in range(start, steps):
        if baton.preemption.should_stop():     # collective: same answer on every rank
            ckpt.save(step - 1); sys.exit(0)   # the state after the last finished step
        train_step(step)

The handler is libbaton_checkpoint's PreemptionWatcher (async-signal-safe; Python's own
signal module would only run a handler between bytecodes of the main thread). Agreement is
an all-reduce MAX of a flag over torch.distributed (the default group unless `group` is
given; NCCL or gloo), so a rank that got the signal and one that did not stop together. The
watcher also stops an attempt the coordinator has replaced (FORMAT.md "Fence"):
`superseded()` then says not to save.
"""
import signal as _signal
from typing import Optional

from baton import _baton, _collective

__all__ = ["install", "should_stop", "stop_requested", "request_stop", "superseded",
           "remaining_seconds"]

_watcher = None
_collectives = {}


def install(grace_seconds: int = -1, fence_dir: str = "", attempt: int = -1) -> None:
    """Installs the SIGUSR1 handler (once per process; later calls do nothing). Call it early:
    until then SIGUSR1 terminates the process. grace_seconds -1 reads BATON_GRACE_SECONDS;
    fence_dir "" reads BATON_CHECKPOINT_DIR; attempt -1 reads BATON_ATTEMPT."""
    global _watcher
    if _watcher is None:
        _watcher = _baton.PreemptionWatcher(signal=int(_signal.SIGUSR1),
                                            grace_seconds=grace_seconds, fence_dir=fence_dir,
                                            attempt=attempt, fence_poll_ms=1000)


def should_stop(group=None) -> bool:
    """Collective over `group` (default: all ranks; call it at the same step boundary on
    every rank): True on every rank when any rank was asked to stop. Without
    torch.distributed, this process's own answer."""
    install()
    key = id(group)
    if key not in _collectives:
        _collectives[key] = (group, _collective.for_training(group))
    return _watcher.should_stop(_collectives[key][1])


def stop_requested() -> bool:
    """Whether this process got SIGUSR1 (or request_stop); no communication."""
    install()
    return _watcher.stop_requested()


def request_stop() -> None:
    """As if SIGUSR1 arrived now (a program's own reason to stop; tests)."""
    install()
    _watcher.request_stop()


def superseded() -> bool:
    """Whether should_stop found that a newer attempt owns the checkpoint directory: then
    exit without saving (the save would fail with SupersededError)."""
    return _watcher is not None and _watcher.superseded_by() > 0


def remaining_seconds() -> Optional[float]:
    """Seconds left of the grace period since this rank's signal; None before any signal or
    without a grace period."""
    ms = None if _watcher is None else _watcher.remaining_ms()
    return None if ms is None else ms / 1000.0
