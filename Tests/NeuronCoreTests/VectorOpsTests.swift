import Testing

@testable import NeuronCore

@Suite("scal: BLAS against one loop")
struct VectorOpsTests {
    @Test("scale by hand")
    func byHand() throws {
        var y = Tensor<Float>(vector: [3, 4, 1])
        Tensor.scale(by: -0.5, &y)
        #expect(y.scalars == [-1.5, -2, -0.5])
        var nan = Tensor<Double>(vector: [.nan, 1])
        Tensor.scale(by: 0, &nan)
        #expect(nan.scalars == [0, 0])
    }

    @Test("scale equals its loop on odd lengths")
    func matchNaive() throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            var generator = SeededGenerator(seed: 3)
            for count in [1, 3, 7, 15, 17, 33, 1000, 1023] {
                let y0 = Tensor<Scalar>.random([count], using: &generator)
                var fast = y0, slow = y0
                Tensor.scale(by: 3, &fast)
                Naive.scale(by: 3, &slow)
                expectClose(fast.scalars, slow.scalars, tolerance: 16 * Scalar.ulpOfOne)
            }
        }
        try check(Float.self)
        try check(Double.self)
    }
}
