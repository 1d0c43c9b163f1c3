import Foundation
import Testing

@testable import NeuronCore

@Suite("A plain SGD update inside the backward pass (Network.fusesUpdate)")
struct FusedUpdateTests {
    /// 5-4-3 tanh-tanh-softmax with random weights and biases (biases 0 would hide a bias update's bug).
    static func dense(seed: UInt64 = 3) throws -> Network<Double> {
        var network = try Network<Double>(
            features: 5, layers: [(4, .tanh), (3, .relu), (3, .softmax)], loss: .softmaxCrossEntropy, seed: seed)
        var g = SeededGenerator(seed: seed &+ 100)
        for i in network.parameters.indices { network.parameters[i] += g.uniform(-0.3, 0.3) }
        return network
    }

    static func batch(rows: Int, network: Network<Double>, seed: UInt64) -> (Tensor<Double>, Tensor<Double>) {
        var g = SeededGenerator(seed: seed)
        let x = Tensor<Double>.random([rows] + network.inputShape, using: &g)
        return (x, randomTargets(batch: rows, outputs: network.outputCount, loss: network.loss, using: &g))
    }

    /// `steps` steps of `optimizer`, fused or not; the losses and the parameters after.
    static func train<O: Optimizer>(
        _ network: Network<Double>, _ optimizer: O, fused: Bool, steps: Int, rows: Int = 6, clip: Double? = nil
    ) throws -> (losses: [Double], network: Network<Double>, optimizer: O) where O.Scalar == Double {
        var (network, optimizer) = (network, optimizer)
        network.fusesUpdate = fused
        var losses: [Double] = []
        for s in 0..<steps {
            let (x, t) = batch(rows: rows, network: network, seed: 40 + UInt64(s))
            losses.append(try network.trainStep(x, targets: t, optimizer: &optimizer, maximumGradientNorm: clip))
        }
        return (losses, network, optimizer)
    }

    @Test("One step equals the naive gradient (Naive.denseBackward, layer by layer) and p ← p − lr·(g + λ·p) by hand")
    func naiveOracle() throws {
        for decay in [WeightDecayScope.all, .matrices(try Self.dense().decayedRanges)] {
            let network = try Self.dense()
            let (x, t) = Self.batch(rows: 4, network: network, seed: 9)
            let (lr, lambda) = (0.3, 0.05)
            var fused = network
            var sgd = try SGD<Double>(learningRate: lr, weightDecay: lambda, decay: decay)
            try fused.trainStep(x, targets: t, optimizer: &sgd)

            // The oracle: a forward pass and backward pass of the naive loops, the loss's gradient
            // of the mean cross-entropy (softmax − target) / rows, then the update entry by entry.
            let weights = network.parameterTensors.filter { $0.tensor == "weight" }
            let biases = network.parameterTensors.filter { $0.tensor == "bias" }
            func tensor(_ p: ParameterTensor) throws -> Tensor<Double> {
                try Tensor(shape: p.shape, scalars: Array(network.parameters[p.range]))
            }
            let activations: [Activation] = [.tanh, .relu, .softmax]
            var inputs = [x], preActivations: [Tensor<Double>] = []
            for l in 0..<3 {
                let (z, y) = Naive.denseForward(inputs[l], weight: try tensor(weights[l]), bias: try tensor(biases[l]), activation: activations[l])
                preActivations.append(z)
                inputs.append(y)
            }
            // The softmax of the logits, row by row (the naive forward applies activations entry by entry).
            let z = preActivations[2]
            var dy = Tensor<Double>(zeros: t.shape)
            for n in 0..<z.rows {
                let exps = (0..<z.columns).map { Foundation.exp(z[n, $0] - (0..<z.columns).map { z[n, $0] }.max()!) }
                for j in 0..<z.columns { dy[n, j] = (exps[j] / exps.reduce(0, +) - t[n, j]) / Double(x.rows) }
            }
            var expected = network.parameters
            for l in (0..<3).reversed() {
                // The softmax's derivative is folded into dy above: take its layer as identity.
                let (dw, db, dx) = Naive.denseBackward(
                    inputs[l], weight: try tensor(weights[l]), preActivation: preActivations[l], outputGradient: dy,
                    activation: l == 2 ? .identity : activations[l])
                for (p, g) in [(weights[l], dw), (biases[l], db)] {
                    let lambdaHere = decay == .all || p.isDecayed ? lambda : 0
                    for (k, i) in p.range.enumerated() { expected[i] -= lr * (g[k] + lambdaHere * expected[i]) }
                }
                dy = dx
            }
            expectClose(fused.parameters, expected, tolerance: 1e-14)
            #expect(sgd.step == 1)
        }
    }

    @Test("Fused steps equal an update after backward (fusesUpdate = false), with weight decay on every parameter or the matrices only")
    func fusedEqualsUnfused() throws {
        let network = try Self.dense()
        for decay in [WeightDecayScope.all, .matrices(network.decayedRanges)] {
            for lambda in [0.0, 0.01] {
                let sgd = try SGD<Double>(learningRate: 0.2, weightDecay: lambda, decay: decay, schedule: .step(every: 2, factor: 0.5))
                let fused = try Self.train(network, sgd, fused: true, steps: 5)
                let unfused = try Self.train(network, sgd, fused: false, steps: 5)
                expectClose(fused.losses, unfused.losses, tolerance: 1e-14)
                expectClose(fused.network.parameters, unfused.network.parameters, tolerance: 1e-14)
                #expect(fused.optimizer.step == 5)
                #expect(fused.network.parameters != network.parameters)
            }
        }
    }

    @Test("Decay over part of a dense weight: that layer updates after its backward, with the same result")
    func partialDecay() throws {
        let network = try Self.dense()
        // The first weight's middle only, and the second layer's bias with the last weight's first half.
        let w0 = network.parameterTensors[0].range, b1 = network.parameterTensors[3].range, w2 = network.parameterTensors[4].range
        let decay = WeightDecayScope.matrices([w0.lowerBound + 3..<w0.upperBound - 2, b1.lowerBound..<w2.lowerBound + w2.count / 2])
        let sgd = try SGD<Double>(learningRate: 0.2, weightDecay: 0.1, decay: decay)
        let fused = try Self.train(network, sgd, fused: true, steps: 3)
        let unfused = try Self.train(network, sgd, fused: false, steps: 3)
        expectClose(fused.network.parameters, unfused.network.parameters, tolerance: 1e-14)
    }

    @Test("Float: the product's update is an update after backward, within Float's rounding")
    func float() throws {
        let double = try Self.dense()
        var network = try Network<Float>(double.layers.map { $0.converted(to: Float.self) }, loss: double.loss)
        network.parameters = double.parameters.map(Float.init)
        let (x, t) = Self.batch(rows: 8, network: double, seed: 5)
        let (xf, tf) = (
            try Tensor<Float>(shape: x.shape, scalars: x.scalars.map(Float.init)),
            try Tensor<Float>(shape: t.shape, scalars: t.scalars.map(Float.init))
        )
        var (fused, unfused) = (network, network)
        unfused.fusesUpdate = false
        var (a, b) = (try SGD<Float>(learningRate: 0.1, weightDecay: 0.01), try SGD<Float>(learningRate: 0.1, weightDecay: 0.01))
        for _ in 0..<4 {
            expectClose(try fused.trainStep(xf, targets: tf, optimizer: &a), try unfused.trainStep(xf, targets: tf, optimizer: &b), tolerance: 1e-6)
        }
        expectClose(fused.parameters, unfused.parameters, tolerance: 1e-6)
    }

    @Test("Layers without a fused backward (convolution, pooling, batch norm, flatten) update after their own backward, as unfused")
    func imageNetwork() throws {
        var network = try Network<Double>(
            [
                try Conv2D<Double>(input: [6, 6, 2], filters: 3, kernel: (3, 3), padding: .same, activation: .relu),
                try BatchNorm<Double>(input: [6, 6, 3]),
                try MaxPool2D<Double>(input: [6, 6, 3], size: (2, 2)),
                try Flatten<Double>(input: [3, 3, 3]),
                try Dense<Double>(27, 4, activation: .softmax),
            ], loss: .softmaxCrossEntropy)
        network.initialize(seed: 4)
        let sgd = try SGD<Double>(learningRate: 0.1, weightDecay: 0.02, decay: .matrices(network.decayedRanges))
        let fused = try Self.train(network, sgd, fused: true, steps: 3, rows: 5)
        let unfused = try Self.train(network, sgd, fused: false, steps: 3, rows: 5)
        expectClose(fused.losses, unfused.losses, tolerance: 1e-13)
        expectClose(fused.network.parameters, unfused.network.parameters, tolerance: 1e-13)
        expectClose(fused.network.state, unfused.network.state, tolerance: 1e-13)
    }

    @Test("Not fused, gradients kept: momentum, Adam, clipping, a split batch, a tied head")
    func notFused() throws {
        let network = try Self.dense()
        let (x, t) = Self.batch(rows: 6, network: network, seed: 40)
        var reference = network
        try reference.lossAndGradients(x, targets: t)
        func check<O: Optimizer>(_ optimizer: O, clip: Double? = nil, threads: Int = 1) throws where O.Scalar == Double {
            var (n, o) = (network, optimizer)
            n.batchThreads = threads
            try n.trainStep(x, targets: t, optimizer: &o, maximumGradientNorm: clip)
            // Clipping scales the gradients; every other case leaves them as computed.
            if clip == nil { expectClose(n.gradients, reference.gradients, tolerance: 1e-14) } else { #expect(n.gradients.contains { $0 != 0 }) }
        }
        try check(try SGD<Double>(learningRate: 0.1, momentum: 0.9))
        try check(try Adam<Double>(learningRate: 0.01))
        try check(try SGD<Double>(learningRate: 0.1), clip: 0.01)
        try check(try SGD<Double>(learningRate: 0.1), threads: 2)

        // A tied head's gradient and the embedding's add up before the update.
        let tied = try BatchThreadsTests.transformer(time: 4, features: 4, vocabulary: 5)
        var g = SeededGenerator(seed: 2)
        let (tokens, next) = try BatchThreadsTests.tokens(rows: 3, time: 4, vocabulary: 5, using: &g)
        var (a, b) = (tied, tied)
        b.fusesUpdate = false
        var (sa, sb) = (try SGD<Double>(learningRate: 0.1), try SGD<Double>(learningRate: 0.1))
        try a.trainStep(tokens, targets: next, optimizer: &sa)
        try b.trainStep(tokens, targets: next, optimizer: &sb)
        #expect(a.parameters == b.parameters)
        #expect(a.gradients == b.gradients)
    }

    @Test("MiniBatchTraining's steps fuse too: the same losses, parameters and correct counts as unfused")
    func miniBatchTraining() throws {
        let network = try Self.dense()
        let (x, t) = Self.batch(rows: 10, network: network, seed: 7)
        let labels = (0..<10).map { n in (0..<3).first { t[n, $0] == 1 }! }
        let dataset = try Dataset(features: x, targets: t, labels: labels)
        var runs: [MiniBatchTraining<Double, SGD<Double>>] = []
        for fused in [true, false] {
            var n = network
            n.fusesUpdate = fused
            var run = try MiniBatchTraining(network: n, optimizer: try SGD<Double>(learningRate: 0.5), dataset: dataset, batchSize: 4, seed: 1)
            for _ in 0..<7 { run.step() }
            runs.append(run)
        }
        expectClose(runs[0].network.parameters, runs[1].network.parameters, tolerance: 1e-14)
        #expect(runs[0].position == runs[1].position)
        #expect(runs[0].optimizer.step == 7)
    }
}
