// W9–W12: one AdamW training step of a GPT (token and position embeddings, blocks of LayerNorm →
// causal self-attention and LayerNorm → GELU MLP, each a residual, a final LayerNorm and a head),
// built from NeuronCore's layers; the first loss checked against the naive loops, then timed, its
// allocations counted at one BLAS thread, its peak resident memory read and its time split by
// layer, and with --peers against PyTorch (eager and compiled) and JAX on the same weights and batch.
import AllocationCounter
import ArgumentParser
import Foundation
import NeuronCore
import NeuronTraining

/// A GPT's training step at one size: `blocks` blocks of `heads` heads over `features`, an MLP
/// of `4·features`, `time` positions, `batch` rows drawn from `source`, sequence cross-entropy over
/// `vocabulary` tokens (the boundary and the text's characters), AdamW (every parameter decayed,
/// as the shipped `Data/words-transformer.yaml` decays them), in Float.
struct TransformerWorkload: BatchSplitting {
    /// Where a batch's rows come from.
    enum Source {
        /// `Data/words-small.txt`'s words packed whole into each row, padding after (W9, W10).
        case packedWords
        /// Windows of `time + 1` consecutive characters of `Data/tinyshakespeare.txt` at random
        /// starts, as nanoGPT's `shakespeare_char` draws them: no padding (W11, W12).
        case documentWindows

        /// The text, relative to the package.
        var path: String {
            switch self {
            case .packedWords: "Data/words-small.txt"
            case .documentWindows: "Data/tinyshakespeare.txt"
            }
        }

        /// How a title names the rows.
        var rows: String {
            switch self {
            case .packedWords: "rows of packed words"
            case .documentWindows: "windows of Shakespeare"
            }
        }
    }

    var id: String
    var blocks: Int
    var heads: Int
    var features: Int
    var time: Int
    /// The best peer's time over ours at least this (issue 25's for W9 and W10).
    var target: Double
    var batch = 32
    var source = Source.packedWords
    /// The boundary and the text's characters: the text is checked to give exactly these.
    var vocabulary = 27
    /// The rows whose first loss the naive loops check: past W9's size the whole batch would take
    /// them minutes (one W12 row: about 2.7 billion multiply-adds).
    var naiveRows = 2
    /// Split as the shipped config's `training.batchThreads` splits it, when asked.
    var batchThreads = 1
    let learningRate: Float = 5e-4
    let weightDecay: Float = 0.01

    /// The shipped transformer's size (`Data/words-transformer.yaml` at block 16).
    static let w9 = TransformerWorkload(id: "W9", blocks: 4, heads: 4, features: 64, time: 16, target: 2, naiveRows: 32)
    /// A size where the products dominate.
    static let w10 = TransformerWorkload(id: "W10", blocks: 6, heads: 6, features: 192, time: 64, target: 1.2)
    /// nanoGPT's `shakespeare_char` as its README trains it on a CPU (block 64, batch 12, 4 layers, 4 heads, 128 features).
    static let w11 = TransformerWorkload(
        id: "W11", blocks: 4, heads: 4, features: 128, time: 64, target: 2, batch: 12, source: .documentWindows, vocabulary: 66)
    /// nanoGPT's `shakespeare_char` at its full size (block 256, 6 layers, 6 heads, 384 features, dropout 0)
    /// at batch 8 (nanoGPT trains it at 64): 10.8M parameters.
    static let w12 = TransformerWorkload(
        id: "W12", blocks: 6, heads: 6, features: 384, time: 256, target: 1.3, batch: 8, source: .documentWindows, vocabulary: 66,
        naiveRows: 1)

    var title: String {
        "GPT: \(blocks) blocks, \(heads) heads, \(features) features, MLP \(4 * features), vocabulary \(vocabulary); batch \(batch)\(splitDescription), time \(time), \(source.rows); AdamW"
    }

    /// Embedding → PositionEmbedding → `blocks` × (Residual[LayerNorm, attention], Residual[LayerNorm,
    /// Dense(4·features), GELU (erf), Dense(features)]) → LayerNorm → Dense(vocabulary), every
    /// dense layer at every position.
    func layers() throws -> [any Layer<Float>] {
        let sequence = [time, features]
        var layers: [any Layer<Float>] = [
            try Embedding<Float>(vocabulary: vocabulary, features: features, time: time),
            try PositionEmbedding<Float>(time: time, features: features),
        ]
        for _ in 0..<blocks {
            layers.append(
                try Residual<Float>([
                    try LayerNorm<Float>(shape: sequence), try CausalSelfAttention<Float>(time: time, features: features, heads: heads),
                ]))
            layers.append(
                try Residual<Float>([
                    try LayerNorm<Float>(shape: sequence), try Dense<Float>(features, 4 * features, activation: .identity, time: time),
                    try GELU<Float>(shape: [time, 4 * features]), try Dense<Float>(4 * features, features, activation: .identity, time: time),
                ]))
        }
        layers.append(try LayerNorm<Float>(shape: sequence))
        layers.append(try Dense<Float>(features, vocabulary, activation: .identity, time: time))
        return layers
    }

    /// The optimizer of every engine: PyTorch's `AdamW(lr, weight_decay)` with its default betas and epsilon.
    func optimizer() throws -> Adam<Float> {
        try Adam<Float>(learningRate: learningRate, weightDecay: weightDecay, decoupled: true)
    }

    /// The network (seed 1: the layers' own initializations) and the batch ``draw()`` draws.
    func make() throws -> (network: Network<Float>, x: Tensor<Float>, t: Tensor<Float>) {
        var network = try Network<Float>(try layers(), loss: .sequenceCrossEntropy)
        network.initialize(seed: 1)
        network.batchThreads = batchThreads
        let (x, t) = try draw()
        return (network, x, t)
    }

    /// The batch, features and targets `(batch, time)` each, from `source` with seed 2.
    func draw() throws -> (x: Tensor<Float>, t: Tensor<Float>) {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../\(source.path)").standardized.path
        let (x, t) =
            switch source {
            case .packedWords: try packedWords(path)
            case .documentWindows: try documentWindows(path)
            }
        return (try Tensor(shape: [batch, time], scalars: x), try Tensor(shape: [batch, time], scalars: t))
    }

    /// `batch` rows of words drawn from the shuffled lines of the file at `path` and packed one
    /// after another as a text run reads a word — features `⏎ w1 ⏎ w2 …`, targets `w1 ⏎ w2 ⏎ …` —
    /// as many whole words as fit in `time` positions, the rest padding (features 0, targets −1).
    private func packedWords(_ path: String) throws -> (x: [Float], t: [Float]) {
        let corpus = try TextCorpus.load(path, maximumBytes: 1 << 20)
        guard corpus.vocabulary.count == vocabulary else {
            throw ValidationError("\(source.path) has \(corpus.vocabulary.count) tokens; \(id) is built for \(vocabulary)")
        }
        var words = corpus.lines.filter { $0.unicodeScalars.count < time }
        var generator = SeededGenerator(seed: 2)
        generator.shuffle(&words)
        var x = [Float](repeating: 0, count: batch * time), t = [Float](repeating: -1, count: batch * time)
        var next = 0
        for row in 0..<batch {
            // The row's tokens ⏎ w1 ⏎ w2 … ⏎: features all but the last, targets all but the first.
            var tokens = [Vocabulary.boundary]
            while next < words.count, tokens.count + words[next].unicodeScalars.count + 1 <= time + 1 {
                tokens += words[next].unicodeScalars.map { corpus.vocabulary.index(of: $0)! } + [Vocabulary.boundary]
                next += 1
            }
            guard tokens.count > 1 else { throw ValidationError("\(source.path) has too few words for \(batch) rows") }
            for position in 0..<tokens.count - 1 {
                x[row * time + position] = Float(tokens[position])
                t[row * time + position] = Float(tokens[position + 1])
            }
        }
        return (x, t)
    }

    /// `batch` windows of `time + 1` consecutive characters of the file at `path`, read whole as
    /// one sequence, at starts drawn uniformly below `count − time` as nanoGPT's `get_batch` draws
    /// them: features a window's first `time` characters, targets its last `time`. A character's
    /// token is 1 + its rank among the file's distinct characters (Python's `[""] +
    /// sorted(set(text))`: the boundary, token 0, never appears).
    ///
    ///     // x[row, p] = c[start + p]   t[row, p] = c[start + p + 1]   p < time
    private func documentWindows(_ path: String) throws -> (x: [Float], t: [Float]) {
        let characters = Array(try String(contentsOfFile: path, encoding: .utf8).unicodeScalars)
        let tokens = Vocabulary(characters: characters)
        guard tokens.count == vocabulary else {
            throw ValidationError("\(source.path) has \(tokens.count) tokens; \(id) is built for \(vocabulary)")
        }
        guard characters.count > time else {
            throw ValidationError("\(source.path) has \(characters.count) characters: too few for windows of \(time + 1)")
        }
        var x = [Float](repeating: 0, count: batch * time), t = x
        var generator = SeededGenerator(seed: 2)
        for row in 0..<batch {
            let start = generator.index(below: characters.count - time)
            for position in 0..<time {
                x[row * time + position] = Float(tokens.index(of: characters[start + position])!)
                t[row * time + position] = Float(tokens.index(of: characters[start + position + 1])!)
            }
        }
        return (x, t)
    }

    /// Floating-point operations in one step, counting `2·m·n·k` per product: per block the query,
    /// key and value projections `2·P·F·3F`, the output projection `2·P·F·F`, the MLP's two
    /// `2·P·F·4F`, the scores and the weighted sums `2·B·T²·F` each (the full `(time, time)`
    /// products BLAS computes, of which the mask discards nearly half); the head `2·P·F·V`
    /// (P = batch·time positions). Backward computes each product's weight and input gradients,
    /// twice the forward's; the embeddings are lookups.
    var flops: Double {
        let (b, t, f, v) = (Double(batch), Double(time), Double(features), Double(vocabulary))
        let p = b * t
        let block = 2 * p * f * (3 * f + f + 8 * f) + 4 * b * t * t * f
        return 3 * (Double(blocks) * block + 2 * p * f * v)
    }

    /// The losses before each of `steps` AdamW steps, through the engine.
    func engineLosses(steps: Int) throws -> [Double] {
        var (network, x, t) = try make()
        var adam = try optimizer()
        return try (0..<steps).map { _ in Double(try network.trainStep(x, targets: t, optimizer: &adam)) }
    }

    /// The engine's loss on the first `rows` rows before any step, and the same from the naive
    /// loops: each layer's forward pass from its definition, then the softmax and the loss at
    /// the counted positions.
    func firstLoss(rows: Int) throws -> (engine: Double, naive: Double) {
        var (network, x, t) = try make()
        let part = rows * time
        let xs = try Tensor<Float>(shape: [rows, time], scalars: Array(x.scalars[..<part]))
        let ts = try Tensor<Float>(shape: [rows, time], scalars: Array(t.scalars[..<part]))
        let engine = Double(try network.loss(xs, targets: ts, mode: .training))
        var tensors: [String: Tensor<Float>] = [:]
        for p in network.parameterTensors { tensors[p.name] = network.parameter(p) }

        // h: (rows, time, features), then (rows, time, vocabulary) after the head
        func apply(_ layer: any Layer<Float>, _ h: Tensor<Float>, _ name: String) throws -> Tensor<Float> {
            let positions = rows * time
            func p(_ tensor: String) -> Tensor<Float> { tensors["\(name).\(tensor)"]! }
            switch layer {
            case is Embedding<Float>:
                return try Naive.embeddingForward(h, weight: p("weight")).reshaped(to: [rows, time, features])
            case is PositionEmbedding<Float>:
                return Naive.positionEmbeddingForward(h, weight: p("weight"))
            case let norm as LayerNorm<Float>:
                return Naive.layerNormForward(h, weight: p("weight"), bias: p("bias"), epsilon: norm.epsilon)
            case let attention as CausalSelfAttention<Float>:
                return Naive.causalSelfAttentionForward(
                    h, attentionWeight: p("c_attn.weight"), attentionBias: p("c_attn.bias"), projectionWeight: p("c_proj.weight"),
                    projectionBias: p("c_proj.bias"), heads: attention.heads
                ).output
            case let dense as Dense<Float>:
                let flat = try h.reshaped(to: [positions, dense.inputs])
                return try Naive.denseForward(flat, weight: p("weight"), bias: p("bias"), activation: dense.activation).output
                    .reshaped(to: [rows, time, dense.outputs])
            case let gelu as GELU<Float>:
                return Naive.geluForward(h, approximation: gelu.approximation)
            case let residual as Residual<Float>:
                var f = h
                for (j, inner) in residual.body.layers.enumerated() { f = try apply(inner, f, "\(name).body.\(j)") }
                var y = h
                for i in 0..<y.count { y[i] += f[i] }
                return y
            default:
                throw ValidationError("\(id): no naive forward for \(layer.description)")
            }
        }
        var h = xs
        for (i, layer) in network.layers.enumerated() { h = try apply(layer, h, "layers.\(i)") }
        let probabilities = Naive.softmax(try h.reshaped(to: [rows * time, vocabulary]))
        return (engine, Double(Naive.loss(.sequenceCrossEntropy, output: probabilities, targets: ts)))
    }

    /// Writes the exchange file for the peers (Benchmarks/peers/README.md, "W9–W12"): `x` and
    /// `t` as F32 `(batch, time)` (−1: padding), the parameters under our names in PyTorch's
    /// layouts, and the heads, AdamW's hyperparameters and the number of check steps.
    func writeExchangeFile(to directory: String, checkSteps: Int) throws -> String {
        let (network, x, t) = try make()
        let adam = try optimizer()
        return try writePeerExchange(
            id, network: network, x: x, targets: t, learningRate: learningRate, checkSteps: checkSteps, to: directory,
            metadata: [
                "heads": "\(heads)", "optimizer": "adamw", "weightDecay": "\(weightDecay)", "beta1": "\(adam.beta1)",
                "beta2": "\(adam.beta2)", "epsilon": "\(adam.epsilon)",
            ])
    }

    /// Seconds of `blocks` single steps at the run's thread count, and heap allocations per step
    /// over `counted` steps at one BLAS thread (OpenBLAS's threaded gemm allocates a job buffer per
    /// product; the engine's own target is 0).
    func time(blocks: Int, counted: Int = 5) throws -> (seconds: [Double], allocationsPerStep: Double) {
        let (network, x, t) = try make()
        // Each step timed alone, as the peers time theirs: on a shared machine a block of many
        // steps takes in every preemption, where the median of single steps passes over them.
        let seconds = try withRunThreads {
            try timeSteps(network, x: x, targets: t, optimizer: try optimizer(), blocks: blocks, blockTarget: .zero).seconds
        }
        let threads = BLAS.threadCount
        BLAS.threadCount = 1
        defer { BLAS.threadCount = threads }
        let allocations = try timeSteps(network, x: x, targets: t, optimizer: try optimizer(), blocks: 1, counted: counted).allocationsPerStep
        return (seconds, allocations)
    }

    /// The process's resident memory before the network and batch are made and at its peak over
    /// `steps` steps at the run's thread count: what a training run of this size holds (parameters,
    /// gradients, AdamW's moments, every layer's buffers, each share's when the batch is split).
    /// Measured apart from ``time(blocks:counted:)``, whose harness keeps a copy of the parameters.
    func peakMemory(steps: Int = 2) throws -> PeakMemory? {
        try PeakMemory.during {
            var (network, x, t) = try make()
            var adam = try optimizer()
            try withRunThreads {
                for _ in 0..<steps { try network.trainStep(x, targets: t, optimizer: &adam) }
            }
        }.memory
    }

    /// Median seconds of AdamW's update of every parameter.
    func updateTime(blocks: Int) throws -> Double {
        var (network, x, t) = try make()
        var adam = try optimizer()
        try network.lossAndGradients(x, targets: t)
        let gradients = network.gradients
        return Timing(measureSteps(blocks: blocks) { adam.update(parameters: &network.parameters, gradients: gradients) }).median
    }
}

extension Report {
    /// W9–W12's figures.
    struct Transformer: Encodable {
        var id: String
        var title: String
        var flops: Double
        var checkLosses: [Double]
        /// The first step's loss through the engine and through the naive loops, on `naiveRows` rows.
        var firstLoss: Double
        var naiveFirstLoss: Double
        var naiveRows: Int
        /// Our per-step seconds, block by block, round after round.
        var seconds: [Double]
        var timing: Timing
        var gflops: Double
        var ceilingPercent: Double?
        /// At one BLAS thread.
        var allocationsPerStep: Double
        var layers: [LayerTime]
        /// Median seconds of AdamW's update.
        var update: Double
        /// The process's resident memory before the network was made and at its peak over two steps.
        var memory: PeakMemory?
        /// The best peer's time over ours that the workload aims at, and whether this run met it.
        var target: Double
        var targetMet: Bool?
        var peers: [String: PeerTiming] = [:]
    }
}

extension Benchmarks {
    /// W9–W12: the engine's first loss checked against the naive loops, then timed with its
    /// per-layer split and its peak memory; with `--peers`, PyTorch (eager and compiled) and JAX on
    /// the same weights and batch, each checked to agree on the losses of the first steps before it
    /// is timed, in interleaved rounds.
    func transformer(_ w: TransformerWorkload, ceiling: Double?) throws -> Report.Transformer {
        let checkSteps = 3
        let memory = try w.peakMemory()
        let first = try w.firstLoss(rows: w.naiveRows)
        // 1e-5: the same sums in other orders, in Float, through 2·blocks + 3 normalizations.
        guard agree([first.engine], [first.naive], tolerance: 1e-5) else {
            throw ValidationError("\(w.id) check failed: engine loss \(first.engine) vs naive \(first.naive) on \(w.naiveRows) rows")
        }
        let checkLosses = try w.engineLosses(steps: checkSteps)
        // Steps per round: W12's step takes seconds, so 6 a round (18 in three rounds) for each engine.
        let (steps, counted, repeats) = w.flops > 5e10 ? (6, 2, 3) : w.flops > 5e9 ? (12, 5, 5) : (200, 5, 30)
        let specs = PeerSpec.transformer
        // 2e-5: AdamW moves each parameter by about lr·sign(g) on the first step, so a gradient near
        // 0 computed in another order moves its parameter by a different amount.
        var measured = try againstPeers(
            w.id, specs: specs, checkLosses: checkLosses, tolerance: 2e-5, peerSteps: quick ? 5 : steps,
            writeFile: { try w.writeExchangeFile(to: $0, checkSteps: checkSteps) },
            time: { try w.time(blocks: quick ? 3 : steps, counted: counted) })
        let timing = Timing(measured.seconds)
        let gflops = w.flops / timing.median / 1e9
        // The parts of the whole batch on BLAS's threads (a split step runs them on half batches, side by side).
        var (network, x, t) = try w.make()
        network.batchThreads = 1
        let layers = try layerTimes(&network, x: x, targets: t, repeats: quick ? 3 : repeats)
        let update = try w.updateTime(blocks: quick ? 3 : 15)
        let losses = checkLosses.map { String(format: "%.6f", $0) }.joined(separator: ", ")
        print(
            "\(w.id): \(w.title), float32 (checked: first loss \(String(format: "%.6f", first.engine)) = naive within 1e-5 on \(w.naiveRows) rows; losses \(losses))"
        )
        print(
            stepTable(
                timing: timing, allocations: measured.allocationsPerStep, flops: w.flops, ceiling: ceiling, specs: specs,
                peers: &measured.peers))
        print(String(format: "  %.1f MFLOP a step; allocations per step counted at one BLAS thread", w.flops / 1e6))
        let gaps = measured.peers.values.compactMap(\.checkLosses).flatMap { zip($0, checkLosses).map { abs($0 - $1) / abs($1) } }
        if let worst = gaps.max() { print(String(format: "  the peers' check losses within %.1e relative of ours", worst)) }
        let timed = specs.compactMap { spec in measured.peers[spec.name]?.ratio.map { (spec.column, $0) } }
        let best = timed.min(by: { $0.1 < $1.1 })
        if let best {
            print(
                String(
                    format: "  best peer / Neuron: %.2f× (%@); target ≥ %.1f×: %@", best.1, best.0, w.target,
                    best.1 >= w.target ? "met" : "not met"))
        }
        print("  " + memoryLine(memory, peers: measured.peers, specs: specs))
        print("  by part (median forward / backward; the whole batch on BLAS's threads, unsplit):")
        let parted = layers.reduce(0) { $0 + $1.forward + $1.backward } + update
        func share(_ seconds: Double) -> String { String(format: "%.1f%%", seconds / parted * 100) }
        print(
            table(
                [["", "forward", "backward", "of the parts"]]
                    + layers.map { [String($0.layer.prefix(90)), format($0.forward), format($0.backward), share($0.forward + $0.backward)] } + [
                        ["AdamW update", format(update), "", share(update)],
                        w.batchThreads > 1
                            ? ["the parts' sum (the step splits its batch, so it is not the step's)", format(parted), "", ""]
                            : [
                                "the step less these parts (loss head, zeroing, the fold)",
                                timing.median > parted
                                    ? format(timing.median - parted) : "< 0: the parts, timed alone, sum past the step (noise)", "", "",
                            ],
                    ]))
        print()
        return Report.Transformer(
            id: w.id, title: w.title, flops: w.flops, checkLosses: checkLosses, firstLoss: first.engine, naiveFirstLoss: first.naive,
            naiveRows: w.naiveRows, seconds: measured.seconds, timing: timing, gflops: gflops, ceilingPercent: ceiling.map { gflops / $0 * 100 },
            allocationsPerStep: measured.allocationsPerStep, layers: layers, update: update, memory: memory, target: w.target,
            targetMet: best.map { $0.1 >= w.target }, peers: measured.peers)
    }

    /// `peak resident memory: Neuron 412.3 MiB (38.1 MiB before the network was made), PyTorch …`:
    /// ours over two steps, each timed peer's over its timing run (after its libraries loaded).
    func memoryLine(_ memory: PeakMemory?, peers: [String: Report.PeerTiming], specs: [PeerSpec]) -> String {
        var parts = [
            memory.map {
                "Neuron \(PeakMemory.format($0.peak)) (\(PeakMemory.format($0.before)) before the network was made\($0.reset ? "" : "; the process's peak so far"))"
            } ?? "Neuron unknown (no /proc/self/status)"
        ]
        for spec in specs {
            guard let peer = peers[spec.name], let peak = peer.peakRSS else { continue }
            parts.append("\(spec.column) \(PeakMemory.format(peak))" + (peer.rssBefore.map { " (\(PeakMemory.format($0)) before its model)" } ?? ""))
        }
        return "peak resident memory: " + parts.joined(separator: ", ")
    }

    /// The GPT workloads side by side: ours, each peer, the best peer's time over ours and the target.
    func transformerSummary(_ reports: [Report.Transformer]) -> String {
        let specs = PeerSpec.transformer
        var rows = [["", "Neuron"] + specs.map(\.column) + ["best peer / Neuron", "target", "peak memory, Neuron"]]
        for r in reports {
            let peers = specs.map { spec in r.peers[spec.name]?.timing.map { format($0.median) } ?? "–" }
            let best = specs.compactMap { spec in r.peers[spec.name]?.ratio.map { (spec.column, $0) } }.min { $0.1 < $1.1 }
            rows.append(
                [r.id, format(r.timing.median)] + peers + [
                    best.map { String(format: "%.2f× (%@)", $0.1, $0.0) } ?? "–",
                    String(format: "≥ %.1f×: ", r.target) + (r.targetMet.map { $0 ? "met" : "not met" } ?? "no peer timed"),
                    r.memory.map { PeakMemory.format($0.peak) } ?? "–",
                ])
        }
        return "GPT steps (medians; best peer / Neuron > 1 means Neuron is faster)\n" + table(rows)
    }
}
