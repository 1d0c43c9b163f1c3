import Foundation
import NeuronCore
import Observation
import Testing

@testable import NeuronTraining

struct TimedOut: Error, CustomStringConvertible {
    var waited: Duration
    var last: String
    var description: String { "condition not met within \(waited); last state: \(last)" }
}

/// Waits, through `Observations`, until the model's state satisfies `condition`; fails after `timeout`.
/// The timeout is the only clock involved: no sleeping stands in for synchronisation. It only
/// bounds a run that never gets there: the watcher runs on the main actor, which the full suite's
/// other main-actor tests (loading Fashion-MNIST, writing checkpoints) can hold for over a minute
/// on a loaded 2-core machine, so it is generous.
@MainActor
func waitUntil<M: ViewModel>(
    _ model: M, timeout: Duration = .seconds(300), _ condition: @escaping @Sendable (M.ViewState) -> Bool
) async throws -> M.ViewState {
    let watcher = Task { @MainActor () -> M.ViewState? in
        for await state in Observations({ model.viewState }) where condition(state) { return state }
        return nil  // cancelled by the timeout
    }
    let timer = Task {
        try await Task.sleep(for: timeout)
        watcher.cancel()
    }
    defer { timer.cancel() }
    guard let state = await watcher.value else { throw TimedOut(waited: timeout, last: "\(model.viewState)") }
    return state
}

/// XOR with 2-4-1 tanh, SGD with momentum, full batches (one step per epoch).
func xorEngine(epochs: Int, learningRate: Double = 0.5, seed: UInt64 = 1) throws -> NetworkTrainingEngine<Double, SGD<Double>> {
    let network = try Network<Double>(features: 2, layers: [(4, .tanh), (1, .tanh)], loss: .halfSquaredError, seed: seed)
    return try NetworkTrainingEngine(
        network: network, optimizer: try SGD<Double>(learningRate: learningRate, momentum: 0.9),
        dataset: Synthetic.xor(as: Double.self), batchSize: 4, epochs: epochs, seed: seed)
}

/// Docs/Reference.md §3's neuron, for `iterations` steps.
func neuronConfig(iterations: Int) throws -> RunConfig {
    try config(
        """
        model: {neuron: {weight: 0.5, bias: 0.5}}
        data: {kind: sample, input: 0.01, target: 0.1}
        optimizer: {kind: sgd, learningRate: 0.01}
        training: {iterations: \(iterations), precision: double}
        """)
}

/// The engine the neuron's config builds: the network engine, one tanh unit on one sample.
func neuronEngine(iterations: Int = 100_000) throws -> NetworkTrainingEngine<Double, SGD<Double>> {
    try #require(try RunBuilder.build(try neuronConfig(iterations: iterations)).engine as? NetworkTrainingEngine<Double, SGD<Double>>)
}

/// The engine run straight through (or for exactly `steps` steps), with no view model: the
/// reference for exactness.
func straightRun<E: TrainingEngine>(_ engine: E, steps: Int? = nil) -> E {
    var engine = engine
    while !engine.isFinished && engine.stepsTaken < (steps ?? .max) { _ = engine.step() }
    return engine
}

/// Planned steps no test can reach: a run that only ends when a test stops it, however slow or
/// fast the machine, so reacting to a state can never come too late.
let endless = 10_000_000

/// The repository's Data folder (configs and small datasets).
let dataDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Data").standardized.path

/// A config as a YAML file in `directory` would give it (relative data paths resolved against it).
func config(_ yaml: String, in directory: String = dataDirectory) throws -> RunConfig {
    try ConfigLoader.parse(yaml, source: "test.yaml", baseDirectory: directory)
}

/// XOR with 2-3-1 tanh in Double, SGD with momentum, full batches: a run's config, small enough to train in tests.
func xorConfig(epochs: Int = 4, extra: String = "") throws -> RunConfig {
    try config(
        """
        model: {layers: [{units: 3, activation: tanh}, {units: 1, activation: tanh}]}
        data: {kind: synthetic, name: xor}
        optimizer: {kind: sgd, learningRate: 0.5, momentum: 0.9}
        training: {epochs: \(epochs), batchSize: 4, precision: double, seed: 7}
        \(extra)
        """)
}

/// The iris table (150 rows, 4 features, 3 classes) with 4-8-3 tanh/softmax in mini-batches of 16
/// (9 steps an epoch), standardized, 20% held out.
func irisConfig(epochs: Int = 3, optimizer: String = "{kind: sgd, learningRate: 0.1, momentum: 0.9}", precision: String = "float") throws -> RunConfig
{
    try config(
        """
        model: {layers: [{units: 8, activation: tanh}, {units: 3, activation: softmax}]}
        data: {kind: csv, path: iris.csv, labelColumn: species, validationSplit: 0.2}
        optimizer: \(optimizer)
        training: {epochs: \(epochs), batchSize: 16, precision: \(precision), seed: 3}
        """)
}

/// Expects `|actual - expected| <= tolerance`.
func expectClose(_ actual: Double, _ expected: Double, tolerance: Double, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(
        abs(actual - expected) <= tolerance, "\(actual) vs \(expected), off by \(abs(actual - expected)) > \(tolerance)",
        sourceLocation: sourceLocation)
}

/// The mean and population standard deviation of `values`.
func meanAndDeviation(_ values: [Double]) -> (mean: Double, deviation: Double) {
    let mean = values.reduce(0, +) / Double(values.count)
    return (mean, (values.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(values.count)).squareRoot())
}

/// Column `c` of a dataset's features, in Double.
func column<Scalar: TensorScalar>(_ c: Int, of data: Dataset<Scalar>) -> [Double] {
    (0..<data.count).map { Double(data.features[$0, c]) }
}

/// An uncompressed IDX file of unsigned bytes (magic 0x00 0x00 0x08, dimension count, big-endian extents).
func idx(_ dimensions: [Int], _ bytes: [UInt8]) -> [UInt8] {
    [0, 0, 0x08, UInt8(dimensions.count)] + dimensions.flatMap { d in [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: d >> $0) } } + bytes
}

/// Twenty 6×6 images in two classes (a bright left or right half, with seeded noise) as IDX files
/// in `directory` (IDX labels are digits: 10 classes), and a CNN config over them that gives no `model.inputShape` (the files give it).
func idxCNNConfig(in directory: CheckpointTestDirectory, epochs: Int = 4, layers: String? = nil, extra: String = "") throws -> RunConfig {
    var g = SeededGenerator(seed: 11)
    var pixels: [UInt8] = []
    let labels: [UInt8] = (0..<20).map { UInt8($0 % 2) }
    for label in labels {
        for _ in 0..<6 {
            for column in 0..<6 { pixels.append(UInt8((column < 3) == (label == 0) ? 200 : Int(g.uniform(0, 60)))) }
        }
    }
    _ = try directory.write(idx([20, 6, 6], pixels), "train-images")
    _ = try directory.write(idx([20], labels), "train-labels")
    return try config(
        """
        model:
          layers: \(layers ?? """
        [{kind: conv2d, filters: 2, kernel: 3}, {kind: batchNorm, activation: relu}, {kind: maxPool2d, size: 2},
                   {kind: flatten}, {units: 10, activation: softmax}]
        """)
        data: {kind: idx, trainImages: train-images, trainLabels: train-labels, validationSplit: 0.2}
        optimizer: {kind: sgd, learningRate: 0.1}
        training: {epochs: \(epochs), batchSize: 4, seed: 5}
        \(extra)
        """, in: directory.path)
}

// MARK: - Python

// Python's oracles (safetensors, numpy) come from the virtual environment `.venv` at the package
// root that the README's test command makes (Debian's own Python refuses `pip install` into the
// system). The tests that use them fail, never skip, when it is missing.

/// The virtual environment's Python: `<package root>/.venv/bin/python3`.
let venvPython = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent(".venv/bin/python3").path

/// `python3 -c <script> <arguments>` (the package's virtual environment, or `executable`), with its
/// output in files so that neither pipe can fill up.
func python(
    _ script: String, _ arguments: [String] = [], in directory: CheckpointTestDirectory, executable: String = venvPython
) throws -> String {
    let id = UUID().uuidString
    let (outPath, errPath) = (directory.file("\(id).stdout"), directory.file("\(id).stderr"))
    for file in [outPath, errPath] { _ = FileManager.default.createFile(atPath: file, contents: nil) }
    defer { try? FileManager.default.removeItem(atPath: outPath); try? FileManager.default.removeItem(atPath: errPath) }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = ["-c", script] + arguments
    process.standardOutput = FileHandle(forWritingAtPath: outPath)
    process.standardError = FileHandle(forWritingAtPath: errPath)
    try process.run()
    process.waitUntilExit()
    let output = try String(contentsOfFile: outPath, encoding: .utf8)
    guard process.terminationStatus == 0 else {
        let errors = try String(contentsOfFile: errPath, encoding: .utf8)
        throw PythonFailed(status: process.terminationStatus, errors: errors)
    }
    return output
}

struct PythonFailed: Error, CustomStringConvertible {
    var status: Int32
    /// What python3 wrote to standard error.
    var errors: String
    var description: String { "python3 exited with status \(status): \(errors)" }
}

/// Fails, with what to install, unless the package's virtual environment can import safetensors and numpy.
func requireSafetensors(in directory: CheckpointTestDirectory) throws {
    struct MissingPython: Error, CustomStringConvertible { var description: String }
    guard FileManager.default.isExecutableFile(atPath: venvPython) else {
        throw MissingPython(
            description: "the interop tests need \(venvPython): run `python3 -m venv .venv && .venv/bin/pip install safetensors numpy`"
                + " at the package root (the README's test command does)")
    }
    do {
        _ = try python("import safetensors, numpy", in: directory)
    } catch {
        // The traceback's last line says what is missing: "ModuleNotFoundError: No module named 'safetensors'".
        let reason = (error as? PythonFailed)?.errors.split(separator: "\n").last.map(String.init) ?? "\(error)"
        throw MissingPython(
            description: "the interop tests need Python 3 with safetensors and numpy:"
                + " run `.venv/bin/pip install safetensors numpy` at the package root (\(reason))")
    }
}

/// The description of the error that `body` throws (any error), or "no error" when it does not throw.
func anyMessage<T>(_ body: () throws -> T) -> String {
    do {
        _ = try body()
        return "no error"
    } catch {
        return "\(error)"
    }
}
