import Foundation
import NeuronCore
import NeuronTraining
import Testing

@testable import NeuronExport

// The oracle is ONNX itself: `onnx.checker` (full check) and ONNX Runtime, from the virtual
// environment `.venv` at the package root that the README's test command makes, running
// Tests/ONNX/check_onnx.py. They fail, never skip, when it is missing.

/// The package root, three levels above this file.
let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// One line of check_onnx.py's report.
struct ONNXVerdict: Decodable {
    var name: String
    var checker: String
    var opset: Int?
    var ran: Bool
    var reason: String?
    var maxAbsDiff: Double?
    var maxRelDiff: Double?
    var classesAgree: Int?
    var rows: Int?
    /// A text model's metadata: its tokens' strings, the boundary token, the block.
    var vocabulary: [String]?
    var boundary: String?
    var block: Int?
    /// Where ONNX Runtime could not run a text model: ONNX's reference evaluator's largest difference.
    var referenceMaxAbsDiff: Double?
}

/// Runs `check_onnx.py <arguments>` with the package's virtual environment and decodes its JSON lines.
func checkONNX(_ arguments: [String]) throws -> [ONNXVerdict] {
    struct PythonFailed: Error, CustomStringConvertible { var description: String }
    let python = packageRoot.appendingPathComponent(".venv/bin/python3").path
    guard FileManager.default.isExecutableFile(atPath: python) else {
        throw PythonFailed(
            description: "the ONNX tests need \(python): run `python3 -m venv .venv && .venv/bin/pip install onnx onnxruntime numpy`"
                + " at the package root (the README's test command does)")
    }
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("check-onnx-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let (out, err) = (directory.appendingPathComponent("stdout"), directory.appendingPathComponent("stderr"))
    for file in [out, err] { _ = FileManager.default.createFile(atPath: file.path, contents: nil) }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: python)
    process.arguments = [packageRoot.appendingPathComponent("Tests/ONNX/check_onnx.py").path] + arguments
    process.standardOutput = try FileHandle(forWritingTo: out)
    process.standardError = try FileHandle(forWritingTo: err)
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw PythonFailed(description: "check_onnx.py exited with \(process.terminationStatus): \(try String(contentsOf: err, encoding: .utf8))")
    }
    return try String(contentsOf: out, encoding: .utf8).split(separator: "\n").map {
        try JSONDecoder().decode(ONNXVerdict.self, from: Data($0.utf8))
    }
}

/// A scratch directory, removed when the value goes.
final class ScratchDirectory {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("neuron-export-\(UUID().uuidString)")
    init() throws { try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true) }
    deinit { try? FileManager.default.removeItem(at: url) }
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }
}

/// A random network of every exportable layer kind, its preprocessing and a batch of raw inputs.
struct RandomCase {
    var name: String
    var network: Network<Double>
    var preprocessing: Preprocessing
    var x: Tensor<Double>
    var options: ONNXExportOptions

    /// Whether ONNX Runtime's CPU kernels exist in float64 for every operator (they lack Conv and the average pools).
    var runsInDouble: Bool { !network.description.contains("Conv2D(") && !network.description.contains("AvgPool2D(") }

    static func draw(seed: UInt64) throws -> RandomCase {
        var g = SeededGenerator(seed: seed)
        func pick<T>(_ choices: [T]) -> T { choices[g.index(below: choices.count)] }
        let activations: [Activation] = [.tanh, .sigmoid, .relu, .identity]
        var layers: [any Layer<Double>] = []
        var shape: [Int]
        let shapeKind = seed % 3  // 0: an image network, 1: features only, 2: an image network whose output is an image
        if shapeKind == 1 {
            shape = [1 + g.index(below: 6)]
        } else {
            shape = [3 + g.index(below: 5), 3 + g.index(below: 5), pick([1, 2, 3])]
            let kernel = (1 + g.index(below: 3), 1 + g.index(below: 3))
            layers.append(
                try Conv2D<Double>(
                    input: shape, filters: 1 + g.index(below: 3), kernel: kernel, stride: (1 + g.index(below: 2), 1 + g.index(below: 2)),
                    padding: pick([.valid, .same, .explicit(rows: kernel.0 / 2, columns: kernel.1 / 2)]), activation: pick(activations)))
            shape = layers.last!.outputShape
            if g.index(below: 2) == 0 { layers.append(try BatchNorm<Double>(input: shape, activation: pick(activations))) }
            if g.index(below: 2) == 0 {
                // A residual block over the image: a same-padded convolution back to its channels.
                layers.append(
                    try Residual<Double>([
                        try Conv2D<Double>(input: shape, filters: shape[2], kernel: (3, 3), padding: .same, activation: pick(activations)),
                        try BatchNorm<Double>(input: shape, activation: .identity),
                    ]))
            }
            switch g.index(below: 3) {
            case 0:
                let size = (min(2, shape[0]), min(2, shape[1]))
                layers.append(try MaxPool2D<Double>(input: shape, size: size, stride: (1 + g.index(below: 2), 1 + g.index(below: 2))))
            case 1:
                let size = (min(2, shape[0]), min(2, shape[1]))
                layers.append(try AvgPool2D<Double>(input: shape, size: size, stride: (1 + g.index(below: 2), 1 + g.index(below: 2))))
            default:
                layers.append(try AvgPool2D<Double>.global(input: shape))
            }
            shape = layers.last!.outputShape
            if g.index(below: 2) == 0 { layers.append(try Dropout<Double>(input: shape, rate: 0.3)) }
            if shapeKind == 2 {
                // Ends on an image: a pointwise convolution, its output returned channels-last as the engine does.
                layers.append(try Conv2D<Double>(input: shape, filters: 1 + g.index(below: 3), kernel: (1, 1), activation: pick(activations)))
                var network = try Network<Double>(layers, loss: .halfSquaredError)
                return try finish(&network, seed: seed, generator: &g, shapeName: "image → image")
            }
            layers.append(try Flatten<Double>(input: shape))
            shape = layers.last!.outputShape
        }
        let hidden = 2 + g.index(below: 5)
        layers.append(try Dense<Double>(shape[0], hidden, activation: pick(activations)))
        if g.index(below: 2) == 0 { layers.append(try BatchNorm<Double>(input: [hidden], activation: pick(activations))) }
        if g.index(below: 2) == 0 { layers.append(try Dropout<Double>(input: [hidden], rate: 0.5)) }
        if g.index(below: 2) == 0 {
            var body: [any Layer<Double>] = [try Dense<Double>(hidden, hidden, activation: pick(activations))]
            if g.index(below: 2) == 0 { body.append(try BatchNorm<Double>(input: [hidden], activation: pick(activations))) }
            if g.index(below: 3) == 0 { body.append(try Residual<Double>([try Dense<Double>(hidden, hidden, activation: pick(activations))])) }
            body.append(try Dense<Double>(hidden, hidden, activation: .identity))
            layers.append(g.index(below: 4) == 0 ? try Sequential<Double>(body) : try Residual<Double>(body))
        }
        let loss: Loss = g.index(below: 2) == 0 ? .softmaxCrossEntropy : .halfSquaredError
        layers.append(try Dense<Double>(hidden, 2 + g.index(below: 3), activation: loss == .softmaxCrossEntropy ? .softmax : pick(activations)))
        var network = try Network<Double>(layers, loss: loss)
        return try finish(&network, seed: seed, generator: &g, shapeName: shapeKind == 0 ? "image → features" : "features")
    }

    /// Random weights, batch-norm statistics away from PyTorch's initial ones, a preprocessing and raw inputs.
    private static func finish(_ network: inout Network<Double>, seed: UInt64, generator g: inout SeededGenerator, shapeName: String) throws
        -> RandomCase
    {
        network.initialize(seed: seed)
        for tensor in network.parameterTensors where !tensor.tensor.hasSuffix("weight") || tensor.shape.count == 1 {
            for i in tensor.range { network.parameters[i] = g.uniform(-1, 1) }
        }
        for tensor in network.stateTensors {
            for i in tensor.range { network.state[i] = tensor.tensor.hasSuffix("running_var") ? g.uniform(0.25, 2) : g.uniform(-1, 1) }
        }
        let features = network.featureCount
        let preprocessing: Preprocessing =
            switch g.index(below: 3) {
            case 0: .none
            case 1: .scale(g.uniform(0.001, 0.5))
            default:
                .standardize(mean: (0..<features).map { _ in g.uniform(-3, 3) }, standardDeviation: (0..<features).map { _ in g.uniform(0.5, 4) })
            }
        let rows = 1 + g.index(below: 5)
        var x = Tensor<Double>(zeros: [rows, features])
        for i in 0..<x.count { x[i] = g.uniform(-5, 5) }
        let opset = [13, 17, 21, 25][g.index(below: 4)]
        let batch: ONNXExportOptions.Batch = g.index(below: 3) == 0 ? .fixed(rows) : .dynamic
        return RandomCase(
            name: "seed \(seed), \(shapeName), opset \(opset), \(network)", network: network, preprocessing: preprocessing, x: x,
            options: ONNXExportOptions(opset: opset, batch: batch))
    }

    /// The engine's output in evaluation mode for the raw inputs, preprocessed as `neuron predict` does.
    func expected<Scalar: TensorScalar>(_ network: Network<Scalar>) throws -> (x: Tensor<Scalar>, y: Tensor<Scalar>) {
        var engine = network
        let raw = Tensor<Scalar>(converting: x)
        var input = raw
        try preprocessing.apply(to: &input)
        let y = try engine.forward(input, mode: .evaluation)
        return (raw, y)
    }
}

extension Tensor {
    /// The same values in another precision.
    init<Other: TensorScalar>(converting other: Tensor<Other>) {
        self = try! Tensor(shape: other.shape, scalars: other.scalars.map { Scalar(Double($0)) })
    }
}

/// Writes scalars as the little-endian bytes numpy's `fromfile` reads.
func writeRaw<Scalar: TensorScalar>(_ scalars: [Scalar], to path: String) throws {
    var bytes: [UInt8] = []
    for s in scalars {
        if let d = s as? Double {
            withUnsafeBytes(of: d.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
        } else {
            withUnsafeBytes(of: (s as! Float).bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
        }
    }
    try Data(bytes).write(to: URL(fileURLWithPath: path))
}

/// A layer type a library user wrote, with no ONNX form: it doubles its input.
private struct Doubling: Layer {
    typealias Scalar = Double
    var inputShape: [Int] { [2] }
    var outputShape: [Int] { [2] }
    var parameterShapes: [(name: String, shape: [Int])] { [] }
    var description: String { "Doubling(2)" }
    var output = Tensor<Double>(zeros: [0, 0])
    var inputGradient: Tensor<Double> { output }
    func initialize(parameters: UnsafeMutableBufferPointer<Double>, state: UnsafeMutableBufferPointer<Double>, using: inout SeededGenerator) {
    }
    mutating func forward(
        _ x: Tensor<Double>, parameters: UnsafeBufferPointer<Double>, state: UnsafeMutableBufferPointer<Double>, mode: LayerMode
    ) {
        output = x
        for i in 0..<output.count { output[i] *= 2 }
    }
    mutating func backward(
        input x: Tensor<Double>, outputGradient dy: Tensor<Double>, parameters: UnsafeBufferPointer<Double>,
        gradients: UnsafeMutableBufferPointer<Double>, computeInputGradient: Bool
    ) {}
    func converted<Other: TensorScalar>(to: Other.Type) -> any Layer<Other> { fatalError("not converted in this test") }
}

@Suite("ONNX export, checked by ONNX's checker and ONNX Runtime")
struct NetworkExportTests {
    /// One case of the manifest check_onnx.py reads.
    struct ManifestCase: Encodable {
        var name, model, input, expected, precision: String
        var rows, features, outputs: Int
    }

    static let randomCount: UInt64 = 60

    /// Writes `model`, the rows `x` it reads and the engine's outputs `y` into `scratch` under `id`,
    /// and the manifest case that names them.
    static func manifestCase<Scalar: TensorScalar>(
        _ name: String, id: String, model: [UInt8], x: Tensor<Scalar>, y: Tensor<Scalar>, in scratch: ScratchDirectory
    ) throws -> ManifestCase {
        try Data(model).write(to: URL(fileURLWithPath: scratch.path("\(id).onnx")))
        try writeRaw(x.scalars, to: scratch.path("\(id).x"))
        try writeRaw(y.scalars, to: scratch.path("\(id).y"))
        let rows = x.shape[0]
        return ManifestCase(
            name: name, model: scratch.path("\(id).onnx"), input: scratch.path("\(id).x"), expected: scratch.path("\(id).y"),
            precision: Scalar.self == Float.self ? "float" : "double", rows: rows, features: x.count / rows, outputs: y.count / rows)
    }

    @Test("60 random networks over every layer kind export and match the engine: within 1e-5 in float32, 1e-12 in float64")
    func randomNetworksMatch() throws {
        let scratch = try ScratchDirectory()
        var manifest: [ManifestCase] = []
        var drawn: [String: RandomCase] = [:]
        var kinds: Set<String> = []
        func add<Scalar: TensorScalar>(_ c: RandomCase, _ network: Network<Scalar>, label: String) throws {
            let name = "\(c.name) [\(label)]"
            let id = "\(manifest.count)"
            let bytes = try network.onnxModel(
                preprocessing: c.preprocessing, featureNames: (0..<network.featureCount).map { "x\($0)" }, options: c.options)
            let (x, y) = try c.expected(network)
            manifest.append(try Self.manifestCase(name, id: id, model: bytes, x: x, y: y, in: scratch))
            drawn[name] = c
        }
        for seed in 1...Self.randomCount {
            let c = try RandomCase.draw(seed: seed)
            for layer in c.network.layers { kinds.insert(String(describing: type(of: layer)).components(separatedBy: "<")[0]) }
            try add(c, c.network, label: "float64")
            try add(c, c.network.converted(to: Float.self), label: "float32")
        }
        #expect(kinds == ["Conv2D", "BatchNorm", "MaxPool2D", "AvgPool2D", "Dropout", "Flatten", "Dense", "Residual", "Sequential"])
        let manifestPath = scratch.path("manifest.json")
        try JSONEncoder().encode(manifest).write(to: URL(fileURLWithPath: manifestPath))

        let verdicts = try checkONNX(["cases", manifestPath])
        #expect(verdicts.count == manifest.count)
        var ranInDouble = 0
        var worst = (float: 0.0, double: 0.0)
        for v in verdicts {
            let c = try #require(drawn[v.name])
            #expect(v.checker == "ok", "\(v.name): \(v.checker)")
            let double = v.name.hasSuffix("[float64]")
            if double && !c.runsInDouble {
                // ONNX Runtime's CPU provider has no float64 Conv or average pool: the float32 copy is run instead.
                #expect(!v.ran && (v.reason ?? "").contains("NOT_IMPLEMENTED"), "\(v.name): \(v.reason ?? "ran")")
                continue
            }
            #expect(v.ran, "\(v.name): \(v.reason ?? "")")
            let tolerance = double ? 1e-12 : 1e-5
            // Absolute for values near 0 and 1 (probabilities), relative beyond.
            let diff = try #require(v.maxAbsDiff), relative = try #require(v.maxRelDiff)
            #expect(diff <= tolerance || relative <= tolerance, "\(v.name): |Δ| \(diff), relative \(relative)")
            if double {
                ranInDouble += 1
                worst.double = max(worst.double, diff)
            } else {
                worst.float = max(worst.float, diff)
            }
        }
        #expect(ranInDouble >= 20)
        print(
            "ONNX export: \(verdicts.count) models of \(Self.randomCount) random networks, checker ok on all; ONNX Runtime ran "
                + "\(Self.randomCount) in float32 (largest |Δ| \(worst.float)) and \(ranInDouble) in float64 (largest |Δ| \(worst.double))")
    }

    @Test("A layer with no ONNX form is refused by its index and description")
    func unsupportedLayer() throws {
        let network = try Network<Double>([try Dense<Double>(3, 2, activation: .tanh), Doubling()], loss: .halfSquaredError)
        #expect(throws: ONNXExportError.unsupportedLayer(index: 1, layer: "Doubling(2)", reason: "no ONNX form is defined for this kind of layer")) {
            try network.onnxModel()
        }
        let message = "\(ONNXExportError.unsupportedLayer(index: 1, layer: "Doubling(2)", reason: "no ONNX form is defined for this kind of layer"))"
        #expect(message == "layer 1, Doubling(2), cannot be exported to ONNX: no ONNX form is defined for this kind of layer")
    }

    @Test("LayerNorm and GELU over features export too, and match the engine (GELU's tanh form in float64, the exact form in float32)")
    func featureNormAndGELU() throws {
        let scratch = try ScratchDirectory()
        var manifest: [ManifestCase] = []
        func add<Scalar: TensorScalar>(_ name: String, _ network: Network<Scalar>) throws {
            var network = network
            var g = SeededGenerator(seed: 9)
            let x = try Tensor<Scalar>(shape: [7, 3], scalars: (0..<21).map { _ in Scalar(g.uniform(-2, 2)) })
            let y = try network.forward(x)
            manifest.append(try Self.manifestCase(name, id: name, model: try network.onnxModel(), x: x, y: y, in: scratch))
        }
        for approximation in [GELUApproximation.tanh, .none] {
            var network = try Network<Double>(
                [
                    try Dense<Double>(3, 4, activation: .identity), try LayerNorm<Double>(shape: [4]),
                    try GELU<Double>(shape: [4], approximation: approximation), try Dense<Double>(4, 2, activation: .identity),
                ], loss: .halfSquaredError)
            network.initialize(seed: 8)
            if approximation == .tanh { try add("norm-gelu-tanh-f64", network) }
            try add("norm-gelu-\(approximation)-f32", network.converted(to: Float.self))
        }
        let path = scratch.path("manifest.json")
        try JSONEncoder().encode(manifest).write(to: URL(fileURLWithPath: path))
        let verdicts = try checkONNX(["cases", path])
        #expect(verdicts.count == 3)
        for v in verdicts {
            #expect(v.checker == "ok" && v.ran, "\(v)")
            #expect(try #require(v.maxAbsDiff) <= (v.name.hasSuffix("f64") ? 1e-10 : 1e-5), "\(v)")
        }
    }

    @Test("A layer with no ONNX form inside a residual block or a chain is refused by the block's index and its own description")
    func innerLayerRefused() throws {
        let refusal = ONNXExportError.unsupportedLayer(index: 1, layer: "Doubling(2)", reason: "no ONNX form is defined for this kind of layer")
        let residual = try Network<Double>(
            [try Dense<Double>(3, 2), try Residual<Double>([try Dense<Double>(2, 2), Doubling()]), try Dense<Double>(2, 2)],
            loss: .halfSquaredError)
        #expect(throws: refusal) { try residual.onnxModel() }
        let chain = try Network<Double>(
            [try Dense<Double>(3, 2), try Sequential<Double>([Doubling(), try Dense<Double>(2, 2)])], loss: .halfSquaredError)
        #expect(throws: refusal) { try chain.onnxModel() }
    }

    @Test("Options out of range and names that do not fit are refused before anything is built")
    func badOptions() throws {
        let network = try Network<Float>(features: 3, layers: [(2, .softmax)], loss: .softmaxCrossEntropy, seed: 1)
        #expect(throws: ONNXExportError.unsupportedOpset(12)) { try network.onnxModel(options: ONNXExportOptions(opset: 12)) }
        #expect(throws: ONNXExportError.unsupportedOpset(26)) { try network.onnxModel(options: ONNXExportOptions(opset: 26)) }
        #expect(throws: ONNXExportError.invalidBatch(0)) { try network.onnxModel(options: ONNXExportOptions(batch: .fixed(0))) }
        #expect(throws: ONNXExportError.featureCountMismatch(what: "list of feature names", expected: 3, found: 2)) {
            try network.onnxModel(featureNames: ["a", "b"])
        }
        #expect(throws: ONNXExportError.featureCountMismatch(what: "standardization", expected: 3, found: 1)) {
            try network.onnxModel(preprocessing: .standardize(mean: [0], standardDeviation: [1]))
        }
    }

    @Test("The same network exports to the same bytes")
    func deterministic() throws {
        let c = try RandomCase.draw(seed: 7)
        let a = try c.network.onnxModel(preprocessing: c.preprocessing, options: c.options)
        let b = try c.network.onnxModel(preprocessing: c.preprocessing, options: c.options)
        #expect(a == b && !a.isEmpty)
    }
}
