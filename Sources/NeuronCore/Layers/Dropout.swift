// Inverted dropout: in training each input is kept with probability 1 - rate and scaled by
// 1 / (1 - rate), so that evaluation, which keeps everything, needs no scaling. The mask is a
// function of a key the network hands the layer before each training pass (the run's seed, the
// step and the layer's index): the same step replays the same mask, after a resume too, and a
// gradient check can hold it fixed.

/// Inverted dropout, e.g. `Dropout(128, rate 0.5)`; no parameters, the identity in evaluation.
public struct Dropout<Scalar: TensorScalar>: Layer {
    public let inputShape: [Int]
    /// The probability of dropping each input in training, in `[0, 1)`.
    public let rate: Double
    /// The key of the next training pass's mask (see ``drawNoise(key:)``).
    public private(set) var key: UInt64 = 0

    /// What forward keeps for backward; sized when a batch shape is first seen, then reused.
    public struct Cache: Sendable {
        /// `y = x ⊙ mask` in training, `x` in evaluation.
        public var output = Tensor<Scalar>(zeros: [0, 0])
        /// The last training pass's mask: 0 or `1 / (1 - rate)` per input.
        public var mask = Tensor<Scalar>(zeros: [0, 0])
        /// `dx = dy ⊙ mask`, only when asked for.
        public var inputGradient = Tensor<Scalar>(zeros: [0, 0])
    }

    /// The layer's caches.
    public private(set) var cache = Cache()

    /// Dropout of samples of shape `input` (any shape) at `rate`.
    /// - Throws: ``NetworkError/invalidLayer(_:reason:)`` unless `0 ≤ rate < 1` and the shape is positive.
    public init(input: [Int], rate: Double) throws(NetworkError) {
        guard rate >= 0, rate < 1 else {
            throw .invalidLayer("Dropout(rate \(rate))", reason: "the rate must be at least 0 and below 1")
        }
        guard !input.isEmpty, heldCount(input) != nil else {
            throw .invalidLayer("Dropout(rate \(rate))", reason: "takes samples of a positive shape, got \(TensorError.format(input))")
        }
        inputShape = input
        self.rate = rate
    }

    public var description: String { "Dropout(\(imageDescription(inputShape)), rate \(rate))" }

    /// Evaluation's identity, as the dropout of rate 0 whose training mask is all ones.
    public func evaluationForm(
        parameters: UnsafeBufferPointer<Scalar>, state: UnsafeBufferPointer<Scalar>
    ) throws(NetworkError) -> (layer: any Layer<Scalar>, parameters: [Scalar])? {
        (try Dropout(input: inputShape, rate: 0), [])
    }
    public var outputShape: [Int] { inputShape }
    public var parameterShapes: [(name: String, shape: [Int])] { [] }

    public func converted<Other: TensorScalar>(to: Other.Type) -> any Layer<Other> {
        var copy = try! Dropout<Other>(input: inputShape, rate: rate)
        copy.key = key
        return copy
    }

    public var output: Tensor<Scalar> { cache.output }
    public var inputGradient: Tensor<Scalar> { cache.inputGradient }

    public func initialize(
        parameters: UnsafeMutableBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        using generator: inout SeededGenerator
    ) {}

    /// Takes the key the next training pass's mask is drawn from.
    public mutating func drawNoise(key: UInt64) { self.key = key }

    /// Training: `y = x ⊙ mask` with a fresh mask from the key; evaluation: `y = x`.
    public mutating func forward(
        _ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        mode: LayerMode
    ) {
        // x, mask, y: (batch, features…)
        let batch = x.shape[0], columns = x.count / batch, rate = rate, key = key
        cache.output.resize(rows: batch, columns: columns)
        x.withUnsafeBufferPointer { px in
            cache.output.withUnsafeMutableBufferPointer { py in
                switch mode {
                case .evaluation:
                    _ = py.update(fromContentsOf: px)
                case .training:
                    cache.mask.resize(rows: batch, columns: columns)
                    cache.mask.withUnsafeMutableBufferPointer { pm in Kernels.dropout(px, rate: rate, key: key, mask: pm, into: py) }
                }
            }
        }
    }

    /// Over a sequence, evaluation copies each position.
    public var runsByPosition: Bool { inputShape.count == 2 }

    /// Position `position`'s row alone, as evaluation computes it: a copy.
    public mutating func forward(
        position t: Int, _ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>
    ) {
        // x, y: (1, time, features), their row t
        let f = inputShape[1], row = t * f..<(t + 1) * f
        x.withUnsafeBufferPointer { px in
            cache.output.withUnsafeMutableBufferPointer { py in _ = UnsafeMutableBufferPointer(rebasing: py[row]).update(fromContentsOf: px[row]) }
        }
    }

    /// `dx = dy ⊙ mask`, the mask of the training pass before.
    public mutating func backward(
        input x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>,
        parameters: UnsafeBufferPointer<Scalar>, gradients: UnsafeMutableBufferPointer<Scalar>,
        computeInputGradient: Bool
    ) {
        guard computeInputGradient else { return }
        cache.inputGradient.resize(rows: x.shape[0], columns: x.count / x.shape[0])
        dy.withUnsafeBufferPointer { pdy in
            cache.mask.withUnsafeBufferPointer { pm in
                cache.inputGradient.withUnsafeMutableBufferPointer { pdx in Kernels.multiply(pdy, pm, into: pdx) }
            }
        }
    }
}

/// SplitMix64's finalizer: a bijection of 64-bit words that scatters every input bit over the output.
@inline(__always)
func mix64(_ word: UInt64) -> UInt64 {
    var z = word
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
}

/// The `index`-th number of the stream named by `key`, uniform in `[0, 1)`: a counter-based
/// generator (SplitMix64 at position `index`), so that an element's draw needs no state and a
/// mask is the same however it is computed.
@inline(__always)
func noiseUniform(key: UInt64, index: Int) -> Double {
    Double(mix64(key &+ (UInt64(truncatingIfNeeded: index) &+ 1) &* 0x9E37_79B9_7F4A_7C15) >> 11) * 0x1p-53
}

/// The key of one layer's noise at one step of a run: `seed`, `step` and `layer` mixed in turn,
/// so that every triple names its own stream; share `share` > 0 of a batch split over threads
/// (``Network/batchThreads``) mixes in its index too, so that its rows draw other masks than share 0's.
func noiseKey(seed: UInt64, step: UInt64, layer: Int, share: Int = 0) -> UInt64 {
    let golden: UInt64 = 0x9E37_79B9_7F4A_7C15
    let key = mix64(mix64(mix64(seed) &+ step &* golden) &+ UInt64(truncatingIfNeeded: layer) &* golden)
    return share == 0 ? key : mix64(key &+ UInt64(truncatingIfNeeded: share) &* golden)
}
