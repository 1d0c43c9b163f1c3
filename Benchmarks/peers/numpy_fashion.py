#!/usr/bin/env python3
"""F1 for NumPy: Fashion-MNIST end to end with Data/fashion-mnist.yaml's recipe, forward and
backward written out (numpy_mlp.py), timed until the test accuracy reaches --target (evaluation
excluded from the time).

    python3 Benchmarks/peers/numpy_fashion.py --data /usr/share/datasets/fashion-mnist \
        --init DIR/F1.safetensors --target 0.88 --max-epochs 20 --threads 2

SGD with momentum in PyTorch's form (v = mu*v + g, v starting at g; p -= lr*v), learning rate
annealed per step along a cosine from lr to 0 over epochs x batches-per-epoch steps, batches from a
seeded permutation each epoch. Prints one JSON line:
{"peer","version","threads","reached","epochs","trainSeconds","testAccuracies"}.
"""
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402

PROG = "numpy_fashion"


def main():
    args = pc.parse_fashion_args(PROG, __doc__.splitlines()[0])  # threads pinned before the library is imported

    import numpy as np
    from numpy_mlp import MLP

    layers, acts, r = pc.load_fashion_init(args.init)
    train_x, train_y, test_x, test_y = pc.load_fashion(args.data)
    train_idx, _ = pc.split_train(len(train_x), r["validation"], r["seed"])
    x = np.ascontiguousarray(train_x[train_idx])
    one_hot = np.eye(10, dtype=np.float32)[train_y[train_idx]]

    net = MLP(layers, acts, "softmaxCrossEntropy")
    n = len(x)
    batches = math.ceil(n / r["batch"])
    total_steps = r["epochs"] * batches
    shuffle = np.random.default_rng(r["seed"])

    def lr_at(step):
        if r["schedule"] != "cosine":
            return r["lr"]
        return 0.5 * r["lr"] * (1.0 + math.cos(math.pi * min(step, total_steps) / total_steps))

    train_seconds = 0.0
    accuracies = []
    reached = False
    step = 0
    epoch = 0
    while epoch < args.max_epochs:
        epoch += 1
        start = time.perf_counter()
        order = shuffle.permutation(n)
        for k in range(batches):
            idx = order[k * r["batch"]:(k + 1) * r["batch"]]
            loss = net.momentum_step(x[idx], one_hot[idx], lr_at(step), r["momentum"])
            step += 1
        seconds = time.perf_counter() - start
        train_seconds += seconds

        accuracy = float((net.predict(test_x).argmax(axis=1) == test_y).mean())
        accuracies.append(accuracy)
        if args.verbose:
            print(f"{PROG}: epoch {epoch}: {seconds:.2f} s, last loss {float(loss):.4f}, "
                  f"test accuracy {accuracy:.4f}", file=sys.stderr)
        if not math.isfinite(float(loss)):
            raise pc.PeerError(f"training diverged (loss {float(loss)}) in epoch {epoch}")
        if accuracy >= args.target:
            reached = True
            break

    pc.emit({"peer": "numpy", "version": np.__version__, "threads": args.threads,
             "reached": reached, "epochs": epoch, "trainSeconds": train_seconds,
             "testAccuracies": accuracies})


if __name__ == "__main__":
    pc.run(PROG, main)
