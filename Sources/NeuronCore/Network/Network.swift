// A network is a fold over its layers: forward folds left to right, backward right to left.
// All parameters live in one contiguous buffer and all gradients in another of the same layout;
// each layer sees its slice, and an optimizer sees only the two flat buffers.

/// Where one parameter tensor lives in a network's flat buffer, e.g. `layers.0.weight`.
public struct ParameterTensor: Sendable, Equatable, Codable, CustomStringConvertible {
    /// The layer's index in the network.
    public var layer: Int
    /// The tensor's name within its layer: `weight` or `bias`.
    public var tensor: String
    /// The tensor's shape.
    public var shape: [Int]
    /// The first element's index in the flat buffer.
    public var offset: Int
    /// The number of elements.
    public var count: Int { shape.reduce(1, *) }
    /// The elements' indices in the flat buffer.
    public var range: Range<Int> { offset ..< offset + count }
    /// `layers.0.weight`: the name checkpoints use.
    public var name: String { "layers.\(layer).\(tensor)" }
    public var description: String { "\(name) \(TensorError.format(shape))" }
}

/// Layers in sequence with a loss at the end, e.g. `Network[Dense(784→256, tanh), Dense(256→10, softmax)]`.
public struct Network<Scalar: TensorScalar>: Sendable, CustomStringConvertible {
    /// The layers, input side first.
    public private(set) var layers: [any Layer<Scalar>]
    /// The loss at the output.
    public let loss: Loss
    /// Every parameter, layer after layer, each layer's tensors in its ``Layer/parameterShapes`` order.
    public var parameters: [Scalar]
    /// The gradient of the last batch's loss with respect to each entry of ``parameters``.
    public private(set) var gradients: [Scalar]
    /// Where each parameter tensor lives in ``parameters`` and ``gradients``.
    public let parameterTensors: [ParameterTensor]
    /// Each layer's slice of the flat buffers.
    let layerRanges: [Range<Int>]
    /// The loss's gradient, the start of backward; sized when a batch shape is first seen.
    private var lossGradient: Tensor<Scalar>? = Tensor(zeros: [0, 0])

    /// A network of the given layers, parameters all zero (see ``initialize(seed:)``).
    /// - Throws: ``NetworkError`` when consecutive sizes do not chain, when a softmax is not the
    ///   last layer, or when softmax and cross-entropy do not come together.
    public init(_ layers: [any Layer<Scalar>], loss: Loss) throws(NetworkError) {
        guard !layers.isEmpty else { throw .invalidLayer("Network[]", reason: "a network needs at least one layer") }
        for (i, (a, b)) in zip(layers, layers.dropFirst()).enumerated() where a.outputSize != b.inputSize {
            throw .layersDoNotChain(index: i, outputs: a.outputSize, nextInputs: b.inputSize)
        }
        if let i = layers.dropLast().firstIndex(where: { $0.activation == .softmax }) {
            throw .invalidLayer("layer \(i) \(layers[i])", reason: "softmax is only allowed at the output layer, fused with softmaxCrossEntropy")
        }
        let last = layers[layers.count - 1]
        switch (loss, last.activation) {
        case (.softmaxCrossEntropy, .softmax), (.halfSquaredError, .tanh), (.halfSquaredError, .sigmoid),
             (.halfSquaredError, .relu), (.halfSquaredError, .identity):
            break
        case (.softmaxCrossEntropy, _):
            throw .lossMismatch("softmaxCrossEntropy needs a softmax output layer, got \(last)")
        case (.halfSquaredError, .softmax):
            throw .lossMismatch("a softmax output needs the softmaxCrossEntropy loss, got halfSquaredError")
        }
        var tensors: [ParameterTensor] = [], ranges: [Range<Int>] = []
        var offset = 0
        for (i, layer) in layers.enumerated() {
            let start = offset
            for (name, shape) in layer.parameterShapes {
                tensors.append(ParameterTensor(layer: i, tensor: name, shape: shape, offset: offset))
                offset += shape.reduce(1, *)
            }
            ranges.append(start ..< offset)
        }
        self.layers = layers
        self.loss = loss
        parameterTensors = tensors
        layerRanges = ranges
        parameters = Array(repeating: 0, count: offset)
        gradients = Array(repeating: 0, count: offset)
    }

    /// A network of dense layers, initialised from `seed`.
    /// - Parameters:
    ///   - inputSize: features per sample.
    ///   - layers: units and activation of each dense layer, input side first.
    ///   - loss: the loss at the output.
    ///   - seed: the seed of the initial weights (Glorot/He, see ``Dense/initialize(_:using:)``).
    /// - Throws: ``NetworkError`` for a size below 1 or an invalid softmax/loss pairing.
    public init(inputSize: Int, layers: [(units: Int, activation: Activation)], loss: Loss, seed: UInt64) throws(NetworkError) {
        var built: [any Layer<Scalar>] = []
        var inputs = inputSize
        for (units, activation) in layers {
            built.append(try Dense<Scalar>(inputs, units, activation: activation))
            inputs = units
        }
        try self.init(built, loss: loss)
        initialize(seed: seed)
    }

    /// `Network[Dense(784→256, tanh), Dense(256→10, softmax)]`.
    public var description: String { "Network[" + layers.map(\.description).joined(separator: ", ") + "]" }

    /// Features per sample the network takes.
    public var inputSize: Int { layers[0].inputSize }
    /// Outputs per sample it gives.
    public var outputSize: Int { layers[layers.count - 1].outputSize }
    /// The number of scalar parameters.
    public var parameterCount: Int { parameters.count }

    /// Draws every layer's initial parameters from one generator seeded with `seed`, in layer order.
    public mutating func initialize(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        for (i, layer) in layers.enumerated() {
            parameters.withUnsafeMutableBufferPointer { p in
                layer.initialize(UnsafeMutableBufferPointer(rebasing: p[layerRanges[i]]), using: &generator)
            }
        }
    }

    /// The same network computing in another precision: the same layers, the parameters
    /// converted entry by entry (Float → Double is exact), caches and gradients fresh.
    public func converted<Other: TensorScalar>(to: Other.Type) -> Network<Other> {
        // The layers chained and paired with the loss already, so building the copy cannot fail.
        var copy = try! Network<Other>(layers.map { $0.converted(to: Other.self) }, loss: loss)
        copy.parameters = parameters.map { Other($0) }
        return copy
    }

    /// One parameter tensor's current values (a copy).
    public func parameter(_ tensor: ParameterTensor) -> Tensor<Scalar> {
        try! Tensor(shape: tensor.shape, scalars: Array(parameters[tensor.range]))
    }

    /// One parameter tensor's gradient from the last backward pass (a copy).
    public func gradient(_ tensor: ParameterTensor) -> Tensor<Scalar> {
        try! Tensor(shape: tensor.shape, scalars: Array(gradients[tensor.range]))
    }

    // MARK: Forward

    /// Runs the batch through every layer and returns the output (probabilities after a softmax).
    ///
    ///     // x: (batch, inputSize)  →  (batch, outputSize)
    ///
    /// - Throws: ``NetworkError/shapeMismatch(_:)`` naming both shapes when `x` does not fit.
    @discardableResult
    public mutating func forward(_ x: Tensor<Scalar>) throws(NetworkError) -> Tensor<Scalar> {
        try checkInput(x)
        forwardUnchecked(x)
        return layers[layers.count - 1].output
    }

    mutating func forwardUnchecked(_ x: Tensor<Scalar>) {
        let parameters = self.parameters
        parameters.withUnsafeBufferPointer { p in
            for i in layers.indices {
                let input = i == 0 ? x : layers[i - 1].output
                layers[i].forward(input, parameters: UnsafeBufferPointer(rebasing: p[layerRanges[i]]))
            }
        }
    }

    /// The batch's loss, forward only.
    ///
    ///     // x: (batch, inputSize)  targets: (batch, outputSize)
    ///
    /// - Throws: ``NetworkError/shapeMismatch(_:)`` naming both shapes when `x` or `targets` does not fit.
    public mutating func loss(_ x: Tensor<Scalar>, targets: Tensor<Scalar>) throws(NetworkError) -> Scalar {
        try checkInput(x)
        try checkTargets(targets, batch: x.rows)
        forwardUnchecked(x)
        var none: Tensor<Scalar>? = nil
        let last = layers[layers.count - 1]
        return loss.evaluate(output: last.output, logits: last.logits, targets: targets, gradient: &none)
    }

    // MARK: Backward

    /// Forward, loss and backward for one batch: afterwards ``gradients`` holds the loss's
    /// gradient for every parameter (cleared first, once) and, when `inputGradient` is set,
    /// ``inputGradient`` holds it for every input.
    ///
    ///     // x: (batch, inputSize)  targets: (batch, outputSize)
    ///
    /// - Returns: the batch's loss before any update.
    /// - Throws: ``NetworkError/shapeMismatch(_:)`` naming both shapes when `x` or `targets` does not fit.
    @discardableResult
    public mutating func lossAndGradients(
        _ x: Tensor<Scalar>, targets: Tensor<Scalar>, inputGradient: Bool = false
    ) throws(NetworkError) -> Scalar {
        try checkInput(x)
        try checkTargets(targets, batch: x.rows)
        forwardUnchecked(x)
        let last = layers.count - 1
        let value = loss.evaluate(output: layers[last].output, logits: layers[last].logits, targets: targets, gradient: &lossGradient)
        backwardUnchecked(x, computeInputGradient: inputGradient)
        return value
    }

    mutating func backwardUnchecked(_ x: Tensor<Scalar>, computeInputGradient: Bool) {
        // Borrow the gradient buffer out of `self` (a swap, no copy) so that layers can be
        // mutated while it is open for writing.
        var gradients: [Scalar] = []
        swap(&gradients, &self.gradients)
        defer { swap(&gradients, &self.gradients) }
        let parameters = self.parameters
        let dy = lossGradient!
        lossGradient = nil
        defer { lossGradient = dy }
        parameters.withUnsafeBufferPointer { p in
            gradients.withUnsafeMutableBufferPointer { g in
                Tensor<Scalar>.zero(g)  // gradients are cleared once per step; layers add into them
                for i in layers.indices.reversed() {
                    let input = i == 0 ? x : layers[i - 1].output
                    let outputGradient = i == layers.count - 1 ? dy : layers[i + 1].inputGradient
                    layers[i].backward(
                        input: input, outputGradient: outputGradient,
                        parameters: UnsafeBufferPointer(rebasing: p[layerRanges[i]]),
                        gradients: UnsafeMutableBufferPointer(rebasing: g[layerRanges[i]]),
                        computeInputGradient: i > 0 || computeInputGradient)
                }
            }
        }
    }

    /// One step of training on one batch: loss and gradients, then the optimizer's update of
    /// the flat parameter buffer.
    ///
    ///     // x: (batch, inputSize)  targets: (batch, outputSize)
    ///
    /// - Returns: the batch's loss before the update.
    /// - Throws: ``NetworkError/shapeMismatch(_:)`` naming both shapes when `x` or `targets` does not fit.
    @discardableResult
    public mutating func trainStep<O: Optimizer>(
        _ x: Tensor<Scalar>, targets: Tensor<Scalar>, optimizer: inout O
    ) throws(NetworkError) -> Scalar where O.Scalar == Scalar {
        let value = try lossAndGradients(x, targets: targets)
        optimizer.update(parameters: &parameters, gradients: gradients)
        return value
    }

    /// The loss's gradient with respect to the network's input, from the last
    /// ``lossAndGradients(_:targets:inputGradient:)`` that asked for it.
    public var inputGradient: Tensor<Scalar> { layers[0].inputGradient }

    // MARK: Checks at the door

    private func checkInput(_ x: Tensor<Scalar>) throws(NetworkError) {
        guard x.rank == 2, x.columns == inputSize, x.rows >= 1 else {
            throw .shapeMismatch("the input batch has shape \(TensorError.format(x.shape)) but \(self) takes (batch ≥ 1, \(inputSize))")
        }
    }

    private func checkTargets(_ t: Tensor<Scalar>, batch: Int) throws(NetworkError) {
        guard t.isMatrix(rows: batch, columns: outputSize) else {
            throw .shapeMismatch("the targets have shape \(TensorError.format(t.shape)) but the outputs have shape \(TensorError.format([batch, outputSize]))")
        }
    }
}

/// What went wrong building or running a network. Every case says what was expected.
public enum NetworkError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A layer that cannot be built as asked.
    case invalidLayer(String, reason: String)
    /// Layer `index`'s outputs differ from layer `index + 1`'s inputs.
    case layersDoNotChain(index: Int, outputs: Int, nextInputs: Int)
    /// A loss that does not fit the output layer.
    case lossMismatch(String)
    /// A batch or target whose shape does not fit the network; the message names both shapes.
    case shapeMismatch(String)
    /// A parameter buffer of the wrong size.
    case parameterCount(expected: Int, actual: Int)

    public var description: String {
        switch self {
        case let .invalidLayer(layer, reason): "\(layer): \(reason)"
        case let .layersDoNotChain(i, outputs, nextInputs):
            "layer \(i) gives \(outputs) outputs but layer \(i + 1) takes \(nextInputs) inputs"
        case let .lossMismatch(message): message
        case let .shapeMismatch(message): message
        case let .parameterCount(expected, actual): "expected \(expected) parameters, got \(actual)"
        }
    }
}
