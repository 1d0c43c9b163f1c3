import Foundation
import Testing

// `neuron train` on text and `neuron sample` on the run it leaves: seeded lines, marked against the
// training words, a prefix kept, the next character's probabilities, and bad input refused.

/// A GRU on Data/words-small.txt for 2 epochs, trained once for the suite's tests.
private let trainedRun: Result<String, any Error> = Result {
    try trainRun(
        "sample",
        config: """
            model:
              layers:
                - {kind: embedding, features: 16}
                - {kind: gru, units: 32}
                - {units: 27, activation: identity}
            data: {kind: text, path: \(dataDirectory)/words-small.txt}
            optimizer: {kind: adam, learningRate: 0.01}
            training: {epochs: 2, batchSize: 32, seed: 3}
            """)
}

@Suite("neuron sample: lines drawn from a trained text model")
struct SampleCommandTests {
    private var words: Set<String> {
        Set((try? String(contentsOfFile: dataDirectory + "/words-small.txt", encoding: .utf8))?.split(separator: "\n").map(String.init) ?? [])
    }

    @Test("A text run's summary states its test loss in nats per character and the lines it drew")
    func summary() throws {
        let run = try trainedRun.get()
        let summary = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: run + "/summary.json"))) as? [String: Any])
        #expect(summary["evaluatedOn"] as? String == "test")
        let loss = try #require(summary["evaluationLoss"] as? Double)
        #expect(loss > 1 && loss < log(27.0), "\(loss)")
        #expect((summary["lossUnit"] as? String)?.hasPrefix("nats per character") == true)
        let lines = try #require(summary["sampledLines"] as? [[String: Any]])
        #expect(lines.count == 5)
        for line in lines where line["inTraining"] as? Bool == true { #expect(words.contains(line["text"] as? String ?? "")) }
    }

    @Test("The same seed draws the same lines; a marked line is a training word; a prefix starts every line")
    func seededLines() throws {
        let run = try trainedRun.get()
        let first = try runNeuron(["sample", run, "--count", "12", "--seed", "3"])
        let second = try runNeuron(["sample", run, "--count", "12", "--seed", "3"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout == second.stdout)
        let lines = first.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        #expect(lines.count == 12)
        for line in lines {
            let marked = line.hasSuffix("  *"), text = marked ? String(line.dropLast(3)) : String(line)
            #expect(text.allSatisfy { ("a"..."z").contains($0) }, "\(line)")
            if marked { #expect(words.contains(text), "\(text) is marked but is not in words-small.txt") }
        }
        #expect(first.stderr.contains("12 lines drawn with seed 3"))
        let other = try runNeuron(["sample", run, "--count", "12", "--seed", "4"])
        #expect(other.stdout != first.stdout)

        let prefixed = try runNeuron(["sample", run, "--count", "8", "--prefix", "th", "--temperature", "0.7", "--top-k", "5"])
        #expect(prefixed.status == 0, "\(prefixed.stderr)")
        #expect(prefixed.stdout.split(separator: "\n").allSatisfy { $0.hasPrefix("th") })
        // Top-1 is greedy: every line the same.
        let greedy = try runNeuron(["sample", run, "--count", "4", "--top-k", "1"])
        #expect(Set(greedy.stdout.split(separator: "\n")).count == 1, "\(greedy.stdout)")
    }

    @Test("--probabilities prints the next character's distribution after the prefix")
    func probabilities() throws {
        let run = try trainedRun.get()
        let result = try runNeuron(["sample", run, "--prefix", "q", "--probabilities"])
        #expect(result.status == 0, "\(result.stderr)")
        let rows = result.stdout.split(separator: "\n").dropFirst().map { $0.split(separator: ",") }
        #expect(rows.count == 27 && rows.first?.first == "0" && rows.first?.dropFirst().first == "⏎")
        let p = rows.compactMap { $0.last.flatMap { Double($0) } }
        #expect(p.count == 27 && abs(p.reduce(0, +) - 1) < 1e-9)
    }

    @Test("Bad options and runs that are not text are refused with the reason, exit 2")
    func refusals() throws {
        let run = try trainedRun.get()
        for (arguments, expected) in [
            (["--temperature", "0"], "temperature"), (["--top-k", "0"], "top-k"), (["--prefix", "Qx"], "'Q'"),
            // A prefix past the block is cropped; past four blocks (the longest line drawn) nothing is left to draw.
            (["--count", "0"], "--count"), (["--prefix", String(repeating: "a", count: 200)], "prefix"),
        ] {
            let result = try runNeuron(["sample", run] + arguments)
            #expect(result.status == 2 && result.stderr.contains(expected), "\(arguments): \(result.status) \(result.stderr)")
        }
        let directory = try scratchDirectory("sample-xor")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try runNeuron(["train", dataDirectory + "/xor.yaml", "--epochs", "2", "--output", directory + "/xor", "--quiet"])
        let xor = try runNeuron(["sample", directory + "/xor"])
        #expect(xor.status == 2 && xor.stderr.contains("not a text model"), "\(xor.stderr)")
    }
}
