#!/usr/bin/env python3
"""JAX (CPU, XLA) peer for W8: one SGD step of the character GRU, the cell written out with
PyTorch's nn.GRU equations and run along the sequence by lax.scan, the whole step (loss,
jax.value_and_grad, update) in one jax.jit with the parameters donated; float32.

    python3 Benchmarks/peers/jax_gru.py --file DIR/W8.safetensors --warmup N --steps M --threads 2

The same network as torch_gru.py, from the same exchange file (README.md, "W8"): the embedding
a gather, every position's input projection x·W_ihᵀ + b_ih in one product before the scan, the
scan carrying h from h0, the head at every position, then the mean of
-log softmax(z)[target] over the positions whose target is not padding. Prints one JSON line:
{"peer","version","threads","checkLosses","stepSeconds"}.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402

PROG = "jax_gru"


def gru_tree(np, params):
    """The exchange file's tensors as the step's pytree (PyTorch's layouts kept)."""
    names = {"embedding": "layers.0.weight", "w_ih": "layers.1.weight_ih_l0", "w_hh": "layers.1.weight_hh_l0",
             "b_ih": "layers.1.bias_ih_l0", "b_hh": "layers.1.bias_hh_l0", "h0": "layers.1.h0",
             "w_out": "layers.2.weight", "b_out": "layers.2.bias"}
    return {key: np.ascontiguousarray(params[name], dtype=np.float32) for key, name in names.items()}


def make_loss(jax):
    """loss(params, x, t): the character GRU's sequence cross-entropy; x, t (batch, time) int32,
    t = -1 at padding."""
    jnp, lax = jax.numpy, jax.lax

    def logits(p, x):
        hidden = p["h0"].shape[0]
        inputs = p["embedding"][x] @ p["w_ih"].T + p["b_ih"]          # (batch, time, 3·hidden)

        def cell(h, gi):
            # PyTorch's nn.GRU: r, z from both sides' sums; n's hidden side scaled by r
            gh = h @ p["w_hh"].T + p["b_hh"]                           # (batch, 3·hidden)
            r = jax.nn.sigmoid(gi[:, :hidden] + gh[:, :hidden])
            z = jax.nn.sigmoid(gi[:, hidden:2 * hidden] + gh[:, hidden:2 * hidden])
            n = jnp.tanh(gi[:, 2 * hidden:] + r * gh[:, 2 * hidden:])
            h = (1 - z) * n + z * h
            return h, h

        h0 = jnp.broadcast_to(p["h0"], (x.shape[0], hidden))
        _, states = lax.scan(cell, h0, inputs.transpose(1, 0, 2))    # (time, batch, hidden)
        return states.transpose(1, 0, 2) @ p["w_out"].T + p["b_out"]  # (batch, time, vocabulary)

    def loss(p, x, t):
        counted = t >= 0
        log_p = jax.nn.log_softmax(logits(p, x), axis=-1)
        picked = jnp.take_along_axis(log_p, jnp.where(counted, t, 0)[..., None], axis=-1)[..., 0]
        return -jnp.where(counted, picked, 0).sum() / counted.sum()

    return loss, logits


def main():
    args = pc.parse_step_args(PROG, __doc__.splitlines()[0])
    pc.pin_xla_threads(args.threads)

    import jax
    import numpy as np

    w = pc.load_gru_workload(args.file)
    x = jax.device_put(w["x"].astype(np.int32))
    t = jax.device_put(w["t"].astype(np.int32))
    loss_fn, _ = make_loss(jax)
    lr = np.float32(w["lr"])

    def step(p, x, t):
        loss, grads = jax.value_and_grad(loss_fn)(p, x, t)
        return jax.tree_util.tree_map(lambda q, g: q - lr * g, p, grads), loss

    step = jax.jit(step, donate_argnums=(0,))
    tree = gru_tree(np, w["params"])

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
