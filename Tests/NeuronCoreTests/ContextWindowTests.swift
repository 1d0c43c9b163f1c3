import Testing

@testable import NeuronCore

@Suite("ContextWindow: the last positions side by side, against the naive loops")
struct ContextWindowTests {
    @Test("Windows of 2 over 3 positions worked by hand: oldest first, zeros before position 0")
    func handWorked() throws {
        // x: (1, 3, 2) = [[a, b, c]] with a = [1, 2], b = [3, 4], c = [5, 6]
        // y: [[0, 0, a], [a, b], [b, c]], each a row of 4
        var h = LayerHarness(try ContextWindow<Double>(time: 3, features: 2, size: 2), seed: 0)
        let x = try Tensor<Double>(shape: [1, 3, 2], scalars: [1, 2, 3, 4, 5, 6])
        let y = h.forward(x)
        #expect(y.shape == [1, 3, 4] && y.scalars == [0, 0, 1, 2, 1, 2, 3, 4, 3, 4, 5, 6])
        // dy: position t's row [p, q, r, s]: [p, q] goes back to t - 1, [r, s] to t.
        // dy = [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]  →  dx = [[3 + 5, 4 + 6], [7 + 9, 8 + 10], [11, 12]]
        h.backward(x, try Tensor(shape: [1, 3, 4], scalars: (1...12).map(Double.init)), inputGradient: true)
        #expect(h.layer.inputGradient.shape == [1, 3, 2] && h.layer.inputGradient.scalars == [8, 10, 16, 18, 11, 12])
        #expect(h.gradients.isEmpty)
    }

    @Test("Fast and naive agree in Float and Double, windows shorter and longer than the sequence")
    func matchesNaive() throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            var generator = SeededGenerator(seed: 6)
            for (batch, time, features, size) in [(1, 1, 1, 1), (2, 4, 3, 1), (3, 5, 2, 3), (2, 3, 4, 5), (4, 8, 7, 4)] {
                var h = LayerHarness(try ContextWindow<Scalar>(time: time, features: features, size: size), seed: 0)
                let x = Tensor<Scalar>.random([batch, time, features], using: &generator)
                let dy = Tensor<Scalar>.random([batch, time, size * features], using: &generator)
                // Copies: exact.
                #expect(h.forward(x) == Naive.contextWindowForward(x, time: time, features: features, size: size))
                h.backward(x, dy, inputGradient: true)
                let naive = Naive.contextWindowBackward(dy, time: time, features: features, size: size)
                expectClose(h.layer.inputGradient.scalars, naive.scalars, tolerance: summationTolerance(Scalar.self, terms: size))
                #expect(h.layer.inputGradient.shape == x.shape)
            }
        }
        try check(Float.self)
        try check(Double.self)
    }

    @Test("Describes itself; shapes [time, features] → [time, size · features]; no parameters; sizes checked")
    func shapes() throws {
        let window = try ContextWindow<Float>(time: 8, features: 64, size: 3)
        #expect("\(window)" == "ContextWindow(3×64→192)")
        #expect(window.inputShape == [8, 64] && window.outputShape == [8, 192] && window.parameterCount == 0)
        #expect(
            message { () throws(NetworkError) in try ContextWindow<Float>(time: 8, features: 64, size: 0) }
                == "ContextWindow(0×64): time, features and size must be at least 1, got 8, 64 and 0")
    }
}
