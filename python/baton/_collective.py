"""The three operations the checkpoint library needs from the ranks of a job (max-reduce,
all-gather, broadcast from rank 0), over torch.distributed. The C++ library calls these
methods back (with the GIL) from the training thread and from the async save's thread.

A Checkpointer gets a gloo group of its own (`for_checkpointer`): its background thread must
never interleave with the training thread's collectives on the same group, and gloo works
on CPU bytes whatever backend training uses. `should_stop` uses the caller's group as is
(NCCL included), on the training thread.
"""
import torch
import torch.distributed as dist


class TorchCollective:
    def __init__(self, group=None):
        self.group = group
        self._rank = dist.get_rank(group)
        self._size = dist.get_world_size(group)
        backend = dist.get_backend(group)
        if backend == "nccl":
            self.device = torch.device("cuda", torch.cuda.current_device())
        else:
            self.device = torch.device("cpu")

    def rank(self):
        return self._rank

    def size(self):
        return self._size

    def all_reduce_max(self, value):
        t = torch.tensor([value], dtype=torch.int64, device=self.device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=self.group)
        return int(t.item())

    def all_gather(self, value):
        sizes = [torch.zeros(1, dtype=torch.int64, device=self.device) for _ in range(self._size)]
        dist.all_gather(sizes, torch.tensor([len(value)], dtype=torch.int64, device=self.device),
                        group=self.group)
        sizes = [int(s.item()) for s in sizes]
        width = max(max(sizes), 1)
        mine = _to_tensor(value, width, self.device)
        outs = [torch.empty(width, dtype=torch.uint8, device=self.device) for _ in sizes]
        dist.all_gather(outs, mine, group=self.group)
        return [_to_bytes(o, n) for o, n in zip(outs, sizes)]

    def broadcast(self, value):
        root = _global_rank(self.group, 0)
        n = torch.tensor([len(value) if self._rank == 0 else 0], dtype=torch.int64,
                         device=self.device)
        dist.broadcast(n, src=root, group=self.group)
        n = int(n.item())
        buf = (_to_tensor(value, max(n, 1), self.device) if self._rank == 0 else
               torch.empty(max(n, 1), dtype=torch.uint8, device=self.device))
        dist.broadcast(buf, src=root, group=self.group)
        return _to_bytes(buf, n)


def _global_rank(group, rank):
    if group is None or group is dist.group.WORLD:
        return rank
    c10d = dist.distributed_c10d
    get = getattr(c10d, "get_global_rank", None) or c10d._get_global_rank
    return get(group, rank)


def _to_tensor(data, width, device):
    t = torch.zeros(width, dtype=torch.uint8)
    if data:
        t[:len(data)] = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    return t.to(device)


def _to_bytes(t, n):
    return t[:n].cpu().numpy().tobytes()


def for_checkpointer(group=None):
    """A TorchCollective on a new gloo group with the ranks of `group` (default: all), or
    None (this process alone) when torch.distributed is not initialized. Collective: every
    rank of the default group must call it, in the same order as its other new_group calls."""
    if not (dist.is_available() and dist.is_initialized()):
        return None
    ranks = None if group is None else _group_ranks(group)
    gloo = dist.new_group(ranks=ranks, backend="gloo")
    return TorchCollective(gloo)


def _group_ranks(group):
    return [_global_rank(group, r) for r in range(dist.get_world_size(group))]


def for_training(group=None):
    """A TorchCollective on `group` itself (should_stop), or None when torch.distributed is
    not initialized."""
    if not (dist.is_available() and dist.is_initialized()):
        return None
    return TorchCollective(group)
