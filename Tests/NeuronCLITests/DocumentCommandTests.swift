import Foundation
import Testing

// `neuron train` on a document and what the run leaves: a summary in nats per character that says
// how its validation loss was measured, a passage drawn at each evaluation, `neuron sample --prompt`
// continuing a prompt (the same text with and without the key/value cache), and bad input refused.

/// A play of two speakers, 40 times over: 1,520 characters of 19 distinct ones.
private let play = String(repeating: "ANNA:\nthe cat sat.\n\nBEN:\non the mat!\n\n", count: 40)

/// A one-block transformer trained for 30 steps on the play, once for the suite's tests.
private let trainedRun: Result<String, any Error> = Result {
    try trainRun(
        "document", files: ["play.txt": play],
        config: """
            model: {transformer: {blocks: 1, heads: 2, features: 16, tieWeights: true}}
            data: {kind: text, unit: document, path: play.txt, blockSize: 24}
            optimizer: {kind: adam, learningRate: 0.01}
            training: {steps: 30, evaluateEvery: 10, batchSize: 8, seed: 4}
            """)
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
            // A document has no lines: line options are refused rather than ignored.
            (["--count", "3"], "--count applies to a line model's lines"),
            (["--prefix", "ab"], "--prefix applies to a line model's lines"),
            (["--prefix", "ab", "--probabilities"], "--prefix applies to a line model's lines"),
            (["--prompt", "BEN:", "--probabilities", "--length", "5"], "--length applies to continuing it"),
        ] {
            let result = try runNeuron(["sample", run] + arguments)
            #expect(result.status == 2 || result.status == 1, "\(arguments): \(result.status)")
            #expect(result.stderr.contains(reason), "\(arguments): \(result.stderr)")
        }
    }

    @Test("A document model never draws the boundary token: not in a long random continuation, nor in --probabilities after a --prompt")
    func neverTheBoundary() throws {
        let run = try trainedRun.get()
        // At a high temperature every token is likely somewhere in 3,000 draws; the boundary would print as a
        // newline, so the check is on the probabilities, which name it.
        let probabilities = try runNeuron(["sample", run, "--prompt", "BEN:", "--probabilities", "--temperature", "5"])
        #expect(probabilities.status == 0, "\(probabilities.stderr)")
        let rows = probabilities.stdout.split(separator: "\n").dropFirst().map { $0.split(separator: ",") }
        let boundary = try #require(rows.first, "\(probabilities.stdout)")
        // The boundary (id 0), then every character.
        #expect(rows.count > 3 && boundary.first == "0" && boundary.dropFirst().first == "⏎", "\(probabilities.stdout)")
        #expect(Double(boundary.last ?? "") == 0, "\(boundary)")
        let total = rows.compactMap { Double($0.last ?? "") }.reduce(0, +)
        #expect(abs(total - 1) < 1e-9 && rows.dropFirst().allSatisfy { Double($0.last ?? "") ?? 0 > 0 }, "\(probabilities.stdout)")
        let hot = try runNeuron(["sample", run, "--prompt", "BEN:", "--length", "3000", "--temperature", "5", "--seed", "2"])
        #expect(hot.status == 0 && hot.stdout.unicodeScalars.count == 4 + 3000 + 1, "\(hot.stderr)")
    }

    @Test("A document without a newline starts its continuation at its first character, as the run's passages do")
    func noNewline() throws {
        let directory = try scratchDirectory("document-one-line")
        try String(repeating: "abcab cabbc ", count: 40).write(toFile: directory + "/line.txt", atomically: true, encoding: .utf8)
        try """
        model: {transformer: {blocks: 1, heads: 1, features: 8}}
        data: {kind: text, unit: document, path: line.txt, blockSize: 8}
        training: {steps: 4, evaluateEvery: 2, batchSize: 4, seed: 1}
        """.write(toFile: directory + "/line.yaml", atomically: true, encoding: .utf8)
        let train = try runNeuron(["train", directory + "/line.yaml", "--output", directory + "/run", "--quiet"])
        try #require(train.status == 0, "\(train.stderr)")
        let summary = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory + "/run/summary.json"))) as? [String: Any])
        let passage = try #require((summary["sampledLines"] as? [[String: Any]])?.first?["text"] as? String)
        #expect(passage.unicodeScalars.count == 300, "\(passage.unicodeScalars.count) characters: \(passage)")
        let sampled = try runNeuron(["sample", directory + "/run", "--length", "10", "--seed", "3"])
        #expect(
            sampled.status == 0 && sampled.stdout.hasPrefix(" ") && sampled.stdout.unicodeScalars.count == 1 + 10 + 1,
            "\(sampled.stdout) \(sampled.stderr)")
    }

    @Test("An export over the run's own data file is refused with exit 2, and the text and the run stay whole")
    func exportOverTheData() throws {
        let run = try trainedRun.get()
        let text = (run as NSString).deletingLastPathComponent + "/play.txt"
        let before = try Data(contentsOf: URL(fileURLWithPath: text))
        let refused = try runNeuron(["export", run, text])
        #expect(refused.status == 2 && refused.stderr.contains("it is a data file of the run it is made from"), "\(refused.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: text)) == before)
    }

    @Test(
        "With the estimate at each interval, summary.json's validationLoss is the final exact loss, the one its evaluationLoss and the terminal give")
    func oneValidationLoss() throws {
        let directory = try scratchDirectory("document-estimate")
        try play.write(toFile: directory + "/play.txt", atomically: true, encoding: .utf8)
        try """
        model: {transformer: {blocks: 1, heads: 1, features: 8}}
        data: {kind: text, unit: document, path: play.txt, blockSize: 8}
        training: {steps: 4, evaluateEvery: 2, batchSize: 4, seed: 1, evaluation: estimate, evaluationBatches: 2}
        """.write(toFile: directory + "/play.yaml", atomically: true, encoding: .utf8)
        let train = try runNeuron(["train", directory + "/play.yaml", "--output", directory + "/run"])
        try #require(train.status == 0, "\(train.stderr)")
        let summary = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory + "/run/summary.json"))) as? [String: Any])
        let exact = try #require(summary["evaluationLoss"] as? Double)
        #expect(summary["evaluatedOn"] as? String == "validation")
        #expect(summary["validationLoss"] as? Double == exact, "\(summary)")
        // The last interval's estimate is another number (metrics.csv keeps it).
        let metrics = try String(contentsOfFile: directory + "/run/metrics.csv", encoding: .utf8)
        let estimated = try #require(Double(metrics.split(separator: "\n").last!.split(separator: ",", omittingEmptySubsequences: false)[4]))
        #expect(estimated != exact)
    }
}
