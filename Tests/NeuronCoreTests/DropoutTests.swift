import Testing

@testable import NeuronCore

@Suite("Dropout")
struct DropoutTests {
    @Test("Inverted dropout: kept inputs scaled by 1/(1-rate), about rate of them dropped, identity in evaluation")
    func training() throws {
        var dropout = try Dropout<Double>(input: [1000], rate: 0.3)
        dropout.drawNoise(key: 12345)
        let x = try Tensor<Double>(shape: [10, 1000], scalars: Array(repeating: 2, count: 10_000))
        let dy = try Tensor<Double>(shape: [10, 1000], scalars: Array(repeating: 1, count: 10_000))
        let run = runLayer(&dropout, x: x, parameters: [], dy: dy)
        let kept = run.output.scalars.filter { $0 != 0 }
        #expect(kept.allSatisfy { abs($0 - 2 / 0.7) < 1e-12 })
        // 10 000 draws at p = 0.7: the kept count's standard deviation is √(10 000·0.7·0.3) ≈ 46.
        #expect(abs(kept.count - 7000) < 250, "kept \(kept.count)")
        #expect(run.inputGradient.scalars == run.output.scalars.map { $0 / 2 })  // dx = dy ⊙ mask
        let evaluation = runLayer(&dropout, x: x, parameters: [], dy: nil, mode: .evaluation)
        #expect(evaluation.output == x)
    }

    @Test("A key names its mask: the same key gives the same mask, another key another")
    func keyedMasks() throws {
        var a = try Dropout<Float>(input: [64], rate: 0.5), b = a
        let x = try Tensor<Float>(shape: [4, 64], scalars: Array(repeating: 1, count: 256))
        a.drawNoise(key: 7)
        b.drawNoise(key: 7)
        let first = runLayer(&a, x: x, parameters: [], dy: nil).output
        #expect(runLayer(&b, x: x, parameters: [], dy: nil).output == first)
        b.drawNoise(key: 8)
        #expect(runLayer(&b, x: x, parameters: [], dy: nil).output != first)
        #expect(
            message { () throws(NetworkError) in try Dropout<Float>(input: [4], rate: 1) }
                == "Dropout(rate 1.0): the rate must be at least 0 and below 1")
        // 2³² · 2³² wraps to 0 in an Int: the count is refused, not taken as wrapped.
        #expect(
            message { () throws(NetworkError) in try Dropout<Float>(input: [1 << 32, 1 << 32], rate: 0.5) }.contains(
                "takes samples of a positive shape"))
    }

    @Test("A network draws a new mask each step from its seed, and the same seed replays them")
    func networkNoise() throws {
        func network() throws -> Network<Double> {
            var net = try Network<Double>(
                [Dense<Double>(4, 6), Dropout<Double>(input: [6], rate: 0.5), Dense<Double>(6, 2)], loss: .halfSquaredError)
            net.initialize(seed: 11)
            return net
        }
        var a = try network(), b = try network()
        var g = SeededGenerator(seed: 1)
        let x = Tensor<Double>.random([3, 4], using: &g), t = Tensor<Double>.random([3, 2], using: &g)
        let first = try a.lossAndGradients(x, targets: t)
        let second = try a.lossAndGradients(x, targets: t)
        #expect(first != second && a.noiseStep == 2)
        #expect(try b.lossAndGradients(x, targets: t) == first)
        b.noiseStep = 1
        #expect(try b.loss(x, targets: t, mode: .training) == second)  // a held noise step replays its mask
        #expect(b.noiseStep == 1)
    }
}
