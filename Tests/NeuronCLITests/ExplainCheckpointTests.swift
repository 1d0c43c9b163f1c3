import Foundation
import Testing

/// `neuron explain --checkpoint`: a unit of a trained network, as the neuron's table.
@Suite("neuron explain --checkpoint")
struct ExplainCheckpointTests {
    private func scratch() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("neuron-explain-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    private func object(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test("A trained XOR unit: the chain rule equals the network's backward pass and agrees with faux gradients")
    func xorUnit() throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let run = dir.appendingPathComponent("xor").path
        let train = try runNeuron(["train", "\(dataDirectory)/xor.yaml", "--epochs", "300", "--output", run, "--quiet"])
        #expect(train.status == 0, "\(train.stderr)")
        for (layer, unit) in [(0, 1), (0, 3), (1, 0)] {
            let explained = try runNeuron(["explain", "--checkpoint", run, "--layer", "\(layer)", "--unit", "\(unit)", "--sample", "2", "--json"])
            #expect(explained.status == 0, "\(explained.stderr)")
            let json = try object(explained.stdout)
            #expect(json["layer"] as? Int == layer && json["unit"] as? Int == unit)
            #expect((json["inputs"] as? [Double])?.count == (layer == 0 ? 2 : 4))
            let gradients = try #require(json["gradients"] as? [String: Any]), faux = try #require(json["faux"] as? [String: Any])
            let network = try #require(json["backpropagated"] as? [String: Any])
            let analytic = try #require(gradients["weight"] as? [Double]), backward = try #require(network["weight"] as? [Double])
            for (a, b) in zip(analytic, backward) { #expect(abs(a - b) <= 1e-14, "layer \(layer) unit \(unit): \(a) vs \(b)") }
            let fake = try #require(faux["weight"] as? [Double])
            // Forward differences with tiny 1e-4 err by about tiny·|∂²L| (the rounding is far below).
            for (a, f) in zip(analytic, fake) { #expect(abs(a - f) <= 1e-4 + 1e-2 * abs(a), "layer \(layer) unit \(unit): \(a) vs faux \(f)") }
            #expect(json["isOutput"] as? Bool == (layer == 1))
            #expect((json["target"] as? Double) == (layer == 1 ? 1 : nil))  // XOR row 2 is (1, 0) → 1
        }
        let table = try runNeuron(["explain", "--checkpoint", run, "--layer", "0", "--unit", "1"])
        #expect(table.status == 0 && table.stdout.hasPrefix("Unit 1 of layer 0 Dense(2→4, tanh)"))
        #expect(table.stdout.contains("faux gradients (forward difference, tiny 0.0001)"))
    }

    @Test("The trained neuron's checkpoint gives the same numbers as `neuron explain` of its weight and bias")
    func neuronCheckpoint() throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let run = dir.appendingPathComponent("neuron").path
        let train = try runNeuron(["train", "\(dataDirectory)/single-neuron.yaml", "--epochs", "1000", "--output", run, "--quiet"])
        #expect(train.status == 0, "\(train.stderr)")
        let summary = try object(String(decoding: try Data(contentsOf: URL(fileURLWithPath: run + "/summary.json")), as: UTF8.self))
        let w = try #require(summary["trainedWeight"] as? Double), b = try #require(summary["trainedBias"] as? Double)
        let unit = try object(try runNeuron(["explain", "--checkpoint", run, "--layer", "0", "--unit", "0", "--json"]).stdout)
        let neuron = try ExplainJSON.decode(
            try runNeuron(["explain", "--input", "0.01", "--target", "0.1", "--weight", "\(w)", "--bias", "\(b)", "--json"]).stdout)
        // Two paths to one table: the Neuron type, scalar by scalar, and a Dense layer in a network.
        // (JSONSerialization may round the last digit of a number it parses: within one unit in the last place.)
        #expect(abs((unit["net"] as? Double ?? .nan) - neuron.net) <= 1e-16)
        #expect(abs((unit["output"] as? Double ?? .nan) - neuron.output) <= 1e-16)
        let gradients = try #require(unit["gradients"] as? [String: Any]), faux = try #require(unit["faux"] as? [String: Any])
        #expect(abs((gradients["net"] as? Double ?? .nan) - neuron.gradients.net) <= 1e-16)
        #expect(abs(((gradients["weight"] as? [Double])?.first ?? .nan) - neuron.gradients.weight.values[0]) <= 1e-17)
        #expect(abs((faux["bias"] as? Double ?? .nan) - neuron.faux.bias) <= 1e-10)
        #expect(abs((faux["output"] as? Double ?? .nan) - neuron.faux.output) <= 1e-10)
    }

    @Test(
        "Arguments that do not fit are refused with exit status 2 and the reason",
        arguments: [
            (["--layer", "0"], "--checkpoint needs --layer L and --unit U"),
            (["--layer", "2", "--unit", "0"], "has layers 0 to 1"),
            (["--layer", "0", "--unit", "4"], "unit 4 is out of range; it has units 0 to 3"),
            (["--layer", "0", "--unit", "0", "--sample", "4"], "the run has training samples 0 to 3"),
            (["--layer", "0", "--unit", "0", "--iterations", "5", "--learning-rate", "0.1"], "a checkpoint's network is explained as trained"),
        ])
    func badArguments(arguments: [String], message: String) throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let run = dir.appendingPathComponent("xor").path
        #expect(try runNeuron(["train", "\(dataDirectory)/xor.yaml", "--epochs", "2", "--output", run, "--quiet"]).status == 0)
        let explained = try runNeuron(["explain", "--checkpoint", run] + arguments)
        #expect(explained.status == 2 && explained.stderr.contains(message), "\(explained.stderr)")
        #expect(
            try runNeuron(["explain", "--layer", "0", "--unit", "0"]).stderr.contains("--layer, --unit, --sample and --position need --checkpoint"))
        #expect(try runNeuron(["explain", "--position", "2"]).stderr.contains("--position need --checkpoint"))
    }

    // MARK: A text run

    @Test("A text run's RNN unit at a position: inputs x_P then h_{P-1}, chain rule = the network's backward there ≈ faux")
    func recurrentUnit() throws {
        let run = try textRun(recurrent: "rnn").get()
        for position in [0, 3] {
            let explained = try runNeuron(
                ["explain", "--checkpoint", run, "--layer", "1", "--unit", "2", "--sample", "3", "--position", "\(position)", "--json"])
            #expect(explained.status == 0, "\(explained.stderr)")
            let json = try object(explained.stdout)
            #expect(json["position"] as? Int == position && json["title"] as? String == "RNN(4→5, time 18)")
            #expect((json["inputs"] as? [Double])?.count == 4 + 5 && (json["weights"] as? [Double])?.count == 4 + 5)
            let names = try #require(json["names"] as? [String: Any])
            #expect(names["bias"] as? [String] == ["b_ih", "b_hh"] && (names["input"] as? [String])?.last == "h[4]")
            let gradients = try #require(json["gradients"] as? [String: Any]), faux = try #require(json["faux"] as? [String: Any])
            let network = try #require(json["backpropagated"] as? [String: Any])
            let share = try #require(network["atPosition"] as? [String: Any])
            let analytic = try #require(gradients["weight"] as? [Double]), backward = try #require(share["weight"] as? [Double])
            // Two routes to ∂L/∂net at P, one tanh' and one sum apart: rounding only.
            for (a, b) in zip(analytic, backward) { #expect(abs(a - b) <= 1e-14, "position \(position): \(a) vs \(b)") }
            // Forward differences with tiny 1e-4 err by about tiny·|∂²L| (the rounding is far below).
            for key in ["weight", "input"] {
                let a = try #require(gradients[key] as? [Double]), f = try #require(faux[key] as? [Double])
                for (a, f) in zip(a, f) { #expect(abs(a - f) <= 1e-4 + 1e-2 * abs(a), "position \(position) \(key): \(a) vs faux \(f)") }
            }
            for key in ["output", "net", "bias"] {
                let a = try #require(gradients[key] as? Double), f = try #require(faux[key] as? Double)
                #expect(abs(a - f) <= 1e-4 + 1e-2 * abs(a), "position \(position) \(key): \(a) vs faux \(f)")
            }
            #expect(gradients["outputFromNextStep"] is Double && json["isOutput"] as? Bool == false)
        }
    }

    @Test("Without --position: the last position the sample's line reaches, where its last character is read")
    func defaultPosition() throws {
        let run = try textRun(recurrent: "rnn").get()
        let table = try runNeuron(["explain", "--checkpoint", run, "--layer", "1", "--unit", "0", "--sample", "5"])
        #expect(table.status == 0, "\(table.stderr)")
        // `Training sample 5, "word": at position N the network reads 'd' and is to predict '⏎'.`
        let first = try #require(table.stdout.split(separator: "\n").first.map(String.init))
        let word = try #require(first.split(separator: "\"").dropFirst().first.map(String.init))
        #expect(first.contains("at position \(word.unicodeScalars.count) the network reads '\(word.unicodeScalars.last!)' and is to predict '⏎'"))
        #expect(table.stdout.contains("Unit 0 of layer 1 RNN(4→5, time 18) at position \(word.unicodeScalars.count)"))
        #expect(table.stdout.contains("network at \(word.unicodeScalars.count)") && table.stdout.contains("network Σ positions"))
    }

    @Test("A text run's output unit at a position: the score of one character, its target 1 where that character is next")
    func outputUnit() throws {
        let run = try textRun(recurrent: "rnn").get()
        let explained = try runNeuron(["explain", "--checkpoint", run, "--layer", "2", "--unit", "1", "--sample", "3", "--position", "2", "--json"])
        #expect(explained.status == 0, "\(explained.stderr)")
        let json = try object(explained.stdout)
        let targetClass = try #require(json["targetClass"] as? Int)
        #expect(json["isOutput"] as? Bool == true && json["target"] as? Double == (targetClass == 1 ? 1 : 0))
        let gradients = try #require(json["gradients"] as? [String: Any]), faux = try #require(json["faux"] as? [String: Any])
        let a = try #require(gradients["weight"] as? [Double]), f = try #require(faux["weight"] as? [Double])
        for (a, f) in zip(a, f) { #expect(abs(a - f) <= 1e-4 + 1e-2 * abs(a), "\(a) vs faux \(f)") }
        let table = try runNeuron(["explain", "--checkpoint", run, "--layer", "2", "--unit", "1", "--sample", "3", "--position", "2"])
        #expect(table.stdout.contains("Unit 1 is the score of 'a'.") && table.stdout.contains("(an output unit)"))
    }

    @Test(
        "A text run's arguments that do not fit are refused with exit status 2, naming the option or the reason",
        arguments: [
            (["--layer", "1", "--unit", "0", "--position", "18"], "--position 18: layer 1 RNN(4→5, time 18) has positions 0 to 17"),
            (["--layer", "1", "--unit", "0", "--position", "-1"], "--position -1: layers, units, samples and positions are counted from 0"),
            (["--layer", "0", "--unit", "0"], "Embedding(27→4): it has no units"),
            (["--layer", "1", "--unit", "5"], "unit 5 is out of range; it has units 0 to 4"),
            (["--layer", "2", "--unit", "0", "--sample", "100000"], "--sample 100000: the run has training samples 0 to"),
        ])
    func badTextArguments(arguments: [String], message: String) throws {
        let run = try textRun(recurrent: "rnn").get()
        let explained = try runNeuron(["explain", "--checkpoint", run] + arguments)
        #expect(explained.status == 2 && explained.stderr.contains(message), "\(explained.stderr)")
    }

    @Test("--position on a layer over features, and a GRU's unit, are refused with exit status 2 and the reason")
    func positionOverFeaturesAndGRU() throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let run = dir.appendingPathComponent("xor").path
        #expect(try runNeuron(["train", "\(dataDirectory)/xor.yaml", "--epochs", "2", "--output", run, "--quiet"]).status == 0)
        let features = try runNeuron(["explain", "--checkpoint", run, "--layer", "0", "--unit", "0", "--position", "0"])
        #expect(
            features.status == 2 && features.stderr.contains("--position 0: layer 0 Dense(2→4, tanh) is a layer over features, with no positions"))
        let gru = try runNeuron(["explain", "--checkpoint", try textRun(recurrent: "gru").get(), "--layer", "1", "--unit", "0"])
        #expect(gru.status == 2 && gru.stderr.contains("a GRU unit is three neurons") && gru.stderr.contains("neuron gradcheck"), "\(gru.stderr)")
    }
}

/// A character model on Data/words-small.txt, trained once per recurrent kind for the suite:
/// Embedding(27→4), then an RNN or a GRU of 5 units, then a score per character at every position; 1 epoch.
private let textRuns: [String: Result<String, any Error>] = Dictionary(
    uniqueKeysWithValues: ["rnn", "gru"].map { kind in
        (
            kind,
            Result {
                let directory = try scratchDirectory("explain-\(kind)")
                let config = directory + "/words.yaml"
                try """
                model:
                  layers:
                    - {kind: embedding, features: 4}
                    - {kind: \(kind), units: 5}
                    - {units: 27, activation: identity}
                data: {kind: text, path: \(dataDirectory)/words-small.txt}
                training: {epochs: 1, seed: 3}
                """.write(toFile: config, atomically: true, encoding: .utf8)
                let train = try runNeuron(["train", config, "--output", directory + "/run", "--quiet"])
                guard train.status == 0 else { throw CocoaError(.fileWriteUnknown, userInfo: ["stderr": train.stderr]) }
                return directory + "/run"
            }
        )
    })

private func textRun(recurrent kind: String) -> Result<String, any Error> { textRuns[kind]! }
