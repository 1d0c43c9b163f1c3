// One layer of a config, as a file writes it: its kind and the keys of every kind, flat, as
// YAML and JSON spell them (`{kind: conv2d, filters: 8, kernel: 3}`). Which keys a kind takes,
// which it needs and their bounds, and the layer it builds, are its spec's (`LayerKinds/`).
import NeuronCore

/// One layer: its kind and the settings that kind takes.
@dynamicMemberLookup
public struct LayerConfig: Sendable, Equatable, Codable {
    /// The kinds of layer a config can name.
    public enum Kind: String, Sendable, Codable, CaseIterable, ConfigChoice {
        /// Fully connected: `units`, `activation`.
        case dense
        /// 2-D convolution: `filters`, `kernel`, `stride`, `padding` or `pad`, `activation`.
        case conv2d
        /// Max pooling: `size`, `stride`, or `global`.
        case maxPool2d
        /// Average pooling: `size`, `stride`, or `global`.
        case avgPool2d
        /// An image to a vector (channels first, as PyTorch flattens).
        case flatten
        /// Inverted dropout: `rate`.
        case dropout
        /// Batch normalization over channels or features: `momentum`, `epsilon`, `activation`.
        case batchNorm
        /// A residual block, `y = x + f(x)`: `layers`, the body `f`, which must give back its input's shape.
        case residual
        /// Token indices to learned vectors, the first layer of a text model: `features` (default:
        /// the vocabulary's size, which makes the embedding alone a bigram model's table of logits).
        case embedding
        /// A learned vector per position added to each position's vector.
        case positionEmbedding
        /// Each position's vector and the `size − 1` before it, concatenated (Bengio et al. 2003's
        /// input): `size`.
        case context
        /// A recurrent layer of tanh units over the time axis: `units`.
        case rnn
        /// A gated recurrent unit layer over the time axis (PyTorch's `nn.GRU`): `units`.
        case gru
        /// Layer normalization over the last dimension, each sample's or each position's features
        /// on their own (PyTorch's `nn.LayerNorm`): `epsilon`.
        case layerNorm
        /// The Gaussian error linear unit, element by element (PyTorch's `nn.GELU`): `approximation`.
        case gelu
        /// Causal multi-head self-attention over the time axis (a GPT's, nanoGPT's parameters): `heads`.
        case attention
        /// Root-mean-square normalization over the last dimension, scaled by a learned weight
        /// (PyTorch's `nn.RMSNorm`): `epsilon`.
        case rmsNorm

        /// The spec of this kind (`LayerKinds/`): its keys, checks and construction.
        var spec: any LayerSpec.Type {
            switch self {
            case .dense: DenseSpec.self
            case .conv2d: Conv2DSpec.self
            case .maxPool2d: MaxPool2DSpec.self
            case .avgPool2d: AvgPool2DSpec.self
            case .flatten: FlattenSpec.self
            case .dropout: DropoutSpec.self
            case .batchNorm: BatchNormSpec.self
            case .residual: ResidualSpec.self
            case .embedding: EmbeddingSpec.self
            case .positionEmbedding: PositionEmbeddingSpec.self
            case .context: ContextSpec.self
            case .rnn: RNNSpec.self
            case .gru: GRUSpec.self
            case .layerNorm: LayerNormSpec.self
            case .gelu: GELUSpec.self
            case .attention: AttentionSpec.self
            case .rmsNorm: RMSNormSpec.self
            }
        }
    }

    /// How a convolution pads by name.
    public enum PaddingName: String, Sendable, Codable, CaseIterable, ConfigChoice {
        /// No padding.
        case valid
        /// `ceil(size / stride)` outputs per axis.
        case same
    }

    /// `dense` when absent.
    public var kind: Kind = .dense
    /// The keys of every kind, each given or not; a layer reads those of its kind (its spec's
    /// keys), read and written as `layer.units` and so on.
    public var settings = Settings()

    /// The keys a layer can give besides its kind, flat, as a file writes them. Equality and
    /// encoding are the compiler's, over every key: a new key is one property here, one case of
    /// `CodingKeys` and one line of `field(_:)`.
    public struct Settings: Sendable, Equatable, Codable {
        /// Dense: outputs of the layer, at least 1; rnn, gru: the hidden state's size.
        public var units: Int?
        /// Embedding: the size of each token's vector.
        public var features: Int?
        /// Attention: the heads, each over `features / heads` of the features (which they must divide).
        public var heads: Int?
        /// Dense (default `tanh`; `softmax` only in the output layer), conv2d and batchNorm (default `identity`).
        public var activation: Activation?
        /// Conv2d: the number of filters (output channels).
        public var filters: Int?
        /// Conv2d: the kernel's height and width (square).
        public var kernel: Int?
        /// Conv2d (default 1) and the pools (default `size`): how far the window moves.
        public var stride: Int?
        /// Conv2d: `valid` (the default) or `same`.
        public var padding: PaddingName?
        /// Conv2d: zeros on every side, instead of `padding` (PyTorch's `padding=N`).
        public var pad: Int?
        /// The pools: the window's height and width (square).
        public var size: Int?
        /// The pools: one window over the whole image, instead of `size`.
        public var global: Bool?
        /// Dropout: the probability of dropping each input in training, in [0, 1).
        public var rate: Double?
        /// BatchNorm: how far running statistics move per batch (default 0.1, PyTorch's).
        public var momentum: Double?
        /// BatchNorm, layerNorm: added to the variance; rmsNorm: to the mean square (default 1e-5),
        /// at least ``LayerConfig/smallestEpsilon``.
        public var epsilon: Double?
        /// GELU: `none` (the default, the exact `x·Φ(x)`) or `tanh` (the tanh form), PyTorch's `approximate`.
        public var approximation: GELUApproximation?
        /// Residual: the body's layers, input side first (one level: a body holds no residual block).
        public var layers: [LayerConfig]?

        public init() {}
    }

    /// The setting `key` (`layer.units`), read and written in ``settings``.
    public subscript<Value>(dynamicMember key: WritableKeyPath<Settings, Value>) -> Value {
        get { settings[keyPath: key] }
        set { settings[keyPath: key] = newValue }
    }

    /// The norms' smallest `epsilon`: a channel (a row) whose variance is 0 (a dead
    /// relu channel, a constant pixel) is scaled by 1/√epsilon, at most 10⁶ here; far below it, Float
    /// rounds epsilon to 0 (1e-50) and the scale is infinite, the run diverging at its first step.
    public static let smallestEpsilon = 1e-12

    public init(kind: Kind) { self.kind = kind }

    /// A dense layer.
    public init(units: Int, activation: Activation = .tanh) {
        self.init(kind: .dense)
        (self.units, self.activation) = (units, activation)
    }

    /// The activation the layer applies: as given, else its kind's default (dense `tanh`, the
    /// others `identity`).
    public var effectiveActivation: Activation { self.activation ?? kind.spec.defaultActivation ?? .identity }

    /// Writes `kind` only for a layer other than dense, and only the keys given: a dense layer
    /// saves as it always has, `{"activation": "tanh", "units": 4}`.
    public func encode(to encoder: any Encoder) throws {
        if kind != .dense {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(kind, forKey: .kind)
        }
        try settings.encode(to: encoder)
    }

    /// Two layers are equal when they build the same layer: an activation left out equals its default written out.
    public static func == (a: LayerConfig, b: LayerConfig) -> Bool {
        var (a, b) = (a, b)
        (a.activation, b.activation) = (a.effectiveActivation, b.effectiveActivation)
        return a.kind == b.kind && a.settings == b.settings
    }

    /// Writes out the activation of this layer and of the layers of its body, default or not, as
    /// a run saves them (the kinds that have one: dense, conv2d, batchNorm).
    mutating func writeActivations() {
        if kind.spec.defaultActivation != nil { self.activation = effectiveActivation }
        guard var body = self.layers else { return }
        for j in body.indices { body[j].writeActivations() }
        self.layers = body
    }

    /// Whether this layer, or one in its body, needs its input as an image.
    var takesImages: Bool { kind.spec.takesImages || (self.layers ?? []).contains { $0.kind.spec.takesImages } }
}

extension LayerConfig: DefaultedConfigSection {
    init() { self.init(kind: .dense) }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case kind, units, features, heads, activation, filters, kernel, stride, padding, pad, size, global, rate, momentum, epsilon, approximation,
            layers
    }

    /// A residual block's body layer: every key but `layers` (a body holds no residual block), so
    /// that the schema, derived from the types, is finite.
    static var bodyLayerShape: ConfigShape {
        let keys = CodingKeys.allCases.filter { $0 != .layers }
        return .mapping(keys.map { ($0.stringValue, field($0).shape) }, required: [])
    }

    static func field(_ key: CodingKeys) -> ConfigField<Self> {
        switch key {
        case .kind: ConfigField(\.kind)
        case .units: ConfigField(\.units)
        case .features: ConfigField(\.features)
        case .heads: ConfigField(\.heads)
        case .activation: ConfigField(\.activation)
        case .filters: ConfigField(\.filters)
        case .kernel: ConfigField(\.kernel)
        case .stride: ConfigField(\.stride)
        case .padding: ConfigField(\.padding)
        case .pad: ConfigField(\.pad)
        case .size: ConfigField(\.size)
        case .global: ConfigField(\.global)
        case .rate: ConfigField(\.rate)
        case .momentum: ConfigField(\.momentum)
        case .epsilon: ConfigField(\.epsilon)
        case .approximation: ConfigField(\.approximation)
        case .layers: ConfigField(\.layers, shape: .list(bodyLayerShape))
        }
    }
}

extension LayerConfig.Kind {
    /// The keys a layer of this kind takes besides `kind`, in Docs/Config.md's order.
    var keys: [LayerConfig.CodingKeys] { spec.keys }
}
