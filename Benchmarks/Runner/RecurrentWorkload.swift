// W8: one training step of a character-level GRU at makemore's size, on real words, checked
// against the naive loops, then timed, its allocations counted and its time split by layer, and
// with --peers against PyTorch (eager and compiled) and JAX on the same weights and batch.
import AllocationCounter
import ArgumentParser
import Foundation
import NeuronCore
import NeuronTraining

/// W8: embedding 27→64 → GRU 64→64 → dense 64→27 at every position → sequence cross-entropy,
/// batch 32 of 16 positions, SGD at 0.1, in Float.
struct RecurrentWorkload: BatchSplitting {
    let id = "W8"
    /// Split as F3's config (`Data/words-gru.yaml`) splits it, when asked.
    var batchThreads = 1
    var title: String { "character GRU: embedding 27→64, GRU 64, dense 64→27 per position; batch 32, time 16\(splitDescription)" }
    let batch = 32
    let time = 16
    let features = 64
    let hidden = 64
    let vocabulary = 27
    /// Plain SGD, as every other step workload: the step's cost is the network's, not the optimizer's.
    let learningRate: Float = 0.1
    /// The words the batch is drawn from, relative to the package.
    static let text = "Data/words-small.txt"

    /// The layers, for `vocabulary` tokens.
    func layers() throws -> [any Layer<Float>] {
        [
            try Embedding<Float>(vocabulary: vocabulary, features: features, time: time),
            try GRU<Float>(time: time, inputs: features, hidden: hidden),
            try Dense<Float>(hidden, vocabulary, activation: .identity, time: time),
        ]
    }

    /// The network (seed 1: nn.Embedding's N(0, 1), nn.GRU's and nn.Linear's uniform, h0 zero) and
    /// 32 words of at most 15 letters drawn from `Data/words-small.txt` (seed 2), as a text run
    /// reads them: features `⏎ c1 … cn` then 0, targets `c1 … cn ⏎` then −1 (padding), cut from
    /// the file's block (its longest word + 1) to 16 positions, which cuts padding alone.
    func make() throws -> (network: Network<Float>, x: Tensor<Float>, t: Tensor<Float>) {
        var network = try Network<Float>(try layers(), loss: .sequenceCrossEntropy)
        network.initialize(seed: 1)
        network.batchThreads = batchThreads
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../\(Self.text)").standardized.path
        let corpus = try TextCorpus.load(path, maximumBytes: 1 << 20)
        guard corpus.vocabulary.count == vocabulary else {
            throw ValidationError("\(Self.text) has \(corpus.vocabulary.count) tokens; W8 is built for \(vocabulary)")
        }
        var fitting = corpus.lines.indices.filter { corpus.lines[$0].unicodeScalars.count < time }
        var generator = SeededGenerator(seed: 2)
        generator.shuffle(&fitting)
        let rows = corpus.dataset(Array(fitting.prefix(batch)), as: Float.self)
        func cut(_ full: Tensor<Float>) throws -> Tensor<Float> {
            try Tensor(shape: [batch, time], scalars: (0..<batch).flatMap { full.scalars[$0 * full.columns..<$0 * full.columns + time] })
        }
        return (network, try cut(rows.features), try cut(rows.targets))
    }

    /// Floating-point operations in one step: each product `2·positions·in·out` (positions =
    /// batch·time) — the GRU's input and hidden projections forward, their weight gradients, the
    /// gradient carried to the previous state and the input gradient; the dense layer's forward,
    /// weight and input gradients. The embedding is a lookup, and its input gets no gradient.
    var flops: Double {
        let positions = Double(batch * time), gates = Double(3 * hidden)
        let inputSide = 2 * positions * gates * Double(features), hiddenSide = 2 * positions * gates * Double(hidden)
        return 3 * inputSide + 3 * hiddenSide + 3 * (2 * positions * Double(hidden) * Double(vocabulary))
    }

    /// The losses before each of `steps` SGD steps, through the engine.
    func engineLosses(steps: Int) throws -> [Double] {
        var (network, x, t) = try make()
        var sgd = try SGD<Float>(learningRate: learningRate)
        return try (0..<steps).map { _ in Double(try network.trainStep(x, targets: t, optimizer: &sgd)) }
    }

    /// The same from the naive loops: each layer's forward and backward from its definition, the
    /// loss and its gradient `(p − onehot(t)) / counted` at the counted positions, the update.
    func naiveLosses(steps: Int) throws -> [Double] {
        let (network, x, t) = try make()
        let positions = batch * time
        var p = network.parameterTensors.map { network.parameter($0) }  // embedding; GRU's five; dense's two
        var losses: [Double] = []
        for _ in 0..<steps {
            // x: (batch, time)  e: (batch, time·features)  h: (batch, time·hidden)  z, probabilities: (batch·time, vocabulary)
            let e = try Naive.embeddingForward(x, weight: p[0]).reshaped(to: [batch, time * features])
            let h = Naive.gruForward(e, weightIH: p[1], weightHH: p[2], biasIH: p[3], biasHH: p[4], initialState: p[5])
            let states = try h.reshaped(to: [positions, hidden])
            let z = Naive.denseForward(states, weight: p[6], bias: p[7], activation: .identity).output
            let probabilities = Naive.softmax(z)
            losses.append(Double(Naive.loss(.sequenceCrossEntropy, output: probabilities, targets: t)))
            let counted = t.scalars.filter { $0 >= 0 }.count
            var dz = Tensor<Float>(zeros: [positions, vocabulary])
            for position in 0..<positions where t[position] >= 0 {
                for v in 0..<vocabulary {
                    dz[position, v] = (probabilities[position, v] - (v == Int(t[position]) ? 1 : 0)) / Float(counted)
                }
            }
            let dense = Naive.denseBackward(states, weight: p[6], preActivation: z, outputGradient: dz, activation: .identity)
            let gru = Naive.gruBackward(
                e, weightIH: p[1], weightHH: p[2], biasIH: p[3], biasHH: p[4], initialState: p[5],
                outputGradient: try dense.input.reshaped(to: [batch, time * hidden]))
            let embedding = Naive.embeddingBackward(
                x, outputGradient: try gru.input.reshaped(to: [positions, features]), vocabulary: vocabulary)
            let gradients = [
                embedding, gru.weightIH, gru.weightHH, gru.biasIH, gru.biasHH, gru.initialState, dense.weight, dense.bias,
            ]
            for (k, g) in gradients.enumerated() {
                for i in 0..<g.count { p[k][i] -= learningRate * g[i] }
            }
        }
        return losses
    }

    /// Writes W8's exchange file for the peers (Benchmarks/peers/README.md, "W8"): the tokens `x`
    /// and targets `t` as F32 `(batch, time)` (−1: padding), and the parameters under our names in
    /// PyTorch's layouts (as our checkpoints store them), with the learning rate and the number of
    /// check steps.
    func writeExchangeFile(to directory: String, checkSteps: Int) throws -> String {
        let (network, x, t) = try make()
        return try writePeerExchange(id, network: network, x: x, targets: t, learningRate: learningRate, checkSteps: checkSteps, to: directory)
    }

    /// Per-step seconds and heap allocations per step after the first.
    func time(blocks: Int) throws -> (seconds: [Double], allocationsPerStep: Double) {
        let (network, x, t) = try make()
        return try withRunThreads { try timeSGDSteps(network, x: x, targets: t, learningRate: learningRate, blocks: blocks) }
    }

    /// Where a step goes beyond the layers' passes, median seconds of each: the loss head (the
    /// softmax at every position, then the loss and its gradient, the network's two kernel calls
    /// on the step's logits and targets) and SGD's update of every parameter.
    func stepParts(blocks: Int) throws -> (lossHead: Double, update: Double) {
        var (network, x, t) = try make()
        var sgd = try SGD<Float>(learningRate: learningRate)
        try network.lossAndGradients(x, targets: t)
        let z = network.layers[network.layers.count - 1].output
        var p = z, g = z
        let lossHead = Timing(
            measureSteps(blocks: blocks) {
                p.withUnsafeMutableBufferPointer { p in
                    z.withUnsafeBufferPointer { z in _ = p.update(fromContentsOf: z) }
                    Kernels.softmaxRows(p, columns: vocabulary)
                }
                _ = z.withUnsafeBufferPointer { z in
                    p.withUnsafeBufferPointer { p in
                        t.withUnsafeBufferPointer { t in
                            g.withUnsafeMutableBufferPointer { g in
                                Kernels.sequenceCrossEntropy(logits: z, probabilities: p, targets: t, columns: vocabulary, gradient: g)
                            }
                        }
                    }
                }
            })
        let gradients = network.gradients
        let update = Timing(measureSteps(blocks: blocks) { sgd.update(parameters: &network.parameters, gradients: gradients) })
        return (lossHead.median, update.median)
    }
}

extension Report {
    /// W8's figures.
    struct Recurrent: Encodable {
        var title: String
        var flops: Double
        var checkLosses: [Double]
        var naiveLosses: [Double]
        /// Our per-step seconds, block by block, round after round.
        var seconds: [Double]
        var timing: Timing
        /// The step on the whole batch (one thread per product), when the timed step split it.
        var wholeBatchTiming: Timing?
        var gflops: Double
        var ceilingPercent: Double?
        var allocationsPerStep: Double
        var layers: [LayerTime]
        /// Median seconds of the loss head (softmax, loss and gradient) and of SGD's update.
        var lossHead: Double
        var update: Double
        var peers: [String: PeerTiming] = [:]
    }
}

extension Benchmarks {
    /// W8: the engine's losses of its first three steps checked against the naive loops, then
    /// timed with its per-layer split; with `--peers`, PyTorch (eager and compiled) and JAX on the
    /// same weights and batch, each checked to agree on the losses of the first steps before it is
    /// timed, in interleaved rounds.
    func recurrent(ceiling: Double?) throws -> Report.Recurrent {
        // Each step's batch split over the threads, as F3's config does: the GRU's recurrence is
        // a chain of small products (32×64·64×192) and cells, too small to cut, that each share runs on
        // its own rows. The whole batch (one thread per product) is timed too, for comparison.
        let w = RecurrentWorkload().split(over: threads), whole = RecurrentWorkload()
        let checkSteps = 3
        let checkLosses = try w.engineLosses(steps: checkSteps), naive = try w.naiveLosses(steps: checkSteps)
        // 1e-5: the same sums in other orders, and our vectorized tanh against the C library's, in Float.
        guard agree(checkLosses, naive, tolerance: 1e-5) else {
            throw ValidationError("W8 check failed: engine losses \(checkLosses) vs naive \(naive)")
        }
        let specs = PeerSpec.recurrent
        var measured = try againstPeers(
            w.id, specs: specs, checkLosses: checkLosses, tolerance: 1e-5, peerSteps: quick ? 30 : 300,
            writeFile: { try w.writeExchangeFile(to: $0, checkSteps: checkSteps) }, time: { try w.time(blocks: quick ? 5 : 30) })
        let timing = Timing(measured.seconds)
        let gflops = w.flops / timing.median / 1e9
        let wholeTiming = w.batchThreads > 1 ? Timing(try whole.time(blocks: quick ? 5 : 30).seconds) : nil
        // The parts on the whole batch (a split step runs them on its shares, side by side).
        var (network, x, t) = try whole.make()
        let layers = try layerTimes(&network, x: x, targets: t, repeats: quick ? 5 : 50)
        let parts = try whole.stepParts(blocks: quick ? 5 : 15)
        let losses = checkLosses.map { String(format: "%.6f", $0) }.joined(separator: ", ")
        print("W8: \(w.title), float32 (checked: losses \(losses) = naive within 1e-5)")
        print(
            stepTable(
                timing: timing, allocations: measured.allocationsPerStep, flops: w.flops, ceiling: ceiling, specs: specs,
                peers: &measured.peers))
        if let wholeTiming { print(wholeBatchLine(wholeTiming, split: timing, threads: threads)) }
        print("  by part (median forward / backward; the whole batch, unsplit):")
        let parted = layers.reduce(0) { $0 + $1.forward + $1.backward } + parts.lossHead + parts.update
        let step = wholeTiming?.median ?? timing.median
        print(
            table(
                layers.map { [$0.layer, format($0.forward), format($0.backward)] } + [
                    ["loss head (softmax, loss, gradient)", format(parts.lossHead), ""],
                    ["SGD update", format(parts.update), ""],
                    [
                        step >= parted
                            ? "the whole step less these parts"
                            : "the whole step less these parts (below 0: the parts timed alone take longer than in the step)",
                        format(step - parted), "",
                    ],
                ]))
        print()
        return Report.Recurrent(
            title: w.title, flops: w.flops, checkLosses: checkLosses, naiveLosses: naive, seconds: measured.seconds, timing: timing,
            wholeBatchTiming: wholeTiming, gflops: gflops,
            ceilingPercent: ceiling.map { gflops / $0 * 100 }, allocationsPerStep: measured.allocationsPerStep, layers: layers,
            lossHead: parts.lossHead, update: parts.update, peers: measured.peers)
    }
}
