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
        #expect(try runNeuron(["explain", "--layer", "0", "--unit", "0"]).stderr.contains("--layer, --unit and --sample need --checkpoint"))
    }
}
