// One schema for every run, read from YAML or JSON. Every key has a default except what names
// the model and the data; `ConfigLoader` rejects unknown keys (suggesting the nearest valid one)
// and values out of range, naming the file, line and column. Every choice is an enum whose raw
// values are the names Docs/Config.md documents, so configs and saved checkpoints read and write
// the same text, and a switch over a choice is exhaustive.
import Foundation
import NeuronCore

/// A training run: model, data, optimizer, training and output.
public struct RunConfig: Sendable, Equatable, Codable {
    public var model: ModelConfig
    public var data: DataConfig
    public var optimizer: OptimizerConfig = OptimizerConfig()
    public var training: TrainingConfig = TrainingConfig()
    public var output: OutputConfig = OutputConfig()
    /// Where each key was written, when the config was loaded from a file; not part of what the
    /// config says (neither encoded nor compared).
    public var origin = ConfigOrigin()

    public init(
        model: ModelConfig, data: DataConfig, optimizer: OptimizerConfig = OptimizerConfig(),
        training: TrainingConfig = TrainingConfig(), output: OutputConfig = OutputConfig()
    ) {
        (self.model, self.data, self.optimizer, self.training, self.output) = (model, data, optimizer, training, output)
    }

    /// Two configs are equal when they say the same, wherever they were written.
    public static func == (a: RunConfig, b: RunConfig) -> Bool {
        a.model == b.model && a.data == b.data && a.optimizer == b.optimizer && a.training == b.training && a.output == b.output
    }
}

/// Where a loaded config's keys were written, so that checks made after loading (against the
/// data, the machine) point at the key at fault: `Data/iris.yaml:3:13: model.inputs is 3 but …`.
public struct ConfigOrigin: Sendable {
    /// The config file as given to the loader; nil for a config built in code or read from a checkpoint.
    public var file: String?
    /// Line and column (from 1) of each key path's value (`model.layers[1].units`), or of its key.
    var places: [String: (line: Int, column: Int)] = [:]

    public init(file: String? = nil) { self.file = file }

    init(file: String, places: [String: (line: Int, column: Int)]) { (self.file, self.places) = (file, places) }

    /// A ``ConfigError`` at `path` (at the file alone when the key is not written there).
    public func error(at path: String, _ message: String) -> ConfigError {
        let place = places[path]
        return ConfigError(file: file ?? "the config", line: place?.line, column: place?.column, message: message)
    }

    /// Whether the file gives `path` a place (a value or a key).
    public func isWritten(_ path: String) -> Bool { places[path] != nil }
}

/// The network, or the single neuron.
public struct ModelConfig: Sendable, Equatable, Codable {
    /// Features per sample; inferred from the data when absent.
    public var inputs: Int?
    /// The shape of one sample as an image, `[height, width, channels]` (channels last, as the
    /// engine stores images), for models with image layers; IDX data gives it, CSV rows need it.
    /// A run records the shape it used here.
    public var inputShape: [Int]?
    /// The layers, input side first. Empty when `neuron` or `transformer` is set.
    public var layers: [LayerConfig] = []
    /// A GPT described by its sizes instead of `layers` (``TransformerConfig``).
    public var transformer: TransformerConfig?
    /// The loss; when absent, ``effectiveLoss`` chooses it from the output layer.
    public var loss: Loss?
    /// The single neuron of Docs/Reference.md §1–3 instead of layers: its starting weight and bias
    /// (sugar for a network of one tanh unit: ``RunConfig/desugared``).
    public var neuron: NeuronConfig?
    /// The parameters to start from instead of drawing them from the seed, in the network's order
    /// (the neuron's weight and bias, once desugared). Not a config key: nothing reads or writes it.
    public var startingParameters: [Double]?

    public init(inputs: Int? = nil, inputShape: [Int]? = nil, layers: [LayerConfig] = [], loss: Loss? = nil, neuron: NeuronConfig? = nil) {
        (self.inputs, self.inputShape, self.layers, self.loss, self.neuron) = (inputs, inputShape, layers, loss, neuron)
    }

    /// The largest size a config gives any one extent: a layer's units (rnn, gru), features, heads,
    /// filters, kernel, stride, pad or window; a transformer's sizes and positions; an image's
    /// side; a text block's positions. 2²⁴ is far beyond any layer a run can hold (a dense layer of
    /// 2²⁴ units on 2²⁴ inputs has 2⁴⁸ weights), and the largest whole number a Float holds exactly,
    /// the bound a vocabulary has for that reason (token indices travel in Float tensors).
    public static let largestSize = 1 << 24

    /// The values one sample of `shape` holds (the product of its sizes), or nil when the product
    /// is more than an `Int` counts: every size a config gives is checked this way before it is multiplied.
    public static func valueCount(_ shape: [Int]) -> Int? {
        var product = 1
        for size in shape {
            let (next, overflow) = product.multipliedReportingOverflow(by: size)
            if overflow { return nil }
            product = next
        }
        return product
    }

    /// `loss`, or when the config leaves it out: softmax cross-entropy after a softmax output
    /// layer (the pair whose gradient is `y - t`), else half the squared error (always the neuron's).
    public var effectiveLoss: Loss {
        if let loss { return loss }
        if takesTokens { return .sequenceCrossEntropy }
        return layers.last?.effectiveActivation == .softmax ? .softmaxCrossEntropy : .halfSquaredError
    }

    /// Whether the model reads token sequences (text): a transformer, or a first layer that is an
    /// embedding. Its loss is then the per-position cross-entropy over the vocabulary.
    public var takesTokens: Bool { transformer != nil || layers.first?.kind == .embedding }

    /// Whether the model reads samples as images: it has a convolution, a pool or a flatten.
    public var takesImages: Bool { layers.contains { $0.takesImages } }
}

/// nanoGPT's model by its sizes: `Embedding(features) → PositionEmbedding → [Dropout] → blocks ×
/// (Residual[LayerNorm → attention(heads) → [Dropout]], Residual[LayerNorm → Dense(mlpRatio·features)
/// → GELU → Dense(features) → [Dropout]]) → LayerNorm → head`, the head a dense layer of a score
/// per token or, with `tieWeights`, the embedding's own table (`TiedHead`). Text data only.
public struct TransformerConfig: Sendable, Equatable, Codable {
    /// The transformer blocks, at least 1.
    public var blocks: Int
    /// Attention heads per block, at least 1, dividing `features`.
    public var heads: Int
    /// Each position's vector size throughout, at least 1.
    public var features: Int
    /// The MLP's hidden width as a multiple of `features`, at least 1; default 4 (GPT-2's).
    public var mlpRatio: Int = 4
    /// Dropout after the embeddings and at the end of each residual branch, in [0, 1); default 0 (none).
    public var dropout: Double = 0
    /// The head scores with the token embedding's table (no head weight, no bias); default false.
    public var tieWeights: Bool = false
    /// How the initial weights are drawn; `pytorch` when absent. Left out of a saved config when
    /// not given, so that a run's checkpoint stays as it was.
    public var initialization: Initialization?

    /// How a transformer's initial weights are drawn.
    public enum Initialization: String, Sendable, Codable, CaseIterable, ConfigChoice {
        /// Each layer's own rule: the token table `N(0, 1)` (0.02 when tied), dense layers Glorot's
        /// uniform, attention's products `N(0, 0.02²)`.
        case pytorch
        /// GPT-2's, as nanoGPT's `_init_weights` draws it: every product and table `N(0, 0.02²)`,
        /// and the products that end a residual branch (attention's `c_proj`, the MLP's second
        /// dense layer) `N(0, (0.02/√(2·blocks))²)`; biases 0.
        case gpt2
    }
    /// The position table's rows, at least the block size; default: the data's block size.
    public var positions: Int?

    public init(blocks: Int, heads: Int, features: Int) { (self.blocks, self.heads, self.features) = (blocks, heads, features) }

    /// The most blocks: each is a handful of layers built before any memory check, so a hostile
    /// count must not be able to build millions of them.
    public static let maximumBlocks = 1024
}

/// The single neuron's starting parameters.
public struct NeuronConfig: Sendable, Equatable, Codable {
    public var weight: Double = 0.5
    public var bias: Double = 0.5
    public init() {}
    public init(weight: Double, bias: Double) { (self.weight, self.bias) = (weight, bias) }
}

/// Where the samples come from.
public struct DataConfig: Sendable, Equatable, Codable {
    /// Where the samples come from.
    public enum Kind: String, Sendable, Codable, CaseIterable, ConfigChoice {
        /// A CSV file with a header row.
        case csv
        /// IDX image and label files (gzip or raw).
        case idx
        /// Generated rows: XOR or a sine.
        case synthetic
        /// One input and target: the single neuron's.
        case sample
        /// A UTF-8 file for character models: one sample per line (words, names), or one whole
        /// document (``DataConfig/TextUnit``).
        case text
    }

    /// What a text file's samples are.
    public enum TextUnit: String, Sendable, Codable, CaseIterable, ConfigChoice {
        /// One sample per line (NeuronCore's `TextCorpus`), the default.
        case line
        /// The whole file one sequence of characters (NeuronCore's `TextDocument`), split into contiguous
        /// parts, trained on windows drawn at random.
        case document
    }

    /// The generated datasets.
    public enum SyntheticName: String, Sendable, Codable, CaseIterable, ConfigChoice {
        /// The four XOR rows.
        case xor
        /// sin(x) for x uniform in [-π, π).
        case sine
    }

    /// Feature preprocessing, fitted on the training rows only.
    public enum Normalization: String, Sendable, Codable, CaseIterable, ConfigChoice {
        /// Per feature `(x - mean) / standardDeviation`.
        case standardize
        /// Every feature times 1/255 (IDX pixels).
        case scale
        /// Features as read. (Write `Normalization.none` next to an optional: `.none` alone is nil.)
        case none
    }

    /// Where the samples come from.
    public var kind: Kind
    // csv
    /// The CSV file (relative paths are relative to the config file's folder).
    public var path: String?
    /// The CSV column holding the target.
    public var labelColumn: String?
    /// Class names (the default) or a number to fit.
    public var task: CSV.Task?
    /// The CSV feature columns; default: every other column.
    public var featureColumns: [String]?
    /// A CSV file of test rows with the same columns as `path`, evaluated after training.
    public var testPath: String?
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
    /// Which generated dataset.
    public var name: SyntheticName?
    /// Samples to draw (sine), default 256.
    public var count: Int?
    // sample (the neuron)
    /// The neuron's one input (Docs/Reference.md §3: 0.01).
    public var input: Double?
    /// The output the neuron should learn to give for `input` (Docs/Reference.md §3: 0.1).
    public var target: Double?
    // text
    /// One sample per line (nil, the default) or the whole file one document.
    public var unit: TextUnit?
    /// Lowercase every line before anything else.
    public var lowercase: Bool?
    /// Keep only the lines whose every character is in this class, written as between a regular
    /// expression's brackets: `a-z`, `a-z'`.
    public var keep: String?
    /// Positions per sequence: a line of n characters takes n + 1 (the boundary token first);
    /// default: the longest line's.
    public var blockSize: Int?
    /// A line longer than the block: an error (the default) or cut into windows.
    public var longLines: TextCorpus.LongLines?
    /// A document's tokenizer file (`.model`, `.tiktoken`, `tokenizer.json`, `vocab.json`): the
    /// model reads its tokens instead of characters. Relative paths as for `path`.
    public var tokenizer: String?
    /// A document's tokens from a byte-pair tokenizer of this many tokens (at least 256, the
    /// bytes), trained on the training part alone when the data are read.
    public var vocabularySize: Int?
    /// The split pattern of the tokenizer `vocabularySize` trains (default `gpt4`), or of a
    /// `.tiktoken` ranks file, which carries none (default `cl100k`).
    public var pattern: SplitPattern?
    /// Share of the lines held out as the test part, evaluated after training; default 0.1.
    public var testSplit: Double?
    // common
    /// Default: `scale` for idx, `none` for xor, else `standardize`.
    public var normalization: Normalization?
    /// Share of training rows held out for validation, in [0, 1); default 0.1 (0 for xor and sample).
    public var validationSplit: Double?
    /// Use only the first `limit` training rows (quick experiments).
    public var limit: Int?

    public init(kind: Kind) { self.kind = kind }
}

/// How parameters move.
public struct OptimizerConfig: Sendable, Equatable, Codable {
    /// The update rule.
    public enum Kind: String, Sendable, Codable, CaseIterable, ConfigChoice {
        /// Stochastic gradient descent, with optional (Nesterov) momentum.
        case sgd
        /// Adam, or AdamW with `decoupled`.
        case adam
    }

    /// The update rule; default `sgd`.
    public var kind: Kind = .sgd
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
    /// The parameters weight decay applies to; `all` when absent (``effectiveDecay``). Left out of
    /// a saved config when not given, so that a run's checkpoint stays as it was.
    public var decay: Decay?
    /// The learning-rate multiplier over the epochs.
    public var schedule: ScheduleConfig = ScheduleConfig()

    /// The parameters weight decay applies to.
    public enum Decay: String, Sendable, Codable, CaseIterable, ConfigChoice {
        /// Every parameter.
        case all
        /// The weights of products only (dense, convolution, recurrent and attention weights): not
        /// biases, norms' scale and shift, or embeddings, the usual rule for transformers.
        case matrices
    }

    /// `decay`, or `all` when the config leaves it out.
    public var effectiveDecay: Decay { decay ?? .all }

    public init() {}
}

/// The learning-rate schedule.
public struct ScheduleConfig: Sendable, Equatable, Codable {
    /// The multiplier's course over the epochs.
    public enum Kind: String, Sendable, Codable, CaseIterable, ConfigChoice {
        /// Always 1.
        case constant
        /// `factor` every `every` epochs.
        case step
        /// Half a cosine from 1 down to `minimumFactor` at the last epoch.
        case cosine
    }

    /// Default `constant`.
    public var kind: Kind = .constant
    /// step: multiply by `factor` every `every` epochs (at least 1, its steps at most 2⁵³; required for step).
    public var every: Int?
    /// step: the multiplier, in (0, 1]; default 0.1 (PyTorch's `StepLR`).
    public var factor: Double?
    /// cosine: the floor as a share of the learning rate, in [0, 1]; default 0.
    public var minimumFactor: Double?
    /// constant, cosine: steps (not epochs) of linear warmup before the schedule, ≥ 0 and fewer
    /// than the run's steps; default 0. The cosine then runs over the steps after the warmup.
    public var warmupSteps: Int?

    public init() {}
}

/// How long, in what batches, from what seed, in what precision.
public struct TrainingConfig: Sendable, Equatable, Codable {
    /// The scalar type of a whole run.
    public enum Precision: String, Sendable, Codable, CaseIterable, ConfigChoice {
        /// 32-bit `Float`, the default for networks.
        case float
        /// 64-bit `Double`; the single neuron always computes in it.
        case double

        /// The precision `Scalar` computes in.
        public init<Scalar: TensorScalar>(_: Scalar.Type) { self = Scalar.self == Float.self ? .float : .double }
    }

    /// Passes over the training rows (networks), at least 1, their steps at most 2⁵³
    /// (`maximumStepCount`); default 10.
    public var epochs: Int = 10
    /// A document run's length (`data.unit: document`), in steps, at least 1: it is measured in
    /// steps, not passes; `epochs` is then `steps / evaluateEvery` (``RunConfig/desugared``).
    public var steps: Int?
    /// A document run: steps between evaluations of the validation loss (each an epoch of the
    /// run), at least 1 and dividing `steps`; default ``defaultEvaluateEvery(steps:)``.
    public var evaluateEvery: Int?
    /// A document run: how the validation loss is measured; default `exact`.
    public var evaluation: EvaluationKind?
    /// `evaluation: estimate`: the batches of random windows the estimate averages over, 1 to
    /// 10,000; default 20 (nanoGPT's `eval_iters` in its CPU recipe).
    public var evaluationBatches: Int?
    /// The single neuron's name for its epochs, each one step on its one sample (Docs/Reference.md
    /// §3: 100,000); a neuron config's sugar, replaced by `--epochs`.
    public var iterations: Int?
    /// Samples per step, at least 1 (a batch larger than the training rows is all of them).
    public var batchSize: Int = 32
    /// Seeds the initial weights, the epoch order and the validation split.
    public var seed: UInt64 = 42
    /// Default `float`.
    public var precision: Precision = .float
    /// The operands of the network's matrix products: `full` (the default: in `precision`) or `bf16`
    /// (a Float network's products on bfloat16 operands, summed in Float, through oneDNN; the
    /// parameters, gradients, optimizer state and every other computation stay Float: PyTorch's
    /// CPU autocast). `bf16` needs `precision: float`, a build with the trait `OneDNN` and a CPU
    /// with `avx512_bf16`. Left out of a saved config when not given.
    public var products: ProductPrecision?
    /// The threads a large product is cut over (`BLAS.threadCount`: Neuron's own, each panel
    /// OpenBLAS on one thread), in ``blasThreadsRange``; default 2.
    public var blasThreads: Int = 2
    /// The product threads a config may ask for, 1 to 1024: `BLAS.threadCount` stops at
    /// `BLAS.maximumThreadCount` (64, as OpenBLAS's build here does), so 1024, beyond any
    /// machine's cores, only keeps a hostile count out.
    public static let blasThreadsRange = 1...1024
    /// The threads a training step splits its batch over (`Network.batchThreads`): 1 (the default)
    /// computes each batch whole; `n > 1` computes `n` shares of rows side by side, each with its
    /// products on one BLAS thread. Not with batch normalization, whose statistics are the whole
    /// batch's. Left out of a saved config when not given, so that a run's checkpoint stays as it
    /// was. In ``batchThreadsRange``.
    public var batchThreads: Int?
    /// The threads a step may split its batch over, 1 to 256. Each share has its own replica of the
    /// network's activations and gradients and its own thread, so shares beyond the machine's
    /// cores cost memory and wake-ups and compute nothing sooner, as do shares of a row or two;
    /// 256 is past the cores of one socket of today's largest servers (192) and the rows of a
    /// usual batch. It is the bound the documentation and the loader have always given, so no
    /// checkpoint a loaded config trained holds more.
    public static let batchThreadsRange = 1...256
    /// How the parameters are found: by gradient descent (nil, the default), or, for a bigram model
    /// (one embedding over text), by counting, the maximum-likelihood table in closed form. Left
    /// out of a saved config when not given, so that a run's checkpoint stays as it was.
    public var fit: Fit?
    /// Counting's add-`smoothing` to every pair's count (Laplace's rule at 1, the default), so
    /// that a pair never seen in training has a probability above 0; greater than 0 and at most
    /// ``maximumSmoothing``.
    public var smoothing: Double?
    /// The largest `smoothing`: a pseudo-count per pair, not a scale; a million already flattens
    /// every row of a word list's table to within a few thousandths of a nat of uniform, and
    /// nothing larger says more.
    public static let maximumSmoothing = 1e6
    /// The largest global gradient norm a step takes: when the norm of every gradient together is
    /// above it, they are all scaled down to it (PyTorch's `clip_grad_norm_`); > 0, absent for none.
    public var clipGradientNorm: Double?

    /// How a document run measures its validation loss.
    public enum EvaluationKind: String, Sendable, Codable, CaseIterable, ConfigChoice {
        /// The loss over every validation character once, in consecutive windows of the block.
        case exact
        /// nanoGPT's estimate: the mean loss over `evaluationBatches` batches of windows drawn at
        /// random from the validation part (`estimate_loss`), cheaper and noisier.
        case estimate
    }

    /// The steps between a document run's evaluations when the config gives none: the divisor of
    /// `steps` nearest a tenth of it (by ratio), so that a run evaluates about ten times.
    public static func defaultEvaluateEvery(steps: Int) -> Int {
        let target = max(1, Double(steps) / 10)
        var best = steps
        var d = 1
        while d * d <= steps {
            if steps % d == 0 {
                for divisor in [d, steps / d] where abs(log(Double(divisor) / target)) < abs(log(Double(best) / target)) { best = divisor }
            }
            d += 1
        }
        return best
    }

    /// How a run finds its parameters.
    public enum Fit: String, Sendable, Codable, CaseIterable, ConfigChoice {
        /// Steps down the loss's gradient, `epochs` passes over the training rows.
        case gradientDescent
        /// The bigram table counted from the training lines, no steps.
        case counts
    }

    public init() {}
}

/// Where the run's files go.
public struct OutputConfig: Sendable, Equatable, Codable {
    /// The run directory (relative to the current directory); default `runs/<config file name>`.
    public var directory: String?
    /// Write a checkpoint every this many epochs (and always at the end); at least 1. When absent,
    /// checkpoints follow `checkpointSeconds`.
    public var checkpointEvery: Int?
    /// Without `checkpointEvery`: write a checkpoint at the first epoch end this many seconds
    /// after the last one (and always at the end and on a stop signal); > 0, default 30. Each
    /// checkpoint is flushed to disk, which costs more than a small epoch.
    public var checkpointSeconds: Double = 30
    /// Text models: lines sampled at each epoch's end, shown by the progress views; default 5, 0 for none.
    public var samples: Int?

    public init() {}
}

// The choices NeuronCore defines, named in configs by their raw values.
extension Activation: ConfigChoice {}
extension GELUApproximation: ConfigChoice {}
extension TextCorpus.LongLines: ConfigChoice {}
extension Loss: ConfigChoice {}
extension CSV.Task: ConfigChoice {}
extension SplitPattern: Codable, ConfigChoice {}
extension ProductPrecision: Codable, ConfigChoice {}

// MARK: - Keys

// Each section's keys, once: `CodingKeys` (what `Codable` encodes, and what the loader accepts,
// in Docs/Config.md's order) and, for each key, its property. A key of a section with defaults is
// decoded by `DefaultedConfigSection`, starting from `init()`.

extension RunConfig: ConfigSection {
    enum CodingKeys: String, CodingKey, CaseIterable { case model, data, optimizer, training, output }

    static func field(_ key: CodingKeys) -> ConfigField<Self> {
        switch key {
        case .model: ConfigField(\.model, required: true)
        case .data: ConfigField(\.data, required: true)
        case .optimizer: ConfigField(\.optimizer)
        case .training: ConfigField(\.training)
        case .output: ConfigField(\.output)
        }
    }

    // model and data have no default to start from; the other sections do.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(model: try container.decode(ModelConfig.self, forKey: .model), data: try container.decode(DataConfig.self, forKey: .data))
        try decodeGivenKeys(from: decoder)
    }
}

extension ModelConfig: DefaultedConfigSection {
    enum CodingKeys: String, CodingKey, CaseIterable { case inputs, inputShape, layers, transformer, loss, neuron }

    init() { self.init(inputs: nil) }

    static func field(_ key: CodingKeys) -> ConfigField<Self> {
        switch key {
        case .inputs: ConfigField(\.inputs)
        case .inputShape: ConfigField(\.inputShape)
        case .layers: ConfigField(\.layers)
        case .transformer: ConfigField(\.transformer)
        case .loss: ConfigField(\.loss)
        case .neuron: ConfigField(\.neuron)
        }
    }
}

extension TransformerConfig: ConfigSection {
    enum CodingKeys: String, CodingKey, CaseIterable { case blocks, heads, features, mlpRatio, dropout, tieWeights, initialization, positions }

    static func field(_ key: CodingKeys) -> ConfigField<Self> {
        switch key {
        case .blocks: ConfigField(\.blocks, required: true)
        case .heads: ConfigField(\.heads, required: true)
        case .features: ConfigField(\.features, required: true)
        case .mlpRatio: ConfigField(\.mlpRatio)
        case .dropout: ConfigField(\.dropout)
        case .tieWeights: ConfigField(\.tieWeights)
        case .initialization: ConfigField(\.initialization)
        case .positions: ConfigField(\.positions)
        }
    }

    // The sizes have no default to start from; the other keys do.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            blocks: try container.decode(Int.self, forKey: .blocks), heads: try container.decode(Int.self, forKey: .heads),
            features: try container.decode(Int.self, forKey: .features))
        try decodeGivenKeys(from: decoder)
    }
}

extension NeuronConfig: DefaultedConfigSection {
    enum CodingKeys: String, CodingKey, CaseIterable { case weight, bias }

    static func field(_ key: CodingKeys) -> ConfigField<Self> {
        switch key {
        case .weight: ConfigField(\.weight)
        case .bias: ConfigField(\.bias)
        }
    }
}

// Every key but `kind` is optional, so the synthesized `init(from:)` serves.
extension DataConfig: ConfigSection {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case kind
        case path, labelColumn, task, featureColumns, testPath  // csv
        case trainImages, trainLabels, testImages, testLabels  // idx
        case name, count  // synthetic
        case input, target  // sample
        case unit, lowercase, keep, blockSize, longLines, tokenizer, vocabularySize, pattern, testSplit  // text
        case normalization, validationSplit, limit
    }

    static func field(_ key: CodingKeys) -> ConfigField<Self> {
        switch key {
        case .kind: ConfigField(\.kind, required: true)
        case .path: ConfigField(\.path)
        case .labelColumn: ConfigField(\.labelColumn)
        case .task: ConfigField(\.task)
        case .featureColumns: ConfigField(\.featureColumns)
        case .testPath: ConfigField(\.testPath)
        case .trainImages: ConfigField(\.trainImages)
        case .trainLabels: ConfigField(\.trainLabels)
        case .testImages: ConfigField(\.testImages)
        case .testLabels: ConfigField(\.testLabels)
        case .name: ConfigField(\.name)
        case .count: ConfigField(\.count)
        case .input: ConfigField(\.input)
        case .target: ConfigField(\.target)
        case .unit: ConfigField(\.unit)
        case .lowercase: ConfigField(\.lowercase)
        case .keep: ConfigField(\.keep)
        case .blockSize: ConfigField(\.blockSize)
        case .longLines: ConfigField(\.longLines)
        case .tokenizer: ConfigField(\.tokenizer)
        case .vocabularySize: ConfigField(\.vocabularySize)
        case .pattern: ConfigField(\.pattern)
        case .testSplit: ConfigField(\.testSplit)
        case .normalization: ConfigField(\.normalization)
        case .validationSplit: ConfigField(\.validationSplit)
        case .limit: ConfigField(\.limit)
        }
    }
}

extension DataConfig.Kind {
    /// The data keys a dataset of this kind takes besides `kind`, in Docs/Config.md's order.
    var keys: [DataConfig.CodingKeys] {
        switch self {
        case .csv: [.path, .labelColumn, .task, .featureColumns, .testPath, .normalization, .validationSplit, .limit]
        case .idx: [.trainImages, .trainLabels, .testImages, .testLabels, .normalization, .validationSplit, .limit]
        case .synthetic: [.name, .count, .normalization, .validationSplit, .limit]
        case .sample: [.input, .target]
        case .text:
            [.path, .unit, .lowercase, .keep, .blockSize, .longLines, .tokenizer, .vocabularySize, .pattern, .validationSplit, .testSplit, .limit]
        }
    }
}

extension OptimizerConfig: DefaultedConfigSection {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case kind, learningRate, momentum, nesterov, beta1, beta2, epsilon, weightDecay, decoupled, decay, schedule
    }

    static func field(_ key: CodingKeys) -> ConfigField<Self> {
        switch key {
        case .kind: ConfigField(\.kind)
        case .learningRate: ConfigField(\.learningRate)
        case .momentum: ConfigField(\.momentum)
        case .nesterov: ConfigField(\.nesterov)
        case .beta1: ConfigField(\.beta1)
        case .beta2: ConfigField(\.beta2)
        case .epsilon: ConfigField(\.epsilon)
        case .weightDecay: ConfigField(\.weightDecay)
        case .decoupled: ConfigField(\.decoupled)
        case .decay: ConfigField(\.decay)
        case .schedule: ConfigField(\.schedule)
        }
    }
}

extension OptimizerConfig.Kind {
    /// The optimizer keys this kind takes besides `kind`, in Docs/Config.md's order.
    var keys: [OptimizerConfig.CodingKeys] {
        switch self {
        case .sgd: [.learningRate, .momentum, .nesterov, .weightDecay, .decay, .schedule]
        case .adam: [.learningRate, .beta1, .beta2, .epsilon, .weightDecay, .decoupled, .decay, .schedule]
        }
    }
}

extension ScheduleConfig: DefaultedConfigSection {
    enum CodingKeys: String, CodingKey, CaseIterable { case kind, every, factor, minimumFactor, warmupSteps }

    static func field(_ key: CodingKeys) -> ConfigField<Self> {
        switch key {
        case .kind: ConfigField(\.kind)
        case .every: ConfigField(\.every)
        case .factor: ConfigField(\.factor)
        case .minimumFactor: ConfigField(\.minimumFactor)
        case .warmupSteps: ConfigField(\.warmupSteps)
        }
    }
}

extension ScheduleConfig.Kind {
    /// The schedule keys this kind takes besides `kind`.
    var keys: [ScheduleConfig.CodingKeys] {
        switch self {
        case .constant: [.warmupSteps]
        case .step: [.every, .factor]
        case .cosine: [.minimumFactor, .warmupSteps]
        }
    }
}

extension TrainingConfig: DefaultedConfigSection {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case epochs, steps, evaluateEvery, evaluation, evaluationBatches, iterations, batchSize, seed, precision, products, blasThreads,
            batchThreads, fit, smoothing, clipGradientNorm
    }

    /// Every key, but `epochs` at its default beside `steps` (a document run's, whose epochs follow
    /// from its steps and which the loader refuses to be given): a saved config loads as it was
    /// written, and decodes to the same value (a missing `epochs` is the default).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        if steps == nil || epochs != TrainingConfig().epochs { try c.encode(epochs, forKey: .epochs) }
        try c.encodeIfPresent(steps, forKey: .steps)
        try c.encodeIfPresent(evaluateEvery, forKey: .evaluateEvery)
        try c.encodeIfPresent(evaluation, forKey: .evaluation)
        try c.encodeIfPresent(evaluationBatches, forKey: .evaluationBatches)
        try c.encodeIfPresent(iterations, forKey: .iterations)
        try c.encode(batchSize, forKey: .batchSize)
        try c.encode(seed, forKey: .seed)
        try c.encode(precision, forKey: .precision)
        try c.encodeIfPresent(products, forKey: .products)
        try c.encode(blasThreads, forKey: .blasThreads)
        try c.encodeIfPresent(batchThreads, forKey: .batchThreads)
        try c.encodeIfPresent(fit, forKey: .fit)
        try c.encodeIfPresent(smoothing, forKey: .smoothing)
        try c.encodeIfPresent(clipGradientNorm, forKey: .clipGradientNorm)
    }

    static func field(_ key: CodingKeys) -> ConfigField<Self> {
        switch key {
        case .epochs: ConfigField(\.epochs)
        case .steps: ConfigField(\.steps)
        case .evaluateEvery: ConfigField(\.evaluateEvery)
        case .evaluation: ConfigField(\.evaluation)
        case .evaluationBatches: ConfigField(\.evaluationBatches)
        case .iterations: ConfigField(\.iterations)
        case .batchSize: ConfigField(\.batchSize)
        case .seed: ConfigField(\.seed)
        case .precision: ConfigField(\.precision)
        case .products: ConfigField(\.products)
        case .blasThreads: ConfigField(\.blasThreads)
        case .batchThreads: ConfigField(\.batchThreads)
        case .fit: ConfigField(\.fit)
        case .smoothing: ConfigField(\.smoothing)
        case .clipGradientNorm: ConfigField(\.clipGradientNorm)
        }
    }
}

extension OutputConfig: DefaultedConfigSection {
    enum CodingKeys: String, CodingKey, CaseIterable { case directory, checkpointEvery, checkpointSeconds, samples }

    static func field(_ key: CodingKeys) -> ConfigField<Self> {
        switch key {
        case .directory: ConfigField(\.directory)
        case .checkpointEvery: ConfigField(\.checkpointEvery)
        case .checkpointSeconds: ConfigField(\.checkpointSeconds)
        case .samples: ConfigField(\.samples)
        }
    }
}
