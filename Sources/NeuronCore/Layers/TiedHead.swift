// The tied output head: the scores of every token at every position from the token embedding's
// own table, `logits = x·Eᵀ`, with no bias (nanoGPT's `lm_head.weight = wte.weight`). It owns no
// parameters: the network hands it the embedding's slice (``ParameterSharing``), so the table is
// stored, trained and checkpointed once, and its gradient gathers the embedding's scatter and this
// layer's product. Forward is one BLAS product, backward two.

/// An output layer whose weight is the token embedding's table, e.g. `TiedHead(64→27, tied to
/// layer 0)`: `y[b, t] = E·x[b, t]`, a score per token of the vocabulary.
///
/// Input `(batch, time, features)`, output `(batch, time, vocabulary)`. It reads layer
/// ``sharedLayer``'s `weight: (vocabulary, features)` (an ``Embedding``'s), and holds no
/// parameter of its own. A PyTorch module ties it after loading the checkpoint:
/// `model.lm_head.weight = model.wte.weight`.
public struct TiedHead<Scalar: TensorScalar>: ParameterSharing {
    /// Positions per sample.
    public let time: Int
    /// Features per position going in: the embedding's vector length.
    public let features: Int
    /// Scores per position coming out: the embedding's rows.
    public let vocabulary: Int
    /// The index in the network of the embedding whose table this layer reads.
    public let sharedLayer: Int

    /// What forward computes and backward's own buffer; sized when a batch shape is first seen,
    /// then reused.
    public struct Cache: Sendable {
        /// `y = x·Eᵀ`, `(batch, time, vocabulary)`.
        public var output = Tensor<Scalar>(zeros: [0, 0, 0])
        /// `dx = dy·E`, `(batch, time, features)`, only when asked for.
        public var inputGradient = Tensor<Scalar>(zeros: [0, 0, 0])
    }

    /// The layer's caches.
    public private(set) var cache = Cache()

    /// A head over sequences of `time` positions of `features`, scoring `vocabulary` tokens with
    /// the table of the layer at index `embedding` (the network's first, by default).
    /// - Throws: ``NetworkError/invalidLayer(_:reason:)`` unless every size is at least 1, the
    ///   index is not negative, and a sample's output can be held.
    public init(time: Int, features: Int, vocabulary: Int, embedding: Int = 0) throws(NetworkError) {
        let name = "TiedHead(\(features)→\(vocabulary), tied to layer \(embedding))"
        guard time >= 1, features >= 1, vocabulary >= 1 else {
            throw .invalidLayer(name, reason: "time, features and vocabulary must be at least 1, got \(time), \(features) and \(vocabulary)")
        }
        guard embedding >= 0 else { throw .invalidLayer(name, reason: "the embedding's index must be 0 or more, got \(embedding)") }
        guard heldCount([time, max(features, vocabulary)]) != nil, heldCount([vocabulary, features]) != nil else {
            throw .invalidLayer(name, reason: "its output per sample or the table it reads has more entries than can be held")
        }
        (self.time, self.features, self.vocabulary, self.sharedLayer) = (time, features, vocabulary, embedding)
    }

    /// `TiedHead(64→27, tied to layer 0)`: features → vocabulary.
    public var description: String { "TiedHead(\(features)→\(vocabulary), tied to layer \(sharedLayer))" }

    public var inputShape: [Int] { [time, features] }
    public var outputShape: [Int] { [time, vocabulary] }
    public var parameterShapes: [(name: String, shape: [Int])] { [] }
    public var sharedShapes: [(name: String, shape: [Int])] { [("weight", [vocabulary, features])] }

    public func converted<Other: TensorScalar>(to: Other.Type) -> any Layer<Other> {
        try! TiedHead<Other>(time: time, features: features, vocabulary: vocabulary, embedding: sharedLayer)  // checked when self was built
    }

    public var output: Tensor<Scalar> { cache.output }
    public var inputGradient: Tensor<Scalar> { cache.inputGradient }

    /// Nothing: the table is the embedding's, drawn when the embedding is.
    public func initialize(
        parameters: UnsafeMutableBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        using generator: inout SeededGenerator
    ) {}

    // MARK: Forward

    /// Scores every token at every position: `y = x·Eᵀ`.
    public mutating func forward(
        _ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        mode: LayerMode
    ) {
        // x: (batch·time, features)  E: (vocabulary, features)  y: (batch·time, vocabulary)
        let rows = x.count / features, (features, vocabulary) = (features, vocabulary)
        cache.output.resize(batch: rows / time, time: time, features: vocabulary)
        x.withUnsafeBufferPointer { x in
            cache.output.withUnsafeMutableBufferPointer { y in
                // y = x·Eᵀ
                Scalar.blasGemm(
                    transposeA: false, transposeB: true, m: rows, n: vocabulary, k: features,
                    alpha: 1, a: x.baseAddress!, lda: features, b: parameters.baseAddress!, ldb: features,
                    beta: 0, c: y.baseAddress!, ldc: vocabulary)
            }
        }
    }

    /// Each position is scored from its own features.
    public var runsByPosition: Bool { true }

    /// Scores position `position` alone: `y_t = E·x_t`.
    public mutating func forward(
        position t: Int, _ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>
    ) {
        // x_t: (features)  E: (vocabulary, features)  y_t: (vocabulary)
        let (features, vocabulary) = (features, vocabulary)
        x.withUnsafeBufferPointer { x in
            cache.output.withUnsafeMutableBufferPointer { y in
                // y_t = E·x_t
                Scalar.blasGemv(
                    transpose: false, m: vocabulary, n: features, alpha: 1, a: parameters.baseAddress!, lda: features,
                    x: x.baseAddress! + t * features, beta: 0, y: y.baseAddress! + t * vocabulary)
            }
        }
    }

    // MARK: Backward

    /// Adds `dE += dyᵀ·x` into the embedding's gradient and, when asked, computes `dx = dy·E`.
    public mutating func backward(
        input x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>,
        parameters: UnsafeBufferPointer<Scalar>, gradients: UnsafeMutableBufferPointer<Scalar>,
        computeInputGradient: Bool
    ) {
        // x, dx: (batch·time, features)  dy: (batch·time, vocabulary)  E, dE: (vocabulary, features)
        let rows = x.count / features, (features, vocabulary) = (features, vocabulary)
        x.withUnsafeBufferPointer { x in
            dy.withUnsafeBufferPointer { dy in
                // dE += dyᵀ·x  (beta 1: the embedding's scatter adds into the same gradient)
                Scalar.blasGemm(
                    transposeA: true, transposeB: false, m: vocabulary, n: features, k: rows,
                    alpha: 1, a: dy.baseAddress!, lda: vocabulary, b: x.baseAddress!, ldb: features,
                    beta: 1, c: gradients.baseAddress!, ldc: features)
            }
        }
        guard computeInputGradient else { return }
        cache.inputGradient.resize(to: x.shape)
        dy.withUnsafeBufferPointer { dy in
            cache.inputGradient.withUnsafeMutableBufferPointer { dx in
                // dx = dy·E
                Scalar.blasGemm(
                    transposeA: false, transposeB: false, m: rows, n: features, k: vocabulary,
                    alpha: 1, a: dy.baseAddress!, lda: vocabulary, b: parameters.baseAddress!, ldb: features,
                    beta: 0, c: dx.baseAddress!, ldc: features)
            }
        }
    }
}

extension Naive {
    /// The definition of ``TiedHead``'s forward pass, one score at a time: `y[r, v] = Σ_i x[r, i]·E[v, i]`.
    ///
    ///     // x: (batch, time, features)  E: (vocabulary, features)  →  y: (batch, time, vocabulary)
    public static func tiedHeadForward<Scalar>(_ x: Tensor<Scalar>, table e: Tensor<Scalar>) -> Tensor<Scalar> {
        let (vocabulary, features) = (e.rows, e.columns), rows = x.count / features
        var y = Tensor<Scalar>(zeros: [x.shape[0], rows / x.shape[0], vocabulary])
        for r in 0..<rows {
            for v in 0..<vocabulary {
                var sum: Scalar = 0
                for i in 0..<features { sum += x[r * features + i] * e[v, i] }
                y[r * vocabulary + v] = sum
            }
        }
        return y
    }

    /// The definition of ``TiedHead``'s backward pass: `dE[v, i] = Σ_r dy[r, v]·x[r, i]` (this
    /// layer's share of the table's gradient) and `dx[r, i] = Σ_v dy[r, v]·E[v, i]`.
    ///
    ///     // x: (batch, time, features)  dy: (batch, time, vocabulary)  E: (vocabulary, features)  →  dE like E, dx like x
    public static func tiedHeadBackward<Scalar>(
        _ x: Tensor<Scalar>, table e: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>
    ) -> (table: Tensor<Scalar>, input: Tensor<Scalar>) {
        let (vocabulary, features) = (e.rows, e.columns), rows = x.count / features
        var de = Tensor<Scalar>(zeros: e.shape), dx = Tensor<Scalar>(zeros: x.shape)
        for r in 0..<rows {
            for v in 0..<vocabulary {
                for i in 0..<features {
                    de[v, i] += dy[r * vocabulary + v] * x[r * features + i]
                    dx[r * features + i] += dy[r * vocabulary + v] * e[v, i]
                }
            }
        }
        return (de, dx)
    }
}
