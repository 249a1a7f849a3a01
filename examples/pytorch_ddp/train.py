#!/usr/bin/env python3
"""A DistributedDataParallel training loop that survives eviction with baton.

Trains a small MLP on a fixed synthetic regression task: each rank takes its slice of
every global batch, DDP averages the gradients (gloo on CPUs, NCCL on GPUs). Everything is
deterministic (seeded init, data chosen by step number), so an evicted and resumed run
ends with exactly the parameters of an uninterrupted one; the last line printed by rank 0
is `final_hash <sha256 of the parameters>`.

Needs only torchrun-style variables (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
MASTER_PORT), which `baton submit --mode direct` sets, and BATON_CHECKPOINT_DIR (or
--checkpoint-dir). README.md shows what it adds to a plain DDP loop.
"""
import argparse
import hashlib
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import baton.preemption
import baton.torch


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--save-every", type=int, default=50, help="periodic async save interval")
    p.add_argument("--batch", type=int, default=64, help="global batch size")
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--step-ms", type=float, default=0, help="sleep per step (demos, tests)")
    p.add_argument("--checkpoint-dir", default=None, help="default: $BATON_CHECKPOINT_DIR")
    return p.parse_args()


def dataset(seed, n=4096, d_in=32, d_out=8):
    """A fixed regression task: y = tanh(x A) B + noise, the same on every rank."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d_in, generator=g)
    a, b = torch.randn(d_in, 64, generator=g) / 4, torch.randn(64, d_out, generator=g) / 8
    return x, torch.tanh(x @ a) @ b + 0.01 * torch.randn(n, d_out, generator=g)


def batch_for(step, x, y, batch, rank, world):
    """This rank's slice of the global batch of `step`: a function of the step alone."""
    g = torch.Generator().manual_seed(step)
    idx = torch.randperm(x.shape[0], generator=g)[:batch]
    mine = idx[rank * batch // world:(rank + 1) * batch // world]
    return x[mine], y[mine]


def params_hash(model):
    h = hashlib.sha256()
    for name, p in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(p.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def main():
    args = parse_args()
    baton.preemption.install()  # from here on SIGUSR1 means "save and exit 0"
    use_cuda = torch.cuda.is_available()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(device)
        torch.backends.cudnn.deterministic = True
    dist.init_process_group("nccl" if use_cuda else "gloo")  # env://: RANK, WORLD_SIZE, ...
    rank, world = dist.get_rank(), dist.get_world_size()

    torch.manual_seed(args.seed)
    x, y = dataset(args.seed)
    model = torch.nn.Sequential(torch.nn.Linear(x.shape[1], args.hidden), torch.nn.ReLU(),
                                torch.nn.Linear(args.hidden, args.hidden), torch.nn.ReLU(),
                                torch.nn.Linear(args.hidden, y.shape[1])).to(device)
    # find_unused_parameters keeps DDP's first gradient buckets instead of rebuilding them
    # after the first step; a resumed run's first step would otherwise sum in another order
    # and drift in the last bits from an uninterrupted run (with more than 2 ranks).
    ddp = DDP(model, device_ids=[local_rank] if use_cuda else None, find_unused_parameters=True)
    opt = torch.optim.Adam(ddp.parameters(), lr=args.lr)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=100, gamma=0.5)

    ckpt = baton.torch.Checkpoint(model=ddp, optimizer=opt, scheduler=sched,
                                  dir=args.checkpoint_dir)
    restored = ckpt.restore()  # the same step on every rank, or None
    start = 0 if restored is None else restored + 1
    if rank == 0:
        print(f"start at step {start}" + ("" if restored is None else f" (restored {restored})"),
              flush=True)

    for step in range(start, args.steps):
        if baton.preemption.should_stop():  # every rank, same answer: SIGUSR1 anywhere
            if baton.preemption.superseded():
                return 0  # relaunched elsewhere: not ours to save
            ckpt.wait()
            if step > 0:
                ckpt.save(step - 1)  # the state after the last finished step
            print(f"rank {rank}: evicted, saved step {step - 1}", flush=True)
            return 0
        xb, yb = batch_for(step, x, y, args.batch, rank, world)
        loss = torch.nn.functional.mse_loss(ddp(xb.to(device)), yb.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if rank == 0 and step % 10 == 0:
            print(f"step {step} loss {loss.item():.5f}", flush=True)
        if (step + 1) % args.save_every == 0:
            ckpt.save_async(step)  # stalls only for a memory copy
        if args.step_ms:
            time.sleep(args.step_ms / 1000)

    ckpt.wait()
    if rank == 0:
        print(f"final_hash {params_hash(model)}", flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    code = main()
    # Every checkpoint is committed by now. Skip the interpreter's teardown: with torch 1.13
    # it can deadlock destroying DDP's gloo process group while holding the GIL that a gloo
    # worker waits for (pytorch/pytorch#56297), and an evicted rank must exit in its grace.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
