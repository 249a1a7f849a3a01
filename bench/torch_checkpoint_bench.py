#!/usr/bin/env python3
"""torch_checkpoint_bench: baton.torch against torch.save/torch.load and the raw disk, in
the same run, on the same filesystem, interleaved, medians of --reps repetitions.

  save     Checkpoint.save (committed: fsynced, manifest renamed)
             vs the best of  dd bs=16M oflag=direct conv=fsync, and a plain O_DIRECT
                             writer (16 MiB blocks from page-aligned memory, one fsync)
             vs              torch.save(state_dict) to a file, flushed and fsynced
  restore  Checkpoint.restore into the live model, cold (page cache dropped first)
             vs              torch.load of torch.save's file, cold (no load_state_dict:
                             the reference does less than restore)
  stall    Checkpoint.save_async's return time (staging reserved before, untimed)
             vs              one memcpy of the same bytes between pre-faulted buffers

The state is a model of --size-mib MiB (default 1 GiB) of float32 parameters in --tensors
tensors and a plain SGD optimizer (no state of its own, so every figure is about the same
bytes). Needs root for the cache drops (else the reads are marked warm). Ends with one
JSON line (keys in docs/benchmarks.md).

  PYTHONPATH=build/python /usr/bin/python3 bench/torch_checkpoint_bench.py \
      [--dir=/var/tmp] [--size-mib=1024] [--tensors=64] [--reps=3]
"""
import argparse
import json
import mmap
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

import baton.torch

BLOCK = 16 << 20
GIB = float(1 << 30)


def parse_args():
    p = argparse.ArgumentParser(description="baton.torch vs torch.save/load and the disk")
    p.add_argument("--dir", default="/var/tmp")
    p.add_argument("--size-mib", type=int, default=1024)
    p.add_argument("--tensors", type=int, default=64)
    p.add_argument("--reps", type=int, default=3)
    args, _ = p.parse_known_args()  # scripts/bench.sh passes its flags to every benchmark
    return args


def drop_caches():
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def fsync_path(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def dd_write(path, nbytes):
    subprocess.run(["dd", "if=/dev/zero", f"of={path}",
                    f"bs={BLOCK}", f"count={nbytes // BLOCK}", "oflag=direct", "conv=fsync"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def direct_write(path, nbytes, block):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_DIRECT, 0o644)
    try:
        for _ in range(nbytes // BLOCK):
            os.write(fd, block)
        os.fsync(fd)
    finally:
        os.close(fd)


def torch_save(state, path):
    with open(path, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())


class Model(torch.nn.Module):
    def __init__(self, nbytes, count):
        super().__init__()
        per = nbytes // count // 4
        g = torch.Generator().manual_seed(0)
        self.params = torch.nn.ParameterList(
            torch.nn.Parameter(torch.rand(per, generator=g)) for _ in range(count))


def make_state(nbytes, count):
    """A model of nbytes and a plain SGD optimizer: the parameters alone are the state, so
    the sizes compare like for like (Adam would triple them)."""
    model = Model(nbytes, count)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    return model, opt


def run_rep(c, r):
    s, model, ckpt, nbytes = c["samples"], c["model"], c["ckpt"], c["nbytes"]
    paths = c["paths"]
    s["save"].append(nbytes / timed(lambda: ckpt.save(2 * r + 1)) / GIB)
    writers = [("dd write", lambda: dd_write(paths["raw"], nbytes)),
               ("direct write", lambda: direct_write(paths["raw"], nbytes, c["block"])),
               ("torch.save", lambda: torch_save(model.state_dict(), paths["torch"]))]
    for name, fn in writers[r % 3:] + writers[:r % 3]:  # rotate the order per repetition
        s[name].append(nbytes / timed(fn) / GIB)
    os.remove(paths["raw"])
    readers = [("restore", lambda: ckpt.restore()), ("torch.load", lambda: torch.load(paths["torch"]))]
    for name, fn in readers[r % 2:] + readers[:r % 2]:
        c["cold"] &= drop_caches()
        s[name].append(nbytes / timed(fn) / GIB)
    # The stall, steady state: a restore makes a new Checkpointer, so its staging is
    # reserved first (as a program would before its loop); the copy threads run here.
    ckpt.reserve_staging()
    s["stall s"].append(timed(lambda: ckpt.save_async(2 * r + 2)))
    ckpt.wait()
    src, dst = c["memcpy"]
    s["memcpy s"].append(timed(lambda: np.copyto(dst, src)))


def main():
    args = parse_args()
    nbytes = args.size_mib << 20
    if nbytes % BLOCK or (nbytes // 4) % args.tensors:
        sys.exit("--size-mib must be a multiple of 16 and split evenly into --tensors")
    work = tempfile.mkdtemp(prefix="torch-ckpt-bench-", dir=args.dir)
    try:
        model, opt = make_state(nbytes, args.tensors)
        ckpt = baton.torch.Checkpoint(model=model, optimizer=opt, dir=os.path.join(work, "ckpt"),
                                      keep_last=1, collective="local")
        block = mmap.mmap(-1, BLOCK)  # page-aligned, as O_DIRECT needs
        block.write(os.urandom(BLOCK))
        src = np.random.default_rng(0).random(nbytes // 8)
        dst = np.ones_like(src)  # pre-faulted
        c = {"samples": {k: [] for k in ("save", "dd write", "direct write", "torch.save",
                                         "restore", "torch.load", "stall s", "memcpy s")},
             "model": model, "ckpt": ckpt, "nbytes": nbytes, "block": block,
             "memcpy": (src, dst), "cold": True,
             "paths": {"raw": os.path.join(work, "raw"), "torch": os.path.join(work, "state.pt")}}
        ckpt.reserve_staging()  # as a training program would before its loop
        for r in range(args.reps):
            run_rep(c, r)
            print(f"rep {r}: " + ", ".join(f"{k} {v[-1]:.3f}" for k, v in c["samples"].items()),
                  file=sys.stderr, flush=True)
        report(c["samples"], nbytes, args, c["cold"])
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(s, nbytes, args, cold):
    med = {k: statistics.median(v) for k, v in s.items()}
    raw = max(med["dd write"], med["direct write"])
    temp = "cold" if cold else "WARM (no root: caches not dropped)"
    print(f"state {nbytes / GIB:.2f} GiB in {args.tensors} tensors, {args.reps} reps, "
          f"dir {args.dir}, reads {temp}")
    for k in ("save", "dd write", "direct write", "torch.save", "restore", "torch.load"):
        print(f"  {k:13s} {med[k]:.3f} GiB/s")
    print(f"  save_async stall {med['stall s'] * 1e3:.1f} ms, memcpy {med['memcpy s'] * 1e3:.1f} ms")
    figures = {
        "py_save_vs_raw_write": round(med["save"] / raw, 3),
        "py_save_vs_torch_save": round(med["save"] / med["torch.save"], 3),
        "py_restore_vs_torch_load": round(med["restore"] / med["torch.load"], 3),
        "py_async_stall_vs_memcpy": round(med["stall s"] / med["memcpy s"], 3),
        "py_save_gib_s": round(med["save"], 3),
        "py_raw_write_gib_s": round(raw, 3),
        "torch_save_gib_s": round(med["torch.save"], 3),
        "py_restore_gib_s": round(med["restore"], 3),
        "torch_load_gib_s": round(med["torch.load"], 3),
        "state_gib": round(nbytes / GIB, 3),
        "cold": cold,
    }
    print(json.dumps(figures, separators=(",", ":")))


if __name__ == "__main__":
    main()
