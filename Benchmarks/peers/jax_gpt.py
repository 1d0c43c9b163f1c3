#!/usr/bin/env python3
"""JAX (CPU, XLA) peer for W9–W12: one AdamW step of the small GPT, the model written out in
jax.numpy (jax.nn.dot_product_attention(is_causal=True), jax.nn.gelu(approximate=False)), AdamW
written out as torch.optim.AdamW computes it (optax is not in the peers' venv), the whole step
(loss, jax.value_and_grad, update) in one jax.jit with the parameters and the moments donated;
float32.

    python3 Benchmarks/peers/jax_gpt.py --file DIR/W9.safetensors --warmup N --steps M --threads 2

The same network as torch_gpt.py, from the same exchange file (README.md, "W9–W12"), PyTorch's
layouts kept (every product `x @ W.T + b`). Prints one JSON line:
{"peer","version","threads","checkLosses","stepSeconds","rssBefore","peakRSS"} (bytes resident before
the model was built and the process's peak).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402

PROG = "jax_gpt"


def gpt_tree(np, params, blocks):
    """The exchange file's tensors as the step's pytree: top-level roles, and a list of blocks."""
    tree = {"blocks": [{} for _ in range(blocks)]}
    for role, k, name in pc.gpt_names(blocks):
        a = np.ascontiguousarray(params[name], dtype=np.float32)
        if k is None:
            tree[role] = a
        else:
            tree["blocks"][k][role] = a
    return tree


def make_loss(jax, heads):
    """loss(params, x, t): the GPT's sequence cross-entropy; x, t (batch, time) int32, t = -1 at padding."""
    jnp = jax.numpy

    def layer_norm(h, w, b):
        mean = h.mean(-1, keepdims=True)
        variance = ((h - mean) ** 2).mean(-1, keepdims=True)   # biased, as nn.LayerNorm
        return (h - mean) * jax.lax.rsqrt(variance + 1e-5) * w + b

    def logits(p, x):
        batch, time = x.shape
        features = p["wte"].shape[1]
        size = features // heads
        h = p["wte"][x] + p["wpe"]                                   # (batch, time, features)
        for blk in p["blocks"]:
            a = layer_norm(h, blk["ln1_w"], blk["ln1_b"])
            q, k, v = jnp.split(a @ blk["attn_w"].T + blk["attn_b"], 3, axis=-1)
            q, k, v = (u.reshape(batch, time, heads, size) for u in (q, k, v))
            y = jax.nn.dot_product_attention(q, k, v, is_causal=True)  # (batch, time, heads, size)
            h = h + y.reshape(batch, time, features) @ blk["proj_w"].T + blk["proj_b"]
            m = layer_norm(h, blk["ln2_w"], blk["ln2_b"])
            m = jax.nn.gelu(m @ blk["fc_w"].T + blk["fc_b"], approximate=False)
            h = h + m @ blk["fc2_w"].T + blk["fc2_b"]
        return layer_norm(h, p["lnf_w"], p["lnf_b"]) @ p["head_w"].T + p["head_b"]

    def loss(p, x, t):
        counted = t >= 0
        log_p = jax.nn.log_softmax(logits(p, x), axis=-1)
        picked = jnp.take_along_axis(log_p, jnp.where(counted, t, 0)[..., None], axis=-1)[..., 0]
        return -jnp.where(counted, picked, 0).sum() / counted.sum()

    return loss


def main():
    args = pc.parse_step_args(PROG, __doc__.splitlines()[0])
    pc.pin_xla_threads(args.threads)

    import jax
    import numpy as np

    jax.devices()   # XLA's CPU client started: the runtime counts in rssBefore, the model does not
    rss_before = pc.resident_bytes()
    w = pc.load_gpt_workload(args.file)
    x = jax.device_put(w["x"].astype(np.int32))
    t = jax.device_put(w["t"].astype(np.int32))
    loss_fn = make_loss(jax, w["sizes"]["heads"])
    adamw = w["adamw"]
    lr, decay, eps = np.float32(adamw["lr"]), np.float32(adamw["weight_decay"]), np.float32(adamw["eps"])
    beta1, beta2 = (np.float32(b) for b in adamw["betas"])
    jnp = jax.numpy

    def step(state, x, t):
        # torch.optim.AdamW: p ← p·(1 − lr·λ); m, v running averages; p ← p − lr/(1 − β1ᵗ)·m/(√v/√(1 − β2ᵗ) + ε)
        p, m, v, count = state
        loss, g = jax.value_and_grad(loss_fn)(p, x, t)
        count = count + 1
        step_size = lr / (1 - beta1 ** count)
        root_correction = jnp.sqrt(1 - beta2 ** count)
        m = jax.tree_util.tree_map(lambda m, g: beta1 * m + (1 - beta1) * g, m, g)
        v = jax.tree_util.tree_map(lambda v, g: beta2 * v + (1 - beta2) * g * g, v, g)
        p = jax.tree_util.tree_map(
            lambda p, m, v: p * (1 - lr * decay) - step_size * m / (jnp.sqrt(v) / root_correction + eps), p, m, v)
        return (p, m, v, count), loss

    step = jax.jit(step, donate_argnums=(0,))
    tree = gpt_tree(np, w["params"], w["sizes"]["blocks"])

    def fresh():
        p = jax.tree_util.tree_map(lambda a: jax.device_put(a.copy()), tree)
        zeros = jax.tree_util.tree_map(lambda a: jax.device_put(np.zeros_like(a)), tree)
        return p, zeros, jax.tree_util.tree_map(lambda a: a.copy(), zeros), jax.device_put(np.float32(0))

    state = fresh()
    check = []
    for _ in range(w["check_steps"]):
        state, loss = step(state, x, t)
        check.append(float(loss))
    if loss.dtype != np.float32:
        raise pc.PeerError(f"the JAX step computes in {loss.dtype}, not float32")
    pc.finite(check, "a check loss")

    del state   # the check's parameters and moments freed before the timing's are made
    pc.time_jax_steps(jax, step, fresh, x, t, check, args, rss_before=rss_before)


if __name__ == "__main__":
    pc.run(PROG, main)
