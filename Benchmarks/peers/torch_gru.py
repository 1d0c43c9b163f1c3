#!/usr/bin/env python3
"""PyTorch CPU peer for W8: one SGD step of a character GRU, written the idiomatic way —
nn.Embedding, nn.GRU(batch_first=True) from a learned initial state, nn.Linear at every position,
F.cross_entropy(ignore_index=-1), loss.backward(), torch.optim.SGD; float32.

    python3 Benchmarks/peers/torch_gru.py --file DIR/W8.safetensors --warmup N --steps M --threads 2 [--compile]

The network (our layer indices): 0 embedding, 1 GRU (gates r, z, n; `h0` learned, passed as hx
expanded over the batch), 2 dense per position giving the logits; sizes from the exchange file's
tensors (README.md, "W8"). --compile wraps the model in torch.compile with
torch._dynamo.config.allow_rnn on, so that dynamo traces through nn.GRU and inductor compiles its
cell too (by default dynamo leaves nn.GRU to run eagerly between the compiled embedding and head:
3.2 ms a step against 1.9 ms here). Prints one JSON line:
{"peer","version","threads","checkLosses","stepSeconds"}.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402  (imports neither numpy nor torch)

PROG = "torch_gru"


def build_gru_model(torch, params):
    """The character GRU as an nn.Module holding our checkpoint's tensors (already in PyTorch's
    layouts), copied by our names."""
    nn = torch.nn
    vocabulary, features = params["layers.0.weight"].shape
    hidden = params["layers.1.h0"].shape[0]

    class CharacterGRU(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(vocabulary, features)
            self.gru = nn.GRU(features, hidden, batch_first=True)
            self.h0 = nn.Parameter(torch.zeros(hidden))
            self.head = nn.Linear(hidden, vocabulary)

        def forward(self, x):
            # x: (batch, time) token indices → logits (batch, time, vocabulary)
            states, _ = self.gru(self.embedding(x), self.h0.expand(1, x.shape[0], hidden))
            return self.head(states)

    model = CharacterGRU()
    ours = {"embedding.weight": "layers.0.weight", "gru.weight_ih_l0": "layers.1.weight_ih_l0",
            "gru.weight_hh_l0": "layers.1.weight_hh_l0", "gru.bias_ih_l0": "layers.1.bias_ih_l0",
            "gru.bias_hh_l0": "layers.1.bias_hh_l0", "h0": "layers.1.h0",
            "head.weight": "layers.2.weight", "head.bias": "layers.2.bias"}
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            parameter.copy_(torch.from_numpy(params[ours[name]].copy()))
    return model


def sequence_cross_entropy(torch, logits, t):
    """-log softmax(z)[target] at every position whose target is not -1, mean over those."""
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), t.reshape(-1), ignore_index=-1)


def main():
    args = pc.parse_step_args(PROG, __doc__.splitlines()[0], compile_flag=True)

    import torch
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    from torch_peer import time_torch_steps

    w = pc.load_gru_workload(args.file)
    x = torch.from_numpy(w["x"])
    t = torch.from_numpy(w["t"])

    def fresh():
        model = build_gru_model(torch, w["params"])
        if args.compile:
            torch._dynamo.config.allow_rnn = True
            model = torch.compile(model)
        return model, torch.optim.SGD(model.parameters(), lr=w["lr"])

    time_torch_steps(torch, args, fresh, lambda model: sequence_cross_entropy(torch, model(x), t), w["check_steps"],
                     "torch.compile" if args.compile else "torch")


if __name__ == "__main__":
    pc.run(PROG, main)
