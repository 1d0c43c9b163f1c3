// `swift run -c release Benchmarks`: first check each workload against its naive reference,
// then time it. Today: the BLAS ceiling (sgemm, dgemm) and one gradient-descent step of the
// single neuron. The network workloads and the peers (NumPy, PyTorch) come with the network issue.
import ArgumentParser
import Foundation
import NeuronCore
import NeuronTraining
import Observation

@main
struct Benchmarks: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "Benchmarks",
        abstract: "Checks, then times, Neuron's kernels against the machine's BLAS ceiling.")

    @Flag(help: "A few seconds in all, for CI smoke runs.")
    var quick = false

    @Option(help: "OpenBLAS threads for every workload.")
    var threads: Int = 2

    func validate() throws {
        guard threads >= 1 else { throw ValidationError("--threads must be at least 1, got \(threads)") }
    }

    @MainActor
    func run() async throws {
        #if DEBUG
        print("""
            ************************************************************************
            WARNING: this is a DEBUG build. Its timings mean nothing.
            Run the benchmarks in release mode:  swift run -c release Benchmarks
            ************************************************************************
            """)
        #endif
        BLAS.threadCount = threads
        print("BLAS: \(BLAS.summary)")
        print("Timings: median [p10, p90] over repeated runs, after warm-up.\n")

        let sizes = quick ? [256, 512] : [256, 512, 1024, 2048]
        print("The ceiling: C = A·B through our binding, n×n")
        print(Row.header)
        for n in sizes {
            try gemmCeiling(Float.self, n: n).print()
        }
        for n in sizes.prefix(2) {
            try gemmCeiling(Double.self, n: n).print()
        }
        print("\nOne training step (forward, backward, SGD update), Float, tanh hidden layers, softmax cross-entropy")
        print(Row.header)
        try networkStep(inputs: 64, hidden: [128], outputs: 10, batch: 32).print()
        try networkStep(inputs: 784, hidden: [256, 128], outputs: 10, batch: 64).print()
        try networkStep(inputs: 784, hidden: [256, 128], outputs: 10, batch: 256).print()

        print("\nThe single neuron (SPEC §3): one gradient-descent step, x 0.01, target 0.1")
        print(Row.header)
        try neuronStep(Double.self).print()
        try neuronStep(Float.self).print()

        try await observerCost()
    }

    /// gemm at n×n: checked against the naive loops at a small size, then timed.
    func gemmCeiling<Scalar: TensorScalar>(_: Scalar.Type, n: Int) throws -> Row {
        var generator = SeededGenerator(seed: 1)
        func random(_ shape: [Int]) -> Tensor<Scalar> {
            var t = Tensor<Scalar>(zeros: shape)
            for i in 0..<t.count { t[i] = Scalar(generator.uniform(-1, 1)) }
            return t
        }
        // Check: the binding against the three plain loops on a size off every kernel multiple.
        let small = 67
        let a0 = random([small, small]), b0 = random([small, small])
        var fast = Tensor<Scalar>(zeros: [small, small]), slow = fast
        try Tensor.matmul(a0, b0, into: &fast)
        try Naive.matmul(a0, b0, into: &slow)
        let gap = zip(fast.scalars, slow.scalars).map { abs(Double($0) - Double($1)) }.max() ?? 0
        guard gap <= Double(4 * small) * Double(Scalar.ulpOfOne) else {
            throw ValidationError("gemm check failed: BLAS and naive differ by \(gap)")
        }
        // Time.
        let a = random([n, n]), b = random([n, n])
        var c = Tensor<Scalar>(zeros: [n, n])
        let repeats = quick ? 5 : max(5, 2_000_000_000 / (2 * n * n * n))
        let timing = try measure(repeats: repeats) { try Tensor.matmul(a, b, into: &c) }
        let flops = 2.0 * Double(n) * Double(n) * Double(n)
        return Row(name: "\(Scalar.self == Float.self ? "sgemm" : "dgemm") n=\(n)", timing: timing,
                   extra: String(format: "%7.1f GFLOP/s", flops / timing.median / 1e9))
    }

    /// One SPEC §3 step, checked against the reference trajectory's first steps written out, then timed.
    func neuronStep<Scalar: TensorScalar>(_: Scalar.Type) throws -> Row {
        var neuron = Neuron<Scalar>(weight: 0.5, bias: 0.5)
        var w: Scalar = 0.5, b: Scalar = 0.5
        let x: Scalar = 0.01, t: Scalar = 0.1, lr: Scalar = 0.01
        for _ in 0..<100 {
            try neuron.step(inputs: [x], target: t, learningRate: lr)
            let output = Scalar.tanh(x * w + b)
            let g = (output - t) * (1 - output * output)
            w -= lr * (g * x)
            b -= lr * g
        }
        guard neuron.weights == [w], neuron.bias == b else {
            throw ValidationError("neuron check failed: \(neuron.weights), \(neuron.bias) vs \(w), \(b)")
        }
        let inputs = [x]
        let steps = 10_000
        let timing = try measure(repeats: quick ? 20 : 200) {
            for _ in 0..<steps { _ = try neuron.step(inputs: inputs, target: t, learningRate: lr) }
        }
        let perStep = timing.scaled(by: 1 / Double(steps))
        return Row(name: "neuron step <\(Scalar.self)>", timing: perStep,
                   extra: String(format: "%7.1f M steps/s", 1 / perStep.median / 1e6))
    }
}

extension Benchmarks {
    /// One SGD step of an MLP on a fixed seeded batch: checked against the naive layer loops'
    /// loss first, then timed, with its achieved GFLOP/s.
    func networkStep(inputs: Int, hidden: [Int], outputs: Int, batch: Int) throws -> Row {
        var network = try Network<Float>(
            inputSize: inputs, layers: hidden.map { ($0, Activation.tanh) } + [(outputs, .softmax)],
            loss: .softmaxCrossEntropy, seed: 1)
        var generator = SeededGenerator(seed: 2)
        var x = Tensor<Float>(zeros: [batch, inputs]), t = Tensor<Float>(zeros: [batch, outputs])
        for i in 0..<x.count { x[i] = Float(generator.uniform(0, 1)) }
        for n in 0..<batch { t[n, generator.index(below: outputs)] = 1 }

        // Check: the engine's loss against the naive layers' after three steps of training.
        var sgd = try SGD<Float>(learningRate: 0.01)
        for _ in 0..<3 { try network.trainStep(x, targets: t, optimizer: &sgd) }
        var y = x
        for tensor in network.parameterTensors where tensor.tensor == "weight" {
            let bias = network.parameterTensors.first { $0.layer == tensor.layer && $0.tensor == "bias" }!
            y = Naive.denseForward(y, weight: network.parameter(tensor), bias: network.parameter(bias),
                                   activation: network.layers[tensor.layer].activation)
        }
        var naiveLoss = 0.0
        for n in 0..<batch { for j in 0..<outputs where t[n, j] == 1 { naiveLoss -= Foundation.log(Double(y[n, j])) } }
        naiveLoss /= Double(batch)
        let loss = Double(try network.loss(x, targets: t))
        guard abs(loss - naiveLoss) <= 1e-4 * max(1, abs(naiveLoss)) else {
            throw ValidationError("network check failed: loss \(loss) vs naive \(naiveLoss)")
        }

        let timing = try measure(repeats: quick ? 10 : 200) { try network.trainStep(x, targets: t, optimizer: &sgd) }
        let sizes = [inputs] + hidden + [outputs]
        var flops = 0.0
        for l in 0..<(sizes.count - 1) {
            let product = 2.0 * Double(batch) * Double(sizes[l]) * Double(sizes[l + 1])
            flops += l == 0 ? 2 * product : 3 * product  // forward, weight gradient, and input gradient past the first layer
        }
        return Row(name: sizes.map(String.init).joined(separator: "-") + " batch \(batch)", timing: timing,
                   extra: String(format: "%7.1f GFLOP/s", flops / timing.median / 1e9))
    }
}

extension Benchmarks {
    /// What watching training costs: the same steps of 784-256-128-10 (batch 64) run bare, through
    /// the view model with nobody watching, and through it with an observer that renders every
    /// state it sees (as the CLI's progress line does). Rounds alternate so that a noisy phase of
    /// the machine hits all three alike.
    @MainActor
    func observerCost() async throws {
        var generator = SeededGenerator(seed: 3)
        let rows = 2_048
        var x = Tensor<Float>(zeros: [rows, 784])
        for i in 0..<x.count { x[i] = Float(generator.uniform(0, 1)) }
        let labels = (0..<rows).map { _ in generator.index(below: 10) }
        let data = try Dataset.classification(features: x, labels: labels, classNames: (0..<10).map(String.init))
        let network = try Network<Float>(inputSize: 784, layers: [(256, .tanh), (128, .tanh), (10, .softmax)],
                                         loss: .softmaxCrossEntropy, seed: 1)
        let epochs = quick ? 2 : 16  // 32 steps per epoch
        let engine = try NetworkTrainingEngine(network: network, optimizer: try SGD<Float>(learningRate: 0.01),
                                               dataset: data, batchSize: 64, epochs: epochs, seed: 1)
        let clock = ContinuousClock()
        var bare: [Double] = [], unobserved: [Double] = [], observed: [Double] = []
        var renderedStates = 0
        var observerBusy = Duration.zero
        for _ in 0 ..< (quick ? 1 : 9) {
            bare.append(clock.measure {
                var e = engine
                while !e.isFinished { e.step() }
            }.seconds)
            let quiet = TrainingViewModel(engine: engine)
            unobserved.append(try await clock.measure {
                quiet.handle(event: .start)
                await quiet.activity?.value
            }.seconds)
            let watched = TrainingViewModel(engine: engine)
            let renderer = ProgressRenderer()
            observed.append(try await clock.measure {
                let observer = Task { @MainActor in
                    var sink = 0
                    for await state in Observations({ watched.viewState }) {
                        let started = clock.now
                        sink &+= renderer.line(state).utf8.count
                        renderedStates += 1
                        observerBusy += clock.now - started
                        if state.phase == .finished { break }
                    }
                    return sink
                }
                watched.handle(event: .start)
                _ = await observer.value
            }.seconds)
            guard watched.engine?.network.parameters == quiet.engine?.network.parameters else {
                throw ValidationError("observer check failed: watched and unwatched runs ended with different weights")
            }
        }
        let steps = Double(engine.totalSteps)
        func median(_ xs: [Double]) -> Double { xs.sorted()[xs.count / 2] }
        let (b, u, o) = (median(bare), median(unobserved), median(observed))
        print("\nWatching training (784-256-128-10, batch 64, \(engine.totalSteps) steps, median of \(bare.count) rounds)")
        print(String(format: "  bare engine loop            %8.1f steps/s", steps / b))
        print(String(format: "  view model, unobserved      %8.1f steps/s  (%+.1f%% vs bare)", steps / u, (u / b - 1) * 100))
        print(String(format: "  view model, observed        %8.1f steps/s  (%+.1f%% vs bare, %d states rendered)",
                     steps / o, (o / b - 1) * 100, renderedStates))
        print(String(format: "  cost of the observer: %+.1f%% time (observed vs unobserved medians; rounds vary by %.1f%%)",
                     (o / u - 1) * 100, (unobserved.max()! / unobserved.min()! - 1) * 100))
        print(String(format: "  the observer's own work: %.2f ms rendering over %.0f ms of observed training (%.3f%%)",
                     observerBusy.seconds * 1e3, observed.reduce(0, +) * 1e3, observerBusy.seconds / observed.reduce(0, +) * 100))
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) * 1e-18 }
}

/// Median, 10th and 90th percentile of repeated runs, in seconds.
struct Timing {
    var median, p10, p90: Double

    func scaled(by factor: Double) -> Timing {
        Timing(median: median * factor, p10: p10 * factor, p90: p90 * factor)
    }
}

/// Runs `body` a few times to warm up, then `repeats` times under the clock.
func measure(repeats: Int, _ body: () throws -> Void) throws -> Timing {
    for _ in 0..<max(2, repeats / 10) { try body() }
    let clock = ContinuousClock()
    var seconds: [Double] = []
    seconds.reserveCapacity(repeats)
    for _ in 0..<repeats {
        let elapsed = try clock.measure(body)
        seconds.append(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18)
    }
    seconds.sort()
    func percentile(_ p: Double) -> Double { seconds[min(seconds.count - 1, Int(p * Double(seconds.count - 1)))] }
    return Timing(median: percentile(0.5), p10: percentile(0.1), p90: percentile(0.9))
}

/// One line of the results table.
struct Row {
    var name: String
    var timing: Timing
    var extra: String

    static let header = "  " + "workload".padding(toLength: 26, withPad: " ", startingAt: 0)
        + "median        p10 – p90                throughput"

    func print() {
        Swift.print("  " + name.padding(toLength: 26, withPad: " ", startingAt: 0)
            + Self.format(timing.median).padding(toLength: 14, withPad: " ", startingAt: 0)
            + (Self.format(timing.p10) + " – " + Self.format(timing.p90)).padding(toLength: 25, withPad: " ", startingAt: 0)
            + extra)
    }

    /// Seconds in the unit that reads best: ns, µs, ms or s.
    static func format(_ seconds: Double) -> String {
        switch seconds {
        case ..<1e-6: String(format: "%.1f ns", seconds * 1e9)
        case ..<1e-3: String(format: "%.2f µs", seconds * 1e6)
        case ..<1: String(format: "%.2f ms", seconds * 1e3)
        default: String(format: "%.2f s", seconds)
        }
    }
}
