import NeuronCore
import Testing
@testable import NeuronTraining

@Suite("TrainingSnapshot: what an engine reports, in plain numbers")
struct TrainingSnapshotTests {
    /// `Network[Dense(1→2, tanh), Dense(2→1, identity)]` with weights chosen by hand, after one
    /// forward and backward pass of x = 1 against target 0.
    private func handmade(input: Double = 1) throws -> Network<Double> {
        var network = try Network<Double>([try Dense<Double>(1, 2, activation: .tanh), try Dense<Double>(2, 1, activation: .identity)],
                                          loss: .halfSquaredError)
        // layers.0: w (1, 2) = [3, 0.1], b = [0, 0];  layers.1: w (2, 1) = [0.6, 0.8], b = [0]
        network.parameters = [3, 0.1, 0, 0, 0.6, 0.8, 0]
        try network.lossAndGradients(Tensor(shape: [1, 1], scalars: [input]), targets: Tensor(shape: [1, 1], scalars: [0]))
        return network
    }

    @Test("Layer statistics by hand: weight and gradient norms, tanh saturation, finite outputs")
    func layerStatisticsByHand() throws {
        let statistics = layerStatistics(of: try handmade())
        #expect(statistics.map(\.title) == ["Dense(1→2, tanh)", "Dense(2→1, identity)"] && statistics.map(\.index) == [0, 1])
        // h = tanh([3, 0.1]): |tanh 3| = 0.995 > 0.99 is saturated, tanh 0.1 is not: half the outputs.
        #expect(statistics[0].saturation == 0.5 && statistics[1].saturation == nil)
        expectClose(statistics[0].weightNorm, (9.01 as Double).squareRoot(), tolerance: 1e-15)
        expectClose(statistics[1].weightNorm, 1, tolerance: 1e-15)
        // y = 0.6 h0 + 0.8 h1, dL/dy = y - 0 (half squared error), dL/dw1 = h · y: its norm is |y| ‖h‖.
        let h = [Double.tanh(3), Double.tanh(0.1)], y = 0.6 * h[0] + 0.8 * h[1]
        expectClose(statistics[1].gradientNorm, abs(y) * (h[0] * h[0] + h[1] * h[1]).squareRoot(), tolerance: 1e-15)
        // dL/dw0 = x · (y w1 ⊙ (1 - h²)), with x = 1.
        let dw0 = [y * 0.6 * (1 - h[0] * h[0]), y * 0.8 * (1 - h[1] * h[1])]
        expectClose(statistics[0].gradientNorm, (dw0[0] * dw0[0] + dw0[1] * dw0[1]).squareRoot(), tolerance: 1e-15)
        #expect(statistics.allSatisfy { !$0.outputIsNonFinite })
        #expect(layerStatistics(of: try handmade(input: .nan)).map(\.outputIsNonFinite) == [true, true])
    }

    @Test("The progress part is the engine's counters and records")
    func progress() throws {
        var engine = try xorEngine(epochs: 10, learningRate: 0.25, seed: 3)
        for _ in 0 ..< 4 { _ = engine.step() }
        let snapshot = TrainingSnapshot(progressOf: engine)
        #expect(snapshot.title == engine.title && snapshot.seed == 3)
        #expect(snapshot.epoch == 4 && snapshot.totalEpochs == 10 && snapshot.step == 4 && snapshot.totalSteps == 10)
        #expect(snapshot.learningRate == 0.25 && snapshot.records == engine.records && snapshot.records.count == 4)
        #expect(snapshot.layers.isEmpty && snapshot.neuron == nil && snapshot.validationLoss == nil)
    }
}
