import Testing
@testable import NeuronCore

@Suite("Element-wise kernels")
struct ElementWiseTests {
    @Test("tanh, its derivative from the saved output, and the backward product")
    func tanhFamily() throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            let x = try Tensor<Scalar>(rows: [[0, 0.8], [-2, 20]])
            var y = Tensor<Scalar>(zeros: [2, 2])
            try Tensor.tanh(x, into: &y)
            #expect(y.scalars == x.scalars.map(Scalar.tanh))
            #expect(y[0, 0] == 0 && y[1, 1] == 1)  // tanh saturates to exactly 1 in both precisions at 20
            var d = Tensor<Scalar>(zeros: [2, 2])
            try Tensor.tanhDerivative(output: y, into: &d)
            #expect(d.scalars == y.scalars.map { 1 - $0 * $0 })
            #expect(d[0, 0] == 1 && d[1, 1] == 0)
            let dy = try Tensor<Scalar>(rows: [[2, 3], [4, 5]])
            var dx = Tensor<Scalar>(zeros: [2, 2])
            try Tensor.tanhBackward(output: y, gradient: dy, into: &dx)
            #expect(dx.scalars == zip(dy.scalars, d.scalars).map { $0 * $1 })
        }
        try check(Float.self)
        try check(Double.self)
        // SPEC §1: at net 0.8 the local gradient of net is 1 - tanh(0.8)² = 0.5590551677322437.
        var y = Tensor<Double>(vector: [0]), d = Tensor<Double>(vector: [0])
        try Tensor.tanh(Tensor(vector: [0.8]), into: &y)
        try Tensor.tanhDerivative(output: y, into: &d)
        #expect(d[0] == 0.5590551677322437)
    }

    @Test("Bias broadcast and column sum by hand")
    func biasByHand() throws {
        var x = try Tensor<Float>(rows: [[1, 2, 3], [4, 5, 6]])
        try Tensor.addBias(Tensor(vector: [10, 20, 30]), to: &x)
        #expect(x.rowArrays == [[11, 22, 33], [14, 25, 36]])
        var b = Tensor<Float>(vector: [1, 1, 1])
        try Tensor.sumColumns(x, into: &b)
        #expect(b.scalars == [25, 47, 69])
        try Tensor.sumColumns(x, into: &b, accumulate: true)
        #expect(b.scalars == [50, 94, 138])
    }

    @Test("Bias broadcast and column sum equal their naive loops on odd shapes")
    func biasMatchesNaive() throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            var generator = SeededGenerator(seed: 11)
            for (rows, columns) in [(1, 1), (1, 17), (33, 1), (7, 5), (65, 31)] {
                let x = Tensor<Scalar>.random([rows, columns], using: &generator)
                let b = Tensor<Scalar>.random([columns], using: &generator)
                var fast = x, slow = x
                try Tensor.addBias(b, to: &fast)
                try Naive.addBias(b, to: &slow)
                #expect(fast == slow)  // one addition per entry: bit for bit
                var sumFast = b, sumSlow = b
                try Tensor.sumColumns(x, into: &sumFast, accumulate: true)
                try Naive.sumColumns(x, into: &sumSlow, accumulate: true)
                #expect(sumFast == sumSlow)  // the same additions in the same order down each column
            }
        }
        try check(Float.self)
        try check(Double.self)
    }

    @Test("Shape errors name both shapes")
    func shapeErrors() {
        var x = Tensor<Double>(zeros: [2, 3])
        #expect(throws: TensorError.self) { try Tensor.addBias(Tensor(vector: [1, 2]), to: &x) }
        var b = Tensor<Double>(zeros: [2])
        do {
            try Tensor.sumColumns(x, into: &b)
            Issue.record("expected a shape error")
        } catch {
            #expect(error.description.contains("(2, 3)") && error.description.contains("(2)"), "\(error)")
        }
        var y = Tensor<Double>(zeros: [3, 2])
        #expect(throws: TensorError.self) { try Tensor.tanh(x, into: &y) }
    }
}
