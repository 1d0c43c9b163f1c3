// What the loop trains: a value that takes one step at a time and reports on itself in plain
// numbers (`TrainingSnapshot` for a display, `ResumePoint` for a checkpoint, both with the engine's
// `RunProgress`). Engines know no view and no file format; the view model and `Checkpoint` turn
// their reports into those.
import NeuronCore

/// Something trained one step at a time (a network on a dataset, the single neuron among them). A value:
/// everything that decides the next step is inside it, so a copy taken at a step boundary goes on
/// exactly like the original.
public protocol TrainingEngine: Sendable {
    /// The type of the engine's numbers, and of its saved tensors.
    associatedtype Scalar: TensorScalar

    /// What is trained, e.g. `Network[Dense(2→4, tanh), Dense(4→1, tanh)]`.
    var title: String { get }
    /// The seed every random choice flows from; nil when the run makes none (the single neuron:
    /// given parameters, one sample).
    var seed: UInt64? { get }
    /// Samples in one step (for samples per second).
    var samplesPerStep: Int { get }
    /// Steps taken.
    var stepsTaken: Int { get }
    /// Steps planned.
    var totalSteps: Int { get }
    /// Epochs completed.
    var epoch: Int { get }
    /// Epochs planned.
    var totalEpochs: Int { get }
    /// The learning rate of the next step.
    var learningRate: Double { get }
    /// One record per completed epoch.
    var records: [EpochRecord] { get }

    /// One step; returns the step's loss (before the update).
    mutating func step() -> Double
    /// The engine's report at this step boundary: progress, validation, layer statistics, the neuron's row.
    func snapshot() -> TrainingSnapshot
    /// Everything a checkpoint needs to go on from this step boundary exactly.
    func resumePoint() -> ResumePoint<Scalar>
    /// Where a NaN or infinity first shows, for a diverged step (e.g. `layers.1 output`).
    func divergenceLocation() -> String
    /// Checks every gradient (or a sample of large tensors) on a small batch, leaving the engine untouched.
    func checkGradients() throws -> GradientCheckReport
    /// `check` on the current weights, over the first `batchSize` training rows.
    func gradientCheck(_ check: GradientCheck, batchSize: Int) throws -> GradientCheckReport
    /// Loss and accuracy on the test rows (or the validation rows when there is no test set); nil when there are neither.
    func finalEvaluation() throws -> (name: String, evaluation: Evaluation)?
    /// Loss and accuracy on the validation rows; nil without them.
    func validationEvaluation() throws -> Evaluation?
}

extension TrainingEngine {
    /// Whether every planned step has been taken.
    public var isFinished: Bool { stepsTaken >= totalSteps }
}

/// One completed epoch, as `metrics.csv` and `curves.svg` show it.
public struct EpochRecord: Sendable, Equatable, Codable {
    public var epoch: Int
    public var step: Int
    /// The mean batch loss over the epoch (each before its update).
    public var trainingLoss: Double
    /// The share of the epoch's samples classified right before each update (classification).
    public var trainingAccuracy: Double?
    public var validationLoss: Double?
    public var validationAccuracy: Double?

    public init(epoch: Int, step: Int, trainingLoss: Double, trainingAccuracy: Double?, validationLoss: Double?, validationAccuracy: Double?) {
        (self.epoch, self.step, self.trainingLoss, self.trainingAccuracy, self.validationLoss, self.validationAccuracy) =
            (epoch, step, trainingLoss, trainingAccuracy, validationLoss, validationAccuracy)
    }

    /// At most `limit` of `records`: all of them when they fit; else the newest `limit / 5` whole
    /// and, before them, every k-th record from the first (k the smallest stride that fits), so
    /// that the epoch curve keeps its shape over the whole run and its detail at the end. What a
    /// dashboard frame and a checkpoint carry of a long run.
    public static func bounded(_ records: [EpochRecord], limit: Int) -> [EpochRecord] {
        guard records.count > limit else { return records }
        let recent = limit / 5, older = records.count - recent
        let stride = (older + limit - recent - 1) / (limit - recent)
        return Swift.stride(from: 0, to: older, by: stride).map { records[$0] } + records[older...]
    }

    /// The same numbers: equal, NaN counting as equal to NaN (a diverged epoch's record).
    func isSame(as other: EpochRecord) -> Bool {
        func same(_ a: Double?, _ b: Double?) -> Bool { a == b || (a?.isNaN == true && b?.isNaN == true) }
        return epoch == other.epoch && step == other.step && same(trainingLoss, other.trainingLoss)
            && same(trainingAccuracy, other.trainingAccuracy) && same(validationLoss, other.validationLoss)
            && same(validationAccuracy, other.validationAccuracy)
    }
}

/// An engine at a step boundary in plain values: what a checkpoint saves of it.
public struct ResumePoint<Scalar: TensorScalar>: Sendable {
    /// `Network[Dense(784→256, tanh), …]`.
    public var network: String
    /// The parameters (`layers.<i>.weight`, `layers.<i>.bias`), then the optimizer's buffers (`optimizer.<name>`).
    public var tensors: [(name: String, tensor: Tensor<Scalar>)]
    /// Epochs and steps done and planned, and the seed.
    public var progress: RunProgress
    /// The epoch order, the generator and the place in the epoch; nil when nothing is random (the neuron).
    public var position: TrainingPosition?
    /// The optimizer's step count (its buffers are among `tensors`).
    public var optimizerStep: Int
    /// The input columns, and the classes of the outputs (classification).
    public var featureNames: [String], classNames: [String]?
    /// One record per completed epoch.
    public var records: [EpochRecord]
    /// The PyTorch dimension order of each parameter tensor stored in another order than the
    /// engine's (`ParameterTensor.pytorchOrder`), by name.
    public var pytorchOrders: [String: [Int]] = [:]
    /// A text model's tokens; nil for other data.
    public var vocabulary: Vocabulary?

    public init(
        network: String, tensors: [(name: String, tensor: Tensor<Scalar>)], progress: RunProgress, position: TrainingPosition?,
        optimizerStep: Int, featureNames: [String], classNames: [String]?, records: [EpochRecord]
    ) {
        (self.network, self.tensors, self.progress) = (network, tensors, progress)
        (self.position, self.optimizerStep, self.featureNames, self.classNames, self.records) = (
            position, optimizerStep, featureNames, classNames, records
        )
    }
}

/// A network trained on a dataset in shuffled mini-batches for a number of epochs, evaluated on
/// validation rows after each epoch. The single neuron is one: `Network[Dense(1→1, tanh)]` on its
/// one sample, an epoch a step (``RunConfig/desugared``).
public struct NetworkTrainingEngine<Scalar: TensorScalar, O: Optimizer>: TrainingEngine where O.Scalar == Scalar {
    /// The mini-batch loop: network, optimizer, epoch order, generator.
    public private(set) var training: MiniBatchTraining<Scalar, O>
    /// Rows held out for validation after each epoch.
    public let validation: Dataset<Scalar>?
    /// Epochs planned.
    public let totalEpochs: Int
    /// Nil when nothing is drawn: the parameters given, the one sample in its one order.
    public let seed: UInt64?
    /// Epochs between records: 1, or on one sample (an epoch a single step, too many to record
    /// each) 1% of the epochs; the last epoch is always recorded.
    public let recordEvery: Int
    /// The validation result after the last completed epoch.
    public private(set) var lastValidation: Evaluation?
    /// Held-out rows for the final evaluation (never seen in training or validation).
    public let test: Dataset<Scalar>?
    /// One record per completed epoch.
    public private(set) var records: [EpochRecord] = []
    /// A text model's vocabulary and the lines it draws at each epoch's end; nil for other data.
    /// A counted table takes no step, so no epoch ends: its lines are drawn when it is given one.
    public var lineSampler: LineSampler? {
        didSet { if totalEpochs == 0 { sampledLines = lineSampler?.draw(from: training.network, epoch: 0) } }
    }
    /// The lines drawn at the last recorded epoch's end (text models).
    public private(set) var sampledLines: [SampledLine]?
    /// A text model's tokens, which its checkpoint keeps; nil for other data.
    public var vocabulary: Vocabulary?
    /// A document model's tokens per character, which its losses are read per character by.
    public var tokensPerCharacter: TokensPerCharacter?
    /// Over a document, nanoGPT's cheaper estimate of the validation loss in place of the exact
    /// loss over every validation character; nil: exact (``validation``).
    public var validationEstimate: WindowEstimate<Scalar>?

    /// Training of `network` on `dataset` for `epochs` epochs of `batchSize`, shuffled from `seed`
    /// (nil: `network` as given on one sample, nothing to draw).
    /// - Throws: `NetworkError` or `DataError` when the data does not fit or a size is out of range.
    public init(
        network: Network<Scalar>, optimizer: O, dataset: Dataset<Scalar>, validation: Dataset<Scalar>? = nil,
        test: Dataset<Scalar>? = nil, batchSize: Int, epochs: Int, seed: UInt64?
    ) throws {
        try Self.check(epochs: epochs, seed: seed, dataset: dataset)
        training = try MiniBatchTraining(network: network, optimizer: optimizer, dataset: dataset, batchSize: batchSize, seed: seed ?? 0)
        try Self.checkStepCount(epochs: epochs, batchesPerEpoch: training.batchesPerEpoch)
        self.validation = validation
        self.test = test
        totalEpochs = epochs
        self.seed = seed
        recordEvery = Self.recordEvery(epochs: epochs, dataset: dataset)
    }

    /// Training resumed where a checkpoint left it: network and optimizer as saved, the epoch
    /// order, generator and position as saved (for a run without a seed, `TrainingPosition.oneSample(after:)`),
    /// and the epochs recorded so far.
    /// - Throws: `DataError` or `NetworkError` when the saved state does not fit the data.
    public init(
        network: Network<Scalar>, optimizer: O, dataset: Dataset<Scalar>, validation: Dataset<Scalar>?,
        test: Dataset<Scalar>?, epochs: Int, seed: UInt64?, position: TrainingPosition, records: [EpochRecord]
    ) throws {
        try Self.check(epochs: epochs, seed: seed, dataset: dataset)
        training = try MiniBatchTraining(network: network, optimizer: optimizer, dataset: dataset, position: position)
        try Self.checkStepCount(epochs: epochs, batchesPerEpoch: training.batchesPerEpoch)
        self.validation = validation
        self.test = test
        totalEpochs = epochs
        self.seed = seed
        recordEvery = Self.recordEvery(epochs: epochs, dataset: dataset)
        self.records = records
        if let last = records.last, last.validationLoss != nil {
            lastValidation = Evaluation(loss: last.validationLoss!, accuracy: last.validationAccuracy, confusion: nil, count: validation?.count ?? 0)
        }
    }

    /// Training on windows of a document (nanoGPT's way, NeuronCore's
    /// `MiniBatchTraining.init(network:optimizer:document:windows:batchSize:stepsPerEpoch:seed:)`):
    /// an epoch is `stepsPerEpoch` steps, each on `batchSize` windows drawn at random from
    /// `document`, the training part's tokens, and ends with the validation loss, so a run of
    /// `epochs` epochs evaluates every `stepsPerEpoch` steps. `windows` is the training part's first
    /// consecutive windows (a gradient check's rows); `validation` and `test` the held-out parts as windows
    /// (`TextDocument.windows(_:blockSize:as:)`); `seed` draws the windows.
    /// - Throws: `NetworkError` or `DataError` when the data does not fit or a size is out of range.
    public init(
        network: Network<Scalar>, optimizer: O, document: TokenSequence, windows: Dataset<Scalar>, validation: Dataset<Scalar>?,
        test: Dataset<Scalar>?, batchSize: Int, stepsPerEpoch: Int, epochs: Int, seed: UInt64
    ) throws {
        guard epochs >= 0 else { throw DataError.invalidArgument(name: "epochs", value: "\(epochs)", expected: "at least 0") }
        training = try MiniBatchTraining(
            network: network, optimizer: optimizer, document: document, windows: windows, batchSize: batchSize, stepsPerEpoch: stepsPerEpoch,
            seed: seed)
        try Self.checkStepCount(epochs: epochs, batchesPerEpoch: training.batchesPerEpoch)
        (self.validation, self.test, totalEpochs, self.seed, recordEvery) = (validation, test, epochs, seed, 1)
    }

    /// Training on windows of a document resumed where a checkpoint left it.
    /// - Throws: `DataError` or `NetworkError` when the saved state does not fit the data.
    public init(
        network: Network<Scalar>, optimizer: O, document: TokenSequence, windows: Dataset<Scalar>, validation: Dataset<Scalar>?,
        test: Dataset<Scalar>?, epochs: Int, seed: UInt64, position: TrainingPosition, records: [EpochRecord]
    ) throws {
        guard epochs >= 0 else { throw DataError.invalidArgument(name: "epochs", value: "\(epochs)", expected: "at least 0") }
        training = try MiniBatchTraining(network: network, optimizer: optimizer, document: document, windows: windows, position: position)
        try Self.checkStepCount(epochs: epochs, batchesPerEpoch: training.batchesPerEpoch)
        (self.validation, self.test, totalEpochs, self.seed, recordEvery) = (validation, test, epochs, seed, 1)
        self.records = records
        if let last = records.last, last.validationLoss != nil {
            lastValidation = Evaluation(loss: last.validationLoss!, accuracy: last.validationAccuracy, confusion: nil, count: validation?.count ?? 0)
        }
    }

    /// At least one epoch; no seed only for one sample, whose position a checkpoint need not save.
    private static func check(epochs: Int, seed: UInt64?, dataset: Dataset<Scalar>) throws(DataError) {
        // 0 epochs: the network as given (a counted table) is only evaluated.
        guard epochs >= 0 else { throw .invalidArgument(name: "epochs", value: "\(epochs)", expected: "at least 0") }
        guard seed != nil || dataset.count == 1 else {
            throw .invalidArgument(name: "seed", value: "none", expected: "a seed for \(dataset.count) samples (only one sample has a single order)")
        }
    }

    private static func recordEvery(epochs: Int, dataset: Dataset<Scalar>) -> Int { dataset.count == 1 ? max(1, epochs / 100) : 1 }

    /// `epochs × batchesPerEpoch` steps must be countable (`maximumStepCount`): ``totalSteps`` is their product.
    private static func checkStepCount(epochs: Int, batchesPerEpoch: Int) throws(DataError) {
        guard stepCount(epochs: epochs, stepsPerEpoch: batchesPerEpoch) == nil else { return }
        throw .invalidArgument(
            name: "epochs", value: "\(epochs)",
            expected:
                "at most \(maximumStepCount / batchesPerEpoch) (epochs × \(batchesPerEpoch) batches per epoch are counted to \(maximumStepCount) steps)"
        )
    }

    /// The evaluation a run ends with: on the test rows when there are any, else on the validation rows.
    public func finalEvaluation() throws -> (name: String, evaluation: Evaluation)? {
        var network = training.network
        if let test { return ("test", try network.evaluate(test)) }
        // A document run that ends at an evaluation has just measured the exact loss over every
        // validation character: the same number again would cost a pass over the whole part.
        if training.document != nil, validationEstimate == nil, let lastValidation, records.last?.step == stepsTaken {
            return ("validation", lastValidation)
        }
        if let validation { return ("validation", try network.evaluate(validation)) }
        return nil
    }

    public func validationEvaluation() throws -> Evaluation? {
        var network = training.network
        return try validation.map { try network.evaluate($0) }
    }

    public var title: String { training.network.description }
    public var samplesPerStep: Int {
        training.document != nil || training.batches.batchSize < training.dataset.count ? training.batches.batchSize : training.dataset.count
    }
    public var stepsTaken: Int { training.stepsTaken }
    public var totalSteps: Int { totalEpochs * training.batchesPerEpoch }
    public var epoch: Int { training.epoch }
    public var learningRate: Double { Double(training.optimizer.scheduledLearningRate) }
    /// The network as trained so far.
    public var network: Network<Scalar> { training.network }
    /// The largest global gradient norm a step takes (`MiniBatchTraining.maximumGradientNorm`); nil: no clipping.
    public var maximumGradientNorm: Double? {
        get { training.maximumGradientNorm }
        set { training.maximumGradientNorm = newValue }
    }

    public mutating func step() -> Double { recorded(Double(training.step())) }

    /// One step of which this engine computes only a share of the batch, `combine` making the
    /// whole batch's gradients and totals from it (`MiniBatchTraining.step(share:combine:)`);
    /// recorded as ``step()`` records its steps.
    public mutating func step(
        share: (_ batch: Range<Int>) -> Range<Int>, combine: (_ gradients: inout [Scalar], _ totals: inout BatchTotals) -> Void
    ) -> Double {
        recorded(Double(training.step(share: share, combine: combine)))
    }

    /// Replaces every number that decides the next step besides the position — the parameters,
    /// the state, the optimizer's buffers in the order of their names — by what `body` leaves in
    /// it (buffers of the same lengths): how processes that train together start from one's state.
    /// - Throws: `OptimizerError` when `body` changed an optimizer buffer's length.
    public mutating func replaceState(_ body: (inout [Scalar]) -> Void) throws {
        var network = training.network, optimizer = training.optimizer
        body(&network.parameters)
        body(&network.state)
        var state = optimizer.state
        for name in state.keys.sorted() { body(&state[name]!) }
        try optimizer.restore(state: state, step: optimizer.step)
        (training.network, training.optimizer) = (network, optimizer)
    }

    /// A step's loss, and at a recorded epoch's end the validation and the epoch's record.
    private mutating func recorded(_ loss: Double) -> Double {
        guard training.batchIndex == 0, loss.isFinite, training.epoch % recordEvery == 0 || training.epoch == totalEpochs else { return loss }
        if let validationEstimate {
            lastValidation = try? training.network.evaluate(validationEstimate.windows(afterEpoch: training.epoch))
        } else if let validation {
            // Shapes were checked when training was set up; validation rows share the features.
            lastValidation = try? training.network.evaluate(validation)
        }
        if let lineSampler { sampledLines = lineSampler.draw(from: training.network, epoch: training.epoch) }
        let progress = training.epochProgress
        records.append(
            EpochRecord(
                epoch: training.epoch, step: training.stepsTaken, trainingLoss: progress.meanLoss,
                trainingAccuracy: training.dataset.isClassification ? progress.accuracy : nil,
                validationLoss: lastValidation?.loss, validationAccuracy: lastValidation?.accuracy))
        return loss
    }

    public func snapshot() -> TrainingSnapshot {
        var snapshot = TrainingSnapshot(progressOf: self)
        (snapshot.validationLoss, snapshot.validationAccuracy) = (lastValidation?.loss, lastValidation?.accuracy)
        snapshot.layers = training.network.layerStatistics()
        snapshot.neuron = neuronRow()
        snapshot.sampledLines = sampledLines
        snapshot.tokensPerCharacter = tokensPerCharacter
        return snapshot
    }

    /// Docs/Reference.md §1's row of the single neuron, worked by `Neuron` (the hand-checkable
    /// object) at the network's weight and bias: when the network is one tanh unit under half the
    /// squared error, trained on one sample.
    private func neuronRow() -> TrainingSnapshot.NeuronRow? {
        let network = training.network, dataset = training.dataset
        guard network.layers.count == 1, let dense = network.layers[0] as? Dense<Scalar>, dense.inputs == 1, dense.outputs == 1, dense.time == nil,
            dense.activation == .tanh, network.loss == .halfSquaredError, dataset.count == 1
        else { return nil }
        let (input, target) = (Double(dataset.features.scalars[0]), Double(dataset.targets.scalars[0]))
        let neuron = Neuron(weight: Double(network.parameters[0]), bias: Double(network.parameters[1]))  // weight (1, 1), then bias
        let forward = try! neuron.forward(inputs: [input], target: target)  // one weight, one input
        let g = neuron.backward(forward)
        return TrainingSnapshot.NeuronRow(
            input: input, weight: neuron.weights[0], bias: neuron.bias, target: target,
            net: forward.net, output: forward.output, error: forward.error, loss: forward.loss,
            outputGradient: g.output, netGradient: g.net, weightGradient: g.weights[0], inputGradient: g.inputs[0])
    }

    public func resumePoint() -> ResumePoint<Scalar> {
        let network = training.network, optimizer = training.optimizer, position = training.position
        let parameters =
            network.parameterTensors.map { (name: $0.name, tensor: network.parameter($0)) }
            + network.stateTensors.map { (name: $0.name, tensor: network.stateTensor($0)) }
        let buffers = optimizer.state.sorted { $0.key < $1.key }.map { (name: "optimizer.\($0.key)", tensor: Tensor(vector: $0.value)) }
        var point = ResumePoint(
            network: network.description, tensors: parameters + buffers, progress: RunProgress(of: self),
            position: seed == nil ? nil : position, optimizerStep: optimizer.step, featureNames: training.dataset.featureNames,
            classNames: training.dataset.classNames, records: records)
        for t in network.parameterTensors + network.stateTensors { point.pytorchOrders[t.name] = t.pytorchOrder }
        point.vocabulary = vocabulary ?? lineSampler?.vocabulary
        return point
    }

    public func divergenceLocation() -> String { training.network.divergenceLocation() }

    public func checkGradients() throws -> GradientCheckReport {
        // Large networks are checked on a sample of each tensor: a full check would take minutes.
        let sampled = training.network.parameterCount > 5_000 ? 16 : nil
        return try gradientCheck(try GradientCheck(samplesPerTensor: sampled, seed: seed ?? 0), batchSize: 16)
    }

    public func gradientCheck(_ check: GradientCheck, batchSize: Int) throws -> GradientCheckReport {
        let batch = training.dataset.subset(Array(0..<min(max(batchSize, 1), training.dataset.count)))
        return try check.run(on: training.network, inputs: batch.features, targets: batch.targets)
    }
}

extension TrainingPosition {
    /// Where training on one sample stands after `step` steps: every epoch is the one step on it,
    /// in its one order. What a run without a seed resumes from, its checkpoint saving no position.
    public static func oneSample(after step: Int) -> TrainingPosition {
        TrainingPosition(
            batches: try! MiniBatches(count: 1, batchSize: 1), generator: SeededGenerator(seed: 0), epoch: step, batchIndex: 0,  // valid sizes
            stepsTaken: step, epochProgress: EpochProgress())
    }
}
