import NeuronCore

/// `batchNorm`: batch normalization over channels or features, `momentum` (default 0.1),
/// `epsilon` (default 1e-5), then an `activation` (default identity).
enum BatchNormSpec: LayerSpec {
    static let keys: [LayerConfig.CodingKeys] = [.momentum, .epsilon, .activation]
    static let defaultActivation: Activation? = .identity

    static func checkRanges(_ layer: LayerConfig, at path: String) throws(ConfigRangeError) {
        if let momentum = layer.momentum {
            try ConfigRangeError.check(momentum >= 0 && momentum <= 1, "\(path).momentum", momentum, "a number in [0, 1]")
        }
        try checkEpsilon(layer.epsilon, at: path, zero: "a channel whose batch variance is 0")
    }

    static func layer<Scalar: TensorScalar>(
        _ config: LayerConfig, _: Scalar.Type, input shape: [Int], vocabulary: Int?
    ) throws(NetworkError) -> any Layer<Scalar> {
        try BatchNorm<Scalar>(
            input: shape, momentum: config.momentum ?? 0.1, epsilon: config.epsilon ?? 1e-5, activation: config.effectiveActivation)
    }
}
