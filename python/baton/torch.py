"""baton.torch: checkpoints of a model, its optimizer, its LR scheduler and extra values.

    ckpt = baton.torch.Checkpoint(model=model, optimizer=opt, scheduler=sched,
                                  extra={"epoch": 0})
    step = ckpt.restore()                       # None when there is no checkpoint
    start = 0 if step is None else step + 1
    ...
    ckpt.extra["epoch"] = epoch
    ckpt.save_async(step)                       # or save(step): blocks until committed

What is saved: the tensors of `model.state_dict()` and `optimizer.state_dict()` (and the
scheduler's, and `extra`'s) as registered buffers of one shard per rank, and everything
else — names, shapes, dtypes, the non-tensor values (learning rates, step counts,
betas) — as JSON in the manifest's metadata (keys `baton.torch.*`).

Model tensors are registered where they live: a save reads the parameters themselves
(save_async copies them to staging and returns), and restore writes into them in place.
A restore fails before touching anything, with StateMismatchError listing every
difference, when names, shapes or dtypes differ from the checkpoint's.

Optimizer state is often created lazily (Adam's exp_avg appears at the first step).
Choice: the state saved is whatever exists at the save; registrations are renewed
whenever the set of tensors, their addresses or shapes change (checked at every save, a
few microseconds per tensor), and a restore allocates the optimizer state the checkpoint
holds and hands it to `optimizer.load_state_dict` (which copies it to the parameters'
devices). So a checkpoint saved before the first step restores an optimizer without state,
as it was. Restore takes the layout from the newest checkpoint; if that one is damaged
and the previous one has another layout (saved before the optimizer had state), restore
raises instead of falling back.

`extra` values are copied at each save into buffers the Checkpoint owns (they are small:
counters, RNG states), so replacing `ckpt.extra["rng"]` with a new tensor every step costs
nothing extra; after a restore read them back from `ckpt.extra`.

DDP: pass the DDP module or the module inside, the same on every rank; every rank writes
its own shard of what it holds (the structure recorded is rank 0's).
"""
import json
from typing import Any, Dict, Optional

import numpy as np
import torch

from baton import _collective, _tree
from baton._baton import CheckpointError, CheckpointValueError
from baton.checkpoint import Checkpointer

__all__ = ["Checkpoint", "StateMismatchError"]

_META_PREFIX = "baton.torch."
_CHUNK = 32 << 10  # metadata values are limited to 64 KiB each


class StateMismatchError(CheckpointValueError):
    """The live model/optimizer does not have the checkpoint's names, shapes or dtypes."""


class Checkpoint:
    """A baton Checkpointer over state dicts. Options (dir, keep_last, io_threads, ...) are
    those of baton.checkpoint.Checkpointer. Creating one is collective when
    torch.distributed is initialized (it makes a gloo group)."""

    def __init__(self, model=None, optimizer=None, scheduler=None,
                 extra: Optional[Dict[str, Any]] = None, *, group=None, **options):
        if isinstance(model, torch.nn.parallel.DistributedDataParallel):
            model = model.module  # same names with or without DDP
        for name, obj, needed in (("model", model, "state_dict"),
                                  ("optimizer", optimizer, "load_state_dict"),
                                  ("scheduler", scheduler, "load_state_dict")):
            if obj is not None and not hasattr(obj, needed):
                raise TypeError(f"{name} must have {needed}(), got {type(obj).__name__}")
        if extra is not None and not isinstance(extra, dict):
            raise TypeError(f"extra must be a dict, got {type(extra).__name__}")
        self.model, self.optimizer, self.scheduler = model, optimizer, scheduler
        self.extra = dict(extra or {})
        collective = options.pop("collective", None)
        self._options = options
        self._collective = (_collective.for_checkpointer(group) if collective is None else
                            None if collective == "local" else collective)
        self._owned = {}  # extra's leaves: name -> the copy we register
        # A Checkpointer whose registrations match _signature. One now, so that bad options
        # fail here and a relaunched attempt raises the directory's fence at once.
        self._impl = self._checkpointer([])
        self._signature = None
        import baton.preemption  # the SIGUSR1 handler, before any signal can come
        baton.preemption.install()

    # -- public ------------------------------------------------------------------------

    def save(self, step: int) -> None:
        """Collective: returns once `step` is committed on every rank."""
        self._sync(step).save(step)

    def save_async(self, step: int) -> None:
        """Collective: copies the state to staging and returns; wait() raises if the
        background write fails."""
        self._sync(step).save_async(step)

    def reserve_staging(self) -> None:
        """Allocates the async saves' staging memory for the current state now, instead of
        at the first save_async."""
        self._sync(0).reserve_staging()

    def wait(self) -> None:
        if self._impl is not None:
            self._impl.wait()

    def list(self):
        """Committed checkpoints, newest first (baton.checkpoint.CheckpointInfo)."""
        return self._checkpointer([]).list()

    def restore(self) -> Optional[int]:
        """Collective: restores the newest checkpoint whose shards all verify and returns its
        step, or None when there is none (nothing is changed then)."""
        self.wait()
        newest = self._newest()
        if newest is None:
            return None
        newest_step, description = newest
        tensors, _ = _tree.decode(description)
        targets = self._restore_targets(tensors, newest_step)
        impl = self._checkpointer(list(zip((e["name"] for e in tensors), targets)))
        try:
            info = impl.restore_latest()
        except CheckpointError as e:
            if getattr(e, "code", "") != "FAILED_PRECONDITION":
                raise
            raise StateMismatchError(
                f"step {newest_step} did not verify, and the checkpoint restore fell back to "
                f"has another set of tensors (saved before the optimizer had state?): {e}. "
                "The live tensors may hold part of the damaged step: remove "
                f"step-{newest_step} and restore into a freshly built model") from e
        if info is None:
            return None
        restored, tree = _tree.decode(_read_description(impl.metadata, info.step))
        if restored != tensors:
            raise StateMismatchError(
                f"step {newest_step} did not verify and step {info.step}, restored instead, "
                "has another set of tensors; restore refuses to mix them: remove the damaged "
                f"step-{newest_step} or restore with the state that step {info.step} had")
        self._apply(_tree.unflatten(tree, targets))
        registered = list(zip((e["name"] for e in tensors), targets))
        self._owned.update((n, t) for n, t in registered if n.startswith("extra."))
        self._replace(impl, _signature(registered))  # no new registrations if unchanged
        return info.step

    def close(self) -> None:
        if self._impl is not None:
            self._impl.close()
            self._impl = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- internals ---------------------------------------------------------------------

    def _newest(self):
        """(step, description) of the newest committed checkpoint as rank 0 sees it, on
        every rank (the others may look before rank 0 even created the directory)."""
        payload = b""
        if self._collective is None or self._collective.rank() == 0:
            infos = self._checkpointer([]).list()
            if infos:
                text = _read_description(infos[0].metadata, infos[0].step)
                payload = json.dumps([infos[0].step, text]).encode()
        if self._collective is not None:
            payload = self._collective.broadcast(payload)
        return tuple(json.loads(payload)) if payload else None

    def _state(self):
        state = {}
        if self.model is not None:
            state["model"] = self.model.state_dict()
        if self.optimizer is not None:
            state["optimizer"] = self.optimizer.state_dict()
        if self.scheduler is not None:
            state["scheduler"] = self.scheduler.state_dict()
        state["extra"] = self.extra
        return state

    def _checkpointer(self, named):
        ckpt = Checkpointer(collective=self._collective or "local", **self._options)
        for name, t in named:
            ckpt.register(name, t)
        return ckpt

    def _replace(self, impl, signature):
        if self._impl is not None and self._impl is not impl:
            self._impl.close()
        self._impl, self._signature = impl, signature

    def _sync(self, step):
        """The Checkpointer for the live state, with its description set as metadata."""
        if not isinstance(step, int) or isinstance(step, bool):
            raise TypeError(f"step must be an int, got {type(step).__name__}")
        skeleton, leaves = _tree.flatten(self._state())
        leaves = [(name, self._own(name, t) if name.startswith("extra.") else t)
                  for name, t in _unique(leaves)]
        signature = _signature(leaves)
        if signature != self._signature:
            self.wait()  # an async save in flight reads the old registrations
            self._replace(self._checkpointer(leaves), signature)
        text = _tree.encode(_tree.describe(leaves), skeleton)
        chunks = [text[i:i + _CHUNK] for i in range(0, len(text), _CHUNK)] or [""]
        self._impl.set_metadata(_META_PREFIX + "chunks", str(len(chunks)))
        for i, chunk in enumerate(chunks):
            self._impl.set_metadata(f"{_META_PREFIX}{i}", chunk)
        return self._impl

    def _own(self, name, value):
        """A copy of one of extra's tensors or arrays in a buffer this Checkpoint keeps."""
        mine = self._owned.get(name)
        if isinstance(value, torch.Tensor):
            value = value.detach()
            if (not isinstance(mine, torch.Tensor) or mine.shape != value.shape or
                    mine.dtype != value.dtype or mine.device != value.device):
                mine = self._owned[name] = torch.empty_like(value, memory_format=torch.contiguous_format)
            mine.copy_(value)
        else:
            if (not isinstance(mine, np.ndarray) or mine.shape != value.shape or
                    mine.dtype != value.dtype):
                mine = self._owned[name] = np.empty(value.shape, dtype=value.dtype)
            np.copyto(mine, value)
        return mine

    def _restore_targets(self, tensors, step):
        """For each tensor of the checkpoint, the live tensor to fill or a new one; raises
        StateMismatchError listing every difference before anything is overwritten."""
        _, leaves = _tree.flatten(self._state())
        live = dict(_unique(leaves))
        targets, problems = [], []
        for entry in tensors:
            name = entry["name"]
            t = live.pop(name, None)
            if t is None or name.startswith("extra."):
                # Lazily created optimizer state and extra values are allocated; a model
                # or scheduler tensor missing from the live state is a different model.
                if not name.startswith(("optimizer.", "extra.")):
                    problems.append(f"{name}: in the checkpoint, not in the live state")
                targets.append(_tree.empty_like_entry(entry))
                continue
            shape, dtype = list(t.shape), _tree.dtype_name(t)
            if shape != entry["shape"] or dtype != entry["dtype"]:
                problems.append(f"{name}: the checkpoint has shape {entry['shape']} "
                                f"{entry['dtype']}, the live tensor {shape} {dtype}")
            targets.append(t)
        problems += [f"{name}: in the live state, not in the checkpoint"
                     for name in live if not name.startswith(("optimizer.", "extra."))]
        if problems:
            shown = problems[:20] + ([f"... and {len(problems) - 20} more"]
                                     if len(problems) > 20 else [])
            raise StateMismatchError(f"cannot restore step {step} into this state: " +
                                     "; ".join(shown))
        return targets

    def _apply(self, state):
        # Model tensors were filled in place; the optimizer and scheduler take their dicts.
        if self.optimizer is not None and "optimizer" in state:
            self.optimizer.load_state_dict(state["optimizer"])
        if self.scheduler is not None and "scheduler" in state:
            self.scheduler.load_state_dict(state["scheduler"])
        self.extra = dict(state.get("extra", {}))


def _unique(leaves):
    """Leaves with names made unique (a str key "0" and an int key 0 would collide)."""
    seen, out = set(), []
    for name, t in leaves:
        unique, i = name, 1
        while unique in seen:
            unique, i = f"{name}#{i}", i + 1
        seen.add(unique)
        out.append((unique, t))
    return out


def _signature(leaves):
    return [(n, _address(t), _nbytes(t), _tree.dtype_name(t), tuple(t.shape)) for n, t in leaves]


def _address(t):
    return t.ctypes.data if isinstance(t, np.ndarray) else t.data_ptr()


def _nbytes(t):
    return t.nbytes if isinstance(t, np.ndarray) else t.numel() * t.element_size()


def _read_description(metadata, step):
    try:
        n = int(metadata[_META_PREFIX + "chunks"])
        return "".join(metadata[f"{_META_PREFIX}{i}"] for i in range(n))
    except (KeyError, ValueError):
        raise StateMismatchError(f"checkpoint step {step} was not written by baton.torch "
                                 "(its manifest has no baton.torch.* metadata)") from None


