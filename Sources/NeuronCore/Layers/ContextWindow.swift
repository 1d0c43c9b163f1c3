// The context window of Bengio et al. (2003), "A Neural Probabilistic Language Model": the input
// at each position is the vectors of the last `size` positions laid end to end, oldest first, with
// zero vectors standing in before the first position. A dense layer after it sees `size` tokens of
// context at every position. Forward copies slices; backward adds each slice of `dy` back into the
// position it was copied from. No parameters, nothing kept for backward.

/// The last `size` positions' vectors side by side at every position, oldest first, zeros before
/// position 0, e.g. `ContextWindow(3×64→192)`:
/// `y[b, t] = concat(x[b, t - size + 1], …, x[b, t])`.
///
/// Input `(batch, time, features)`, output `(batch, time, size · features)`.
public struct ContextWindow<Scalar: TensorScalar>: Layer {
    /// Positions per sample.
    public let time: Int
    /// Features per position going in.
    public let features: Int
    /// Positions in each window, the current one included.
    public let size: Int

    /// What forward computes and backward's own buffer; sized when a batch shape is first seen,
    /// then reused.
    public struct Cache: Sendable {
        /// The windows, `(batch, time, size · features)`.
        public var output = Tensor<Scalar>(zeros: [0, 0, 0])
        /// `dx`, like `x`, only when asked for.
        public var inputGradient = Tensor<Scalar>(zeros: [0, 0, 0])
    }

    /// The layer's caches.
    public private(set) var cache = Cache()

    /// Windows of `size` positions over sequences of `time` positions of `features` each.
    /// - Parameters:
    ///   - time: positions per sample.
    ///   - features: features per position going in.
    ///   - size: positions per window, the current one included (Bengio et al.'s n - 1); it may
    ///     exceed `time`, the earliest slices then always zero.
    /// - Throws: ``NetworkError/invalidLayer(_:reason:)`` unless every size is at least 1 and a
    ///   sample's output can be counted.
    public init(time: Int, features: Int, size: Int) throws(NetworkError) {
        let name = "ContextWindow(\(size)×\(features))"
        guard time >= 1, features >= 1, size >= 1 else {
            throw .invalidLayer(name, reason: "time, features and size must be at least 1, got \(time), \(features) and \(size)")
        }
        guard heldCount([time, size, features]) != nil else {
            throw .invalidLayer(name, reason: "\(time) × \(size) × \(features) outputs per sample are more than can be held")
        }
        self.time = time
        self.features = features
        self.size = size
    }

    /// `ContextWindow(3×64→192)`: size × features → the window's width.
    public var description: String { "ContextWindow(\(size)×\(features)→\(size * features))" }
    /// It has no units: an explanation names the layers after it.
    public var explainableUnits: ExplainableUnits {
        .none(
            reason:
                "it has no units: it looks up, adds or lays side by side vectors, with no weighted sum and no activation; explain a unit of a dense or RNN layer after it"
        )
    }

    public var inputShape: [Int] { [time, features] }
    public var outputShape: [Int] { [time, size * features] }
    public var parameterShapes: [(name: String, shape: [Int])] { [] }

    public func converted<Other: TensorScalar>(to: Other.Type) -> any Layer<Other> {
        try! ContextWindow<Other>(time: time, features: features, size: size)  // sizes were checked when self was built
    }

    public var output: Tensor<Scalar> { cache.output }
    public var inputGradient: Tensor<Scalar> { cache.inputGradient }

    /// Nothing to initialize: the layer has no parameters.
    public func initialize(
        parameters: UnsafeMutableBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        using generator: inout SeededGenerator
    ) {}

    // MARK: Forward

    /// Lays each position's window out: `y[b, t] = concat(x[b, t - size + 1], …, x[b, t])`.
    public mutating func forward(
        _ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        mode: LayerMode
    ) {
        // x: (batch, time, features)  y: (batch, time, size · features)
        let (time, features, size) = (time, features, size)
        cache.output.resize(batch: x.count / (time * features), time: time, features: size * features)
        x.withUnsafeBufferPointer { x in
            cache.output.withUnsafeMutableBufferPointer { y in
                Kernels.contextWindowForward(x, time: time, features: features, size: size, into: y)
            }
        }
    }

    // MARK: Backward

    /// When asked, sums every slice of `dy` back into the position it came from:
    /// `dx[b, s] = Σ_j dy[b, s + size - 1 - j, slice j]`. No parameters, so nothing else.
    public mutating func backward(
        input x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>,
        parameters: UnsafeBufferPointer<Scalar>, gradients: UnsafeMutableBufferPointer<Scalar>,
        computeInputGradient: Bool
    ) {
        // dy: (batch, time, size · features)  dx: (batch, time, features), like x
        guard computeInputGradient else { return }
        let (time, features, size) = (time, features, size)
        cache.inputGradient.resize(to: x.shape)
        dy.withUnsafeBufferPointer { dy in
            cache.inputGradient.withUnsafeMutableBufferPointer { dx in
                Kernels.contextWindowBackward(dy, time: time, features: features, size: size, into: dx)
            }
        }
    }
}

extension Naive {
    /// The definition of ``ContextWindow``'s forward pass, one output entry at a time: entry `i`
    /// of slice `j` at position `t` is entry `i` of position `t - size + 1 + j`, or 0 before position 0.
    ///
    ///     // x: (batch, time, features)  →  y: (batch, time, size · features)
    public static func contextWindowForward<Scalar>(_ x: Tensor<Scalar>, time: Int, features: Int, size: Int) -> Tensor<Scalar> {
        let batch = x.count / (time * features)
        var y = Tensor<Scalar>(zeros: [batch, time, size * features])
        for b in 0..<batch {
            for t in 0..<time {
                for j in 0..<size {
                    let source = t - size + 1 + j
                    for i in 0..<features {
                        y[(b * time + t) * size * features + j * features + i] = source < 0 ? 0 : x[(b * time + source) * features + i]
                    }
                }
            }
        }
        return y
    }

    /// The definition of ``ContextWindow``'s input gradient, one input entry at a time: position
    /// `s` appears as slice `j = s - t + size - 1` of every position `t` from `s` to
    /// `s + size - 1` (within the sequence), and gets each of those slices' gradient.
    ///
    ///     // dy: (batch, time, size · features)  →  dx: (batch, time, features)
    public static func contextWindowBackward<Scalar>(_ dy: Tensor<Scalar>, time: Int, features: Int, size: Int) -> Tensor<Scalar> {
        let batch = dy.count / (time * size * features)
        var dx = Tensor<Scalar>(zeros: [batch, time, features])
        for b in 0..<batch {
            for s in 0..<time {
                for i in 0..<features {
                    var sum: Scalar = 0
                    for t in s..<min(s + size, time) {
                        sum += dy[(b * time + t) * size * features + (s - t + size - 1) * features + i]
                    }
                    dx[(b * time + s) * features + i] = sum
                }
            }
        }
        return dx
    }
}
