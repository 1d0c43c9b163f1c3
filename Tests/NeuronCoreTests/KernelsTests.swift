import Testing

@testable import NeuronCore

/// Runs a kernel that reads one tensor and writes into another.
private func run<Scalar: TensorScalar>(
    _ x: Tensor<Scalar>, into y: inout Tensor<Scalar>,
    _ body: (UnsafeBufferPointer<Scalar>, UnsafeMutableBufferPointer<Scalar>) -> Void
) {
    x.withUnsafeBufferPointer { px in y.withUnsafeMutableBufferPointer { py in body(px, py) } }
}

@Suite("Element-wise and reduction kernels")
struct KernelsTests {
    @Test("Bias broadcast and column sums by hand")
    func biasByHand() throws {
        var x = try Tensor<Float>(rows: [[1, 2, 3], [4, 5, 6]])
        run(Tensor(vector: [10, 20, 30]), into: &x) { Kernels.addBias($0, to: $1) }
        #expect(x.rowArrays == [[11, 22, 33], [14, 25, 36]])
        var b = Tensor<Float>(vector: [1, 1, 1])
        run(x, into: &b) { Kernels.addColumnSums($0, to: $1) }
        #expect(b.scalars == [26, 48, 70])  // adds into b: 1 + 11 + 14, …
    }

    @Test("Bias broadcast and column sums equal their naive loops on odd shapes")
    func biasMatchesNaive() throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            var generator = SeededGenerator(seed: 11)
            for (rows, columns) in [(1, 1), (1, 17), (33, 1), (7, 5), (65, 31)] {
                let x = Tensor<Scalar>.random([rows, columns], using: &generator)
                let b = Tensor<Scalar>.random([columns], using: &generator)
                var fast = x, slow = x
                run(b, into: &fast) { Kernels.addBias($0, to: $1) }
                Naive.addBias(b, to: &slow)
                #expect(fast == slow)  // one addition per entry: bit for bit
                var sumFast = b, sumSlow = b
                run(x, into: &sumFast) { Kernels.addColumnSums($0, to: $1) }
                Naive.addColumnSums(x, to: &sumSlow)
                // Eight rows are summed before they reach b: the same terms, in another order. Each
                // order's rounding stays within k·ε of the sum of the |terms| (≤ rows + 1 here).
                let k = rows + 1
                expectClose(sumFast.scalars, sumSlow.scalars, tolerance: Scalar(k) * Scalar(k) * Scalar.ulpOfOne)
            }
        }
        try check(Float.self)
        try check(Double.self)
    }

    @Test("Bias then activation in one pass equals the two passes bit for bit, NaN kept")
    func biasThenActivation() throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            var generator = SeededGenerator(seed: 12)
            for activation in Activation.allCases {
                for (rows, columns) in [(1, 1), (3, 17), (33, 1), (65, 31)] {
                    var x = Tensor<Scalar>.random([rows, columns], using: &generator)
                    x[0] = .nan
                    let b = Tensor<Scalar>.random([columns], using: &generator)
                    var fused = x, twoPasses = x
                    run(b, into: &fused) { Kernels.addBias($0, thenActivate: activation, $1) }
                    run(b, into: &twoPasses) { b, y in
                        Kernels.addBias(b, to: y)
                        Kernels.activate(activation, y)
                    }
                    #expect(fused[0].isNaN, "\(activation): a NaN stays visible")
                    fused[0] = 0
                    twoPasses[0] = 0
                    #expect(fused == twoPasses, "\(activation) \(rows)×\(columns)")
                }
            }
        }
        try check(Float.self)
        try check(Double.self)
    }

    @Test("Gathering rows in a given order")
    func gather() throws {
        let source = try Tensor<Double>(rows: [[0, 1], [10, 11], [20, 21], [30, 31]])
        let order = [3, 1, 0, 2]
        var batch = Tensor<Double>(zeros: [2, 2])
        order.withUnsafeBufferPointer { order in
            run(source, into: &batch) { Kernels.gatherRows($0, columns: 2, order: order, positions: 1..<3, into: $1) }
        }
        #expect(batch.rowArrays == [[10, 11], [0, 1]])  // positions 1 and 2 of the order: rows 1 and 0
    }

    @Test("argmax takes the first of equal maxima; norms, counts and non-finite checks by hand")
    func reductions() {
        [Float(1), 3, 3, -1].withUnsafeBufferPointer { #expect(Kernels.argmax($0) == 1) }
        [Double(-5)].withUnsafeBufferPointer { #expect(Kernels.argmax($0) == 0) }
        [Float(3), -4].withUnsafeBufferPointer { #expect(Kernels.sumOfSquares($0) == 25) }
        [Double(0.5), -0.995, 0.999, 1].withUnsafeBufferPointer { #expect(Kernels.countMagnitudes($0, above: 0.99) == 3) }
        [Double(1), .infinity].withUnsafeBufferPointer { #expect(Kernels.containsNonFinite($0)) }
        [Float(1), .nan].withUnsafeBufferPointer { #expect(Kernels.containsNonFinite($0)) }
        [Float(1), -2].withUnsafeBufferPointer { #expect(!Kernels.containsNonFinite($0)) }
    }
}
