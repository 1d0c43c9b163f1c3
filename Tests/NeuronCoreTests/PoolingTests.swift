import Testing

@testable import NeuronCore

@Suite("Pooling and flatten")
struct PoolingTests {
    @Test("Max pooling by hand: a 4×4 map, 2×2 windows, two channels; the gradient goes to each maximum")
    func maxByHand() throws {
        // Channel 0 is 0…15 row by row, channel 1 is its negative: maxima at each window's
        // bottom-right for channel 0 (5, 7, 13, 15) and top-left for channel 1 (-0, -2, -8, -10).
        var pool = try MaxPool2D<Double>(input: [4, 4, 2], size: (2, 2))
        let x = try Tensor<Double>(shape: [1, 32], scalars: (0..<16).flatMap { [Double($0), -Double($0)] })
        let dy = try Tensor<Double>(shape: [1, 8], scalars: [1, 2, 3, 4, 5, 6, 7, 8])
        let run = runLayer(&pool, x: x, parameters: [], dy: dy)
        #expect(run.output.scalars == [5, 0, 7, -2, 13, -8, 15, -10])
        var expected = [Double](repeating: 0, count: 32)
        for (k, (pixel, channel)) in [(5, 0), (0, 1), (7, 0), (2, 1), (13, 0), (8, 1), (15, 0), (10, 1)].enumerated() {
            expected[pixel * 2 + channel] = Double(k + 1)
        }
        #expect(run.inputGradient.scalars == expected)
        #expect(pool.description == "MaxPool2D(4×4×2→2×2×2, 2×2)")
    }

    @Test("Average pooling by hand, and global average pooling")
    func averageByHand() throws {
        var pool = try AvgPool2D<Double>(input: [2, 4, 1], size: (2, 2))
        let x = try Tensor<Double>(shape: [1, 8], scalars: [1, 2, 3, 4, 5, 6, 7, 8])
        let run = runLayer(&pool, x: x, parameters: [], dy: try Tensor(shape: [1, 2], scalars: [4, 8]))
        #expect(run.output.scalars == [3.5, 5.5])  // (1 + 2 + 5 + 6) / 4, (3 + 4 + 7 + 8) / 4
        #expect(run.inputGradient.scalars == [1, 1, 2, 2, 1, 1, 2, 2])
        var global = try AvgPool2D<Double>.global(input: [2, 2, 3])
        #expect(global.outputShape == [1, 1, 3] && global.description == "AvgPool2D(2×2×3→1×1×3, global)")
        let g = runLayer(&global, x: try Tensor(shape: [1, 12], scalars: (0..<12).map(Double.init)), parameters: [], dy: nil)
        #expect(g.output.scalars == [4.5, 5.5, 6.5])  // channel c holds c, c + 3, c + 6, c + 9
    }

    @Test("Both pools equal their naive loops on 30 random shapes (overlapping strides, batch 1, one channel and many)")
    func fastEqualsNaive() throws {
        for seed in UInt64(1)...30 {
            var g = SeededGenerator(seed: seed)
            let size = (1 + g.index(below: 3), 1 + g.index(below: 3))
            let stride = (1 + g.index(below: 3), 1 + g.index(below: 3))
            let input = [size.0 + g.index(below: 6), size.1 + g.index(below: 6), [1, 2, 7][g.index(below: 3)]]
            let batch = 1 + g.index(below: 3)
            var maxPool = try MaxPool2D<Double>(input: input, size: size, stride: stride)
            var avgPool = try AvgPool2D<Double>(input: input, size: size, stride: stride)
            let x = try Tensor<Double>(shape: [batch, input.reduce(1, *)], scalars: randomScalars(batch * input.reduce(1, *), using: &g))
            let outputs = maxPool.outputShape.reduce(1, *)
            let dy = try Tensor<Double>(shape: [batch, outputs], scalars: randomScalars(batch * outputs, using: &g))
            let m = runLayer(&maxPool, x: x, parameters: [], dy: dy)
            let naiveMax = Naive.maxPool2d(x, outputGradient: dy, window: maxPool.window)
            #expect(m.output.scalars == naiveMax.output.scalars)
            expectClose(m.inputGradient.scalars, naiveMax.input.scalars, tolerance: 1e-15)
            let a = runLayer(&avgPool, x: x, parameters: [], dy: dy)
            let naiveAvg = Naive.avgPool2d(x, outputGradient: dy, window: avgPool.window)
            expectClose(a.output.scalars, naiveAvg.output.scalars, tolerance: 1e-14)
            expectClose(a.inputGradient.scalars, naiveAvg.input.scalars, tolerance: 1e-14)
        }
    }

    @Test("A 2×2 pool over a 1×1 map is refused, naming the layer and the shapes")
    func impossible() {
        #expect(
            message { () throws(NetworkError) in try MaxPool2D<Float>(input: [1, 1, 8], size: (2, 2)) }
                == "MaxPool2D(1×1×8, 2×2): a 2×2 window does not fit its 1×1 input: input shape (1, 1, 8)")
        #expect(
            message { () throws(NetworkError) in try AvgPool2D<Float>(input: [3, 3, 1], size: (2, 2), stride: (0, 2)) }.contains(
                "stride must be at least 1"))
        #expect(message { () throws(NetworkError) in try AvgPool2D<Float>.global(input: [10]) }.contains("takes images of shape"))
    }

    @Test("Flatten reads an image channel by channel (PyTorch's order) and its backward is the inverse")
    func flatten() throws {
        var flatten = try Flatten<Double>(input: [2, 2, 3])
        // Channels last: pixel p's channel c is at p·3 + c, valued 10·c + p.
        let x = try Tensor<Double>(shape: [1, 12], scalars: (0..<4).flatMap { p in (0..<3).map { c in Double(10 * c + p) } })
        let run = runLayer(&flatten, x: x, parameters: [], dy: try Tensor(shape: [1, 12], scalars: (0..<12).map(Double.init)))
        #expect(run.output.scalars == [0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23])
        #expect(run.inputGradient.scalars == [0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11])
        #expect(flatten.outputShape == [12] && flatten.description == "Flatten(2×2×3→12)")
        var vector = try Flatten<Double>(input: [5])
        #expect(
            runLayer(&vector, x: try Tensor(shape: [1, 5], scalars: [1, 2, 3, 4, 5]), parameters: [], dy: nil).output.scalars == [1, 2, 3, 4, 5])
    }
}
