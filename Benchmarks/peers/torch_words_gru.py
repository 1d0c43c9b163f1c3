#!/usr/bin/env python3
"""F3 for PyTorch CPU: the character GRU of W8 trained on a word list until the test loss reaches
--target, training time only (evaluation excluded).

    python3 Benchmarks/peers/torch_words_gru.py --text /usr/share/dict/american-english \
        --init DIR/F3.safetensors [--batches DIR/F3-lines.json] --target 1.99 --max-epochs 10 --threads 2 [--verbose]

The lines are read as Neuron's TextCorpus reads them (README.md, "F3"): UTF-8, one word a line,
empty lines skipped, lowercased when the recipe says so, kept when every character is in the
recipe's class (`keep`, the body of a bracket expression such as `a-z`); the vocabulary is the
boundary token 0 then the characters by code point; a word of n characters is the features
⏎ c1 … cn (then 0) and the targets c1 … cn ⏎ (then -1, padding) over `blockSize` positions. The
network is torch_gru.build_gru_model's (nn.Embedding, nn.GRU from a learned h0, nn.Linear at every
position), the loss F.cross_entropy(ignore_index=-1), the optimizer torch.optim.Adam with the
recipe's rate (constant), betas and epsilon (PyTorch's defaults unless given). After each epoch the test loss,
-log softmax(z)[target] averaged over every counted position of the test lines, is measured in
batches (untimed).

--init gives the initial weights (our names, PyTorch's layouts, as W8's exchange file) and the
recipe in its metadata (learningRate, batchSize, epochs, optimizer adam|sgd, beta1, beta2, epsilon,
lowercase, keep, blockSize, seed, validationSplit, testSplit). --batches (what `Benchmarks F3 --peers` passes) makes
both engines train on the same batches: the lines Neuron trains on (indices among the kept lines,
in its training set's order), its test lines, each epoch's order over the training lines, and the
line count, block size and vocabulary it found, which the peer checks against its own reading.
Without it, the peer splits and shuffles with its own seeded generators. Prints one JSON line:
{"peer","version","threads","reached","epochs","trainSeconds","testLosses","recipe"}.
"""
import argparse
import json
import math
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402

PROG = "torch_words_gru"


def load_recipe(path):
    """(params, recipe) from an F3 file: the GRU's tensors, checked, and the recipe."""
    tensors, meta = pc.read_exchange(path)
    params, _ = pc.check_gru_params(tensors, path)
    try:
        recipe = {
            "lr": float(meta["learningRate"]),
            "batch": int(meta["batchSize"]),
            "epochs": int(meta["epochs"]),
            "optimizer": meta.get("optimizer", "adam"),
            "betas": (float(meta.get("beta1", "0.9")), float(meta.get("beta2", "0.999"))),
            "eps": float(meta.get("epsilon", "1e-8")),
            "lowercase": meta.get("lowercase", "false") == "true",
            "keep": meta.get("keep") or None,
            "blockSize": int(meta["blockSize"]) if meta.get("blockSize") else None,
            "seed": int(meta.get("seed", "42")),
            "validation": float(meta.get("validationSplit", "0.1")),
            "test": float(meta.get("testSplit", "0.1")),
        }
    except (KeyError, ValueError) as e:
        raise pc.PeerError(f"{path}: bad or missing recipe metadata: {e}") from e
    if recipe["optimizer"] not in ("adam", "sgd"):
        raise pc.PeerError(f"{path}: unsupported optimizer {recipe['optimizer']!r}")
    return params, recipe


def read_lines(path, lowercase, keep):
    """The kept lines of a UTF-8 file, as TextCorpus keeps them."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise pc.PeerError(f"cannot read {path} as UTF-8 text: {e}") from e
    if text.startswith("\ufeff"):
        text = text[1:]
    allowed = re.compile(f"[{keep}]+") if keep else None
    lines = []
    for line in text.split("\n"):
        line = line[:-1] if line.endswith("\r") else line
        if not line:
            continue
        if lowercase:
            line = line.lower()
        if allowed is None or allowed.fullmatch(line):
            lines.append(line)
    if not lines:
        raise pc.PeerError(f"{path}: no line kept")
    return lines


def token_rows(np, lines, index, block):
    """features (n, block): 0 then the tokens, 0 after; targets: the tokens then 0, -1 after."""
    x = np.zeros((len(lines), block), dtype=np.int64)
    t = np.full((len(lines), block), -1, dtype=np.int64)
    for row, line in enumerate(lines):
        tokens = [index[c] for c in line]
        x[row, 1:len(tokens) + 1] = tokens
        t[row, :len(tokens)] = tokens
        t[row, len(tokens)] = 0
    return x, t


def load_shared(path, lines, vocabulary, block, batch, epochs):
    """Neuron's training and test lines and epoch orders, checked against this reading."""
    import numpy as np
    try:
        with open(path) as f:
            shared = json.load(f)
        rows = np.asarray(shared["rows"], dtype=np.int64)
        test_rows = np.asarray(shared["testRows"], dtype=np.int64)
        orders = [np.asarray(order, dtype=np.int64) for order in shared["orders"]]
        given = (int(shared["lineCount"]), list(shared["vocabulary"]), int(shared["blockSize"]), int(shared["batchSize"]))
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise pc.PeerError(f"{path}: cannot read shared batches: {e}") from e
    if given[0] != len(lines):
        raise pc.PeerError(f"{path}: Neuron kept {given[0]} lines, this reading {len(lines)}")
    if given[1] != vocabulary:
        raise pc.PeerError(f"{path}: Neuron's vocabulary {''.join(given[1])!r} is not this reading's {''.join(vocabulary)!r}")
    if given[2] != block or given[3] != batch:
        raise pc.PeerError(f"{path}: block size {given[2]} and batches of {given[3]}, but the recipe's are {block} and {batch}")
    for name, r in (("rows", rows), ("testRows", test_rows)):
        if r.ndim != 1 or len(r) == 0 or r.min() < 0 or r.max() >= len(lines) or len(np.unique(r)) != len(r):
            raise pc.PeerError(f"{path}: {name} must be distinct line indices below {len(lines)}")
    if np.intersect1d(rows, test_rows).size:
        raise pc.PeerError(f"{path}: a test line is also a training line")
    if len(orders) < epochs:
        raise pc.PeerError(f"{path}: {len(orders)} epoch orders for up to {epochs} epochs")
    identity = np.arange(len(rows))
    for e, order in enumerate(orders):
        if order.shape != rows.shape or not np.array_equal(np.sort(order), identity):
            raise pc.PeerError(f"{path}: the order of epoch {e + 1} is not a permutation of the {len(rows)} rows")
    return rows, test_rows, orders


def train_to_target(torch, model, optimizer, train, test, batch, order_of, loss_of, args, prog=PROG):
    """Epochs of steps over `train` = (x, t) in `order_of(epoch)`'s order, batches of `batch`, until
    the test loss (the mean over every counted position of `test`'s lines, in sums of batches of
    1,000, untimed) is at most args.target or args.max_epochs have run.
    Returns (reached, epochs, training seconds, test losses)."""
    (x, t), (tx, tt) = train, test
    batches = math.ceil(len(x) / batch)

    def test_loss():
        total, counted = 0.0, 0
        with torch.no_grad():
            for i in range(0, len(tx), 1000):
                logits, targets = model(tx[i:i + 1000]), tt[i:i + 1000]
                total += float(torch.nn.functional.cross_entropy(
                    logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=-1, reduction="sum"))
                counted += int((targets >= 0).sum())
        return total / counted

    train_seconds, losses, reached, epoch = 0.0, [], False, 0
    while epoch < args.max_epochs:
        epoch += 1
        model.train()
        start = time.perf_counter()
        order = order_of(epoch)
        for k in range(batches):
            idx = order[k * batch:(k + 1) * batch]
            optimizer.zero_grad(set_to_none=True)
            loss = loss_of(torch, model(x[idx]), t[idx])
            loss.backward()
            optimizer.step()
        seconds = time.perf_counter() - start
        train_seconds += seconds

        model.eval()
        tested = test_loss()
        losses.append(tested)
        if args.verbose:
            print(f"{prog}: epoch {epoch}: {seconds:.2f} s, last loss {loss.item():.4f}, test loss {tested:.4f}",
                  file=sys.stderr)
        if not math.isfinite(loss.item()):
            raise pc.PeerError(f"training diverged (loss {loss.item()}) in epoch {epoch}")
        if tested <= args.target:
            reached = True
            break
    return reached, epoch, train_seconds, losses


def main():
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("--text", default="/usr/share/dict/american-english", help="the word list, one word a line")
    parser.add_argument("--init", required=True, help="F3.safetensors: initial weights + recipe")
    parser.add_argument("--target", type=float, required=True, help="test loss to reach (at or below)")
    parser.add_argument("--max-epochs", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batches", help="shared batches from Benchmarks (JSON): train on these lines in these "
                                          "orders and test on those, instead of a split and shuffles of our own")
    parser.add_argument("--verbose", action="store_true", help="progress on stderr")
    args = parser.parse_args()
    if args.max_epochs < 1:
        raise pc.PeerError("--max-epochs must be >= 1")
    pc.pin_threads(args.threads)

    import numpy as np
    import torch
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    from torch_gru import build_gru_model, sequence_cross_entropy

    params, r = load_recipe(args.init)
    lines = read_lines(args.text, r["lowercase"], r["keep"])
    vocabulary = [""] + sorted(set("".join(lines)))
    block = r["blockSize"] or max(map(len, lines)) + 1
    if max(map(len, lines)) > block - 1:
        raise pc.PeerError(f"a line of {max(map(len, lines))} characters does not fit block size {block}")
    if len(vocabulary) != params["layers.0.weight"].shape[0]:
        raise pc.PeerError(f"the text has {len(vocabulary)} tokens, the embedding {params['layers.0.weight'].shape[0]}")
    if args.batches:
        rows, test_rows, orders = load_shared(args.batches, lines, vocabulary, block, r["batch"], args.max_epochs)
    else:   # our own split: the last test fraction of a seeded permutation, validation before it
        permutation = np.random.default_rng(r["seed"]).permutation(len(lines))
        n_test = max(1, round(len(lines) * r["test"]))
        n_validation = round(len(lines) * r["validation"])
        rows, test_rows = permutation[:len(lines) - n_test - n_validation], permutation[len(lines) - n_test:]
        orders = None
    index = {c: i for i, c in enumerate(vocabulary)}
    x, t = (torch.from_numpy(a) for a in token_rows(np, [lines[i] for i in rows], index, block))
    tx, tt = (torch.from_numpy(a) for a in token_rows(np, [lines[i] for i in test_rows], index, block))

    torch.manual_seed(r["seed"])
    model = build_gru_model(torch, params)
    if r["optimizer"] == "adam":
        optimizer = torch.optim.Adam(model.parameters(), lr=r["lr"], betas=r["betas"], eps=r["eps"])
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=r["lr"])
    n = len(x)
    shuffle = torch.Generator().manual_seed(r["seed"])

    def order_of(epoch):
        return torch.from_numpy(orders[epoch - 1]) if orders is not None else torch.randperm(n, generator=shuffle)

    reached, epoch, train_seconds, losses = train_to_target(
        torch, model, optimizer, (x, t), (tx, tt), r["batch"], order_of, sequence_cross_entropy, args)

    pc.emit({"peer": "torch", "version": torch.__version__, "threads": args.threads,
             "reached": reached, "epochs": epoch, "trainSeconds": train_seconds,
             "testLosses": losses, "recipe": r})


if __name__ == "__main__":
    pc.run(PROG, main)
