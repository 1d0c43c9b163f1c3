#!/usr/bin/env python3
"""JAX (CPU, XLA) peer for Neuron's benchmarks W1–W6: the whole step — loss, jax.value_and_grad
and the SGD update — compiled by jax.jit with the parameters donated; float32.

    python3 Benchmarks/peers/jax_peer.py --file DIR/W4.safetensors --warmup N --steps M --threads 2

Prints one JSON line: {"peer","version","threads","checkLosses","stepSeconds"}. See README.md.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402  (imports neither numpy, torch nor jax)

PROG = "jax_peer"


def activation(jnp, jax, name, z):
    if name == "tanh":
        return jnp.tanh(z)
    if name == "sigmoid":
        return jax.nn.sigmoid(z)
    if name == "relu":
        return jnp.maximum(z, 0)
    return z  # identity; softmax: the logits (fused into the loss)


def make_step(jax, jnp, activations, loss_kind, lr):
    """step(params, x, t) -> (new params, loss before the update), jitted, params donated.
    params: a list of (w (in, out), b (out,)) — the exchange file's layout, y = x @ w + b."""

    def loss_fn(params, x, t):
        a = x
        for (w, b), f in zip(params, activations):
            a = activation(jnp, jax, f, a @ w + b)
        batch = x.shape[0]
        if loss_kind == "softmaxCrossEntropy":
            return -(t * jax.nn.log_softmax(a, axis=1)).sum() / batch
        return 0.5 * ((a - t) ** 2).sum() / batch

    def step(params, x, t):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, t)
        new = jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)
        return new, loss

    return jax.jit(step, donate_argnums=(0,))


def main():
    args = pc.parse_step_args(PROG, __doc__.splitlines()[0])  # threads pinned before the library is imported
    pc.pin_xla_threads(args.threads)

    import jax
    import jax.numpy as jnp
    import numpy as np

    w = pc.load_workload(args.file)
    x = jax.device_put(w["x"])
    t = jax.device_put(w["t"])
    lr = np.float32(w["lr"])
    step = make_step(jax, jnp, w["activations"], w["loss"], lr)

    def fresh():
        return [(jax.device_put(np.array(a)), jax.device_put(np.array(b))) for a, b in w["layers"]]

    # (1) check: checkSteps plain SGD steps from the initial weights, loss recorded before each
    params = fresh()
    check = []
    for _ in range(w["check_steps"]):
        params, loss = step(params, x, t)
        if loss.dtype != jnp.float32 or any(p.dtype != jnp.float32 for layer in params for p in layer):
            raise pc.PeerError(f"non-float32 values in the JAX step ({loss.dtype})")
        check.append(float(loss))
    pc.finite(check, "a check loss")

    # (2) timing, from the initial weights again (compiled already: same shapes)
    pc.time_jax_steps(jax, step, fresh, x, t, check, args)


if __name__ == "__main__":
    pc.run(PROG, main)
