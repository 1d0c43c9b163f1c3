import Testing

@testable import NeuronCore

@Suite("Faux gradients of the neuron (Docs/Reference.md §2)")
struct NeuronFauxGradientsTests {
    let neuron = Neuron<Double>(weight: Reference.w, bias: Reference.b)

    @Test("Forward differences with tiny 1e-4 reproduce Docs/Reference.md §2's table exactly")
    func referenceTable() throws {
        // Exact equality, not a tolerance: the nudged losses are computed in the reference's
        // order (nudge, then everything downstream) with glibc's tanh, so every bit agrees.
        let faux = try neuron.fauxGradients(inputs: [Reference.x], target: Reference.t)
        #expect(faux.output == -0.03591322973214633)
        #expect(faux.net == -0.020088469318535994)
        #expect(faux.bias == -0.020088469318535994)
        #expect(faux.weights == [-0.008039457952816777])
        #expect(faux.inputs == [-0.01004847442496147])
    }

    @Test("Faux and analytic agree to about 3 significant figures with forward differences")
    func forwardAgreement() throws {
        let f = try neuron.forward(inputs: [Reference.x], target: Reference.t)
        let faux = try neuron.fauxGradients(inputs: [Reference.x], target: Reference.t)
        for (quantity, c) in neuron.backward(f).compared(with: faux) {
            // Forward differences are off by about tiny·L''/2: relative 1e-4 to 2e-3 here.
            #expect(c.relativeError < 2e-3, "\(quantity): \(c.analytic) vs \(c.faux)")
            #expect(c.relativeError > 1e-5, "\(quantity): forward differences cannot be this close")
        }
    }

    @Test("Central differences are O(tiny²): far closer than forward ones")
    func centralAgreement() throws {
        let f = try neuron.forward(inputs: [Reference.x], target: Reference.t)
        let analytic = neuron.backward(f)
        let central = try neuron.fauxGradients(inputs: [Reference.x], target: Reference.t, difference: FiniteDifference(.central, tiny: 1e-4))
        let forward = try neuron.fauxGradients(inputs: [Reference.x], target: Reference.t)
        for ((quantity, c), (_, fwd)) in zip(analytic.compared(with: central), analytic.compared(with: forward)) {
            // Central error is about tiny^2 * |third derivative| / 6, near 1e-9 here, against
            // gradients near 1e-2: about 1e-7 relative, so 1e-6 bounds it with room.
            #expect(c.relativeError < 1e-6, "\(quantity): \(c.analytic) vs \(c.faux)")
            #expect(c.absoluteError < fwd.absoluteError / 100, "\(quantity)")
        }
        // The loss is quadratic in the output, where a central difference is exact up to rounding.
        expectClose(central.output, analytic.output, tolerance: 1e-12)
    }

    @Test("Every weight and input of a 3-input neuron, against central differences")
    func manyInputs() throws {
        var generator = SeededGenerator(seed: 5)
        for _ in 0..<20 {
            let n = 3
            let neuron = Neuron<Double>(weights: (0..<n).map { _ in generator.uniform(-1, 1) }, bias: generator.uniform(-1, 1))
            let inputs = (0..<n).map { _ in generator.uniform(-2, 2) }
            let target = generator.uniform(-1, 1)
            let analytic = neuron.backward(try neuron.forward(inputs: inputs, target: target))
            let faux = try neuron.fauxGradients(inputs: inputs, target: target, difference: FiniteDifference(.central, tiny: 1e-6))
            let comparisons = analytic.compared(with: faux)
            #expect(comparisons.count == 3 + 2 * n)
            // PyTorch gradcheck's defaults for Double: atol 1e-5, rtol 1e-3, eps 1e-6.
            for (quantity, c) in comparisons {
                #expect(c.agrees(absoluteTolerance: 1e-5, relativeTolerance: 1e-3), "\(quantity): \(c.analytic) vs \(c.faux)")
            }
        }
    }

    @Test("A wrong gradient is caught")
    func catchesAWrongGradient() throws {
        let f = try neuron.forward(inputs: [Reference.x], target: Reference.t)
        var wrong = neuron.backward(f)
        wrong.weights[0] = -wrong.weights[0]  // a flipped sign, as a buggy backward would give
        let faux = try neuron.fauxGradients(inputs: [Reference.x], target: Reference.t, difference: FiniteDifference(.central, tiny: 1e-6))
        let failing = wrong.compared(with: faux).filter { !$0.comparison.agrees(absoluteTolerance: 1e-5, relativeTolerance: 1e-3) }
        #expect(failing.map(\.quantity) == [.weight(0)])
    }

    @Test("tiny must be finite and positive")
    func badTiny() {
        #expect(throws: NeuronError.self) { try FiniteDifference<Double>(.forward, tiny: 0) }
        #expect(throws: NeuronError.self) { try FiniteDifference<Double>(.central, tiny: -1e-4) }
        #expect(throws: NeuronError.self) { try FiniteDifference<Float>(.central, tiny: .infinity) }
    }

    @Test("Relative error by definition: |a - n| / max(|a|, |n|), and 0 for two zeros")
    func relativeErrorDefinition() {
        #expect(GradientComparison<Double>(analytic: 2, faux: 1.5).relativeError == 0.25)
        #expect(GradientComparison<Double>(analytic: -1, faux: 1).relativeError == 2)
        #expect(GradientComparison<Double>(analytic: 0, faux: 0).relativeError == 0)
    }
}
