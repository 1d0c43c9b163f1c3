import Foundation
import Testing

// `neuron train` on a document of a tokenizer's tokens, and what takes its run: the summary in nats
// per token and bits per character, `sample --prompt` printing decoded text and `--probabilities`
// by id, the ONNX file's tokenizer read by Hugging Face's `tokenizers` to the ids `neuron tokenizer`
// gives with a tokenizer trained here on the training part alone, and a changed tokenizer refused
// on resume.

/// A play of two speakers with an accented name, 40 times over: 1,400 characters.
private let play = String(repeating: "ANNA:\nthe cat sat.\n\nBENÉ:\non the mat!\n\n", count: 40)

/// A one-block transformer trained for 30 steps on the play's tokens (a BPE of 270 tokens trained by the run).
private let trainedRun: Result<String, any Error> = Result {
    try trainRun(
        "token-document", files: ["play.txt": play],
        config: """
            model: {transformer: {blocks: 1, heads: 2, features: 16, tieWeights: true}}
            data: {kind: text, unit: document, path: play.txt, blockSize: 24, vocabularySize: 270}
            optimizer: {kind: adam, learningRate: 0.01}
            training: {steps: 30, evaluateEvery: 10, batchSize: 8, seed: 4}
            """)
}

@Suite("neuron train, sample and export on a tokenizer's tokens")
struct TokenDocumentCommandTests {
    @Test("The summary gives the losses in nats per token and, through each part's tokens per character, in bits per character")
    func summary() throws {
        let run = try trainedRun.get()
        let summary = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: run + "/summary.json"))) as? [String: Any])
        #expect(summary["lossUnit"] as? String == "nats per token" && summary["evaluatedOn"] as? String == "validation")
        let loss = try #require(summary["evaluationLoss"] as? Double)
        let ratios = try #require(summary["tokensPerCharacter"] as? [String: Double])
        let bits = try #require(summary["bitsPerCharacter"] as? [String: Double])
        let validation = try #require(ratios["validation"])
        #expect(validation > 0.1 && validation < 1, "\(ratios)")
        #expect(abs(try #require(bits["validation"]) - loss * validation / log(2.0)) < 1e-9, "\(bits)")
        #expect(bits["training"] != nil && loss < log(270.0))
        // `neuron evaluate` gives the same loss (up to Float's sums, in another batch), in both units.
        let evaluated = try runNeuron(["evaluate", run])
        #expect(evaluated.status == 0, "\(evaluated.stderr)")
        let lines = evaluated.stdout.split(separator: "\n").map { $0.split(separator: " ") }
        let evaluatedLoss = try #require(lines.first { $0.first == "loss" && $0.last == "token)" }.flatMap { Double($0[1]) })
        let evaluatedBits = try #require(lines.first { $0.starts(with: ["bits", "per", "character"]) }.flatMap { Double($0[3]) })
        #expect(abs(evaluatedLoss - loss) < 1e-5 && abs(evaluatedBits - evaluatedLoss * validation / log(2.0)) < 1e-9, "\(evaluated.stdout)")
        #expect(evaluated.stdout.contains("(\(validation) tokens per character)"), "\(evaluated.stdout)")
    }

    @Test("--prompt prints the prompt and the decoded tokens, the same with and without the cache; --probabilities by id")
    func sample() throws {
        let run = try trainedRun.get()
        let cached = try runNeuron(["sample", run, "--prompt", "BENÉ:", "--length", "40", "--seed", "7"])
        let whole = try runNeuron(["sample", run, "--prompt", "BENÉ:", "--length", "40", "--seed", "7", "--no-cache"])
        #expect(cached.status == 0 && whole.status == 0, "\(cached.stderr) \(whole.stderr)")
        #expect(cached.stdout.hasPrefix("BENÉ:") && cached.stdout == whole.stdout, "\(cached.stdout)")
        #expect(cached.stderr.contains("40 tokens drawn with seed 7") && cached.stderr.contains("tokens/s (the key/value cache)"))
        // Tokens hold several characters each: 40 of them decode to more than 40 characters.
        #expect(cached.stdout.unicodeScalars.count > 5 + 40 + 1, "\(cached.stdout)")

        let probabilities = try runNeuron(["sample", run, "--prompt", "ANNA:", "--probabilities"])
        #expect(probabilities.status == 0, "\(probabilities.stderr)")
        let lines = probabilities.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        #expect(lines.first == "id,token,probability")
        let rows = lines.dropFirst()
        #expect(rows.count == 270)
        // Every id once, in order; the newline shown escaped; the probabilities sum to 1.
        #expect(rows.enumerated().allSatisfy { $0.element.hasPrefix("\($0.offset),") })
        #expect(rows.contains("10,\\n," + (rows.first { $0.hasPrefix("10,") }?.split(separator: ",").last ?? "")))
        let total = rows.compactMap { $0.split(separator: ",").last.flatMap { Double($0) } }.reduce(0, +)
        #expect(abs(total - 1) < 1e-9, "\(total)")
    }

    @Test("The checkpoint keeps the tokenizer trained on the training part alone: the ONNX file carries it, and tokenizers reads it to neuron's ids")
    func tokenizerTravels() throws {
        let run = try trainedRun.get()
        let directory = try scratchDirectory("token-document-onnx")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The oracle: a tokenizer trained by `neuron tokenizer train` on the first 90% of the characters, cut here.
        let scalars = Array(play.unicodeScalars)
        try String(String.UnicodeScalarView(scalars[..<1260])).write(toFile: directory + "/training.txt", atomically: true, encoding: .utf8)
        let heldOut = "BENÉ:\nthe mat sat on ANNA!\n"
        try heldOut.write(toFile: directory + "/held.txt", atomically: true, encoding: .utf8)
        let train = try runNeuron([
            "tokenizer", "train", directory + "/training.txt", "--vocab-size", "270", "--output", directory + "/training.json",
        ])
        #expect(train.status == 0, "\(train.stderr)")
        let expected = try runNeuron(["tokenizer", "encode", directory + "/training.json", directory + "/held.txt"])
        #expect(expected.status == 0, "\(expected.stderr)")
        let export = try runNeuron(["export", run, directory + "/model.onnx"])
        #expect(export.status == 0, "\(export.stderr)")
        let report = try runPython("Tests/ONNX/check_onnx.py", ["tokenizer", directory + "/model.onnx", directory + "/held.txt"])
        let read = try #require(try JSONSerialization.jsonObject(with: Data(report.utf8)) as? [String: Any])
        let ids = try #require(try JSONSerialization.jsonObject(with: Data(expected.stdout.utf8)) as? [Int])
        #expect(read["format"] as? String == "huggingface" && read["block"] as? Int == 24)
        #expect(read["ids"] as? [Int] == ids && ids.count < heldOut.unicodeScalars.count, "\(report) against \(ids)")
    }

    @Test("A run resumed over a changed tokenizer file is refused, naming both vocabularies")
    func changedTokenizer() throws {
        let directory = try scratchDirectory("token-document-resume")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try play.write(toFile: directory + "/play.txt", atomically: true, encoding: .utf8)
        let tokenizer = try runNeuron(["tokenizer", "train", directory + "/play.txt", "--vocab-size", "270", "--output", directory + "/play.model"])
        #expect(tokenizer.status == 0, "\(tokenizer.stderr)")
        try """
        model: {transformer: {blocks: 1, heads: 2, features: 8}}
        data: {kind: text, unit: document, path: play.txt, blockSize: 16, tokenizer: play.model}
        optimizer: {kind: adam, learningRate: 0.01}
        training: {steps: 4, evaluateEvery: 2, batchSize: 4, seed: 4}
        """.write(toFile: directory + "/play.yaml", atomically: true, encoding: .utf8)
        let first = try runNeuron(["train", directory + "/play.yaml", "--output", directory + "/run", "--quiet"])
        #expect(first.status == 0, "\(first.stderr)")
        let again = try runNeuron(["tokenizer", "train", directory + "/play.txt", "--vocab-size", "260", "--output", directory + "/play.model"])
        #expect(again.status == 0, "\(again.stderr)")
        let before = try Data(contentsOf: URL(fileURLWithPath: directory + "/run/checkpoint.safetensors"))
        let resumed = try runNeuron(["train", directory + "/play.yaml", "--resume", directory + "/run"])
        #expect(resumed.status != 0 && resumed.stderr.contains("are not the checkpoint's"), "\(resumed.stderr)")
        #expect(resumed.stderr.contains("270 tokens") && resumed.stderr.contains("260 tokens"), "\(resumed.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/run/checkpoint.safetensors")) == before)
    }
}
