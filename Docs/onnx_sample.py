"""Samples lines from a character model exported by `neuron export RUN model.onnx`, with ONNX Runtime
and the file alone: the vocabulary, the boundary token and the block come from its metadata.

    python3 onnx_sample.py model.onnx [--count 5] [--prefix TEXT] [--temperature 1.0] [--seed 0]

Each line starts as the boundary token (then the prefix's tokens); the model's probabilities at the
last position choose the next token, until the boundary token comes back or the line holds 200
characters. Past the block, the model reads the line's last `block` tokens, as the engine does.
"""

import argparse
import json

import numpy as np
import onnxruntime as ort


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--count", type=int, default=5)
    parser.add_argument("--prefix", default="")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    arguments = parser.parse_args()

    session = ort.InferenceSession(arguments.model, providers=["CPUExecutionProvider"])
    metadata = session.get_modelmeta().custom_metadata_map
    strings = json.loads(metadata["neuron.vocabulary"])  # token i is strings[i]; the boundary is ""
    boundary, block = int(metadata["neuron.boundary_token"]), int(metadata["neuron.block_size"])
    token = {s: i for i, s in enumerate(strings) if i != boundary}
    unknown = [c for c in arguments.prefix if c not in token]
    if unknown:
        raise SystemExit(f"the prefix has characters outside the model's vocabulary: {unknown}")

    rng = np.random.default_rng(arguments.seed)
    for _ in range(arguments.count):
        line = [boundary] + [token[c] for c in arguments.prefix]
        while len(line) < 201:
            context = np.array([line[-block:]], dtype=np.int64)  # (1, time), time ≤ block
            logits = session.run(["logits"], {"tokens": context})[0][0, -1].astype(np.float64)
            scores = logits / arguments.temperature
            p = np.exp(scores - scores.max())
            p /= p.sum()
            nxt = int(rng.choice(len(p), p=p))
            if nxt == boundary:
                break
            line.append(nxt)
        print("".join(strings[t] for t in line[1:]))


if __name__ == "__main__":
    main()
