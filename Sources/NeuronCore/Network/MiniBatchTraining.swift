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
    /// Over the current epoch so far: the sum of batch losses, the batches, the samples, and
    /// (classification) the samples whose largest output was their class, before each update.
    public private(set) var epochProgress = EpochProgress()

    // The batch buffers, sized by the first full batch and reused (a smaller last batch keeps
    // their capacity).
    private var features = Tensor<Scalar>(zeros: [0, 0])
    private var targets = Tensor<Scalar>(zeros: [0, 0])
    private var labels: [Int] = []

    /// With data parallelism, what sums this process's share of each batch with the others';
    /// nil (the default) trains on whole batches alone.
    public var reducer: (any GradientReducer)?
    // The gradients and totals (weighted loss, correct count) summed over the processes; sized at the first step.
    private var summed: [Scalar] = []
    private var totals = [0.0, 0.0]

    /// Training of `network` on `dataset` in batches of `batchSize`, shuffled by a generator seeded with `seed`.
    /// - Throws: ``NetworkError/shapeMismatch(_:)`` when the dataset's features or targets do not
    ///   fit the network, ``DataError`` for a batch size below 1 or an empty dataset.
    public init(network: Network<Scalar>, optimizer: O, dataset: Dataset<Scalar>, batchSize: Int, seed: UInt64) throws {
        guard dataset.featureCount == network.featureCount, dataset.outputCount == network.outputCount else {
            throw NetworkError.shapeMismatch(
                "the dataset has \(dataset.featureCount) features and \(dataset.outputCount) outputs but \(network) takes \(network.featureCount) and gives \(network.outputCount)"
            )
        }
        self.network = network
        self.optimizer = optimizer
        self.dataset = dataset
        batches = try MiniBatches(count: dataset.count, batchSize: batchSize)
        generator = SeededGenerator(seed: seed)
    }

    /// Training resumed from a saved ``position`` (network and optimizer as saved with it).
    /// - Throws: what ``init(network:optimizer:dataset:batchSize:seed:)`` throws,
    ///   ``DataError/invalidArgument(name:value:expected:)`` when the position does not fit the
    ///   dataset or itself, ``OptimizerError/stateCount(name:expected:actual:)`` when an optimizer
    ///   buffer does not hold one value per parameter.
    public init(network: Network<Scalar>, optimizer: O, dataset: Dataset<Scalar>, position: Position) throws {
        try self.init(network: network, optimizer: optimizer, dataset: dataset, batchSize: position.batches.batchSize, seed: 0)
        guard position.batches.count == dataset.count, (0..<position.batches.batchesPerEpoch).contains(position.batchIndex) else {
            throw DataError.invalidArgument(
                name: "saved position", value: "\(position.batches.count) samples, batch \(position.batchIndex)",
                expected: "\(dataset.count) samples and a batch from 0 to \(position.batches.batchesPerEpoch - 1)")
        }
        let (done, overflow) = position.epoch.multipliedReportingOverflow(by: position.batches.batchesPerEpoch)
        guard position.epoch >= 0, !overflow, done + position.batchIndex == position.stepsTaken else {
            throw DataError.invalidArgument(
                name: "saved position", value: "epoch \(position.epoch), batch \(position.batchIndex), \(position.stepsTaken) steps",
                expected: "steps equal to epochs × \(position.batches.batchesPerEpoch) batches + the batch")
        }
        // The optimizer's buffers were restored before it was handed over; `update` requires one
        // value per parameter once it has stepped, so a saved buffer of another length is refused here.
        for (name, buffer) in optimizer.state where buffer.count != (optimizer.step == 0 ? 0 : network.parameters.count) {
            throw OptimizerError.stateCount(name: name, expected: optimizer.step == 0 ? 0 : network.parameters.count, actual: buffer.count)
        }
        batches = position.batches
        generator = position.generator
        epoch = position.epoch
        batchIndex = position.batchIndex
        stepsTaken = position.stepsTaken
        epochProgress = position.epochProgress
        // Each step drew one training pass's noise: the next draws what an unbroken run would.
        self.network.noiseStep = UInt64(position.stepsTaken)
    }

    /// Where training stands: ``TrainingPosition``.
    public typealias Position = TrainingPosition

    /// Where training stands, to save beside the network and optimizer.
    public var position: Position {
        Position(
            batches: batches, generator: generator, epoch: epoch, batchIndex: batchIndex,
            stepsTaken: stepsTaken, epochProgress: epochProgress)
    }

    /// Batches in one epoch.
    public var batchesPerEpoch: Int { batches.batchesPerEpoch }

    /// One gradient-descent step on the next batch; a new epoch starts with a fresh shuffle.
    /// - Returns: the batch's loss before the update.
    @discardableResult
    public mutating func step() -> Scalar {
        if batchIndex == 0 {
            batches.shuffle(using: &generator)
            epochProgress = EpochProgress()
        }
        let batch = batches.range(ofBatch: batchIndex)
        let share = reducer?.share(of: batch) ?? batch
        var loss: Scalar = 0, correct = 0
        if !share.isEmpty {
            batches.fill(positions: share, from: dataset, features: &features, targets: &targets, labels: &labels)
            // The shapes were checked against the network when training was set up.
            loss = try! network.lossAndGradients(features, targets: targets)
            if !labels.isEmpty { correct = ConfusionMatrix.correctCount(network.output, labels: labels) }
        }
        if let reducer {
            (loss, correct) = sumShares(with: reducer, share: share.count, of: batch.count, loss: loss, correct: correct)
            optimizer.update(parameters: &network.parameters, gradients: summed)
        } else {
            optimizer.update(parameters: &network.parameters, gradients: network.gradients)
        }
        epochProgress.correct += correct
        epochProgress.lossSum += Double(loss)
        epochProgress.batches += 1
        epochProgress.samples += batch.count
        stepsTaken += 1
        batchIndex += 1
        if batchIndex == batches.batchesPerEpoch {
            batchIndex = 0
            epoch += 1
        }
        return loss
    }

    /// The whole batch's gradients, loss and correct count from every process's share of it.
    ///
    /// The loss and its gradients are means over a share of `b` rows out of the batch's `B`; each
    /// process weighs its own by `b / B`, so that their sum is the mean over the whole batch, as
    /// one process computes it (a process with no rows adds zeros).
    ///
    ///     // gradients: (parameters)  summed: (parameters)  totals: (loss · b/B, correct)
    private mutating func sumShares(with reducer: any GradientReducer, share: Int, of batch: Int, loss: Scalar, correct: Int) -> (Scalar, Int) {
        let weight = Scalar(share) / Scalar(batch)
        if summed.count != network.gradients.count { summed = Array(repeating: 0, count: network.gradients.count) }
        summed.withUnsafeMutableBufferPointer { summed in
            if share == 0 {
                Tensor<Scalar>.zero(summed)  // the gradient buffer still holds an earlier step's
            } else {
                // summed = weight · gradients: a copy, then BLAS's scal (this loop is generic code, unspecialized)
                network.gradients.withUnsafeBufferPointer { g in _ = summed.update(fromContentsOf: g) }
                Scalar.blasScal(n: summed.count, alpha: weight, x: summed.baseAddress!)
            }
        }
        (totals[0], totals[1]) = (Double(weight * loss), Double(correct))
        reducer.sum(gradients: &summed, totals: &totals)
        return (Scalar(totals[0]), Int(totals[1]))
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

/// Everything besides network and optimizer that decides the next step.
public struct TrainingPosition: Sendable, Equatable, Codable {
    /// The epoch's sample order and batch size.
    public var batches: MiniBatches
    /// The generator that draws the next epoch's order.
    public var generator: SeededGenerator
    /// Epochs completed.
    public var epoch: Int
    /// The next batch within the epoch.
    public var batchIndex: Int
    /// Steps taken in all.
    public var stepsTaken: Int
    /// The sums over the epoch so far.
    public var epochProgress: EpochProgress

    /// A position from its parts.
    public init(batches: MiniBatches, generator: SeededGenerator, epoch: Int, batchIndex: Int, stepsTaken: Int, epochProgress: EpochProgress) {
        (self.batches, self.generator, self.epoch, self.batchIndex, self.stepsTaken, self.epochProgress) = (
            batches, generator, epoch, batchIndex, stepsTaken, epochProgress
        )
    }
}

/// Sums over the batches of an epoch so far.
public struct EpochProgress: Sendable, Equatable, Codable {
    /// Nothing summed yet.
    public init() {}
    /// The sum of the batch losses.
    public var lossSum = 0.0
    /// Batches taken.
    public var batches = 0
    /// Samples seen.
    public var samples = 0
    /// Samples whose largest output was their class, before each update.
    public var correct = 0
    /// The mean batch loss so far.
    public var meanLoss: Double { batches == 0 ? 0 : lossSum / Double(batches) }
    /// The share of samples classified right so far (before each update).
    public var accuracy: Double { samples == 0 ? 0 : Double(correct) / Double(samples) }
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
    /// The first sample (from 0, in the dataset's order) whose outputs are not all finite (NaN or
    /// infinity), which makes the loss and the accuracy meaningless; nil when every output is finite.
    public var nonFiniteRow: Int?

    /// An evaluation from its parts.
    public init(loss: Double, accuracy: Double?, confusion: ConfusionMatrix?, count: Int) {
        (self.loss, self.accuracy, self.confusion, self.count) = (loss, accuracy, confusion, count)
    }
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
        var nonFiniteRow: Int?
        for b in 0..<batches.batchesPerEpoch {
            batches.fill(batch: b, from: dataset, features: &x, targets: &t, labels: &labels)
            total += Double(try loss(x, targets: t)) * Double(x.rows)
            if confusion != nil { confusion!.add(predictions: output, labels: labels) }
            if nonFiniteRow == nil, let i = output.scalars.firstIndex(where: { !$0.isFinite }) {
                nonFiniteRow = batches.range(ofBatch: b).lowerBound + i / outputCount  // a fresh order is the dataset's
            }
        }
        var evaluation = Evaluation(loss: total / Double(dataset.count), accuracy: confusion?.accuracy, confusion: confusion, count: dataset.count)
        evaluation.nonFiniteRow = nonFiniteRow
        return evaluation
    }
}
