#!/usr/bin/env python3
"""JAX (CPU, XLA) peer for W7 (issue 11): one SGD step of the small CNN, lax.conv_general_dilated
and lax.reduce_window, the whole step (loss, jax.value_and_grad, update) in one jax.jit with the
parameters donated; float32.

    python3 Benchmarks/peers/jax_cnn.py --file DIR/W7.safetensors --warmup N --steps M --threads 2 [--layout NHWC]

The same network as torch_cnn.py, from the same exchange file (README.md, "W7"). --layout picks
the layout the step computes in: NHWC (default: XLA's CPU convolutions are NHWC-native, measured
the faster here) or NCHW. For NHWC the batch and weights are transposed once before timing and
the first dense layer's columns permuted from PyTorch's (C, H, W) flatten order to (H, W, C): the
same function of the same numbers. Prints one JSON line:
{"peer","version","threads","checkLosses","stepSeconds"}.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402

PROG = "jax_cnn"


def to_layout(np, params, x, layout):
    """The exchange file's NCHW batch and PyTorch-layout weights as the step's pytree:
    convolution kernels OIHW (NCHW) or HWIO (NHWC), dense weights (in, out)."""
    p = params
    if layout == "NCHW":
        convs = [p["layers.0.weight"], p["layers.2.weight"]]
        w5 = p["layers.5.weight"].T
    else:
        x = x.transpose(0, 2, 3, 1)
        convs = [p["layers.0.weight"].transpose(2, 3, 1, 0), p["layers.2.weight"].transpose(2, 3, 1, 0)]
        c2 = p["layers.2.weight"].shape[0]
        hidden, features = p["layers.5.weight"].shape
        hw = features // c2
        # columns c·hw + s (PyTorch's flatten) → s·c2 + c (an NHWC flatten)
        w5 = p["layers.5.weight"].reshape(hidden, c2, hw).transpose(2, 1, 0).reshape(features, hidden)
    tree = {"conv0": (convs[0], p["layers.0.bias"]), "conv2": (convs[1], p["layers.2.bias"]),
            "dense5": (w5, p["layers.5.bias"]), "dense6": (p["layers.6.weight"].T, p["layers.6.bias"])}
    tree = {k: tuple(np.ascontiguousarray(a, dtype=np.float32) for a in v) for k, v in tree.items()}
    return tree, np.ascontiguousarray(x)


def make_step(jax, layout, lr):
    jnp, lax = jax.numpy, jax.lax
    dims = ("NCHW", "OIHW", "NCHW") if layout == "NCHW" else ("NHWC", "HWIO", "NHWC")
    window = (1, 1, 2, 2) if layout == "NCHW" else (1, 2, 2, 1)
    bias_shape = (1, -1, 1, 1) if layout == "NCHW" else (1, 1, 1, -1)

    def conv_relu(a, w, b):
        z = lax.conv_general_dilated(a, w, (1, 1), "VALID", dimension_numbers=dims)
        return jnp.maximum(z + b.reshape(bias_shape), 0)

    def pool(a):
        return lax.reduce_window(a, -jnp.inf, lax.max, window, window, "VALID")

    def loss_fn(p, x, t):
        a = pool(conv_relu(x, *p["conv0"]))
        a = pool(conv_relu(a, *p["conv2"]))
        a = a.reshape(a.shape[0], -1)
        a = jnp.maximum(a @ p["dense5"][0] + p["dense5"][1], 0)
        z = a @ p["dense6"][0] + p["dense6"][1]
        return -(t * jax.nn.log_softmax(z, axis=1)).sum() / x.shape[0]

    def step(p, x, t):
        loss, grads = jax.value_and_grad(loss_fn)(p, x, t)
        return jax.tree_util.tree_map(lambda q, g: q - lr * g, p, grads), loss

    return jax.jit(step, donate_argnums=(0,))


def main():
    import argparse
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    pc.add_step_args(parser)
    parser.add_argument("--layout", choices=("NHWC", "NCHW"), default="NHWC")
    args = parser.parse_args()
    if args.warmup < 0 or args.steps < 1:
        raise pc.PeerError("--warmup must be >= 0 and --steps >= 1")
    pc.pin_threads(args.threads)
    pc.pin_xla_threads(args.threads)

    import jax
    import numpy as np

    w = pc.load_cnn_workload(args.file)
    tree, x_np = to_layout(np, w["params"], w["x"], args.layout)
    x = jax.device_put(x_np)
    t = jax.device_put(w["t"])
    step = make_step(jax, args.layout, np.float32(w["lr"]))

    def fresh():
        return jax.tree_util.tree_map(lambda a: jax.device_put(a.copy()), tree)

    params = fresh()
    check = []
    for _ in range(w["check_steps"]):
        params, loss = step(params, x, t)
        check.append(float(loss))
    if loss.dtype != np.float32:
        raise pc.PeerError(f"the JAX step computes in {loss.dtype}, not float32")
    pc.finite(check, "a check loss")

    pc.time_jax_steps(jax, step, fresh, x, t, check, args)


if __name__ == "__main__":
    pc.run(PROG, main)
