import NeuronCore

/// `dense`: fully connected, `units` outputs and an `activation` (default tanh; softmax only in the
/// output layer). Over vectors, or over a sequence's vectors, the same layer at every position.
enum DenseSpec: LayerSpec {
    static let keys: [LayerConfig.CodingKeys] = [.units, .activation]
    static let defaultActivation: Activation? = .tanh
    static let takesSoftmax = true

    static func validate(_ layer: LayerConfig, at path: String, _ checker: ConfigChecker) throws(ConfigError) {
        if layer.units == nil, checker.writesKey("\(path).units") {
            throw checker.error(at: "\(path).units", "\(path).units: expected a whole number; found nothing (null)")
        }
        try checker.needs("units", layer.units, in: path, of: layer, "units")
    }

    /// A dense layer's units are bounded by the memory they need, checked when the run is built.
    static func checkRanges(_ layer: LayerConfig, at path: String) throws(ConfigRangeError) {
        try ConfigRangeError.check(layer.units, in: 1...Int.max, "\(path).units")
    }

    static func layer<Scalar: TensorScalar>(
        _ config: LayerConfig, _: Scalar.Type, input shape: [Int], vocabulary: Int?
    ) throws(NetworkError) -> any Layer<Scalar> {
        let units = try needs(config.units, "units", of: config)
        // A sequence's vectors go through the same dense layer at every position.
        if shape.count == 2 { return try Dense<Scalar>(shape[1], units, activation: config.effectiveActivation, time: shape[0]) }
        guard shape.count == 1 else {
            throw .invalidLayer(
                "Dense(\(units) units)",
                reason: "takes vectors but receives \(shape.map(String.init).joined(separator: "×")) images; put a flatten layer before it")
        }
        return try Dense<Scalar>(shape[0], units, activation: config.effectiveActivation)
    }
}
