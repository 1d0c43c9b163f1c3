import NeuronCore

/// `rmsNorm`: root-mean-square normalization over the last dimension, each sample's or each
/// position's features on their own, scaled by a learned weight (PyTorch's `nn.RMSNorm`),
/// `epsilon` (default 1e-5).
enum RMSNormSpec: LayerSpec {
    static let keys: [LayerConfig.CodingKeys] = [.epsilon]

    static func checkRanges(_ layer: LayerConfig, at path: String) throws(ConfigRangeError) {
        try checkEpsilon(layer.epsilon, at: path, zero: "a sample or position whose features are all 0")
    }

    static func layer<Scalar: TensorScalar>(
        _ config: LayerConfig, _: Scalar.Type, input shape: [Int], vocabulary: Int?
    ) throws(NetworkError) -> any Layer<Scalar> {
        // Vectors or sequences, over their last dimension; RMSNorm names any other shape.
        try RMSNorm<Scalar>(shape: shape, epsilon: config.epsilon ?? 1e-5)
    }
}
