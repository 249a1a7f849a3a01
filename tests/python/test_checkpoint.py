"""baton.checkpoint and baton.progress: buffers registered without copying, round trips of
every common dtype, damaged shards, async saves, failed writes, errors carrying the
library's message."""
import json
import os
import subprocess
import threading

import numpy as np
import pytest
import torch

import baton
import baton.progress
from baton.checkpoint import Checkpointer

NUMPY_DTYPES = [np.float32, np.float64, np.float16, np.int8, np.int16, np.int32, np.int64,
                np.uint8, np.bool_, np.complex64]
TORCH_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8,
                torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool]


def numpy_value(dtype, seed, n=1001):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(n) * 100).astype(dtype)


def torch_value(dtype, seed, shape=(7, 13)):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype.is_floating_point:
        return (torch.randn(shape, generator=g) * 100).to(dtype)
    return torch.randint(-100 if dtype != torch.uint8 else 0, 100, shape, generator=g).to(dtype)


def test_numpy_round_trip_every_dtype_in_place(tmp_path):
    arrays = {np.dtype(d).name: numpy_value(d, i) for i, d in enumerate(NUMPY_DTYPES)}
    arrays["scalar"] = np.array(3.5)
    arrays["matrix"] = numpy_value(np.float32, 99).reshape(7, 143)
    expected = {k: v.copy() for k, v in arrays.items()}
    with Checkpointer(str(tmp_path)) as ckpt:
        for name, a in arrays.items():
            ckpt.register(name, a)
        ckpt.save(3)
        for a in arrays.values():
            a[...] = 0
        info = ckpt.restore_latest()
    assert info.step == 3 and info.world_size == 1
    for name, a in arrays.items():
        np.testing.assert_array_equal(a, expected[name], err_msg=name)


def torch_round_trip(tmp_path, tensors, step, **options):
    """Saves `tensors`, zeroes them, restores, and checks they came back bit for bit."""
    expected = {k: v.clone() for k, v in tensors.items()}
    with Checkpointer(str(tmp_path), **options) as ckpt:
        for name, t in tensors.items():
            ckpt.register(name, t)
        ckpt.save(step)
        for t in tensors.values():
            t.zero_()
        assert ckpt.restore_latest().step == step
    for name, t in tensors.items():
        assert t.dtype == expected[name].dtype
        assert torch.equal(t, expected[name]), name


@pytest.mark.parametrize("io_in_place", [False, True])
def test_large_tensors_round_trip_with_or_without_io_in_place(tmp_path, io_in_place):
    # Tensors of several MiB whose memory is not page-aligned (a storage offset of 3
    # floats): with io_in_place they are stored at their memory's phase (shard format 2)
    # and read in place; without, they keep format 1 and go through bounce buffers.
    base = torch.randn(3 + (3 << 20))
    tensors = {"offset": base[3:], "other": torch.randn(1 << 20), "small": torch.randn(5)}
    assert tensors["offset"].data_ptr() % 4096 != 0
    torch_round_trip(tmp_path, tensors, 4, io_in_place=io_in_place)
    with open(tmp_path / "step-4" / "rank-0.shard", "rb") as f:
        assert f.read(12)[8] == (2 if io_in_place else 1)


def test_torch_round_trip_every_dtype_in_place(tmp_path):
    tensors = {str(d): torch_value(d, i) for i, d in enumerate(TORCH_DTYPES)}
    tensors["scalar"] = torch.tensor(2.25)
    tensors["empty"] = torch.empty(0, 5)
    tensors["view"] = torch.arange(100.0)[10:30]  # contiguous view with a storage offset
    torch_round_trip(tmp_path, tensors, 1)


def test_registration_refuses_what_restore_could_not_fill(tmp_path):
    with Checkpointer(str(tmp_path)) as ckpt:
        with pytest.raises(ValueError, match="not contiguous"):
            ckpt.register("t", torch.zeros(4, 6).t())
        with pytest.raises(ValueError, match="not contiguous"):
            ckpt.register("a", np.zeros(10)[::2])
        with pytest.raises(TypeError, match="Python objects"):
            ckpt.register("o", np.array([object()] * 3))
        with pytest.raises(TypeError, match="neither a torch tensor nor a writable buffer"):
            ckpt.register("l", [1, 2, 3])
        with pytest.raises(TypeError, match="only dense tensors"):
            ckpt.register("s", torch.zeros(3, 3).to_sparse())
        readonly = np.zeros(8)
        readonly.flags.writeable = False
        with pytest.raises((BufferError, ValueError)):
            ckpt.register("r", readonly)
        with pytest.raises(TypeError, match="step must be an int"):
            ckpt.save(1.5)
        ckpt.register("x", np.zeros(3))
        with pytest.raises(baton.CheckpointError, match="already registered") as e:
            ckpt.register("x", np.zeros(3))
        assert e.value.code == "ALREADY_EXISTS"


def test_library_errors_carry_its_message(tmp_path):
    with pytest.raises(baton.CheckpointValueError, match="keep_last must be >= 0") as e:
        Checkpointer(str(tmp_path), keep_last=-1)
    assert isinstance(e.value, ValueError) and e.value.code == "INVALID_ARGUMENT"
    with pytest.raises(baton.CheckpointValueError, match="no checkpoint directory"):
        Checkpointer()
    with pytest.raises(baton.CheckpointValueError, match="step must be >= 0"):
        Checkpointer(str(tmp_path)).save(-1)


def test_dir_and_attempt_come_from_the_job_env(tmp_path, monkeypatch):
    monkeypatch.setenv("BATON_CHECKPOINT_DIR", str(tmp_path / "job"))
    monkeypatch.setenv("BATON_ATTEMPT", "4")
    a = np.ones(5)
    with Checkpointer() as ckpt:
        ckpt.register("a", a)
        ckpt.save(9)
        assert [(i.step, i.attempt) for i in ckpt.list()] == [(9, 4)]
    assert (tmp_path / "job" / "step-9" / "MANIFEST").exists()
    progress = json.loads((tmp_path / "job" / "PROGRESS").read_text())
    assert progress["state"] == "committed" and progress["committed_step"] == 9
    assert progress["attempt"] == 4
    monkeypatch.setenv("BATON_ATTEMPT", "x")
    with pytest.raises(baton.CheckpointValueError, match="BATON_ATTEMPT='x'"):
        Checkpointer()


def test_damaged_shard_is_skipped_for_the_previous_checkpoint(tmp_path):
    a = np.zeros(300_000, dtype=np.float32)
    lines = []
    with Checkpointer(str(tmp_path), log=lines.append, direct_io=False) as ckpt:
        ckpt.register("a", a)
        a[:] = 1
        ckpt.save(10)
        a[:] = 2
        ckpt.save(20)
        shard = tmp_path / "step-20" / "rank-0.shard"
        with open(shard, "r+b") as f:
            f.seek(8192 + 1000)
            byte = f.read(1)
            f.seek(8192 + 1000)
            f.write(bytes([byte[0] ^ 0xFF]))
        a[:] = 0
        info = ckpt.restore_latest()
    assert info.step == 10
    assert (a == 1).all()
    assert any("skipping" in l and "step-20" in l and "checksum mismatch" in l for l in lines), lines


class BlockingCollective:
    """One rank whose all_gather (inside the save's commit protocol) waits for an event."""

    def __init__(self):
        self.entered = threading.Event()
        self.release = threading.Event()
        self.threads = set()

    def rank(self):
        return 0

    def size(self):
        return 1

    def all_reduce_max(self, v):
        return v

    def all_gather(self, b):
        self.threads.add(threading.get_ident())
        self.entered.set()
        assert self.release.wait(30)
        return [b]

    def broadcast(self, b):
        return b


def test_save_async_returns_before_the_data_is_durable(tmp_path):
    collective = BlockingCollective()
    t = torch.full((1 << 20,), 1.0)
    with Checkpointer(str(tmp_path), collective=collective) as ckpt:
        ckpt.register("t", t)
        ckpt.save_async(5)
        # The background thread is inside the commit protocol; training goes on.
        assert collective.entered.wait(30)
        assert threading.get_ident() not in collective.threads
        assert not (tmp_path / "step-5" / "MANIFEST").exists()
        t.fill_(7.0)  # after save_async returned: not part of step 5
        collective.release.set()
        ckpt.wait()
        assert (tmp_path / "step-5" / "MANIFEST").exists()
        ckpt.restore_latest()
    assert (t == 1.0).all()


def test_wait_raises_when_the_async_write_failed(tmp_path):
    a = np.ones(1000)
    with Checkpointer(str(tmp_path)) as ckpt:
        ckpt.register("a", a)
        ckpt.save(1)
        (tmp_path / "step-2").write_text("a file where the step directory goes")
        ckpt.save_async(2)
        with pytest.raises(baton.CheckpointError, match="step-2"):
            ckpt.wait()
        ckpt.wait()  # the error was reported once
        assert [i.step for i in ckpt.list()] == [1]


@pytest.fixture
def tiny_fs(tmp_path):
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    yield mnt
    subprocess.run(["umount", str(mnt)], check=True)


def test_wait_raises_when_the_disk_is_full(tiny_fs):
    a = np.ones(1 << 20)  # 8 MiB into a 2 MiB filesystem
    with Checkpointer(str(tiny_fs / "ckpt")) as ckpt:
        ckpt.register("a", a)
        ckpt.save_async(1)
        with pytest.raises(baton.CheckpointError, match="(?i)space"):
            ckpt.wait()
        assert ckpt.list() == []


def test_progress_committed_is_one_line_the_agent_parses(tmp_path, monkeypatch):
    assert baton.progress.committed(3) is None  # outside baton: nothing to write
    path = tmp_path / "progress"
    monkeypatch.setenv("BATON_PROGRESS_FILE", str(path))
    monkeypatch.setenv("BATON_ATTEMPT", "2")
    assert baton.progress.saving(41) == str(path)
    saving = json.loads(path.read_text())
    assert saving["state"] == "saving" and saving["step"] == 41
    baton.progress.committed(41)
    text = path.read_text()
    assert text.endswith("\n") and text.count("\n") == 1
    p = json.loads(text)
    assert (p["attempt"], p["state"], p["step"], p["committed_step"]) == (2, "committed", 41, 41)
    assert not os.path.exists(str(path) + ".tmp")
    with pytest.raises(ValueError):
        baton.progress.committed(-1)


def test_a_superseded_attempt_cannot_save(tmp_path):
    a = np.ones(100)
    old = Checkpointer(str(tmp_path), attempt=1)
    old.register("a", a)
    old.save(1)
    new = Checkpointer(str(tmp_path), attempt=2)  # the relaunch raises the fence
    new.register("a", a)
    with pytest.raises(baton.SupersededError, match="superseded by attempt 2") as e:
        old.save(2)
    assert e.value.code == "FAILED_PRECONDITION"
    new.save(2)
    assert [(i.step, i.attempt) for i in new.list()] == [(2, 2), (1, 1)]


class BrokenCollective(BlockingCollective):
    def all_gather(self, b):
        raise ConnectionError("peer 1 went away")


def test_a_collective_failure_fails_the_save_with_its_message(tmp_path):
    a = np.ones(100)
    with Checkpointer(str(tmp_path), collective=BrokenCollective()) as ckpt:
        ckpt.register("a", a)
        with pytest.raises(baton.CheckpointError,
                           match="collective all_gather failed: ConnectionError: peer 1 went away"):
            ckpt.save(1)
        ckpt.save_async(2)  # the same from the background thread
        with pytest.raises(baton.CheckpointError, match="peer 1 went away"):
            ckpt.wait()
        assert ckpt.list() == []
