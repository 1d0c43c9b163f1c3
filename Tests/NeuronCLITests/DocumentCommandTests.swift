import Foundation
import Testing

// `neuron train` on a document and what the run leaves: a summary in nats per character that says
// how its validation loss was measured, a passage drawn at each evaluation, `neuron sample --prompt`
// continuing a prompt (the same text with and without the key/value cache), and bad input refused.

/// A play of two speakers, 40 times over: 1,520 characters of 19 distinct ones.
private let play = String(repeating: "ANNA:\nthe cat sat.\n\nBEN:\non the mat!\n\n", count: 40)

/// A one-block transformer trained for 30 steps on the play, once for the suite's tests.
private let trainedRun: Result<String, any Error> = Result {
    let directory = try scratchDirectory("document")
    try play.write(toFile: directory + "/play.txt", atomically: true, encoding: .utf8)
    try """
    model: {transformer: {blocks: 1, heads: 2, features: 16, tieWeights: true}}
    data: {kind: text, unit: document, path: play.txt, blockSize: 24}
    optimizer: {kind: adam, learningRate: 0.01}
    training: {steps: 30, evaluateEvery: 10, batchSize: 8, seed: 4}
    """.write(toFile: directory + "/play.yaml", atomically: true, encoding: .utf8)
    let train = try runNeuron(["train", directory + "/play.yaml", "--output", directory + "/run", "--quiet"])
    guard train.status == 0 else { throw CocoaError(.fileWriteUnknown, userInfo: ["stderr": train.stderr]) }
    return directory + "/run"
}

@Suite("neuron train and sample on a document")
struct DocumentCommandTests {
    @Test("The summary gives the exact validation loss in nats per character, its measure, and a passage drawn from a newline")
    func summary() throws {
        let run = try trainedRun.get()
        let summary = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: run + "/summary.json"))) as? [String: Any])
        #expect(summary["evaluatedOn"] as? String == "validation")
        #expect(summary["lossUnit"] as? String == "nats per character")
        #expect((summary["validationMeasure"] as? String)?.hasPrefix("exact") == true)
        let loss = try #require(summary["evaluationLoss"] as? Double)
        #expect(loss > 0 && loss < log(20.0), "\(loss)")
        let sampled = try #require(summary["sampledLines"] as? [[String: Any]])
        #expect(sampled.count == 1 && (sampled[0]["text"] as? String)?.unicodeScalars.count ?? 0 > 0)
        let metrics = try String(contentsOfFile: run + "/metrics.csv", encoding: .utf8)
        #expect(metrics.split(separator: "\n").count == 4, "\(metrics)")  // a header and the three evaluations
    }

    @Test("--prompt continues the prompt by --length characters, the same with and without the cache, and says how fast")
    func prompt() throws {
        let run = try trainedRun.get()
        let cached = try runNeuron(["sample", run, "--prompt", "BEN:", "--length", "60", "--seed", "7", "--temperature", "0.8"])
        let whole = try runNeuron(["sample", run, "--prompt", "BEN:", "--length", "60", "--seed", "7", "--temperature", "0.8", "--no-cache"])
        #expect(cached.status == 0 && whole.status == 0, "\(cached.stderr) \(whole.stderr)")
        #expect(cached.stdout.hasPrefix("BEN:") && cached.stdout.unicodeScalars.count == 4 + 60 + 1, "\(cached.stdout)")
        #expect(cached.stdout == whole.stdout)
        #expect(cached.stderr.contains("60 characters drawn with seed 7") && cached.stderr.contains("characters/s (the key/value cache)"))
        #expect(whole.stderr.contains("a whole pass over the window per character"))
        // Another seed, another text; the default prompt is a newline.
        let other = try runNeuron(["sample", run, "--prompt", "BEN:", "--length", "60", "--seed", "8", "--temperature", "0.8"])
        #expect(other.stdout != cached.stdout)
        let plain = try runNeuron(["sample", run, "--length", "20", "--seed", "7"])
        #expect(plain.status == 0 && plain.stdout.hasPrefix("\n") && plain.stdout.unicodeScalars.count == 1 + 20 + 1, "\(plain.stdout)")
    }

    @Test("A prompt character outside the vocabulary, and options that do not go with --prompt, are refused with the reason")
    func refusals() throws {
        let run = try trainedRun.get()
        for (arguments, reason) in [
            (["--prompt", "BEN: Zed"], "'Z' (U+005A), character 5 of the prompt"),
            (["--prompt", "BEN:", "--length", "0"], "--length 0: expected a whole number from 1 to 1000000"),
            (["--prompt", "BEN:", "--count", "3"], "--count applies to drawing lines"),
            (["--length", "5", "--prefix", "a"], "--length applies to continuing a --prompt"),
        ] {
            let result = try runNeuron(["sample", run] + arguments)
            #expect(result.status == 2 || result.status == 1, "\(arguments): \(result.status)")
            #expect(result.stderr.contains(reason), "\(arguments): \(result.stderr)")
        }
    }
}
