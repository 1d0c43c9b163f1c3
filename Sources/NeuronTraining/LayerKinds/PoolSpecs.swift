import NeuronCore

/// What the two pools share: a square window of `size` moving by `stride` (default `size`), or
/// `global: true`, one window over the whole image.
protocol PoolSpec: LayerSpec {}

extension PoolSpec {
    static var keys: [LayerConfig.CodingKeys] { [.size, .stride, .global] }
    static var takesImages: Bool { true }

    static func checkRanges(_ layer: LayerConfig, at path: String) throws(ConfigRangeError) {
        try ConfigRangeError.check(layer.size, in: sizes, "\(path).size")
        try ConfigRangeError.check(layer.stride, in: sizes, "\(path).stride")
    }

    /// `global` without `size` and `stride`, or else `size`, which `needs` describes.
    static func validatePool(_ layer: LayerConfig, at path: String, _ checker: ConfigChecker, needs: String) throws(ConfigError) {
        if layer.global == true {
            if layer.size != nil || layer.stride != nil {
                throw checker.error(at: "\(path).global", "\(path).global: a global pool takes the whole image; leave out size and stride")
            }
        } else {
            try checker.needs("size", layer.size, in: path, of: layer, needs)
        }
    }
}

/// `maxPool2d`: the largest value of each window, per channel.
enum MaxPool2DSpec: PoolSpec {
    static func validate(_ layer: LayerConfig, at path: String, _ checker: ConfigChecker) throws(ConfigError) {
        try validatePool(layer, at: path, checker, needs: "size")
    }

    static func layer<Scalar: TensorScalar>(
        _ config: LayerConfig, _: Scalar.Type, input shape: [Int], vocabulary: Int?
    ) throws(NetworkError) -> any Layer<Scalar> {
        if config.global == true { return try MaxPool2D<Scalar>(input: shape, size: (shape.first ?? 0, shape.count > 1 ? shape[1] : 0)) }
        let size = try needs(config.size, "size", of: config)
        return try MaxPool2D<Scalar>(input: shape, size: (size, size), stride: config.stride.map { ($0, $0) })
    }
}

/// `avgPool2d`: the mean of each window, per channel.
enum AvgPool2DSpec: PoolSpec {
    static func validate(_ layer: LayerConfig, at path: String, _ checker: ConfigChecker) throws(ConfigError) {
        try validatePool(layer, at: path, checker, needs: "size (or global: true)")
    }

    static func layer<Scalar: TensorScalar>(
        _ config: LayerConfig, _: Scalar.Type, input shape: [Int], vocabulary: Int?
    ) throws(NetworkError) -> any Layer<Scalar> {
        if config.global == true { return try AvgPool2D<Scalar>.global(input: shape) }
        let size = try needs(config.size, "size", of: config)
        return try AvgPool2D<Scalar>(input: shape, size: (size, size), stride: config.stride.map { ($0, $0) })
    }
}
