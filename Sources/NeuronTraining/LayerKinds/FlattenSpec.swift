import NeuronCore

/// `flatten`: an image to a vector, channels first, as PyTorch flattens.
enum FlattenSpec: LayerSpec {
    static let keys: [LayerConfig.CodingKeys] = []
    static let takesImages = true

    static func layer<Scalar: TensorScalar>(
        _ config: LayerConfig, _: Scalar.Type, input shape: [Int], vocabulary: Int?
    ) throws(NetworkError) -> any Layer<Scalar> {
        try Flatten<Scalar>(input: shape)
    }
}
