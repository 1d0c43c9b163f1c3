"""Shared helpers for the Python peers: argument parsing, thread pinning, reading the exchange file.

This module must not import numpy or torch at import time: the thread-count environment
variables have to be set before either is imported (see pin_threads).
"""
import argparse
import json
import math
import os
import sys
import time

ACTIVATIONS = ("tanh", "sigmoid", "relu", "identity", "softmax")
LOSSES = ("halfSquaredError", "softmaxCrossEntropy")


class PeerError(Exception):
    """An error the peer reports as one line on stderr before exiting non-zero."""


def _step_metadata(meta, path):
    """The exchange file's learning rate and check-step count (default 3), checked."""
    try:
        lr = float(meta["learningRate"])
        check_steps = int(meta.get("checkSteps", "3"))
    except (KeyError, ValueError) as e:
        raise PeerError(f"{path}: bad or missing metadata learningRate/checkSteps: {e}") from e
    if check_steps < 0:
        raise PeerError(f"{path}: checkSteps must be >= 0")
    return lr, check_steps


def pin_threads(n):
    """Sets the BLAS/OpenMP thread-count variables. Call before importing numpy or torch."""
    if n < 1:
        raise PeerError(f"--threads must be >= 1 (got {n})")
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
        os.environ[var] = str(n)


def pin_xla_threads(n):
    """Limits XLA's CPU runtime (JAX) to n threads. Call before importing jax.

    XLA sizes its intra-op thread pool by the CPUs the process may run on, so the process is
    pinned to the first n of them (a no-op when n covers them all, as with 2 threads on this
    2-core machine); Eigen's multi-threading inside XLA stays on (its default) and XLA_FLAGS
    given by the caller are kept."""
    allowed = sorted(os.sched_getaffinity(0))
    if n < len(allowed):
        os.sched_setaffinity(0, allowed[:n])
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_cpu_multi_thread_eigen" not in flags:
        os.environ["XLA_FLAGS"] = (flags + " --xla_cpu_multi_thread_eigen=true").strip()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")


def parse_step_args(prog, description, compile_flag=False):
    """A step peer's arguments, checked, with its threads pinned before its library is imported."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    add_step_args(parser)
    if compile_flag:
        parser.add_argument("--compile", action="store_true",
                            help="wrap the model in torch.compile (reported as peer 'torch.compile')")
    args = parser.parse_args()
    if args.warmup < 0 or args.steps < 1:
        raise PeerError("--warmup must be >= 0 and --steps >= 1")
    pin_threads(args.threads)
    return args


def parse_fashion_args(prog, description, autocast=False):
    """An F1 peer's arguments, checked, with its threads pinned before its library is imported;
    with `autocast`, also --autocast (PyTorch's)."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    add_fashion_args(parser)
    parser.add_argument("--verbose", action="store_true", help="progress on stderr")
    if autocast:
        add_autocast_arg(parser)
    args = parser.parse_args()
    if args.max_epochs < 1:
        raise PeerError("--max-epochs must be >= 1")
    pin_threads(args.threads)
    return args


def run(prog, main):
    """Runs a peer's main(): any failure becomes one line on stderr and a non-zero exit."""
    try:
        main()
    except PeerError as e:
        fail(prog, e)
    except Exception as e:
        fail(prog, f"{type(e).__name__}: {e}")


def fail(prog, message, code=1):
    print(f"{prog}: error: {' '.join(str(message).split())}", file=sys.stderr)
    sys.exit(code)


def emit(obj):
    """Prints exactly one line of strict JSON (no NaN/Infinity) on stdout."""
    print(json.dumps(obj, allow_nan=False, separators=(",", ":")))
    sys.stdout.flush()


def resident_bytes():
    """Bytes this process holds in memory now (Linux's /proc/self/status VmRSS), or None elsewhere."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def peak_resident_bytes():
    """The most bytes this process has held in memory (getrusage's ru_maxrss: KiB on Linux, bytes on macOS)."""
    import resource
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def finite(values, what):
    for v in values:
        if not math.isfinite(v):
            raise PeerError(f"{what} is not finite: {values}")
    return values


def load_layers(tensors, path):
    """Returns [(weight (in,out), bias (out,))] for layers.0.. from a safetensors dict."""
    import numpy as np
    layers = []
    i = 0
    while f"layers.{i}.weight" in tensors:
        w = tensors[f"layers.{i}.weight"]
        b = tensors.get(f"layers.{i}.bias")
        if b is None:
            raise PeerError(f"{path}: layers.{i}.bias is missing")
        if w.dtype != np.float32 or b.dtype != np.float32:
            raise PeerError(f"{path}: layers.{i} must be F32 (got {w.dtype}, {b.dtype})")
        if w.ndim != 2 or b.ndim != 1 or b.shape[0] != w.shape[1]:
            raise PeerError(f"{path}: layers.{i}.weight {w.shape} / bias {b.shape} do not fit "
                            "the (inputs, outputs) / (outputs) layout")
        if layers and layers[-1][0].shape[1] != w.shape[0]:
            raise PeerError(f"{path}: layers.{i - 1} has {layers[-1][0].shape[1]} outputs but "
                            f"layers.{i} has {w.shape[0]} inputs")
        layers.append((np.ascontiguousarray(w), np.ascontiguousarray(b)))
        i += 1
    if not layers:
        raise PeerError(f"{path}: no layers.0.weight")
    return layers


def read_metadata(path):
    from safetensors import safe_open
    with safe_open(path, "np") as f:
        return f.metadata() or {}


def parse_activations(meta, n_layers, path):
    acts = [a.strip() for a in meta.get("activations", "").split(",") if a.strip()]
    if len(acts) != n_layers:
        raise PeerError(f"{path}: metadata activations {meta.get('activations')!r} does not name "
                        f"one activation for each of the {n_layers} layers")
    for i, a in enumerate(acts):
        if a not in ACTIVATIONS:
            raise PeerError(f"{path}: unknown activation {a!r} (known: {', '.join(ACTIVATIONS)})")
        if a == "softmax" and i != n_layers - 1:
            raise PeerError(f"{path}: softmax is allowed only on the last layer")
    return acts


def read_exchange(path):
    """(tensors, metadata) of an exchange file, or a PeerError naming it: missing, or not safetensors."""
    from safetensors.numpy import load_file
    if not os.path.isfile(path):
        raise PeerError(f"no such file: {path}")
    try:
        return load_file(path), read_metadata(path)
    except Exception as e:  # safetensors raises its own error types
        raise PeerError(f"{path}: cannot read as safetensors: {e}") from e


def load_workload(path):
    """Reads a W1–W6 exchange file. Returns a dict with x, t, layers, activations, loss, lr,
    check_steps, all arrays float32 and C-contiguous."""
    import numpy as np
    tensors, meta = read_exchange(path)
    for name in ("x", "t"):
        if name not in tensors:
            raise PeerError(f"{path}: tensor {name!r} is missing")
        if tensors[name].dtype != np.float32 or tensors[name].ndim != 2:
            raise PeerError(f"{path}: {name} must be a 2-D F32 tensor "
                            f"(got {tensors[name].dtype} {tensors[name].shape})")
    x = np.ascontiguousarray(tensors["x"])
    t = np.ascontiguousarray(tensors["t"])
    layers = load_layers(tensors, path)
    if x.shape[1] != layers[0][0].shape[0]:
        raise PeerError(f"{path}: x has {x.shape[1]} columns, layers.0 takes {layers[0][0].shape[0]}")
    if t.shape != (x.shape[0], layers[-1][0].shape[1]):
        raise PeerError(f"{path}: t is {t.shape}, expected {(x.shape[0], layers[-1][0].shape[1])}")
    acts = parse_activations(meta, len(layers), path)
    loss = meta.get("loss", "")
    if loss not in LOSSES:
        raise PeerError(f"{path}: metadata loss {loss!r} is not one of {', '.join(LOSSES)}")
    if loss == "softmaxCrossEntropy" and acts[-1] != "softmax":
        raise PeerError(f"{path}: softmaxCrossEntropy needs softmax as the last activation")
    if loss == "halfSquaredError" and acts[-1] == "softmax":
        raise PeerError(f"{path}: softmax is only supported fused with softmaxCrossEntropy")
    lr, check_steps = _step_metadata(meta, path)
    return {"x": x, "t": t, "layers": layers, "activations": acts, "loss": loss,
            "lr": lr, "check_steps": check_steps}


def add_step_args(parser):
    parser.add_argument("--file", required=True, help="<dir>/<W>.safetensors exchange file")
    parser.add_argument("--warmup", type=int, default=10, help="untimed steps before timing")
    parser.add_argument("--steps", type=int, default=100, help="timed steps")
    parser.add_argument("--threads", type=int, default=2, help="BLAS/OpenMP/torch threads")


def add_autocast_arg(parser):
    """--autocast: the forward passes and the loss under torch.autocast("cpu", bfloat16), PyTorch's CPU
    mixed precision (weights, gradients and optimizer state float32), against Neuron's bf16 products."""
    parser.add_argument("--autocast", action="store_true",
                        help='forward passes and loss under torch.autocast("cpu", dtype=torch.bfloat16)')


def add_fashion_args(parser):
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist",
                        help="folder with the four Fashion-MNIST IDX .gz files")
    parser.add_argument("--init", required=True, help="F1.safetensors: initial layers + recipe")
    parser.add_argument("--target", type=float, default=0.88, help="test accuracy to reach")
    parser.add_argument("--max-epochs", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)


def load_fashion(folder):
    """Returns (train_x, train_y, test_x, test_y): float32 pixels / 255 as (n, 784), int64 labels."""
    import gzip
    import numpy as np

    def idx(name, magic):
        p = os.path.join(folder, name)
        if not os.path.isfile(p):
            raise PeerError(f"missing Fashion-MNIST file {p}")
        with gzip.open(p, "rb") as f:
            data = f.read()
        m = int.from_bytes(data[0:4], "big")
        if m != magic:
            raise PeerError(f"{p}: IDX magic {m:#x}, expected {magic:#x}")
        ndim = magic & 0xFF
        dims = [int.from_bytes(data[4 + 4 * k: 8 + 4 * k], "big") for k in range(ndim)]
        arr = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim)
        if arr.size != int(np.prod(dims)):
            raise PeerError(f"{p}: {arr.size} bytes of data for dimensions {dims}")
        return arr.reshape(dims[0], -1) if ndim > 1 else arr

    def images(name):
        a = idx(name, 0x00000803)
        return a.astype(np.float32) / np.float32(255.0)

    def labels(name):
        return idx(name, 0x00000801).astype(np.int64)

    return (images("train-images-idx3-ubyte.gz"), labels("train-labels-idx1-ubyte.gz"),
            images("t10k-images-idx3-ubyte.gz"), labels("t10k-labels-idx1-ubyte.gz"))


def load_fashion_init(path):
    """Reads F1.safetensors: returns (layers, activations, recipe dict)."""
    tensors, meta = read_exchange(path)
    layers = load_layers(tensors, path)
    acts = parse_activations(meta, len(layers), path) if "activations" in meta else \
        ["tanh"] * (len(layers) - 1) + ["softmax"]
    if acts[-1] != "softmax":
        raise PeerError(f"{path}: the F1 network must end in softmax (cross-entropy)")
    try:
        recipe = {
            "lr": float(meta.get("learningRate", "0.02")),
            "momentum": float(meta.get("momentum", "0.9")),
            "batch": int(meta.get("batchSize", "64")),
            "epochs": int(meta.get("epochs", "20")),
            "schedule": meta.get("schedule", "cosine"),
            "validation": float(meta.get("validationSplit", "0.1")),
            "seed": int(meta.get("seed", "42")),
        }
    except ValueError as e:
        raise PeerError(f"{path}: bad recipe metadata: {e}") from e
    if recipe["schedule"] not in ("cosine", "constant", "none"):
        raise PeerError(f"{path}: unsupported schedule {recipe['schedule']!r}")
    if layers[0][0].shape[0] != 784 or layers[-1][0].shape[1] != 10:
        raise PeerError(f"{path}: network must take 784 inputs and give 10 outputs")
    return layers, acts, recipe


def split_train(n, fraction, seed):
    """Indices (train, validation): the last `fraction` of a seeded permutation is held out."""
    import numpy as np
    perm = np.random.default_rng(seed).permutation(n)
    n_val = int(round(n * fraction))
    return perm[: n - n_val], perm[n - n_val:]


def load_batches(path, train_y, batch, epochs):
    """(rows, orders) from Benchmarks' shared batches (F2): the training file's rows the run trains
    on, in its order, and each epoch's order over them, checked: the labels it sends must be the
    file's labels of those rows, each order a permutation, one order per epoch at least."""
    import json
    import numpy as np
    try:
        with open(path) as f:
            shared = json.load(f)
        rows = np.asarray(shared["rows"], dtype=np.int64)
        labels = np.asarray(shared["labels"], dtype=np.int64)
        orders = [np.asarray(order, dtype=np.int64) for order in shared["orders"]]
        given_batch = int(shared["batchSize"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise PeerError(f"{path}: cannot read shared batches: {e}") from e
    if rows.ndim != 1 or len(rows) == 0 or rows.min() < 0 or rows.max() >= len(train_y) or len(np.unique(rows)) != len(rows):
        raise PeerError(f"{path}: rows must be distinct indices below {len(train_y)}")
    if labels.shape != rows.shape or not np.array_equal(np.asarray(train_y, dtype=np.int64)[rows], labels):
        raise PeerError(f"{path}: the labels sent are not the training file's labels of those rows")
    if given_batch != batch:
        raise PeerError(f"{path}: batches of {given_batch}, but the recipe's are {batch}")
    if len(orders) < epochs:
        raise PeerError(f"{path}: {len(orders)} epoch orders for up to {epochs} epochs")
    identity = np.arange(len(rows))
    for e, order in enumerate(orders):
        if order.shape != rows.shape or not np.array_equal(np.sort(order), identity):
            raise PeerError(f"{path}: the order of epoch {e + 1} is not a permutation of the {len(rows)} rows")
    return rows, orders


# The W7 CNN (issue 11): our layer indices and PyTorch's names and layouts.
#   0 conv2d 3×3 valid + relu   layers.0.weight (c1, channels, 3, 3)  layers.0.bias (c1)
#   1 maxPool2d 2 (stride 2)
#   2 conv2d 3×3 valid + relu   layers.2.weight (c2, c1, 3, 3)        layers.2.bias (c2)
#   3 maxPool2d 2 (stride 2)
#   4 flatten, (C, H, W) order
#   5 dense + relu              layers.5.weight (hidden, c2·h·w)      layers.5.bias (hidden)
#   6 dense, softmax in the loss layers.6.weight (classes, hidden)    layers.6.bias (classes)
CNN_TENSORS = ("layers.0.weight", "layers.0.bias", "layers.2.weight", "layers.2.bias",
               "layers.5.weight", "layers.5.bias", "layers.6.weight", "layers.6.bias")


def cnn_shapes(channels, height, width, c1, c2):
    """The feature map sizes along the W7 network: (h1, w1) after conv 0, … (h, w) after pool 3."""
    h1, w1 = height - 2, width - 2
    h2, w2 = h1 // 2, w1 // 2
    h3, w3 = h2 - 2, w2 - 2
    h4, w4 = h3 // 2, w3 // 2
    if min(h1, w1, h2, w2, h3, w3, h4, w4) < 1:
        raise PeerError(f"a {height}×{width} input is too small for conv 3×3 → pool 2 → conv 3×3 → pool 2")
    return h4, w4


def check_cnn_layers(tensors, path, input_shape):
    """Checks the W7 parameter tensors against each other and the (channels, height, width)
    input; returns them as a dict of C-contiguous float32 arrays."""
    import numpy as np
    for name in CNN_TENSORS:
        if name not in tensors:
            raise PeerError(f"{path}: tensor {name!r} is missing (W7 needs {', '.join(CNN_TENSORS)})")
        if tensors[name].dtype != np.float32:
            raise PeerError(f"{path}: {name} must be F32 (got {tensors[name].dtype})")
    p = {name: np.ascontiguousarray(tensors[name]) for name in CNN_TENSORS}
    channels, height, width = input_shape
    w0, w2, w5, w6 = (p[f"layers.{i}.weight"] for i in (0, 2, 5, 6))
    c1, c2 = w0.shape[0], w2.shape[0] if w2.ndim == 4 else -1
    expect = {"layers.0.weight": (c1, channels, 3, 3), "layers.0.bias": (c1,),
              "layers.2.weight": (c2, c1, 3, 3), "layers.2.bias": (c2,)}
    if w0.ndim == 4 and w2.ndim == 4:
        h, w = cnn_shapes(channels, height, width, c1, c2)
        hidden = w5.shape[0] if w5.ndim == 2 else -1
        classes = w6.shape[0] if w6.ndim == 2 else -1
        expect.update({"layers.5.weight": (hidden, c2 * h * w), "layers.5.bias": (hidden,),
                       "layers.6.weight": (classes, hidden), "layers.6.bias": (classes,)})
    for name, shape in expect.items():
        if tuple(p[name].shape) != shape:
            raise PeerError(f"{path}: {name} has shape {tuple(p[name].shape)}, expected {shape} "
                            f"(input {tuple(input_shape)}, PyTorch layouts: conv (out, in, kh, kw), "
                            "dense (out, in))")
    if len(expect) < len(CNN_TENSORS):
        raise PeerError(f"{path}: layers.0.weight and layers.2.weight must be 4-D (out, in, kh, kw)")
    return p


def load_cnn_workload(path):
    """Reads a W7 exchange file. Returns a dict with x (batch, channels, height, width), t
    (batch, classes), params (name -> array, PyTorch layouts), lr, check_steps."""
    import numpy as np
    tensors, meta = read_exchange(path)
    for name, ndim in (("x", 4), ("t", 2)):
        if name not in tensors:
            raise PeerError(f"{path}: tensor {name!r} is missing")
        if tensors[name].dtype != np.float32 or tensors[name].ndim != ndim:
            raise PeerError(f"{path}: {name} must be a {ndim}-D F32 tensor "
                            f"(got {tensors[name].dtype} {tensors[name].shape})")
    x = np.ascontiguousarray(tensors["x"])
    t = np.ascontiguousarray(tensors["t"])
    params = check_cnn_layers(tensors, path, x.shape[1:])
    if t.shape != (x.shape[0], params["layers.6.bias"].shape[0]):
        raise PeerError(f"{path}: t is {t.shape}, expected {(x.shape[0], params['layers.6.bias'].shape[0])}")
    if meta.get("loss", "softmaxCrossEntropy") != "softmaxCrossEntropy":
        raise PeerError(f"{path}: metadata loss {meta.get('loss')!r}: W7 trains with softmaxCrossEntropy")
    lr, check_steps = _step_metadata(meta, path)
    return {"x": x, "t": t, "params": params, "lr": lr, "check_steps": check_steps}


# The character GRU of W8 and F3 (issue "Text and sequences"): our layer indices and names,
# PyTorch's layouts (nn.Embedding, nn.GRU in gate order r, z, n, nn.Linear).
#   0 embedding            layers.0.weight (vocabulary, features)
#   1 gru                  layers.1.weight_ih_l0 (3·hidden, features)  layers.1.weight_hh_l0 (3·hidden, hidden)
#                          layers.1.bias_ih_l0 (3·hidden)  layers.1.bias_hh_l0 (3·hidden)
#                          layers.1.h0 (hidden): the learned initial state, nn.GRU's hx expanded over the batch
#   2 dense per position   layers.2.weight (vocabulary, hidden)  layers.2.bias (vocabulary): the logits
GRU_TENSORS = ("layers.0.weight", "layers.1.weight_ih_l0", "layers.1.weight_hh_l0", "layers.1.bias_ih_l0",
               "layers.1.bias_hh_l0", "layers.1.h0", "layers.2.weight", "layers.2.bias")


def check_gru_params(tensors, path):
    """Checks the character GRU's tensors against each other; returns them as a dict of
    C-contiguous float32 arrays, and (vocabulary, features, hidden)."""
    import numpy as np
    for name in GRU_TENSORS:
        if name not in tensors:
            raise PeerError(f"{path}: tensor {name!r} is missing (the GRU needs {', '.join(GRU_TENSORS)})")
        if tensors[name].dtype != np.float32:
            raise PeerError(f"{path}: {name} must be F32 (got {tensors[name].dtype})")
    p = {name: np.ascontiguousarray(tensors[name]) for name in GRU_TENSORS}
    if p["layers.0.weight"].ndim != 2 or p["layers.1.h0"].ndim != 1:
        raise PeerError(f"{path}: layers.0.weight must be 2-D (vocabulary, features) and layers.1.h0 1-D (hidden)")
    (vocabulary, features), hidden = p["layers.0.weight"].shape, p["layers.1.h0"].shape[0]
    expect = {"layers.1.weight_ih_l0": (3 * hidden, features), "layers.1.weight_hh_l0": (3 * hidden, hidden),
              "layers.1.bias_ih_l0": (3 * hidden,), "layers.1.bias_hh_l0": (3 * hidden,),
              "layers.2.weight": (vocabulary, hidden), "layers.2.bias": (vocabulary,)}
    for name, shape in expect.items():
        if tuple(p[name].shape) != shape:
            raise PeerError(f"{path}: {name} has shape {tuple(p[name].shape)}, expected {shape} (vocabulary "
                            f"{vocabulary}, features {features}, hidden {hidden}; PyTorch layouts: nn.GRU's "
                            "(3·hidden, in), dense (out, in))")
    return p, (vocabulary, features, hidden)


def token_rows(a, name, vocabulary, path, padding):
    """A (batch, time) F32 tensor of token indices as int64, checked: whole numbers below
    `vocabulary`, and, when `padding`, -1 allowed (any negative number is padding, read as -1)."""
    import numpy as np
    if a.dtype != np.float32 or a.ndim != 2:
        raise PeerError(f"{path}: {name} must be a 2-D F32 tensor of token indices (got {a.dtype} {a.shape})")
    if not np.all(np.isfinite(a)) or not np.all(a == np.round(a)) or a.max() >= vocabulary or \
            (a.min() < 0 and not padding):
        raise PeerError(f"{path}: {name} must hold whole numbers in 0..<{vocabulary}"
                        f"{' (negative: padding)' if padding else ''}")
    return np.where(a < 0, -1, a).astype(np.int64)


def load_gru_workload(path):
    """Reads a W8 exchange file. Returns a dict with x (batch, time) int64 tokens, t (batch, time)
    int64 targets (-1: padding, ignored by the loss), params (name -> array, PyTorch layouts),
    sizes (vocabulary, features, hidden), lr, check_steps."""
    tensors, meta = read_exchange(path)
    for name in ("x", "t"):
        if name not in tensors:
            raise PeerError(f"{path}: tensor {name!r} is missing")
    params, sizes = check_gru_params(tensors, path)
    x = token_rows(tensors["x"], "x", sizes[0], path, padding=False)
    t = token_rows(tensors["t"], "t", sizes[0], path, padding=True)
    if t.shape != x.shape:
        raise PeerError(f"{path}: t is {t.shape} but x is {x.shape}: one target per position")
    if not (t >= 0).any():
        raise PeerError(f"{path}: every target is padding: the loss would count nothing")
    if meta.get("loss", "sequenceCrossEntropy") != "sequenceCrossEntropy":
        raise PeerError(f"{path}: metadata loss {meta.get('loss')!r}: W8 trains with sequenceCrossEntropy")
    lr, check_steps = _step_metadata(meta, path)
    return {"x": x, "t": t, "params": params, "sizes": sizes, "lr": lr, "check_steps": check_steps}


# The GPT of W9, W10 and F4 (issue 25): our layer indices and names, PyTorch's layouts (nn.Linear's
# (out, in); nanoGPT's c_attn rows q, then k, then v, head h their rows h·size ..< (h + 1)·size).
#   0                     layers.0.weight (vocabulary, features): the token embedding
#   1                     layers.1.weight (time, features): the position embedding
#   2 + 2k (block k)      layers.i.body.0.{weight,bias} (features): LayerNorm
#                         layers.i.body.1.c_attn.{weight (3·features, features), bias (3·features)}
#                         layers.i.body.1.c_proj.{weight (features, features), bias (features)}
#   3 + 2k                layers.j.body.0.{weight,bias} (features): LayerNorm
#                         layers.j.body.1.{weight (mlp, features), bias (mlp)}: then GELU (erf)
#                         layers.j.body.3.{weight (features, mlp), bias (features)}
#   2 + 2·blocks          layers.n.{weight,bias} (features): the final LayerNorm
#   3 + 2·blocks          layers.h.{weight (vocabulary, features), bias (vocabulary)}: the head
# Metadata: heads; AdamW's weightDecay (every parameter decayed), beta1, beta2, epsilon.

def gpt_names(blocks):
    """Every GPT tensor's name under ours, with its role: (role, block or None, our name)."""
    names = [("wte", None, "layers.0.weight"), ("wpe", None, "layers.1.weight")]
    for k in range(blocks):
        a, m = f"layers.{2 + 2 * k}.body", f"layers.{3 + 2 * k}.body"
        names += [("ln1_w", k, f"{a}.0.weight"), ("ln1_b", k, f"{a}.0.bias"),
                  ("attn_w", k, f"{a}.1.c_attn.weight"), ("attn_b", k, f"{a}.1.c_attn.bias"),
                  ("proj_w", k, f"{a}.1.c_proj.weight"), ("proj_b", k, f"{a}.1.c_proj.bias"),
                  ("ln2_w", k, f"{m}.0.weight"), ("ln2_b", k, f"{m}.0.bias"),
                  ("fc_w", k, f"{m}.1.weight"), ("fc_b", k, f"{m}.1.bias"),
                  ("fc2_w", k, f"{m}.3.weight"), ("fc2_b", k, f"{m}.3.bias")]
    n = 2 + 2 * blocks
    names += [("lnf_w", None, f"layers.{n}.weight"), ("lnf_b", None, f"layers.{n}.bias"),
              ("head_w", None, f"layers.{n + 1}.weight"), ("head_b", None, f"layers.{n + 1}.bias")]
    return names


def check_gpt_params(tensors, meta, path):
    """Checks the GPT's tensors against each other and the heads; returns (params, sizes): params
    our name -> C-contiguous float32 array, sizes a dict of vocabulary, time, features, mlp,
    blocks, heads."""
    import numpy as np
    blocks = sum(1 for name in tensors if name.endswith(".body.1.c_attn.weight"))
    if "layers.0.weight" not in tensors or "layers.1.weight" not in tensors or blocks == 0:
        raise PeerError(f"{path}: not a GPT: it needs layers.0.weight, layers.1.weight and at least one "
                        "layers.<i>.body.1.c_attn.weight")
    (vocabulary, features), time = tensors["layers.0.weight"].shape, tensors["layers.1.weight"].shape[0]
    mlp = tensors["layers.3.body.1.weight"].shape[0] if "layers.3.body.1.weight" in tensors else 0
    try:
        heads = int(meta["heads"])
    except (KeyError, ValueError) as e:
        raise PeerError(f"{path}: metadata heads missing or not a number: {e}") from e
    if heads < 1 or features % heads:
        raise PeerError(f"{path}: {features} features do not split into {heads} heads")
    f, v, n = features, vocabulary, mlp
    shapes = {"wte": (v, f), "wpe": (time, f), "ln1_w": (f,), "ln1_b": (f,), "attn_w": (3 * f, f), "attn_b": (3 * f,),
              "proj_w": (f, f), "proj_b": (f,), "ln2_w": (f,), "ln2_b": (f,), "fc_w": (n, f), "fc_b": (n,),
              "fc2_w": (f, n), "fc2_b": (f,), "lnf_w": (f,), "lnf_b": (f,), "head_w": (v, f), "head_b": (v,)}
    params = {}
    expected = gpt_names(blocks)
    for role, _, name in expected:
        if name not in tensors:
            raise PeerError(f"{path}: tensor {name!r} is missing ({blocks} blocks need it)")
        a = tensors[name]
        if a.dtype != np.float32 or tuple(a.shape) != shapes[role]:
            raise PeerError(f"{path}: {name} is {a.dtype} {tuple(a.shape)}, expected F32 {shapes[role]} "
                            f"(vocabulary {v}, time {time}, features {f}, MLP {n}; PyTorch layouts)")
        params[name] = np.ascontiguousarray(a)
    extra = sorted(set(k for k in tensors if k.startswith("layers.")) - set(params))
    if extra:
        raise PeerError(f"{path}: tensors {extra} belong to no GPT of {blocks} blocks")
    return params, {"vocabulary": v, "time": time, "features": f, "mlp": n, "blocks": blocks, "heads": heads}


def adamw_metadata(meta, path):
    """AdamW's hyperparameters from the metadata: lr, weight decay, betas, epsilon."""
    try:
        return {"lr": float(meta["learningRate"]), "weight_decay": float(meta["weightDecay"]),
                "betas": (float(meta.get("beta1", "0.9")), float(meta.get("beta2", "0.999"))),
                "eps": float(meta.get("epsilon", "1e-8"))}
    except (KeyError, ValueError) as e:
        raise PeerError(f"{path}: bad or missing AdamW metadata (learningRate, weightDecay, beta1, beta2, epsilon): {e}") from e


def load_gpt_workload(path):
    """Reads a W9/W10 exchange file. Returns a dict with x (batch, time) int64 tokens, t (batch,
    time) int64 targets (-1: padding), params (our name -> array, PyTorch layouts), sizes (see
    check_gpt_params), adamw (see adamw_metadata), check_steps."""
    tensors, meta = read_exchange(path)
    for name in ("x", "t"):
        if name not in tensors:
            raise PeerError(f"{path}: tensor {name!r} is missing")
    params, sizes = check_gpt_params(tensors, meta, path)
    x = token_rows(tensors["x"], "x", sizes["vocabulary"], path, padding=False)
    t = token_rows(tensors["t"], "t", sizes["vocabulary"], path, padding=True)
    if t.shape != x.shape or x.shape[1] != sizes["time"]:
        raise PeerError(f"{path}: x is {x.shape} and t {t.shape}: both must be (batch, {sizes['time']})")
    if not (t >= 0).any():
        raise PeerError(f"{path}: every target is padding: the loss would count nothing")
    if meta.get("loss", "sequenceCrossEntropy") != "sequenceCrossEntropy":
        raise PeerError(f"{path}: metadata loss {meta.get('loss')!r}: the GPT trains with sequenceCrossEntropy")
    _, check_steps = _step_metadata(meta, path)
    return {"x": x, "t": t, "params": params, "sizes": sizes, "adamw": adamw_metadata(meta, path),
            "check_steps": check_steps}


def time_jax_steps(jax, step, fresh, x, t, check, args, rss_before=None):
    """Times `args.steps` jitted steps from `fresh()` parameters after `args.warmup` untimed ones,
    each step timed to the moment its results are ready; checks that the loss after them is
    finite; prints the peer's JSON line with the `check` losses (and, given `rss_before`, the
    bytes resident before the model was built and the process's peak: rssBefore, peakRSS)."""
    params = fresh()
    for _ in range(args.warmup):
        params, loss = step(params, x, t)
    jax.block_until_ready(params)
    clock = time.perf_counter_ns
    seconds = []
    for _ in range(args.steps):
        start = clock()
        params, loss = step(params, x, t)
        jax.block_until_ready((params, loss))   # one wait per step: the step is done when timed
        seconds.append((clock() - start) * 1e-9)
    params, loss = step(params, x, t)   # untimed: make sure training stayed finite
    finite([float(loss)], "the loss after the timed steps")
    line = {"peer": "jax", "version": jax.__version__, "threads": args.threads,
            "checkLosses": check, "stepSeconds": seconds}
    if rss_before is not None:
        line.update(rssBefore=rss_before, peakRSS=peak_resident_bytes())
    emit(line)
