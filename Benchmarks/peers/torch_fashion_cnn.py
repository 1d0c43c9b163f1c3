#!/usr/bin/env python3
"""F2 for PyTorch CPU (issue 11): the W7 CNN trained on Fashion-MNIST until the test accuracy
reaches --target, training time only (evaluation excluded).

    python3 Benchmarks/peers/torch_fashion_cnn.py --data /usr/share/datasets/fashion-mnist \
        [--init DIR/F2.safetensors] --target 0.91 --max-epochs 15 --threads 2 [--verbose]

The network is W7's (torch_cnn.build_cnn): conv 32 3×3 valid → relu → max pool 2 → conv 64 3×3
valid → relu → max pool 2 → flatten → dense 1600→128 relu → dense 128→10, softmax cross-entropy.
The recipe (README.md, "F2"): SGD with momentum 0.9 in PyTorch's form, learning rate 0.02 annealed
per batch along a cosine to 0 over `epochs` (12) epochs, batch 64, the last 10% of a seeded
permutation of the training rows held out, reshuffled each epoch from a seeded generator, pixels
/ 255 as (1, 28, 28) images. With --batches (what Benchmarks passes), the training rows and each
epoch's order are Neuron's instead, so both engines see the same batches. --init gives the initial weights (our names, PyTorch layouts, as
W7's exchange file, without x and t) and the recipe in its metadata (learningRate, momentum,
batchSize, epochs, schedule cosine|constant, validationSplit, seed, optimizer sgd|adam); without
it, PyTorch's default initialization seeded by --seed and the recipe above. Prints one JSON line:
{"peer","version","threads","reached","epochs","trainSeconds","testAccuracies","recipe"}.
"""
import argparse
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402

PROG = "torch_fashion_cnn"
RECIPE = {"lr": 0.02, "momentum": 0.9, "batch": 64, "epochs": 12, "schedule": "cosine",
          "validation": 0.1, "seed": 42, "optimizer": "sgd"}


def load_init(path, seed):
    """(params or None, recipe) from an F2 file, or the default recipe."""
    if path is None:
        return None, dict(RECIPE, seed=seed)
    tensors, meta = pc.read_exchange(path)
    params = pc.check_cnn_layers(tensors, path, (1, 28, 28))
    if params["layers.6.bias"].shape[0] != 10:
        raise pc.PeerError(f"{path}: the network must give 10 outputs")
    try:
        recipe = {
            "lr": float(meta.get("learningRate", RECIPE["lr"])),
            "momentum": float(meta.get("momentum", RECIPE["momentum"])),
            "batch": int(meta.get("batchSize", RECIPE["batch"])),
            "epochs": int(meta.get("epochs", RECIPE["epochs"])),
            "schedule": meta.get("schedule", RECIPE["schedule"]),
            "validation": float(meta.get("validationSplit", RECIPE["validation"])),
            "seed": int(meta.get("seed", seed)),
            "optimizer": meta.get("optimizer", RECIPE["optimizer"]),
        }
    except ValueError as e:
        raise pc.PeerError(f"{path}: bad recipe metadata: {e}") from e
    if recipe["schedule"] not in ("cosine", "constant", "none") or recipe["optimizer"] not in ("sgd", "adam"):
        raise pc.PeerError(f"{path}: unsupported schedule {recipe['schedule']!r} or optimizer {recipe['optimizer']!r}")
    return params, recipe


def main():
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist",
                        help="folder with the four Fashion-MNIST IDX .gz files")
    parser.add_argument("--init", help="F2.safetensors: initial layers + recipe (optional)")
    parser.add_argument("--target", type=float, default=0.91, help="test accuracy to reach")
    parser.add_argument("--max-epochs", type=int, default=15)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=42, help="without --init: initialization and shuffling")
    parser.add_argument("--batches", help="shared batches from Benchmarks (JSON): train on these rows in "
                                          "these orders instead of a split and shuffles of our own")
    parser.add_argument("--verbose", action="store_true", help="progress on stderr")
    args = parser.parse_args()
    if args.max_epochs < 1:
        raise pc.PeerError("--max-epochs must be >= 1")
    pc.pin_threads(args.threads)

    import torch
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    from torch_cnn import build_cnn

    params, r = load_init(args.init, args.seed)
    train_x, train_y, test_x, test_y = pc.load_fashion(args.data)
    if args.batches:  # Neuron's training rows and epoch orders, checked against the file's labels
        train_idx, orders = pc.load_batches(args.batches, train_y, r["batch"], args.max_epochs)
    else:
        train_idx, _ = pc.split_train(len(train_x), r["validation"], r["seed"])
        orders = None
    x = torch.from_numpy(train_x[train_idx].reshape(-1, 1, 28, 28).copy())
    y = torch.from_numpy(train_y[train_idx])
    tx = torch.from_numpy(test_x.reshape(-1, 1, 28, 28).copy())
    ty = torch.from_numpy(test_y)

    torch.manual_seed(r["seed"])
    if params is None:   # PyTorch's default initialization, seeded, in W7's shapes
        nn = torch.nn
        modules = [nn.Conv2d(1, 32, 3), nn.Conv2d(32, 64, 3), nn.Linear(1600, 128), nn.Linear(128, 10)]
        params = {}
        for module, i in zip(modules, (0, 2, 5, 6)):
            params[f"layers.{i}.weight"] = module.weight.detach().numpy().copy()
            params[f"layers.{i}.bias"] = module.bias.detach().numpy().copy()
    model = build_cnn(torch, params)
    loss_fn = torch.nn.CrossEntropyLoss()
    if r["optimizer"] == "adam":
        optimizer = torch.optim.Adam(model.parameters(), lr=r["lr"])
    else:
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
        order = torch.from_numpy(orders[epoch - 1]) if orders is not None else torch.randperm(n, generator=shuffle)
        for k in range(batches):
            idx = order[k * r["batch"]:(k + 1) * r["batch"]]
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(x[idx]), y[idx])
            loss.backward()
            optimizer.step()
            steps_done += 1
            if scheduler is not None and steps_done <= total_steps:  # past its end lr stays 0
                scheduler.step()
        seconds = time.perf_counter() - start
        train_seconds += seconds

        model.eval()
        with torch.no_grad():
            correct = sum(int((model(tx[i:i + 1000]).argmax(dim=1) == ty[i:i + 1000]).sum())
                          for i in range(0, len(tx), 1000))
        accuracy = correct / len(tx)
        accuracies.append(accuracy)
        if args.verbose:
            print(f"{PROG}: epoch {epoch}: {seconds:.2f} s, last loss {loss.item():.4f}, "
                  f"test accuracy {accuracy:.4f}", file=sys.stderr)
        if not math.isfinite(loss.item()):
            raise pc.PeerError(f"training diverged (loss {loss.item()}) in epoch {epoch}")
        if accuracy >= args.target:
            reached = True
            break

    pc.emit({"peer": "torch", "version": torch.__version__, "threads": args.threads,
             "reached": reached, "epochs": epoch, "trainSeconds": train_seconds,
             "testAccuracies": accuracies, "recipe": r})


if __name__ == "__main__":
    pc.run(PROG, main)
