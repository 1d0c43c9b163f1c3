import Foundation
import Testing

@testable import NeuronCore

@Suite("A training pass split over threads (Network.batchThreads)")
struct BatchThreadsTests {
    /// A small tied transformer over `vocabulary` tokens, as the config builds one: embeddings,
    /// a block of LayerNorm → attention and LayerNorm → GELU MLP, each residual, a final
    /// LayerNorm and the tied head.
    static func transformer(time: Int, features: Int, vocabulary: Int) throws -> Network<Double> {
        let sequence = [time, features]
        var network = try Network<Double>(
            [
                try Embedding<Double>(vocabulary: vocabulary, features: features, time: time),
                try PositionEmbedding<Double>(time: time, features: features),
                try Residual<Double>([
                    try LayerNorm<Double>(shape: sequence), try CausalSelfAttention<Double>(time: time, features: features, heads: 2),
                ]),
                try Residual<Double>([
                    try LayerNorm<Double>(shape: sequence), try Dense<Double>(features, 3 * features, activation: .identity, time: time),
                    try GELU<Double>(shape: [time, 3 * features]), try Dense<Double>(3 * features, features, activation: .identity, time: time),
                ]),
                try LayerNorm<Double>(shape: sequence),
                try TiedHead<Double>(time: time, features: features, vocabulary: vocabulary),
            ], loss: .sequenceCrossEntropy)
        network.initialize(seed: 3)
        return network
    }

    /// `rows` rows of random tokens whose targets end in padding (−1) after a random length, so
    /// that the shares count different numbers of positions.
    static func tokens(rows: Int, time: Int, vocabulary: Int, using g: inout SeededGenerator) throws -> (Tensor<Double>, Tensor<Double>) {
        var x: [Double] = [], t: [Double] = []
        for row in 0..<rows {
            let length = row == 0 ? 1 : 1 + g.index(below: time)  // row 0 is nearly all padding
            for position in 0..<time {
                x.append(position < length ? Double(g.index(below: vocabulary)) : 0)
                t.append(position < length ? Double(g.index(below: vocabulary)) : -1)
            }
        }
        return (try Tensor(shape: [rows, time], scalars: x), try Tensor(shape: [rows, time], scalars: t))
    }

    @Test("Split into 2, 3 or 5 shares, a transformer's loss, gradients and output are one thread's, within rounding")
    func transformerShares() throws {
        let (time, features, vocabulary) = (5, 4, 6)
        var g = SeededGenerator(seed: 11)
        let (x, t) = try Self.tokens(rows: 7, time: time, vocabulary: vocabulary, using: &g)
        var whole = try Self.transformer(time: time, features: features, vocabulary: vocabulary)
        let loss = try whole.lossAndGradients(x, targets: t)
        for threads in [2, 3, 5] {
            var split = try Self.transformer(time: time, features: features, vocabulary: vocabulary)
            split.batchThreads = threads
            // Twice: the second pass reuses the replicas and buffers the first one sized.
            for _ in 0..<2 {
                let splitLoss = try split.lossAndGradients(x, targets: t)
                expectClose(splitLoss, loss, tolerance: 1e-13)
                expectClose(split.gradients, whole.gradients, tolerance: 1e-13)
                #expect(split.output.shape == whole.output.shape)
                expectClose(split.output.scalars, whole.output.scalars, tolerance: 1e-13)
            }
            #expect(split.split.replicas.count == threads - 1)
        }
    }

    @Test("A batch of fewer rows than threads (an epoch's last) uses as many shares as rows; the other threads idle, kept")
    func fewerRows() throws {
        let (time, features, vocabulary) = (4, 4, 5)
        var g = SeededGenerator(seed: 8)
        var whole = try Self.transformer(time: time, features: features, vocabulary: vocabulary)
        var split = whole
        split.batchThreads = 4
        for rows in [6, 2, 3, 6] {
            let (x, t) = try Self.tokens(rows: rows, time: time, vocabulary: vocabulary, using: &g)
            expectClose(try split.lossAndGradients(x, targets: t), try whole.lossAndGradients(x, targets: t), tolerance: 1e-13)
            expectClose(split.gradients, whole.gradients, tolerance: 1e-13)
            expectClose(split.output.scalars, whole.output.scalars, tolerance: 1e-13)
            #expect(split.split.replicas.count == 3, "rows \(rows): the replicas were made again")
        }
    }

    @Test("The split gradients are the whole batch's loss differentiated: central differences of the unsplit loss")
    func finiteDifferences() throws {
        let (time, features, vocabulary) = (4, 4, 5)
        var g = SeededGenerator(seed: 5)
        let (x, t) = try Self.tokens(rows: 7, time: time, vocabulary: vocabulary, using: &g)
        // Shares of 3 and 4 rows whose counted positions are not in that ratio: weighting the
        // shares by rows would be wrong here.
        let counted = t.scalars.filter { $0 >= 0 }.count, first = t.scalars[..<(3 * time)].filter { $0 >= 0 }.count
        #expect(first * 7 != 3 * counted)
        var network = try Self.transformer(time: time, features: features, vocabulary: vocabulary)
        network.batchThreads = 2
        try network.lossAndGradients(x, targets: t)
        let analytic = network.gradients
        // The oracle: the loss of the whole batch at once, in evaluation mode (no dropout here).
        var probe = network
        probe.batchThreads = 1
        let eps = 1e-6
        for i in stride(from: 0, to: network.parameterCount, by: 7) {
            let original = probe.parameters[i]
            probe.parameters[i] = original + eps
            let up = try probe.loss(x, targets: t)
            probe.parameters[i] = original - eps
            let down = try probe.loss(x, targets: t)
            probe.parameters[i] = original
            let faux = (up - down) / (2 * eps)
            #expect(abs(analytic[i] - faux) <= 1e-7 + 1e-5 * abs(faux), "parameter \(i): \(analytic[i]) vs \(faux)")
        }
    }

    @Test("Classification: each share's mean weighted by its rows; the output holds every row for the correct count")
    func classification() throws {
        func network() throws -> Network<Double> {
            var net = try Network<Double>(features: 3, layers: [(5, .tanh), (4, .softmax)], loss: .softmaxCrossEntropy, seed: 2)
            net.noiseStep = 0
            return net
        }
        var g = SeededGenerator(seed: 9)
        let x = Tensor<Double>.random([5, 3], using: &g)
        var targets = Tensor<Double>(zeros: [5, 4])
        for row in 0..<5 { targets[row * 4 + (row * 3) % 4] = 1 }
        var whole = try network(), split = try network()
        split.batchThreads = 2  // shares of 2 and 3 rows
        expectClose(try split.lossAndGradients(x, targets: targets), try whole.lossAndGradients(x, targets: targets), tolerance: 1e-14)
        expectClose(split.gradients, whole.gradients, tolerance: 1e-14)
        expectClose(split.output.scalars, whole.output.scalars, tolerance: 1e-15)
        // A forward pass afterwards is the network's own again.
        let single = try Tensor<Double>(shape: [1, 3], scalars: [0.1, 0.2, 0.3])
        #expect(try split.forward(single).shape == [1, 4])
    }

    @Test("A batch of padding alone: loss and gradients 0 in every share")
    func padding() throws {
        var network = try Self.transformer(time: 3, features: 4, vocabulary: 4)
        network.batchThreads = 2
        let x = Tensor<Double>(zeros: [4, 3])
        let t = try Tensor<Double>(shape: [4, 3], scalars: Array(repeating: -1, count: 12))
        #expect(try network.lossAndGradients(x, targets: t) == 0)
        #expect(network.gradients.allSatisfy { $0 == 0 })
    }

    @Test("Each share draws its own dropout masks: identical rows in two shares are dropped differently")
    func dropoutShares() throws {
        var network = try Network<Double>(
            [Dense<Double>(4, 64), Dropout<Double>(input: [64], rate: 0.5), Dense<Double>(64, 2)], loss: .halfSquaredError)
        network.initialize(seed: 4)
        network.batchThreads = 2
        let row: [Double] = [0.5, -0.25, 1, 0.75]
        let x = try Tensor<Double>(shape: [2, 4], scalars: row + row), t = Tensor<Double>(zeros: [2, 2])
        try network.lossAndGradients(x, targets: t)
        let output = network.output.scalars
        #expect(output.count == 4)
        #expect(output[0..<2] != output[2..<4], "both shares drew share 0's mask")
    }

    @Test("A split network's threads end with it: twenty networks made, stepped and dropped leave no thread behind")
    func threadsEnd() throws {
        func threads() -> Int { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? 0 }
        var g = SeededGenerator(seed: 3)
        let (x, t) = try Self.tokens(rows: 4, time: 3, vocabulary: 4, using: &g)
        let before = threads()
        for _ in 0..<20 {
            var network = try Self.transformer(time: 3, features: 4, vocabulary: 4)
            network.batchThreads = 3  // two threads besides the caller
            try network.lossAndGradients(x, targets: t)
            var copy = network  // a copy shares them, one pass at a time
            try copy.lossAndGradients(x, targets: t)
        }
        // A stopped thread leaves /proc once it has returned: give them a moment.
        var after = threads()
        for _ in 0..<100 where after > before + 16 {
            Thread.sleep(forTimeInterval: 0.02)
            after = threads()
        }
        // Other suites' threads come and go meanwhile (the tests run in parallel); forty leaked ones would not.
        #expect(after <= before + 16, "\(before) threads before, \(after) after")
    }

    @Test("Batch normalization's statistics are the whole batch's: with state, the pass stays on one thread")
    func stateStaysWhole() throws {
        func network() throws -> Network<Double> {
            var net = try Network<Double>(
                [Dense<Double>(3, 4), BatchNorm<Double>(input: [4]), Dense<Double>(4, 2)], loss: .halfSquaredError)
            net.initialize(seed: 6)
            return net
        }
        var g = SeededGenerator(seed: 2)
        let x = Tensor<Double>.random([6, 3], using: &g), t = Tensor<Double>.random([6, 2], using: &g)
        var whole = try network(), split = try network()
        split.batchThreads = 2
        #expect(try split.lossAndGradients(x, targets: t) == (try whole.lossAndGradients(x, targets: t)))
        #expect(split.gradients == whole.gradients && split.state == whole.state)
        #expect(split.split.replicas.isEmpty)
    }
}
