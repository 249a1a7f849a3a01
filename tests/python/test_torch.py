"""baton.torch.Checkpoint: model, optimizer (lazily created state), scheduler and extra
values saved as buffers plus a JSON description; restore in place, and clear refusals."""
import json

import numpy as np
import pytest
import torch

import baton
from baton.torch import Checkpoint, StateMismatchError

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8,
          torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool]


class Net(torch.nn.Module):
    def __init__(self, hidden=16):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, hidden)
        self.fc2 = torch.nn.Linear(hidden, 2)
        self.norm = torch.nn.BatchNorm1d(hidden)  # buffers, one of them int64
        for i, d in enumerate(DTYPES):
            self.register_buffer(f"b_{str(d)[6:]}", (torch.arange(12) * (i + 1) % 7).to(d))

    def forward(self, x):
        return self.fc2(torch.relu(self.norm(self.fc1(x))))


def make(seed=0, hidden=16):
    torch.manual_seed(seed)
    model = Net(hidden)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    return model, opt, sched


def train(model, opt, sched, steps, seed=1):
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        x = torch.randn(32, 8, generator=g)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()


def snapshot(model, opt, sched):
    return ({k: v.clone() for k, v in model.state_dict().items()},
            {k: {n: (t.clone() if torch.is_tensor(t) else t) for n, t in s.items()}
             for k, s in opt.state_dict()["state"].items()},
            opt.state_dict()["param_groups"], sched.state_dict())


def assert_same(a, b):
    for k in a[0]:
        assert a[0][k].dtype == b[0][k].dtype and torch.equal(a[0][k], b[0][k]), k
    assert a[1].keys() == b[1].keys()
    for k in a[1]:
        for n in a[1][k]:
            assert torch.equal(a[1][k][n], b[1][k][n]), (k, n)
    assert a[2] == b[2] and a[3] == b[3]


def test_round_trip_restores_model_in_place_and_optimizer_state(tmp_path):
    model, opt, sched = make()
    train(model, opt, sched, 3)
    ckpt = Checkpoint(model, opt, sched, extra={"epoch": 7, "note": "x y", "ids": (1, [2.5]),
                                                "rng": torch.get_rng_state(),
                                                "np": np.arange(5), "inf": float("inf")},
                      dir=str(tmp_path))
    ckpt.save(3)
    saved = snapshot(model, opt, sched)

    model2, opt2, sched2 = make(seed=5)  # other weights, no optimizer state yet
    weight = model2.fc1.weight
    ckpt2 = Checkpoint(model2, opt2, sched2, dir=str(tmp_path))
    assert ckpt2.restore() == 3
    assert model2.fc1.weight is weight  # filled in place
    assert_same(saved, snapshot(model2, opt2, sched2))
    assert ckpt2.extra["epoch"] == 7 and ckpt2.extra["note"] == "x y"
    assert ckpt2.extra["ids"] == (1, [2.5]) and ckpt2.extra["inf"] == float("inf")
    assert torch.equal(ckpt2.extra["rng"], ckpt.extra["rng"])
    np.testing.assert_array_equal(ckpt2.extra["np"], np.arange(5))

    # Training goes on exactly as it would have without the restore.
    train(model, opt, sched, 2, seed=9)
    train(model2, opt2, sched2, 2, seed=9)
    assert_same(snapshot(model, opt, sched), snapshot(model2, opt2, sched2))


def test_manifest_describes_names_shapes_dtypes(tmp_path):
    model, opt, sched = make()
    ckpt = Checkpoint(model, opt, dir=str(tmp_path))
    ckpt.save(0)
    meta = ckpt.list()[0].metadata
    desc = json.loads("".join(meta[f"baton.torch.{i}"]
                              for i in range(int(meta["baton.torch.chunks"]))))
    tensors = {t["name"]: t for t in desc["tensors"]}
    assert tensors["model.fc1.weight"] == {"name": "model.fc1.weight", "shape": [16, 8],
                                           "dtype": "float32"}
    assert tensors["model.b_bfloat16"]["dtype"] == "bfloat16"
    assert not any(n.startswith("optimizer.state") for n in tensors)  # before the first step
    assert '"lr",0.01' in json.dumps(desc["tree"], separators=(",", ":"))


def test_saved_before_the_first_step_restores_an_optimizer_without_state(tmp_path):
    model, opt, sched = make()
    Checkpoint(model, opt, dir=str(tmp_path)).save(0)
    model2, opt2, _ = make(seed=3)
    assert Checkpoint(model2, opt2, dir=str(tmp_path)).restore() == 0
    assert opt2.state_dict()["state"] == {}
    assert torch.equal(model2.fc1.weight, model.fc1.weight)


def test_layout_change_after_first_step_is_picked_up(tmp_path):
    model, opt, sched = make()
    ckpt = Checkpoint(model, opt, dir=str(tmp_path))
    ckpt.save_async(0)
    train(model, opt, sched, 1)  # Adam creates exp_avg, exp_avg_sq, step
    ckpt.save_async(1)
    ckpt.wait()
    model2, opt2, _ = make(seed=3)
    assert Checkpoint(model2, opt2, dir=str(tmp_path)).restore() == 1
    assert torch.equal(opt2.state_dict()["state"][0]["exp_avg"],
                       opt.state_dict()["state"][0]["exp_avg"])


def test_restore_into_another_shape_fails_clearly_and_changes_nothing(tmp_path):
    model, opt, sched = make(hidden=16)
    Checkpoint(model, opt, dir=str(tmp_path)).save(4)
    other, opt2, _ = make(seed=2, hidden=12)
    before = {k: v.clone() for k, v in other.state_dict().items()}
    with pytest.raises(StateMismatchError) as e:
        Checkpoint(other, opt2, dir=str(tmp_path)).restore()
    msg = str(e.value)
    assert "cannot restore step 4" in msg
    assert "model.fc1.weight: the checkpoint has shape [16, 8] float32, " \
           "the live tensor [12, 8] float32" in msg
    assert isinstance(e.value, baton.CheckpointError) and isinstance(e.value, ValueError)
    for k, v in other.state_dict().items():
        assert torch.equal(v, before[k]), k


def test_restore_into_another_dtype_or_names_fails_clearly(tmp_path):
    model, _, _ = make()
    Checkpoint(model, dir=str(tmp_path)).save(1)
    doubled, _, _ = make()
    doubled.double()
    with pytest.raises(StateMismatchError, match=r"model.fc2.bias: .*float32, the live "
                                                 r"tensor \[2\] float64"):
        Checkpoint(doubled, dir=str(tmp_path)).restore()
    renamed, _, _ = make()
    renamed.extra_layer = torch.nn.Linear(2, 2)
    with pytest.raises(StateMismatchError,
                       match="model.extra_layer.weight: in the live state, not in the checkpoint"):
        Checkpoint(renamed, dir=str(tmp_path)).restore()


def test_no_checkpoint_is_none_and_bad_inputs_are_refused(tmp_path):
    model, opt, _ = make()
    assert Checkpoint(model, opt, dir=str(tmp_path)).restore() is None
    with pytest.raises(TypeError, match="model must have state_dict"):
        Checkpoint(model=object(), dir=str(tmp_path))
    with pytest.raises(TypeError, match=r"extra.s: cannot checkpoint a value of type set"):
        Checkpoint(model, extra={"s": {1, 2}}, dir=str(tmp_path)).save(0)
    with pytest.raises(TypeError, match="dict keys must be str or int"):
        Checkpoint(model, extra={"d": {(1, 2): 3}}, dir=str(tmp_path)).save(0)
    nc = torch.nn.Linear(4, 4)
    nc.weight.data = nc.weight.data.t()  # a transposed view: restore could not fill it
    with pytest.raises(ValueError, match="not contiguous"):
        Checkpoint(nc, dir=str(tmp_path)).save(0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU and a CUDA build of "
                    "torch (Debian's python3-torch is CPU-only)")
def test_cuda_tensors_round_trip(tmp_path):
    if not baton._baton.HAVE_CUDA:
        pytest.skip("baton was built without the CUDA toolkit")
    model = torch.nn.Linear(64, 64).cuda()
    opt = torch.optim.Adam(model.parameters())
    model(torch.randn(4, 64, device="cuda")).sum().backward()
    opt.step()
    Checkpoint(model, opt, dir=str(tmp_path)).save(1)
    model2 = torch.nn.Linear(64, 64).cuda()
    opt2 = torch.optim.Adam(model2.parameters())
    assert Checkpoint(model2, opt2, dir=str(tmp_path)).restore() == 1
    assert torch.equal(model.weight, model2.weight)


def test_scheduler_with_functions_in_its_state(tmp_path):
    model, _, _ = make()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=20)
    train(model, opt, sched, 3)
    Checkpoint(model, opt, sched, dir=str(tmp_path)).save(3)
    model2, _, _ = make(seed=4)
    opt2 = torch.optim.SGD(model2.parameters(), lr=0.1, momentum=0.9)
    sched2 = torch.optim.lr_scheduler.OneCycleLR(opt2, max_lr=1.0, total_steps=20)
    assert Checkpoint(model2, opt2, sched2, dir=str(tmp_path)).restore() == 3
    assert sched2.last_epoch == sched.last_epoch and callable(sched2.anneal_func)
    train(model, opt, sched, 2, seed=9)
    train(model2, opt2, sched2, 2, seed=9)
    assert torch.equal(model.fc1.weight, model2.fc1.weight)
    assert sched.get_last_lr() == sched2.get_last_lr()


def damage(shard):
    with open(shard, "r+b") as f:
        f.seek(4096 + 100)
        b = f.read(1)
        f.seek(4096 + 100)
        f.write(bytes([b[0] ^ 1]))


def test_damaged_newest_falls_back_to_the_previous_step(tmp_path):
    model, opt, sched = make()
    train(model, opt, sched, 1)
    ckpt = Checkpoint(model, opt, sched, dir=str(tmp_path), direct_io=False,
                      log=lambda line: None)
    ckpt.save(1)
    at_1 = snapshot(model, opt, sched)
    train(model, opt, sched, 1)
    ckpt.save(2)
    damage(tmp_path / "step-2" / "rank-0.shard")
    model2, opt2, sched2 = make(seed=6)
    lines = []
    assert Checkpoint(model2, opt2, sched2, dir=str(tmp_path), log=lines.append).restore() == 1
    assert_same(at_1, snapshot(model2, opt2, sched2))
    assert any("skipping" in line and "step-2" in line for line in lines), lines


def test_no_fallback_across_a_change_of_layout(tmp_path):
    model, opt, sched = make()
    ckpt = Checkpoint(model, opt, dir=str(tmp_path), log=lambda line: None)
    ckpt.save(0)  # before the first step: no optimizer state
    train(model, opt, sched, 1)
    ckpt.save(1)
    damage(tmp_path / "step-1" / "rank-0.shard")
    model2, opt2, _ = make(seed=6)
    with pytest.raises(StateMismatchError, match="step 1 did not verify.*another set of tensors.*"
                                                 "registered buffers"):
        Checkpoint(model2, opt2, dir=str(tmp_path), log=lambda line: None).restore()


def test_bad_options_fail_at_construction(tmp_path):
    model, _, _ = make()
    with pytest.raises(baton.CheckpointValueError, match="io_threads must be in 1..64"):
        Checkpoint(model, dir=str(tmp_path), io_threads=0)
