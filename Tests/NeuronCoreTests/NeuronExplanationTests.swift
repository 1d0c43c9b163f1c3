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
