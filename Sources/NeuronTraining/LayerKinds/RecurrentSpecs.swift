import NeuronCore

/// What the recurrent kinds share: `units`, the hidden state's size.
protocol RecurrentSpec: LayerSpec {}

extension RecurrentSpec {
    static var keys: [LayerConfig.CodingKeys] { [.units] }

    static func validate(_ layer: LayerConfig, at path: String, _ checker: ConfigChecker) throws(ConfigError) {
        try checker.needs("units", layer.units, in: path, of: layer, "units (the hidden state's size)")
    }

    static func checkRanges(_ layer: LayerConfig, at path: String) throws(ConfigRangeError) {
        try ConfigRangeError.check(layer.units, in: sizes, "\(path).units")
    }
}

/// `rnn`: a recurrent layer of tanh units over the time axis.
enum RNNSpec: RecurrentSpec {
    static func layer<Scalar: TensorScalar>(
        _ config: LayerConfig, _: Scalar.Type, input shape: [Int], vocabulary: Int?
    ) throws(NetworkError) -> any Layer<Scalar> {
        let (time, features) = try sequence(shape, of: config)
        return try RNN<Scalar>(time: time, inputs: features, hidden: try needs(config.units, "units", of: config))
    }
}

/// `gru`: a gated recurrent unit layer over the time axis (PyTorch's `nn.GRU`).
enum GRUSpec: RecurrentSpec {
    static func layer<Scalar: TensorScalar>(
        _ config: LayerConfig, _: Scalar.Type, input shape: [Int], vocabulary: Int?
    ) throws(NetworkError) -> any Layer<Scalar> {
        let (time, features) = try sequence(shape, of: config)
        return try GRU<Scalar>(time: time, inputs: features, hidden: try needs(config.units, "units", of: config))
    }
}
