// The dense layer: one matrix product plus a bias, then the activation; backward is two more
// products and a column sum. The whole batch goes through BLAS; no per-sample loop.

/// A fully connected layer `y = f(x·w + b)`, e.g. `Dense(784→256, tanh)`.
///
/// Its parameter slice holds the weight `w: (inputs, outputs)` row-major, then the bias `b: (outputs)`.
public struct Dense<Scalar: TensorScalar>: Layer {
    public let inputSize: Int
    public let outputSize: Int
    public let activation: Activation

    /// What forward keeps for backward, and backward's own buffers; sized when a batch shape is
    /// first seen, then reused (``Tensor/resize(to:)`` keeps capacity).
    public struct Cache: Sendable {
        /// `y = f(x·w + b)`: tanh, sigmoid and relu differentiate from it alone.
        public var output = Tensor<Scalar>(zeros: [0, 0])
        /// `x·w + b` before a softmax, for the fused cross-entropy's log-sum-exp.
        public var logits = Tensor<Scalar>(zeros: [0, 0])
        /// `dz = dy ⊙ f'(z)`.
        public var preActivationGradient = Tensor<Scalar>(zeros: [0, 0])
        /// `dx = dz·wᵀ`, only when asked for.
        public var inputGradient = Tensor<Scalar>(zeros: [0, 0])
    }

    /// The layer's caches.
    public private(set) var cache = Cache()

    /// A dense layer from `inputs` to `outputs` features.
    /// - Throws: ``NetworkError/invalidLayer(_:reason:)`` unless both sizes are at least 1.
    public init(_ inputs: Int, _ outputs: Int, activation: Activation = .tanh) throws(NetworkError) {
        guard inputs >= 1, outputs >= 1 else {
            throw .invalidLayer("Dense(\(inputs)→\(outputs))", reason: "inputs and outputs must be at least 1")
        }
        inputSize = inputs
        outputSize = outputs
        self.activation = activation
    }

    public var description: String { "Dense(\(inputSize)→\(outputSize), \(activation))" }

    public var parameterShapes: [(name: String, shape: [Int])] {
        [("weight", [inputSize, outputSize]), ("bias", [outputSize])]
    }

    public func converted<Other: TensorScalar>(to: Other.Type) -> any Layer<Other> {
        try! Dense<Other>(inputSize, outputSize, activation: activation)  // sizes were checked when self was built
    }

    public var output: Tensor<Scalar> { cache.output }
    public var logits: Tensor<Scalar>? { activation == .softmax ? cache.logits : nil }
    public var inputGradient: Tensor<Scalar> { cache.inputGradient }

    /// Glorot/Xavier uniform, `U(±√(6 / (in + out)))`, for tanh, sigmoid, identity and softmax;
    /// He uniform, `U(±√(6 / in))`, for relu (its half-zero output halves the variance); zero biases.
    public func initialize(_ parameters: UnsafeMutableBufferPointer<Scalar>, using generator: inout SeededGenerator) {
        let fanIn = Double(inputSize), fanOut = Double(outputSize)
        let limit = activation == .relu ? (6 / fanIn).squareRoot() : (6 / (fanIn + fanOut)).squareRoot()
        let weights = inputSize * outputSize
        for i in 0..<weights { parameters[i] = Scalar(generator.uniform(-limit, limit)) }
        for i in weights ..< weights + outputSize { parameters[i] = 0 }
    }

    // MARK: Forward

    @_specialize(exported: true, where Scalar == Float)
    @_specialize(exported: true, where Scalar == Double)
    @_specialize(where Scalar == Float)
    @_specialize(where Scalar == Double)
    public mutating func forward(_ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>) {
        // x: (batch, inputs)  w: (inputs, outputs)  b: (outputs)  y: (batch, outputs)
        let batch = x.rows, inputs = inputSize, outputs = outputSize
        cache.output.resize(rows: batch, columns: outputs)
        x.withUnsafeBufferPointer { px in
            cache.output.withUnsafeMutableBufferPointer { py in
                let w = parameters.baseAddress!, b = w + inputs * outputs
                Scalar.blasGemm(
                    transposeA: false, transposeB: false, m: batch, n: outputs, k: inputs,
                    alpha: 1, a: px.baseAddress!, lda: inputs, b: w, ldb: outputs,
                    beta: 0, c: py.baseAddress!, ldc: outputs)
                var row = 0
                while row < py.count {
                    for j in 0..<outputs { py[row + j] += b[j] }
                    row += outputs
                }
            }
        }
        if activation == .softmax {
            cache.logits.resize(rows: batch, columns: outputs)
            cache.logits.withUnsafeMutableBufferPointer { pz in
                cache.output.withUnsafeBufferPointer { py in _ = pz.update(fromContentsOf: py) }
            }
        }
        activation.apply(to: &cache.output)
    }

    // MARK: Backward

    @_specialize(exported: true, where Scalar == Float)
    @_specialize(exported: true, where Scalar == Double)
    @_specialize(where Scalar == Float)
    @_specialize(where Scalar == Double)
    public mutating func backward(
        input x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>,
        parameters: UnsafeBufferPointer<Scalar>, gradients: UnsafeMutableBufferPointer<Scalar>,
        computeInputGradient: Bool
    ) {
        // x: (batch, inputs)  dy, dz: (batch, outputs)  dw: (inputs, outputs)  db: (outputs)  dx: (batch, inputs)
        let batch = x.rows, inputs = inputSize, outputs = outputSize
        cache.preActivationGradient.resize(rows: batch, columns: outputs)
        activation.backward(output: cache.output, gradient: dy, into: &cache.preActivationGradient)
        x.withUnsafeBufferPointer { px in
            cache.preActivationGradient.withUnsafeBufferPointer { pdz in
                let dw = gradients.baseAddress!, db = dw + inputs * outputs
                // dw += xᵀ·dz  (beta 1: backward adds into the gradient buffer)
                Scalar.blasGemm(
                    transposeA: true, transposeB: false, m: inputs, n: outputs, k: batch,
                    alpha: 1, a: px.baseAddress!, lda: inputs, b: pdz.baseAddress!, ldb: outputs,
                    beta: 1, c: dw, ldc: outputs)
                // db += Σ over the batch of dz
                var row = 0
                while row < pdz.count {
                    for j in 0..<outputs { db[j] += pdz[row + j] }
                    row += outputs
                }
            }
        }
        guard computeInputGradient else { return }
        cache.inputGradient.resize(rows: batch, columns: inputs)
        cache.preActivationGradient.withUnsafeBufferPointer { pdz in
            cache.inputGradient.withUnsafeMutableBufferPointer { pdx in
                // dx = dz·wᵀ
                Scalar.blasGemm(
                    transposeA: false, transposeB: true, m: batch, n: inputs, k: outputs,
                    alpha: 1, a: pdz.baseAddress!, lda: outputs, b: parameters.baseAddress!, ldb: outputs,
                    beta: 0, c: pdx.baseAddress!, ldc: inputs)
            }
        }
    }
}

extension Naive {
    /// The definition of ``Dense``'s forward pass, one sample and one output at a time.
    ///
    ///     // x: (batch, inputs)  w: (inputs, outputs)  b: (outputs)  →  y: (batch, outputs)
    @_specialize(exported: true, where Scalar == Float)
    @_specialize(exported: true, where Scalar == Double)
    @_specialize(where Scalar == Float)
    @_specialize(where Scalar == Double)
    public static func denseForward<Scalar>(
        _ x: Tensor<Scalar>, weight w: Tensor<Scalar>, bias b: Tensor<Scalar>, activation: Activation
    ) -> Tensor<Scalar> {
        var y = Tensor<Scalar>(zeros: [x.rows, w.columns])
        for n in 0..<x.rows {
            for j in 0..<w.columns {
                var z: Scalar = 0
                for i in 0..<w.rows { z += x[n, i] * w[i, j] }
                y[n, j] = z + b[j]
            }
        }
        activation.apply(to: &y)
        return y
    }

    /// The definition of ``Dense``'s backward pass: `dz = dy ⊙ f'(z)`, `dw = xᵀ·dz`, `db = Σ dz`, `dx = dz·wᵀ`.
    @_specialize(exported: true, where Scalar == Float)
    @_specialize(exported: true, where Scalar == Double)
    @_specialize(where Scalar == Float)
    @_specialize(where Scalar == Double)
    public static func denseBackward<Scalar>(
        _ x: Tensor<Scalar>, weight w: Tensor<Scalar>, output y: Tensor<Scalar>,
        outputGradient dy: Tensor<Scalar>, activation: Activation
    ) -> (weight: Tensor<Scalar>, bias: Tensor<Scalar>, input: Tensor<Scalar>) {
        var dz = Tensor<Scalar>(zeros: dy.shape)
        activation.backward(output: y, gradient: dy, into: &dz)
        var dw = Tensor<Scalar>(zeros: w.shape), db = Tensor<Scalar>(zeros: [w.columns]), dx = Tensor<Scalar>(zeros: x.shape)
        for n in 0..<x.rows {
            for j in 0..<w.columns {
                db[j] += dz[n, j]
                for i in 0..<w.rows {
                    dw[i, j] += x[n, i] * dz[n, j]
                    dx[n, i] += dz[n, j] * w[i, j]
                }
            }
        }
        return (dw, db, dx)
    }
}
