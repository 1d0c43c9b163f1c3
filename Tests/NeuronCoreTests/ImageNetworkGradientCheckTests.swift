import Testing

@testable import NeuronCore

/// A realistic mistake in one layer's backward pass, planted by ``Planted``.
enum PlantedBug: String, Sendable, CaseIterable {
    /// Conv2D: the weight gradient with the kernel flipped (a correlation/convolution mix-up).
    case flippedKernel
    /// MaxPool2D: each gradient routed one pixel past the maximum that won.
    case routedOnePixelOff
    /// AvgPool2D: the window's area left out of the share.
    case missingDivisor
    /// Flatten: the gradient handed back without the transpose to channels-last.
    case untransposed
    /// Dropout: the mask's `1/(1 - rate)` scale left out of backward.
    case unscaledMask
    /// BatchNorm: the paths through the batch's mean and variance dropped, `dx = γ·s·dy`.
    case meanPathDropped
}

/// A layer with a bug planted in its backward pass: forward is the real layer's, backward the
/// real one's followed by the bug's damage.
struct Planted<Scalar: TensorScalar>: Layer {
    var layer: any Layer<Scalar>
    let bug: PlantedBug
    var damaged = Tensor<Scalar>(zeros: [0, 0])

    var inputShape: [Int] { layer.inputShape }
    var outputShape: [Int] { layer.outputShape }
    var parameterShapes: [(name: String, shape: [Int])] { layer.parameterShapes }
    var stateShapes: [(name: String, shape: [Int])] { layer.stateShapes }
    var description: String { "Planted(\(bug), \(layer))" }
    var output: Tensor<Scalar> { layer.output }
    var inputGradient: Tensor<Scalar> { damaged }

    func initialize(parameters: UnsafeMutableBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>, using generator: inout SeededGenerator)
    {
        layer.initialize(parameters: parameters, state: state, using: &generator)
    }
    mutating func drawNoise(key: UInt64) { layer.drawNoise(key: key) }
    mutating func forward(_ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>, mode: LayerMode) {
        layer.forward(x, parameters: parameters, state: state, mode: mode)
    }
    func converted<Other: TensorScalar>(to: Other.Type) -> any Layer<Other> { Planted<Other>(layer: layer.converted(to: Other.self), bug: bug) }

    mutating func backward(
        input x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>,
        parameters: UnsafeBufferPointer<Scalar>, gradients: UnsafeMutableBufferPointer<Scalar>, computeInputGradient: Bool
    ) {
        let before = Array(gradients)
        layer.backward(input: x, outputGradient: dy, parameters: parameters, gradients: gradients, computeInputGradient: computeInputGradient)
        damaged = layer.inputGradient
        switch bug {
        case .flippedKernel:
            let conv = layer as! Conv2D<Scalar>
            let (kh, kw) = (conv.window.kernelHeight, conv.window.kernelWidth), rest = conv.window.channels * conv.filters
            let delta = (0..<gradients.count).map { gradients[$0] - before[$0] }
            for ky in 0..<kh {
                for kx in 0..<kw {
                    for r in 0..<rest {
                        gradients[(ky * kw + kx) * rest + r] =
                            before[(ky * kw + kx) * rest + r] + delta[((kh - 1 - ky) * kw + kw - 1 - kx) * rest + r]
                    }
                }
            }
        case .routedOnePixelOff:
            let channels = (layer as! MaxPool2D<Scalar>).window.channels
            let old = damaged.scalars
            for i in 0..<old.count { damaged[i] = old[(i + old.count - channels) % old.count] }
        case .missingDivisor:
            let window = (layer as! AvgPool2D<Scalar>).window
            for i in 0..<damaged.count { damaged[i] *= Scalar(window.kernelHeight * window.kernelWidth) }
        case .untransposed:
            damaged = dy
        case .unscaledMask:
            let rate = (layer as! Dropout<Scalar>).rate
            for i in 0..<damaged.count { damaged[i] *= Scalar(1 - rate) }
        case .meanPathDropped:
            let norm = layer as! BatchNorm<Scalar>
            let c = norm.channels
            for i in 0..<damaged.count { damaged[i] = parameters[i % c] * norm.cache.inverseDeviation[i % c] * dy[i] }
        }
    }
}

@Suite("Whole-network gradient check of image networks")
struct ImageNetworkGradientCheckTests {
    /// A random small image network: conv, optional batch norm, max or average pool, optional
    /// dropout, flatten, a dense layer with optional batch norm and dropout, and an output layer,
    /// with a batch and targets; every size, stride, padding and activation drawn from `seed`.
    static func randomCase(seed: UInt64) throws -> (Network<Double>, Tensor<Double>, Tensor<Double>) {
        var g = SeededGenerator(seed: seed)
        func pick<T>(_ choices: [T]) -> T { choices[g.index(below: choices.count)] }
        let smooth: [Activation] = [.tanh, .sigmoid, .identity]
        var layers: [any Layer<Double>] = []
        var shape = [3 + g.index(below: 4), 3 + g.index(below: 4), pick([1, 2, 3])]
        let kernel = (1 + g.index(below: 3), 1 + g.index(below: 3))
        layers.append(
            try Conv2D<Double>(
                input: shape, filters: 1 + g.index(below: 3), kernel: kernel, stride: (1 + g.index(below: 2), 1 + g.index(below: 2)),
                padding: pick([.valid, .same, .explicit(rows: kernel.0 / 2, columns: kernel.1 / 2)]), activation: pick(smooth)))
        shape = layers.last!.outputShape
        if g.index(below: 2) == 0 {
            layers.append(try BatchNorm<Double>(input: shape, activation: pick([.tanh, .identity])))
        }
        let size = (min(2, shape[0]), min(2, shape[1])), stride = (1 + g.index(below: 2), 1 + g.index(below: 2))
        layers.append(
            g.index(below: 2) == 0
                ? try MaxPool2D<Double>(input: shape, size: size, stride: stride) : try AvgPool2D<Double>(input: shape, size: size, stride: stride))
        shape = layers.last!.outputShape
        if g.index(below: 2) == 0 { layers.append(try Dropout<Double>(input: shape, rate: 0.3)) }
        layers.append(try Flatten<Double>(input: shape))
        let hidden = 2 + g.index(below: 4)
        layers.append(try Dense<Double>(layers.last!.outputShape[0], hidden, activation: pick(smooth)))
        if g.index(below: 2) == 0 { layers.append(try BatchNorm<Double>(input: [hidden], activation: pick([.sigmoid, .identity]))) }
        if g.index(below: 2) == 0 { layers.append(try Dropout<Double>(input: [hidden], rate: 0.5)) }
        let loss: Loss = g.index(below: 2) == 0 ? .softmaxCrossEntropy : .halfSquaredError
        let outputs = 2 + g.index(below: 3)
        layers.append(try Dense<Double>(hidden, outputs, activation: loss == .softmaxCrossEntropy ? .softmax : .tanh))
        var network = try Network<Double>(layers, loss: loss)
        network.initialize(seed: seed)
        network.noiseStep = UInt64(g.index(below: 100))
        let batch = 2 + g.index(below: 3)
        let x = Tensor<Double>.random([batch, network.featureCount], using: &g)
        return (network, x, randomTargets(batch: batch, outputs: outputs, loss: loss, using: &g))
    }

    @Test("40 random image networks pass: every parameter and input, batch norm in training mode, dropout's mask held")
    func randomNetworksPass() throws {
        var kinds: Set<String> = []
        for seed in UInt64(1)...40 {
            let (network, x, t) = try Self.randomCase(seed: seed)
            for layer in network.layers { kinds.insert(String(layer.description.prefix { $0 != "(" })) }
            let report = try GradientCheck(checkInputs: true).run(on: network, inputs: x, targets: t)
            #expect(report.passed, "seed \(seed), \(network): \(report)")
            #expect(report.tensors.map(\.checked).reduce(0, +) == network.parameterCount + x.count)
        }
        #expect(kinds == ["Conv2D", "BatchNorm", "MaxPool2D", "AvgPool2D", "Dropout", "Flatten", "Dense"])
    }

    /// A network with the bug's layer at index 2, after a convolution and a batch norm that
    /// reveal what it hands back: [conv, batch norm, planted, …, flatten, dense].
    static func plantedCase(_ bug: PlantedBug) throws -> (Network<Double>, planted: Int) {
        var layers: [any Layer<Double>] = [
            try Conv2D<Double>(input: [6, 5, 2], filters: 3, kernel: (2, 2), activation: .tanh),
            try BatchNorm<Double>(input: [5, 4, 3]),
        ]
        let victim: any Layer<Double>
        switch bug {
        case .flippedKernel: victim = try Conv2D<Double>(input: [5, 4, 3], filters: 2, kernel: (2, 3), padding: .same, activation: .tanh)
        case .routedOnePixelOff: victim = try MaxPool2D<Double>(input: [5, 4, 3], size: (2, 2), stride: (1, 1))
        case .missingDivisor: victim = try AvgPool2D<Double>(input: [5, 4, 3], size: (2, 2), stride: (1, 2))
        case .untransposed: victim = try Flatten<Double>(input: [5, 4, 3])
        case .unscaledMask: victim = try Dropout<Double>(input: [5, 4, 3], rate: 0.4)
        case .meanPathDropped: victim = try BatchNorm<Double>(input: [5, 4, 3], activation: .tanh)
        }
        layers.append(Planted(layer: victim, bug: bug))
        if !(victim is Flatten<Double>) { layers.append(try Flatten<Double>(input: victim.outputShape)) }
        layers.append(try Dense<Double>(layers.last!.outputShape[0], 3, activation: .softmax))
        var network = try Network<Double>(layers, loss: .softmaxCrossEntropy)
        network.initialize(seed: 5)
        // Give the batch norm a γ and β away from 1 and 0, so that no gradient vanishes by symmetry.
        var g = SeededGenerator(seed: 6)
        for tensor in network.parameterTensors where tensor.layer == 1 {
            for i in tensor.range { network.parameters[i] = g.uniform(0.5, 1.5) }
        }
        return (network, 2)
    }

    @Test("A bug planted in each layer's backward is caught, and the report names where", arguments: PlantedBug.allCases)
    func plantedBug(_ bug: PlantedBug) throws {
        let (network, planted) = try Self.plantedCase(bug)
        var g = SeededGenerator(seed: 3)
        let x = Tensor<Double>.random([3, network.featureCount], using: &g)
        var t = Tensor<Double>(zeros: [3, 3])
        for n in 0..<3 { t[n, n] = 1 }
        let report = try GradientCheck(checkInputs: true).run(on: network, inputs: x, targets: t)
        #expect(!report.passed, "\(bug) went unnoticed: \(report)")
        // Wrong gradients start at the planted layer: only its own weight's for the flipped
        // kernel; for a wrong input gradient, every tensor before it and the input (each is
        // handed it), none of its own; none after it either way.
        let failing = Set(report.failingTensors.compactMap(\.layer))
        if bug == .flippedKernel {
            #expect(report.failingTensors.map(\.name) == ["layers.\(planted).weight"], "\(report)")
        } else {
            #expect(failing.max() == planted - 1, "\(bug): failing layers \(failing.sorted())")
            #expect(report.failingTensors.contains { $0.name == "input" })
        }
        #expect(report.tensors.filter { ($0.layer ?? -1) > planted }.allSatisfy { $0.failures == 0 })
    }
}
