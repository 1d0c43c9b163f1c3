#!/usr/bin/env python3
"""F1 for PyTorch CPU: Fashion-MNIST end to end with Data/fashion-mnist.yaml's recipe, timed until
the test accuracy reaches --target (evaluation excluded from the time).

    python3 Benchmarks/peers/torch_fashion.py --data /usr/share/datasets/fashion-mnist \
        --init DIR/F1.safetensors --target 0.88 --max-epochs 20 --threads 2 [--autocast]

Idiomatic PyTorch: nn.Sequential, nn.CrossEntropyLoss, optim.SGD(momentum), CosineAnnealingLR
stepped per batch. Batches are drawn by indexing the training tensor with a seeded torch.randperm
each epoch (a DataLoader over a TensorDataset would add per-sample Python overhead that is not the
engine's). With --autocast the forward passes and the loss run under torch.autocast("cpu",
dtype=torch.bfloat16), PyTorch's CPU mixed precision (the products' operands in bf16; weights,
gradients and the momentum float32; backward outside the context), the test accuracy's forward
too; the loss is taken from the logits in float32. Prints one JSON line:
{"peer","version","threads","autocast","reached","epochs","trainSeconds","testAccuracies"}.
"""
import contextlib
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402

PROG = "torch_fashion"


def main():
    args = pc.parse_fashion_args(PROG, __doc__.splitlines()[0], autocast=True)

    import torch
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    from torch_peer import build_model

    def autocast():
        """bf16 autocast with --autocast, else nothing (float32 throughout, as without the flag)."""
        return torch.autocast("cpu", dtype=torch.bfloat16) if args.autocast else contextlib.nullcontext()

    layers, acts, r = pc.load_fashion_init(args.init)
    train_x, train_y, test_x, test_y = pc.load_fashion(args.data)
    train_idx, _ = pc.split_train(len(train_x), r["validation"], r["seed"])
    x = torch.from_numpy(train_x[train_idx])
    y = torch.from_numpy(train_y[train_idx])
    tx = torch.from_numpy(test_x)
    ty = torch.from_numpy(test_y)

    torch.manual_seed(r["seed"])
    model = build_model(torch, layers, acts)
    loss_fn = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=r["lr"], momentum=r["momentum"])
    n = len(x)
    batches = math.ceil(n / r["batch"])
    total_steps = r["epochs"] * batches
    scheduler = (torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=total_steps, eta_min=0.0)
                 if r["schedule"] == "cosine" else None)
    shuffle = torch.Generator().manual_seed(r["seed"])

    train_seconds = 0.0
    accuracies = []
    reached = False
    steps_done = 0
    epoch = 0
    while epoch < args.max_epochs:
        epoch += 1
        model.train()
        start = time.perf_counter()
        order = torch.randperm(n, generator=shuffle)
        for k in range(batches):
            idx = order[k * r["batch"]:(k + 1) * r["batch"]]
            optimizer.zero_grad(set_to_none=True)
            with autocast():  # the forward and the loss; the backward outside, as PyTorch's AMP recipe runs it
                loss = loss_fn(model(x[idx]).float(), y[idx])  # .float(): the loss from bf16 logits in float32
            loss.backward()
            optimizer.step()
            steps_done += 1
            if scheduler is not None and steps_done <= total_steps:  # past its end lr stays 0
                scheduler.step()
        seconds = time.perf_counter() - start
        train_seconds += seconds

        model.eval()
        with torch.no_grad(), autocast():  # the training's arithmetic
            accuracy = (model(tx).argmax(dim=1) == ty).float().mean().item()
        accuracies.append(accuracy)
        if args.verbose:
            print(f"{PROG}: epoch {epoch}: {seconds:.2f} s, last loss {loss.item():.4f}, "
                  f"test accuracy {accuracy:.4f}", file=sys.stderr)
        if not math.isfinite(loss.item()):
            raise pc.PeerError(f"training diverged (loss {loss.item()}) in epoch {epoch}")
        if accuracy >= args.target:
            reached = True
            break

    pc.emit({"peer": "torch", "version": torch.__version__, "threads": args.threads, "autocast": args.autocast,
             "reached": reached, "epochs": epoch, "trainSeconds": train_seconds,
             "testAccuracies": accuracies})


if __name__ == "__main__":
    pc.run(PROG, main)
