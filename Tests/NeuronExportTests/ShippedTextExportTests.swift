import Foundation
import NeuronCore
import NeuronTraining
import Testing

@testable import NeuronExport

/// 100 prefixes of real words (Data/words-small.txt): each the boundary token, then a word's first
/// characters (none to all of them, a longer line cropped to its last `block` tokens, as the
/// engine and the sampler crop), grouped into batches of one length.
func wordPrefixes(vocabulary: Vocabulary, block: Int, count: Int = 100, seed: UInt64) throws -> [[[Int]]] {
    let words = try String(contentsOf: packageRoot.appendingPathComponent("Data/words-small.txt"), encoding: .utf8)
        .split(separator: "\n").map { $0.lowercased().unicodeScalars.compactMap { vocabulary.index(of: $0) } }.filter { !$0.isEmpty }
    var g = SeededGenerator(seed: seed)
    var byLength: [Int: [[Int]]] = [:]
    for _ in 0..<count {
        let word = words[g.index(below: words.count)]
        let line = [Vocabulary.boundary] + word.prefix(g.index(below: word.count + 1))
        let cropped = Array(line.suffix(block))
        byLength[cropped.count, default: []].append(cropped)
    }
    return byLength.keys.sorted().map { byLength[$0]! }
}

@Suite("The shipped text configs' models in ONNX: 100 word prefixes each, ONNX Runtime against the engine")
struct ShippedTextExportTests {
    static let configs = [
        "words-bigram-counted.yaml", "words-bigram.yaml", "words-mlp.yaml", "words-rnn.yaml", "words-gru.yaml", "words-transformer.yaml",
    ]

    @Test("Each shipped text model, as its config builds it (seeded weights, float32): checker ok, probabilities within 1e-5", arguments: configs)
    func shipped(_ name: String) throws {
        let config = try ConfigLoader.load(packageRoot.appendingPathComponent("Data/" + name).path)
        let vocabulary = Vocabulary(characters: "abcdefghijklmnopqrstuvwxyz".unicodeScalars)
        let block = config.data.blockSize ?? 16
        let network: Network<Float> = try config.model.network(features: block, vocabulary: vocabulary.count, seed: 42)
        try check(name, network, vocabulary)
    }

    @Test(
        "Trained runs named by NEURON_TEXT_RUNS (run directories, colon-separated): the same check on their checkpoints",
        .enabled(if: ProcessInfo.processInfo.environment["NEURON_TEXT_RUNS"] != nil, "no NEURON_TEXT_RUNS: no trained runs to check"))
    func trainedRuns() throws {
        let runs = try #require(ProcessInfo.processInfo.environment["NEURON_TEXT_RUNS"])
        for run in runs.split(separator: ":").map(String.init) {
            let checkpoint = try Checkpoint.read(run)
            let vocabulary = try #require(checkpoint.state.vocabulary)
            try check((run as NSString).lastPathComponent, try Prediction<Float>.network(checkpoint), vocabulary)
        }
    }

    private func check(_ name: String, _ network: Network<Float>, _ vocabulary: Vocabulary) throws {
        let batches = try wordPrefixes(vocabulary: vocabulary, block: network.inputShape[0], seed: 5)
        #expect(batches.map(\.count).reduce(0, +) == 100)
        let verdicts = try TextExportCase(name: name, network: network, vocabulary: vocabulary, batches: batches).verdicts()
        var largest = 0.0
        for verdict in verdicts {
            #expect(verdict.checker == "ok" && verdict.ran, "\(verdict)")
            largest = max(largest, try #require(verdict.maxAbsDiff))
        }
        #expect(largest <= 1e-5, "\(name): \(largest)")
        print("\(name): \(network), checker ok, 100 prefixes, largest |Δp| \(largest)")
    }
}
