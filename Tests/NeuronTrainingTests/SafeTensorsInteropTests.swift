import Foundation
import NeuronCore
import Testing

@testable import NeuronTraining

// The oracle is Python's safetensors (the reference implementation, Rust underneath) with numpy,
// run by `python(_:_:in:)` (Support.swift) from the package's virtual environment.

/// Python's description of a tensor: numpy's dtype name, the shape, and the little-endian bytes in hex.
private struct PythonTensor: Decodable, Equatable {
    var dtype: String
    var shape: [Int]
    var hex: String
}

private struct PythonFile: Decodable {
    var metadata: [String: String]?
    var tensors: [String: PythonTensor]
}

/// The Python function both scripts describe arrays with.
private let describe = """
    def describe(a):
        little = a.astype(a.dtype.newbyteorder("<"), copy=True)
        return {"dtype": str(a.dtype), "shape": list(a.shape), "hex": little.tobytes().hex()}
    """

/// How Python would describe `entry`.
private func pythonView(_ entry: SafeTensors.Entry) -> PythonTensor {
    let names: [SafeTensors.DType: String] = [.f32: "float32", .f64: "float64", .i64: "int64", .i32: "int32", .u8: "uint8"]
    return PythonTensor(
        dtype: names[entry.dtype]!, shape: entry.shape,
        hex: entry.bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined())
}

@Suite("SafeTensors interop with Python's safetensors")
struct SafeTensorsInteropTests {
    @Test("Python's safetensors loads our checkpoint with identical tensors and metadata")
    func pythonReadsOurs() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        try requireSafetensors(in: directory)

        let quietNaN = Float(bitPattern: 0x7FC0_002A), signalingNaN = Double(bitPattern: 0x7FF0_0000_0000_0015)
        let entries = [
            SafeTensors.entry("layers.0.weight", try Tensor<Float>(rows: [[1.5, -0.0, .leastNonzeroMagnitude], [.infinity, quietNaN, 0.1]])),
            SafeTensors.entry("layers.0.bias", Tensor<Float>(vector: [-.infinity, .greatestFiniteMagnitude, 3])),
            SafeTensors.entry("layers.1.weight", try Tensor<Double>(rows: [[0.1], [-0.0], [Double.leastNormalMagnitude.nextDown]])),
            SafeTensors.entry("layers.1.bias", Tensor<Double>(vector: [signalingNaN])),
            SafeTensors.entry("epoch.order", int64: [3, 0, -1, .max, .min], shape: [5]),
            SafeTensors.entry("loss", try Tensor<Double>(shape: [], scalars: [0.25])),
            SafeTensors.entry("empty", Tensor<Float>(zeros: [0, 3])),
        ]
        let metadata = ["format": "neuron", "epoch": "2", "note": "é ∑ \"quoted\" \\ \n"]
        let path = directory.file("checkpoint.safetensors")
        try SafeTensors.write(entries, metadata: metadata, to: path)

        let script = """
            import json, sys
            from safetensors import safe_open
            from safetensors.numpy import load_file
            \(describe)
            path = sys.argv[1]
            tensors = load_file(path)
            with safe_open(path, framework="np") as f:
                metadata = f.metadata()
            print(json.dumps({"metadata": metadata, "tensors": {name: describe(a) for name, a in tensors.items()}}))
            """
        let seen = try JSONDecoder().decode(PythonFile.self, from: Data(try python(script, [path], in: directory).utf8))
        #expect(seen.metadata == metadata)
        #expect(Set(seen.tensors.keys) == Set(entries.map(\.name)))
        for entry in entries {
            #expect(seen.tensors[entry.name] == pythonView(entry), "\(entry.name)")
        }
    }

    @Test("We read what Python's safetensors writes, bit for bit")
    func weReadPythons() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        try requireSafetensors(in: directory)

        let path = directory.file("python.safetensors")
        let script = """
            import json, sys
            import numpy as np
            from safetensors.numpy import save_file
            \(describe)
            path = sys.argv[1]
            nans = np.array([0x7FC0002A, 0x7F800015], dtype="<u4").view("<f4")
            tensors = {
                "layers.0.weight": np.concatenate([np.array([1.5, -0.0, np.inf, -np.inf, 1e-45, 3.4028235e38], dtype=np.float32), nans]).reshape(2, 4),
                "layers.0.bias": np.array([0.1, -2.0**-1024, 1e300], dtype=np.float64),
                "epoch.order": np.array([3, 0, -1, 2**63 - 1, -2**63], dtype=np.int64),
                "loss": np.array(0.25, dtype=np.float64),
                "empty": np.zeros((0, 3), dtype=np.float32),
            }
            metadata = {"format": "np", "epoch": "3", "note": "é ∑ \\"quoted\\""}
            save_file(tensors, path, metadata=metadata)
            print(json.dumps({"metadata": metadata, "tensors": {name: describe(a) for name, a in tensors.items()}}))
            """
        let written = try JSONDecoder().decode(PythonFile.self, from: Data(try python(script, [path], in: directory).utf8))
        let (entries, metadata) = try SafeTensors.read(path)

        #expect(metadata == written.metadata)
        #expect(Set(entries.map(\.name)) == Set(written.tensors.keys))
        for entry in entries {
            #expect(pythonView(entry) == written.tensors[entry.name], "\(entry.name)")
        }
        // The values, against Swift's own literals.
        func entry(_ name: String) throws -> SafeTensors.Entry { try SafeTensors.entry(named: name, in: entries, source: path) }
        let weight = try entry("layers.0.weight").tensor(as: Float.self, source: path)
        #expect(weight.shape == [2, 4])
        #expect(
            weight.scalars.map(\.bitPattern)
                == [Float(1.5), -0.0, .infinity, -.infinity, .leastNonzeroMagnitude, .greatestFiniteMagnitude].map(\.bitPattern) + [
                    0x7FC0_002A, 0x7F80_0015,
                ])
        #expect(
            try entry("layers.0.bias").tensor(as: Double.self, source: path).scalars.map(\.bitPattern)
                == [0.1, -0x1p-1024, 1e300].map(\.bitPattern))  // -2^-1024 is subnormal
        #expect(try entry("epoch.order").int64s(source: path) == [3, 0, -1, .max, .min])
        let loss = try entry("loss").tensor(as: Double.self, source: path)
        #expect(loss.shape == [] && loss.scalars == [0.25])
        #expect(try entry("empty").tensor(as: Float.self, source: path).shape == [0, 3])
    }

    @Test("A NumPy forward pass, x @ W.T + b per layer on our checkpoint's tensors, reproduces Prediction's probabilities")
    func numpyForwardPass() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        try requireSafetensors(in: directory)

        // Iris, 4-8-3 tanh/softmax in Float, trained two epochs so that the probabilities are the network's, not the seed's.
        let config = try irisConfig(epochs: 2)
        let run = try RunBuilder.build(config)
        func trained<E: TrainingEngine>(_ engine: E) -> Checkpoint {
            Checkpoint(straightRun(engine), config: config, preprocessing: run.preprocessing)
        }
        try trained(run.engine).write(to: directory.path)
        let input = dataDirectory + "/iris.csv"
        let predicted = try Prediction<Float>.csv(try Checkpoint.read(directory.path), input: input)
        let swift = predicted.split(separator: "\n").dropFirst().map { $0.split(separator: ",").dropFirst(2).map { Double($0)! } }

        // Everything Python needs is in the one file: the tensors, and in the header the layers'
        // activations, the feature names and the fitted standardization.
        let script = """
            import csv, json, sys
            import numpy as np
            from safetensors import safe_open
            from safetensors.numpy import load_file
            path, data = sys.argv[1], sys.argv[2]
            tensors = load_file(path)
            with safe_open(path, framework="np") as f:
                state = json.loads(f.metadata()["neuron.state"])
            with open(data) as f:
                x = np.array([[float(row[name]) for name in state["featureNames"]] for row in csv.DictReader(f)], dtype=np.float32)
            s = state["preprocessing"]["standardize"]
            x = (x - np.array(s["mean"], dtype=np.float32)) / np.array(s["standardDeviation"], dtype=np.float32)
            activations = {"tanh": np.tanh, "identity": lambda z: z, "relu": lambda z: np.maximum(z, 0),
                           "sigmoid": lambda z: 1 / (1 + np.exp(-z)),
                           "softmax": lambda z: np.exp(z - z.max(axis=1, keepdims=True)) / np.exp(z - z.max(axis=1, keepdims=True)).sum(axis=1, keepdims=True)}
            for i, layer in enumerate(state["config"]["model"]["layers"]):
                w, b = tensors[f"layers.{i}.weight"], tensors[f"layers.{i}.bias"]
                assert w.shape == (layer["units"], x.shape[1]), w.shape  # nn.Linear's (out_features, in_features)
                x = activations[layer["activation"]](x @ w.T + b)
            print(json.dumps(x.astype(np.float64).tolist()))
            """
        let python = try JSONDecoder().decode(
            [[Double]].self, from: Data(try python(script, [directory.file("checkpoint.safetensors"), input], in: directory).utf8))
        #expect(python.count == 150 && swift.count == 150)
        // Both compute in Float, but BLAS and NumPy sum the 4 and 8 products of each row in
        // different orders: a few units in the last place of values near 1, so 1e-5 absolute.
        var worst = 0.0
        for (p, q) in zip(python, swift) {
            #expect(p.count == 3 && q.count == 3)
            for (a, b) in zip(p, q) { worst = max(worst, abs(a - b)) }
        }
        #expect(worst < 1e-5, "largest difference \(worst)")
    }
}
