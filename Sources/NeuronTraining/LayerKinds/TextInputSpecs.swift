import NeuronCore

/// `embedding`: token indices to learned vectors of `features` (default: the vocabulary's size,
/// which makes the embedding alone a bigram model's table of logits); the first layer of a text model.
enum EmbeddingSpec: LayerSpec {
    static let keys: [LayerConfig.CodingKeys] = [.features]

    static func checkRanges(_ layer: LayerConfig, at path: String) throws(ConfigRangeError) {
        try ConfigRangeError.check(layer.features, in: sizes, "\(path).features")
    }

    static func layer<Scalar: TensorScalar>(
        _ config: LayerConfig, _: Scalar.Type, input shape: [Int], vocabulary: Int?
    ) throws(NetworkError) -> any Layer<Scalar> {
        guard shape.count == 1, let vocabulary else {
            throw .invalidLayer("an embedding", reason: "takes token indices, one per position, which only text data gives")
        }
        return try Embedding<Scalar>(vocabulary: vocabulary, features: config.features ?? vocabulary, time: shape[0])
    }
}

/// `positionEmbedding`: a learned vector per position added to each position's vector.
enum PositionEmbeddingSpec: LayerSpec {
    static let keys: [LayerConfig.CodingKeys] = []

    static func layer<Scalar: TensorScalar>(
        _ config: LayerConfig, _: Scalar.Type, input shape: [Int], vocabulary: Int?
    ) throws(NetworkError) -> any Layer<Scalar> {
        let (time, features) = try sequence(shape, of: config)
        return try PositionEmbedding<Scalar>(time: time, features: features)
    }
}

/// `context`: each position's vector and the `size − 1` before it, concatenated (Bengio et al.
/// 2003's input).
enum ContextSpec: LayerSpec {
    static let keys: [LayerConfig.CodingKeys] = [.size]

    static func validate(_ layer: LayerConfig, at path: String, _ checker: ConfigChecker) throws(ConfigError) {
        try checker.needs("size", layer.size, in: path, of: layer, "size (how many positions it concatenates)")
    }

    static func checkRanges(_ layer: LayerConfig, at path: String) throws(ConfigRangeError) {
        try ConfigRangeError.check(layer.size, in: sizes, "\(path).size")
    }

    static func layer<Scalar: TensorScalar>(
        _ config: LayerConfig, _: Scalar.Type, input shape: [Int], vocabulary: Int?
    ) throws(NetworkError) -> any Layer<Scalar> {
        let (time, features) = try sequence(shape, of: config)
        return try ContextWindow<Scalar>(time: time, features: features, size: try needs(config.size, "size", of: config))
    }
}
