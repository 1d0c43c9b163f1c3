import Testing

@testable import NeuronCore

@Suite("BatchNorm")
struct BatchNormTests {
    @Test("By hand: one feature over a batch of 4; running statistics move as PyTorch's do")
    func handWorked() throws {
        // x = 1, 2, 3, 6: mean 3, biased variance (4 + 1 + 0 + 9) / 4 = 3.5, unbiased 14 / 3.
        var norm = try BatchNorm<Double>(input: [1], epsilon: 1e-5)
        let x = try Tensor<Double>(shape: [4, 1], scalars: [1, 2, 3, 6])
        let run = runLayer(&norm, x: x, parameters: [2, 0.5], state: [0, 1], dy: nil)
        let s = 1 / (3.5 + 1e-5).squareRoot()
        expectClose(run.output.scalars, [-2, -1, 0, 3].map { 2 * $0 * s + 0.5 }, tolerance: 1e-12)
        expectClose(run.state, [0.1 * 3, 0.9 + 0.1 * 14 / 3], tolerance: 1e-12)
        let evaluation = runLayer(&norm, x: x, parameters: [2, 0.5], state: run.state, dy: nil, mode: .evaluation)
        expectClose(evaluation.output.scalars, [1, 2, 3, 6].map { 2 * ($0 - 0.3) / (0.9 + 1.4 / 3 + 1e-5).squareRoot() + 0.5 }, tolerance: 1e-12)
        #expect(norm.parameterShapes.map(\.name) == ["weight", "bias"] && norm.stateShapes.map(\.name) == ["running_mean", "running_var"])
    }

    @Test("Equals the naive column statistics and full-Jacobian backward, images and vectors, with an activation")
    func fastEqualsNaive() throws {
        for seed in UInt64(1)...20 {
            var g = SeededGenerator(seed: seed)
            let image = g.index(below: 2) == 0
            let input = image ? [1 + g.index(below: 4), 1 + g.index(below: 4), 1 + g.index(below: 5)] : [1 + g.index(below: 7)]
            let batch = 2 + g.index(below: 4)
            let activation: Activation = [.identity, .tanh, .relu][g.index(below: 3)]
            var norm = try BatchNorm<Double>(input: input, activation: activation)
            let c = norm.channels, count = batch * input.reduce(1, *)
            let x = try Tensor<Double>(shape: [batch, count / batch], scalars: randomScalars(count, using: &g))
            let dy = try Tensor<Double>(shape: x.shape, scalars: randomScalars(count, using: &g))
            let parameters: [Double] = randomScalars(2 * c, using: &g)
            let run = runLayer(
                &norm, x: x, parameters: parameters, state: [Double](repeating: 0, count: c) + [Double](repeating: 1, count: c), dy: dy)
            let naive = Naive.batchNormTraining(
                try x.reshaped(to: [count / c, c]), gamma: Tensor(vector: Array(parameters[..<c])), beta: Tensor(vector: Array(parameters[c...])),
                epsilon: 1e-5, activation: activation, outputGradient: try dy.reshaped(to: [count / c, c]))
            expectClose(run.output.scalars, naive.output.scalars, tolerance: 1e-12)
            expectClose(run.gradients, naive.gamma.scalars + naive.beta.scalars, tolerance: 1e-12)
            expectClose(run.inputGradient.scalars, naive.input.scalars, tolerance: 1e-11)
        }
    }

    @Test("Bad settings are refused with the layer named")
    func refused() {
        #expect(
            message { () throws(NetworkError) in try BatchNorm<Float>(input: [2, 3]) }.contains(
                "BatchNorm(2×3): takes (features) vectors or (height, width, channels) images"))
        #expect(message { () throws(NetworkError) in try BatchNorm<Float>(input: [4], momentum: 2) }.contains("momentum must be between 0 and 1"))
        #expect(message { () throws(NetworkError) in try BatchNorm<Float>(input: [1 << 32, 1 << 32, 1]) }.contains("takes (features) vectors or"))
    }
}
