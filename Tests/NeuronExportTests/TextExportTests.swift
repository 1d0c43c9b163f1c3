import Foundation
import NeuronCore
import Testing

@testable import NeuronExport

@Suite("Text models in ONNX: ONNX Runtime's next-token probabilities against the engine's")
struct TextExportTests {
    @Test("A bigram table (one embedding) and an embedding into a per-position dense layer, float64 and float32")
    func embeddingAndDense() throws {
        let block = 6, v = 5
        var bigram = try Network<Double>([try Embedding<Double>(vocabulary: v, features: v, time: block)], loss: .sequenceCrossEntropy)
        bigram.initialize(seed: 3)
        var dense = try Network<Double>(
            [try Embedding<Double>(vocabulary: v, features: 4, time: block), try Dense<Double>(4, v, activation: .identity, time: block)],
            loss: .sequenceCrossEntropy)
        dense.initialize(seed: 4)
        for (name, network) in [("bigram", bigram), ("dense", dense)] {
            let batches = textBatches(vocabulary: v, block: block, seed: 7)
            for verdict in try TextExportCase(name: name, network: network, vocabulary: letters(v), batches: batches).verdicts() {
                #expect(verdict.checker == "ok" && verdict.ran, "\(verdict)")
                #expect(try #require(verdict.maxAbsDiff) <= 1e-12, "\(verdict)")
                #expect(verdict.vocabulary == ["", "a", "b", "c", "d"] && verdict.boundary == "0" && verdict.block == block)
            }
            let float = TextExportCase(name: name + "-f32", network: network.converted(to: Float.self), vocabulary: letters(v), batches: batches)
            for verdict in try float.verdicts() { #expect(try #require(verdict.maxAbsDiff) <= 1e-6, "\(verdict)") }
        }
    }

    @Test("An MLP over a context window (Bengio et al.'s): embedding, window of 3, tanh dense, dense at every position")
    func contextWindow() throws {
        let block = 7, v = 6
        var network = try Network<Double>(
            [
                try Embedding<Double>(vocabulary: v, features: 3, time: block), try ContextWindow<Double>(time: block, features: 3, size: 3),
                try Dense<Double>(9, 5, activation: .tanh, time: block), try Dense<Double>(5, v, activation: .identity, time: block),
            ], loss: .sequenceCrossEntropy)
        network.initialize(seed: 11)
        let batches = textBatches(vocabulary: v, block: block, seed: 12)
        for verdict in try TextExportCase(name: "mlp", network: network, vocabulary: letters(v), batches: batches).verdicts() {
            #expect(verdict.checker == "ok" && verdict.ran, "\(verdict)")
            #expect(try #require(verdict.maxAbsDiff) <= 1e-12, "\(verdict)")
        }
        let float = TextExportCase(name: "mlp-f32", network: network.converted(to: Float.self), vocabulary: letters(v), batches: batches)
        for verdict in try float.verdicts() { #expect(try #require(verdict.maxAbsDiff) <= 1e-6, "\(verdict)") }
    }

    @Test(
        "RMSNorm between an embedding and a dense layer, at opsets 17 (ReduceMean's axes an attribute) and 18 and 25 (an input)",
        arguments: [17, 18, 25])
    func rmsNorm(_ opset: Int) throws {
        let block = 5, v = 6
        var network = try Network<Double>(
            [
                try Embedding<Double>(vocabulary: v, features: 4, time: block), try RMSNorm<Double>(shape: [block, 4], epsilon: 1e-3),
                try Dense<Double>(4, v, activation: .identity, time: block),
            ], loss: .sequenceCrossEntropy)
        network.initialize(seed: 13)
        // The weight away from its initial ones, so that a scale left out would show.
        let weight = network.parameterTensors.first { $0.layer == 1 }!
        for (j, i) in weight.range.enumerated() { network.parameters[i] = 0.5 + 0.25 * Double(j) }
        let batches = textBatches(vocabulary: v, block: block, seed: 14)
        let options = ONNXExportOptions(opset: opset)
        for verdict in try TextExportCase(name: "rms", network: network, vocabulary: letters(v), batches: batches, options: options).verdicts() {
            #expect(verdict.checker == "ok" && verdict.ran, "\(verdict)")
            #expect(try #require(verdict.maxAbsDiff) <= 1e-12, "\(verdict)")
        }
        let float = TextExportCase(
            name: "rms-f32", network: network.converted(to: Float.self), vocabulary: letters(v), batches: batches, options: options)
        for verdict in try float.verdicts() { #expect(try #require(verdict.maxAbsDiff) <= 1e-6, "\(verdict)") }
    }
}
