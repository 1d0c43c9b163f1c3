// One schema for every run, read from YAML or JSON. Every key has a default except what names
// the model and the data; `ConfigLoader` rejects unknown keys (suggesting the nearest valid one)
// and values out of range, naming the file, line and column.

/// A training run: model, data, optimizer, training and output.
public struct RunConfig: Sendable, Equatable, Codable {
    public var model: ModelConfig
    public var data: DataConfig
    public var optimizer: OptimizerConfig = OptimizerConfig()
    public var training: TrainingConfig = TrainingConfig()
    public var output: OutputConfig = OutputConfig()

    public init(model: ModelConfig, data: DataConfig, optimizer: OptimizerConfig = OptimizerConfig(),
                training: TrainingConfig = TrainingConfig(), output: OutputConfig = OutputConfig()) {
        (self.model, self.data, self.optimizer, self.training, self.output) = (model, data, optimizer, training, output)
    }
}

/// The network, or the single neuron.
public struct ModelConfig: Sendable, Equatable, Codable {
    /// Features per sample; inferred from the data when absent.
    public var inputs: Int?
    /// Dense layers, input side first. Empty when `neuron` is set.
    public var layers: [LayerConfig] = []
    /// `halfSquaredError` or `softmaxCrossEntropy`; default: cross-entropy after a softmax output, else half-squared-error.
    public var loss: String?
    /// The single neuron of SPEC §1–3 instead of layers: its starting weight and bias.
    public var neuron: NeuronConfig?

    public init(inputs: Int? = nil, layers: [LayerConfig] = [], loss: String? = nil, neuron: NeuronConfig? = nil) {
        (self.inputs, self.layers, self.loss, self.neuron) = (inputs, layers, loss, neuron)
    }
}

/// One dense layer.
public struct LayerConfig: Sendable, Equatable, Codable {
    /// Outputs of the layer, at least 1.
    public var units: Int
    /// `tanh` (default), `sigmoid`, `relu`, `identity`, or `softmax` (output layer only).
    public var activation: String = "tanh"

    public init(units: Int, activation: String = "tanh") { (self.units, self.activation) = (units, activation) }
}

/// The single neuron's starting parameters.
public struct NeuronConfig: Sendable, Equatable, Codable {
    public var weight: Double = 0.5
    public var bias: Double = 0.5
    public init(weight: Double = 0.5, bias: Double = 0.5) { (self.weight, self.bias) = (weight, bias) }
}

/// Where the samples come from.
public struct DataConfig: Sendable, Equatable, Codable {
    /// `csv`, `idx`, `synthetic`, or `sample` (one input/target pair, for the neuron).
    public var kind: String
    // csv
    /// The CSV file (relative paths are relative to the config file's folder).
    public var path: String?
    /// The CSV column holding the target.
    public var labelColumn: String?
    /// `classification` (default) or `regression`.
    public var task: String?
    /// The CSV feature columns; default: every other column.
    public var featureColumns: [String]?
    // idx
    /// The IDX training images (gzip or raw; relative paths as for `path`).
    public var trainImages: String?
    /// The IDX training labels.
    public var trainLabels: String?
    /// The IDX test images; with `testLabels` or not at all.
    public var testImages: String?
    /// The IDX test labels; with `testImages` or not at all.
    public var testLabels: String?
    // synthetic
    /// `xor` or `sine`.
    public var name: String?
    /// Samples to draw (sine), default 256.
    public var count: Int?
    // sample (the neuron)
    /// The neuron's one input (SPEC §3: 0.01).
    public var input: Double?
    /// The output the neuron should learn to give for `input` (SPEC §3: 0.1).
    public var target: Double?
    // common
    /// `standardize` (default for csv and synthetic sine), `scale` (idx: pixels / 255, the default there), or `none`.
    public var normalization: String?
    /// Share of training rows held out for validation, in [0, 1); default 0.1 (0 for xor and sample).
    public var validationSplit: Double?
    /// Use only the first `limit` training rows (quick experiments).
    public var limit: Int?

    public init(kind: String) { self.kind = kind }
}

/// How parameters move.
public struct OptimizerConfig: Sendable, Equatable, Codable {
    /// `sgd` (default) or `adam`.
    public var kind: String = "sgd"
    /// The base step size, finite and > 0.
    public var learningRate: Double = 0.01
    /// SGD only, in [0, 1).
    public var momentum: Double = 0
    /// SGD only; needs momentum > 0.
    public var nesterov: Bool = false
    /// Adam only: the gradient average's decay, in [0, 1).
    public var beta1: Double = 0.9
    /// Adam only: the squared gradient average's decay, in [0, 1).
    public var beta2: Double = 0.999
    /// Adam only: the denominator's floor, > 0.
    public var epsilon: Double = 1e-8
    /// L2 weight decay, ≥ 0 (Adam: decoupled when `decoupled` is true, i.e. AdamW).
    public var weightDecay: Double = 0
    /// Adam only: AdamW's decoupled weight decay instead of L2 added to the gradient.
    public var decoupled: Bool = false
    /// The learning-rate multiplier over the epochs.
    public var schedule: ScheduleConfig = ScheduleConfig()

    public init() {}
}

/// The learning-rate schedule.
public struct ScheduleConfig: Sendable, Equatable, Codable {
    /// `constant` (default), `step` or `cosine`.
    public var kind: String = "constant"
    /// step: multiply by `factor` every `every` epochs (at least 1; required for step).
    public var every: Int?
    /// step: the multiplier, in (0, 1]; default 0.1 (PyTorch's `StepLR`).
    public var factor: Double?
    /// cosine: the floor as a share of the learning rate, in [0, 1]; default 0.
    public var minimumFactor: Double?

    public init() {}
}

/// How long, in what batches, from what seed, in what precision.
public struct TrainingConfig: Sendable, Equatable, Codable {
    /// Passes over the training rows (networks); default 10.
    public var epochs: Int = 10
    /// Steps for the single neuron (SPEC §3: 100,000).
    public var iterations: Int?
    /// Samples per step, at least 1 (a batch larger than the training rows is all of them).
    public var batchSize: Int = 32
    /// Seeds the initial weights, the epoch order and the validation split.
    public var seed: UInt64 = 42
    /// `float` (default) or `double`.
    public var precision: String = "float"
    /// OpenBLAS threads, at least 1; default 2.
    public var blasThreads: Int = 2

    public init() {}
}

/// Where the run's files go.
public struct OutputConfig: Sendable, Equatable, Codable {
    /// The run directory (relative to the current directory); default `runs/<config file name>`.
    public var directory: String?
    /// Write a checkpoint every this many epochs (and always at the end); at least 1.
    public var checkpointEvery: Int = 1

    public init() {}
}

// MARK: - Decoding

// A synthesized `init(from:)` would demand every key, defaults or not. These start from the
// defaults above (`self.init()`) and replace what the text gives, so a key that is absent (or
// null) keeps its default and a config names only what differs. `ConfigLoader` checks the keys
// and values; these only read them. (`DataConfig` needs none: all its keys but `kind` are optional.)

extension RunConfig {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(model: try c.decode(ModelConfig.self, forKey: .model), data: try c.decode(DataConfig.self, forKey: .data))
        optimizer = try c.decodeIfPresent(OptimizerConfig.self, forKey: .optimizer) ?? optimizer
        training = try c.decodeIfPresent(TrainingConfig.self, forKey: .training) ?? training
        output = try c.decodeIfPresent(OutputConfig.self, forKey: .output) ?? output
    }
}

extension ModelConfig {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init()
        inputs = try c.decodeIfPresent(Int.self, forKey: .inputs)
        layers = try c.decodeIfPresent([LayerConfig].self, forKey: .layers) ?? layers
        loss = try c.decodeIfPresent(String.self, forKey: .loss)
        neuron = try c.decodeIfPresent(NeuronConfig.self, forKey: .neuron)
    }
}

extension LayerConfig {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(units: try c.decode(Int.self, forKey: .units))
        activation = try c.decodeIfPresent(String.self, forKey: .activation) ?? activation
    }
}

extension NeuronConfig {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init()
        weight = try c.decodeIfPresent(Double.self, forKey: .weight) ?? weight
        bias = try c.decodeIfPresent(Double.self, forKey: .bias) ?? bias
    }
}

extension OptimizerConfig {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init()
        kind = try c.decodeIfPresent(String.self, forKey: .kind) ?? kind
        learningRate = try c.decodeIfPresent(Double.self, forKey: .learningRate) ?? learningRate
        momentum = try c.decodeIfPresent(Double.self, forKey: .momentum) ?? momentum
        nesterov = try c.decodeIfPresent(Bool.self, forKey: .nesterov) ?? nesterov
        beta1 = try c.decodeIfPresent(Double.self, forKey: .beta1) ?? beta1
        beta2 = try c.decodeIfPresent(Double.self, forKey: .beta2) ?? beta2
        epsilon = try c.decodeIfPresent(Double.self, forKey: .epsilon) ?? epsilon
        weightDecay = try c.decodeIfPresent(Double.self, forKey: .weightDecay) ?? weightDecay
        decoupled = try c.decodeIfPresent(Bool.self, forKey: .decoupled) ?? decoupled
        schedule = try c.decodeIfPresent(ScheduleConfig.self, forKey: .schedule) ?? schedule
    }
}

extension ScheduleConfig {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init()
        kind = try c.decodeIfPresent(String.self, forKey: .kind) ?? kind
        every = try c.decodeIfPresent(Int.self, forKey: .every)
        factor = try c.decodeIfPresent(Double.self, forKey: .factor)
        minimumFactor = try c.decodeIfPresent(Double.self, forKey: .minimumFactor)
    }
}

extension TrainingConfig {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init()
        epochs = try c.decodeIfPresent(Int.self, forKey: .epochs) ?? epochs
        iterations = try c.decodeIfPresent(Int.self, forKey: .iterations)
        batchSize = try c.decodeIfPresent(Int.self, forKey: .batchSize) ?? batchSize
        seed = try c.decodeIfPresent(UInt64.self, forKey: .seed) ?? seed
        precision = try c.decodeIfPresent(String.self, forKey: .precision) ?? precision
        blasThreads = try c.decodeIfPresent(Int.self, forKey: .blasThreads) ?? blasThreads
    }
}

extension OutputConfig {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init()
        directory = try c.decodeIfPresent(String.self, forKey: .directory)
        checkpointEvery = try c.decodeIfPresent(Int.self, forKey: .checkpointEvery) ?? checkpointEvery
    }
}
