// A chain of layers that is itself one layer: a residual block's body, or any group a model names
// together. Its parameter and state slices are its layers' slices laid end to end, so the network's
// one flat buffer, the optimizers and the gradient checks see nothing new; its tensors are named
// by position (`0.weight`, `1.bias`), as PyTorch's `nn.Sequential` names them.

/// Layers run one after another as one layer, e.g. `Sequential[Dense(8→8, relu), Dense(8→8, identity)]`.
public struct Sequential<Scalar: TensorScalar>: Layer {
    /// The layers, input side first.
    public private(set) var layers: [any Layer<Scalar>]
    /// Each layer's part of this layer's parameter slice, and of its state slice.
    let parameterRanges: [Range<Int>], stateRanges: [Range<Int>]

    /// The layers as one, each built for the shape the one before it gives.
    /// - Throws: ``NetworkError/layersDoNotChain(index:layer:outputShape:next:inputShape:)`` naming
    ///   both layers and shapes; ``NetworkError/invalidLayer(_:reason:)`` for no layers, a
    ///   softmax (which belongs to the network's output layer, fused with its loss), or a layer
    ///   that reads token indices (which belongs first in the network, where they are checked).
    public init(_ layers: [any Layer<Scalar>]) throws(NetworkError) {
        guard !layers.isEmpty else { throw .invalidLayer("Sequential[]", reason: "needs at least one layer") }
        for (i, (a, b)) in zip(layers, layers.dropFirst()).enumerated() where a.outputShape != b.inputShape {
            throw .layersDoNotChain(index: i, layer: a.description, outputShape: a.outputShape, next: b.description, inputShape: b.inputShape)
        }
        if let i = layers.firstIndex(where: { ($0 as? any ActivatedLayer)?.activation == .softmax }) {
            throw .invalidLayer("layer \(i) \(layers[i])", reason: "a softmax belongs to the network's output layer, not inside a container")
        }
        if let i = layers.firstIndex(where: { $0 is any TokenInput }) {
            throw .invalidLayer(
                "layer \(i) \(layers[i])",
                reason: "it reads token indices: it belongs first in the network, which checks them, not inside a container")
        }
        func lay(_ counts: [Int], _ what: String) throws(NetworkError) -> [Range<Int>] {
            var ranges: [Range<Int>] = [], offset = 0
            for count in counts {
                let (end, overflow) = offset.addingReportingOverflow(count)
                guard !overflow else { throw .invalidLayer("Sequential", reason: "its layers have more \(what) than can be counted") }
                ranges.append(offset..<end)
                offset = end
            }
            return ranges
        }
        self.layers = layers
        parameterRanges = try lay(layers.map(\.parameterCount), "parameters")
        stateRanges = try lay(layers.map(\.stateCount), "state")
    }

    public var description: String { "Sequential[" + layers.map(\.description).joined(separator: ", ") + "]" }
    public var inputShape: [Int] { layers[0].inputShape }
    public var outputShape: [Int] { layers[layers.count - 1].outputShape }
    public var parameterShapes: [(name: String, shape: [Int])] {
        layers.enumerated().flatMap { j, layer in layer.parameterShapes.map { ("\(j).\($0.name)", $0.shape) } }
    }
    public var stateShapes: [(name: String, shape: [Int])] {
        layers.enumerated().flatMap { j, layer in layer.stateShapes.map { ("\(j).\($0.name)", $0.shape) } }
    }
    /// The order layer `j`'s tensor has in PyTorch, for the name `j.<tensor>`.
    public func pytorchOrder(of tensor: String) -> [Int]? {
        guard let dot = tensor.firstIndex(of: "."), let j = Int(tensor[..<dot]), layers.indices.contains(j) else { return nil }
        return layers[j].pytorchOrder(of: String(tensor[tensor.index(after: dot)...]))
    }
    /// Whether layer `j` decays its tensor, for the name `j.<tensor>`.
    public func isDecayed(_ tensor: String) -> Bool {
        guard let dot = tensor.firstIndex(of: "."), let j = Int(tensor[..<dot]), layers.indices.contains(j) else { return false }
        return layers[j].isDecayed(String(tensor[tensor.index(after: dot)...]))
    }
    public var output: Tensor<Scalar> { layers[layers.count - 1].output }
    public var inputGradient: Tensor<Scalar> { layers[0].inputGradient }
    /// Every inner layer's output, input gradient and caches.
    public var cacheCount: Int { layers.reduce(0) { $0.adding($1.footprintCount) } }
    /// Its layers, at `0`, `1`, … as their tensors are named.
    public var innerLayers: [(path: String, layer: any Layer<Scalar>)] { layers.enumerated().map { ("\($0)", $1) } }

    public func converted<Other: TensorScalar>(to: Other.Type) -> any Layer<Other> {
        try! Sequential<Other>(layers.map { $0.converted(to: Other.self) })  // the same shapes, checked when self was built
    }

    public func initialize(
        parameters: UnsafeMutableBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        using generator: inout SeededGenerator
    ) {
        for j in layers.indices {
            layers[j].initialize(
                parameters: UnsafeMutableBufferPointer(rebasing: parameters[parameterRanges[j]]),
                state: UnsafeMutableBufferPointer(rebasing: state[stateRanges[j]]), using: &generator)
        }
    }

    /// Each layer its own key, derived from this layer's as the network derives layers' keys from its step.
    public mutating func drawNoise(key: UInt64) {
        for j in layers.indices { layers[j].drawNoise(key: mix64(key &+ UInt64(j + 1) &* 0x9E37_79B9_7F4A_7C15)) }
    }

    // MARK: Forward

    /// Each layer on the one before it's output.
    ///
    ///     // x: (batch, inputShape…)  →  output: (batch, outputShape…)
    public mutating func forward(
        _ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>, mode: LayerMode
    ) {
        for j in layers.indices {
            let input = j == 0 ? x : layers[j - 1].output
            layers[j].forward(
                input, parameters: UnsafeBufferPointer(rebasing: parameters[parameterRanges[j]]),
                state: UnsafeMutableBufferPointer(rebasing: state[stateRanges[j]]), mode: mode)
        }
    }

    /// When every layer runs by position.
    public var runsByPosition: Bool { layers.allSatisfy(\.runsByPosition) }

    /// Each layer at position `position`, on that position of the one before it's output.
    public mutating func forward(
        position t: Int, _ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>
    ) {
        for j in layers.indices {
            let input = j == 0 ? x : layers[j - 1].output
            layers[j].forward(
                position: t, input, parameters: UnsafeBufferPointer(rebasing: parameters[parameterRanges[j]]),
                state: UnsafeMutableBufferPointer(rebasing: state[stateRanges[j]]))
        }
    }

    // MARK: Backward

    /// Each layer from the last, handed the input gradient of the one after it; the first
    /// computes its input gradient only when asked.
    ///
    ///     // x: (batch, inputShape…)  dy: (batch, outputShape…)  →  gradients += …, inputGradient: like x
    public mutating func backward(
        input x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>,
        parameters: UnsafeBufferPointer<Scalar>, gradients: UnsafeMutableBufferPointer<Scalar>, computeInputGradient: Bool
    ) {
        for j in layers.indices.reversed() {
            let input = j == 0 ? x : layers[j - 1].output
            let outputGradient = j == layers.count - 1 ? dy : layers[j + 1].inputGradient
            layers[j].backward(
                input: input, outputGradient: outputGradient, parameters: UnsafeBufferPointer(rebasing: parameters[parameterRanges[j]]),
                gradients: UnsafeMutableBufferPointer(rebasing: gradients[parameterRanges[j]]),
                computeInputGradient: j > 0 || computeInputGradient)
        }
    }
}
