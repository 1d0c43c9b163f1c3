import Foundation
import Testing

@testable import NeuronCore

@Suite("The explanation table and its JSON")
struct NeuronExplanationTests {
    /// The JSON as a tree. `JSONSerialization` may round a number one ulp away (see the CLI
    /// tests' `ExplainJSON`), so exact values are compared after a `JSONDecoder` round trip.
    private func json(_ explanation: NeuronExplanation<Double>) throws -> [String: Any] {
        let data = try JSONEncoder().encode(explanation)
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    private func exact(_ explanation: NeuronExplanation<Double>, _ path: String...) throws -> [Double] {
        let data = try JSONEncoder().encode(explanation)
        var node = try JSONDecoder().decode(Node.self, from: data)
        for key in path { node = try #require(node.object?[key]) }
        return try #require(node.numbers)
    }

    @Test("Single input: numbers under the issue's keys")
    func singleInputJSON() throws {
        let explanation = try NeuronExplanation(neuron: Neuron<Double>(weight: 0.5, bias: 0.6), inputs: [0.4], target: 0.7)
        let object = try json(explanation)
        #expect(object["net"] as? Double == 0.8)
        #expect(object["output"] as? Double == Reference.output)
        let local = try #require(object["local"] as? [String: Double])
        #expect(Set(local.keys) == ["input", "weight", "bias", "net"])
        #expect(local["input"] == 0.5 && local["weight"] == 0.4)
        let gradients = try #require(object["gradients"] as? [String: Double])
        let faux = try #require(object["faux"] as? [String: Double])
        #expect(Set(gradients.keys) == ["output", "net", "bias", "weight", "input"] && Set(faux.keys) == Set(gradients.keys))
        #expect(faux["weight"] != nil)
        #expect(try exact(explanation, "faux", "weight") == [-0.008039457952816777])
        #expect(try exact(explanation, "gradients", "net") == [-0.020105429430100793])
        #expect(object["trained"] == nil && object["iterations"] == nil)
    }

    @Test("n inputs: arrays for weights and inputs; training adds its keys")
    func manyInputsTrainedJSON() throws {
        let explanation = try NeuronExplanation(
            neuron: Neuron<Double>(weights: [0.1, 0.2], bias: 0), inputs: [1, -1], target: 0.5,
            train: (learningRate: 0.1, iterations: 10))
        let object = try json(explanation)
        let gradients = try #require(object["gradients"] as? [String: Any])
        #expect((gradients["weight"] as? [Double])?.count == 2 && (gradients["input"] as? [Double])?.count == 2)
        #expect(object["iterations"] as? Int == 10 && object["learningRate"] as? Double == 0.1)
        let trained = try #require(object["trained"] as? [String: Any])
        #expect(trained["weight"] is [Double])
        #expect(try exact(explanation, "trained", "weight") == explanation.neuron.weights)
        #expect(try exact(explanation, "trained", "output") == [explanation.forward.output])
        #expect((trained["loss"] as! Double) < (object["initial"] as! [String: Any])["loss"] as! Double)
    }

    @Test("The table shows every quantity and the difference rule")
    func table() throws {
        let table = try NeuronExplanation(neuron: Neuron<Double>(weight: 0.5, bias: 0.6), inputs: [0.4], target: 0.7).table
        for text in ["0.6640367702678491", "-0.020105429430100793", "-0.008039457952816777", "forward difference, tiny 0.0001", "input[0]"] {
            #expect(table.contains(text), "missing \(text)")
        }
    }
}

/// A JSON tree whose numbers are read with correct rounding.
private indirect enum Node: Decodable {
    case number(Double), numbers([Double]), object([String: Node]), other

    init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let x = try? c.decode(Double.self) {
            self = .number(x)
        } else if let xs = try? c.decode([Double].self) {
            self = .numbers(xs)
        } else if let o = try? c.decode([String: Node].self) {
            self = .object(o)
        } else {
            self = .other
        }
    }

    var object: [String: Node]? { if case let .object(o) = self { o } else { nil } }
    var numbers: [Double]? {
        switch self {
        case let .number(x): [x];
        case let .numbers(xs): xs;
        default: nil
        }
    }
}

@Suite("Agreement of the explanation's gradients, judged at the rule's own error")
struct NeuronExplanationAgreementTests {
    /// Docs/Reference.md §3's first run: trained to a loss of about 1e-32, every gradient about 1e-16.
    private func trained() throws -> NeuronExplanation<Double> {
        try NeuronExplanation(
            neuron: Neuron<Double>(weight: 0.5, bias: 0.5), inputs: [0.01], target: 0.1, train: (learningRate: 0.01, iterations: 100_000))
    }

    @Test("At the trained neuron's minimum, relative errors are near 1 yet every gradient agrees, and the JSON says so")
    func trainedAgrees() throws {
        let explanation = try trained()
        // The forward difference's faux gradient of the output is its own truncation, tiny·L''/2 = 5e-5 (L'' = 1).
        let output = try #require(explanation.comparisons.first?.comparison)
        #expect(abs(output.analytic) < 1e-14 && abs(output.faux - 5e-5) < 1e-12)
        #expect(explanation.comparisons.allSatisfy { $0.comparison.relativeError > 0.99 })
        #expect(explanation.agrees == Array(repeating: true, count: 5))
        let object = try #require(try JSONSerialization.jsonObject(with: try JSONEncoder().encode(explanation)) as? [String: Any])
        #expect(object["agrees"] as? [String: Bool] == ["output": true, "net": true, "bias": true, "weight": true, "input": true])
        let tolerance = try #require(object["tolerance"] as? [String: Double])
        // JSONSerialization may land one ulp away (see `json` above).
        let absolute = try #require(tolerance["absolute"])
        #expect(tolerance["relative"] == 1e-3 && abs(absolute - (1e-4 + Double.ulpOfOne / 1e-4)) < 1e-18)
        #expect(explanation.table.contains("rel error is |∂ - faux| / max(|∂|, |faux|)"))
    }

    @Test("The absolute tolerance is each rule's truncation at tiny plus rounding ε/tiny")
    func tolerance() throws {
        func tolerance(_ method: FiniteDifference<Double>.Method, _ tiny: Double) throws -> Double {
            try NeuronExplanation(
                neuron: Neuron<Double>(weight: 0.5, bias: 0.6), inputs: [0.4], target: 0.7, difference: FiniteDifference(method, tiny: tiny)
            ).absoluteTolerance
        }
        #expect(try tolerance(.forward, 1e-4) == 1e-4 + Double.ulpOfOne / 1e-4)
        #expect(try tolerance(.central, 1e-3) == 1e-3 * 1e-3 + Double.ulpOfOne / 1e-3)
        #expect(try tolerance(.fivePoint, 1e-2) == 1e-2 * 1e-2 * 1e-2 * 1e-2 + Double.ulpOfOne / 1e-2)
    }

    @Test("A nudge too coarse for the curvature (a forward difference across tanh's bend) is no agreement")
    func disagreement() throws {
        // x = 0.01, w = 30: ∂L/∂x = error·(1 - output²)·w ≈ -11.2, but nudging x by 0.1 moves the net from 0.3 to 3.3,
        // past tanh's bend: the faux gradient is about -0.39, off by far more than atol 0.1 + rtol·0.39.
        let explanation = try NeuronExplanation(
            neuron: Neuron<Double>(weights: [30], bias: 0), inputs: [0.01], target: 0.7, difference: FiniteDifference(.forward, tiny: 0.1))
        let input = try #require(explanation.comparisons.last)
        #expect("\(input.quantity)" == "input[0]")
        #expect(abs(input.comparison.analytic - -11.2) < 0.1 && abs(input.comparison.faux - -0.394) < 0.01)
        #expect(explanation.agrees.last == false)
        #expect(explanation.table.contains("NO"))
    }
}
