// The learned position embedding (GPT-2's `wpe`): a vector per position added to whatever sits
// there, so that the layers after it can tell positions apart. Forward is a copy and a bias add
// whose "row" is a whole sample, `(time · features)`; backward is the column sums of `dy` over the
// batch, and `dy` itself handed back. Nothing is kept for backward. The table may hold more
// positions than a sample has (nanoGPT's `block_size` rows for shorter batches): a sample of `time`
// positions reads, and trains, only the first `time` rows.

/// A learned vector per position added to a sequence, e.g. `PositionEmbedding(8×64)`:
/// `y[b, t] = x[b, t] + weight[t]`.
///
/// Input and output are `(batch, time, features)`. Its parameter slice holds
/// `weight: (positions, features)` row-major, nn.Embedding(positions, features)'s layout; a
/// sample uses the first `time` rows.
public struct PositionEmbedding<Scalar: TensorScalar>: Layer {
    /// Positions per sample.
    public let time: Int
    /// Features per position.
    public let features: Int
    /// The table's rows, at least `time`: the longest sequence the table could serve.
    public let positions: Int

    /// What forward computes and backward's own buffer; sized when a batch shape is first seen,
    /// then reused.
    public struct Cache: Sendable {
        /// `y = x + weight`, `(batch, time, features)`.
        public var output = Tensor<Scalar>(zeros: [0, 0, 0])
        /// `dx = dy`, like `x`, only when asked for.
        public var inputGradient = Tensor<Scalar>(zeros: [0, 0, 0])
    }

    /// The layer's caches.
    public private(set) var cache = Cache()

    /// A vector of `features` for each of `positions` positions (default `time`), of which a
    /// sample of `time` positions uses the first `time`.
    /// - Throws: ``NetworkError/invalidLayer(_:reason:)`` unless every size is at least 1, the
    ///   table holds at least `time` rows, and it can be counted.
    public init(time: Int, features: Int, positions: Int? = nil) throws(NetworkError) {
        let positions = positions ?? time
        let name = positions == time ? "PositionEmbedding(\(time)×\(features))" : "PositionEmbedding(\(time) of \(positions)×\(features))"
        guard time >= 1, features >= 1 else {
            throw .invalidLayer(name, reason: "time and features must be at least 1, got \(time) and \(features)")
        }
        guard positions >= time else {
            throw .invalidLayer(name, reason: "a table of \(positions) positions cannot serve samples of \(time) positions")
        }
        guard heldCount([positions, features]) != nil else {
            throw .invalidLayer(name, reason: "\(positions) × \(features) entries are more than can be held")
        }
        self.time = time
        self.features = features
        self.positions = positions
    }

    /// `PositionEmbedding(8×64)`: time × features; `PositionEmbedding(8 of 16×64)` when the
    /// table holds more positions than a sample.
    public var description: String {
        positions == time ? "PositionEmbedding(\(time)×\(features))" : "PositionEmbedding(\(time) of \(positions)×\(features))"
    }
    /// It has no units: an explanation names the layers after it.
    public var explainableUnits: ExplainableUnits {
        .none(
            reason:
                "it has no units: it looks up, adds or lays side by side vectors, with no weighted sum and no activation; explain a unit of a dense or RNN layer after it"
        )
    }

    public var inputShape: [Int] { [time, features] }
    public var outputShape: [Int] { [time, features] }

    public var parameterShapes: [(name: String, shape: [Int])] { [("weight", [positions, features])] }

    public func converted<Other: TensorScalar>(to: Other.Type) -> any Layer<Other> {
        try! PositionEmbedding<Other>(time: time, features: features, positions: positions)  // sizes were checked when self was built
    }

    public var output: Tensor<Scalar> { cache.output }
    public var inputGradient: Tensor<Scalar> { cache.inputGradient }

    /// Every entry drawn from N(0, 0.02²), GPT-2's initialisation of its position embedding: next
    /// to the N(0, 1) rows of an ``Embedding`` the positions start all but neutral, and a step's
    /// gradient (the sum over the batch) moves them from there.
    public func initialize(
        parameters: UnsafeMutableBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        using generator: inout SeededGenerator
    ) {
        for i in 0..<positions * features { parameters[i] = Scalar(0.02 * generator.normal()) }
    }

    // MARK: Forward

    /// Adds each position's vector: `y[b, t] = x[b, t] + weight[t]`.
    public mutating func forward(
        _ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        mode: LayerMode
    ) {
        // x, y: (batch, time, features)  weight: (positions, features), its first time rows one row of time · features per sample
        cache.output.resize(batch: x.count / (time * features), time: time, features: features)
        let used = UnsafeBufferPointer(rebasing: parameters[0..<time * features])
        x.withUnsafeBufferPointer { x in
            cache.output.withUnsafeMutableBufferPointer { y in
                _ = y.update(fromContentsOf: x)
                // y += weight[0..<time], every sample a row
                Kernels.addBias(used, to: y)
            }
        }
    }

    /// Each position adds its own row.
    public var runsByPosition: Bool { true }

    /// Adds position `position`'s vector alone: `y[t] = x[t] + weight[t]`.
    public mutating func forward(
        position t: Int, _ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>
    ) {
        // x, y: (1, time, features), their row t  weight: (positions, features), its row t
        let row = t * features..<(t + 1) * features
        x.withUnsafeBufferPointer { x in
            cache.output.withUnsafeMutableBufferPointer { y in
                Kernels.add(
                    UnsafeBufferPointer(rebasing: x[row]), UnsafeBufferPointer(rebasing: parameters[row]),
                    into: UnsafeMutableBufferPointer(rebasing: y[row]))
            }
        }
    }

    // MARK: Backward

    /// Adds `dweight += Σ_b dy[b]` into `gradients` and, when asked, hands `dy` back as `dx`.
    public mutating func backward(
        input x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>,
        parameters: UnsafeBufferPointer<Scalar>, gradients: UnsafeMutableBufferPointer<Scalar>,
        computeInputGradient: Bool
    ) {
        // x, dx, dy: (batch, time, features)  dweight: (positions, features), of which the first time rows take gradient
        let used = UnsafeMutableBufferPointer(rebasing: gradients[0..<time * features])
        dy.withUnsafeBufferPointer { dy in
            // dweight[0..<time] += Σ over the batch of dy (each sample a row of time · features)
            Kernels.addColumnSums(dy, to: used)
        }
        guard computeInputGradient else { return }
        // dx = dy, into a buffer of this layer's own: holding dy's would make its owner copy it when it next writes
        cache.inputGradient.resize(to: x.shape)
        dy.withUnsafeBufferPointer { dy in
            cache.inputGradient.withUnsafeMutableBufferPointer { dx in _ = dx.update(fromContentsOf: dy) }
        }
    }
}

extension Naive {
    /// The definition of ``PositionEmbedding``'s forward pass, one entry at a time.
    ///
    ///     // x: (batch, time, features)  weight: (positions ≥ time, features)  →  y: (batch, time, features)
    public static func positionEmbeddingForward<Scalar>(_ x: Tensor<Scalar>, weight: Tensor<Scalar>) -> Tensor<Scalar> {
        let (time, features) = (x.shape[1], weight.columns)
        let batch = x.count / (time * features)
        var y = Tensor<Scalar>(zeros: [batch, time, features])
        for b in 0..<batch {
            for t in 0..<time {
                for i in 0..<features {
                    let at = (b * time + t) * features + i
                    y[at] = x[at] + weight[t, i]
                }
            }
        }
        return y
    }

    /// The definition of ``PositionEmbedding``'s weight gradient, entry by entry: the sum of `dy`
    /// over the batch at that position and feature, 0 in the rows past `time`. (Its input gradient
    /// is `dy` itself.)
    ///
    ///     // dy: (batch, time, features)  →  dweight: (positions, features)
    public static func positionEmbeddingBackward<Scalar>(
        outputGradient dy: Tensor<Scalar>, time: Int, features: Int, positions: Int? = nil
    ) -> Tensor<Scalar> {
        var dw = Tensor<Scalar>(zeros: [positions ?? time, features])
        for t in 0..<time {
            for i in 0..<features {
                var sum: Scalar = 0
                for b in 0..<dy.count / (time * features) { sum += dy[(b * time + t) * features + i] }
                dw[t, i] = sum
            }
        }
        return dw
    }
}
