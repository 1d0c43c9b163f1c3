// F5: nanoGPT's Shakespeare character recipe for CPUs, as the shipped Data/shakespeare-char.yaml
// gives it, trained until its exact validation loss reaches a target, training time only; then
// PyTorch on the same windows in the same order from the same initial weights
// (Benchmarks/peers/torch_shakespeare_gpt.py).
import ArgumentParser
import Foundation
import NeuronCore
import NeuronTraining

extension Report {
    /// F5's figures: each evaluation interval's exact validation loss, and the training time until
    /// the first that reached the target.
    struct Shakespeare: Encodable {
        var config: String
        /// The network and its optimizer, as they describe themselves.
        var network: String
        var optimizer: String
        var target: Double
        var steps: Int
        var evaluateEvery: Int
        var batchSize: Int
        var blockSize: Int
        /// The process's BLAS threads during the steps, and the threads each step split its batch over.
        var blasThreads: Int
        var batchThreads: Int
        /// Training seconds to the first interval at or below the target; of every interval trained when none was.
        var neuronSeconds: Double
        var neuronReached: Bool
        /// Evaluation intervals trained.
        var neuronEpochs: Int
        /// The losses of the first steps, which the peer's must match.
        var neuronCheckLosses: [Double]
        /// After each interval: its exact validation loss, the mean of its batch losses and the training seconds so far.
        var neuronValidationLosses: [Double] = []
        var neuronTrainingLosses: [Double] = []
        var neuronSecondsAfter: [Double] = []
        /// By the peer's name (`torch`).
        var peers: [String: ShakespearePeer] = [:]
    }
    struct ShakespearePeer: Encodable {
        var version: String
        var threads: Int
        var seconds: Double?
        var reached: Bool?
        var epochs: Int?
        var checkLosses: [Double]?
        var validationLosses: [Double]?
        var trainingLosses: [Double]?
        /// The training seconds at each interval's end.
        var secondsAfter: [Double]?
        /// The peer's seconds over Neuron's, both having reached the target: above 1, Neuron is faster.
        var ratio: Double?
        /// The same over the intervals both trained (the same steps on the same windows), whether
        /// or not either reached the target; and how many intervals that is.
        var sameStepsRatio: Double?
        var sameStepsIntervals: Int?
    }
}

/// What F5's peer trains on besides the initial weights (Benchmarks/peers/README.md, "F5"): the
/// text file and what the run read of it, for the peer to check its own reading against (its
/// length, the vocabulary with `""` for token 0, the training and validation parts as `[start,
/// end)`), the learning rate of every step, and each evaluation interval's window starts in the
/// order the run draws them.
struct SharedWindows: Encodable {
    var text: String
    var characters: Int
    var vocabulary: [String]
    var training: [Int]
    var validation: [Int]
    var blockSize: Int
    var batchSize: Int
    var evaluateEvery: Int
    var learningRates: [Double]
    /// (intervals, evaluateEvery · batchSize)
    var starts: [[Int]]
}

extension Benchmarks {
    /// F5's config, relative to the package: whatever it says when F5 runs.
    static let shakespeareConfig = "Data/shakespeare-char.yaml"
    /// F5's target: the validation loss nanoGPT's README reports for this recipe on a CPU (1.88
    /// after 2,000 iterations of its `train_shakespeare_char` config at block 64, batch 12, 4
    /// layers of 4 heads over 128 features, dropout 0).
    static let shakespeareTarget = 1.88
    /// The steps whose losses the peer must match before it is timed.
    static let shakespeareCheckSteps = 3

    /// F5: the shipped Shakespeare config's run, built as `neuron train` builds it (its BLAS
    /// threads set as the run sets them), trained until its exact validation loss reaches
    /// ``shakespeareTarget``, timing the steps alone (each interval's validation pass is not
    /// timed); then, with `--peers`, PyTorch on the same windows in the same order from the same
    /// initial weights.
    func shakespeare() throws -> Report.Shakespeare {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../\(Self.shakespeareConfig)").standardized
            .path
        var config = try ConfigLoader.load(path)
        if products == .bf16 { config.training.products = .bf16 }
        guard config.data.unit == .document, config.training.precision == .float, config.optimizer.kind == .adam,
            let steps = config.training.steps, let block = config.data.blockSize
        else {
            throw ValidationError("F5 times a Float Adam run on a document, as nanoGPT's recipe is; \(path) asks otherwise")
        }
        progress("F5: building \(Self.shakespeareConfig)")
        // The run's threads, as `neuron train` sets them (RunLauncher.build), for the build and the steps.
        let batchThreads = config.training.batchThreads ?? 1
        let threads = BLAS.threadCount
        BLAS.threadCount = BLAS.threadCount(blasThreads: config.training.blasThreads, batchThreads: batchThreads)
        defer { BLAS.threadCount = threads }
        guard let built = try RunBuilder.build(config).engine as? NetworkTrainingEngine<Float, Adam<Float>>, let validation = built.validation,
            let tokens = built.training.document
        else { throw ValidationError("F5: \(path) did not build a Float Adam run on a document with a validation part") }
        // The text as the run read it: what the peer checks its own reading against.
        guard let document = try RunData<Float>(config.data, seed: config.training.seed).document,
            document.text.tokens.part(document.training) == tokens
        else { throw ValidationError("F5: \(path)'s text read again is not the run's") }

        let adam = built.training.optimizer
        let every = built.training.batchesPerEpoch
        let shared = SharedWindows(
            text: document.text.path, characters: document.text.count,
            vocabulary: [""] + document.text.vocabulary.characters.map { String(Character($0)) },
            training: [document.training.lowerBound, document.training.upperBound],
            validation: [document.validation.lowerBound, document.validation.upperBound], blockSize: block,
            batchSize: built.samplesPerStep, evaluateEvery: every,
            learningRates: (0..<built.totalSteps).map { config.optimizer.learningRate * adam.schedule.factor(at: $0) },
            starts: Self.windowStarts(built))
        let initial = initialEntries(built, pytorchLayouts: true)
        let network = built.network
        let decayed = network.parameterTensors.filter { tensor in
            switch adam.decay {
            case .all: true
            case .matrices(let ranges): ranges.contains { $0.contains(tensor.range.lowerBound) }
            }
        }.map(\.name)

        let target = Self.shakespeareTarget
        let result = try shakespeareRun(built, validation: validation, starts: shared.starts, target: target)
        let blasThreads = BLAS.threadCount
        let size = config.model.transformer.map { "\($0.blocks) blocks of \($0.heads) heads over \($0.features) features, " } ?? ""
        let split = batchThreads > 1 ? ", each batch split over \(batchThreads) threads" : ""
        print(
            String(
                format:
                    "F5 %@ (%@%d steps of %d windows of %d characters, validated every %d; %d BLAS thread%@%@) to exact validation loss %.2f: Neuron %@ (training time only; validation losses %@)",
                Self.shakespeareConfig, size, steps, shared.batchSize, block, every, blasThreads, blasThreads == 1 ? "" : "s", split, target,
                Self.reachedText(result.reached, seconds: result.seconds, intervals: result.validationLosses.count),
                result.validationLosses.map { String(format: "%.4f", $0) }.joined(separator: " ")))
        print("   \(network.parameterCount) parameters; \(adam)")
        var report = Report.Shakespeare(
            config: Self.shakespeareConfig, network: network.description, optimizer: "\(adam)", target: target, steps: steps,
            evaluateEvery: every, batchSize: shared.batchSize, blockSize: block, blasThreads: blasThreads, batchThreads: batchThreads,
            neuronSeconds: result.seconds, neuronReached: result.reached, neuronEpochs: result.validationLosses.count,
            neuronCheckLosses: result.firstLosses, neuronValidationLosses: result.validationLosses, neuronTrainingLosses: result.trainingLosses,
            neuronSecondsAfter: result.secondsAfter)
        if peers {
            // What the peer cannot do as the run does: dropout's masks, Adam's L2, a step schedule.
            let o = config.optimizer
            let unshared = [
                (config.model.transformer?.dropout ?? 0) > 0 ? "dropout (the masks are not shared)" : nil,
                o.weightDecay > 0 && !o.decoupled ? "Adam's L2 weight decay (the peer is AdamW)" : nil,
                o.schedule.kind == .step ? "a step schedule" : nil,
            ].compactMap { $0 }
            if unshared.isEmpty {
                let metadata = [
                    "heads": "\(config.model.transformer?.heads ?? 0)", "tieWeights": "\(config.model.transformer?.tieWeights ?? false)",
                    "learningRate": "\(o.learningRate)", "beta1": "\(o.beta1)", "beta2": "\(o.beta2)", "epsilon": "\(o.epsilon)",
                    "weightDecay": "\(o.weightDecay)", "decay": o.effectiveDecay.rawValue, "decayed": decayed.joined(separator: ","),
                    "schedule": o.schedule.kind.rawValue, "warmupSteps": "\(o.schedule.warmupSteps ?? 0)",
                    "minimumFactor": "\(o.schedule.minimumFactor ?? 0)", "totalSteps": "\(built.totalSteps)",
                    "clipGradientNorm": config.training.clipGradientNorm.map { "\($0)" } ?? "",
                    "checkLosses": result.firstLosses.map { "\($0)" }.joined(separator: ","),
                ]
                // The peer on the threads the run used: OpenBLAS's, or one per share of a split batch.
                try runShakespearePeer(
                    initial: initial, metadata: metadata, shared: shared, target: target, threads: batchThreads > 1 ? batchThreads : blasThreads,
                    into: &report)
            } else {
                print(
                    "   torch_shakespeare_gpt.py not run: the recipe has \(unshared.joined(separator: " and ")), which its PyTorch peer does not mirror"
                )
            }
        }
        print("")
        return report
    }

    /// `12.3 s in 8 intervals`, or `not reached (12.3 s over 8 intervals)`.
    static func reachedText(_ reached: Bool, seconds: Double, intervals: Int) -> String {
        reached ? "\(format(seconds)) in \(intervals) intervals" : "not reached (\(format(seconds)) over \(intervals) intervals)"
    }

    /// Each evaluation interval's window starts as a fresh document run will draw them: the run's
    /// own generator and batches replayed, `startEpoch` at each interval's start (`MiniBatches.draw`).
    static func windowStarts<O: Optimizer<Float>>(_ engine: NetworkTrainingEngine<Float, O>) -> [[Int]] {
        var position = engine.training.position
        return (0..<engine.totalEpochs).map { _ in
            position.batches.startEpoch(using: &position.generator)
            return position.batches.order
        }
    }

    /// Trains `built` without its validation pass or sampled passage until the exact validation
    /// loss, measured after each interval (untimed) as the run measures it (`Network.evaluate` on
    /// `validation`, the run's own windows), reaches `target`, timing the steps alone; checks
    /// (untimed) after each interval that it drew the starts given to the peer. Prints a line per
    /// interval to standard error, since a run takes minutes.
    func shakespeareRun(
        _ built: NetworkTrainingEngine<Float, Adam<Float>>, validation: Dataset<Float>, starts: [[Int]], target: Double
    ) throws -> ShakespeareResult {
        var run = try NetworkTrainingEngine(
            network: built.network, optimizer: built.training.optimizer, document: built.training.document!, windows: built.training.dataset,
            validation: nil, test: nil, epochs: built.totalEpochs, seed: built.seed ?? 0, position: built.training.position, records: [])
        run.maximumGradientNorm = built.maximumGradientNorm
        let clock = ContinuousClock()
        let checkSteps = Self.shakespeareCheckSteps
        var result = ShakespeareResult()
        while !run.isFinished {
            let epoch = run.epoch
            result.seconds +=
                clock.measure {
                    while run.epoch == epoch && !run.isFinished {
                        let loss = run.step()
                        if result.firstLosses.count < checkSteps { result.firstLosses.append(loss) }
                    }
                }.seconds
            guard run.training.position.batches.order == starts[epoch] else {
                throw ValidationError("F5: interval \(epoch + 1) drew other window starts than the ones given to the peer")
            }
            var network = run.network
            let loss = try network.evaluate(validation).loss  // untimed
            result.validationLosses.append(loss)
            result.trainingLosses.append(run.records.last?.trainingLoss ?? .nan)
            result.secondsAfter.append(result.seconds)
            progress(
                String(
                    format: "F5: interval %d of %d, %.1f s of training, training loss %.4f, validation %.4f", run.epoch, run.totalEpochs,
                    result.seconds, result.trainingLosses.last!, loss))
            if loss <= target {
                result.reached = true
                break
            }
        }
        return result
    }

    /// What ``shakespeareRun(_:validation:starts:target:)`` measured.
    struct ShakespeareResult {
        /// Training seconds to the first interval at or below the target, or of every interval trained.
        var seconds = 0.0
        var reached = false
        /// The losses of the first steps, before each one's update.
        var firstLosses: [Double] = []
        /// After each interval: its exact validation loss, the mean of its batch losses, the training seconds so far.
        var validationLosses: [Double] = []
        var trainingLosses: [Double] = []
        var secondsAfter: [Double] = []
    }

    /// Runs F5's PyTorch peer on `threads` threads with the initial weights and recipe (`initial`,
    /// `metadata`) and the windows (`shared`), written to the temporary directory and removed
    /// after; records its result in `report` and prints it against Neuron's. A peer that fails
    /// (its check included) is reported, not thrown.
    func runShakespearePeer(
        initial: [SafeTensors.Entry], metadata: [String: String], shared: SharedWindows, target: Double, threads: Int,
        into report: inout Report.Shakespeare
    ) throws {
        let directory = FileManager.default.temporaryDirectory
        let file = directory.appendingPathComponent("neuron-bench-F5.safetensors").path
        let windows = directory.appendingPathComponent("neuron-bench-F5-windows.json")
        defer {
            try? FileManager.default.removeItem(atPath: file)
            try? FileManager.default.removeItem(at: windows)
        }
        try SafeTensors.write(initial, metadata: metadata, to: file)
        try JSONEncoder().encode(shared).write(to: windows)
        let script = "torch_shakespeare_gpt.py"
        progress("F5: \(script) to \(target) on \(threads) threads (its result follows when it ends)")
        do {
            let peer = try Peers(threads: threads, autocast: products == .bf16).run(
                script, ["--init", file, "--windows", windows.path, "--target", "\(target)"])
            var result = Report.ShakespearePeer(
                version: peer.version, threads: peer.threads, seconds: peer.trainSeconds, reached: peer.reached, epochs: peer.epochs,
                checkLosses: peer.checkLosses, validationLosses: peer.validationLosses, trainingLosses: peer.trainingLosses,
                secondsAfter: peer.secondsAfter)
            if peer.reached == true, report.neuronReached, let seconds = peer.trainSeconds { result.ratio = seconds / report.neuronSeconds }
            let both = min(peer.secondsAfter?.count ?? 0, report.neuronSecondsAfter.count)
            if both > 0, let after = peer.secondsAfter {
                (result.sameStepsRatio, result.sameStepsIntervals) = (after[both - 1] / report.neuronSecondsAfter[both - 1], both)
            }
            report.peers[peer.peer] = result
            let gap = zip(peer.checkLosses ?? [], report.neuronCheckLosses).map { abs($0 - $1) / abs($1) }.max() ?? .nan
            print(
                String(
                    format: "   %@ %@ (%d threads): %@; %@/Neuron %@ (the issue's target: ≥ 2×); validation losses %@", peer.peer, peer.version,
                    peer.threads, Self.reachedText(peer.reached == true, seconds: peer.trainSeconds ?? .nan, intervals: peer.epochs ?? 0),
                    peer.peer, result.ratio.map { String(format: "%.2f×", $0) } ?? "–",
                    (peer.validationLosses ?? []).map { String(format: "%.4f", $0) }.joined(separator: " ")))
            print(
                String(
                    format: "   checked first: its losses before the first %d steps %@, within %.1e of ours (relative)",
                    report.neuronCheckLosses.count,
                    (peer.checkLosses ?? []).map { String(format: "%.6f", $0) }.joined(separator: " "), gap))
            if let ratio = result.sameStepsRatio, let intervals = result.sameStepsIntervals {
                print(
                    String(
                        format: "   the first %d intervals (the same %d steps on the same windows): %@ %@, Neuron %@; %@/Neuron %.2f×", intervals,
                        intervals * report.evaluateEvery, peer.peer, format(peer.secondsAfter![intervals - 1]),
                        format(report.neuronSecondsAfter[intervals - 1]), peer.peer, ratio))
            }
        } catch {
            print("   \(script) failed: \(error)")
        }
    }
}
