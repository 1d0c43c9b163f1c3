import json, sys, torch, torch.nn as nn
from safetensors import safe_open
from safetensors.torch import load_file

class CausalSelfAttention(nn.Module):
    def __init__(self, features, heads):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(features, 3 * features)    # rows: the query's features, the key's, the value's
        self.c_proj = nn.Linear(features, features)

    def forward(self, x):                                  # x: (batch, time, features)
        B, T, C = x.shape
        q, k, v = (z.view(B, T, self.heads, C // self.heads).transpose(1, 2) for z in self.c_attn(x).split(C, dim=2))
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)   # softmax(q·kᵀ/√size + mask)·v
        return self.c_proj(y.transpose(1, 2).reshape(B, T, C))

class MLP(nn.Module):
    def __init__(self, features, hidden, approximate):
        super().__init__()
        self.c_fc, self.gelu, self.c_proj = nn.Linear(features, hidden), nn.GELU(approximate), nn.Linear(hidden, features)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))

class Block(nn.Module):
    def __init__(self, features, heads, hidden, approximate, eps):
        super().__init__()
        self.ln_1, self.attn = nn.LayerNorm(features, eps), CausalSelfAttention(features, heads)
        self.ln_2, self.mlp = nn.LayerNorm(features, eps), MLP(features, hidden, approximate)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))

class GPT(nn.Module):                                      # nanoGPT's module names
    def __init__(self, tokens, positions, features, heads, hidden, blocks, approximate="none", eps=1e-5, tied=False):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(tokens, features), wpe=nn.Embedding(positions, features),
            h=nn.ModuleList(Block(features, heads, hidden, approximate, eps) for _ in range(blocks)),
            ln_f=nn.LayerNorm(features, eps)))
        self.lm_head = nn.Linear(features, tokens, bias=not tied)   # tied: nanoGPT's, no bias

    def forward(self, x):                                  # x: (batch, time) tokens, the boundary token (0) first
        x = self.transformer.wte(x) + self.transformer.wpe(torch.arange(x.shape[1]))
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))      # (batch, time, tokens): the next token's scores

def layer_list(model):
    """The run's layers: model.layers, or those model.transformer stands for (Docs/Config.md)."""
    if not model.get("transformer"):
        return model["layers"]
    c = model["transformer"]
    dropout = [{"kind": "dropout"}] if c.get("dropout", 0) > 0 else []
    attention = {"kind": "residual", "layers": [{"kind": "layerNorm"}, {"kind": "attention", "heads": c["heads"]}] + dropout}
    mlp = {"kind": "residual", "layers": [{"kind": "layerNorm"}, {"kind": "dense"}, {"kind": "gelu"}, {"kind": "dense"}] + dropout}
    head = {"kind": "tiedHead"} if c.get("tieWeights", False) else {"kind": "dense"}
    return [{"kind": "embedding"}, {"kind": "positionEmbedding"}] + dropout + [attention, mlp] * c["blocks"] + [{"kind": "layerNorm"}, head]

def load(path):
    """The run's GPT, its block and vocabulary: our names renamed to nanoGPT's, walking the layer list."""
    tensors = load_file(path)
    with safe_open(path, framework="pt") as f:
        state = json.loads(f.metadata()["neuron.state"])
    top = {"embedding": "transformer.wte", "positionEmbedding": "transformer.wpe", "layerNorm": "transformer.ln_f", "dense": "lm_head"}
    rename, blocks, tied = {}, 0, False                    # our prefix → nanoGPT's; dropout (off in evaluation) has none
    for i, layer in enumerate(layer_list(state["config"]["model"])):
        kind, body = layer.get("kind", "dense"), layer.get("layers", [])
        if kind == "residual" and body[1].get("kind") == "attention":    # [layerNorm, attention, (dropout)]
            h, heads, eps = f"transformer.h.{blocks}", body[1]["heads"], body[0].get("epsilon", 1e-5)
            rename |= {f"layers.{i}.body.0": f"{h}.ln_1", f"layers.{i}.body.1": f"{h}.attn"}
        elif kind == "residual":                           # [layerNorm, dense, gelu, dense, (dropout)]
            approximate = body[2].get("approximation", "none")
            rename |= {f"layers.{i}.body.0": f"{h}.ln_2", f"layers.{i}.body.1": f"{h}.mlp.c_fc", f"layers.{i}.body.3": f"{h}.mlp.c_proj"}
            blocks += 1
        elif kind == "tiedHead":                           # no tensors: the head scores with layers.0.weight
            tied = True
        elif kind in top:
            rename[f"layers.{i}"] = top[kind]
    state_dict = {new + name[len(old):]: t for name, t in tensors.items() for old, new in rename.items() if name.startswith(old + ".")}
    if tied:
        state_dict["lm_head.weight"] = state_dict["transformer.wte.weight"]
    (tokens, features), positions = state_dict["transformer.wte.weight"].shape, state_dict["transformer.wpe.weight"].shape[0]
    model = GPT(tokens, positions, features, heads, state_dict["transformer.h.0.mlp.c_fc.weight"].shape[0], blocks, approximate, eps, tied)
    model.load_state_dict(state_dict)                      # strict: every tensor of the module, each exactly once
    if tied:
        model.lm_head.weight = model.transformer.wte.weight   # one table, as nanoGPT ties it
    block = len(state["featureNames"])                     # the positions a sample holds: t0 … t(block−1)
    return model.eval(), block, state["vocabulary"]        # token i is vocabulary[i]; "" is the boundary

if __name__ == "__main__":                                 # python gpt_in_torch.py RUN/checkpoint.safetensors qu
    model, block, vocabulary = load(sys.argv[1])
    x = torch.tensor([([0] + [vocabulary.index(c) for c in sys.argv[2]])[-block:]])   # the context's last block, as sampling crops
    with torch.no_grad():
        p = torch.softmax(model(x)[0, -1], dim=-1)         # what neuron sample --prefix qu --probabilities prints
    print(json.dumps(p.tolist()))
