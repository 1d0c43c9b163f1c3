// nanoGPT's estimate of a document run's validation loss: the mean over a few batches of windows
// drawn at random from the validation part (its `estimate_loss`), cheaper than the exact loss over
// every character and noisier. Drawn from a generator of its own (the run's seed and the epoch),
// so it neither disturbs training's draws nor changes when a run is resumed.
import NeuronCore

/// The windows a document run estimates its validation loss on.
public struct WindowEstimate<Scalar: TensorScalar>: Sendable {
    /// The validation part's tokens.
    public var document: TokenSequence
    /// The characters a window reads.
    public var blockSize: Int
    /// Batches averaged over.
    public var batches: Int
    /// Windows per batch.
    public var batchSize: Int
    /// The run's seed: the windows after epoch `e` are drawn from `seed + 4 + e`.
    public var seed: UInt64

    public init(document: TokenSequence, blockSize: Int, batches: Int, batchSize: Int, seed: UInt64) {
        (self.document, self.blockSize, self.batches, self.batchSize, self.seed) = (document, blockSize, batches, batchSize, seed)
    }

    /// `batches · batchSize` windows drawn uniformly, with replacement, after `epoch` epochs: a
    /// dataset whose mean loss is the mean of the batches' mean losses (every batch has as many
    /// positions, none padding).
    ///
    ///     // features, targets: (batches · batchSize, blockSize)
    ///
    /// - Precondition: the part holds more than `blockSize` characters.
    public func windows(afterEpoch epoch: Int) -> Dataset<Scalar> {
        var generator = SeededGenerator(seed: seed &+ 4 &+ UInt64(epoch))
        // The loader and the run builder leave at least a window in the part.
        var draws = try! MiniBatches(windows: document.count - blockSize, count: batches * batchSize, batchSize: batchSize)
        draws.draw(using: &generator)
        var features = Tensor<Scalar>(zeros: [0, 0]), targets = Tensor<Scalar>(zeros: [0, 0])
        draws.fill(windows: 0..<draws.count, from: document, blockSize: blockSize, features: &features, targets: &targets)
        // features and targets: one row per window, of blockSize positions each
        return try! Dataset(features: features, targets: targets, featureNames: (0..<blockSize).map { "t\($0)" })
    }
}
