"""examples/pytorch_ddp/train.py for real: 2 ranks with torchrun-style env on localhost
(gloo). One rank gets SIGUSR1 between two periodic saves, and after the relaunch again
right after one; each time both ranks stop at the same step, save it and exit 0; the last
relaunch ends with exactly the parameters of an uninterrupted run."""
import os
import re
import signal
import subprocess
import sys
import time

from conftest import free_port, source_dir

SCRIPT = os.path.join(source_dir(), "examples", "pytorch_ddp", "train.py")
FLAGS = ["--steps", "90", "--save-every", "25", "--hidden", "64"]
WORLD = 2


def launch(ckpt_dir, extra_flags=()):
    port = free_port()
    procs = []
    for rank in range(WORLD):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(WORLD), LOCAL_RANK=str(rank),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   BATON_CHECKPOINT_DIR=ckpt_dir, BATON_GRACE_SECONDS="30")
        procs.append(subprocess.Popen([sys.executable, SCRIPT, *FLAGS, *extra_flags], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True))
    return procs


def finish(procs, timeout=120):
    outs = [p.communicate(timeout=timeout)[0] for p in procs]
    for rank, (p, out) in enumerate(zip(procs, outs)):
        assert p.returncode == 0, f"rank {rank} exited {p.returncode}:\n{out}"
    return outs


def final_hash(out):
    m = re.search(r"^final_hash ([0-9a-f]{64})$", out, re.M)
    assert m, out
    return m.group(1)


def evict(ckpt, when):
    """Runs the example until rank 0 prints a line starting with `when`, sends SIGUSR1 to
    rank 1 only, and returns the step both ranks saved (and rank 0's output)."""
    procs = launch(ckpt, ["--step-ms", "30"])
    deadline = time.monotonic() + 60
    lines = []
    for line in procs[0].stdout:  # rank 0 reports every 10 steps
        lines.append(line)
        if line.startswith(when):
            os.kill(procs[1].pid, signal.SIGUSR1)  # only rank 1 hears the agent
            break
        assert time.monotonic() < deadline, "".join(lines)
    outs = finish(procs)
    outs[0] = "".join(lines) + outs[0]
    saved = [re.search(r"evicted, saved step (\d+)", out) for out in outs]
    assert all(saved), outs
    steps = {int(m.group(1)) for m in saved}
    assert len(steps) == 1, outs  # every rank saved the same step
    assert "final_hash" not in outs[0]
    stop = steps.pop()
    assert os.path.exists(os.path.join(ckpt, f"step-{stop}", "MANIFEST"))
    return stop, outs[0]


def test_evicted_run_resumes_to_the_uninterrupted_parameters(tmp_path):
    reference = final_hash(finish(launch(str(tmp_path / "reference")))[0])
    ckpt = str(tmp_path / "ckpt")

    # Between the periodic saves of steps 24 and 49.
    first, _ = evict(ckpt, "step 30 ")
    assert 30 <= first < 49
    assert os.path.exists(os.path.join(ckpt, "step-24", "MANIFEST"))
    # Resumed, then evicted again right after the save_async of step 49 began: the
    # eviction save waits for it and saves its own step.
    second, out = evict(ckpt, "step 50 ")
    assert f"start at step {first + 1} (restored {first})" in out, out
    assert second >= 50 and os.path.exists(os.path.join(ckpt, "step-49", "MANIFEST"))

    outs = finish(launch(ckpt))
    assert f"start at step {second + 1} (restored {second})" in outs[0], outs[0]
    assert final_hash(outs[0]) == reference
