import Testing
@testable import NeuronCore

@Suite("Losses")
struct LossTests {
    @Test("Half-squared error by hand: Σ (y - t)² / 2 per sample, mean over the batch")
    func halfSquaredError() throws {
        let y = try Tensor<Double>(rows: [[1, 2], [0, 0]]), t = try Tensor<Double>(rows: [[0, 0], [0, 1]])
        var g: Tensor<Double>? = Tensor(zeros: [0, 0])
        // (1 + 4) / 2 + (0 + 1) / 2 = 3, over a batch of 2 = 1.5
        #expect(Loss.halfSquaredError.evaluate(output: y, logits: nil, targets: t, gradient: &g) == 1.5)
        #expect(g?.rowArrays == [[0.5, 1], [0, -0.5]])
    }

    @Test("Softmax cross-entropy by hand, and stable for huge logits")
    func crossEntropy() throws {
        var z = try Tensor<Double>(rows: [[0, 0], [1000, 0]])
        let t = try Tensor<Double>(rows: [[1, 0], [0, 1]])
        var p = z
        Activation.softmax.apply(to: &p)
        var g: Tensor<Double>? = Tensor(zeros: [0, 0])
        // Row 1: -log(1/2) = log 2. Row 2: -log softmax(z)₁ = 1000 + log(1 + e^-1000) = 1000. Mean: (log 2 + 1000) / 2.
        let value = Loss.softmaxCrossEntropy.evaluate(output: p, logits: z, targets: t, gradient: &g)
        #expect(value == (Double.log(2) + 1000) / 2)
        // (p - t) / batch: row 1 ([0.5, 0.5] - [1, 0]) / 2, row 2 ([1, 0] - [0, 1]) / 2.
        #expect(g?.rowArrays == [[-0.25, 0.25], [0.5, -0.5]])
        z = try Tensor<Float>(rows: [[100, -100]]).converted(to: Double.self)
        var none: Tensor<Double>? = nil
        #expect(Loss.softmaxCrossEntropy.evaluate(output: z, logits: z, targets: try Tensor(rows: [[0, 1]]), gradient: &none).isFinite)
    }
}
