#!/usr/bin/env python3
"""PyTorch CPU peer for Neuron's benchmarks W1–W6, written the idiomatic way: nn.Sequential of
nn.Linear and activation modules, loss.backward(), torch.optim.SGD; float32.

    python3 Benchmarks/peers/torch_peer.py --file DIR/W4.safetensors --warmup N --steps M --threads 2 [--compile]

With --compile the nn.Sequential is wrapped in torch.compile (default inductor backend; forward and
backward compiled, the optimizer step left eager) and the peer reports itself as "torch.compile".

Prints one JSON line: {"peer","version","threads","checkLosses","stepSeconds"}. See README.md.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402  (imports neither numpy nor torch)

PROG = "torch_peer"


def build_model(torch, layers, activations):
    """nn.Sequential from (in, out)-layout weights; nn.Linear keeps (out, in), so the transpose is
    copied. A softmax last layer gives logits: the softmax is inside nn.CrossEntropyLoss."""
    nn = torch.nn
    modules = []
    for (w, b), f in zip(layers, activations):
        linear = nn.Linear(w.shape[0], w.shape[1])
        with torch.no_grad():
            linear.weight.copy_(torch.from_numpy(w.T.copy()))
            linear.bias.copy_(torch.from_numpy(b.copy()))
        modules.append(linear)
        if f == "tanh":
            modules.append(nn.Tanh())
        elif f == "sigmoid":
            modules.append(nn.Sigmoid())
        elif f == "relu":
            modules.append(nn.ReLU())
        # identity: nothing; softmax: fused into the loss
    return nn.Sequential(*modules)


def make_loss(torch, kind, t_np):
    """Returns (loss_fn(output, target), target tensor)."""
    t = torch.from_numpy(t_np.copy())
    if kind == "softmaxCrossEntropy":
        one_hot = bool(((t == 0) | (t == 1)).all()) and bool((t.sum(dim=1) == 1).all())
        # class indices for one-hot rows (equal to -Σ t·log softmax(z), batch mean); other rows
        # are passed as probabilities, which nn.CrossEntropyLoss takes for the same formula.
        target = t.argmax(dim=1) if one_hot else t
        return torch.nn.CrossEntropyLoss(), target

    def half_squared_error(y, target):
        return 0.5 * ((y - target) ** 2).sum(dim=1).mean()
    return half_squared_error, t


def time_torch_steps(torch, args, fresh, forward_loss, check_steps, peer):
    """The check, then the timing, of `zero_grad(set_to_none=True)`, `loss = forward_loss(model)`,
    `loss.backward()`, `optimizer.step()` from `fresh()` models; emits the JSON line."""
    def step(model, optimizer):
        optimizer.zero_grad(set_to_none=True)
        loss = forward_loss(model)
        loss.backward()
        optimizer.step()
        return loss

    # (1) check: check_steps plain SGD steps, loss recorded before each update
    model, optimizer = fresh()
    if any(p.dtype != torch.float32 for p in model.parameters()):
        raise pc.PeerError("the model is not float32")
    check = [step(model, optimizer).item() for _ in range(check_steps)]
    pc.finite(check, "a check loss")

    # (2) timing, from the initial weights again (torch.compile: compiled on the first warm-up step)
    model, optimizer = fresh()
    for _ in range(args.warmup):
        step(model, optimizer)
    clock = time.perf_counter_ns
    seconds = []
    for _ in range(args.steps):
        start = clock()
        step(model, optimizer)
        seconds.append((clock() - start) * 1e-9)
    pc.finite([step(model, optimizer).item()], "the loss after the timed steps")

    pc.emit({"peer": peer, "version": torch.__version__, "threads": args.threads,
             "checkLosses": check, "stepSeconds": seconds})


def main():
    args = pc.parse_step_args(PROG, __doc__.splitlines()[0], compile_flag=True)  # threads pinned first

    import torch
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)

    w = pc.load_workload(args.file)
    x = torch.from_numpy(w["x"].copy())
    if x.dtype != torch.float32:
        raise pc.PeerError("the data is not float32")
    loss_fn, target = make_loss(torch, w["loss"], w["t"])

    def fresh():
        model = build_model(torch, w["layers"], w["activations"])
        if args.compile:
            model = torch.compile(model)
        return model, torch.optim.SGD(model.parameters(), lr=w["lr"])

    time_torch_steps(torch, args, fresh, lambda model: loss_fn(model(x), target), w["check_steps"],
                     "torch.compile" if args.compile else "torch")


if __name__ == "__main__":
    pc.run(PROG, main)
