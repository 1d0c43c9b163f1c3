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

    @Test("--position on a layer over features is refused with exit status 2 and the reason; a GRU's unit gets its gate-by-gate table")
    func positionOverFeaturesAndGRU() throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let run = dir.appendingPathComponent("xor").path
        #expect(try runNeuron(["train", "\(dataDirectory)/xor.yaml", "--epochs", "2", "--output", run, "--quiet"]).status == 0)
        let features = try runNeuron(["explain", "--checkpoint", run, "--layer", "0", "--unit", "0", "--position", "0"])
        #expect(
            features.status == 2 && features.stderr.contains("--position 0: layer 0 Dense(2→4, tanh) is a layer over features, with no positions"))
        let gru = try runNeuron(["explain", "--checkpoint", try textRun(recurrent: "gru").get(), "--layer", "1", "--unit", "4", "--position", "2"])
        #expect(gru.status == 0, "\(gru.stderr)")
        for piece in [
            "at position 2 the network reads", "Unit 4 of layer 1 GRU(4→5, time", "tanh(a_n)", "W_hn[4]", "h_prev[4]", "network Σ positions",
        ] {
            #expect(gru.stdout.contains(piece), "\(piece): \(gru.stdout)")
        }
        let json = try runNeuron(["explain", "--checkpoint", try textRun(recurrent: "gru").get(), "--layer", "1", "--unit", "4", "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json.stderr)")
        #expect((object["gates"] as? [[String: Any]])?.count == 3 && (object["gradients"] as? [[String: Any]])?.first?["quantity"] as? String == "h")
    }

    // MARK: Attention maps

    @Test("--attention --json: per block (nested and top level), per head, a causal map over ⏎ and the line's characters")
    func attentionJSON() throws {
        let run = try transformerRun.get()
        let explained = try runNeuron(["explain", "--checkpoint", run, "--attention", "cab", "--json"])
        #expect(explained.status == 0, "\(explained.stderr)")
        let json = try object(explained.stdout)
        #expect(json["labels"] as? [String] == ["⏎", "c", "a", "b"] && json["tokens"] as? [Int] == [0, 3, 1, 2] && json["cropped"] as? Int == 0)
        let blocks = try #require(json["blocks"] as? [[String: Any]])
        #expect(blocks.map { $0["name"] as? String } == ["layers.2.body.1", "layers.3"])
        #expect(blocks.map { $0["title"] as? String } == ["CausalSelfAttention(8, 2 heads, time 18)", "CausalSelfAttention(8, 1 head, time 18)"])
        for block in blocks {
            let heads = try #require(block["heads"] as? [[[Double]]])
            #expect(heads.count == (block["name"] as? String == "layers.3" ? 1 : 2))
            for map in heads {
                #expect(map.count == 4 && map.allSatisfy { $0.count == 4 })
                for (t, row) in map.enumerated() {
                    // Float weights: a row's sum is 1 within a few units in the last place of its 4 terms.
                    #expect(abs(row.reduce(0, +) - 1) <= 1e-6 && row[(t + 1)...].allSatisfy { $0 == 0 } && row[...t].allSatisfy { $0 > 0 }, "\(map)")
                }
            }
        }
        // Longer than the network's 18 positions: its last 18 characters, the boundary and 2 characters left out.
        let line = "abcabcabcabcabcabcab"
        let long = try object(try runNeuron(["explain", "--checkpoint", run, "--attention", line, "--json"]).stdout)
        #expect(long["labels"] as? [String] == line.suffix(18).map { String($0) } && long["cropped"] as? Int == 3)
    }

    @Test("--attention: a map per head per block, the characters on both axes, a shade per weight and its legend")
    func attentionPicture() throws {
        let run = try transformerRun.get()
        let shown = try runNeuron(["explain", "--checkpoint", run, "--attention", "cab"])
        #expect(shown.status == 0, "\(shown.stderr)")
        let lines = shown.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines[0] == "Attention weights: rows are the positions attending, columns the positions attended to.")
        #expect(lines[1] == "Shades: blank a later position (masked), · < 0.05 ≤ ░ < 0.25 ≤ ▒ < 0.5 ≤ ▓ < 0.75 ≤ █")
        let first = try #require(lines.firstIndex(of: "Block 0: layers.2.body.1 CausalSelfAttention(8, 2 heads, time 18)"))
        #expect(lines[first + 1].hasPrefix("  head 0") && lines[first + 1].hasSuffix("head 1"))
        #expect(lines[first + 2].hasPrefix("  ⏎ c a b") && lines[first + 2].hasSuffix("⏎ c a b"))
        // Row t of each head: its label, t + 1 shaded cells two columns each, then blanks (the later positions).
        let shades = Set("·░▒▓█")
        for (t, label) in ["⏎", "c", "a", "b"].enumerated() {
            let row = lines[first + 3 + t]
            #expect(row.hasPrefix(label + " "), "\(row)")
            let cells = Array(row.dropFirst(2).prefix(8))
            #expect(cells.prefix(2 * (t + 1)).allSatisfy { shades.contains($0) } && cells.dropFirst(2 * (t + 1)).allSatisfy { $0 == " " }, "\(row)")
        }
        #expect(lines.contains("Block 1: layers.3 CausalSelfAttention(8, 1 head, time 18)"))
        let cropped = try runNeuron(["explain", "--checkpoint", run, "--attention", "abcabcabcabcabcabcab"])
        #expect(
            cropped.stdout.contains(
                "Cropped to the network's 18 positions, as sampling crops: the boundary ⏎ and the line's first 2 characters are left out."))
    }

    @Test(
        "--attention refuses, with exit status 2 and the reason: a character outside the vocabulary, empty text, other options, no checkpoint",
        arguments: [
            (["--attention", "caBa"], "--attention: 'B' (U+0042), character 2 of \"caBa\" (counted from 0), is not in the model's vocabulary"),
            (["--attention", "c é"], "' ' (U+0020), character 1 of \"c é\""),
            (["--attention", ""], "--attention '': give a line of at least one character"),
            (["--attention", "cab", "--layer", "0", "--unit", "0"], "--layer, --unit, --sample and --position explain a unit instead"),
        ])
    func attentionRefused(arguments: [String], message: String) throws {
        let explained = try runNeuron(["explain", "--checkpoint", try transformerRun.get()] + arguments)
        #expect(explained.status == 2 && explained.stderr.contains(message), "\(explained.stderr)")
    }

    @Test("--attention on a model without attention layers, or without text, or without --checkpoint, is refused naming why")
    func attentionWithoutAttention() throws {
        let rnn = try runNeuron(["explain", "--checkpoint", try textRun(recurrent: "rnn").get(), "--attention", "cab"])
        #expect(
            rnn.status == 2 && rnn.stderr.contains("has no attention layer (kind: attention), so there are no attention maps to show"),
            "\(rnn.stderr)")
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let run = dir.appendingPathComponent("xor").path
        #expect(try runNeuron(["train", "\(dataDirectory)/xor.yaml", "--epochs", "2", "--output", run, "--quiet"]).status == 0)
        let xor = try runNeuron(["explain", "--checkpoint", run, "--attention", "cab"])
        #expect(xor.status == 2 && xor.stderr.contains("is not a text model (its data is synthetic)"), "\(xor.stderr)")
        let alone = try runNeuron(["explain", "--attention", "cab"])
        #expect(alone.status == 2 && alone.stderr.contains("--attention needs --checkpoint RUN"), "\(alone.stderr)")
    }
}

/// A small transformer on Data/words-small.txt, trained once for the suite: Embedding(27→8),
/// positions, a residual block of LayerNorm and 2-head attention, a 1-head attention at the top
/// level, a score per character at every position; 1 epoch.
private let transformerRun = Result {
    let directory = try scratchDirectory("explain-attention")
    let config = directory + "/words.yaml"
    try """
    model:
      layers:
        - {kind: embedding, features: 8}
        - {kind: positionEmbedding}
        - {kind: residual, layers: [{kind: layerNorm}, {kind: attention, heads: 2}]}
        - {kind: attention, heads: 1}
        - {units: 27, activation: identity}
    data: {kind: text, path: \(dataDirectory)/words-small.txt}
    training: {epochs: 1, seed: 3}
    """.write(toFile: config, atomically: true, encoding: .utf8)
    let train = try runNeuron(["train", config, "--output", directory + "/run", "--quiet"])
    guard train.status == 0 else { throw CocoaError(.fileWriteUnknown, userInfo: ["stderr": train.stderr]) }
    return directory + "/run"
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
