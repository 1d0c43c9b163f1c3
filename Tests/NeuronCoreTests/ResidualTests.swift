import Testing

@testable import NeuronCore

/// A residual block whose backward forgets the skip: `dx = f'(x)ᵀ·dy` instead of `dy + f'(x)ᵀ·dy`.
struct SkiplessResidual: Layer {
    typealias Scalar = Double
    var block: Residual<Double>

    var inputShape: [Int] { block.inputShape }
    var outputShape: [Int] { block.outputShape }
    var parameterShapes: [(name: String, shape: [Int])] { block.parameterShapes }
    var stateShapes: [(name: String, shape: [Int])] { block.stateShapes }
    var description: String { "Skipless\(block)" }
    var output: Tensor<Double> { block.output }
    var inputGradient: Tensor<Double> { block.body.inputGradient }

    func initialize(parameters: UnsafeMutableBufferPointer<Double>, state: UnsafeMutableBufferPointer<Double>, using generator: inout SeededGenerator)
    {
        block.initialize(parameters: parameters, state: state, using: &generator)
    }
    mutating func drawNoise(key: UInt64) { block.drawNoise(key: key) }
    mutating func forward(_ x: Tensor<Double>, parameters: UnsafeBufferPointer<Double>, state: UnsafeMutableBufferPointer<Double>, mode: LayerMode) {
        block.forward(x, parameters: parameters, state: state, mode: mode)
    }
    mutating func backward(
        input x: Tensor<Double>, outputGradient dy: Tensor<Double>, parameters: UnsafeBufferPointer<Double>,
        gradients: UnsafeMutableBufferPointer<Double>, computeInputGradient: Bool
    ) {
        block.backward(input: x, outputGradient: dy, parameters: parameters, gradients: gradients, computeInputGradient: computeInputGradient)
    }
    /// The bug survives the gradient check's copy in Double.
    func converted<Other: TensorScalar>(to: Other.Type) -> any Layer<Other> {
        Other.self == Double.self ? self as! any Layer<Other> : block.converted(to: Other.self)
    }
}

@Suite("Residual and Sequential: layers that hold layers")
struct ResidualTests {
    @Test("Hand-worked: W = [[1, 2], [3, 4]], b = [0.5, -0.5], x = [1, 1] give y = x + (xW + b) = [5.5, 6.5]; dy = [1, 0] gives dx = [2, 3]")
    func handWorked() throws {
        var block = try Residual<Double>([try Dense<Double>(2, 2, activation: .identity)])
        // Dense's slice: weight (inputs, outputs) row by row, then bias.
        let run = runLayer(
            &block, x: try Tensor(shape: [1, 2], scalars: [1, 1]), parameters: [1, 2, 3, 4, 0.5, -0.5],
            dy: try Tensor(shape: [1, 2], scalars: [1, 0]))
        #expect(run.output.scalars == [5.5, 6.5])
        // dW = xᵀ·dy = [[1, 0], [1, 0]], db = dy, dx = dy + dy·Wᵀ = [1, 0] + [1, 3].
        #expect(run.gradients == [1, 0, 1, 0, 1, 0])
        #expect(run.inputGradient.scalars == [2, 3])
    }

    @Test("Tensors are named by position inside the container, as PyTorch names a module's body: layers.1.body.1.running_mean")
    func names() throws {
        let network = try Network<Double>(
            [
                try Dense<Double>(3, 4, activation: .tanh),
                try Residual<Double>([
                    try Dense<Double>(4, 4, activation: .relu), try BatchNorm<Double>(input: [4]), try Dense<Double>(4, 4, activation: .identity),
                ]),
                try Sequential<Double>([try Dense<Double>(4, 4, activation: .tanh), try Dropout<Double>(input: [4], rate: 0.2)]),
                try Dense<Double>(4, 2, activation: .softmax),
            ], loss: .softmaxCrossEntropy)
        #expect(
            network.parameterTensors.map(\.name) == [
                "layers.0.weight", "layers.0.bias", "layers.1.body.0.weight", "layers.1.body.0.bias", "layers.1.body.1.weight",
                "layers.1.body.1.bias", "layers.1.body.2.weight", "layers.1.body.2.bias", "layers.2.0.weight", "layers.2.0.bias",
                "layers.3.weight", "layers.3.bias",
            ])
        #expect(network.stateTensors.map(\.name) == ["layers.1.body.1.running_mean", "layers.1.body.1.running_var"])
        #expect(network.description.contains("Residual[Dense(4→4, relu), BatchNorm(4), Dense(4→4, identity)]"), "\(network)")
        // Initialized through the container: batch norm's running variance starts at 1, its mean at 0.
        var initialized = network
        initialized.initialize(seed: 1)
        #expect(initialized.stateTensor(initialized.stateTensors[1]).scalars == [1, 1, 1, 1])
    }

    @Test("A body that changes the shape, a softmax inside, or no layers at all is refused, naming it")
    func refused() throws {
        func refusal(_ build: () throws(NetworkError) -> Void) -> String { message(build) }
        let (narrowing, softmax, square) = (try Dense<Double>(4, 3), try Dense<Double>(4, 4, activation: .softmax), try Dense<Double>(4, 4))
        let reshaping = refusal { () throws(NetworkError) in _ = try Residual<Double>([narrowing]) }
        #expect(reshaping.contains("its body takes (4) but gives (3)"), "\(reshaping)")
        #expect(refusal { () throws(NetworkError) in _ = try Sequential<Double>([softmax]) }.contains("not inside a container"))
        #expect(refusal { () throws(NetworkError) in _ = try Sequential<Double>([]) }.contains("needs at least one layer"))
        #expect(refusal { () throws(NetworkError) in _ = try Sequential<Double>([narrowing, square]) }.contains("(3)"))
    }

    /// A random dense network with residual blocks (dense, batch norm and dropout inside, a block in a block).
    static func randomCase(seed: UInt64) throws -> (Network<Double>, Tensor<Double>, Tensor<Double>) {
        var g = SeededGenerator(seed: seed)
        func pick<T>(_ choices: [T]) -> T { choices[g.index(below: choices.count)] }
        let smooth: [Activation] = [.tanh, .sigmoid, .identity]
        let features = 2 + g.index(below: 4), width = 2 + g.index(below: 4)
        var layers: [any Layer<Double>] = [try Dense<Double>(features, width, activation: pick(smooth))]
        for _ in 0..<(1 + g.index(below: 2)) {
            var body: [any Layer<Double>] = [try Dense<Double>(width, width, activation: pick(smooth))]
            if g.index(below: 2) == 0 { body.append(try BatchNorm<Double>(input: [width], activation: pick(smooth))) }
            if g.index(below: 2) == 0 { body.append(try Dropout<Double>(input: [width], rate: 0.3)) }
            if g.index(below: 3) == 0 { body.append(try Residual<Double>([try Dense<Double>(width, width, activation: pick(smooth))])) }
            body.append(try Dense<Double>(width, width, activation: .identity))
            layers.append(g.index(below: 4) == 0 ? try Sequential<Double>(body) : try Residual<Double>(body))
        }
        let loss: Loss = g.index(below: 2) == 0 ? .softmaxCrossEntropy : .halfSquaredError
        let outputs = 2 + g.index(below: 2)
        layers.append(try Dense<Double>(width, outputs, activation: loss == .softmaxCrossEntropy ? .softmax : .tanh))
        var network = try Network<Double>(layers, loss: loss)
        network.initialize(seed: seed)
        // Batch norm's γ and β away from 1 and 0, so that no gradient vanishes by symmetry.
        for tensor in network.parameterTensors where tensor.name.contains("body") && tensor.shape.count == 1 {
            for i in tensor.range { network.parameters[i] = g.uniform(0.5, 1.5) }
        }
        network.noiseStep = UInt64(g.index(below: 100))
        let batch = 3 + g.index(below: 3)
        let x = Tensor<Double>.random([batch, features], using: &g)
        return (network, x, randomTargets(batch: batch, outputs: outputs, loss: loss, using: &g))
    }

    @Test("30 random networks with residual blocks pass the gradient check: every parameter and input, central differences in Double")
    func randomNetworksPass() throws {
        var nested = 0
        for seed in UInt64(1)...30 {
            let (network, x, t) = try Self.randomCase(seed: seed)
            if network.description.contains("Residual[Dense") && network.description.components(separatedBy: "Residual[").count > 2 { nested += 1 }
            let report = try GradientCheck(checkInputs: true).run(on: network, inputs: x, targets: t)
            #expect(report.passed, "seed \(seed), \(network): \(report)")
            #expect(report.tensors.map(\.checked).reduce(0, +) == network.parameterCount + x.count)
        }
        #expect(nested > 0)
    }

    @Test("A residual block whose backward forgets the skip is caught: the tensors before it and the input fail, none after")
    func plantedBug() throws {
        let block = try Residual<Double>([try Dense<Double>(3, 3, activation: .tanh), try Dense<Double>(3, 3, activation: .identity)])
        var network = try Network<Double>(
            [try Dense<Double>(2, 3, activation: .tanh), SkiplessResidual(block: block), try Dense<Double>(3, 2, activation: .softmax)],
            loss: .softmaxCrossEntropy)
        network.initialize(seed: 4)
        var g = SeededGenerator(seed: 2)
        let x = Tensor<Double>.random([3, 2], using: &g)
        let t = try Tensor<Double>(shape: [3, 2], scalars: [1, 0, 0, 1, 1, 0])
        let report = try GradientCheck(checkInputs: true).run(on: network, inputs: x, targets: t)
        #expect(!report.passed)
        let failing = Set(report.failingTensors.map(\.name))
        #expect(failing.contains("layers.0.weight") && failing.contains("input"), "\(report)")
        #expect(!failing.contains { $0.hasPrefix("layers.1") || $0.hasPrefix("layers.2") }, "\(report)")
    }

    @Test("Float and Double copies compute the same block; converted keeps the shapes and names")
    func converted() throws {
        let (network, x, _) = try Self.randomCase(seed: 11)
        var double = network
        var float = network.converted(to: Float.self)
        #expect(float.parameterTensors.map(\.name) == network.parameterTensors.map(\.name))
        let yd = try double.forward(x)
        let yf = try float.forward(Tensor<Float>(shape: x.shape, scalars: x.scalars.map(Float.init)))
        expectClose(yf.scalars.map(Double.init), yd.scalars, tolerance: 1e-5)
    }
}
