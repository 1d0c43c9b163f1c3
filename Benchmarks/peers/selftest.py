#!/usr/bin/env python3
"""Self-test of the Python peers: writes exchange files itself (seeded random weights in Neuron's
(inputs, outputs) layout), runs numpy_peer.py and torch_peer.py on them as separate processes, and
checks that their check losses agree within 1e-5 relative and that each reports --steps timings.

    $NEURON_PEERS_VENV/bin/python3 Benchmarks/peers/selftest.py [--steps 20] [--no-torch]

Without torch installed the torch runs are skipped (reported as such, never as passed).
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
}


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


def run_peer(script, path, warmup, steps, threads):
    cmd = [sys.executable, os.path.join(HERE, script), "--file", path, "--warmup", str(warmup),
           "--steps", str(steps), "--threads", str(threads)]
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
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated: " + ",".join(CASES))
    args = ap.parse_args()

    have_torch = False
    if not args.no_torch:
        try:
            import importlib.util
            have_torch = importlib.util.find_spec("torch") is not None
        except Exception:
            have_torch = False
    if not have_torch:
        print("selftest: torch is not installed for this python: torch runs SKIPPED")

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
            path = os.path.join(d, f"{name}.safetensors")
            n_check = write_case(path, name, seed=1234 + k)
            print(f"{name}: {CASES[name][0]} batch {CASES[name][1]} {CASES[name][2]} {CASES[name][3]}")
            results = {}
            for peer, script in (("numpy", "numpy_peer.py"), ("torch", "torch_peer.py")):
                if peer == "torch" and not have_torch:
                    skipped += 1
                    continue
                try:
                    r = run_peer(script, path, args.warmup, args.steps, args.threads)
                except Exception as e:
                    check(False, f"{peer} ran: {e}")
                    continue
                results[peer] = r
                ok = (r.get("peer") == peer and r.get("threads") == args.threads
                      and len(r.get("checkLosses", [])) == n_check
                      and len(r.get("stepSeconds", [])) == args.steps
                      and all(s > 0 for s in r["stepSeconds"]))
                med = statistics.median(r["stepSeconds"]) if r.get("stepSeconds") else float("nan")
                check(ok, f"{peer} {r.get('version')}: {len(r.get('checkLosses', []))} check losses, "
                          f"{len(r.get('stepSeconds', []))} step times, median {med * 1e6:.1f} µs, "
                          f"min {min(r['stepSeconds']) * 1e6:.1f} µs")
                print(f"    checkLosses {r.get('checkLosses')}")
            if "numpy" in results and "torch" in results:
                a, b = results["numpy"]["checkLosses"], results["torch"]["checkLosses"]
                worst = max((abs(p - q) / max(abs(p), abs(q), 1e-30) for p, q in zip(a, b)), default=0.0)
                check(len(a) == len(b) and worst <= RTOL,
                      f"numpy and torch check losses agree: worst relative difference {worst:.2e} "
                      f"(limit {RTOL:.0e})")
    print(f"selftest: {passed + failed} checks, torch runs skipped: {skipped}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
