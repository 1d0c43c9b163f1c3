#!/usr/bin/env python3
"""Self-test of the Python peers: writes exchange files itself (seeded random weights in Neuron's
(inputs, outputs) layout; for the W7 CNN, PyTorch's layouts under our names), runs the peers on
them as separate processes — numpy_peer.py, torch_peer.py, jax_peer.py for the MLPs; torch_cnn.py
and jax_cnn.py (NHWC and NCHW) for the CNN; torch_gru.py and jax_gru.py for the character GRU — and
checks that every peer's check losses agree with the first one's within 1e-5 relative (2e-5 for the
CNN, whose sums run over 1,600-long products in orders that differ more) and that each reports
--steps timings; then F2's shared batches and F3's peer (torch_words_gru.py, two epochs of
Data/words-small.txt, its own split and shared lines, a wrong vocabulary refused); for the GPT
(W9, W10) torch_gpt.py and jax_gpt.py, and F4's peer (torch_words_gpt.py, two epochs on shared
lines of Data/words-small.txt, a line longer than the block refused).

    $NEURON_PEERS_VENV/bin/python3 Benchmarks/peers/selftest.py [--steps 20] [--no-torch] [--no-jax] [--compile]

Without torch or jax installed their runs are skipped (reported as such, never as passed).
--compile adds torch_peer.py --compile and torch_gru.py --compile (torch.compile; slow to compile)
to the MLP and GRU cases.
Ends with a line 'N passed, N failed'; exits non-zero if anything failed.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
RTOL = 1e-5

# name: (sizes, batch, activations, loss, learningRate, checkSteps)
CASES = {
    "W3like": ([64, 128, 10], 32, "tanh,softmax", "softmaxCrossEntropy", "0.01", "3"),
    "W4like": ([784, 256, 128, 10], 64, "tanh,tanh,softmax", "softmaxCrossEntropy", "0.01", "3"),
    "W1like": ([1, 1], 1, "sigmoid", "halfSquaredError", "0.5", "3"),
    "W2like": ([2, 4, 1], 4, "tanh,sigmoid", "halfSquaredError", "0.5", "5"),
    "mixedHSE": ([16, 32, 24, 8], 16, "relu,sigmoid,identity", "halfSquaredError", "0.05", "4"),
    "W6like": ([1024, 1024, 1024, 1024], 128, "tanh,tanh,tanh", "halfSquaredError", "0.01", "3"),
    # the W7 CNN: (channels, height, width, c1, c2, hidden, classes), batch, -, loss, lr, checkSteps
    "W7cnn": ([1, 28, 28, 32, 64, 128, 10], 64, "", "softmaxCrossEntropy", "0.01", "3"),
    "smallCnn": ([3, 13, 11, 4, 5, 7, 3], 5, "", "softmaxCrossEntropy", "0.1", "4"),
    # the W8 character GRU: (vocabulary, features, hidden, time), batch, -, loss, lr, checkSteps
    "W8gru": ([27, 64, 64, 16], 32, "", "sequenceCrossEntropy", "0.1", "3"),
    "smallGru": ([7, 5, 3, 4], 3, "", "sequenceCrossEntropy", "0.5", "4"),
    # the W9 GPT: (vocabulary, time, features, heads, blocks), batch, -, loss, lr (AdamW), checkSteps
    "W9gpt": ([27, 16, 64, 4, 4], 32, "", "sequenceCrossEntropy", "0.0005", "3"),
    "smallGpt": ([7, 5, 6, 2, 2], 3, "", "sequenceCrossEntropy", "0.01", "4"),
}
CNN_CASES = ("W7cnn", "smallCnn")
GRU_CASES = ("W8gru", "smallGru")
GPT_CASES = ("W9gpt", "smallGpt")


def check_shared_batches(folder, check):
    """F2's shared batches (peer_common.load_batches): a good file is read back as written; labels
    that are not the file's, an order that is not a permutation, too few epochs are refused."""
    import json
    import numpy as np
    sys.path.insert(0, HERE)
    import peer_common as pc
    train_y = np.array([3, 1, 4, 1, 5, 9, 2, 6], dtype=np.uint8)
    good = {"rows": [6, 0, 3, 5], "labels": [2, 3, 1, 9], "batchSize": 2, "orders": [[1, 0, 3, 2], [3, 2, 1, 0]]}
    cases = [("good", good, None),
             ("labels", dict(good, labels=[2, 3, 1, 5]), "not the training file's labels"),
             ("order", dict(good, orders=[[1, 0, 3, 3], [3, 2, 1, 0]]), "epoch 1 is not a permutation"),
             ("epochs", dict(good, orders=[[1, 0, 3, 2]]), "1 epoch orders for up to 2"),
             ("row", dict(good, rows=[6, 0, 3, 8]), "distinct indices below 8")]
    for name, content, expected in cases:
        path = os.path.join(folder, f"batches-{name}.json")
        with open(path, "w") as f:
            json.dump(content, f)
        try:
            rows, orders = pc.load_batches(path, train_y, batch=2, epochs=2)
            ok = expected is None and rows.tolist() == good["rows"] and [o.tolist() for o in orders] == good["orders"]
            check(ok, f"shared batches ({name}): read back as written")
        except pc.PeerError as e:
            check(expected is not None and expected in str(e), f"shared batches ({name}) refused: {e}")


def write_cnn_case(path, name, seed):
    """A W7 exchange file (README.md, "W7"): x (batch, channels, height, width) in [0, 1), one-hot
    t, PyTorch-default-like uniform weights (U(±1/√fan_in)) in PyTorch's layouts."""
    import numpy as np
    from safetensors.numpy import save_file
    sys.path.insert(0, HERE)
    import peer_common as pc
    (channels, height, width, c1, c2, hidden, classes), batch, _, loss, lr, check = CASES[name]
    rng = np.random.default_rng(seed)
    h, w = pc.cnn_shapes(channels, height, width, c1, c2)
    shapes = {"layers.0.weight": (c1, channels, 3, 3), "layers.0.bias": (c1,),
              "layers.2.weight": (c2, c1, 3, 3), "layers.2.bias": (c2,),
              "layers.5.weight": (hidden, c2 * h * w), "layers.5.bias": (hidden,),
              "layers.6.weight": (classes, hidden), "layers.6.bias": (classes,)}
    tensors = {"x": rng.uniform(0, 1, (batch, channels, height, width)).astype(np.float32)}
    t = np.zeros((batch, classes), dtype=np.float32)
    t[np.arange(batch), rng.integers(0, classes, batch)] = 1
    tensors["t"] = t
    for key, shape in shapes.items():
        weight = shapes[key.replace("bias", "weight")]
        bound = 1 / np.sqrt(np.prod(weight[1:]))
        tensors[key] = rng.uniform(-bound, bound, shape).astype(np.float32)
    save_file(tensors, path, metadata={"loss": loss, "learningRate": lr, "checkSteps": check})
    return int(check)


def write_gru_case(path, name, seed):
    """A W8 exchange file (README.md, "W8"): rows as TextCorpus makes them (features ⏎ c1 … cn then
    0, targets c1 … cn ⏎ then -1 as padding, n drawn in 1…time-1), nn.Embedding's N(0, 1), nn.GRU's
    and nn.Linear's U(±1/√hidden), and a non-zero h0 so that its gradient matters."""
    import numpy as np
    from safetensors.numpy import save_file
    (vocabulary, features, hidden, time), batch, _, loss, lr, check = CASES[name]
    rng = np.random.default_rng(seed)
    x = np.zeros((batch, time), dtype=np.float32)
    t = np.full((batch, time), -1, dtype=np.float32)
    for row in range(batch):
        n = int(rng.integers(1, time))
        tokens = rng.integers(1, vocabulary, n)
        x[row, 1:n + 1] = tokens
        t[row, :n] = tokens
        t[row, n] = 0
    bound = 1 / np.sqrt(hidden)
    shapes = {"layers.1.weight_ih_l0": (3 * hidden, features), "layers.1.weight_hh_l0": (3 * hidden, hidden),
              "layers.1.bias_ih_l0": (3 * hidden,), "layers.1.bias_hh_l0": (3 * hidden,), "layers.1.h0": (hidden,),
              "layers.2.weight": (vocabulary, hidden), "layers.2.bias": (vocabulary,)}
    tensors = {"x": x, "t": t, "layers.0.weight": rng.standard_normal((vocabulary, features)).astype(np.float32)}
    for key, shape in shapes.items():
        tensors[key] = rng.uniform(-bound, bound, shape).astype(np.float32)
    save_file(tensors, path, metadata={"loss": loss, "learningRate": lr, "checkSteps": check})
    return int(check)


def write_gpt_case(path, name, seed):
    """A W9/W10 exchange file (README.md, "W9, W10"): rows as write_gru_case makes them, nn.Embedding's
    N(0, 1), the position table, every weight N(0, 0.1²) (larger than nanoGPT's 0.02, so that the
    scores are not all but zero), LayerNorm scales near 1 and every bias small but not zero, so
    that their gradients matter; AdamW with weight decay 0.01."""
    import numpy as np
    from safetensors.numpy import save_file
    sys.path.insert(0, HERE)
    import peer_common as pc
    (vocabulary, time, features, heads, blocks), batch, _, loss, lr, check = CASES[name]
    rng = np.random.default_rng(seed)
    x = np.zeros((batch, time), dtype=np.float32)
    t = np.full((batch, time), -1, dtype=np.float32)
    for row in range(batch):
        n = int(rng.integers(1, time))
        tokens = rng.integers(1, vocabulary, n)
        x[row, 1:n + 1] = tokens
        t[row, :n] = tokens
        t[row, n] = 0
    f, m = features, 4 * features
    shapes = {"wte": (vocabulary, f), "wpe": (time, f), "ln1_w": (f,), "ln1_b": (f,), "attn_w": (3 * f, f),
              "attn_b": (3 * f,), "proj_w": (f, f), "proj_b": (f,), "ln2_w": (f,), "ln2_b": (f,), "fc_w": (m, f),
              "fc_b": (m,), "fc2_w": (f, m), "fc2_b": (f,), "lnf_w": (f,), "lnf_b": (f,), "head_w": (vocabulary, f),
              "head_b": (vocabulary,)}
    tensors = {"x": x, "t": t}
    for role, _, key in pc.gpt_names(blocks):
        shape = shapes[role]
        if role == "wte":
            tensors[key] = rng.standard_normal(shape).astype(np.float32)
        elif role.endswith("_w") and len(shape) == 1:   # a LayerNorm's scale
            tensors[key] = (1 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
        else:
            tensors[key] = (0.1 * rng.standard_normal(shape)).astype(np.float32)
    save_file(tensors, path, metadata={"loss": loss, "learningRate": lr, "checkSteps": check, "heads": str(heads),
                                       "optimizer": "adamw", "weightDecay": "0.01", "beta1": "0.9",
                                       "beta2": "0.999", "epsilon": "1e-08"})
    return int(check)


def check_words(folder, args, check):
    """F3's peer (torch_words_gru.py) for two epochs on Data/words-small.txt from W8-sized weights:
    its own split, then Neuron-style shared lines; a vocabulary that is not its reading's is refused."""
    import numpy as np
    from safetensors.numpy import load_file, save_file
    text = os.path.join(HERE, "..", "..", "Data", "words-small.txt")
    init = os.path.join(folder, "F3.safetensors")
    write_gru_case(init, "W8gru", seed=99)   # then without its batch, and with F3's recipe
    tensors = {k: v for k, v in load_file(init).items() if k.startswith("layers.")}
    save_file(tensors, init, metadata={"learningRate": "0.01", "optimizer": "adam", "batchSize": "32", "epochs": "2",
                                       "keep": "a-z", "seed": "42"})

    def run(extra):
        cmd = [sys.executable, os.path.join(HERE, "torch_words_gru.py"), "--text", text, "--init", init,
               "--target", "0", "--max-epochs", "2", "--threads", str(args.threads), *extra]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=900)

    p = run([])
    try:
        r = json.loads(p.stdout.splitlines()[-1])
        ok = (p.returncode == 0 and r["peer"] == "torch" and r["epochs"] == 2 and not r["reached"]
              and len(r["testLosses"]) == 2 and r["testLosses"][1] < np.log(27))
        check(ok, f"torch_words_gru.py, its own split: test losses {r['testLosses']} (below ln 27 = 3.30)")
    except (IndexError, KeyError, ValueError):
        check(False, f"torch_words_gru.py ran: {p.stderr.strip()}")
    with open(text) as f:
        count = sum(1 for line in f if line.strip())
    lines = {"lineCount": count, "vocabulary": [""] + [chr(c) for c in range(ord("a"), ord("z") + 1)],
             "blockSize": 18, "batchSize": 32, "rows": list(range(0, 800)), "testRows": list(range(900, count)),
             "orders": [list(range(800)), list(reversed(range(800)))]}
    for name, content, expected in [("good", lines, None),
                                    ("vocabulary", dict(lines, vocabulary=lines["vocabulary"][:-1] + ["Z"]),
                                     "is not this reading's")]:
        path = os.path.join(folder, f"lines-{name}.json")
        with open(path, "w") as f:
            json.dump(content, f)
        p = run(["--batches", path])
        if expected is None:
            check(p.returncode == 0, f"torch_words_gru.py on shared lines ({name}) ran: {p.stderr.strip()[-300:]}")
        else:
            check(p.returncode != 0 and expected in p.stderr, f"torch_words_gru.py refused shared lines ({name}): "
                                                             f"{p.stderr.strip()[-200:]}")


def check_words_gpt(folder, args, check):
    """F4's peer (torch_words_gpt.py) for two epochs on shared lines of Data/words-small.txt from
    W9-sized weights; a line longer than the block is refused."""
    import numpy as np
    from safetensors.numpy import load_file, save_file
    text = os.path.join(HERE, "..", "..", "Data", "words-small.txt")
    init = os.path.join(folder, "F4.safetensors")
    write_gpt_case(init, "W9gpt", seed=98)
    tensors = {k: v for k, v in load_file(init).items() if k.startswith("layers.")}
    save_file(tensors, init, metadata={"heads": "4", "learningRate": "0.0005", "weightDecay": "0.01", "beta1": "0.9",
                                       "beta2": "0.999", "epsilon": "1e-08", "batchSize": "32", "keep": "a-z",
                                       "blockSize": "16"})
    with open(text) as f:
        words = [line.strip() for line in f if line.strip()]
    fitting = [i for i, w in enumerate(words) if len(w) <= 15]
    longer = [i for i, w in enumerate(words) if len(w) > 15]
    lines = {"lineCount": len(words), "vocabulary": [""] + [chr(c) for c in range(ord("a"), ord("z") + 1)],
             "blockSize": 16, "batchSize": 32, "rows": fitting[:800], "testRows": fitting[800:1000],
             "orders": [list(range(800)), list(reversed(range(800)))]}
    cases = [("good", lines, None)]
    if longer:
        cases.append(("long", dict(lines, testRows=fitting[800:999] + longer[:1]), "does not fit block size 16"))
    for name, content, expected in cases:
        path = os.path.join(folder, f"gpt-lines-{name}.json")
        with open(path, "w") as f:
            json.dump(content, f)
        cmd = [sys.executable, os.path.join(HERE, "torch_words_gpt.py"), "--text", text, "--init", init, "--batches", path,
               "--target", "0", "--max-epochs", "2", "--threads", str(args.threads)]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        if expected is None:
            try:
                r = json.loads(p.stdout.splitlines()[-1])
                ok = (p.returncode == 0 and r["peer"] == "torch" and r["epochs"] == 2 and not r["reached"]
                      and len(r["testLosses"]) == 2 and r["testLosses"][1] < r["testLosses"][0] < np.log(27) + 1)
                check(ok, f"torch_words_gpt.py on shared lines: test losses {r['testLosses']} (falling)")
            except (IndexError, KeyError, ValueError):
                check(False, f"torch_words_gpt.py ran: {p.stderr.strip()[-300:]}")
        else:
            check(p.returncode != 0 and expected in p.stderr, f"torch_words_gpt.py refused shared lines ({name}): "
                                                             f"{p.stderr.strip()[-200:]}")


def write_case(path, name, seed):
    import numpy as np
    from safetensors.numpy import save_file
    sizes, batch, acts, loss, lr, check = CASES[name]
    rng = np.random.default_rng(seed)
    tensors = {}
    if name == "W1like":   # the single neuron of Docs/Reference.md §3: x 0.01, target 0.1, w = b = 0.5
        tensors["x"] = np.array([[0.01]], dtype=np.float32)
        tensors["t"] = np.array([[0.1]], dtype=np.float32)
        tensors["layers.0.weight"] = np.array([[0.5]], dtype=np.float32)
        tensors["layers.0.bias"] = np.array([0.5], dtype=np.float32)
    else:
        if name == "W2like":
            tensors["x"] = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], dtype=np.float32)
            tensors["t"] = np.array([[0], [1], [1], [0]], dtype=np.float32)
        else:
            tensors["x"] = rng.standard_normal((batch, sizes[0])).astype(np.float32)
            if loss == "softmaxCrossEntropy":
                t = np.zeros((batch, sizes[-1]), dtype=np.float32)
                t[np.arange(batch), rng.integers(0, sizes[-1], batch)] = 1
            else:
                t = rng.uniform(-0.5, 0.5, (batch, sizes[-1])).astype(np.float32)
            tensors["t"] = t
        for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
            bound = np.sqrt(6.0 / (n_in + n_out))            # Xavier/Glorot uniform
            tensors[f"layers.{i}.weight"] = rng.uniform(-bound, bound, (n_in, n_out)).astype(np.float32)
            tensors[f"layers.{i}.bias"] = rng.uniform(-0.1, 0.1, n_out).astype(np.float32)
    meta = {"activations": acts, "loss": loss, "learningRate": lr, "checkSteps": check}
    save_file(tensors, path, metadata=meta)
    return int(check)


def run_peer(script, path, warmup, steps, threads, extra=()):
    cmd = [sys.executable, os.path.join(HERE, script), "--file", path, "--warmup", str(warmup),
           "--steps", str(steps), "--threads", str(threads), *extra]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise RuntimeError(f"{script} exited {p.returncode}: {p.stderr.strip()}")
    lines = [l for l in p.stdout.splitlines() if l.strip()]
    if len(lines) != 1:
        raise RuntimeError(f"{script} printed {len(lines)} lines on stdout, expected 1: {p.stdout!r}")
    return json.loads(lines[0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--no-jax", action="store_true")
    ap.add_argument("--compile", action="store_true", help="also torch_peer.py --compile")
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated: " + ",".join(CASES))
    ap.add_argument("--no-words", action="store_true", help="skip F3's peer on Data/words-small.txt")
    args = ap.parse_args()

    import importlib.util

    def installed(module, flag):
        if flag:
            return False
        try:
            return importlib.util.find_spec(module) is not None
        except Exception:
            return False
    have = {"numpy": True, "torch": installed("torch", args.no_torch), "jax": installed("jax", args.no_jax)}
    for lib in ("torch", "jax"):
        if not have[lib]:
            print(f"selftest: {lib} is not installed for this python (or turned off): {lib} runs SKIPPED")

    passed = failed = skipped = 0

    def check(ok, what):
        nonlocal passed, failed
        print(f"  {'PASS' if ok else 'FAIL'}: {what}")
        if ok:
            passed += 1
        else:
            failed += 1

    with tempfile.TemporaryDirectory(prefix="neuron-peers-selftest-") as d:
        for k, name in enumerate(args.cases.split(",")):
            if name not in CASES:
                print(f"selftest: unknown case {name!r}")
                return 2
            path = os.path.join(d, f"{name}.safetensors")
            cnn = name in CNN_CASES
            if name in GPT_CASES:
                n_check = write_gpt_case(path, name, seed=1234 + k)
                peers = [("torch", "torch_gpt.py", ()), ("jax", "jax_gpt.py", ())]
                if args.compile:
                    peers.append(("torch.compile", "torch_gpt.py", ("--compile",)))
            elif name in GRU_CASES:
                n_check = write_gru_case(path, name, seed=1234 + k)
                peers = [("torch", "torch_gru.py", ()), ("jax", "jax_gru.py", ())]
                if args.compile:
                    peers.append(("torch.compile", "torch_gru.py", ("--compile",)))
            elif cnn:
                n_check = write_cnn_case(path, name, seed=1234 + k)
                peers = [("torch", "torch_cnn.py", ()), ("jax", "jax_cnn.py", ("--layout", "NHWC")),
                         ("jax", "jax_cnn.py", ("--layout", "NCHW"))]
            else:
                n_check = write_case(path, name, seed=1234 + k)
                peers = [("numpy", "numpy_peer.py", ()), ("torch", "torch_peer.py", ()),
                         ("jax", "jax_peer.py", ())]
                if args.compile:
                    peers.append(("torch.compile", "torch_peer.py", ("--compile",)))
            kind = "gpt" if name in GPT_CASES else "gru" if name in GRU_CASES else "cnn"
            print(f"{name}: {CASES[name][0]} batch {CASES[name][1]} {CASES[name][2] or kind} {CASES[name][3]}")
            results = []
            for peer, script, extra in peers:
                if not have[peer.split(".")[0]]:
                    skipped += 1
                    continue
                label = " ".join([script, *extra])
                try:
                    r = run_peer(script, path, args.warmup, args.steps, args.threads, extra)
                except Exception as e:
                    check(False, f"{label} ran: {e}")
                    continue
                ok = (r.get("peer") == peer and r.get("threads") == args.threads
                      and len(r.get("checkLosses", [])) == n_check
                      and len(r.get("stepSeconds", [])) == args.steps
                      and all(s > 0 for s in r["stepSeconds"]))
                med = statistics.median(r["stepSeconds"]) if r.get("stepSeconds") else float("nan")
                check(ok, f"{label} ({r.get('peer')} {r.get('version')}): {len(r.get('checkLosses', []))} "
                          f"check losses, {len(r.get('stepSeconds', []))} step times, median "
                          f"{med * 1e6:.1f} µs, min {min(r['stepSeconds']) * 1e6:.1f} µs")
                print(f"    checkLosses {r.get('checkLosses')}")
                results.append((label, r))
            # the losses must fall (a step that does nothing would agree with itself)
            if results and n_check >= 2:
                first = results[0][1]["checkLosses"]
                check(first[-1] < first[0], f"{results[0][0]}: the loss falls over the check steps "
                                            f"({first[0]:.6f} → {first[-1]:.6f})")
            limit = 2e-5 if cnn or name in GPT_CASES else RTOL
            for label, r in results[1:]:
                a, b = results[0][1]["checkLosses"], r["checkLosses"]
                worst = max((abs(p - q) / max(abs(p), abs(q), 1e-30) for p, q in zip(a, b)), default=0.0)
                check(len(a) == len(b) and worst <= limit,
                      f"{results[0][0]} and {label} check losses agree: worst relative difference "
                      f"{worst:.2e} (limit {limit:.0e})")
        check_shared_batches(d, check)
        if have["torch"] and not args.no_words:
            check_words(d, args, check)
            check_words_gpt(d, args, check)
    print(f"selftest: {passed + failed} checks, peer runs skipped (library missing): {skipped}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
