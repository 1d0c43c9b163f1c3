#!/usr/bin/env python3
"""F1 for JAX (CPU, XLA): Fashion-MNIST end to end with Data/fashion-mnist.yaml's recipe, timed
until the test accuracy reaches --target (evaluation excluded from the time).

    python3 Benchmarks/peers/jax_fashion.py --data /usr/share/datasets/fashion-mnist \
        --init DIR/F1.safetensors --target 0.88 --max-epochs 20 --threads 2

The same recipe as torch_fashion.py and numpy_fashion.py: SGD momentum in PyTorch's form
(v = μ·v + g from v = 0, which is v = g on the first step; p −= lr·v), the rate annealed per
batch along a cosine, seeded shuffles, the last 10% of a seeded permutation held out. The step
(loss, value_and_grad, momentum update) is one jax.jit with parameters and velocities donated and
the learning rate an argument (no recompiling as it changes; the short last batch compiles once
more). Batches are gathered in NumPy and handed over per step. Prints one JSON line:
{"peer","version","threads","reached","epochs","trainSeconds","testAccuracies"}.
"""
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402

PROG = "jax_fashion"


def main():
    args = pc.parse_fashion_args(PROG, __doc__.splitlines()[0])  # threads pinned before the library is imported
    pc.pin_xla_threads(args.threads)

    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax_peer import activation

    layers, acts, r = pc.load_fashion_init(args.init)
    train_x, train_y, test_x, test_y = pc.load_fashion(args.data)
    train_idx, _ = pc.split_train(len(train_x), r["validation"], r["seed"])
    x = np.ascontiguousarray(train_x[train_idx])
    one_hot = np.eye(10, dtype=np.float32)[train_y[train_idx]]
    mu = np.float32(r["momentum"])

    def logits(params, xb):
        a = xb
        for (w, b), f in zip(params, acts):
            a = activation(jnp, jax, f, a @ w + b)
        return a

    def loss_fn(params, xb, tb):
        return -(tb * jax.nn.log_softmax(logits(params, xb), axis=1)).sum() / xb.shape[0]

    def step(params, velocity, xb, tb, lr):
        loss, grads = jax.value_and_grad(loss_fn)(params, xb, tb)
        velocity = jax.tree_util.tree_map(lambda v, g: mu * v + g, velocity, grads)
        params = jax.tree_util.tree_map(lambda p, v: p - lr * v, params, velocity)
        return params, velocity, loss

    step = jax.jit(step, donate_argnums=(0, 1))
    predict = jax.jit(lambda params, xb: jnp.argmax(logits(params, xb), axis=1))

    params = [(jnp.asarray(w), jnp.asarray(b)) for w, b in layers]
    velocity = jax.tree_util.tree_map(jnp.zeros_like, params)
    n = len(x)
    batches = math.ceil(n / r["batch"])
    total_steps = r["epochs"] * batches
    shuffle = np.random.default_rng(r["seed"])

    def lr_at(k):
        if r["schedule"] != "cosine":
            return np.float32(r["lr"])
        return np.float32(0.5 * r["lr"] * (1.0 + math.cos(math.pi * min(k, total_steps) / total_steps)))

    train_seconds = 0.0
    accuracies = []
    reached = False
    steps_done = 0
    epoch = 0
    while epoch < args.max_epochs:
        epoch += 1
        start = time.perf_counter()
        order = shuffle.permutation(n)
        for k in range(batches):
            idx = order[k * r["batch"]:(k + 1) * r["batch"]]
            params, velocity, loss = step(params, velocity, x[idx], one_hot[idx], lr_at(steps_done))
            steps_done += 1
        jax.block_until_ready(params)
        seconds = time.perf_counter() - start
        train_seconds += seconds

        accuracy = float((np.asarray(predict(params, test_x)) == test_y).mean())
        accuracies.append(accuracy)
        last = float(loss)
        if args.verbose:
            print(f"{PROG}: epoch {epoch}: {seconds:.2f} s, last loss {last:.4f}, "
                  f"test accuracy {accuracy:.4f}", file=sys.stderr)
        if not math.isfinite(last):
            raise pc.PeerError(f"training diverged (loss {last}) in epoch {epoch}")
        if accuracy >= args.target:
            reached = True
            break

    pc.emit({"peer": "jax", "version": jax.__version__, "threads": args.threads,
             "reached": reached, "epochs": epoch, "trainSeconds": train_seconds,
             "testAccuracies": accuracies})


if __name__ == "__main__":
    pc.run(PROG, main)
