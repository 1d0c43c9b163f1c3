import NeuronCore

/// `dropout`: inverted dropout, each input dropped in training with probability `rate`.
enum DropoutSpec: LayerSpec {
    static let keys: [LayerConfig.CodingKeys] = [.rate]

    static func validate(_ layer: LayerConfig, at path: String, _ checker: ConfigChecker) throws(ConfigError) {
        try checker.needs("rate", layer.rate, in: path, of: layer, "rate")
    }

    static func checkRanges(_ layer: LayerConfig, at path: String) throws(ConfigRangeError) {
        if let rate = layer.rate { try ConfigRangeError.check(rate >= 0 && rate < 1, "\(path).rate", rate, "a number in [0, 1)") }
    }

    static func layer<Scalar: TensorScalar>(
        _ config: LayerConfig, _: Scalar.Type, input shape: [Int], vocabulary: Int?
    ) throws(NetworkError) -> any Layer<Scalar> {
        try Dropout<Scalar>(input: shape, rate: try needs(config.rate, "rate", of: config))
    }
}
