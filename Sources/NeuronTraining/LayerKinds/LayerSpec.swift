// A kind of layer as a config names it is one type, a spec, in one file of this folder: the keys
// it takes, the keys it needs and how they combine, the bounds of its values, and the layer it
// builds for a shape. The loader (a file's keys and values), a checkpoint's validation (its saved
// config's values) and the run builder (the layers) all ask the spec, found by the layer's kind
// (`LayerConfig.Kind.spec`). What a built layer says of itself (its caches' size for the memory
// budget, its ONNX form, whether its units can be explained) it answers as a layer, in NeuronCore
// or as an extension where that view lives, so nothing downcasts from outside.
//
// Adding a kind: its layer in NeuronCore/Layers, its spec here, and two lines beside
// `LayerConfig.Kind` (the case and its spec); a key no kind took before is a field of LayerConfig.
import NeuronCore

/// One kind of layer in a config: its keys, its checks and its construction.
protocol LayerSpec {
    /// The keys a layer of this kind takes besides `kind`, in Docs/Config.md's order.
    static var keys: [LayerConfig.CodingKeys] { get }
    /// The activation a layer of this kind applies when none is given; nil for a kind that
    /// applies none (and whose saved config never writes one).
    static var defaultActivation: Activation? { get }
    /// Whether a layer of this kind needs its input as an image.
    static var takesImages: Bool { get }
    /// Whether its activation may be softmax (in the output layer alone).
    static var takesSoftmax: Bool { get }
    /// The keys the layer at `path` (`model.layers[2]`) needs and the rules between them, as the
    /// loader reads a file; each key's type and its kind's keys are checked before.
    static func validate(_ layer: LayerConfig, at path: String, _ checker: ConfigChecker) throws(ConfigError)
    /// The bounds of the values the layer gives: the loader's, and a checkpoint's saved config's.
    static func checkRanges(_ layer: LayerConfig, at path: String) throws(ConfigRangeError)
    /// The layer for samples of shape `input` (tokens of a `vocabulary` for an embedding).
    /// - Throws: `NetworkError.invalidLayer(_:reason:)` for a shape the layer cannot take.
    static func layer<Scalar: TensorScalar>(
        _ config: LayerConfig, _ scalar: Scalar.Type, input: [Int], vocabulary: Int?
    ) throws(NetworkError) -> any Layer<Scalar>
}

extension LayerSpec {
    static var defaultActivation: Activation? { nil }
    static var takesImages: Bool { false }
    static var takesSoftmax: Bool { false }
    static func validate(_ layer: LayerConfig, at path: String, _ checker: ConfigChecker) throws(ConfigError) {}
    static func checkRanges(_ layer: LayerConfig, at path: String) throws(ConfigRangeError) {}

    /// The sizes a layer's count may take: 1 to ``ModelConfig/largestSize``.
    static var sizes: ClosedRange<Int> { 1...ModelConfig.largestSize }

    /// `value`, which the loader requires for this kind (a config built in code may leave it out).
    static func needs<T>(_ value: T?, _ key: String, of config: LayerConfig) throws(NetworkError) -> T {
        guard let value else { throw .invalidLayer("a \(config.kind.rawValue) layer", reason: "needs \(key)") }
        return value
    }

    /// The shape a sequence layer takes, `[time, features]`.
    static func sequence(_ shape: [Int], of config: LayerConfig) throws(NetworkError) -> (time: Int, features: Int) {
        guard shape.count == 2 else {
            throw .invalidLayer(
                "a \(config.kind.rawValue) layer",
                reason: "takes sequences of vectors (time × features) but receives \(shape.map(String.init).joined(separator: "×"))")
        }
        return (shape[0], shape[1])
    }

    /// Checks `epsilon`, added to a variance or a mean square whose reciprocal square root the
    /// layer takes, where `zero` says when that is 0 without it.
    static func checkEpsilon(_ epsilon: Double?, at path: String, zero: String) throws(ConfigRangeError) {
        guard let epsilon else { return }
        try ConfigRangeError.check(
            epsilon >= LayerConfig.smallestEpsilon && epsilon.isFinite, "\(path).epsilon", epsilon,
            "a finite number of at least \(LayerConfig.smallestEpsilon) (epsilon keeps 1/√(variance + epsilon) finite for \(zero); Float holds nothing below 1.4e-45)"
        )
    }
}

extension ConfigChecker {
    /// Throws `missing key` at `path` unless `value` is given: the layer's kind needs `what`.
    func needs(_ key: String, _ value: (some Any)?, in path: String, of layer: LayerConfig, _ what: String) throws(ConfigError) {
        guard value != nil else { throw missing(key, in: path, because: "a \(layer.kind.rawValue) layer needs \(what)") }
    }
}
