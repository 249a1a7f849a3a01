"""baton.preemption.should_stop over torch.distributed: only one rank gets SIGUSR1, every
rank stops at the same step and saves it; the progress note reaches the agent's file."""
import json
import os
import signal
import time

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import baton.preemption
from conftest import free_port

WORLD = 3
SIGNALLED_RANK = 1
SIGNAL_AT = 6


def worker(rank, port, ckpt_dir, out_dir):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                      BATON_CHECKPOINT_DIR=ckpt_dir,
                      BATON_PROGRESS_FILE=os.path.join(out_dir, "PROGRESS"))
    import baton.torch
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    model = torch.nn.Linear(4, 4)
    ckpt = baton.torch.Checkpoint(model=model, extra={"rank": rank})
    stopped = None
    for step in range(1000):
        if baton.preemption.should_stop():
            ckpt.save(step - 1)
            stopped = step - 1
            break
        with torch.no_grad():
            model.weight.add_(1.0)
        if rank == SIGNALLED_RANK and step == SIGNAL_AT:
            os.kill(os.getpid(), signal.SIGUSR1)  # only this rank hears the agent
        # The other ranks may run ahead by at most one step boundary.
    with open(os.path.join(out_dir, f"rank-{rank}.json"), "w") as f:
        json.dump({"stopped": stopped, "got_signal": baton.preemption.stop_requested(),
                   "weight": model.weight[0, 0].item()}, f)
    dist.destroy_process_group()


def test_one_signalled_rank_stops_every_rank_at_the_same_step(tmp_path):
    ckpt_dir, out_dir = str(tmp_path / "ckpt"), str(tmp_path)
    mp.start_processes(worker, args=(free_port(), ckpt_dir, out_dir), nprocs=WORLD,
                       join=True, start_method="fork")
    results = [json.loads((tmp_path / f"rank-{r}.json").read_text()) for r in range(WORLD)]
    assert [r["got_signal"] for r in results] == [r == SIGNALLED_RANK for r in range(WORLD)]
    # The signal came during step SIGNAL_AT; the next boundary is where all agree to stop.
    assert [r["stopped"] for r in results] == [SIGNAL_AT] * WORLD
    assert len({r["weight"] for r in results}) == 1
    manifest = (tmp_path / "ckpt" / f"step-{SIGNAL_AT}" / "MANIFEST").read_text()
    assert f"world_size {WORLD}" in manifest
    progress = json.loads((tmp_path / "PROGRESS").read_text())
    assert progress["state"] == "committed" and progress["committed_step"] == SIGNAL_AT


def test_single_process_should_stop_and_grace(monkeypatch):
    monkeypatch.setenv("BATON_GRACE_SECONDS", "2m")
    pid = os.fork()
    if pid == 0:  # a fresh process: one watcher per process
        code = 1
        try:
            baton.preemption.install()
            before = baton.preemption.should_stop()
            os.kill(os.getpid(), signal.SIGUSR1)  # would kill us without the handler
            left = baton.preemption.remaining_seconds()
            code = 0 if (not before and baton.preemption.should_stop() and
                         110 < left <= 120 and not baton.preemption.superseded()) else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status


@pytest.mark.skipif(not (torch.cuda.is_available() and dist.is_nccl_available()),
                    reason="NCCL needs GPUs and a CUDA build of torch (Debian's is CPU-only)")
def test_should_stop_over_nccl(tmp_path):
    if torch.cuda.device_count() < 2:
        pytest.skip("needs 2 GPUs")
    mp.start_processes(nccl_worker, args=(free_port(), str(tmp_path)), nprocs=2, join=True,
                       start_method="spawn")
    assert sorted(os.listdir(tmp_path)) == ["stop-0", "stop-1"]


def nccl_worker(rank, port, out_dir):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=2)
    for step in range(100):
        if baton.preemption.should_stop():
            open(os.path.join(out_dir, f"stop-{rank}"), "w").write(str(step))
            break
        if rank == 0 and step == 3:
            baton.preemption.request_stop()
    dist.destroy_process_group()


def test_a_superseded_attempt_is_told_to_stop_without_saving(tmp_path):
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            from baton.checkpoint import Checkpointer
            baton.preemption.install(fence_dir=str(tmp_path), attempt=1)
            first = baton.preemption.should_stop()
            Checkpointer(str(tmp_path), attempt=2).close()  # the relaunch starts elsewhere
            deadline = time.monotonic() + 10  # the fence is read at most once a second
            while not baton.preemption.should_stop() and time.monotonic() < deadline:
                time.sleep(0.05)
            code = 0 if not first and baton.preemption.superseded() else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
