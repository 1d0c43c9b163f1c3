#!/usr/bin/env python3
"""PyTorch CPU peer for W7 (issue 11): one SGD step of a small CNN, written the idiomatic way —
nn.Sequential of nn.Conv2d, nn.ReLU, nn.MaxPool2d, nn.Flatten and nn.Linear, nn.CrossEntropyLoss,
loss.backward(), torch.optim.SGD; float32, NCHW.

    python3 Benchmarks/peers/torch_cnn.py --file DIR/W7.safetensors --warmup N --steps M --threads 2 [--compile]

The network (our layer indices): 0 conv 3×3 valid + relu, 1 max pool 2, 2 conv 3×3 valid + relu,
3 max pool 2, 4 flatten, 5 dense + relu, 6 dense (softmax fused into the loss); sizes from the
exchange file's tensors (README.md, "W7"). Prints one JSON line:
{"peer","version","threads","checkLosses","stepSeconds"}.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402  (imports neither numpy nor torch)

PROG = "torch_cnn"


def build_cnn(torch, params):
    """nn.Sequential with our checkpoint's tensors (already in PyTorch's layouts). Module
    indices differ from ours (ReLU is a module here), so weights are copied by our names."""
    nn = torch.nn
    w0, w2, w5, w6 = (params[f"layers.{i}.weight"] for i in (0, 2, 5, 6))
    convs = [nn.Conv2d(w0.shape[1], w0.shape[0], 3), nn.Conv2d(w2.shape[1], w2.shape[0], 3)]
    denses = [nn.Linear(w5.shape[1], w5.shape[0]), nn.Linear(w6.shape[1], w6.shape[0])]
    with torch.no_grad():
        for module, i in zip(convs + denses, (0, 2, 5, 6)):
            module.weight.copy_(torch.from_numpy(params[f"layers.{i}.weight"].copy()))
            module.bias.copy_(torch.from_numpy(params[f"layers.{i}.bias"].copy()))
    return nn.Sequential(
        convs[0], nn.ReLU(), nn.MaxPool2d(2),
        convs[1], nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(),
        denses[0], nn.ReLU(),
        denses[1])


def main():
    args = pc.parse_step_args(PROG, __doc__.splitlines()[0], compile_flag=True)

    import torch
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    from torch_peer import time_torch_steps

    w = pc.load_cnn_workload(args.file)
    x = torch.from_numpy(w["x"].copy())
    t = torch.from_numpy(w["t"].copy())
    one_hot = bool(((t == 0) | (t == 1)).all()) and bool((t.sum(dim=1) == 1).all())
    target = t.argmax(dim=1) if one_hot else t    # as torch_peer: indices for one-hot rows
    loss_fn = torch.nn.CrossEntropyLoss()

    def fresh():
        model = build_cnn(torch, w["params"])
        if args.compile:
            model = torch.compile(model)
        return model, torch.optim.SGD(model.parameters(), lr=w["lr"])

    time_torch_steps(torch, args, fresh, lambda model: loss_fn(model(x), target), w["check_steps"],
                     "torch.compile" if args.compile else "torch")


if __name__ == "__main__":
    pc.run(PROG, main)
