import Testing

@testable import NeuronCore

/// Docs/Reference.md §1's reference case: x = 0.4, w = 0.5, b = 0.6, t = 0.7, with its published values.
enum Reference {
    static let x = 0.4, w = 0.5, b = 0.6, t = 0.7
    static let net = 0.8
    static let output = 0.6640367702678491
    static let error = -0.035963229732150825
    static let loss = 0.0006466769463837285
    static let localNet = 0.5590551677322437
    static let dOutput = -0.035963229732150825
    static let dNet = -0.020105429430100793
    static let dWeight = -0.008042171772040318
    static let dInput = -0.010052714715050396
}

@Suite("The single neuron (Docs/Reference.md §1)")
struct NeuronTests {
    @Test("Double reproduces the reference table within 1e-15 relative")
    func referenceDouble() throws {
        let neuron = Neuron<Double>(weight: Reference.w, bias: Reference.b)
        let f = try neuron.forward(inputs: [Reference.x], target: Reference.t)
        let local = neuron.localGradients(f)
        let g = neuron.backward(f)
        let pairs: [(Double, Double)] = [
            (f.net, Reference.net), (f.output, Reference.output), (f.error, Reference.error), (f.loss, Reference.loss),
            (local.net, Reference.localNet), (g.output, Reference.dOutput), (g.net, Reference.dNet),
            (g.bias, Reference.dNet), (g.weights[0], Reference.dWeight), (g.inputs[0], Reference.dInput),
        ]
        for (actual, expected) in pairs { expectRelativelyClose(actual, expected, tolerance: 1e-15) }
        // The local gradients that are plain copies are exact.
        #expect(local.input == [Reference.w] && local.weight == [Reference.x] && local.bias == 1 && local.output == 1)
        #expect(local.error == f.error)
        // The published 4-place table: weight gradient -0.0080, bias gradient -0.0201.
        #expect((g.weights[0] * 10_000).rounded() == -80 && (g.bias * 10_000).rounded() == -201)
    }

    @Test("Float reproduces the reference table within 1e-6")
    func referenceFloat() throws {
        // Float carries about 7 significant digits; `error = output - t` cancels two of them
        // (0.664 - 0.7), so an absolute bound of 1e-6 is what Float can promise here.
        let neuron = Neuron<Float>(weight: Float(Reference.w), bias: Float(Reference.b))
        let f = try neuron.forward(inputs: [Float(Reference.x)], target: Float(Reference.t))
        let g = neuron.backward(f)
        let pairs: [(Float, Double)] = [
            (f.net, Reference.net), (f.output, Reference.output), (f.error, Reference.error), (f.loss, Reference.loss),
            (neuron.localGradients(f).net, Reference.localNet), (g.output, Reference.dOutput), (g.net, Reference.dNet),
            (g.bias, Reference.dNet), (g.weights[0], Reference.dWeight), (g.inputs[0], Reference.dInput),
        ]
        for (actual, expected) in pairs { expectClose(Double(actual), expected, tolerance: 1e-6) }
    }

    @Test("Two inputs worked by hand")
    func twoInputs() throws {
        // net = 1·0.5 + 2·(-0.25) + 0 = 0, so output = 0, error = -1, loss = 0.5,
        // ∂L/∂net = (1 - 0)·(-1) = -1, ∂L/∂w = x·(-1), ∂L/∂x = w·(-1).
        let neuron = Neuron<Double>(weights: [0.5, -0.25], bias: 0)
        let f = try neuron.forward(inputs: [1, 2], target: 1)
        #expect(f.net == 0 && f.output == 0 && f.error == -1 && f.loss == 0.5)
        let g = neuron.backward(f)
        #expect(g.net == -1 && g.bias == -1 && g.weights == [-1, -2] && g.inputs == [-0.5, 0.25])
    }

    @Test("Mismatched input and weight counts throw")
    func inputCount() {
        let neuron = Neuron<Double>(weights: [1, 2], bias: 0)
        #expect(throws: NeuronError.inputCount(expected: 2, actual: 3)) { try neuron.forward(inputs: [1, 2, 3], target: 0) }
        #expect(NeuronError.inputCount(expected: 2, actual: 3).description == "the neuron has 2 weights but was given 3 inputs")
    }
}
