import Testing

@testable import NeuronCore

@Suite("Conv2D")
struct Conv2DTests {
    @Test("A hand-worked 3×3 image through a 2×2 kernel: forward and every gradient")
    func handWorked() throws {
        // x (one channel):      w:        valid, stride 1 → 2×2 output, b = 0.5
        //   1 2 3               1 0
        //   4 5 6               0 -1
        //   7 8 9
        // y[0,0] = 1 - 5 + 0.5 = -3.5, and every output is (x[i,j] - x[i+1,j+1]) + 0.5 = -3.5.
        var conv = try Conv2D<Double>(input: [3, 3, 1], filters: 1, kernel: (2, 2))
        let x = try Tensor<Double>(shape: [1, 9], scalars: [1, 2, 3, 4, 5, 6, 7, 8, 9])
        let dy = try Tensor<Double>(shape: [1, 4], scalars: [1, 2, 3, 4])
        let run = runLayer(&conv, x: x, parameters: [1, 0, 0, -1, 0.5], dy: dy)
        #expect(run.output.scalars == [-3.5, -3.5, -3.5, -3.5])
        // dw[ky,kx] = Σ dy · x under that kernel entry: dw[0,0] = 1·1 + 2·2 + 3·4 + 4·5 = 37,
        // dw[0,1] = 1·2 + 2·3 + 3·5 + 4·6 = 47, dw[1,0] = 1·4 + 2·5 + 3·7 + 4·8 = 67, dw[1,1] = 77; db = 10.
        #expect(run.gradients == [37, 47, 67, 77, 10])
        // dx: each dy spread over its window by w: +dy at the top-left, -dy at the bottom-right.
        #expect(run.inputGradient.scalars == [1, 2, 0, 3, 3, -2, 0, -3, -4])
        #expect(conv.description == "Conv2D(3×3×1→2×2×1, 2×2, identity)")
    }

    /// A random convolution: shapes, stride, padding and activation drawn from `seed`.
    static func randomCase(seed: UInt64) throws -> (Conv2D<Double>, batch: Int) {
        var g = SeededGenerator(seed: seed)
        let kernel = (1 + g.index(below: 3), 1 + g.index(below: 3))
        let stride = (1 + g.index(below: 2), 1 + g.index(below: 2))
        let paddings: [Padding] = [.valid, .same, .explicit(rows: kernel.0 / 2, columns: kernel.1 / 2)]
        let channels = [1, 1, 2, 3, 5][g.index(below: 5)]
        let input = [kernel.0 + g.index(below: 5), kernel.1 + g.index(below: 5), channels]
        let activations: [Activation] = [.identity, .tanh, .sigmoid, .relu]
        let conv = try Conv2D<Double>(
            input: input, filters: 1 + g.index(below: 4), kernel: kernel, stride: stride,
            padding: paddings[g.index(below: 3)], activation: activations[g.index(below: 4)])
        return (conv, 1 + g.index(below: 3))
    }

    @Test("im2col + BLAS equals the naive loops on 40 random shapes (stride 2, padding, odd sizes, 1×1, batch 1)")
    func fastEqualsNaive() throws {
        var sawPointwise = false, sawStride2 = false, sawPadding = false
        for seed in UInt64(1)...40 {
            var (conv, batch) = try Self.randomCase(seed: seed)
            sawPointwise = sawPointwise || conv.window.isPointwise
            sawStride2 = sawStride2 || conv.window.strideHeight == 2
            sawPadding = sawPadding || conv.window.padTop + conv.window.padLeft + conv.window.padBottom > 0
            var g = SeededGenerator(seed: seed &* 31)
            let x = try Tensor<Double>(shape: [batch] + conv.inputShape, scalars: randomScalars(batch * conv.inputShape.reduce(1, *), using: &g))
            let dy = try Tensor<Double>(shape: [batch] + conv.outputShape, scalars: randomScalars(batch * conv.outputShape.reduce(1, *), using: &g))
            let parameters: [Double] = randomScalars(conv.parameterCount, using: &g)
            let weights = conv.window.patchSize * conv.filters
            let w = try Tensor(shape: conv.parameterShapes[0].shape, scalars: Array(parameters[..<weights]))
            let b = Tensor(vector: Array(parameters[weights...]))
            let naive = Naive.conv2dForward(x, weight: w, bias: b, window: conv.window, activation: conv.activation)
            let naiveGradients = Naive.conv2dBackward(
                x, weight: w, preActivation: naive.preActivation, outputGradient: dy, window: conv.window, activation: conv.activation)
            let flat = try x.reshaped(to: [batch, x.count / batch])
            let run = runLayer(&conv, x: flat, parameters: parameters, dy: try dy.reshaped(to: [batch, dy.count / batch]))
            let tolerance = summationTolerance(Double.self, terms: conv.window.patchSize * 4)
            expectClose(run.output.scalars, naive.output.scalars, tolerance: tolerance)
            expectClose(run.gradients, naiveGradients.weight.scalars + naiveGradients.bias.scalars, tolerance: 1e-12)
            expectClose(run.inputGradient.scalars, naiveGradients.input.scalars, tolerance: 1e-12)
        }
        #expect(sawPointwise && sawStride2 && sawPadding)
    }

    @Test("Float agrees with Double within Float's rounding; a second batch reuses every buffer")
    func floatAndReuse() throws {
        var conv = try Conv2D<Float>(input: [9, 7, 3], filters: 4, kernel: (3, 3), stride: (2, 1), padding: .same, activation: .tanh)
        var double = conv.converted(to: Double.self) as! Conv2D<Double>
        var g = SeededGenerator(seed: 9)
        let parameters: [Float] = randomScalars(conv.parameterCount, using: &g)
        let x = try Tensor<Float>(shape: [2, 9 * 7 * 3], scalars: randomScalars(2 * 189, using: &g))
        let dy = try Tensor<Float>(shape: [2, conv.outputShape.reduce(1, *)], scalars: randomScalars(2 * conv.outputShape.reduce(1, *), using: &g))
        let single = runLayer(&conv, x: x, parameters: parameters, dy: dy)
        let exact = runLayer(&double, x: x.converted(to: Double.self), parameters: parameters.map(Double.init), dy: dy.converted(to: Double.self))
        expectClose(single.output.scalars.map(Double.init), exact.output.scalars, tolerance: 1e-5)
        expectClose(single.gradients.map(Double.init), exact.gradients, tolerance: 1e-4)
        expectClose(single.inputGradient.scalars.map(Double.init), exact.inputGradient.scalars, tolerance: 1e-5)
        #expect(conv.outputShape == [5, 7, 4])
        let capacity = conv.cache.columns.scalars.capacity
        _ = runLayer(&conv, x: try Tensor(shape: [1, 189], scalars: Array(x.scalars[..<189])), parameters: parameters, dy: nil)
        #expect(conv.cache.columns.scalars.capacity == capacity)
    }

    @Test("Impossible shapes name the layer and the shapes")
    func impossibleShapes() {
        #expect(
            message { () throws(NetworkError) in try Conv2D<Float>(input: [2, 2, 1], filters: 3, kernel: (3, 3)) }
                == "Conv2D(2×2×1→3 filters, 3×3): a 3×3 window does not fit its 2×2 input: input shape (2, 2, 1)")
        #expect(
            message { () throws(NetworkError) in try Conv2D<Float>(input: [28, 28, 1], filters: 0, kernel: (3, 3)) }.contains(
                "filters must be between 1"))
        #expect(
            message { () throws(NetworkError) in try Conv2D<Float>(input: [28, 28], filters: 2, kernel: (3, 3)) }.contains(
                "takes images of shape (height, width, channels)"))
        #expect(
            message { () throws(NetworkError) in try Conv2D<Float>(input: [8, 8, 1], filters: 2, kernel: (3, 3), stride: (0, 1)) }.contains(
                "stride must be at least 1"))
        #expect(
            message { () throws(NetworkError) in
                try Conv2D<Float>(input: [8, 8, 1], filters: 2, kernel: (3, 3), padding: .explicit(rows: 3, columns: 0))
            }.contains("smaller than"))
        #expect(
            message { () throws(NetworkError) in try Conv2D<Float>(input: [1 << 20, 1 << 20, 1 << 20], filters: 2, kernel: (3, 3)) }.contains(
                "more than can be held"))
    }

    @Test("'same' padding keeps ceil(size / stride), the odd pad at the bottom and right")
    func samePadding() throws {
        let conv = try Conv2D<Float>(input: [28, 28, 1], filters: 2, kernel: (3, 3), padding: .same)
        #expect(conv.outputShape == [28, 28, 2])
        let strided = try Conv2D<Float>(input: [7, 8, 1], filters: 2, kernel: (2, 2), stride: (2, 2), padding: .same)
        #expect(strided.outputShape == [4, 4, 2])
        #expect([strided.window.padTop, strided.window.padBottom, strided.window.padLeft, strided.window.padRight] == [0, 1, 0, 0])
    }
}
