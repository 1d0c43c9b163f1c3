#!/usr/bin/env python3
"""PyTorch CPU peer for W9–W12: one AdamW step of a small GPT, written as nanoGPT writes it —
nn.Embedding for tokens and a learned position table, blocks of nn.LayerNorm → causal
self-attention (one nn.Linear for q, k, v, F.scaled_dot_product_attention(is_causal=True),
nn.Linear) and nn.LayerNorm → nn.Linear → GELU (erf) → nn.Linear, each added to its input, a final
nn.LayerNorm and an nn.Linear head; F.cross_entropy(ignore_index=-1), loss.backward(),
torch.optim.AdamW (fused); float32.

    python3 Benchmarks/peers/torch_gpt.py --file DIR/W9.safetensors --warmup N --steps M --threads 2 [--compile]

Sizes come from the exchange file's tensors and its `heads` (README.md, "W9–W12"). --compile
compiles the whole step — zero_grad, forward, loss, backward and AdamW's update — as one
torch.compile'd function (default mode, inductor), with compiled autograd so that the backward is
traced into it rather than run by the eager autograd engine; AdamW then runs with foreach
(inductor fuses it), and the first warm-up steps compile. Prints one JSON line:
{"peer","version","threads","checkLosses","stepSeconds","mode","rssBefore","peakRSS"} (bytes
resident before the model was built and the process's peak).
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402  (imports neither numpy nor torch)

PROG = "torch_gpt"


def build_gpt_model(torch, params, sizes):
    """The GPT as an nn.Module holding the exchange file's tensors (already in PyTorch's layouts),
    copied by our names."""
    nn, F = torch.nn, torch.nn.functional
    v, time, f, mlp, heads = sizes["vocabulary"], sizes["time"], sizes["features"], sizes["mlp"], sizes["heads"]

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(f, 3 * f)
            self.c_proj = nn.Linear(f, f)

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
            self.wpe = nn.Parameter(torch.zeros(time, f))
            self.blocks = nn.ModuleList(Block() for _ in range(sizes["blocks"]))
            self.ln_f = nn.LayerNorm(f)
            self.head = nn.Linear(f, v)

        def forward(self, x):
            # x: (batch, time) token indices → logits (batch, time, vocabulary)
            h = self.wte(x) + self.wpe
            for block in self.blocks:
                h = block(h)
            return self.head(self.ln_f(h))

    model = GPT()
    module = {"wte": "wte.weight", "wpe": "wpe", "ln1_w": "ln1.weight", "ln1_b": "ln1.bias",
              "attn_w": "attn.c_attn.weight", "attn_b": "attn.c_attn.bias", "proj_w": "attn.c_proj.weight",
              "proj_b": "attn.c_proj.bias", "ln2_w": "ln2.weight", "ln2_b": "ln2.bias", "fc_w": "fc.weight",
              "fc_b": "fc.bias", "fc2_w": "fc2.weight", "fc2_b": "fc2.bias", "lnf_w": "ln_f.weight",
              "lnf_b": "ln_f.bias", "head_w": "head.weight", "head_b": "head.bias"}
    ours = {(f"blocks.{k}." if k is not None else "") + module[role]: name
            for role, k, name in pc.gpt_names(sizes["blocks"])}
    with torch.no_grad():
        named = dict(model.named_parameters())
        if set(named) != set(ours):
            raise pc.PeerError(f"the module's parameters {sorted(set(named) ^ set(ours))} have no counterpart")
        for name, parameter in named.items():
            parameter.copy_(torch.from_numpy(params[ours[name]].copy()))
    return model


def main():
    args = pc.parse_step_args(PROG, __doc__.splitlines()[0], compile_flag=True)

    import torch
    from torch_gru import sequence_cross_entropy
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)

    rss_before = pc.resident_bytes()   # torch loaded, nothing of the workload yet
    w = pc.load_gpt_workload(args.file)
    x = torch.from_numpy(w["x"])
    t = torch.from_numpy(w["t"])
    adamw = w["adamw"]

    def fresh():
        model = build_gpt_model(torch, w["params"], w["sizes"])
        # fused: one kernel over every tensor (PyTorch's fastest AdamW on CPU); under torch.compile,
        # foreach, which inductor traces and fuses itself
        fused = {"foreach": True} if args.compile else {"fused": True}
        optimizer = torch.optim.AdamW(model.parameters(), lr=adamw["lr"], betas=adamw["betas"], eps=adamw["eps"],
                                      weight_decay=adamw["weight_decay"], **fused)
        return model, optimizer

    def step(model, optimizer):
        optimizer.zero_grad(set_to_none=True)
        loss = sequence_cross_entropy(torch, model(x), t)
        loss.backward()
        optimizer.step()
        return loss

    if args.compile:
        torch._dynamo.config.compiled_autograd = True
        step = torch.compile(step)

    # (1) check: check_steps steps, loss recorded before each update
    model, optimizer = fresh()
    check = [step(model, optimizer).item() for _ in range(w["check_steps"])]
    pc.finite(check, "a check loss")

    # (2) timing, from the initial weights again (torch.compile: compiled in the first warm-up steps);
    # the check's model and AdamW state freed first, so that the peak holds one of each
    del model, optimizer
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

    pc.emit({"peer": "torch.compile" if args.compile else "torch", "version": torch.__version__,
             "threads": args.threads, "checkLosses": check, "stepSeconds": seconds,
             "mode": "compiled autograd, default mode" if args.compile else "eager",
             "rssBefore": rss_before, "peakRSS": pc.peak_resident_bytes()})


if __name__ == "__main__":
    pc.run(PROG, main)
