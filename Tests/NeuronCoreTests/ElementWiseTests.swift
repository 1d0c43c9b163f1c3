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

@Suite("tanh over whole buffers")
struct VectorTanhTests {
    @Test("Float's rational tanh stays within 4e-7 of tanh, everywhere, and keeps NaN and the bounds")
    func floatApproximation() {
        // The bound is the approximation's measured maximum error (3.95e-7 near |x| = 5.8):
        // about 7 units in the last place of a Float near 1.
        var xs: [Float] = stride(from: -12.0, through: 12.0, by: 0.0007).map { Float($0) }
        var small: Float = 1e-12  // down to tiny magnitudes, where relative accuracy matters
        while small < 1 {
            xs += [small, -small]
            small *= 1.07
        }
        xs += [0, -0.0, 9, -9, 100, -100, .infinity, -.infinity]
        var ys = xs
        ys.withUnsafeMutableBufferPointer { Float.tanh(inPlace: $0) }
        var worst = 0.0
        for (x, y) in zip(xs, ys) {
            let exact = Double.tanh(Double(x))
            worst = max(worst, abs(Double(y) - exact))
            #expect(abs(y) <= 1, "tanh(\(x)) = \(y) is outside [-1, 1]")
            #expect(x == 0 || (y > 0) == (x > 0), "tanh(\(x)) = \(y) has the wrong sign")
        }
        #expect(worst <= 4e-7, "max error \(worst)")
        var nan: [Float] = [.nan]
        nan.withUnsafeMutableBufferPointer { Float.tanh(inPlace: $0) }
        #expect(nan[0].isNaN)
    }

    @Test("Double's is the C library's tanh, bit for bit")
    func doubleIsLibm() {
        var xs = stride(from: -20.0, through: 20.0, by: 0.013).map { $0 }
        let expected = xs.map { Double.tanh($0) }
        xs.withUnsafeMutableBufferPointer { Double.tanh(inPlace: $0) }
        #expect(xs == expected)
    }
}
