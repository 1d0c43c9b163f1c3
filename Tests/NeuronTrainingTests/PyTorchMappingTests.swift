import Foundation
import NeuronCore
import Testing

@testable import NeuronTraining

// Docs/Checkpoints.md ("In Python and PyTorch") maps each layer kind to a PyTorch module and
// states the tensors' layouts; its snippet builds an `nn.Sequential` from the checkpoint alone.
// PyTorch is not installed for the tests, so the same mapping is written here in NumPy, module by
// module, and must reproduce `neuron predict`'s probabilities (what `Prediction.csv` prints) on
// networks holding every layer kind. The optimizer's flat buffers are checked against their
// documented order and layouts through one SGD step.

/// Docs/Checkpoints.md's mapping in NumPy: the checkpoint and a CSV of rows in, the network's outputs out (JSON).
private let numpyForward = #"""
    import csv, json, sys
    import numpy as np
    from safetensors import safe_open
    from safetensors.numpy import load_file

    path, data = sys.argv[1], sys.argv[2]
    tensors = load_file(path)
    with safe_open(path, framework="np") as f:
        state = json.loads(f.metadata()["neuron.state"])
    dtype = np.float64 if state["precision"] == "double" else np.float32
    model = state["config"]["model"]

    def same_padding(size, k, s):  # ceil(size / s) outputs; the odd pad goes to the bottom and right
        total = max((-(-size // s) - 1) * s + k - size, 0)
        return total // 2, total - total // 2

    def windows(x, kh, kw, sh, sw):  # x: (n, c, h, w) -> (kh·kw, n, c, oh, ow), one slice per window offset
        oh, ow = (x.shape[2] - kh) // sh + 1, (x.shape[3] - kw) // sw + 1
        return np.stack([x[:, :, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw] for i in range(kh) for j in range(kw)])

    def softmax(z):
        e = np.exp(z - z.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    activations = {"tanh": np.tanh, "sigmoid": lambda z: 1 / (1 + np.exp(-z)), "relu": lambda z: np.maximum(z, 0),
                   "identity": lambda z: z, "softmax": softmax}

    with open(data) as f:
        x = np.array([[float(row[name]) for name in state["featureNames"]] for row in csv.DictReader(f)], dtype=dtype)
    p = state["preprocessing"]
    if "standardize" in p:
        x = (x - np.array(p["standardize"]["mean"], dtype)) / np.array(p["standardize"]["standardDeviation"], dtype)
    elif "scale" in p:
        x = x * dtype(p["scale"])
    shape = model.get("inputShape")  # [height, width, channels], or absent for vectors
    if shape:
        x = x.reshape(-1, *shape).transpose(0, 3, 1, 2)  # channels-last rows to NCHW, as PyTorch takes them
    for n, layer in enumerate(model["layers"]):
        kind = layer.get("kind", "dense")
        t = {name[len(f"layers.{n}."):]: a for name, a in tensors.items() if name.startswith(f"layers.{n}.")}
        if kind == "dense":  # nn.Linear: weight (out_features, in_features)
            x = x @ t["weight"].T + t["bias"]
        elif kind == "conv2d":  # nn.ZeroPad2d + nn.Conv2d: weight (out_channels, in_channels, kh, kw)
            k, s = layer["kernel"], layer.get("stride", 1)
            if layer.get("padding") == "same":
                (top, bottom), (left, right) = same_padding(x.shape[2], k, s), same_padding(x.shape[3], k, s)
            else:
                top = bottom = left = right = layer.get("pad", 0)
            x = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
            w = t["weight"]
            x = sum(np.einsum("nchw,oc->nohw", patch, w[:, :, i // k, i % k]) for i, patch in enumerate(windows(x, k, k, s, s)))
            x = x + t["bias"][None, :, None, None]
        elif kind in ("maxPool2d", "avgPool2d"):  # nn.MaxPool2d, nn.AvgPool2d (a global pool: the whole image)
            kh, kw = (x.shape[2], x.shape[3]) if layer.get("global") else (layer["size"], layer["size"])
            sh, sw = (kh, kw) if layer.get("stride") is None else (layer["stride"], layer["stride"])
            stack = windows(x, kh, kw, sh, sw)
            x = stack.max(axis=0) if kind == "maxPool2d" else stack.mean(axis=0)
        elif kind == "flatten":  # nn.Flatten: channel by channel
            x = x.reshape(x.shape[0], -1)
        elif kind == "dropout":  # nn.Dropout: nothing in evaluation
            pass
        elif kind == "batchNorm":  # nn.BatchNorm2d on images, nn.BatchNorm1d on vectors, in evaluation
            per = lambda v: v.reshape((-1,) + (1,) * (x.ndim - 2))  # one value per channel (images) or feature
            scale = t["weight"] / np.sqrt(t["running_var"] + dtype(layer.get("epsilon", 1e-5)))
            x = (x - per(t["running_mean"])) * per(scale) + per(t["bias"])
        x = activations[layer.get("activation", "tanh" if kind == "dense" else "identity")](x) if kind in ("dense", "conv2d", "batchNorm") else x
    print(json.dumps(x.astype(np.float64).tolist()))
    """#

/// The optimizer's buffers read as Docs/Checkpoints.md documents them: one flat vector per buffer over every
/// parameter, layer by layer, each layer's weight then bias, each tensor in the engine's layout
/// (dense `(inputs, outputs)`, conv `(kh, kw, in, out)`). Through one SGD step with momentum and a
/// constant learning rate, `w_after = w_before - learningRate * velocity_after` must hold for every tensor.
private let optimizerLayout = #"""
    import json, sys
    import numpy as np
    from safetensors import safe_open
    from safetensors.numpy import load_file
    before, after = load_file(sys.argv[1]), load_file(sys.argv[2])
    with safe_open(sys.argv[2], framework="np") as f:
        state = json.loads(f.metadata()["neuron.state"])
    velocity, offset, worst = after["optimizer.velocity"], 0, 0.0
    for n in range(len(state["config"]["model"]["layers"])):
        for name in ("weight", "bias"):
            key = f"layers.{n}.{name}"
            if key not in after:
                continue
            stored = after[key]
            flat = velocity[offset:offset + stored.size]
            offset += stored.size
            if name == "weight" and stored.ndim == 2:    # file (out, in), engine (in, out)
                flat = flat.reshape(stored.shape[::-1]).T
            elif name == "weight" and stored.ndim == 4:  # file (out, in, kh, kw), engine (kh, kw, in, out)
                o, i, kh, kw = stored.shape
                flat = flat.reshape(kh, kw, i, o).transpose(3, 2, 0, 1)
            step = before[key] - state["config"]["optimizer"]["learningRate"] * flat.reshape(stored.shape)
            worst = max(worst, float(np.abs(step - stored).max()))
    print(json.dumps({"worst": worst, "used": offset, "length": int(velocity.size)}))
    """#

@Suite("Checkpoints in NumPy, as Docs/Checkpoints.md maps them to PyTorch modules")
struct PyTorchMappingTests {
    /// The 8×8 digits as images with `layers`, 20% held out, two epochs of batch 32.
    private func digits(_ layers: String, normalization: String, optimizer: String, precision: String) throws -> RunConfig {
        try config(
            """
            model:
              inputShape: [8, 8, 1]
              layers: \(layers)
            data: {kind: csv, path: digits.csv, labelColumn: digit, normalization: \(normalization), validationSplit: 0.2}
            optimizer: \(optimizer)
            training: {epochs: 2, batchSize: 32, seed: 7, precision: \(precision)}
            """)
    }

    /// Every layer kind and padding rule: same with stride 2 (the odd pad at the bottom and right),
    /// pad, average and max pools with and without a stride, dropout, flatten of a 2×2×6 image, batch
    /// norm over channels and over features, in Float with standardized inputs.
    private var everyKind: String {
        """
        [{kind: conv2d, filters: 4, kernel: 3, stride: 2, padding: same}, {kind: batchNorm, activation: relu},
             {kind: conv2d, filters: 6, kernel: 2, pad: 1, activation: tanh}, {kind: avgPool2d, size: 2, stride: 1},
             {kind: maxPool2d, size: 2}, {kind: dropout, rate: 0.2}, {kind: flatten}, {units: 16, activation: relu},
             {kind: batchNorm, momentum: 0.2, epsilon: 0.001}, {kind: dropout, rate: 0.1}, {units: 10, activation: softmax}]
        """
    }

    /// Valid padding, sigmoid, batch norm without activation, a global average pool, in Double with scaled inputs.
    private var globalPool: String {
        """
        [{kind: conv2d, filters: 5, kernel: 3, activation: sigmoid}, {kind: batchNorm}, {kind: avgPool2d, global: true},
             {kind: flatten}, {units: 10, activation: softmax}]
        """
    }

    @Test(
        "The NumPy mapping of every layer kind reproduces neuron predict's probabilities",
        arguments: [("everyKind", "standardize", "float"), ("globalPool", "scale", "double")])
    func forward(network: String, normalization: String, precision: String) throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        let config = try digits(
            network == "everyKind" ? everyKind : globalPool, normalization: normalization, optimizer: "{kind: adam, learningRate: 0.01}",
            precision: precision)
        let run = try RunBuilder.build(config)
        func trained<E: TrainingEngine>(_ engine: E) -> Checkpoint {
            Checkpoint(straightRun(engine), config: config, preprocessing: run.preprocessing)
        }
        try trained(run.engine).write(to: directory.path)
        let saved = try Checkpoint.read(directory.path)
        let input = dataDirectory + "/digits.csv"
        let predicted = precision == "float" ? try Prediction<Float>.csv(saved, input: input) : try Prediction<Double>.csv(saved, input: input)
        let swift = predicted.split(separator: "\n").dropFirst().map { $0.split(separator: ",").dropFirst(2).map { Double($0)! } }
        let numpy = try JSONDecoder().decode(
            [[Double]].self, from: Data(try python(numpyForward, [directory.file("checkpoint.safetensors"), input], in: directory).utf8))
        #expect(numpy.count == 1797 && swift.count == 1797)
        var worst = 0.0
        for (p, q) in zip(numpy, swift) {
            #expect(p.count == 10 && q.count == 10)
            for (a, b) in zip(p, q) { worst = max(worst, abs(a - b)) }
        }
        // Float: BLAS, im2col and NumPy sum products in different orders (measured 4.7e-7); Double: 1e-15.
        #expect(worst < (precision == "float" ? 1e-5 : 1e-12), "largest difference \(worst)")
        // The network learned something, so the probabilities are not the seed's near-uniform ones.
        #expect(swift.contains { $0.max()! > 0.5 })
    }

    @Test("The optimizer's flat buffer holds every parameter, layer by layer, weight then bias, in the engine's layouts")
    func optimizerBuffers() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        let config = try digits(
            globalPool, normalization: "scale", optimizer: "{kind: sgd, learningRate: 0.1, momentum: 0.9}", precision: "double")
        let run = try RunBuilder.build(config)
        func checkpoints<E: TrainingEngine>(_ engine: E) -> (Checkpoint, Checkpoint) {
            let before = straightRun(engine, steps: 20)
            let after = straightRun(before, steps: 21)
            return (
                Checkpoint(before, config: config, preprocessing: run.preprocessing),
                Checkpoint(after, config: config, preprocessing: run.preprocessing)
            )
        }
        let (before, after) = checkpoints(run.engine)
        try FileManager.default.createDirectory(atPath: directory.file("before"), withIntermediateDirectories: false)
        try FileManager.default.createDirectory(atPath: directory.file("after"), withIntermediateDirectories: false)
        try before.write(to: directory.file("before"))
        try after.write(to: directory.file("after"))
        struct Layout: Decodable {
            var worst: Double
            var used, length: Int
        }
        let layout = try JSONDecoder().decode(
            Layout.self,
            from: Data(
                try python(
                    optimizerLayout, [directory.file("before/checkpoint.safetensors"), directory.file("after/checkpoint.safetensors")],
                    in: directory
                ).utf8))
        // conv 3·3·1·5 + 5, batch norm 5 + 5, dense 5·10 + 10.
        #expect(layout.used == 120 && layout.length == 120)
        #expect(layout.worst < 1e-15, "largest difference \(layout.worst)")
    }
}
