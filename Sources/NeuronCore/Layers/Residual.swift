// The residual block of He et al. (2016): a body whose output is added to its input, so that the
// gradient reaches the layers before it through the identity as well as through the body. The
// body is a `Sequential`, and its tensors are named `body.0.weight`, …, as a PyTorch module with
// `self.body = nn.Sequential(...)` names them.

/// `y = x + f(x)` with `f` a chain of layers that gives back its input's shape, e.g.
/// `Residual[Dense(16→16, relu), Dense(16→16, identity)]`.
public struct Residual<Scalar: TensorScalar>: Layer {
    /// `f`, the chain whose output is added to the input.
    public private(set) var body: Sequential<Scalar>
    /// The extent of the input's last dimension: a position's features, over a sequence.
    let positionWidth: Int

    /// What forward computes and backward's own buffer; sized when a batch shape is first seen.
    public struct Cache: Sendable {
        /// `y = x + f(x)`, like `x`.
        public var output = Tensor<Scalar>(zeros: [0, 0])
        /// `dx = dy + f'(x)ᵀ·dy`, like `x`, only when asked for.
        public var inputGradient = Tensor<Scalar>(zeros: [0, 0])
    }

    /// The layer's caches.
    public private(set) var cache = Cache()

    /// A residual block around `body`.
    /// - Throws: ``NetworkError`` as ``Sequential/init(_:)``, and
    ///   ``NetworkError/invalidLayer(_:reason:)`` when the body's output shape is not its input shape.
    public init(_ body: [any Layer<Scalar>]) throws(NetworkError) {
        let chain = try Sequential(body)
        guard chain.outputShape == chain.inputShape else {
            throw .invalidLayer(
                "Residual" + chain.description.dropFirst("Sequential".count),
                reason: "its body takes \(TensorError.format(chain.inputShape)) but gives \(TensorError.format(chain.outputShape)); "
                    + "the two must match to be added")
        }
        self.body = chain
        positionWidth = chain.inputShape[chain.inputShape.count - 1]
    }

    public var description: String { "Residual[" + body.layers.map(\.description).joined(separator: ", ") + "]" }
    public var inputShape: [Int] { body.inputShape }
    public var outputShape: [Int] { body.outputShape }
    public var parameterShapes: [(name: String, shape: [Int])] { body.parameterShapes.map { ("body.\($0.name)", $0.shape) } }
    public var stateShapes: [(name: String, shape: [Int])] { body.stateShapes.map { ("body.\($0.name)", $0.shape) } }
    public func pytorchOrder(of tensor: String) -> [Int]? {
        tensor.hasPrefix("body.") ? body.pytorchOrder(of: String(tensor.dropFirst("body.".count))) : nil
    }
    public func isDecayed(_ tensor: String) -> Bool {
        tensor.hasPrefix("body.") && body.isDecayed(String(tensor.dropFirst("body.".count)))
    }
    public var output: Tensor<Scalar> { cache.output }
    public var inputGradient: Tensor<Scalar> { cache.inputGradient }
    /// The body's layers with all they hold.
    public var cacheCount: Int { body.cacheCount }
    /// The body's layers, at `body.0`, `body.1`, … as their tensors are named.
    public var innerLayers: [(path: String, layer: any Layer<Scalar>)] { body.layers.enumerated().map { ("body.\($0)", $1) } }

    public func converted<Other: TensorScalar>(to: Other.Type) -> any Layer<Other> {
        try! Residual<Other>(body.layers.map { $0.converted(to: Other.self) })  // the same shapes, checked when self was built
    }

    public func initialize(
        parameters: UnsafeMutableBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        using generator: inout SeededGenerator
    ) {
        body.initialize(parameters: parameters, state: state, using: &generator)
    }

    public mutating func drawNoise(key: UInt64) { body.drawNoise(key: key) }

    // MARK: Forward

    /// The body, then its output added to the input.
    ///
    ///     // x, f(x), y: (batch, shape…)  y = x + f(x)
    public mutating func forward(
        _ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>, mode: LayerMode
    ) {
        body.forward(x, parameters: parameters, state: state, mode: mode)
        cache.output.resize(to: x.shape)
        Self.add(x, body.output, into: &cache.output)
    }

    /// When every layer of the body runs by position.
    public var runsByPosition: Bool { body.runsByPosition }

    /// The body at position `position`, then that row of its output added to the input's.
    ///
    ///     // x, f(x), y: (1, shape…), their position t  y_t = x_t + f(x)_t
    public mutating func forward(
        position t: Int, _ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>
    ) {
        body.forward(position: t, x, parameters: parameters, state: state)
        let row = t * positionWidth..<(t + 1) * positionWidth
        x.withUnsafeBufferPointer { x in
            body.output.withUnsafeBufferPointer { fx in
                cache.output.withUnsafeMutableBufferPointer { y in
                    Kernels.add(
                        UnsafeBufferPointer(rebasing: x[row]), UnsafeBufferPointer(rebasing: fx[row]),
                        into: UnsafeMutableBufferPointer(rebasing: y[row]))
                }
            }
        }
    }

    // MARK: Backward

    /// The body's backward with `dy`, then `dx = dy + (the body's input gradient)` when asked.
    ///
    ///     // x, dy, dx: (batch, shape…)
    public mutating func backward(
        input x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>,
        parameters: UnsafeBufferPointer<Scalar>, gradients: UnsafeMutableBufferPointer<Scalar>, computeInputGradient: Bool
    ) {
        body.backward(input: x, outputGradient: dy, parameters: parameters, gradients: gradients, computeInputGradient: computeInputGradient)
        guard computeInputGradient else { return }
        cache.inputGradient.resize(to: x.shape)
        Self.add(dy, body.inputGradient, into: &cache.inputGradient)
    }

    /// `sum = a + b`, element by element (all of one count).
    static func add(_ a: Tensor<Scalar>, _ b: Tensor<Scalar>, into sum: inout Tensor<Scalar>) {
        a.withUnsafeBufferPointer { a in
            b.withUnsafeBufferPointer { b in
                sum.withUnsafeMutableBufferPointer { s in
                    Kernels.add(a, b, into: s)
                }
            }
        }
    }
}
