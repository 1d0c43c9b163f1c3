#!/usr/bin/env python3
"""F5 for PyTorch CPU: nanoGPT's Shakespeare character recipe as Neuron ran it, on Neuron's windows
in Neuron's order from Neuron's initial weights, until the exact validation loss reaches --target;
training time only (the evaluations excluded).

    python3 Benchmarks/peers/torch_shakespeare_gpt.py --init DIR/F5.safetensors \
        --windows DIR/F5-windows.json --target 1.88 --threads 2 [--verbose] [--autocast]

The model is nanoGPT's as Neuron builds it (README.md, "F5"): token embedding + learned positions,
blocks of LayerNorm → causal self-attention (c_attn and c_proj with biases,
F.scaled_dot_product_attention(is_causal=True)) and LayerNorm → Linear(4f) → GELU (erf) →
Linear(f), each added to its input, a final LayerNorm, and the head: an nn.Linear, or the token
table itself when the recipe ties them (no head tensors then). The loss is F.cross_entropy; the
optimizer torch.optim.AdamW (fused) in two parameter groups, the tensors Neuron decays (checked
against the rule: the products' weights) and the rest at weight decay 0; each step's rate is set
from the recipe's schedule (linear warmup (s + 1)/(w + 1), then PyTorch's CosineAnnealingLR to the
floor over the steps after it, Docs/Config.md), checked against the rates Neuron's optimizer gives
every step; gradients are clipped with clip_grad_norm_ when the recipe clips them. With --autocast
the forward passes and the loss, the validation loss's included, run under torch.autocast("cpu",
dtype=torch.bfloat16), PyTorch's CPU mixed precision (the products' operands in bf16; weights,
gradients and AdamW's state float32; backward and clipping outside the context), the loss taken
from the logits in float32.

--init: the initial weights (our names, PyTorch's layouts) with the recipe in metadata: heads,
tieWeights, learningRate, beta1, beta2, epsilon, weightDecay, decay (all|matrices), decayed (the
names weight decay applies to, comma-separated), schedule (constant|cosine), warmupSteps,
minimumFactor, totalSteps, clipGradientNorm (empty: none), checkLosses (Neuron's losses before
its first steps, comma-separated).
--windows: {"text", "characters", "vocabulary", "training", "validation", "blockSize",
"batchSize", "evaluateEvery", "learningRates", "starts"}: the text file and what Neuron read of it
(its length, its vocabulary with "" for token 0, the training and validation parts as [start,
end) character ranges), checked against this reading; the rate of every step; and each evaluation
interval's window starts in the order Neuron drew them (evaluateEvery · batchSize each, every one
below the training part's length less the block).

Before anything is timed, the first len(checkLosses) steps run from the initial weights and their
losses must match Neuron's within 1e-4 (relative; with --autocast 2e-4 the first, 2e-3 the later
ones, see AUTOCAST_CHECK_TOLERANCES), else the peer fails. Then, from the initial weights again,
each interval's steps are timed (the batches' gathering included) and the exact validation loss
measured after it, untimed: the validation part cut into consecutive windows of the block, every
character but its first predicted once, the mean over those positions. Prints one JSON line:
{"peer","version","threads","autocast","checkLosses","reached","epochs","trainSeconds",
"validationLosses","trainingLosses","secondsAfter"} (epochs: the intervals trained;
trainingLosses: each interval's mean batch loss; secondsAfter: the training seconds at each
interval's end).
"""
import argparse
import contextlib
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402  (imports neither numpy nor torch)

PROG = "torch_shakespeare_gpt"
CHECK_TOLERANCE = 1e-4
# Under --autocast, bf16 rounding (autocast's here, Neuron's bf16 products there, each rounding in
# its own places) moves the losses: at the 1e-2 level later in training, these first ones much less,
# and the first of them, the initial weights' forward alone, least. A tolerance at the 1e-2 level
# would pass a wrong model: from GPT-2's initialization every model's first losses lie near
# ln(vocabulary). Measured at F5's size (4 blocks of 4 heads over 128 features, block 64, batches of
# 12; torch 2.15 CPU, 7 seeds), autocast against float32, relative: the first loss at most 3.1e-5;
# the second and third at most 6.4e-5 with the recipe's 100 warmup steps, 1.7e-4 with 5, 4.9e-4 at
# 3e-3 from the first step. A float32 model with a bug against the right one, on the first loss:
# 3.1e-4 (no position table), 3.9e-4 (one c_proj transposed, or the final LayerNorm's bias at 0.5),
# 1.6e-3 (no causal mask), 6.3e-3 (no MLPs). Hence (the first loss, the later ones): each over 4×
# what autocast moved them, the first below every one of those bugs.
AUTOCAST_CHECK_TOLERANCES = (2e-4, 2e-3)
# The products' weights: what decay: matrices shrinks (with the head's weight when it is not tied).
MATRIX_ROLES = ("attn_w", "proj_w", "fc_w", "fc2_w", "head_w")


def load_recipe(path):
    """(params, sizes, recipe) from an F5 file: the GPT's tensors, checked, and the recipe."""
    import numpy as np
    tensors, meta = pc.read_exchange(path)
    try:
        heads = int(meta["heads"])
        tied = meta["tieWeights"] == "true"
        clip = float(meta["clipGradientNorm"]) if meta.get("clipGradientNorm") else None
        recipe = dict(pc.adamw_metadata(meta, path), tied=tied, clip=clip, decay=meta["decay"],
                      decayed=[n for n in meta["decayed"].split(",") if n], schedule=meta["schedule"],
                      warmup=int(meta.get("warmupSteps") or 0), floor=float(meta.get("minimumFactor") or 0),
                      total=int(meta["totalSteps"]), check=[float(v) for v in meta["checkLosses"].split(",") if v])
    except (KeyError, ValueError) as e:
        raise pc.PeerError(f"{path}: bad or missing recipe metadata: {e}") from e
    if recipe["schedule"] not in ("constant", "cosine"):
        raise pc.PeerError(f"{path}: schedule {recipe['schedule']!r}: this peer follows constant and cosine schedules")
    if recipe["decay"] not in ("all", "matrices"):
        raise pc.PeerError(f"{path}: decay {recipe['decay']!r} is neither all nor matrices")
    blocks = sum(1 for name in tensors if name.endswith(".body.1.c_attn.weight"))
    if blocks == 0 or "layers.0.weight" not in tensors or "layers.1.weight" not in tensors:
        raise pc.PeerError(f"{path}: not a GPT: it needs layers.0.weight, layers.1.weight and layers.<i>.body.1.c_attn.weight")
    (v, f), positions = tensors["layers.0.weight"].shape, tensors["layers.1.weight"].shape[0]
    mlp = tensors["layers.3.body.1.weight"].shape[0] if "layers.3.body.1.weight" in tensors else 0
    if heads < 1 or f % heads:
        raise pc.PeerError(f"{path}: {f} features do not split into {heads} heads")
    shapes = {"wte": (v, f), "wpe": (positions, f), "ln1_w": (f,), "ln1_b": (f,), "attn_w": (3 * f, f),
              "attn_b": (3 * f,), "proj_w": (f, f), "proj_b": (f,), "ln2_w": (f,), "ln2_b": (f,), "fc_w": (mlp, f),
              "fc_b": (mlp,), "fc2_w": (f, mlp), "fc2_b": (f,), "lnf_w": (f,), "lnf_b": (f,), "head_w": (v, f),
              "head_b": (v,)}
    names = [(role, k, name) for role, k, name in pc.gpt_names(blocks) if not (tied and role.startswith("head"))]
    params = {}
    for role, _, name in names:
        a = tensors.get(name)
        if a is None or a.dtype != np.float32 or tuple(a.shape) != shapes[role]:
            got = "missing" if a is None else f"{a.dtype} {tuple(a.shape)}"
            raise pc.PeerError(f"{path}: {name} is {got}, expected F32 {shapes[role]} ({blocks} blocks, vocabulary {v}, "
                               f"features {f}, MLP {mlp}{', head tied to the token table' if tied else ''})")
        params[name] = np.ascontiguousarray(a)
    extra = sorted(set(tensors) - set(params))
    if extra:
        raise pc.PeerError(f"{path}: tensors {extra} belong to no GPT of {blocks} blocks"
                           f"{' with its head tied' if tied else ''}")
    # What this peer decays must be what Neuron decays, and both the rule's tensors.
    rule = [name for role, _, name in names if recipe["decay"] == "all" or role in MATRIX_ROLES]
    if recipe["weight_decay"] > 0 and sorted(recipe["decayed"]) != sorted(rule):
        raise pc.PeerError(f"{path}: Neuron decays {sorted(recipe['decayed'])}, but decay: {recipe['decay']} means {sorted(rule)}")
    sizes = {"vocabulary": v, "positions": positions, "features": f, "mlp": mlp, "blocks": blocks, "heads": heads}
    return params, sizes, recipe


def rate_factors(recipe):
    """The schedule's multiplier of every step: (s + 1)/(w + 1) during the warmup, then the
    constant 1 or CosineAnnealingLR's closed form over the T − w steps after the warmup,
    m + (1 − m)·½(1 + cos(π·(s − w)/(T − w))) (Docs/Config.md, "The cosine, exactly")."""
    w, total, m = recipe["warmup"], recipe["total"], recipe["floor"]
    factors = []
    for s in range(total):
        if s < w:
            factors.append((s + 1) / (w + 1))
        elif recipe["schedule"] == "constant":
            factors.append(1.0)
        else:
            factors.append(m + (1 - m) * 0.5 * (1 + math.cos(math.pi * min(s - w, total - w) / (total - w))))
    return factors


def read_text(shared, path):
    """The text's tokens as Neuron reads a document (characters by code point after token 0, a
    byte-order mark skipped), checked against what Neuron read."""
    try:
        with open(shared["text"], encoding="utf-8-sig", newline="") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise pc.PeerError(f"cannot read {shared['text']}: {e}") from e
    vocabulary = [""] + sorted(set(text))
    if len(text) != shared["characters"] or vocabulary != shared["vocabulary"]:
        raise pc.PeerError(f"{path}: Neuron read {shared['characters']} characters, {len(shared['vocabulary'])} tokens of "
                           f"{shared['text']}; this reading gives {len(text)} and {len(vocabulary)}")
    index = {c: i for i, c in enumerate(vocabulary)}
    return [index[c] for c in text]


def load_windows(path, recipe, sizes):
    """The text's training and validation parts (int64 tensors), the block, the batch, each
    interval's starts (intervals, evaluateEvery · batchSize) and Neuron's rate of every step, checked."""
    import torch
    try:
        with open(path) as f:
            shared = json.load(f)
        (t0, t1), (v0, v1) = shared["training"], shared["validation"]
        block, batch, every = int(shared["blockSize"]), int(shared["batchSize"]), int(shared["evaluateEvery"])
        starts = torch.tensor(shared["starts"], dtype=torch.int64)
        rates = [float(r) for r in shared["learningRates"]]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise pc.PeerError(f"{path}: cannot read the shared windows: {e}") from e
    tokens = torch.tensor(read_text(shared, path), dtype=torch.int64)
    if not (t0 == 0 < block < t1 <= v0 < v1 <= len(tokens)) or v1 - v0 < 2:
        raise pc.PeerError(f"{path}: training {t0}..<{t1} and validation {v0}..<{v1} are not parts of "
                           f"{len(tokens)} characters at block {block}")
    if block > sizes["positions"]:
        raise pc.PeerError(f"{path}: block {block}, but the position table has {sizes['positions']} rows")
    windows = t1 - t0 - block
    if starts.ndim != 2 or starts.shape[1] != every * batch or starts.numel() == 0 or \
            starts.min() < 0 or starts.max() >= windows:
        raise pc.PeerError(f"{path}: the starts must be intervals of {every} × {batch} window starts in 0..<{windows}, "
                           f"got shape {tuple(starts.shape)}")
    if len(rates) != recipe["total"] or starts.shape[0] * every != recipe["total"]:
        raise pc.PeerError(f"{path}: {len(rates)} rates and {starts.shape[0]} intervals of {every} steps for a run of "
                           f"{recipe['total']} steps")
    return tokens[t0:t1], tokens[v0:v1], block, batch, starts, rates


def build_model(torch, params, sizes, tied):
    """The GPT as an nn.Module holding the exchange file's tensors, copied by our names."""
    nn, F = torch.nn, torch.nn.functional
    v, f, mlp, heads = sizes["vocabulary"], sizes["features"], sizes["mlp"], sizes["heads"]

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn, self.c_proj = nn.Linear(f, 3 * f), nn.Linear(f, f)

        def forward(self, x):
            # x: (batch, time, features) → q, k, v: (batch, heads, time, size)
            b, t, _ = x.shape
            q, k, v = self.c_attn(x).split(f, dim=2)
            q, k, v = (a.view(b, t, heads, f // heads).transpose(1, 2) for a in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, f))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.attn, self.ln2 = nn.LayerNorm(f), CausalSelfAttention(), nn.LayerNorm(f)
            self.fc, self.fc2 = nn.Linear(f, mlp), nn.Linear(mlp, f)

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.fc2(F.gelu(self.fc(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(v, f)
            self.wpe = nn.Parameter(torch.zeros(sizes["positions"], f))
            self.blocks = nn.ModuleList(Block() for _ in range(sizes["blocks"]))
            self.ln_f = nn.LayerNorm(f)
            self.head = None if tied else nn.Linear(f, v)

        def forward(self, x):
            # x: (batch, time) token indices → logits (batch, time, vocabulary)
            h = self.wte(x) + self.wpe[: x.shape[1]]
            for block in self.blocks:
                h = block(h)
            h = self.ln_f(h)
            return F.linear(h, self.wte.weight) if tied else self.head(h)

    model = GPT()
    module = {"wte": "wte.weight", "wpe": "wpe", "ln1_w": "ln1.weight", "ln1_b": "ln1.bias",
              "attn_w": "attn.c_attn.weight", "attn_b": "attn.c_attn.bias", "proj_w": "attn.c_proj.weight",
              "proj_b": "attn.c_proj.bias", "ln2_w": "ln2.weight", "ln2_b": "ln2.bias", "fc_w": "fc.weight",
              "fc_b": "fc.bias", "fc2_w": "fc2.weight", "fc2_b": "fc2.bias", "lnf_w": "ln_f.weight",
              "lnf_b": "ln_f.bias", "head_w": "head.weight", "head_b": "head.bias"}
    ours = {(f"blocks.{k}." if k is not None else "") + module[role]: name
            for role, k, name in pc.gpt_names(sizes["blocks"]) if name in params}
    with torch.no_grad():
        named = dict(model.named_parameters())
        if set(named) != set(ours):
            raise pc.PeerError(f"the module's parameters {sorted(set(named) ^ set(ours))} have no counterpart")
        for name, parameter in named.items():
            parameter.copy_(torch.from_numpy(params[ours[name]].copy()))
    return model, ours


def main():
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("--init", required=True, help="F5.safetensors: initial weights + recipe")
    parser.add_argument("--windows", required=True, help="Neuron's text parts, rates and window starts (JSON)")
    parser.add_argument("--target", type=float, required=True, help="exact validation loss to reach (at or below)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--verbose", action="store_true", help="progress on stderr")
    pc.add_autocast_arg(parser)
    args = parser.parse_args()
    pc.pin_threads(args.threads)

    import torch
    F = torch.nn.functional
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)

    params, sizes, r = load_recipe(args.init)
    train, valid, block, batch, starts, neuron_rates = load_windows(args.windows, r, sizes)
    rates = [r["lr"] * factor for factor in rate_factors(r)]
    worst = max(abs(a - b) / b for a, b in zip(rates, neuron_rates))
    if worst > 1e-9:
        raise pc.PeerError(f"the schedule's rates differ from Neuron's by up to {worst:.3g} (relative)")
    v, every = sizes["vocabulary"], starts.shape[1] // batch
    offsets = torch.arange(block)

    def autocast():
        """bf16 autocast with --autocast, else nothing (float32 throughout, as without the flag)."""
        return torch.autocast("cpu", dtype=torch.bfloat16) if args.autocast else contextlib.nullcontext()

    def fresh():
        model, ours = build_model(torch, params, sizes, r["tied"])
        decayed = set(r["decayed"]) if r["weight_decay"] > 0 else set()
        groups = [{"params": [p for n, p in model.named_parameters() if ours[n] in decayed], "weight_decay": r["weight_decay"]},
                  {"params": [p for n, p in model.named_parameters() if ours[n] not in decayed], "weight_decay": 0.0}]
        optimizer = torch.optim.AdamW([g for g in groups if g["params"]], lr=rates[0], betas=r["betas"], eps=r["eps"],
                                      fused=True)
        return model, optimizer

    def step(model, optimizer, s):
        # the batch: windows of `block` characters at the step's starts, each predicting the next ones
        e, i = divmod(s, every)
        rows = starts[e, i * batch:(i + 1) * batch, None] + offsets
        x, t = train[rows], train[rows + 1]
        for group in optimizer.param_groups:
            group["lr"] = rates[s]
        with autocast():  # the forward and the loss; backward, clipping and AdamW outside, as PyTorch's AMP runs them
            loss = F.cross_entropy(model(x).float().view(-1, v), t.view(-1))  # .float(): the loss in float32
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if r["clip"] is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), r["clip"])
        optimizer.step()
        return loss.detach()

    # The validation part as consecutive windows of the block; padding (targets −1) past its end.
    predicted = len(valid) - 1
    count = -(-predicted // block)
    vx = torch.zeros(count * block, dtype=torch.int64)
    vt = torch.full((count * block,), -1, dtype=torch.int64)
    vx[:predicted], vt[:predicted] = valid[:-1], valid[1:]
    vx, vt = vx.view(count, block), vt.view(count, block)

    def validation_loss(model):
        model.eval()
        total = 0.0
        with torch.no_grad(), autocast():  # the training's arithmetic; the loss of the logits in float32
            for i in range(0, count, 256):
                logits = model(vx[i:i + 256]).float()
                total += F.cross_entropy(logits.reshape(-1, v), vt[i:i + 256].reshape(-1), ignore_index=-1,
                                         reduction="sum").item()
        model.train()
        return total / predicted

    # (1) check: the first steps' losses against Neuron's, before anything is timed
    model, optimizer = fresh()
    check = [step(model, optimizer, s).item() for s in range(len(r["check"]))]
    pc.finite(check, "a check loss")
    first, later = AUTOCAST_CHECK_TOLERANCES if args.autocast else (CHECK_TOLERANCE, CHECK_TOLERANCE)
    tolerances = [first] + [later] * (len(check) - 1)
    if not all(abs(a - b) <= tol * max(abs(a), abs(b)) for a, b, tol in zip(check, r["check"], tolerances)):
        within = (f"tolerance {first} on the first, {later} on the later ones, relative, under autocast"
                  if args.autocast else f"tolerance {CHECK_TOLERANCE}, relative")
        raise pc.PeerError(f"the first steps' losses {check} disagree with Neuron's {r['check']} ({within})")

    # (2) the run, from the initial weights again: each interval's steps timed, then its validation
    model, optimizer = fresh()
    clock = time.perf_counter
    seconds, reached, losses, training_losses, seconds_after = 0.0, False, [], [], []
    for e in range(starts.shape[0]):
        total = torch.zeros(())
        start = clock()
        for s in range(e * every, (e + 1) * every):
            total += step(model, optimizer, s)
        seconds += clock() - start
        seconds_after.append(seconds)
        training_losses.append(total.item() / every)
        losses.append(validation_loss(model))
        pc.finite(losses[-1:], "the validation loss")
        if args.verbose:
            print(f"{PROG}: interval {e + 1} of {starts.shape[0]}, {seconds:.1f} s of training, "
                  f"training loss {training_losses[-1]:.4f}, validation {losses[-1]:.4f}", file=sys.stderr)
        if losses[-1] <= args.target:
            reached = True
            break

    pc.emit({"peer": "torch", "version": torch.__version__, "threads": args.threads, "autocast": args.autocast,
             "checkLosses": check, "reached": reached, "epochs": len(losses), "trainSeconds": seconds,
             "validationLosses": losses, "trainingLosses": training_losses, "secondsAfter": seconds_after})


if __name__ == "__main__":
    pc.run(PROG, main)
