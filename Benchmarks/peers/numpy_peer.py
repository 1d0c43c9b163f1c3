#!/usr/bin/env python3
"""NumPy peer for Neuron's benchmarks W1–W6: forward and backward written out, float32.

    python3 Benchmarks/peers/numpy_peer.py --file DIR/W4.safetensors --warmup N --steps M --threads 2

Prints one JSON line: {"peer","version","threads","checkLosses","stepSeconds"}. See README.md.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402  (imports neither numpy nor torch)

PROG = "numpy_peer"


def main():
    args = pc.parse_step_args(PROG, __doc__.splitlines()[0])  # threads pinned before the library is imported

    import numpy as np
    from numpy_mlp import MLP

    w = pc.load_workload(args.file)
    x, t, lr = w["x"], w["t"], w["lr"]

    # (1) check: checkSteps plain SGD steps from the initial weights, loss recorded before each
    net = MLP(w["layers"], w["activations"], w["loss"])
    net.check_dtypes(x, t)
    check = [float(net.sgd_step(x, t, lr)) for _ in range(w["check_steps"])]
    pc.finite(check, "a check loss")

    # (2) timing, from the initial weights again
    net = MLP(w["layers"], w["activations"], w["loss"])
    for _ in range(args.warmup):
        net.sgd_step(x, t, lr)
    clock = time.perf_counter_ns
    seconds = []
    for _ in range(args.steps):
        start = clock()
        net.sgd_step(x, t, lr)
        seconds.append((clock() - start) * 1e-9)
    last = float(net.sgd_step(x, t, lr))   # untimed: make sure training stayed finite
    pc.finite([last], "the loss after the timed steps")

    pc.emit({"peer": "numpy", "version": np.__version__, "threads": args.threads,
             "checkLosses": check, "stepSeconds": seconds})


if __name__ == "__main__":
    pc.run(PROG, main)
