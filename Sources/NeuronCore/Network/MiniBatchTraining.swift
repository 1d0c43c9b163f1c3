// Mini-batch gradient descent over a dataset, one step at a time. Everything that decides the
// next step — network, optimizer state, epoch order, generator — is in this value, so stopping
// after any step and going on later gives the numbers of a run that never stopped.

/// Trains a network on a dataset in shuffled mini-batches, one ``step()`` at a time.
public struct MiniBatchTraining<Scalar: TensorScalar, O: Optimizer>: Sendable where O.Scalar == Scalar {
    /// The network being trained.
    public var network: Network<Scalar>
    /// The optimizer, with its state.
    public var optimizer: O
    /// The training rows.
    public let dataset: Dataset<Scalar>
    /// This epoch's order and the batch boundaries.
    public private(set) var batches: MiniBatches
    /// Draws each epoch's order.
    public private(set) var generator: SeededGenerator
    /// Epochs completed.
    public private(set) var epoch = 0
    /// The next batch within the current epoch.
    public private(set) var batchIndex = 0
    /// Steps taken in all.
    public private(set) var stepsTaken = 0

    // The batch buffers, sized by the first full batch and reused (a smaller last batch keeps
    // their capacity).
    private var features = Tensor<Scalar>(zeros: [0, 0])
    private var targets = Tensor<Scalar>(zeros: [0, 0])
    private var labels: [Int] = []

    /// Training of `network` on `dataset` in batches of `batchSize`, shuffled by a generator seeded with `seed`.
    /// - Throws: ``NetworkError/shapeMismatch(_:)`` when the dataset's features or targets do not
    ///   fit the network, ``DataError`` for a batch size below 1 or an empty dataset.
    public init(network: Network<Scalar>, optimizer: O, dataset: Dataset<Scalar>, batchSize: Int, seed: UInt64) throws {
        guard dataset.featureCount == network.inputSize, dataset.outputCount == network.outputSize else {
            throw NetworkError.shapeMismatch(
                "the dataset has \(dataset.featureCount) features and \(dataset.outputCount) outputs but \(network) takes \(network.inputSize) and gives \(network.outputSize)")
        }
        self.network = network
        self.optimizer = optimizer
        self.dataset = dataset
        batches = try MiniBatches(count: dataset.count, batchSize: batchSize)
        generator = SeededGenerator(seed: seed)
    }

    /// Batches in one epoch.
    public var batchesPerEpoch: Int { batches.batchesPerEpoch }

    /// One gradient-descent step on the next batch; a new epoch starts with a fresh shuffle.
    /// - Returns: the batch's loss before the update.
    @discardableResult
    public mutating func step() -> Scalar {
        if batchIndex == 0 { batches.shuffle(using: &generator) }
        batches.fill(batch: batchIndex, from: dataset, features: &features, targets: &targets, labels: &labels)
        // The shapes were checked against the network when training was set up.
        let loss = try! network.trainStep(features, targets: targets, optimizer: &optimizer)
        stepsTaken += 1
        batchIndex += 1
        if batchIndex == batches.batchesPerEpoch {
            batchIndex = 0
            epoch += 1
        }
        return loss
    }

    /// Steps to the end of the current epoch.
    /// - Returns: the mean of the epoch's batch losses (those taken by this call).
    @discardableResult
    public mutating func finishEpoch() -> Scalar {
        var sum: Scalar = 0, count = 0
        repeat {
            sum += step()
            count += 1
        } while batchIndex != 0
        return sum / Scalar(count)
    }
}

/// A network's loss and, for classification, accuracy and confusion matrix on a dataset.
public struct Evaluation: Sendable, Equatable, Codable {
    /// The mean loss over every sample.
    public var loss: Double
    /// The share of samples whose largest output is their class (classification only).
    public var accuracy: Double?
    /// Actual against predicted classes (classification only).
    public var confusion: ConfusionMatrix?
    /// Samples evaluated.
    public var count: Int
}

extension Network {
    /// Evaluates on every sample of `dataset`, in order, `batchSize` at a time (forward only).
    /// - Throws: ``NetworkError/shapeMismatch(_:)`` when the dataset does not fit the network,
    ///   ``DataError`` for a batch size below 1 or an empty dataset.
    public mutating func evaluate(_ dataset: Dataset<Scalar>, batchSize: Int = 256) throws -> Evaluation {
        let batches = try MiniBatches(count: dataset.count, batchSize: batchSize)
        var x = Tensor<Scalar>(zeros: [0, 0]), t = Tensor<Scalar>(zeros: [0, 0]), labels: [Int] = []
        var confusion = dataset.labels.map { _ in ConfusionMatrix(classCount: dataset.outputCount) }
        var total = 0.0
        for b in 0 ..< batches.batchesPerEpoch {
            batches.fill(batch: b, from: dataset, features: &x, targets: &t, labels: &labels)
            total += Double(try loss(x, targets: t)) * Double(x.rows)
            if confusion != nil { confusion!.add(predictions: layers[layers.count - 1].output, labels: labels) }
        }
        return Evaluation(loss: total / Double(dataset.count), accuracy: confusion?.accuracy, confusion: confusion, count: dataset.count)
    }
}
