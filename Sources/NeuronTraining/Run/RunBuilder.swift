// From a config (and, to resume, a checkpoint) to a run ready to train.
import Foundation
import NeuronCore

/// What went wrong assembling a run, or its files.
public enum RunError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A checkpoint that does not belong to this config or data.
    case checkpointMismatch(path: String, reason: String)
    /// An output directory that already holds a run, which would be overwritten.
    case outputExists(path: String)
    /// Anything else, said in full.
    case invalid(String)

    public var description: String {
        switch self {
        case let .checkpointMismatch(path, reason): "\(path): cannot resume: \(reason)"
        case let .outputExists(path):
            "\(path) already holds a run (checkpoint.safetensors); resume it with --resume \(path), or choose another --output"
        case let .invalid(message): message
        }
    }
}

/// A run as built from a config: the engine that trains, and what it was built from that a
/// checkpoint saves beside the engine's own state.
public struct Run: Sendable {
    /// What trains: a network on its data (the single neuron among them).
    public var engine: any TrainingEngine
    /// The config the run was built from, as written (a neuron config as sugar), as its checkpoints save it.
    public let config: RunConfig
    /// The preprocessing fitted on the training rows (`none` for the neuron's one sample).
    public let preprocessing: Preprocessing
    /// The command-line settings `config` holds over its file's, which the run's checkpoints save.
    public var overrides = RunOverrides()
    /// Whether the run stops at a step boundary, given whether this process was asked to: nil (a
    /// run alone) stops as soon as asked; processes that train together (`NeuronDistributed`) all
    /// stop after the same step.
    public var agreesToStop: (@Sendable (_ asked: Bool) -> Bool)?

    /// The data files the run reads, for its checkpoints; nil for synthetic data.
    public var data: DataFingerprint?
    /// What a person starting the run should know before it trains (``StepCost/warning(rates:)``:
    /// a step that would take more than ten minutes); the CLI prints each on standard error.
    public var warnings: [String] = []
    /// Seconds of training before this run started: a resumed run's earlier segments, as its run
    /// directory's summary recorded them (``RunOutputs/trainedSeconds(upTo:)``); 0 for a new run.
    public var earlierSeconds = 0.0

    public init(engine: any TrainingEngine, config: RunConfig, preprocessing: Preprocessing, data: DataFingerprint? = nil) {
        (self.engine, self.config, self.preprocessing, self.data) = (engine, config, preprocessing, data)
    }
}

/// Builds runs from configs.
public enum RunBuilder {
    /// A run as `config` says, or, with `resume`, the run exactly where the checkpoint left it.
    /// - Parameters:
    ///   - config: the run's config.
    ///   - resume: the checkpoint to go on from; nil for a new run.
    ///   - dataChanged: go on from `resume` even when its data files have changed since it was
    ///     written (their sizes or CRC-32s differ); refused otherwise.
    /// - Throws: `DataError`, `NetworkError`, `OptimizerError`, ``CheckpointError`` or
    ///   ``RunError`` saying what does not fit; `BLAS.KernelMismatch` when this machine's BLAS kernels compute wrong products.
    public static func build(_ config: RunConfig, resume: LoadedCheckpoint? = nil, dataChanged: Bool = false) throws -> Run {
        try BLAS.checkKernels()
        switch config.desugared.training.precision {
        case .float: return try network(Float.self, config, resume, dataChanged: dataChanged)
        case .double: return try network(Double.self, config, resume, dataChanged: dataChanged)
        }
    }

    /// The run of `written` (saved as written, a neuron config as sugar), built from its desugared config.
    private static func network<Scalar: TensorScalar>(
        _: Scalar.Type, _ written: RunConfig, _ resume: LoadedCheckpoint?, dataChanged: Bool
    ) throws -> Run {
        var config = written.desugared, saved = written
        let origin = config.origin
        let scalarBytes = MemoryLayout<Scalar>.size
        try checkPrecision(Scalar.self, config, origin: origin)
        if config.data.kind == .synthetic, config.data.name == .sine {
            // The one dataset whose size the config alone sets: check it before drawing it.
            let count = config.data.count ?? 256
            var budget = MemoryBudget()
            budget.data = MemoryBudget.data(count: count, features: 1, targets: 1, scalarBytes: scalarBytes)
            try checkFits(budget, origin: origin, key: "data.count", change: "lower data.count")
        }
        let fingerprint = try DataFingerprint(config.data)
        if let resume, !dataChanged, let saved = resume.state.data,
            let differences = fingerprint.map({ $0.differences(from: saved) }) ?? "its files are no longer read"
        {
            throw RunError.checkpointMismatch(
                path: resume.path,
                reason:
                    "the data changed since the checkpoint was written: \(differences); resuming on other data would not go on as the run did (give --data-changed to go on with the new data, or start a new run)"
            )
        }
        let data = try RunData<Scalar>(config.data, seed: config.training.seed, origin: origin)
        let features = data.training.featureCount
        if let declared = config.model.inputs, declared != features {
            throw origin.error(at: "model.inputs", "model.inputs is \(declared) but the data has \(features) features\(data.source)")
        }
        if config.model.takesImages {
            // The image shape a sample is read as: the config's, else the files' (IDX); recorded
            // in the config the run saves, so that evaluate and predict rebuild the same network.
            if let shape = config.model.inputShape {
                let values = ModelConfig.valueCount(shape)
                guard values == features else {
                    let holds = values.map { "\($0) values per sample" } ?? "more values per sample than can be counted"
                    throw origin.error(
                        at: "model.inputShape", "model.inputShape \(shape) holds \(holds) but the data has \(features) features\(data.source)")
                }
                // The files' own shape: the same pixels read as another shape are another image.
                if let files = data.imageShape, files != shape {
                    throw origin.error(
                        at: "model.inputShape",
                        "model.inputShape \(shape) is not the shape of the images in the files, \(files)\(data.source); give \(files) or leave model.inputShape out"
                    )
                }
            } else if let shape = data.imageShape {
                config.model.inputShape = shape
                saved.model.inputShape = shape
            } else {
                throw origin.error(
                    at: "model.layers",
                    "model.inputShape: the model has image layers (conv2d, pools, flatten) but the data's rows are \(features) features\(data.source); give the shape of a sample as model.inputShape: [height, width, channels]"
                )
            }
        }
        // Compared once the image shape is filled in from the files, as the saved config holds it.
        try checkModel(saved.model, against: resume)
        if let resume, resume.state.featureNames != data.training.featureNames {
            throw RunError.checkpointMismatch(
                path: resume.path,
                reason:
                    "the data's features (\(Self.names(data.training.featureNames))) are not the checkpoint's (\(Self.names(resume.state.featureNames)))\(data.source)"
            )
        }
        if let resume, resume.state.vocabulary != data.vocabulary {
            let saved = resume.state.vocabulary.map { "\($0)" } ?? "none", read = data.vocabulary.map { "\($0)" } ?? "none"
            throw RunError.checkpointMismatch(
                path: resume.path, reason: "the data's tokens, \(read), are not the checkpoint's, \(saved)\(data.source) (did the file change?)")
        }
        let last = config.model.layers.count - 1
        // A text model's output at each position is a score per token of the vocabulary.
        let vocabulary = data.vocabulary?.count
        let outputs = vocabulary ?? data.training.outputCount
        let what =
            vocabulary == nil
            ? "targets per sample"
            : data.vocabulary?.tokenizer != nil ? "tokens of its tokenizer" : "tokens in its vocabulary (the characters seen and the boundary token)"
        if last >= 0, config.model.layers[last].kind == .dense, let units = config.model.layers[last].units, units != outputs {
            throw origin.error(
                at: "model.layers[\(last)].units",
                "model.layers[\(last)].units: the last layer has \(units) units but the data has \(outputs) \(what)\(data.source)")
        }
        // The layers first (small values, nothing sized yet): their shapes size the memory budget.
        let layers: [any Layer<Scalar>]
        do {
            layers = try config.model.layers(Scalar.self, features: features, vocabulary: vocabulary)
        } catch {
            throw origin.error(at: error.path, "\(error)")
        }
        // A text model's per position (its last dimension), any other's per sample (all of it).
        if let shape = layers.last?.outputShape, case let given = vocabulary == nil ? shape.reduce(1, *) : shape[shape.count - 1], given != outputs {
            throw origin.error(
                at: "model.layers[\(last)]",
                "model.layers[\(last)]: the last layer gives \(given) outputs per \(vocabulary == nil ? "sample" : "position") but the data has \(outputs) \(what)\(data.source)"
            )
        }
        if data.document != nil, let position = resume?.state.position {
            // A resumed document run keeps its interval: its position holds the interval's window starts.
            let saved = position.batches.count / max(1, position.batches.batchSize), steps = config.training.steps!
            if let every = written.training.evaluateEvery, every != saved {
                throw origin.error(
                    at: "training.evaluateEvery",
                    "training.evaluateEvery: \(every), but the run being resumed evaluates every \(saved) steps (\(resume!.path)); a resumed run keeps its interval: give training.evaluateEvery: \(saved), or train a new run"
                )
            }
            guard steps % saved == 0 else {
                throw origin.error(
                    at: "training.steps",
                    "training.steps: \(steps) is not a whole number of the resumed run's intervals of \(saved) steps (\(resume!.path)); give a multiple of \(saved)"
                )
            }
            (config.training.evaluateEvery, config.training.epochs) = (saved, steps / saved)
        }
        // A document's epoch is its evaluation interval (the loader requires steps, which `desugared`
        // made epochs), of batches of windows drawn with replacement: as many as asked, whatever the
        // text's length.
        let batchSize = data.document != nil ? config.training.batchSize : min(config.training.batchSize, data.training.count)
        let interval =
            data.document == nil ? nil : config.training.evaluateEvery ?? TrainingConfig.defaultEvaluateEvery(steps: config.training.steps!)
        if let every = interval {
            // An interval draws its steps × batch window starts at once (`MiniBatches(windows:count:batchSize:)`).
            var starts = MemoryBudget()
            starts.data = every.times(config.training.batchSize).times(MemoryLayout<Int>.size)
            let key = written.training.evaluateEvery != nil ? "training.evaluateEvery" : "training.batchSize"
            try checkFits(
                starts, origin: origin, key: key,
                change:
                    "each evaluation interval draws training.evaluateEvery (\(every)) × training.batchSize (\(config.training.batchSize)) window starts; use a smaller training.batchSize or training.evaluateEvery"
            )
        }
        var budget = MemoryBudget()
        budget.data = MemoryBudget.data(
            count: data.training.count + (data.validation?.count ?? 0) + (data.test?.count ?? 0), features: features,
            targets: data.training.outputCount, scalarBytes: scalarBytes)
        if let document = data.document {
            // A document's steps read its tokens themselves: a byte or two a character.
            budget.data = budget.data.adding(document.text.count.times(document.text.tokens.bytesPerToken))
        }
        // Evaluation forwards the validation and test rows 256 at a time, or a sequence model's 4,096
        // positions at a time (`Network.evaluationBatchSize`).
        let evaluationRows = vocabulary != nil ? max(1, min(256, 4096 / max(1, features))) : 256
        let evaluationBatch = min(evaluationRows, max(data.validation?.count ?? 0, data.test?.count ?? 0))
        budget.addNetwork(
            layers, features: features,
            batchSize: max(batchSize, evaluationBatch), optimizer: config.optimizer,
            scalarBytes: scalarBytes)
        if budget.data > budget.parameters.adding(budget.activations).adding(budget.caches) {
            try checkFits(budget, origin: origin, key: "data.limit", change: "use fewer rows (data.limit)")
        } else if config.model.transformer != nil {
            // Attention's weights grow with the square of the block, the rest with features.
            let key = budget.caches > budget.activations ? "data.blockSize" : "model.transformer.features"
            try checkFits(
                budget, origin: origin, key: key, change: "use a smaller data.blockSize, fewer features or a smaller training.batchSize")
        } else {
            let widest = layers.indices.max { layers[$0].outputShape.reduce(1, *) < layers[$1].outputShape.reduce(1, *) } ?? 0
            let key = config.model.layers[widest].kind == .conv2d ? "filters" : "units"
            try checkFits(budget, origin: origin, key: "model.layers[\(widest)].\(key)", change: "use fewer \(key) or a smaller training.batchSize")
        }
        var network: Network<Scalar>
        do {
            network = try config.model.network(features: features, vocabulary: vocabulary, seed: config.training.seed)
        } catch {
            throw origin.error(at: error.path, "\(error)")
        }
        network.batchThreads = config.training.batchThreads ?? 1
        if config.training.products == .bf16 {
            // The machine's part of the check (the loader has checked the config's): oneDNN built
            // in, the CPU's instructions, and oneDNN's products right on them.
            if let refusal = BLAS.bf16Refusal { throw origin.error(at: "training.products", "training.products: bf16: \(refusal)") }
            try BLAS.checkBF16Products()
            network.products = .bf16
        }
        if config.training.fit == .counts, resume == nil, let text = data.text {
            // The loader allows counting only for a bigram model, one embedding of the vocabulary's size.
            let table = BigramCounts(text.corpus, lines: text.training).logits(smoothing: config.training.smoothing ?? 1)
            network.parameters = table.map { Scalar($0) }
        }
        if let resume {
            guard resume.state.precision == TrainingConfig.Precision(Scalar.self) else {
                throw RunError.checkpointMismatch(path: resume.path, reason: "the checkpoint is in \(resume.state.precision) precision")
            }
            guard resume.state.preprocessing == data.preprocessing else {
                throw RunError.checkpointMismatch(
                    path: resume.path, reason: "the data's statistics differ from the checkpoint's (did the data files change?)")
            }
            try network.loadParameters(from: resume)
        }

        if let document = data.document, config.training.evaluation == .estimate, let block = config.data.blockSize,
            document.validation.count <= block
        {
            throw origin.error(
                at: "training.evaluation",
                "training.evaluation: estimate draws windows of data.blockSize \(block) from the validation part, but it holds \(document.validation.count) characters\(data.source); use evaluation: exact (every validation character once) or a larger data.validationSplit"
            )
        }
        let stepsPerEpoch = interval ?? (data.training.count + batchSize - 1) / batchSize
        // A counted table takes no step: the run evaluates it.
        let epochs = config.training.fit == .counts ? 0 : config.training.epochs
        // Steps are counted to `maximumStepCount`: the run's, and a step schedule's interval.
        guard stepCount(epochs: epochs, stepsPerEpoch: stepsPerEpoch) != nil else {
            let key = saved.training.iterations != nil ? "training.iterations" : "training.epochs"  // the neuron's name for its epochs
            throw origin.error(
                at: key,
                "\(key): \(epochs) epochs of \(stepsPerEpoch) steps are more steps than can be counted; expected at most \(maximumStepCount / stepsPerEpoch)"
            )
        }
        if config.optimizer.schedule.kind == .step, let every = config.optimizer.schedule.every,
            stepCount(epochs: every, stepsPerEpoch: stepsPerEpoch) == nil
        {
            throw origin.error(
                at: "optimizer.schedule.every",
                "optimizer.schedule.every: every \(every) epochs of \(stepsPerEpoch) steps is more steps than can be counted; expected at most \(maximumStepCount / stepsPerEpoch)"
            )
        }
        let runSteps = max(1, epochs) * stepsPerEpoch  // as the schedule counts them (a counted table's one epoch)
        if let warmup = config.optimizer.schedule.warmupSteps, warmup >= runSteps {
            throw origin.error(
                at: "optimizer.schedule.warmupSteps",
                "optimizer.schedule.warmupSteps: \(warmup) steps of warmup are not fewer than the run's \(runSteps) (\(max(1, epochs)) epochs of \(stepsPerEpoch) steps); expected at most \(runSteps - 1)"
            )
        }

        // The config's optimizer arrives as `any Optimizer<Scalar>` and is opened here, so that the
        // engine is built for its concrete type (`NetworkTrainingEngine<Scalar, SGD<Scalar>>`).
        func run<O: Optimizer>(_ fresh: O) throws -> Run where O.Scalar == Scalar {
            var optimizer = fresh
            var engine: NetworkTrainingEngine<Scalar, O>
            // Nothing is drawn for given parameters on one sample (the neuron): no seed to claim.
            let seed = config.model.startingParameters != nil && data.trainingSampleCount == 1 ? nil : config.training.seed
            if let document = data.document {
                let tokens = document.text.tokens.part(document.training)
                if let resume, let position = resume.state.position {
                    try optimizer.restore(state: try resume.optimizerState(Scalar.self), step: resume.state.optimizerStep)
                    engine = try NetworkTrainingEngine(
                        network: network, optimizer: optimizer, document: tokens, windows: data.training, validation: data.validation,
                        test: data.test, epochs: epochs, seed: config.training.seed, position: position, records: resume.state.records)
                } else {
                    engine = try NetworkTrainingEngine(
                        network: network, optimizer: optimizer, document: tokens, windows: data.training, validation: data.validation,
                        test: data.test, batchSize: batchSize, stepsPerEpoch: stepsPerEpoch, epochs: epochs, seed: config.training.seed)
                }
                if config.training.evaluation == .estimate, let block = config.data.blockSize, document.validation.count > block {
                    engine.validationEstimate = WindowEstimate(
                        document: document.text.tokens.part(document.validation), blockSize: block,
                        batches: config.training.evaluationBatches ?? 20, batchSize: batchSize, seed: config.training.seed)
                }
            } else if let resume {
                let position = resume.state.position ?? .oneSample(after: resume.state.progress.step)
                try optimizer.restore(state: try resume.optimizerState(Scalar.self), step: resume.state.optimizerStep)
                engine = try NetworkTrainingEngine(
                    network: network, optimizer: optimizer, dataset: data.training, validation: data.validation, test: data.test,
                    epochs: epochs, seed: seed, position: position, records: resume.state.records)
            } else {
                engine = try NetworkTrainingEngine(
                    network: network, optimizer: optimizer, dataset: data.training, validation: data.validation, test: data.test,
                    batchSize: batchSize, epochs: epochs, seed: seed)
            }
            engine.maximumGradientNorm = config.training.clipGradientNorm
            engine.vocabulary = data.vocabulary
            if let document = data.document {
                engine.tokensPerCharacter = TokensPerCharacter(
                    document.text, parts: (document.training, document.validation, document.test))
                var sampler = LineSampler(
                    vocabulary: document.text.vocabulary, trainingLines: [], count: min(1, config.output.samples ?? 5), seed: config.training.seed)
                sampler.passageLength = 300
                engine.lineSampler = sampler
            } else if let text = data.text {
                engine.lineSampler = LineSampler(
                    vocabulary: text.corpus.vocabulary, trainingLines: Set(text.training.map { text.corpus.lines[$0] }),
                    count: config.output.samples ?? 5, seed: config.training.seed)
            }
            var run = Run(engine: engine, config: saved, preprocessing: data.preprocessing, data: fingerprint)
            let cost = StepCost(layers: layers, batch: batchSize)
            if let warning = cost.warning(rates: cost.rates) { run.warnings.append(warning) }
            return run
        }
        return try run(
            config.optimizer.optimizer(Scalar.self, stepsPerEpoch: stepsPerEpoch, epochs: max(1, epochs), decayedRanges: network.decayedRanges))
    }

    /// `names` for a message: the first five, then how many in all.
    static func names(_ names: [String]) -> String {
        names.count <= 5 ? names.joined(separator: ", ") : names.prefix(5).joined(separator: ", ") + ", … (\(names.count) in all)"
    }

    /// Throws unless `resume` (when given) saved the same model as `model`.
    private static func checkModel(_ model: ModelConfig, against resume: LoadedCheckpoint?) throws(RunError) {
        if let resume, resume.state.config.model != model {
            throw RunError.checkpointMismatch(path: resume.path, reason: "the checkpoint's model (\(resume.state.network)) differs from the config's")
        }
    }

    /// Throws at the first optimizer number that is finite as written but not in the run's
    /// precision (`OptimizerConfig.checkPrecision(_:)`, a checkpoint's check too), with what to do.
    private static func checkPrecision<Scalar: TensorScalar>(_: Scalar.Type, _ config: RunConfig, origin: ConfigOrigin) throws(ConfigError) {
        let precision = TrainingConfig.Precision(Scalar.self)
        do {
            try config.optimizer.checkPrecision(precision)
        } catch {
            throw origin.error(
                at: error.key,
                "\(error.key): \(error.value) is beyond \(precision.rawValue) precision (at most about \(Scalar.greatestFiniteMagnitude)); write a smaller value or use training.precision: double"
            )
        }
    }

    /// Throws at `key` when `budget` exceeds the machine's physical memory, giving both figures.
    private static func checkFits(_ budget: MemoryBudget, origin: ConfigOrigin, key: String, change: String) throws(ConfigError) {
        let memory = MemoryBudget.physicalMemory
        guard budget.total > memory else { return }
        let parts = [
            ("parameters, gradients and optimizer state", budget.parameters), ("activations", budget.activations),
            ("caches such as attention weights", budget.caches), ("data", budget.data),
        ]
        .filter { $0.1 > 0 }.map { "\($0.0) \(MemoryBudget.text($0.1))" }.joined(separator: ", ")
        let needed = budget.total == .max ? "more memory than can be counted" : "about \(MemoryBudget.text(budget.total)) of memory"
        throw origin.error(at: key, "\(key): the run needs \(needed) (\(parts)) but this machine has \(MemoryBudget.text(memory)); \(change)")
    }

    /// The checkpoint's network evaluated on the rows `data` names (its test rows when it has
    /// them, else all its rows, of any count), preprocessed with the statistics fitted when the
    /// checkpoint was trained: a trained model on held-out data. `source` (the config's path) names
    /// the data in messages.
    /// - Throws: ``RunError`` when the rows' features or classes are not the checkpoint's, and what
    ///   reading the data throws.
    public static func evaluation(of saved: LoadedCheckpoint, on data: DataConfig, from source: String) throws -> (
        name: String, evaluation: Evaluation
    ) {
        switch saved.state.precision {
        case .float: try evaluation(Float.self, of: saved, on: data, from: source)
        case .double: try evaluation(Double.self, of: saved, on: data, from: source)
        }
    }

    private static func evaluation<Scalar: TensorScalar>(
        _: Scalar.Type, of saved: LoadedCheckpoint, on data: DataConfig, from source: String
    ) throws -> (name: String, evaluation: Evaluation) {
        // Raw rows, none held out: the checkpoint's own preprocessing is applied below.
        var raw = data
        // Text keeps its split: its test lines are the ones drawn from the run's seed.
        if data.kind != .text { (raw.normalization, raw.validationSplit) = (DataConfig.Normalization.none, 0) }
        let rows = try RunData<Scalar>(raw, seed: saved.state.progress.seed ?? 0)
        var (name, dataset) = rows.test.map { ("test", $0) } ?? ("data", rows.training)
        guard dataset.featureCount == saved.state.featureNames.count else {
            throw RunError.invalid(
                "\(saved.path): cannot evaluate on \(source): its data has \(dataset.featureCount) features but the model was trained on \(saved.state.featureNames.count)"
            )
        }
        guard dataset.featureNames == saved.state.featureNames else {
            throw RunError.invalid(
                "\(saved.path): cannot evaluate on \(source): the data's features (\(names(dataset.featureNames))) are not the model's (\(names(saved.state.featureNames)))\(rows.source)"
            )
        }
        if let files = rows.imageShape, let shape = saved.state.config.model.inputShape, saved.state.config.model.takesImages, files != shape {
            throw RunError.invalid(
                "\(saved.path): cannot evaluate on \(source): the data's images are \(files) but the model takes \(shape)\(rows.source)")
        }
        guard dataset.classNames == saved.state.classNames else {
            throw RunError.invalid(
                "\(saved.path): cannot evaluate on \(source): its data's classes (\(dataset.classNames?.joined(separator: ", ") ?? "none")) are not the model's (\(saved.state.classNames?.joined(separator: ", ") ?? "none"))"
            )
        }
        try saved.state.preprocessing.apply(to: &dataset.features)
        var network = try Prediction<Scalar>.network(saved)
        return (name, try network.evaluate(dataset))
    }
}

extension LoadedCheckpoint {
    /// The optimizer's buffers as saved (`optimizer.<name>`), by name.
    func optimizerState<Scalar: TensorScalar>(_: Scalar.Type) throws -> [String: [Scalar]] {
        var state: [String: [Scalar]] = [:]
        for (name, entry) in tensors where name.hasPrefix("optimizer.") {
            state[String(name.dropFirst("optimizer.".count))] = try entry.tensor(as: Scalar.self, source: path).scalars
        }
        return state
    }
}
