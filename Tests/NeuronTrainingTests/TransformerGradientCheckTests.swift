import Foundation
import NeuronCore
import Testing

@testable import NeuronTraining

/// A realistic mistake in ``TiedHead``'s backward pass, planted by ``PlantedTiedHead``.
enum PlantedTiedBug: String, CaseIterable {
    /// The head leaves the table's gradient to the embedding: its own `dyᵀ·x` never added.
    case tableGradientDropped
    /// The head subtracts its `dyᵀ·x` instead of adding it.
    case tableGradientSignFlipped
}

/// A ``TiedHead`` whose backward carries a planted bug; it shares the embedding's slice as the
/// real head does, so the network hands it the same buffer.
struct PlantedTiedHead: ParameterSharing {
    var head: TiedHead<Double>
    let bug: PlantedTiedBug

    var inputShape: [Int] { head.inputShape }
    var outputShape: [Int] { head.outputShape }
    var parameterShapes: [(name: String, shape: [Int])] { [] }
    var sharedLayer: Int { head.sharedLayer }
    var sharedShapes: [(name: String, shape: [Int])] { head.sharedShapes }
    var description: String { "Planted(\(bug), \(head))" }
    var output: Tensor<Double> { head.output }
    var inputGradient: Tensor<Double> { head.inputGradient }

    func initialize(parameters: UnsafeMutableBufferPointer<Double>, state: UnsafeMutableBufferPointer<Double>, using generator: inout SeededGenerator)
    {}
    mutating func forward(_ x: Tensor<Double>, parameters: UnsafeBufferPointer<Double>, state: UnsafeMutableBufferPointer<Double>, mode: LayerMode) {
        head.forward(x, parameters: parameters, state: state, mode: mode)
    }
    /// Itself in Double (the check runs on a converted copy), the real head otherwise.
    func converted<Other: TensorScalar>(to: Other.Type) -> any Layer<Other> { self as? any Layer<Other> ?? head.converted(to: Other.self) }

    mutating func backward(
        input x: Tensor<Double>, outputGradient dy: Tensor<Double>,
        parameters: UnsafeBufferPointer<Double>, gradients: UnsafeMutableBufferPointer<Double>, computeInputGradient: Bool
    ) {
        let before = Array(gradients)
        head.backward(input: x, outputGradient: dy, parameters: parameters, gradients: gradients, computeInputGradient: computeInputGradient)
        for i in 0..<gradients.count {
            switch bug {
            case .tableGradientDropped: gradients[i] = before[i]
            case .tableGradientSignFlipped: gradients[i] = before[i] - (gradients[i] - before[i])
            }
        }
    }
}

@Suite("Gradient checks of random small transformers, built as the config builds them")
struct TransformerGradientCheckTests {
    /// Windowed lines of random letters over `a…` (`letters` of them), some longer than the block,
    /// read back through `TextCorpus` as a run reads them: the batch holds the windows' masked
    /// targets and the short lines' padding.
    static func windowedBatch(time: Int, letters: Int, using g: inout SeededGenerator) throws -> (Tensor<Double>, Tensor<Double>, vocabulary: Int) {
        let alphabet = Array("abcdefgh".unicodeScalars.prefix(letters))
        var lines: [String] = []
        for _ in 0..<3 {
            let length = 1 + g.index(below: 2 * time)
            lines.append(String(String.UnicodeScalarView((0..<length).map { _ in alphabet[g.index(below: letters)] })))
        }
        lines.append(String(String.UnicodeScalarView((0..<time + 1).map { _ in alphabet[g.index(below: letters)] })))  // one window at least
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("neuron-gpt-\(UUID().uuidString).txt")
        try Data(lines.joined(separator: "\n").utf8).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let corpus = try TextCorpus.load(url.path, blockSize: time, longLines: .window, maximumBytes: 1 << 16)
        let d = corpus.dataset(as: Double.self)
        // At most 6 samples: the check's cost grows with the batch, and the last rows are the long line's windows.
        let rows = Array(d.count > 6 ? [0, 1, 2] + (d.count - 3..<d.count) : Array(0..<d.count))
        let batch = d.subset(rows)
        return (batch.features, batch.targets, corpus.vocabulary.count)
    }

    /// A random small transformer through `TransformerConfig.layers`: 1–3 blocks, 2 or 3 heads,
    /// 2–3 features a head, MLP ratio 1–2, tied or not as asked, a position table up to 2 rows
    /// longer than the block.
    static func randomCase(seed: UInt64, tied: Bool) throws -> (Network<Double>, Tensor<Double>, Tensor<Double>) {
        var g = SeededGenerator(seed: seed)
        let heads = 2 + g.index(below: 2), time = 3 + g.index(below: 3)
        var config = TransformerConfig(blocks: 1 + g.index(below: 3), heads: heads, features: heads * (2 + g.index(below: 2)))
        config.mlpRatio = 1 + g.index(below: 2)
        config.tieWeights = tied
        config.positions = time + g.index(below: 3)
        // Every third with dropout: the check holds the noise step, so every nudged loss drops the same units.
        config.dropout = seed % 3 == 0 ? 0.2 : 0
        let (x, t, vocabulary) = try windowedBatch(time: time, letters: 2 + g.index(below: 4), using: &g)
        var network = try Network<Double>(config.layers(Double.self, time: time, vocabulary: vocabulary), loss: .sequenceCrossEntropy)
        network.initialize(seed: seed)
        return (network, x, t)
    }

    @Test(
        "24 random transformers (several heads, 1–3 blocks, tied and untied, dropout in 8, padding and windowed lines) pass in Double, every parameter"
    )
    func randomTransformersPass() throws {
        var passed = 0, tiedSeen = 0, masked = 0, dropped = 0
        for seed in UInt64(1)...24 {
            let tied = seed % 2 == 0
            let (network, x, t) = try Self.randomCase(seed: seed, tied: tied)
            let report = try GradientCheck().run(on: network, inputs: x, targets: t)
            #expect(report.passed, "seed \(seed), \(network): \(report)")
            #expect(report.tensors.map(\.checked).reduce(0, +) == network.parameterCount)
            #expect((network.layers.last is TiedHead<Double>) == tied)
            if report.passed { passed += 1 }
            if tied { tiedSeen += 1 }
            if t.scalars.contains(-1) { masked += 1 }
            if network.layers.contains(where: { "\($0)".contains("Dropout") }) { dropped += 1 }
        }
        #expect(
            passed == 24 && tiedSeen == 12 && masked == 24 && dropped == 8,
            "\(passed) of 24 passed; \(tiedSeen) tied; \(masked) with masked targets; \(dropped) with dropout")
        print(
            "Transformer gradient checks: \(passed) of 24 random transformers passed (\(tiedSeen) tied, \(dropped) with dropout), every parameter, central differences in Double"
        )
    }

    @Test(
        "A bug planted in the tied head's backward is caught and named: the shared table, layers.0.weight, alone", arguments: PlantedTiedBug.allCases)
    func plantedTiedBug(_ bug: PlantedTiedBug) throws {
        let (network, x, t) = try Self.randomCase(seed: 2, tied: true)
        var layers = network.layers
        layers[layers.count - 1] = PlantedTiedHead(head: layers.last as! TiedHead<Double>, bug: bug)
        var planted = try Network<Double>(layers, loss: .sequenceCrossEntropy)
        planted.parameters = network.parameters
        let report = try GradientCheck().run(on: planted, inputs: x, targets: t)
        #expect(!report.passed, "\(bug) went unnoticed: \(report)")
        #expect(report.failingTensors.map(\.name) == ["layers.0.weight"], "\(report)")
    }
}
