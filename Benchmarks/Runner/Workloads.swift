// The workloads: a network, a batch and a learning rate, built from fixed seeds; checked against
// the naive loops before they are timed, and written out for the peers to run the same work.
import AllocationCounter
import Foundation
import NeuronCore
import NeuronTraining

/// One training step's worth of work, in Float.
struct Workload {
    var id: String
    var title: String
    var sizes: [Int]
    var activations: [Activation]
    var loss: Loss
    var batch: Int
    var learningRate: Float
    /// Steps a peer times per round (Python's per-step overhead makes tiny steps slow for it).
    var peerSteps: Int

    static let all: [Workload] = [
        Workload(
            id: "W1", title: "neuron 1→1, batch 1", sizes: [1, 1], activations: [.tanh], loss: .halfSquaredError,
            batch: 1, learningRate: 0.01, peerSteps: 2_000),
        Workload(
            id: "W2", title: "XOR 2-4-1, batch 4", sizes: [2, 4, 1], activations: [.tanh, .tanh], loss: .halfSquaredError,
            batch: 4, learningRate: 0.1, peerSteps: 2_000),
        Workload(
            id: "W3", title: "64-128-10, batch 32", sizes: [64, 128, 10], activations: [.tanh, .softmax], loss: .softmaxCrossEntropy,
            batch: 32, learningRate: 0.01, peerSteps: 1_000),
        Workload(
            id: "W4", title: "784-256-128-10, batch 64", sizes: [784, 256, 128, 10], activations: [.tanh, .tanh, .softmax],
            loss: .softmaxCrossEntropy, batch: 64, learningRate: 0.01, peerSteps: 300),
        Workload(
            id: "W5", title: "784-256-128-10, batch 256", sizes: [784, 256, 128, 10], activations: [.tanh, .tanh, .softmax],
            loss: .softmaxCrossEntropy, batch: 256, learningRate: 0.01, peerSteps: 100),
        Workload(
            id: "W6", title: "1024-1024-1024-1024, batch 128", sizes: [1024, 1024, 1024, 1024], activations: [.tanh, .tanh, .identity],
            // 1e-4: a 1,024-output squared error, stepped hundreds of times on one batch,
            // blows up at 0.01 (and a peer rightly refuses a non-finite loss).
            loss: .halfSquaredError, batch: 128, learningRate: 1e-4, peerSteps: 30),
    ]

    /// Floating-point operations in one step: `2·batch·in·out` per layer for the forward product,
    /// the same for the weight gradient, and again for the input gradient past the first layer.
    var flops: Double {
        (0..<sizes.count - 1).reduce(0.0) { total, l in
            let product = 2 * Double(batch) * Double(sizes[l]) * Double(sizes[l + 1])
            return total + (l == 0 ? 2 : 3) * product
        }
    }

    /// The network (seeded weights; W1 is Docs/Reference.md §3's neuron, w = b = 0.5) and its batch, or
    /// only its first `rows` rows (the naive check of the large workloads).
    func make(rows: Int? = nil) throws -> (network: Network<Float>, x: Tensor<Float>, t: Tensor<Float>) {
        var network = try Network<Float>(
            features: sizes[0], layers: zip(sizes.dropFirst(), activations).map { ($0, $1) },
            loss: loss, seed: 1)
        var generator = SeededGenerator(seed: 2)
        var x = Tensor<Float>(zeros: [batch, sizes[0]]), t = Tensor<Float>(zeros: [batch, sizes.last!])
        switch id {
        case "W1":
            network.parameters = [0.5, 0.5]
            x[0] = 0.01
            t[0] = 0.1
        case "W2":
            let xor = Synthetic.xor(as: Float.self)
            (x, t) = (xor.features, xor.targets)
        default:
            for i in 0..<x.count { x[i] = Float(generator.uniform(0, 1)) }
            for n in 0..<batch {
                if loss == .softmaxCrossEntropy {
                    t[n, generator.index(below: sizes.last!)] = 1
                } else {
                    for j in 0..<sizes.last! { t[n, j] = Float(generator.uniform(-0.9, 0.9)) }
                }
            }
        }
        if let rows, rows < batch {
            x = try Tensor(shape: [rows, x.columns], scalars: Array(x.scalars.prefix(rows * x.columns)))
            t = try Tensor(shape: [rows, t.columns], scalars: Array(t.scalars.prefix(rows * t.columns)))
        }
        return (network, x, t)
    }

    /// The losses before each of `steps` SGD steps, through the engine.
    func engineLosses(steps: Int, rows: Int? = nil) throws -> [Double] {
        var (network, x, t) = try make(rows: rows)
        var sgd = try SGD<Float>(learningRate: learningRate)
        return try (0..<steps).map { _ in Double(try network.trainStep(x, targets: t, optimizer: &sgd)) }
    }

    /// The same from the naive loops: forward, loss, backward and update written out.
    func naiveLosses(steps: Int, rows: Int? = nil) throws -> [Double] {
        let (network, x, t) = try make(rows: rows)
        let batch = x.rows
        var weights = network.parameterTensors.filter { $0.tensor == "weight" }.map { network.parameter($0) }
        var biases = network.parameterTensors.filter { $0.tensor == "bias" }.map { network.parameter($0) }
        var losses: [Double] = []
        for _ in 0..<steps {
            var outputs = [x], preActivations: [Tensor<Float>] = []
            for l in weights.indices {
                let (z, y) = Naive.denseForward(outputs[l], weight: weights[l], bias: biases[l], activation: activations[l])
                preActivations.append(z)
                outputs.append(y)
            }
            let y = self.loss == .softmaxCrossEntropy ? Naive.softmax(outputs.last!) : outputs.last!
            var dy = Tensor<Float>(zeros: y.shape)
            var loss = 0.0
            for n in 0..<batch {
                for j in 0..<y.columns {
                    switch self.loss {
                    case .halfSquaredError:
                        loss += Double((y[n, j] - t[n, j]) * (y[n, j] - t[n, j])) / 2
                    case .softmaxCrossEntropy:
                        if t[n, j] != 0 { loss -= Double(t[n, j]) * Foundation.log(Double(y[n, j])) }
                    case .sequenceCrossEntropy:
                        preconditionFailure("the dense workloads are not sequence models")
                    }
                    dy[n, j] = (y[n, j] - t[n, j]) / Float(batch)  // both losses: (y - t) or (p - t), over the batch
                }
            }
            losses.append(loss / Double(batch))
            for l in weights.indices.reversed() {
                let g = Naive.denseBackward(
                    outputs[l], weight: weights[l], preActivation: preActivations[l], outputGradient: dy, activation: activations[l])
                for i in 0..<weights[l].count { weights[l][i] -= learningRate * g.weight[i] }
                for i in 0..<biases[l].count { biases[l][i] -= learningRate * g.bias[i] }
                dy = g.input
            }
        }
        return losses
    }

    /// Our per-step seconds, and heap allocations per step after warm-up.
    func time(blocks: Int) throws -> (seconds: [Double], allocationsPerStep: Double) {
        var (network, x, t) = try make()
        var sgd = try SGD<Float>(learningRate: learningRate)
        let seconds = try measureSteps(blocks: blocks) { try network.trainStep(x, targets: t, optimizer: &sgd) }
        let steps = 100
        allocation_counter_start()
        for _ in 0..<steps { try network.trainStep(x, targets: t, optimizer: &sgd) }
        let allocations = allocation_counter_stop()
        return (seconds, Double(allocations) / Double(steps))
    }

    /// The exchange file the peers read: the batch, the initial weights (our (in, out) layout) and the recipe.
    func writeExchangeFile(to directory: String, checkSteps: Int) throws -> String {
        let (network, x, t) = try make()
        var entries = [SafeTensors.entry("x", x), SafeTensors.entry("t", t)]
        entries += network.parameterTensors.map { SafeTensors.entry($0.name, network.parameter($0)) }
        let path = (directory as NSString).appendingPathComponent("\(id).safetensors")
        try SafeTensors.write(
            entries,
            metadata: [
                "activations": activations.map(\.rawValue).joined(separator: ","), "loss": loss.rawValue,
                "learningRate": "\(learningRate)", "checkSteps": "\(checkSteps)",
            ], to: path)
        return path
    }
}

/// Whether two loss sequences agree to `tolerance` relative (Float arithmetic in different orders).
func agree(_ a: [Double], _ b: [Double], tolerance: Double = 1e-4) -> Bool {
    a.count == b.count && zip(a, b).allSatisfy { abs($0 - $1) <= tolerance * max(abs($0), abs($1), 1e-12) }
}
