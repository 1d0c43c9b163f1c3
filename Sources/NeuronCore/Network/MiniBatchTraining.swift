// Mini-batch gradient descent over a dataset, one step at a time. Everything that decides the
// next step — network, optimizer state, epoch order, generator — is in this value, so stopping
// after any step and going on later gives the numbers of a run that never stopped.

/// Trains a network on a dataset in shuffled mini-batches, one ``step()`` at a time.
public struct MiniBatchTraining<Scalar: TensorScalar, O: Optimizer>: Sendable where O.Scalar == Scalar {
    /// The network being trained.
    public var network: Network<Scalar>
    /// The optimizer, with its state.
    public var optimizer: O
    /// The training rows; over a document, its training part's first consecutive windows
    /// (``TextDocument/windows(_:blockSize:as:)``), which a gradient check reads.
    public let dataset: Dataset<Scalar>
    /// Over a document: its training part's tokens, which each step's windows are drawn from
    /// (``MiniBatches/init(windows:count:batchSize:)``); nil for training on `dataset`'s rows.
    public private(set) var document: TokenSequence?
    /// When given (> 0), each step's gradients, once final (after `combine` in a shared step), are
    /// clipped to this global norm before the update (`Network.clipGradientNorm(maximum:)`).
    public var maximumGradientNorm: Double?
    /// The last step's global gradient norm before clipping; nil without clipping.
    public private(set) var lastGradientNorm: Double?
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

    // A share's gradients weighted by its part of the batch, handed to `combine`; sized at the first shared step.
    private var shared: [Scalar] = []

    /// Training of `network` on `dataset` in batches of `batchSize`, shuffled by a generator seeded with `seed`.
    /// - Throws: ``NetworkError/shapeMismatch(_:)`` when the dataset's features or targets do not
    ///   fit the network, ``NetworkError/invalidValue(_:)`` for a token or class index out of range,
    ///   ``NetworkError/lossMismatch(_:)`` for a labelled dataset with the sequence loss,
    ///   ``DataError`` for a batch size below 1 or an empty dataset.
    public init(network: Network<Scalar>, optimizer: O, dataset: Dataset<Scalar>, batchSize: Int, seed: UInt64) throws {
        // Targets per sample are the outputs, except for the sequence loss's one class index per position.
        guard dataset.featureCount == network.featureCount, dataset.outputCount == network.targetCount else {
            throw NetworkError.shapeMismatch(
                "the dataset has \(dataset.featureCount) features and \(dataset.outputCount) targets per sample but \(network) takes \(network.featureCount) and \(network.targetCount)"
            )
        }
        self.network = network
        self.optimizer = optimizer
        self.dataset = dataset
        document = nil
        batches = try MiniBatches(count: dataset.count, batchSize: batchSize)
        generator = SeededGenerator(seed: seed)
        try network.checkDataset(dataset)  // once for every row: a step takes its batch on trust
    }

    /// Training of `network` on windows of a document, nanoGPT's way: each epoch draws
    /// `stepsPerEpoch · batchSize` window starts from a generator seeded with `seed`, uniformly
    /// and with replacement, and each step trains on `batchSize` of them; a window reads
    /// `blockSize` characters (the network's positions) and predicts each one's successor.
    ///
    ///     // document: (characters)  a step's features, targets: (batchSize, blockSize)
    ///
    /// - Parameters:
    ///   - network: the network to train, whose positions are the block.
    ///   - optimizer: the optimizer, with its state.
    ///   - document: the training part's tokens, at least `blockSize + 1` of them, every one
    ///     checked against the network here.
    ///   - windows: the part's first consecutive windows (any number of them): their shape is
    ///     checked against the network, and a gradient check draws its rows from them.
    ///   - batchSize: windows per step.
    ///   - stepsPerEpoch: steps per epoch (a document run's evaluation interval).
    ///   - seed: seeds the generator that draws the windows.
    /// - Throws: what ``init(network:optimizer:dataset:batchSize:seed:)`` throws, and
    ///   ``DataError/invalidArgument(name:value:expected:)`` for a document no longer than the block.
    public init(
        network: Network<Scalar>, optimizer: O, document: TokenSequence, windows: Dataset<Scalar>, batchSize: Int, stepsPerEpoch: Int,
        seed: UInt64
    ) throws {
        try self.init(network: network, optimizer: optimizer, dataset: windows, batchSize: batchSize, seed: seed)
        let block = windows.featureCount
        guard document.count > block else {
            throw DataError.invalidArgument(
                name: "training characters", value: "\(document.count)",
                expected: "more than the block's \(block) (a window reads \(block) and predicts one more)")
        }
        // Every token is read as an input and predicted as a target (but the first).
        let tokens = min(network.tokenVocabulary ?? .max, network.loss == .sequenceCrossEntropy ? network.softmaxColumns : .max)
        if let largest = document.largest, largest >= tokens {
            let at = document.firstIndex { $0 >= tokens }!
            throw NetworkError.invalidValue(
                "the document's token \(at) is \(document[at]), but \(network) takes token indices: whole numbers in 0..<\(tokens)")
        }
        let (draws, overflow) = stepsPerEpoch.multipliedReportingOverflow(by: batchSize)
        guard stepsPerEpoch >= 1, !overflow else {
            throw DataError.invalidArgument(
                name: "steps per epoch", value: "\(stepsPerEpoch)", expected: "at least 1, and steps × batch size countable")
        }
        self.document = document
        batches = try MiniBatches(windows: document.count - block, count: draws, batchSize: batchSize)
    }

    /// Training resumed from a saved ``position`` (network and optimizer as saved with it).
    /// - Throws: what ``init(network:optimizer:dataset:batchSize:seed:)`` throws,
    ///   ``DataError/invalidArgument(name:value:expected:)`` when the position does not fit the
    ///   dataset or itself, ``OptimizerError/stateCount(name:expected:actual:)`` when an optimizer
    ///   buffer does not hold one value per parameter.
    public init(network: Network<Scalar>, optimizer: O, dataset: Dataset<Scalar>, position: Position) throws {
        try self.init(network: network, optimizer: optimizer, dataset: dataset, batchSize: position.batches.batchSize, seed: 0)
        guard position.batches.windows == nil else {
            throw DataError.invalidArgument(
                name: "saved position", value: "windows of a document", expected: "the rows of a dataset (the run's data is not a document)")
        }
        try resume(from: position)
    }

    /// Training on windows of a document resumed from a saved ``position``.
    /// - Throws: what ``init(network:optimizer:document:windows:batchSize:stepsPerEpoch:seed:)``
    ///   throws, and ``DataError/invalidArgument(name:value:expected:)`` when the position is not
    ///   over this document's windows or does not fit itself.
    public init(network: Network<Scalar>, optimizer: O, document: TokenSequence, windows: Dataset<Scalar>, position: Position) throws {
        let draws = position.batches.count, batchSize = position.batches.batchSize
        try self.init(
            network: network, optimizer: optimizer, document: document, windows: windows, batchSize: batchSize,
            stepsPerEpoch: max(1, draws / batchSize), seed: 0)
        guard position.batches.windows == document.count - windows.featureCount else {
            throw DataError.invalidArgument(
                name: "saved position", value: position.batches.windows.map { "windows from \($0) starts" } ?? "rows of a dataset",
                expected: "windows from \(document.count - windows.featureCount) starts (the training part's characters less the block)")
        }
        try resume(from: position)
    }

    /// Takes over a saved position whose batches were checked to fit the data.
    private mutating func resume(from position: Position) throws {
        let expectedCount = document == nil ? dataset.count : position.batches.count
        guard position.batches.count == expectedCount, (0..<position.batches.batchesPerEpoch).contains(position.batchIndex) else {
            throw DataError.invalidArgument(
                name: "saved position", value: "\(position.batches.count) samples, batch \(position.batchIndex)",
                expected: "\(dataset.count) samples and a batch from 0 to \(position.batches.batchesPerEpoch - 1)")
        }
        let steps = stepCount(epochs: position.epoch, stepsPerEpoch: position.batches.batchesPerEpoch, plus: position.batchIndex)
        guard steps == position.stepsTaken else {
            throw DataError.invalidArgument(
                name: "saved position", value: "epoch \(position.epoch), batch \(position.batchIndex), \(position.stepsTaken) steps",
                expected: "steps equal to epochs × \(position.batches.batchesPerEpoch) batches + the batch, at most \(maximumStepCount)")
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
        let batch = startStep()
        // Plain SGD without clipping runs inside backward (``Network/fusesUpdate``).
        if maximumGradientNorm == nil, network.fusesUpdate(rows: batch.count), let rule = optimizer.fusableStep() {
            fill(batch)
            let loss = network.fusedLossAndUpdate(features, targets: targets, step: rule)
            return finishStep(loss: loss, correct: correctCount(), samples: batch.count)
        }
        let (loss, correct) = backward(batch)
        if let maximumGradientNorm { lastGradientNorm = network.clipGradientNorm(maximum: maximumGradientNorm) }
        optimizer.update(parameters: &network.parameters, gradients: network.gradients)
        return finishStep(loss: loss, correct: correct, samples: batch.count)
    }

    /// One step of which this caller computes only a share of the batch, and `combine` makes the
    /// whole batch's gradients and totals from it before the update (data parallelism: by adding
    /// the other shares', computed elsewhere on the same batch); clipping, when asked, follows `combine`.
    ///
    /// The loss and its gradients are means over a share of `b` rows out of the batch's `B`; they
    /// reach `combine` weighted by `b / B`, so that the shares' sum is the mean over the whole
    /// batch, as ``step()`` computes it (an empty share gives zeros). Under
    /// ``Loss/sequenceCrossEntropy`` the mean is over counted positions (padding left out), so `b`
    /// and `B` count those instead of rows: shares of the same rows can hold different numbers of
    /// them. The totals' correct count is the share's.
    ///
    ///     // gradients: (parameters)  weighted: (parameters)  totals: (loss · b/B, correct)
    ///
    /// - Parameters:
    ///   - share: This caller's part of the batch's positions (a contiguous range within it).
    ///   - combine: Turns the share's weighted gradients and totals into the whole batch's, in place.
    /// - Returns: the batch's loss before the update, as `combine` left it.
    @discardableResult
    public mutating func step(
        share: (_ batch: Range<Int>) -> Range<Int>, combine: (_ gradients: inout [Scalar], _ totals: inout BatchTotals) -> Void
    ) -> Scalar {
        let batch = startStep()
        let part = share(batch)
        precondition(
            part.isEmpty || batch.contains(part.lowerBound) && part.upperBound <= batch.upperBound, "share \(part) is not within batch \(batch)")
        var (loss, correct): (Scalar, Int) = (0, 0)
        if !part.isEmpty { (loss, correct) = backward(part) }
        let weight = shareWeight(part, of: batch)
        if shared.count != network.gradients.count { shared = Array(repeating: 0, count: network.gradients.count) }
        shared.withUnsafeMutableBufferPointer { shared in
            if part.isEmpty {
                Tensor<Scalar>.zero(shared)  // the gradient buffer still holds an earlier step's
            } else {
                // shared = weight · gradients: a copy, then BLAS's scal (this loop is generic code, unspecialized)
                network.gradients.withUnsafeBufferPointer { g in _ = shared.update(fromContentsOf: g) }
                Scalar.blasScal(n: shared.count, alpha: weight, x: shared.baseAddress!)
            }
        }
        var totals = BatchTotals(loss: Double(weight * loss), correct: correct)
        combine(&shared, &totals)
        if let maximumGradientNorm {
            // Every process holds the same summed gradients here, so every process clips alike.
            lastGradientNorm = shared.withUnsafeMutableBufferPointer { Kernels.clipGradientNorm($0, maximum: maximumGradientNorm) }
        }
        optimizer.update(parameters: &network.parameters, gradients: shared)
        return finishStep(loss: Scalar(totals.loss), correct: totals.correct, samples: batch.count)
    }

    /// `b / B`: the share's part of what the batch's loss averages over (``Network/meanCount(targets:rows:)``).
    private func shareWeight(_ part: Range<Int>, of batch: Range<Int>) -> Scalar {
        guard network.loss == .sequenceCrossEntropy, document == nil else { return Scalar(part.count) / Scalar(batch.count) }
        let columns = dataset.outputCount
        func counted(_ positions: Range<Int>) -> Int {
            dataset.targets.withUnsafeBufferPointer { t in
                positions.reduce(0) { n, position in
                    let row = batches.order[position] * columns
                    return n + network.meanCount(targets: UnsafeBufferPointer(rebasing: t[row..<row + columns]), rows: 1)
                }
            }
        }
        let total = counted(batch)
        // A batch of padding alone has a loss and gradients of 0 in every share: any weight keeps them so.
        // (A document's windows count every position: `counted` is for the rows of `dataset`.)
        return total == 0 ? 0 : Scalar(counted(part)) / Scalar(total)
    }

    /// The next batch's positions; a new epoch draws its order and starts its sums here.
    private mutating func startStep() -> Range<Int> {
        if batchIndex == 0 {
            batches.startEpoch(using: &generator)
            epochProgress = EpochProgress()
        }
        return batches.range(ofBatch: batchIndex)
    }

    /// The loss and (classification) correct count of the rows at `positions`, their gradients in `network.gradients`.
    private mutating func backward(_ positions: Range<Int>) -> (loss: Scalar, correct: Int) {
        fill(positions)
        let loss = network.lossAndGradientsUnchecked(features, targets: targets, inputGradient: false)
        return (loss, correctCount())
    }

    /// The rows at `positions` into the batch buffers, checked against the network: the dataset was
    /// checked whole when training was set up, but ``network`` can be replaced since, and a batch
    /// that does not fit it must stop the program rather than be read past its end.
    private mutating func fill(_ positions: Range<Int>) {
        if let document {
            batches.fill(windows: positions, from: document, blockSize: dataset.featureCount, features: &features, targets: &targets)
        } else {
            batches.fill(positions: positions, from: dataset, features: &features, targets: &targets, labels: &labels)
        }
        try! network.checkInput(features)
        try! network.checkTargets(targets, batch: features.shape[0])
    }

    /// The (classification) correct count of the last pass's rows.
    private func correctCount() -> Int {
        labels.isEmpty ? 0 : ConfusionMatrix.correctCount(network.output, labels: labels)
    }

    /// Counts the step into the epoch's sums and moves to the next batch.
    private mutating func finishStep(loss: Scalar, correct: Int, samples: Int) -> Scalar {
        epochProgress.correct += correct
        epochProgress.lossSum += Double(loss)
        epochProgress.batches += 1
        epochProgress.samples += samples
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

/// What a step sums besides its gradients: the batch's loss and (classification) correct count,
/// or a share's part of them (``MiniBatchTraining/step(share:combine:)``).
public struct BatchTotals: Sendable, Equatable {
    /// The mean loss over the batch (a share's: weighted by its part of the rows).
    public var loss: Double
    /// The samples whose largest output was their class (0 for regression).
    public var correct: Int

    /// Totals from their parts.
    public init(loss: Double, correct: Int) { (self.loss, self.correct) = (loss, correct) }
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
    /// What the loss of a batch with these targets is a mean over: its rows, or for the sequence
    /// loss its counted positions (class indices ≥ 0; negative ones are padding).
    ///
    ///     // t: (rows, targetCount)
    func meanCount(targets t: UnsafeBufferPointer<Scalar>, rows: Int) -> Int {
        guard loss == .sequenceCrossEntropy else { return rows }
        return t.reduce(0) { $1 >= 0 ? $0 + 1 : $0 }
    }

    /// The rows ``evaluate(_:batchSize:)`` forwards at a time unless told: 256, or for a sequence
    /// model as many as hold 4,096 positions (at least 1, at most 256): a block of 256 positions
    /// evaluates 16 rows at a time, not 256, whose activations alone would be 16 times a training
    /// batch's at nanoGPT's size.
    public var evaluationBatchSize: Int {
        guard inputShape.count == 1, outputShape.count == 2 else { return 256 }
        return max(1, min(256, 4096 / max(1, inputShape[0])))
    }

    /// Evaluates on every sample of `dataset`, in order, `batchSize` at a time (forward only;
    /// nil: ``evaluationBatchSize``).
    /// - Throws: ``NetworkError/shapeMismatch(_:)`` when the dataset does not fit the network,
    ///   ``NetworkError/invalidValue(_:)`` for a token or class index out of range,
    ///   ``NetworkError/lossMismatch(_:)`` for a labelled dataset with the sequence loss,
    ///   ``DataError`` for a batch size below 1 or an empty dataset.
    public mutating func evaluate(_ dataset: Dataset<Scalar>, batchSize: Int? = nil) throws -> Evaluation {
        let batches = try MiniBatches(count: dataset.count, batchSize: batchSize ?? evaluationBatchSize)
        try checkDataset(dataset)
        var x = Tensor<Scalar>(zeros: [0, 0]), t = Tensor<Scalar>(zeros: [0, 0]), labels: [Int] = []
        var confusion = dataset.labels.map { _ in ConfusionMatrix(classCount: dataset.outputCount) }
        // Each batch's mean weighted by what it is a mean over: its rows, or for the sequence loss
        // its counted positions, so that the whole is the mean over every row (every counted position).
        var total = 0.0, weight = 0.0
        var nonFiniteRow: Int?
        for b in 0..<batches.batchesPerEpoch {
            batches.fill(batch: b, from: dataset, features: &x, targets: &t, labels: &labels)
            let counted = Double(t.withUnsafeBufferPointer { meanCount(targets: $0, rows: x.rows) })
            let mean = Double(try self.loss(x, targets: t))
            if counted > 0 { total += mean * counted }
            weight += counted
            if confusion != nil { confusion!.add(predictions: output, labels: labels) }
            if nonFiniteRow == nil, let i = output.scalars.firstIndex(where: { !$0.isFinite }) {
                nonFiniteRow = batches.range(ofBatch: b).lowerBound + i / outputCount  // a fresh order is the dataset's
            }
        }
        var evaluation = Evaluation(loss: weight > 0 ? total / weight : 0, accuracy: confusion?.accuracy, confusion: confusion, count: dataset.count)
        evaluation.nonFiniteRow = nonFiniteRow
        return evaluation
    }
}
