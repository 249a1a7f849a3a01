"""baton.checkpoint: libbaton_checkpoint's Checkpointer for Python buffers.

    ckpt = Checkpointer()                        # dir: $BATON_CHECKPOINT_DIR
    ckpt.register("weights", weights)            # numpy array or CPU torch tensor, not copied
    info = ckpt.restore_latest()                 # fills `weights` in place, or None
    ckpt.save_async(step)                        # stalls only for a memory copy
    ckpt.wait()                                  # raises if a background save failed

Registered memory is read by every save and overwritten by restore_latest: keep training on
the very objects you registered (an in-place update is fine; `param.data = new` is not).
Sharded, atomic and verified as FORMAT.md describes; one shard per rank. With
torch.distributed initialized, the ranks agree through a gloo group of the Checkpointer's
own (creating it is collective: every rank creates its Checkpointer in the same order).
Not thread-safe: use it from one thread.
"""
import atexit
import dataclasses
import os
import sys
import weakref
from typing import Dict, List, Optional

from baton import _baton, _collective
from baton._baton import CheckpointError, CheckpointValueError, SupersededError

__all__ = ["Checkpointer", "CheckpointInfo", "CheckpointError", "CheckpointValueError",
           "SupersededError"]


@dataclasses.dataclass(frozen=True)
class CheckpointInfo:
    """A committed checkpoint as its MANIFEST describes it."""
    step: int
    attempt: int
    world_size: int
    time_ms: int
    bytes: int
    metadata: Dict[str, str]

    @staticmethod
    def _from(d):
        meta = {_text(k): _text(v) for k, v in d["metadata"].items()}
        return CheckpointInfo(d["step"], d["attempt"], d["world_size"], d["time_ms"],
                              d["bytes"], meta)


def _text(b):
    return b.decode("utf-8", "surrogateescape")


def _torch():
    return sys.modules.get("torch")


class Checkpointer:
    """One rank's Checkpointer.

    dir: the directory every rank sees; None reads BATON_CHECKPOINT_DIR.
    keep_last: committed checkpoints kept (0: all).
    collective: None picks torch.distributed when it is initialized (a new gloo group over
      `group`'s ranks), else this process alone; "local" forces the latter; or any object
      with rank(), size(), all_reduce_max, all_gather, broadcast (see _collective.py).
    io_threads, io_unit_bytes, direct_io, io_in_place, attempt, progress_file: as
      checkpoint.h's Options (io_in_place: O_DIRECT straight to and from tensors of any
      alignment; half the CPU, slower on disks that split requests at 4 KiB pages).
    log: a callable taking one line (skipped checkpoints, background failures); called from
      the async save's thread too. None writes them to stderr.
    """

    def __init__(self, dir: Optional[str] = None, keep_last: int = 3, *, collective=None,
                 group=None, io_threads: int = 2, io_unit_bytes: int = 4 << 20,
                 direct_io: bool = True, io_in_place: bool = False, attempt: int = -1,
                 progress_file: str = "", log=None):
        if dir is not None and not isinstance(dir, (str, bytes)) and not hasattr(dir, "__fspath__"):
            raise TypeError(f"dir must be a path or None, got {type(dir).__name__}")
        for name, value in (("keep_last", keep_last), ("io_threads", io_threads),
                            ("io_unit_bytes", io_unit_bytes), ("attempt", attempt)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        if dir is None and not os.environ.get("BATON_CHECKPOINT_DIR"):
            raise CheckpointValueError("no checkpoint directory: pass dir= or set "
                                       "BATON_CHECKPOINT_DIR (baton sets it from the job's "
                                       "--checkpoint-dir)")
        if collective is None:
            collective = _collective.for_checkpointer(group)
        elif collective == "local":
            collective = None
        self._device = False
        self._impl = _baton.Checkpointer(
            dir="" if dir is None else str(dir), keep_last=keep_last, io_threads=io_threads,
            io_unit_bytes=io_unit_bytes, direct_io=direct_io, io_in_place=bool(io_in_place),
            attempt=attempt,
            progress_file=progress_file, collective=collective,
            device_memory=_baton.HAVE_CUDA and _cuda_available(), log=log)
        self._collective = collective
        _live.add(self)

    # -- registration ------------------------------------------------------------------

    def register(self, name: str, obj) -> None:
        """Registers `obj`'s memory under `name` without copying it: a numpy array (or any
        writable, C-contiguous buffer) or a contiguous torch tensor (CPU; CUDA where baton was
        built with CUDA). The object is kept alive as long as the Checkpointer."""
        if not isinstance(name, str) or not name:
            raise TypeError("name must be a non-empty str")
        torch = _torch()
        if torch is not None and isinstance(obj, torch.Tensor):
            self._register_tensor(name, obj)
            return
        np = sys.modules.get("numpy")
        if np is not None and isinstance(obj, np.ndarray) and obj.dtype.hasobject:
            raise TypeError(f"buffer '{name}' holds Python objects (dtype {obj.dtype}), "
                            "not plain data")
        try:
            memoryview(obj)
        except TypeError:
            raise TypeError(f"cannot register '{name}': a {type(obj).__name__} is neither a "
                            "torch tensor nor a writable buffer (numpy array, bytearray)") from None
        self._impl.register_buffer(name, obj)

    def _register_tensor(self, name, t):
        if t.layout != _torch().strided or t.is_quantized:
            raise TypeError(f"tensor '{name}' has layout {t.layout}"
                            f"{' (quantized)' if t.is_quantized else ''}: only dense tensors "
                            "can be registered")
        if not t.is_contiguous():
            raise ValueError(f"tensor '{name}' is not contiguous (shape {tuple(t.shape)}, "
                             f"strides {t.stride()}): register a contiguous tensor; "
                             ".contiguous() makes a copy that restore would not fill")
        device = t.device.type
        if device == "cuda":
            if not _baton.HAVE_CUDA:
                raise ValueError(f"tensor '{name}' is on {t.device}, but this build of baton "
                                 "has no CUDA support: move it to the CPU or rebuild with CUDA")
        elif device != "cpu":
            raise ValueError(f"tensor '{name}' is on {t.device}: only CPU and CUDA tensors "
                             "can be registered")
        self._impl.register_pointer(name, t.data_ptr(), t.numel() * t.element_size(), t,
                                    device == "cuda")

    # -- metadata ----------------------------------------------------------------------

    def set_metadata(self, key: str, value: str) -> None:
        """A string saved in the next manifests (rank 0's counts); 1 B..1 KiB keys, values
        up to 64 KiB."""
        self._impl.set_metadata(_bytes(key, "key"), _bytes(value, "value"))

    @property
    def metadata(self) -> Dict[str, str]:
        """The metadata the next save writes; after a restore, the restored checkpoint's."""
        return {_text(k): _text(v) for k, v in self._impl.metadata().items()}

    # -- saving and restoring ----------------------------------------------------------

    def save(self, step: int) -> None:
        """Collective: returns once the checkpoint of `step` is committed on every rank."""
        self._impl.save(_step(step))

    def save_async(self, step: int) -> None:
        """Collective: copies the registered memory to staging and returns; a background
        thread writes and commits. Errors surface from the next wait()/save/save_async."""
        self._impl.save_async(_step(step))

    def wait(self) -> None:
        """Waits for the async save in flight; raises CheckpointError if one failed since the
        last wait()."""
        self._impl.wait()

    def reserve_staging(self) -> None:
        """Allocates the async saves' staging memory now instead of at the first save_async."""
        self._impl.reserve_staging()

    def restore_latest(self) -> Optional[CheckpointInfo]:
        """Collective: fills the registered memory from the newest checkpoint whose shards all
        verify (the same step on every rank); None when there is none."""
        d = self._impl.restore_latest()
        return None if d is None else CheckpointInfo._from(d)

    def list(self) -> List[CheckpointInfo]:
        """Committed checkpoints, newest first (manifests only; no other rank needed)."""
        return [CheckpointInfo._from(d) for d in self._impl.list()]

    @property
    def last_committed_step(self) -> int:
        return self._impl.last_committed_step()

    @property
    def rank(self) -> int:
        return self._impl.rank()

    @property
    def world_size(self) -> int:
        return self._impl.world_size()

    def close(self) -> None:
        """Waits for background work and releases the registered objects. Idempotent."""
        self._impl.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# Background saves still running at exit are joined while the interpreter (and
# torch.distributed, which they may call) is still whole.
_live = weakref.WeakSet()


@atexit.register
def _close_all():
    for ckpt in list(_live):
        ckpt.close()


def _step(step):
    if not isinstance(step, int) or isinstance(step, bool):
        raise TypeError(f"step must be an int, got {type(step).__name__}")
    return step


def _bytes(s, what):
    if isinstance(s, bytes):
        return s
    if not isinstance(s, str):
        raise TypeError(f"metadata {what} must be a str, got {type(s).__name__}")
    return s.encode("utf-8", "surrogateescape")


def _cuda_available():
    torch = _torch()
    return torch is not None and torch.cuda.is_available()
