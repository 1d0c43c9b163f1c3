import Foundation
import NeuronCore
import Testing

@testable import NeuronExport

// ONNX Runtime (1.32) runs its CPU RNN and GRU kernels in float32 only: a float64 RNN has no kernel
// ("Could not find an implementation for RNN(14) node") and a float64 GRU stops at its first run
// ("GRU operator does not support double yet"). The float64 models are checked by ONNX's checker,
// their refusal asserted, and their agreement measured by ONNX's reference evaluator (a second
// implementation of the operators' definitions, in NumPy); ONNX Runtime's is measured in float32.

@Suite("Recurrent layers in ONNX: ONNX's RNN and GRU operators against the engine's passes")
struct RecurrentExportTests {
    static let (block, vocabulary, features, hidden) = (6, 5, 4, 3)

    /// Embedding → `kind` → Dense at every position, randomly initialized, its initial state and
    /// biases moved off their initial values (h0 is zero at first) so that each term shows.
    static func network(_ kind: String, seed: UInt64) throws -> Network<Double> {
        let recurrent: any Layer<Double> =
            kind == "RNN"
            ? try RNN<Double>(time: block, inputs: features, hidden: hidden) : try GRU<Double>(time: block, inputs: features, hidden: hidden)
        var network = try Network<Double>(
            [
                try Embedding<Double>(vocabulary: vocabulary, features: features, time: block), recurrent,
                try Dense<Double>(hidden, vocabulary, activation: .identity, time: block),
            ], loss: .sequenceCrossEntropy)
        network.initialize(seed: seed)
        var g = SeededGenerator(seed: seed + 100)
        for tensor in network.parameterTensors where tensor.layer == 1 && ["h0", "bias_ih_l0", "bias_hh_l0"].contains(tensor.tensor) {
            for i in tensor.range { network.parameters[i] += g.uniform(-0.8, 0.8) }
        }
        return network
    }

    @Test("An RNN and a GRU between an embedding and a dense layer agree with the engine in float32 within 1e-5, opsets 13, 17 and 25")
    func float32Agreement() throws {
        for (kind, seed) in [("RNN", UInt64(11)), ("GRU", 12)] {
            let network = try Self.network(kind, seed: seed).converted(to: Float.self)
            let batches = textBatches(vocabulary: Self.vocabulary, block: Self.block, seed: seed)
            for opset in [13, 17, 25] {
                var check = TextExportCase(name: "\(kind)-\(opset)", network: network, vocabulary: letters(Self.vocabulary), batches: batches)
                check.options = ONNXExportOptions(opset: opset)
                let verdicts = try check.verdicts()
                #expect(verdicts.count == batches.count)
                for verdict in verdicts {
                    #expect(verdict.checker == "ok" && verdict.ran && verdict.opset == opset, "\(verdict)")
                    #expect(try #require(verdict.maxAbsDiff) <= 1e-5, "\(verdict)")
                }
            }
        }
    }

    @Test(
        "In float64 the models pass ONNX's checker; ONNX Runtime refuses them for want of a float64 RNN or GRU kernel, and ONNX's reference evaluator agrees within 1e-10"
    )
    func float64Refused() throws {
        for (kind, seed) in [("RNN", UInt64(11)), ("GRU", 12)] {
            let batches = textBatches(vocabulary: Self.vocabulary, block: Self.block, seed: seed)
            let check = TextExportCase(
                name: kind, network: try Self.network(kind, seed: seed), vocabulary: letters(Self.vocabulary), batches: batches)
            for verdict in try check.verdicts() {
                #expect(verdict.checker == "ok" && !verdict.ran, "\(verdict)")
                let reason = try #require(verdict.reason)
                #expect(
                    reason.contains(kind) && (reason.contains("Could not find an implementation") || reason.contains("does not support double")),
                    "\(verdict)")
                #expect(try #require(verdict.referenceMaxAbsDiff) <= 1e-10, "\(verdict)")
            }
        }
    }

    @Test("A GRU written with PyTorch's gate order (r and z swapped for ONNX) disagrees, through the same path that agrees in ONNX's")
    func swappedGatesDisagree() throws {
        let network = try Self.network("GRU", seed: 12).converted(to: Float.self)
        let batches = textBatches(vocabulary: Self.vocabulary, block: Self.block, seed: 12)
        let right = try Self.verdicts(network, batches: batches, gateOrder: GRU<Float>.onnxGateOrder)
        let swapped = try Self.verdicts(network, batches: batches, gateOrder: [0, 1, 2])
        for verdict in right { #expect(try #require(verdict.maxAbsDiff) <= 1e-5, "\(verdict)") }
        // One position sees h0 and one step of the cell: the swap shows from the first.
        for verdict in swapped { #expect(try #require(verdict.maxAbsDiff) > 1e-2, "\(verdict)") }
    }

    @Test("An RNN or a GRU given anything but a sequence is refused")
    func refusesFeatures() throws {
        let network = try Self.network("RNN", seed: 1)
        var graph = GraphBuilder<Double>(network: network)
        graph.layout = .features(Self.features)
        let rnn = try RNN<Double>(time: Self.block, inputs: Self.features, hidden: Self.hidden)
        let gru = try GRU<Double>(time: Self.block, inputs: Self.features, hidden: Self.hidden)
        for layer in [rnn, gru] as [any ONNXLayer<Double>] {
            let error = #expect(throws: ONNXExportError.self) { try layer.addNodes(to: &graph, index: 1, path: "") }
            guard case .unsupportedLayer(1, _, let reason) = error else {
                Issue.record("\(layer) was not refused as layer 1: \(String(describing: error))")
                continue
            }
            #expect(reason.contains("sequence"), "\(reason)")
        }
        #expect(graph.graph.nodes.isEmpty)
    }

    @Test("Gate blocks reordered: PyTorch's r, z, n rows to ONNX's z, r, h")
    func reordersBlocks() {
        // Three blocks of two: r = [1, 2], z = [3, 4], n = [5, 6].
        let rzn: [Double] = [1, 2, 3, 4, 5, 6]
        #expect(GraphBuilder<Double>.reordered(rzn, GRU<Double>.onnxGateOrder) == [3, 4, 1, 2, 5, 6])
        #expect(GraphBuilder<Double>.reordered(rzn, [0]) == rzn)
    }

    /// check_onnx.py's verdicts on `network` exported with its GRU (layer 1) in `gateOrder`, built
    /// as `onnxModel` builds it, against the engine's probabilities.
    static func verdicts(_ network: Network<Float>, batches: [[[Int]]], gateOrder: [Int]) throws -> [ONNXVerdict] {
        var graph = GraphBuilder<Float>(network: network)
        for (index, layer) in network.layers.enumerated() {
            if let gru = layer as? GRU<Float> {
                try gru.addNodes(to: &graph, index: index, path: "", gateOrder: gateOrder)
            } else {
                try graph.add(layer, index: index, path: "")
            }
        }
        let opset = ONNXExportOptions.defaultOpset
        let model = ONNXModel(
            irVersion: ONNXExportOptions.irVersion(opset: opset), opset: opset, producerName: "RecurrentExportTests", producerVersion: "1",
            documentation: "", graph: try graph.finish(batch: .dynamic), metadata: [])
        var check = TextExportCase(
            name: "gates-\(gateOrder.map(String.init).joined())", network: network, vocabulary: letters(vocabulary), batches: batches)
        check.model = model.encoded()
        return try check.verdicts()
    }
}
