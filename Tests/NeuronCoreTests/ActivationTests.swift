import Testing

@testable import NeuronCore

@Suite("Activations: the kernels against their textbook definitions")
struct ActivationTests {
    @Test("Forward and backward kernels equal the definitions written in the pre-activation", arguments: Activation.allCases)
    func matchesDefinitions(activation: Activation) {
        func check<Scalar: TensorScalar>(_: Scalar.Type, tolerance: Scalar) {
            var generator = SeededGenerator(seed: 21)
            // Pre-activations over [-6, 6], away from relu's kink at 0 (its derivative is undefined there).
            let z: [Scalar] = (0..<257).map { _ in
                let v = generator.uniform(-6, 6)
                return Scalar(abs(v) < 1e-3 ? 0.5 : v)
            }
            let dy: [Scalar] = (0..<257).map { _ in Scalar(generator.uniform(-1, 1)) }
            var y = z
            y.withUnsafeMutableBufferPointer { Kernels.activate(activation, $0) }
            expectClose(y, z.map { Naive.activation(activation, $0) }, tolerance: tolerance)
            var dz = [Scalar](repeating: 0, count: z.count)
            y.withUnsafeBufferPointer { py in
                dy.withUnsafeBufferPointer { pdy in
                    dz.withUnsafeMutableBufferPointer { Kernels.activationBackward(activation, output: py, gradient: pdy, into: $0) }
                }
            }
            expectClose(dz, zip(z, dy).map { Naive.activationDerivative(activation, $0) * $1 }, tolerance: tolerance)
        }
        // Float's tanh is a rational approximation within 4e-7 of tanh (VectorTanhTests); its
        // derivative 1 - y² then differs by at most about 2·4e-7.
        check(Float.self, tolerance: 2e-6)
        check(Double.self, tolerance: 1e-14)
    }

    @Test("tanh's derivative from the saved output is Docs/Reference.md §1's local gradient of net")
    func referenceLocalGradient() {
        var y: [Double] = [0.8]
        y.withUnsafeMutableBufferPointer { Kernels.activate(.tanh, $0) }
        #expect(y[0] == 0.6640367702678491)
        var dz: [Double] = [0]
        let one: [Double] = [1]
        y.withUnsafeBufferPointer { py in
            one.withUnsafeBufferPointer { pdy in
                dz.withUnsafeMutableBufferPointer { Kernels.activationBackward(.tanh, output: py, gradient: pdy, into: $0) }
            }
        }
        #expect(dz[0] == 0.5590551677322437)
    }

    @Test("relu, sigmoid and softmax by hand, stable at the extremes")
    func byHand() throws {
        var y: [Double] = [0, -2, 3]
        y.withUnsafeMutableBufferPointer { Kernels.activate(.relu, $0) }
        #expect(y == [0, 0, 3])
        var s: [Double] = [0, 1000, -1000]
        s.withUnsafeMutableBufferPointer { Kernels.activate(.sigmoid, $0) }
        #expect(s == [0.5, 1, 0])  // no overflow at ±1000
        var p: [Double] = [1, 1, 0, 1000]
        p.withUnsafeMutableBufferPointer { Kernels.softmaxRows($0, columns: 2) }
        #expect(p == [0.5, 0.5, 0, 1])  // shifted by the row maximum: e^1000 never formed
        var nan: [Double] = [.nan, -1]
        nan.withUnsafeMutableBufferPointer { Kernels.activate(.relu, $0) }
        #expect(nan[0].isNaN && nan[1] == 0)  // relu keeps a NaN visible
        var logits: [Double] = [2, -1]
        logits.withUnsafeMutableBufferPointer { Kernels.activate(.softmax, $0) }
        #expect(logits == [2, -1])  // a layer leaves softmax to the loss head
    }

    @Test("Softmax rows equal the definition")
    func softmaxMatchesDefinition() throws {
        var generator = SeededGenerator(seed: 4)
        let z = Tensor<Double>.random([5, 7], using: &generator)
        var p = z
        p.withUnsafeMutableBufferPointer { Kernels.softmaxRows($0, columns: 7) }
        expectClose(p.scalars, Naive.softmax(z).scalars, tolerance: 1e-15)
    }
}
