// A trained network as an ONNX graph that takes raw features and returns what `neuron predict`
// prints: the preprocessing fitted in training comes first (standardization as Sub and Div, a scale
// as Mul), then one or two standard operators per layer, then the softmax head when the loss has one.
//
// The engine keeps images channels-last (NHWC); ONNX's Conv and pools take channels-first (NCHW).
// The graph reshapes the flat features to (batch, height, width, channels) as the engine reads them,
// transposes once to NCHW, and stays there: a convolution's weight in ONNX's (filters, channels,
// kh, kw) is the checkpoint's PyTorch layout, and ONNX's Flatten of an NCHW tensor gives exactly the
// channels-first vector the engine's Flatten gives. Weights and names are the checkpoint's.
import Foundation
import NeuronCore
import NeuronTraining

/// How a network is exported to ONNX.
public struct ONNXExportOptions: Sendable, Equatable {
    /// The batch dimension of the graph's input and output.
    public enum Batch: Sendable, Equatable {
        /// Any batch size (the dimension named `batch`).
        case dynamic
        /// Exactly this many rows.
        case fixed(Int)
    }

    /// The ONNX operator set the graph declares (default ``defaultOpset``).
    public var opset: Int
    public var batch: Batch

    /// The operator set written when none is asked for: ONNX 1.12's, read by every ONNX Runtime since 1.12.
    public static let defaultOpset = 17
    /// The operator sets the exporter writes: from 13 (Softmax over one axis, as the head needs) to 25
    /// (the newest that ONNX Runtime 1.32 runs, as the tests check).
    public static let supportedOpsets = 13...25

    public init(opset: Int = ONNXExportOptions.defaultOpset, batch: Batch = .dynamic) {
        (self.opset, self.batch) = (opset, batch)
    }

    /// The oldest IR version that carries `opset` (ONNX's version table); older files are read by more runtimes.
    static func irVersion(opset: Int) -> Int {
        switch opset {
        case ...14: 7
        case 15...18: 8
        case 19...20: 9
        case 21...22: 10
        case 23: 11
        case 24: 12
        default: 13  // 25
        }
    }
}

/// Why a network cannot be exported.
public enum ONNXExportError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A layer with no ONNX form, named by its index and description.
    case unsupportedLayer(index: Int, layer: String, reason: String)
    /// An operator set outside ``ONNXExportOptions/supportedOpsets``.
    case unsupportedOpset(Int)
    /// A fixed batch size below 1.
    case invalidBatch(Int)
    /// Feature names, or a preprocessing, for another number of features than the network takes.
    case featureCountMismatch(what: String, expected: Int, found: Int)

    public var description: String {
        switch self {
        case let .unsupportedLayer(index, layer, reason):
            "layer \(index), \(layer), cannot be exported to ONNX: \(reason)"
        case let .unsupportedOpset(opset):
            "ONNX operator set \(opset) is not supported: expected \(ONNXExportOptions.supportedOpsets.lowerBound) to "
                + "\(ONNXExportOptions.supportedOpsets.upperBound)"
        case let .invalidBatch(size):
            "the batch size must be at least 1 (or dynamic), got \(size)"
        case let .featureCountMismatch(what, expected, found):
            "the \(what) describes \(found) features, but the network takes \(expected)"
        }
    }
}

extension Network {
    /// The network as an ONNX model's bytes: input `features` (batch, features) of raw values,
    /// transformed by `preprocessing` as the first nodes; output `probabilities` (batch, classes)
    /// after a softmax head, or `values` (batch, outputs) otherwise; in this network's precision
    /// (convert it first, `converted(to: Float.self)`, for a float32 model). Evaluation mode:
    /// dropout is left out and batch normalization uses its running statistics. A text model (its
    /// first layer an embedding) takes `tokens` instead and gives the next token's scores and
    /// probabilities at every position.
    ///
    ///     // features: (batch, featureCount)  →  probabilities or values: (batch, outputCount)
    ///     // tokens: (batch, time) int64, time ≤ block  →  logits, probabilities: (batch, time, vocabulary)
    ///
    /// - Parameters:
    ///   - preprocessing: what training applied to the raw features (saved in the checkpoint).
    ///   - featureNames: the features' names, in order; saved as metadata (`neuron.feature_names`).
    ///   - classNames: the classes' names, in the output's order; saved as metadata (`neuron.class_names`).
    ///   - vocabulary: a text model's tokens; saved as metadata (`neuron.vocabulary`, the list of
    ///     the tokens' strings in token order, the boundary token 0 first as `""`), with
    ///     `neuron.boundary_token` and `neuron.block_size`, so that an app encodes and decodes
    ///     text with the file alone.
    ///   - options: the operator set and the batch dimension.
    /// - Throws: ``ONNXExportError`` naming a layer with no ONNX form, or an option out of range.
    public func onnxModel(
        preprocessing: Preprocessing = .none, featureNames: [String]? = nil, classNames: [String]? = nil, vocabulary: Vocabulary? = nil,
        options: ONNXExportOptions = ONNXExportOptions()
    ) throws(ONNXExportError) -> [UInt8] {
        guard ONNXExportOptions.supportedOpsets.contains(options.opset) else { throw .unsupportedOpset(options.opset) }
        if case let .fixed(size) = options.batch, size < 1 { throw .invalidBatch(size) }
        if let names = featureNames, names.count != featureCount {
            throw .featureCountMismatch(what: "list of feature names", expected: featureCount, found: names.count)
        }
        var builder = GraphBuilder<Scalar>(network: self, opset: options.opset)
        try builder.addPreprocessing(preprocessing)
        try builder.addLayers()
        let graph = try builder.finish(batch: options.batch)

        var metadata: [(key: String, value: String)] = [
            ("neuron.network", description), ("neuron.precision", Scalar.self == Float.self ? "float" : "double"),
            ("neuron.preprocessing", GraphBuilder<Scalar>.describe(preprocessing)),
        ]
        if let names = featureNames { metadata.append(("neuron.feature_names", json(names))) }
        if let names = classNames { metadata.append(("neuron.class_names", json(names))) }
        if let vocabulary, builder.readsTokens {
            if let tokenizer = vocabulary.tokenizer {
                // Hugging Face's tokenizer.json, which `tokenizers` reads as it is; a tokenizer of tiktoken's ranks,
                // which has no merge list to write there, in Neuron's own coding (a checkpoint's).
                if let text = try? TokenizerFile.huggingFaceJSON(tokenizer, path: "the ONNX metadata") {
                    metadata.append(("neuron.tokenizer", String(decoding: text, as: UTF8.self)))
                    metadata.append(("neuron.tokenizer_format", "huggingface"))
                } else if let text = try? JSONEncoder().encode(tokenizer) {
                    metadata.append(("neuron.tokenizer", String(decoding: text, as: UTF8.self)))
                    metadata.append(("neuron.tokenizer_format", "neuron"))
                }
            } else {
                metadata.append(("neuron.vocabulary", json([""] + vocabulary.characters.map { String($0) })))
                metadata.append(("neuron.boundary_token", "\(Vocabulary.boundary)"))
            }
            metadata.append(("neuron.block_size", "\(inputShape[0])"))
        }
        let model = ONNXModel(
            irVersion: ONNXExportOptions.irVersion(opset: options.opset), opset: options.opset, producerName: "Neuron",
            producerVersion: "1", documentation: "\(description), exported by Neuron", graph: graph, metadata: metadata)
        return model.encoded()
    }
}

/// A JSON array of strings, for metadata.
private func json(_ strings: [String]) -> String {
    let data = (try? JSONSerialization.data(withJSONObject: strings, options: [.withoutEscapingSlashes])) ?? Data("[]".utf8)
    return String(decoding: data, as: UTF8.self)
}

/// How a value between nodes is laid out: a matrix of features, an NCHW image, a text model's
/// token indices, or a vector at each position.
enum Layout: Equatable {
    /// (batch, count)
    case features(Int)
    /// (batch, channels, height, width)
    case image(height: Int, width: Int, channels: Int)
    /// (batch, time) of int64 token indices, `time` the graph's own (dynamic) and at most the
    /// network's `block` positions.
    case tokens(block: Int)
    /// (batch, time, features)
    case sequence(block: Int, features: Int)
}

/// A layer kind with an ONNX form: it writes its own nodes into the graph being built.
protocol ONNXLayer<Scalar>: Layer {
    /// Adds this layer's nodes after `graph`'s current value, and moves `graph.current` and
    /// `graph.layout` to its output. The layer is the network's layer `index`, or a layer inside it at
    /// `path` (`body.0.` inside a residual block), as its tensors are named.
    ///
    /// - Throws: ``ONNXExportError/unsupportedLayer(index:layer:reason:)`` when this layer, or one
    ///   inside it, cannot take the value it is given or has no ONNX form.
    func addNodes(to graph: inout GraphBuilder<Scalar>, index: Int, path: String) throws(ONNXExportError)
}

extension Layer {
    /// The error refusing this layer, the network's layer `index` or a layer inside it, for `reason`.
    func refused(at index: Int, _ reason: String) -> ONNXExportError {
        .unsupportedLayer(index: index, layer: description, reason: reason)
    }
}

/// Builds the graph node by node, tracking the current value's name and layout.
struct GraphBuilder<Scalar: TensorScalar> {
    let network: Network<Scalar>
    var graph = ONNXGraph(name: "neuron")
    /// The name of the value the next node reads.
    var current: String
    var layout: Layout

    static var elementType: ONNXElementType { Scalar.self == Float.self ? .float : .double }

    /// Whether the network reads token indices (a text model, its first layer an embedding).
    var readsTokens: Bool { network.layers.first is any TokenInput }

    /// The operator set the graph declares: a layer whose operator came later refuses an older one.
    let opset: Int

    init(network: Network<Scalar>, opset: Int = ONNXExportOptions.defaultOpset) {
        (self.network, self.opset) = (network, opset)
        if network.layers.first is any TokenInput {
            (current, layout) = ("tokens", .tokens(block: network.inputShape[0]))
        } else {
            (current, layout) = ("features", .features(network.featureCount))
        }
    }

    /// Adds `op` reading `inputs`; its output (and the node) is called `name`, which it returns.
    mutating func add(_ op: String, _ inputs: [String], name: String, _ attributes: [ONNXAttribute] = []) -> String {
        graph.nodes.append(ONNXNode(opType: op, inputs: inputs, outputs: [name], name: name, attributes: attributes))
        return name
    }

    mutating func constant(_ name: String, _ dimensions: [Int], _ scalars: [Scalar]) -> String {
        graph.initializers.append(ONNXTensor(name, dimensions: dimensions, floats: scalars))
        return name
    }

    /// Checks that the current value is rows of `features` (a matrix of them, or one at each
    /// position of a sequence), as a normalization over the last axis, `what`, reads them.
    /// - Throws: ``ONNXExportError/unsupportedLayer(index:layer:reason:)`` refusing `layer`, the network's layer `index`.
    func checkRows(of features: Int, for layer: some Layer, at index: Int, _ what: String) throws(ONNXExportError) {
        switch layout {
        case .features(let count), .sequence(_, let count):
            guard count == features else { throw layer.refused(at: index, "it normalizes \(features) features, but receives \(count)") }
        case .image, .tokens:
            throw layer.refused(at: index, "\(what) takes features or a sequence of them")
        }
    }

    /// An int64 vector initializer `name` (a shape, axes, pads, a start): its name.
    mutating func int64s(_ name: String, _ values: [Int]) -> String {
        graph.initializers.append(ONNXTensor(name, int64s: values))
        return name
    }

    // MARK: Preprocessing

    static func describe(_ preprocessing: Preprocessing) -> String {
        switch preprocessing {
        case .none: "none"
        case let .scale(factor): "scale: features multiplied by \(factor) (the graph's first node)"
        case .standardize: "standardize: (features - mean) / standard deviation, per feature (the graph's first nodes)"
        }
    }

    /// The transformation training applied, in the same operations and precision as `Preprocessing.apply`.
    mutating func addPreprocessing(_ preprocessing: Preprocessing) throws(ONNXExportError) {
        let count = network.featureCount
        switch preprocessing {
        case .none:
            break
        case let .scale(factor):
            let c = constant("preprocessing.scale", [], [Scalar(factor)])
            current = add("Mul", [current, c], name: "preprocessing.scaled")
        case let .standardize(mean, deviation):
            guard mean.count == count, deviation.count == count else {
                throw .featureCountMismatch(what: "standardization", expected: count, found: mean.count)
            }
            let m = constant("preprocessing.mean", [count], mean.map { Scalar($0) })
            let s = constant("preprocessing.standard_deviation", [count], deviation.map { Scalar($0) })
            let centred = add("Sub", [current, m], name: "preprocessing.centred")
            current = add("Div", [centred, s], name: "preprocessing.standardized")
        }
    }

    // MARK: Layers

    mutating func addLayers() throws(ONNXExportError) {
        let input = network.inputShape
        if readsTokens {
            // Token indices as given: the embedding's Gather reads them.
        } else if input.count == 3 {
            // The engine reads each row of features as an (height, width, channels) image.
            let (h, w, c) = (input[0], input[1], input[2])
            let nhwc = add("Reshape", [current, int64s("input.image_shape", [-1, h, w, c])], name: "input.nhwc")
            current = add("Transpose", [nhwc], name: "input.nchw", [ONNXAttribute(name: "perm", value: .ints([0, 3, 1, 2]))])
            layout = .image(height: h, width: w, channels: c)
        } else if input.count != 1 {
            throw .unsupportedLayer(
                index: 0, layer: network.layers[0].description,
                reason: "inputs of shape \(input) are neither features nor an image")
        }
        for (index, layer) in network.layers.enumerated() {
            try add(layer, index: index, path: "")
        }
    }

    /// The tensor `name` of layer `index`, in the checkpoint's (PyTorch's) layout.
    func parameter(_ index: Int, _ name: String) -> (name: String, tensor: Tensor<Scalar>) {
        let tensor = network.parameterTensors.first { $0.layer == index && $0.tensor == name }!
        return (tensor.name, Checkpoint.fileLayout(network.parameter(tensor), order: tensor.pytorchOrder))
    }

    func state(_ index: Int, _ name: String) -> (name: String, tensor: Tensor<Scalar>) {
        let tensor = network.stateTensors.first { $0.layer == index && $0.tensor == name }!
        return (tensor.name, network.stateTensor(tensor))
    }

    /// The tensor `p` as an initializer, written once: a table two layers read (the embedding's,
    /// which a tied head reuses) is one initializer.
    mutating func initializer(_ p: (name: String, tensor: Tensor<Scalar>)) -> String {
        if graph.initializers.contains(where: { $0.name == p.name }) { return p.name }
        return constant(p.name, p.tensor.shape, p.tensor.scalars)
    }

    /// `x·Wᵀ + b` at every position of a sequence, W in nn.Linear's `(outputs, inputs)`: MatMul
    /// broadcasts over the batch and time, which Gemm (two dimensions) cannot. Returns the sum's name.
    mutating func linear(weight: String, bias: String?, prefix: String) -> String {
        let transposed = add("Transpose", [weight], name: "\(prefix).weight_t", [ONNXAttribute(name: "perm", value: .ints([1, 0]))])
        let product = add("MatMul", [current, transposed], name: "\(prefix).matmul")
        guard let bias else { return product }
        return add("Add", [product, bias], name: "\(prefix).linear")
    }

    /// The graph's `time`, a one-element int64 tensor: the tokens' second dimension, for the nodes
    /// that crop a table or a mask to the positions given (position embedding, attention). Made once.
    mutating func time() -> String {
        let name = "input.time"
        if graph.nodes.contains(where: { $0.outputs == [name] }) { return name }
        let shape = add("Shape", ["tokens"], name: "input.shape")
        return add("Gather", [shape, int64s("input.time_axis", [1])], name: name, [ONNXAttribute(name: "axis", value: .int(0))])
    }

    /// The prefix of the nodes of layer `index`, or of the layer inside it at `path`: `layers.1`, `layers.1.body.0`.
    func prefix(_ index: Int, _ path: String) -> String {
        "layers.\(index)" + (path.isEmpty ? "" : "." + path.dropLast())
    }

    /// Adds the nodes of `layer`, the network's layer `index` or a layer inside it: `path` is its
    /// place within layer `index` (`body.0.` inside a residual block), as its tensors are named.
    mutating func add(_ layer: any Layer<Scalar>, index: Int, path: String) throws(ONNXExportError) {
        guard let exportable = layer as? any ONNXLayer<Scalar> else {
            throw layer.refused(at: index, "no ONNX form is defined for this kind of layer")
        }
        try exportable.addNodes(to: &self, index: index, path: path)
    }

    mutating func addActivation(_ activation: Activation, prefix: String) {
        switch activation {
        case .tanh: current = add("Tanh", [current], name: "\(prefix).tanh")
        case .sigmoid: current = add("Sigmoid", [current], name: "\(prefix).sigmoid")
        case .relu: current = add("Relu", [current], name: "\(prefix).relu")
        // A softmax output stays its logits in the layer; the network's loss head applies it.
        case .identity, .softmax: break
        }
    }

    /// The softmax head (with a softmax cross-entropy loss), the output back in the engine's layout,
    /// and the graph's input and output.
    mutating func finish(batch: ONNXExportOptions.Batch) throws(ONNXExportError) -> ONNXGraph {
        let rows: ONNXValueInfo.Dimension =
            switch batch {
            case .dynamic: .named("batch")
            case let .fixed(size): .fixed(size)
            }
        if readsTokens { return try finishText(rows: rows) }
        if case .image(let h, let w, let c) = layout {
            // A network ending on an image returns it as the engine does: NHWC, one row per sample.
            let nhwc = add("Transpose", [current], name: "output.nhwc", [ONNXAttribute(name: "perm", value: .ints([0, 2, 3, 1]))])
            current = add("Reshape", [nhwc, int64s("output.shape", [-1, h * w * c])], name: "output.rows")
        }
        let classifies = network.loss == .softmaxCrossEntropy
        if classifies {
            current = add("Softmax", [current], name: "head.softmax", [ONNXAttribute(name: "axis", value: .int(1))])
        }
        let outputName = classifies ? "probabilities" : "values"
        if let last = graph.nodes.indices.last, graph.nodes[last].outputs == [current] {
            graph.nodes[last].outputs = [outputName]
        } else {
            // No node at all (a network of dropout): the output is the input.
            graph.nodes.append(ONNXNode(opType: "Identity", inputs: [current], outputs: [outputName], name: "output"))
        }
        graph.inputs = [
            ONNXValueInfo(
                name: "features", elementType: Self.elementType, dimensions: [rows, .fixed(network.featureCount)],
                documentation: "raw features, one row per sample, in the order of neuron.feature_names; preprocessed in the graph")
        ]
        graph.outputs = [
            ONNXValueInfo(
                name: outputName, elementType: Self.elementType, dimensions: [rows, .fixed(network.outputCount)],
                documentation: classifies
                    ? "class probabilities, one row per sample, columns in the order of neuron.class_names" : "the network's outputs")
        ]
        graph.documentation = "\(network.description); dropout left out, batch normalization with its running statistics"
        return graph
    }

    /// A text model's ends: input `tokens` (batch, time) of int64 token indices, time from 1 to
    /// the block; outputs `logits` (batch, time, vocabulary), the scores of the next token at every
    /// position, and `probabilities`, their softmax over the vocabulary.
    mutating func finishText(rows: ONNXValueInfo.Dimension) throws(ONNXExportError) -> ONNXGraph {
        guard case .sequence(let block, let vocabulary) = layout else {
            throw .unsupportedLayer(
                index: network.layers.count - 1, layer: network.layers[network.layers.count - 1].description,
                reason: "a text model must end on a score per token at every position")
        }
        if let last = graph.nodes.indices.last, graph.nodes[last].outputs == [current] {
            graph.nodes[last].outputs = ["logits"]
        } else {
            graph.nodes.append(ONNXNode(opType: "Identity", inputs: [current], outputs: ["logits"], name: "output"))
        }
        _ = add("Softmax", ["logits"], name: "probabilities", [ONNXAttribute(name: "axis", value: .int(-1))])
        let time = ONNXValueInfo.Dimension.named("time")
        graph.inputs = [
            ONNXValueInfo(
                name: "tokens", elementType: .int64, dimensions: [rows, time],
                documentation:
                    "token indices (neuron.vocabulary's), the boundary token (0) first; time from 1 to \(block): a longer line's last \(block) tokens, as the engine crops"
            )
        ]
        graph.outputs = [
            ONNXValueInfo(
                name: "logits", elementType: Self.elementType, dimensions: [rows, time, .fixed(vocabulary)],
                documentation: "the next token's scores at every position, in token order"),
            ONNXValueInfo(
                name: "probabilities", elementType: Self.elementType, dimensions: [rows, time, .fixed(vocabulary)],
                documentation: "the next token's probabilities at every position: the softmax of logits"),
        ]
        graph.documentation = "\(network.description); dropout left out"
        return graph
    }
}
