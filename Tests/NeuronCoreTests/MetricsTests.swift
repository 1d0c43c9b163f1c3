import Testing

@testable import NeuronCore

@Suite("Metrics")
struct MetricsTests {
    @Test("Confusion matrix and accuracy by hand")
    func byHand() throws {
        var m = ConfusionMatrix(classCount: 3)
        let predictions = try Tensor<Float>(rows: [[0.9, 0.1, 0], [0.2, 0.7, 0.1], [0.5, 0.5, 0], [0, 0.4, 0.6]])
        m.add(predictions: predictions, labels: [0, 2, 1, 2])
        // Row 3 ties 0.5/0.5: the first (class 0) wins.
        #expect(m.counts == [[1, 0, 0], [1, 0, 0], [0, 1, 1]])
        #expect(m.total == 4 && m.correct == 2 && m.accuracy == 0.5)
        #expect(m.table(classNames: ["cat", "dog", "eel"]).contains("dog"))
        #expect(ConfusionMatrix(classCount: 2).accuracy == 0)
    }

    /// `Network[Dense(1→2, tanh), Dense(2→1, identity)]` with weights chosen by hand, after one
    /// forward and backward pass of x = 1 against target 0.
    private func handmade(input: Double = 1) throws -> Network<Double> {
        var network = try Network<Double>(
            [try Dense<Double>(1, 2, activation: .tanh), try Dense<Double>(2, 1, activation: .identity)],
            loss: .halfSquaredError)
        // layers.0: w (1, 2) = [3, 0.1], b = [0, 0];  layers.1: w (2, 1) = [0.6, 0.8], b = [0]
        network.parameters = [3, 0.1, 0, 0, 0.6, 0.8, 0]
        try network.lossAndGradients(Tensor(shape: [1, 1], scalars: [input]), targets: Tensor(shape: [1, 1], scalars: [0]))
        return network
    }

    @Test("Layer statistics by hand: weight and gradient norms, tanh saturation; where a NaN shows first")
    func layerStatisticsByHand() throws {
        let statistics = try handmade().layerStatistics()
        #expect(statistics.map(\.title) == ["Dense(1→2, tanh)", "Dense(2→1, identity)"] && statistics.map(\.index) == [0, 1])
        // h = tanh([3, 0.1]): |tanh 3| = 0.995 > 0.99 is saturated, tanh 0.1 is not: half the outputs.
        #expect(statistics[0].saturation == 0.5 && statistics[1].saturation == nil)
        expectClose(statistics[0].weightNorm, (9.01 as Double).squareRoot(), tolerance: 1e-15)
        expectClose(statistics[1].weightNorm, 1, tolerance: 1e-15)
        // y = 0.6 h0 + 0.8 h1, dL/dy = y - 0 (half squared error), dL/dw1 = h · y: its norm is |y| ‖h‖.
        let h = [Double.libmTanh(3), Double.libmTanh(0.1)], y = 0.6 * h[0] + 0.8 * h[1]
        expectClose(statistics[1].gradientNorm, abs(y) * (h[0] * h[0] + h[1] * h[1]).squareRoot(), tolerance: 1e-15)
        // dL/dw0 = x · (y w1 ⊙ (1 - h²)), with x = 1.
        let dw0 = [y * 0.6 * (1 - h[0] * h[0]), y * 0.8 * (1 - h[1] * h[1])]
        expectClose(statistics[0].gradientNorm, (dw0[0] * dw0[0] + dw0[1] * dw0[1]).squareRoot(), tolerance: 1e-15)
        #expect(try handmade().divergenceLocation() == "loss")
        #expect(try handmade(input: .nan).divergenceLocation() == "layers.0 output")
    }

    @Test("A residual block's weight norm is over every weight inside it: √(‖W₀‖² + ‖W₁‖²), biases left out")
    func containerStatistics() throws {
        var network = try Network<Double>(
            [
                try Residual<Double>([try Dense<Double>(2, 2, activation: .relu), try Dense<Double>(2, 2, activation: .identity)]),
                try Dense<Double>(2, 1, activation: .identity),
            ], loss: .halfSquaredError)
        // body.0: W = [[3, 0], [0, 4]] (norm 5), b = [7, 7];  body.1: W = [[0, 12], [0, 0]] (norm 12), b = [9, 9];  layers.1: W = [1, 1], b = [0].
        network.parameters = [3, 0, 0, 4, 7, 7, 0, 12, 0, 0, 9, 9, 1, 1, 0]
        let statistics = network.layerStatistics()
        #expect(statistics[0].weightNorm == 13 && statistics[1].weightNorm == (2 as Double).squareRoot())
    }

    @Test("Shares of magnitudes: counted exactly up to 65,536 entries, estimated from 64 evenly spread runs past that")
    func shareOfMagnitudes() throws {
        // Small: exact. [0, -2, 0.5, 3] above 1: two of four.
        #expect(try Tensor<Float>(rows: [[0, -2], [0.5, 3]]).shareOfMagnitudes(above: 1) == 0.5)
        #expect(Tensor<Float>(zeros: [0, 3]).shareOfMagnitudes(above: 0) == 0)
        // 65,536 entries, every third above 0: still counted exactly (21,846 of them).
        let exact = try Tensor<Float>(shape: [65_536, 1], scalars: (0..<65_536).map { $0 % 3 == 0 ? -1 : 0 })
        #expect(exact.shareOfMagnitudes(above: 0) == 21_846.0 / 65_536)
        // 200,000 entries, every fourth above 0: each run of 1,024 holds 256, so the estimate is exact.
        let strided = try Tensor<Float>(shape: [2_000, 100], scalars: (0..<200_000).map { $0 % 4 == 0 ? 5 : 0 })
        #expect(strided.shareOfMagnitudes(above: 0) == 0.25)
        // The first 30% dead, the rest alive: the runs spread over the whole tensor see it, within one run's weight.
        let split = try Tensor<Float>(shape: [2_000, 100], scalars: (0..<200_000).map { $0 < 60_000 ? 0 : 1 })
        #expect(abs(split.shareOfMagnitudes(above: 0) - 0.7) <= 1.0 / 64)
    }

}
