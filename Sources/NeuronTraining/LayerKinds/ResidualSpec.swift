import NeuronCore

/// `residual`: `y = x + f(x)`, the body `f` its `layers`, which must give back their input's shape
/// (one level: a body holds no residual block).
enum ResidualSpec: LayerSpec {
    static let keys: [LayerConfig.CodingKeys] = [.layers]

    static func validate(_ layer: LayerConfig, at path: String, _ checker: ConfigChecker) throws(ConfigError) {
        guard let body = layer.layers else { throw checker.missing("layers", in: path, because: "a residual layer needs layers, its body") }
        try checker.require(!body.isEmpty, "at least one layer in the body", at: "\(path).layers", found: "an empty list")
        for (j, inner) in body.enumerated() {
            try checker.require(
                inner.kind != .residual, "a layer other than residual (a body holds no residual block)", at: "\(path).layers[\(j)].kind",
                found: "'residual'")
            try checker.validateLayer(inner, at: "\(path).layers[\(j)]", isLast: false)
        }
    }

    /// The body's layers, each at its own path.
    static func checkRanges(_ layer: LayerConfig, at path: String) throws(ConfigRangeError) {
        for (j, inner) in (layer.layers ?? []).enumerated() { try inner.checkRanges(at: "\(path).layers[\(j)]") }
    }

    static func layer<Scalar: TensorScalar>(
        _ config: LayerConfig, _: Scalar.Type, input shape: [Int], vocabulary: Int?
    ) throws(NetworkError) -> any Layer<Scalar> {
        var body: [any Layer<Scalar>] = [], inner = shape
        for layer in try needs(config.layers, "layers", of: config) {
            let next = try layer.layer(Scalar.self, input: inner)
            body.append(next)
            inner = next.outputShape
        }
        return try Residual<Scalar>(body)
    }
}
