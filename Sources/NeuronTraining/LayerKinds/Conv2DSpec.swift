import NeuronCore

/// `conv2d`: a 2-D convolution over channels-last images, `filters` of a square `kernel`, a
/// `stride` (default 1), `padding` (valid or same) or `pad` (zeros on every side), an `activation`
/// (default identity).
enum Conv2DSpec: LayerSpec {
    static let keys: [LayerConfig.CodingKeys] = [.filters, .kernel, .stride, .padding, .pad, .activation]
    static let defaultActivation: Activation? = .identity
    static let takesImages = true

    static func validate(_ layer: LayerConfig, at path: String, _ checker: ConfigChecker) throws(ConfigError) {
        try checker.needs("filters", layer.filters, in: path, of: layer, "filters and kernel")
        try checker.needs("kernel", layer.kernel, in: path, of: layer, "filters and kernel")
        if layer.pad != nil, layer.padding != nil {
            throw checker.error(at: "\(path).pad", "\(path).pad: give either padding (valid or same) or pad (zeros on every side), not both")
        }
    }

    static func checkRanges(_ layer: LayerConfig, at path: String) throws(ConfigRangeError) {
        try ConfigRangeError.check(layer.filters, in: sizes, "\(path).filters")
        try ConfigRangeError.check(layer.kernel, in: sizes, "\(path).kernel")
        try ConfigRangeError.check(layer.stride, in: sizes, "\(path).stride")
        try ConfigRangeError.check(layer.pad, in: 0...ModelConfig.largestSize, "\(path).pad")
    }

    static func layer<Scalar: TensorScalar>(
        _ config: LayerConfig, _: Scalar.Type, input shape: [Int], vocabulary: Int?
    ) throws(NetworkError) -> any Layer<Scalar> {
        let kernel = try needs(config.kernel, "kernel", of: config), stride = config.stride ?? 1
        let padding: Padding = config.pad.map { .explicit(rows: $0, columns: $0) } ?? (config.padding == .same ? .same : .valid)
        return try Conv2D<Scalar>(
            input: shape, filters: try needs(config.filters, "filters", of: config), kernel: (kernel, kernel), stride: (stride, stride),
            padding: padding, activation: config.effectiveActivation)
    }
}
