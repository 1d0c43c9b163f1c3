import NeuronCore

/// `layerNorm`: layer normalization over the last dimension, each sample's or each position's
/// features on their own (PyTorch's `nn.LayerNorm`), `epsilon` (default 1e-5).
enum LayerNormSpec: LayerSpec {
    static let keys: [LayerConfig.CodingKeys] = [.epsilon]

    static func checkRanges(_ layer: LayerConfig, at path: String) throws(ConfigRangeError) {
        try checkEpsilon(layer.epsilon, at: path, zero: "a sample or position whose features are all equal")
    }

    static func layer<Scalar: TensorScalar>(
        _ config: LayerConfig, _: Scalar.Type, input shape: [Int], vocabulary: Int?
    ) throws(NetworkError) -> any Layer<Scalar> {
        // Vectors or sequences, over their last dimension; LayerNorm names any other shape.
        try LayerNorm<Scalar>(shape: shape, epsilon: config.epsilon ?? 1e-5)
    }
}

/// `gelu`: the Gaussian error linear unit, element by element (PyTorch's `nn.GELU`),
/// `approximation` none (the exact `x·Φ(x)`, the default) or tanh. Its names are checked as the
/// key is read.
enum GELUSpec: LayerSpec {
    static let keys: [LayerConfig.CodingKeys] = [.approximation]

    static func layer<Scalar: TensorScalar>(
        _ config: LayerConfig, _: Scalar.Type, input shape: [Int], vocabulary: Int?
    ) throws(NetworkError) -> any Layer<Scalar> {
        try GELU<Scalar>(shape: shape, approximation: config.approximation ?? GELUApproximation.none)
    }
}

/// `attention`: causal multi-head self-attention over the time axis (a GPT's, nanoGPT's
/// parameters), `heads` each over `features / heads` of the features.
enum AttentionSpec: LayerSpec {
    static let keys: [LayerConfig.CodingKeys] = [.heads]

    static func validate(_ layer: LayerConfig, at path: String, _ checker: ConfigChecker) throws(ConfigError) {
        try checker.needs("heads", layer.heads, in: path, of: layer, "heads")
    }

    static func checkRanges(_ layer: LayerConfig, at path: String) throws(ConfigRangeError) {
        try ConfigRangeError.check(layer.heads, in: sizes, "\(path).heads")
    }

    static func layer<Scalar: TensorScalar>(
        _ config: LayerConfig, _: Scalar.Type, input shape: [Int], vocabulary: Int?
    ) throws(NetworkError) -> any Layer<Scalar> {
        let (time, features) = try sequence(shape, of: config)
        return try CausalSelfAttention<Scalar>(time: time, features: features, heads: try needs(config.heads, "heads", of: config))
    }
}
