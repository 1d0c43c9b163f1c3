// The embedding: a table of one learned vector per token. Forward copies each token's row;
// backward adds each position's gradient into the row it was copied from, so a token seen twice
// in a batch gets both. Token indices are not differentiable: there is no input gradient to
// speak of, and zeros stand in for it when one is asked for. Each pass is one kernel call
// (`Kernels/SequenceKernels.swift`).

/// A table of learned vectors, one per token, e.g. `Embedding(27→64)`: each token of a sequence
/// becomes its row of the table.
///
/// It reads a batch of token sequences, `(batch, time)`, the indices stored as scalars (exact
/// below 2^24 in Float), and gives `(batch, time, features)`. Its parameter slice holds the table
/// `weight: (vocabulary, features)` row-major, nn.Embedding's layout and name. As a
/// ``TokenInput`` it is a network's first layer, and the network checks every token at its door.
public struct Embedding<Scalar: TensorScalar>: TokenInput {
    /// The number of distinct tokens: indices run from 0 to `vocabulary - 1`.
    public let vocabulary: Int
    /// The length of each token's vector.
    public let features: Int
    /// Positions per sample: tokens per sequence.
    public let time: Int
    /// The spread of the initial entries: N(0, standardDeviation²).
    public let standardDeviation: Double

    /// What forward computes and backward's own buffer; sized when a batch shape is first seen,
    /// then reused.
    public struct Cache: Sendable {
        /// The rows looked up, `(batch, time, features)`.
        public var output = Tensor<Scalar>(zeros: [0, 0, 0])
        /// Zeros like the input, only when asked for: token indices have no gradient.
        public var inputGradient = Tensor<Scalar>(zeros: [0, 0])
    }

    /// The layer's caches.
    public private(set) var cache = Cache()

    /// An embedding of `vocabulary` tokens in `features` dimensions, for sequences of `time` tokens.
    /// - Parameters:
    ///   - vocabulary: the number of distinct tokens.
    ///   - features: the length of each token's vector.
    ///   - time: tokens per sequence.
    ///   - standardDeviation: the initial entries' spread: 1 as nn.Embedding draws them; 0.02 as
    ///     GPT-2 draws a table that also scores the output (a tied head, whose logits would
    ///     otherwise start at about √features in size).
    /// - Throws: ``NetworkError/invalidLayer(_:reason:)`` unless every size is at least 1, the
    ///   vocabulary is at most 2^24 (the indices Float holds exactly), the table and each
    ///   sample's output can be counted, and the standard deviation is finite and > 0.
    public init(vocabulary: Int, features: Int, time: Int, standardDeviation: Double = 1) throws(NetworkError) {
        let name = "Embedding(\(vocabulary)→\(features))"
        guard vocabulary >= 1, features >= 1, time >= 1 else {
            throw .invalidLayer(name, reason: "vocabulary, features and time must be at least 1, got \(vocabulary), \(features) and \(time)")
        }
        guard vocabulary <= 1 << 24 else {
            throw .invalidLayer(name, reason: "a vocabulary of at most \(1 << 24) tokens (indices Float holds exactly), got \(vocabulary)")
        }
        guard heldCount([vocabulary, features]) != nil, heldCount([time, features]) != nil else {
            throw .invalidLayer(name, reason: "its table or its output per sample has more entries than can be held")
        }
        guard standardDeviation.isFinite, standardDeviation > 0 else {
            throw .invalidLayer(name, reason: "its initial standard deviation must be finite and > 0, got \(standardDeviation)")
        }
        self.vocabulary = vocabulary
        self.features = features
        self.time = time
        self.standardDeviation = standardDeviation
    }

    /// `Embedding(27→64)`: vocabulary → features.
    public var description: String { "Embedding(\(vocabulary)→\(features))" }
    /// It has no units: an explanation names the layers after it.
    public var explainableUnits: ExplainableUnits {
        .none(
            reason:
                "it has no units: it looks up, adds or lays side by side vectors, with no weighted sum and no activation; explain a unit of a dense or RNN layer after it"
        )
    }

    public var inputShape: [Int] { [time] }
    public var outputShape: [Int] { [time, features] }

    public var parameterShapes: [(name: String, shape: [Int])] { [("weight", [vocabulary, features])] }

    public func converted<Other: TensorScalar>(to: Other.Type) -> any Layer<Other> {
        // Sizes and spread were checked when self was built.
        try! Embedding<Other>(vocabulary: vocabulary, features: features, time: time, standardDeviation: standardDeviation)
    }

    public var output: Tensor<Scalar> { cache.output }
    public var inputGradient: Tensor<Scalar> { cache.inputGradient }

    /// Every entry drawn from N(0, standardDeviation²): N(0, 1) by default, as nn.Embedding draws them.
    public func initialize(
        parameters: UnsafeMutableBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        using generator: inout SeededGenerator
    ) {
        for i in 0..<vocabulary * features { parameters[i] = Scalar(standardDeviation * generator.normal()) }
    }

    // MARK: Forward

    /// Looks up every token's row: `y[b, t] = weight[x[b, t]]`.
    public mutating func forward(
        _ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        mode: LayerMode
    ) {
        // x: (batch, time) token indices  weight: (vocabulary, features)  y: (batch, time, features)
        cache.output.resize(batch: x.count / time, time: time, features: features)
        let features = features
        x.withUnsafeBufferPointer { x in
            cache.output.withUnsafeMutableBufferPointer { y in
                Kernels.gatherRows(parameters, columns: features, indices: x, into: y)
            }
        }
    }

    /// Each position's row is its own token's.
    public var runsByPosition: Bool { true }

    /// Looks up position `position`'s row alone: `y[t] = weight[x[t]]`.
    public mutating func forward(
        position t: Int, _ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>
    ) {
        // x: (1, time) token indices, its entry t  weight: (vocabulary, features)  y: (1, time, features), its row t
        let features = features
        x.withUnsafeBufferPointer { x in
            cache.output.withUnsafeMutableBufferPointer { y in
                Kernels.gatherRows(
                    parameters, columns: features, indices: UnsafeBufferPointer(rebasing: x[t..<t + 1]),
                    into: UnsafeMutableBufferPointer(rebasing: y[t * features..<(t + 1) * features]))
            }
        }
    }

    // MARK: Backward

    /// Adds each position's `dy` into the row of its token, `dweight[x[b, t]] += dy[b, t]`, and,
    /// when asked, leaves zeros like `x` as the input gradient.
    public mutating func backward(
        input x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>,
        parameters: UnsafeBufferPointer<Scalar>, gradients: UnsafeMutableBufferPointer<Scalar>,
        computeInputGradient: Bool
    ) {
        // x: (batch, time) token indices  dy: (batch, time, features)  dweight: (vocabulary, features)
        let features = features
        x.withUnsafeBufferPointer { x in
            dy.withUnsafeBufferPointer { dy in
                Kernels.scatterAddRows(dy, columns: features, indices: x, into: gradients)
            }
        }
        guard computeInputGradient else { return }
        // dx: (batch, time) zeros; the loss does not change with a small nudge of a token index
        cache.inputGradient.resize(to: x.shape)
        cache.inputGradient.zero()
    }
}

extension Naive {
    /// The definition of ``Embedding``'s forward pass: every token's row, one entry at a time.
    ///
    ///     // x: (batch, time) token indices  weight: (vocabulary, features)  →  y: (batch, time, features)
    public static func embeddingForward<Scalar>(_ x: Tensor<Scalar>, weight: Tensor<Scalar>) -> Tensor<Scalar> {
        let (batch, time, features) = (x.shape[0], x.count / x.shape[0], weight.columns)
        var y = Tensor<Scalar>(zeros: [batch, time, features])
        for b in 0..<batch {
            for t in 0..<time {
                let token = Int(x[b * time + t])
                for i in 0..<features { y[(b * time + t) * features + i] = weight[token, i] }
            }
        }
        return y
    }

    /// The definition of ``Embedding``'s weight gradient, row by row of the table: row `v` is the
    /// sum of `dy` over every position whose token is `v`.
    ///
    ///     // x: (batch, time) token indices  dy: (batch, time, features)  →  dweight: (vocabulary, features)
    public static func embeddingBackward<Scalar>(_ x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>, vocabulary: Int) -> Tensor<Scalar> {
        let features = dy.shape[dy.rank - 1]
        var dw = Tensor<Scalar>(zeros: [vocabulary, features])
        for v in 0..<vocabulary {
            for position in 0..<x.count where x[position] == Scalar(v) {
                for i in 0..<features { dw[v, i] += dy[position * features + i] }
            }
        }
        return dw
    }
}
