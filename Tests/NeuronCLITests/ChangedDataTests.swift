import Foundation
import Testing

@Suite("neuron train --resume on data that changed since the checkpoint")
struct ChangedDataTests {
    @Test("A reordered file is refused at --resume naming both fingerprints (exit 2); --data-changed goes on; evaluate says so; a new run cannot ask")
    func reorderedLines() throws {
        let scratch = try scratchDirectory("changed-data")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let words = try String(contentsOfFile: dataDirectory + "/words-small.txt", encoding: .utf8)
        let data = scratch + "/words.txt", config = scratch + "/words.yaml", run = scratch + "/run"
        try Data(words.utf8).write(to: URL(fileURLWithPath: data))
        try Data(
            """
            model: {layers: [{kind: embedding, features: 4}, {kind: rnn, units: 4}, {units: 27, activation: identity}]}
            data: {kind: text, path: words.txt}
            training: {epochs: 2, batchSize: 64, seed: 3}

            """.utf8
        ).write(to: URL(fileURLWithPath: config))
        #expect(try runNeuron(["train", config, "--output", run, "--epochs", "1", "--quiet"]).status == 0)
        let reordered = words.split(separator: "\n").reversed().joined(separator: "\n") + "\n"
        try Data(reordered.utf8).write(to: URL(fileURLWithPath: data))

        let refused = try runNeuron(["train", config, "--resume", run, "--epochs", "2", "--quiet"])
        #expect(refused.status == 2)
        #expect(
            refused.stderr.contains(
                "cannot resume: the data changed since the checkpoint was written: data.path (\(data)) was \(words.utf8.count) bytes, CRC-32 0x"),
            "\(refused.stderr)")
        #expect(refused.stderr.contains("give --data-changed to go on with the new data"))
        let evaluated = try runNeuron(["evaluate", run])
        #expect(
            evaluated.status == 0 && evaluated.stderr.contains("neuron: note: the data changed since the checkpoint was written"),
            "\(evaluated.stderr)")
        let resumed = try runNeuron(["train", config, "--resume", run, "--epochs", "2", "--data-changed", "--quiet"])
        #expect(resumed.status == 0 && resumed.stdout.contains("finished after 2 epochs"), "\(resumed.stderr)")
        let fresh = try runNeuron(["train", config, "--output", scratch + "/other", "--data-changed"])
        #expect(fresh.status == 2 && fresh.stderr.contains("--data-changed goes with --resume"), "\(fresh.stderr)")
    }
}
