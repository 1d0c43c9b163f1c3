#!/usr/bin/env python3
"""F4 for PyTorch CPU: W9's GPT trained on a word list, on Neuron's lines and batches, until the
test loss reaches --target, training time only (evaluation excluded).

    python3 Benchmarks/peers/torch_words_gpt.py --text /usr/share/dict/american-english \
        --init DIR/F4.safetensors --batches DIR/F4-lines.json --target 1.9 --max-epochs 6 --threads 2 [--verbose] \
        [--autocast]

The lines are read as torch_words_gru.py reads them (as Neuron's TextCorpus does: lowercased when
the recipe says so, kept when every character is in `keep`); the vocabulary is the boundary token
0 then the characters by code point; a word of n characters is the features ⏎ c1 … cn (then 0)
and the targets c1 … cn ⏎ (then -1) over `blockSize` positions. --batches gives the lines Neuron
trains and tests on (indices among the kept lines; each must fit the block), each epoch's order
over the training lines, and what Neuron read (line count, vocabulary, block size), checked here.
The network is torch_gpt.build_gpt_model's, eager; the loss F.cross_entropy(ignore_index=-1);
the optimizer torch.optim.AdamW (fused) with the recipe's rate, weight decay (every parameter),
betas and epsilon. After each epoch the test loss, -log softmax(z)[target] averaged over every
counted position of the test lines, is measured in batches of 1,000 (untimed). With --autocast
the model's forward passes, the test loss's included, and the training loss run under
torch.autocast("cpu", dtype=torch.bfloat16), PyTorch's CPU mixed precision (the products' operands
in bf16; weights, gradients and AdamW's state float32; backward outside the context); the logits
are cast to float32 before the loss, training and test alike.

--init: the initial weights (our names, PyTorch's layouts, as W9's exchange file, without x and t)
with metadata heads, learningRate, weightDecay, beta1, beta2, epsilon, batchSize, lowercase, keep,
blockSize. Prints one JSON line:
{"peer","version","threads","autocast","reached","epochs","trainSeconds","testLosses"}.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402

PROG = "torch_words_gpt"


def load_recipe(path):
    """(params, sizes, recipe) from an F4 file: the GPT's tensors, checked, and the recipe."""
    tensors, meta = pc.read_exchange(path)
    params, sizes = pc.check_gpt_params(tensors, meta, path)
    try:
        recipe = dict(pc.adamw_metadata(meta, path), batch=int(meta["batchSize"]), block=int(meta["blockSize"]),
                      lowercase=meta.get("lowercase", "false") == "true", keep=meta.get("keep") or None)
    except (KeyError, ValueError) as e:
        raise pc.PeerError(f"{path}: bad or missing recipe metadata (batchSize, blockSize): {e}") from e
    if recipe["block"] != sizes["time"]:
        raise pc.PeerError(f"{path}: block size {recipe['block']}, but the position table has {sizes['time']} rows")
    return params, sizes, recipe


def autocast_model(torch, model):
    """`model` with its forward under torch.autocast("cpu", dtype=torch.bfloat16), its bf16 logits
    returned cast to float32 (so that every loss taken of them, the test loss's sums included, is
    float32 arithmetic); the parameters stay `model`'s, float32, and train()/eval() reach it."""
    class Autocast(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = model

        def forward(self, x):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return self.inner(x).float()
    return Autocast()


def autocast_loss(torch, logits, t):
    """sequence_cross_entropy under the same autocast, of float32 logits."""
    from torch_gru import sequence_cross_entropy
    with torch.autocast("cpu", dtype=torch.bfloat16):
        return sequence_cross_entropy(torch, logits.float(), t)


def main():
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("--text", default="/usr/share/dict/american-english", help="the word list, one word a line")
    parser.add_argument("--init", required=True, help="F4.safetensors: initial weights + recipe")
    parser.add_argument("--batches", required=True, help="Neuron's lines and batches (JSON)")
    parser.add_argument("--target", type=float, required=True, help="test loss to reach (at or below)")
    parser.add_argument("--max-epochs", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--verbose", action="store_true", help="progress on stderr")
    pc.add_autocast_arg(parser)
    args = parser.parse_args()
    if args.max_epochs < 1:
        raise pc.PeerError("--max-epochs must be >= 1")
    pc.pin_threads(args.threads)

    import numpy as np
    import torch
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    from torch_gpt import build_gpt_model
    from torch_gru import sequence_cross_entropy
    from torch_words_gru import load_shared, read_lines, token_rows, train_to_target

    params, sizes, r = load_recipe(args.init)
    lines = read_lines(args.text, r["lowercase"], r["keep"])
    vocabulary = [""] + sorted(set("".join(lines)))
    if len(vocabulary) != sizes["vocabulary"]:
        raise pc.PeerError(f"the text has {len(vocabulary)} tokens, the embedding {sizes['vocabulary']}")
    block = r["block"]
    rows, test_rows, orders = load_shared(args.batches, lines, vocabulary, block, r["batch"], args.max_epochs)
    longest = max(len(lines[i]) for i in np.concatenate([rows, test_rows]))
    if longest > block - 1:
        raise pc.PeerError(f"{args.batches}: a line of {longest} characters does not fit block size {block}")
    index = {c: i for i, c in enumerate(vocabulary)}
    x, t = (torch.from_numpy(a) for a in token_rows(np, [lines[i] for i in rows], index, block))
    tx, tt = (torch.from_numpy(a) for a in token_rows(np, [lines[i] for i in test_rows], index, block))

    model = build_gpt_model(torch, params, sizes)
    optimizer = torch.optim.AdamW(model.parameters(), lr=r["lr"], betas=r["betas"], eps=r["eps"],
                                  weight_decay=r["weight_decay"], fused=True)
    loss_of = sequence_cross_entropy
    if args.autocast:
        # train_to_target (torch_words_gru.py) runs model(x) for the training steps and the test
        # loss, and loss_of(torch, logits, t) for the training loss, each backward outside both.
        model, loss_of = autocast_model(torch, model), autocast_loss
    reached, epoch, train_seconds, losses = train_to_target(
        torch, model, optimizer, (x, t), (tx, tt), r["batch"], lambda epoch: torch.from_numpy(orders[epoch - 1]),
        loss_of, args, prog=PROG)

    pc.emit({"peer": "torch", "version": torch.__version__, "threads": args.threads, "autocast": args.autocast,
             "reached": reached, "epochs": epoch, "trainSeconds": train_seconds, "testLosses": losses})


if __name__ == "__main__":
    pc.run(PROG, main)
