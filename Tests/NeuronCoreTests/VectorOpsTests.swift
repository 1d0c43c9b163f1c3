import Testing
@testable import NeuronCore

@Suite("axpy and scal: BLAS against one loop")
struct VectorOpsTests {
    @Test("axpy and scale by hand")
    func byHand() throws {
        var y = Tensor<Float>(vector: [1, 2, 3])
        try Tensor.axpy(2, Tensor(vector: [1, 1, -1]), into: &y)
        #expect(y.scalars == [3, 4, 1])
        Tensor.scale(by: -0.5, &y)
        #expect(y.scalars == [-1.5, -2, -0.5])
        var nan = Tensor<Double>(vector: [.nan, 1])
        Tensor.scale(by: 0, &nan)
        #expect(nan.scalars == [0, 0])
    }

    @Test("axpy and scale equal their loops on odd lengths")
    func matchNaive() throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            var generator = SeededGenerator(seed: 3)
            for count in [1, 3, 7, 15, 17, 33, 1000, 1023] {
                let x = Tensor<Scalar>.random([count], using: &generator)
                let y0 = Tensor<Scalar>.random([count], using: &generator)
                var fast = y0, slow = y0
                try Tensor.axpy(-0.75, x, into: &fast)
                try Naive.axpy(-0.75, x, into: &slow)
                expectClose(fast.scalars, slow.scalars, tolerance: 4 * Scalar.ulpOfOne)
                Tensor.scale(by: 3, &fast)
                Naive.scale(by: 3, &slow)
                expectClose(fast.scalars, slow.scalars, tolerance: 16 * Scalar.ulpOfOne)
            }
        }
        try check(Float.self)
        try check(Double.self)
    }

    @Test("axpy on different shapes names both")
    func shapeMismatch() {
        var y = Tensor<Double>(zeros: [2, 3])
        #expect(throws: TensorError.shapeMismatch(operation: "axpy", left: [3, 2], right: [2, 3], expected: "the shapes must be equal")) {
            try Tensor.axpy(1, Tensor<Double>(zeros: [3, 2]), into: &y)
        }
    }
}
