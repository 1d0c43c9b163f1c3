import Foundation
import NeuronCore
import NeuronTraining
import Testing

@testable import NeuronExport

/// A small GPT's shape: what a test varies in `model.transformer`, and the GELU form, which the
/// config always builds exact.
struct GPTCase: CustomStringConvertible, Sendable {
    var blocks: Int
    var tied: Bool
    var approximation: GELUApproximation
    /// Dropout rate, exported as nothing (the graph is the network in evaluation).
    var dropout = 0.0
    /// Rows of the position table beyond the block, which the graph's Slice leaves unread.
    var extraPositions = 0

    var description: String {
        "\(blocks) block\(blocks == 1 ? "" : "s"), \(tied ? "tied" : "dense") head, GELU \(approximation)"
            + (dropout > 0 ? ", dropout \(dropout)" : "") + (extraPositions > 0 ? ", \(extraPositions) extra positions" : "")
    }

    var name: String { "gpt-\(blocks)-\(tied ? "tied" : "dense")-\(approximation)" }
}

/// Builds and checks GPTs as `TransformerConfig` builds them: 8 features in 2 heads, a block of 6,
/// 5 tokens.
enum GPTExport {
    static let (block, vocabulary, features, heads) = (6, 5, 8, 2)

    /// The network of `shape` with random weights, each attention layer replaced by `attention(layer)`.
    ///
    /// Every parameter is moved by N(0, 0.3²) after the seeded initialization: its zero biases would
    /// hide a mixed-up order of q, k and v in `c_attn.bias`, its ones and zeros a LayerNorm's weight
    /// and bias read the wrong way round, and its N(0, 0.02²) attention weights leave every softmax
    /// all but uniform, under which a missing mask changes little.
    static func network(
        _ shape: GPTCase, seed: UInt64,
        attention: (CausalSelfAttention<Double>) -> any Layer<Double> = { $0 }
    ) throws -> Network<Double> {
        var config = TransformerConfig(blocks: shape.blocks, heads: heads, features: features)
        (config.tieWeights, config.dropout, config.mlpRatio) = (shape.tied, shape.dropout, 2)
        config.positions = block + shape.extraPositions
        let built: [any Layer<Double>] = try config.layers(Double.self, time: block, vocabulary: vocabulary)
        let layers: [any Layer<Double>] = try built.map { layer in
            guard let residual = layer as? Residual<Double> else { return layer }
            return try Residual<Double>(
                try residual.body.layers.map { inner in
                    if let gelu = inner as? GELU<Double> { return try GELU<Double>(shape: gelu.inputShape, approximation: shape.approximation) }
                    if let layer = inner as? CausalSelfAttention<Double> { return attention(layer) }
                    return inner
                })
        }
        var network = try Network<Double>(layers, loss: .sequenceCrossEntropy)
        network.initialize(seed: seed)
        var g = SeededGenerator(seed: seed + 1)
        for i in network.parameters.indices { network.parameters[i] += 0.3 * g.normal() }
        return network
    }

    /// ONNX Runtime's verdicts on `network` at `opset` in float64, or in float32 after converting it.
    static func verdicts(_ name: String, _ network: Network<Double>, float: Bool = false, opset: Int = ONNXExportOptions.defaultOpset) throws
        -> [ONNXVerdict]
    {
        let batches = textBatches(vocabulary: vocabulary, block: block, seed: 11)
        let options = ONNXExportOptions(opset: opset)
        if float {
            return try TextExportCase(
                name: name + "-f32", network: network.converted(to: Float.self), vocabulary: letters(vocabulary), batches: batches,
                options: options
            ).verdicts()
        }
        return try TextExportCase(name: name, network: network, vocabulary: letters(vocabulary), batches: batches, options: options).verdicts()
    }
}

/// A causal self-attention whose ONNX form leaves the mask out: the real layer's nodes with the
/// mask's Add made an Identity of the scores, so that every position also attends to later ones.
/// The engine runs the real layer.
struct UnmaskedAttention: ONNXLayer {
    var attention: CausalSelfAttention<Double>

    var inputShape: [Int] { attention.inputShape }
    var outputShape: [Int] { attention.outputShape }
    var parameterShapes: [(name: String, shape: [Int])] { attention.parameterShapes }
    var description: String { "Unmasked(\(attention))" }
    var output: Tensor<Double> { attention.output }
    var inputGradient: Tensor<Double> { attention.inputGradient }

    func initialize(parameters: UnsafeMutableBufferPointer<Double>, state: UnsafeMutableBufferPointer<Double>, using generator: inout SeededGenerator)
    {
        attention.initialize(parameters: parameters, state: state, using: &generator)
    }
    mutating func forward(_ x: Tensor<Double>, parameters: UnsafeBufferPointer<Double>, state: UnsafeMutableBufferPointer<Double>, mode: LayerMode) {
        attention.forward(x, parameters: parameters, state: state, mode: mode)
    }
    mutating func backward(
        input x: Tensor<Double>, outputGradient dy: Tensor<Double>,
        parameters: UnsafeBufferPointer<Double>, gradients: UnsafeMutableBufferPointer<Double>, computeInputGradient: Bool
    ) {
        attention.backward(input: x, outputGradient: dy, parameters: parameters, gradients: gradients, computeInputGradient: computeInputGradient)
    }
    func converted<Other: TensorScalar>(to: Other.Type) -> any Layer<Other> { self as? any Layer<Other> ?? attention.converted(to: Other.self) }

    func addNodes(to graph: inout GraphBuilder<Double>, index: Int, path: String) throws(ONNXExportError) {
        try attention.addNodes(to: &graph, index: index, path: path)
        let name = "\(graph.prefix(index, path)).masked"
        let at = graph.graph.nodes.firstIndex { $0.name == name }!
        graph.graph.nodes[at] = ONNXNode(opType: "Identity", inputs: [graph.graph.nodes[at].inputs[0]], outputs: [name], name: name)
    }
}

@Suite("GPTs in ONNX: ONNX Runtime's next-token probabilities against the engine's, batch 1 and 7, lengths 1 to the block")
struct TransformerExportTests {
    /// The tanh form of GELU, which ONNX Runtime runs in float64 (it has no float64 Erf).
    static let tanhCases = [
        GPTCase(blocks: 1, tied: false, approximation: .tanh),
        GPTCase(blocks: 2, tied: true, approximation: .tanh, dropout: 0.1, extraPositions: 2),
        GPTCase(blocks: 2, tied: false, approximation: .tanh, extraPositions: 1),
    ]
    static let exactCases = [
        GPTCase(blocks: 1, tied: true, approximation: .none),
        GPTCase(blocks: 2, tied: false, approximation: .none, dropout: 0.1, extraPositions: 2),
    ]

    @Test("Float64 within 1e-10 and float32 within 1e-5 (GELU's tanh form)", arguments: tanhCases)
    func tanhForm(_ shape: GPTCase) throws {
        let network = try GPTExport.network(shape, seed: 21)
        let verdicts = try GPTExport.verdicts(shape.name, network)
        #expect(verdicts.count == 9)  // batch 1 and 7 at four lengths, and the cropped lines
        for verdict in verdicts {
            #expect(verdict.checker == "ok" && verdict.ran, "\(verdict)")
            #expect(try #require(verdict.maxAbsDiff) <= 1e-10, "\(verdict)")
            #expect(verdict.vocabulary == ["", "a", "b", "c", "d"] && verdict.block == GPTExport.block)
        }
        for verdict in try GPTExport.verdicts(shape.name, network, float: true) {
            #expect(verdict.checker == "ok" && verdict.ran, "\(verdict)")
            #expect(try #require(verdict.maxAbsDiff) <= 1e-5, "\(verdict)")
        }
    }

    /// ONNX Runtime 1.32 has no float64 Erf: the float64 file passes the checker and is refused for
    /// that reason alone (should a later runtime run it, it must agree within 1e-10), and ONNX's
    /// reference evaluator, whose Erf rounds to float32, agrees within 1e-6; float32 runs.
    @Test("Exact GELU: float32 within 1e-5; float64 valid, and refused by ONNX Runtime only for its Erf", arguments: exactCases)
    func exactForm(_ shape: GPTCase) throws {
        let network = try GPTExport.network(shape, seed: 22)
        for verdict in try GPTExport.verdicts(shape.name, network, float: true) {
            #expect(verdict.checker == "ok" && verdict.ran, "\(verdict)")
            #expect(try #require(verdict.maxAbsDiff) <= 1e-5, "\(verdict)")
        }
        for verdict in try GPTExport.verdicts(shape.name, network) {
            #expect(verdict.checker == "ok", "\(verdict)")
            if verdict.ran {
                #expect(try #require(verdict.maxAbsDiff) <= 1e-10, "\(verdict)")
            } else {
                #expect(verdict.reason?.contains("Erf") == true, "\(verdict)")
                // ONNX's reference evaluator runs it instead; its Erf (onnx 1.x, `np.vectorize(math.erf,
                // otypes=["f"])`) rounds to float32, so it agrees to float32's precision (measured 9.5e-9).
                #expect((verdict.referenceMaxAbsDiff ?? 1) <= 1e-6, "\(verdict)")
            }
        }
    }

    @Test("Operator sets 20 and 25: the same graph, float64 (tanh form) within 1e-10, float32 (exact form) within 1e-5", arguments: [20, 25])
    func newerOpsets(_ opset: Int) throws {
        let tanh = try GPTExport.network(Self.tanhCases[1], seed: 23)
        for verdict in try GPTExport.verdicts("gpt-opset\(opset)", tanh, opset: opset) {
            #expect(verdict.checker == "ok" && verdict.ran && verdict.opset == opset, "\(verdict)")
            #expect(try #require(verdict.maxAbsDiff) <= 1e-10, "\(verdict)")
        }
        let exact = try GPTExport.network(Self.exactCases[1], seed: 24)
        for verdict in try GPTExport.verdicts("gpt-exact-opset\(opset)", exact, float: true, opset: opset) {
            #expect(verdict.checker == "ok" && verdict.ran && verdict.opset == opset, "\(verdict)")
            #expect(try #require(verdict.maxAbsDiff) <= 1e-5, "\(verdict)")
        }
    }

    @Test("Opsets before 17 are refused at the first LayerNorm, naming LayerNormalization's", arguments: [13, 16])
    func olderOpsetRefused(_ opset: Int) throws {
        let network = try GPTExport.network(Self.tanhCases[0], seed: 25)
        let reason = "LayerNormalization needs ONNX operator set 17 or later (17 is the default), got \(opset)"
        // Layer 2 is the first residual block, the LayerNorm its body's first layer.
        #expect(throws: ONNXExportError.unsupportedLayer(index: 2, layer: "LayerNorm(6×8)", reason: reason)) {
            try network.onnxModel(vocabulary: letters(GPTExport.vocabulary), options: ONNXExportOptions(opset: opset))
        }
    }

    /// The mask is what keeps a position from reading later ones: without it every length above 1
    /// disagrees, while at length 1, where there is nothing later, the two still agree.
    @Test("Planted fault: the attention's mask left out disagrees at every length above 1")
    func unmaskedAttentionDisagrees() throws {
        let network = try GPTExport.network(Self.tanhCases[0], seed: 26) { UnmaskedAttention(attention: $0) }
        let verdicts = try GPTExport.verdicts("gpt-unmasked", network)
        #expect(verdicts.count == 9)  // batch 1 and 7 at four lengths, and the cropped lines
        for verdict in verdicts {
            #expect(verdict.checker == "ok" && verdict.ran, "\(verdict)")
            let difference = try #require(verdict.maxAbsDiff)
            if verdict.name.hasSuffix("×1") {
                #expect(difference <= 1e-10, "\(verdict)")
            } else {
                #expect(difference > 1e-2, "\(verdict)")
            }
        }
    }

    @Test("A tied head reads the embedding's table: one initializer for both, and no weight of its own")
    func tiedTableOnce() throws {
        let network = try GPTExport.network(Self.tanhCases[1], seed: 27)
        var builder = GraphBuilder<Double>(network: network)
        try builder.addLayers()
        let graph = try builder.finish(batch: .dynamic)
        let head = network.layers.count - 1
        #expect(network.layers[head] is TiedHead<Double>)
        #expect(graph.initializers.filter { $0.name == "layers.0.weight" }.count == 1)
        #expect(!graph.initializers.contains { $0.name.hasPrefix("layers.\(head).") })
        let product = try #require(graph.nodes.first { $0.name == "layers.\(head).matmul" })
        let transpose = try #require(graph.nodes.first { $0.outputs == [product.inputs[1]] })
        #expect(transpose.opType == "Transpose" && transpose.inputs == ["layers.0.weight"])
    }
}
