// `swift run -c release Benchmarks`: each workload is first checked against its naive
// reference, then timed, next to the machine's sgemm ceiling and, with --peers, NumPy, PyTorch
// (eager and torch.compile) and JAX doing the same work from the same weights, in interleaved rounds.
import AllocationCounter
import ArgumentParser
import Foundation
import NeuronCore
import NeuronTerminal
import NeuronTraining
import Observation

@main
struct Benchmarks: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "Benchmarks",
        abstract: "Check, then time, Neuron's training steps against the BLAS ceiling and the peers (NumPy, PyTorch, JAX).")

    @Argument(
        help:
            "Workloads to run: W1…W12 (W11, W12: nanoGPT's Shakespeare character GPT at its CPU and full sizes), F1…F5 (F5: the shipped Data/shakespeare-char.yaml to validation loss 1.88), T1, T2 (the byte-level BPE: cl100k_base encoding, training 4,096 tokens), ceiling, observer, dashboard, neuron, attention, scaling (default: all but scaling; --quick: also not F1…F5 or W12)."
    )
    var workloads: [String] = []

    @Flag(help: "A few seconds in all, for CI smoke runs.")
    var quick = false

    @Flag(help: "Run the peers too (needs Benchmarks/peers/setup.sh).")
    var peers = false

    @Option(help: "Write the results as JSON to this file.")
    var json: String?

    @Option(
        help:
            "The operands of Neuron's products in F1, F4 and F5: full (float32) or bf16 (oneDNN's bf16 products, float32 master weights; needs --traits OneDNN and avx512_bf16); with bf16 the PyTorch peers run under torch.autocast(\"cpu\", bfloat16), and the JAX peers, which have no autocast, are left out."
    )
    var products: ProductPrecision = .full

    @Option(help: "Threads for OpenBLAS and every peer.")
    var threads: Int = 2

    @Option(help: "Interleaved rounds of timing.")
    var rounds: Int?

    @Option(
        help:
            "Busy competitor processes (shell loops) started beside the run for its whole duration, Neuron and every peer timed under the same load in the same rounds (not with --mpi)."
    )
    var load: Int = 0

    @Option(
        help:
            "OpenBLAS's kernels, for Neuron and the peers alike: native (OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset), pinned (the environment's OPENBLAS_CORETYPE), or both, each in a process of its own, then side by side (default: both where OPENBLAS_CORETYPE is set, except with --quick, --mpi or scaling; else the environment's)."
    )
    var kernels: KernelSet?

    @Flag(
        help:
            "Data parallelism instead (DataParallel.swift): alone, the 1-process step and shard steps; under mpirun, allreduce and step of the ranks."
    )
    var mpi = false
    @Flag(help: .hidden)
    /// T2's memory, measured in a process of its own: this program again, with this flag.
    var tokenizerMemoryChild = false

    @Option(help: "Where the scaling workload writes its CSV.")
    var scalingCSV = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../scaling.csv").standardized.path

    func validate() throws {
        guard threads >= 1 else { throw ValidationError("--threads must be at least 1, got \(threads)") }
        if let rounds, rounds < 1 { throw ValidationError("--rounds must be at least 1, got \(rounds)") }
        guard load >= 0 else { throw ValidationError("--load must be at least 0, got \(load)") }
        if mpi, load > 0 { throw ValidationError("--load is for the workloads on one machine; under --mpi the ranks are the load") }
        try validateKernelSets()
        let known = Set(
            Workload.all.map(\.id) + [
                "W7", "W8", "W9", "W10", "W11", "W12", "F1", "F2", "F3", "F4", "F5", "T1", "T2", "ceiling", "observer", "dashboard", "neuron",
                "attention", "scaling",
            ])
        for w in workloads where !known.contains(w) {
            throw ValidationError("unknown workload '\(w)'; choose from \(known.sorted().joined(separator: ", "))")
        }
    }

    @MainActor
    func run() async throws {
        if tokenizerMemoryChild { return try Self.tokenizerMemoryChild() }
        if !childKernelSets.isEmpty { return try runKernelSets(childKernelSets) }
        // OpenBLAS's family chosen and checked before anything is timed (may run this program again).
        BLAS.runOnBestKernels()
        do {
            try BLAS.checkKernels()
        } catch {
            FileHandle.standardError.write(Data("Error: \(error)\n".utf8))
            throw ExitCode(Self.kernelMismatchStatus)
        }
        #if DEBUG
        print(
            """
            ************************************************************************
            WARNING: this is a DEBUG build. Its timings mean nothing.
            Run the benchmarks in release mode:  swift run -c release Benchmarks
            ************************************************************************
            """)
        #endif
        if products == .bf16 {
            if let refusal = BLAS.bf16Refusal { throw ValidationError("--products bf16: \(refusal)") }
            try BLAS.checkBF16Products()
        }
        if mpi { return try dataParallel() }
        BLAS.threadCount = threads
        // Started after the kernel choice (which may run this program again) and kept for every timing.
        let competitors = try CompetingLoad(count: load)
        defer { competitors.stop() }
        // --quick leaves out the runs to a target and W12, whose step alone takes seconds.
        func selected(_ id: String) -> Bool {
            workloads.isEmpty ? !(quick && (id.hasPrefix("F") || id == "W12")) && id != "scaling" : workloads.contains(id)
        }
        var report = Report(
            date: ISO8601DateFormatter().string(from: Date()), blas: BLAS.summary, kernelEnvironment: KernelSet.environmentDescription,
            threads: threads, machine: Self.machine(), load: load)
        print("BLAS: \(report.blas) (\(report.kernelEnvironment))")
        print("Machine: \(report.machine)")
        print("Load: \(competitors.description ?? "none (the machine as it is)")")
        if products == .bf16 {
            print("Products: bf16 in F1, F4 and F5 (\(BLAS.bf16Library)); PyTorch under torch.autocast(\"cpu\", bfloat16); JAX left out")
        }
        print("Timings: median [p10–p90] per training step (forward, backward, SGD update), float32.\n")

        let measuredAgainstCeiling = ["ceiling", "scaling", "W7", "W8", "W9", "W10", "W11", "W12"] + Workload.all.map(\.id)
        if measuredAgainstCeiling.contains(where: selected) {
            report.ceiling = try ceiling()
        }
        let chosen = Workload.all.filter { selected($0.id) }
        if !chosen.isEmpty { report.workloads = try await compare(chosen, ceiling: report.ceiling?.best) }
        if selected("W7") { report.convolution = try convolution(ceiling: report.ceiling?.best) }
        if selected("W8") { report.recurrent = try recurrent(ceiling: report.ceiling?.best) }
        // Each step's batch split over the threads, as the shipped config does (W10: 93 ms a step
        // split, 136 ms whole on two BLAS threads, native kernels).
        for w in [TransformerWorkload.w9, .w10, .w11, .w12].map({ $0.split(over: threads) }) where selected(w.id) {
            report.transformers.append(try transformer(w, ceiling: report.ceiling?.best))
        }
        if report.transformers.count > 1 { print(transformerSummary(report.transformers) + "\n") }
        if selected("F1") { report.fashion = try fashion(.mlp) }
        if selected("F2") { report.fashionCNN = try fashion(.cnn) }
        if selected("F3") { report.words = try words() }
        if selected("F4") { report.transformerWords = try transformerWords() }
        if selected("F5") { report.shakespeare = try shakespeare() }
        if selected("T2") { report.tokenizers.training = try tokenizerTraining() }
        if selected("T1") { report.tokenizers.encoding = try tokenizerEncoding() }
        if selected("observer") { report.observer = try await observerCost() }
        if selected("dashboard") { report.dashboard = try await dashboardCost() }
        if selected("neuron") { try neuronStruct() }
        if selected("attention") { try attention() }
        if selected("scaling") {
            try Scaling.run(peers: peers ? try Peers(threads: threads) : nil, quick: quick, ceiling: report.ceiling?.best, csv: scalingCSV)
        }

        if let json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
            try AtomicFile.write(Array(try encoder.encode(report)), to: json)
            print("\nResults written to \(json)")
        }
    }

    // MARK: The ceiling

    /// sgemm through our binding at n = 256…2048, checked against the naive loops first.
    func ceiling() throws -> Report.Ceiling {
        var generator = SeededGenerator(seed: 1)
        func random(_ n: Int) -> Tensor<Float> {
            var t = Tensor<Float>(zeros: [n, n])
            for i in 0..<t.count { t[i] = Float(generator.uniform(-1, 1)) }
            return t
        }
        let (a0, b0) = (random(67), random(67))
        var fast = Tensor<Float>(zeros: [67, 67]), slow = fast
        try Tensor.matmul(a0, b0, into: &fast)
        try Naive.matmul(a0, b0, into: &slow)
        let gap = zip(fast.scalars, slow.scalars).map { abs($0 - $1) }.max() ?? 0
        guard gap <= 67 * 4 * Float.ulpOfOne else { throw ValidationError("sgemm check failed: BLAS and naive differ by \(gap)") }

        var rows = [["sgemm", "median", "p10–p90", "GFLOP/s"]]
        var results: [String: Double] = [:]
        for n in quick ? [256, 512] : [256, 512, 1024, 2048] {
            let (a, b) = (random(n), random(n))
            var c = Tensor<Float>(zeros: [n, n])
            let timing = Timing(try measureSteps(blocks: quick ? 5 : 20, blockTarget: .milliseconds(20)) { try Tensor.matmul(a, b, into: &c) })
            let gflops = 2 * pow(Double(n), 3) / timing.median / 1e9
            results["\(n)"] = gflops
            rows.append(["n = \(n)", format(timing.median), "\(format(timing.p10)) – \(format(timing.p90))", String(format: "%.1f", gflops)])
        }
        print("The ceiling: sgemm C = A·B (n×n) through our binding")
        print(table(rows))
        let best = results.values.max() ?? .nan
        print(String(format: "  ceiling (best measured): %.1f GFLOP/s\n", best))
        return Report.Ceiling(gflops: results, best: best)
    }

    // MARK: Workloads against the peers

    @MainActor
    func compare(_ chosen: [Workload], ceiling: Double?) async throws -> [Report.WorkloadResult] {
        let checkSteps = 3
        var results: [String: Report.WorkloadResult] = [:]
        // Check: the engine against the naive loops, loss before each of the first steps, on the
        // workload's network and its first 16 rows (the naive loops over a whole 1024-wide batch
        // would take longer than all the timing).
        for w in chosen {
            let engine = try w.engineLosses(steps: checkSteps, rows: 16), naive = try w.naiveLosses(steps: checkSteps, rows: 16)
            guard agree(engine, naive) else {
                throw ValidationError("\(w.id) check failed: engine losses \(engine) vs naive \(naive)")
            }
            results[w.id] = Report.WorkloadResult(id: w.id, title: w.title, flops: w.flops, checkLosses: try w.engineLosses(steps: checkSteps))
        }
        // The peers get the same batch and weights through files, and must agree before they are timed.
        var peerRunner: Peers?
        var files: [String: String] = [:]
        let peerSpecs = PeerSpec.steps
        if peers {
            peerRunner = try Peers(threads: threads)
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("neuron-bench-\(ProcessInfo.processInfo.processIdentifier)")
                .path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            for w in chosen {
                files[w.id] = try w.writeExchangeFile(to: directory, checkSteps: checkSteps)
                for peer in peerSpecs {
                    let check: PeerResult
                    do {
                        check = try peerRunner!.run(peer.script, ["--file", files[w.id]!, "--warmup", "0", "--steps", "1"] + peer.arguments)
                    } catch {
                        print("  \(w.id) \(peer.name) failed its check: \(error)")
                        results[w.id]!.peers[peer.name] = Report.PeerTiming(version: "?", checked: false, seconds: [])
                        continue
                    }
                    let ok = agree(check.checkLosses ?? [], results[w.id]!.checkLosses)
                    results[w.id]!.peers[peer.name] = Report.PeerTiming(version: check.version, checked: ok, seconds: [])
                    if !ok {
                        print("  \(w.id) \(peer.name): losses \(check.checkLosses ?? []) disagree with ours \(results[w.id]!.checkLosses); not timed")
                    }
                }
            }
        }
        // Time, in interleaved rounds.
        let rounds = self.rounds ?? (quick ? 1 : (peers ? 3 : 1))
        for round in 1...rounds {
            print("round \(round)/\(rounds)…")
            for w in chosen {
                let (seconds, allocations) = try w.time(blocks: quick ? 5 : 30)
                results[w.id]!.seconds += seconds
                results[w.id]!.allocationsPerStep = allocations
                guard let runner = peerRunner else { continue }
                for peer in peerSpecs where results[w.id]!.peers[peer.name]!.checked {
                    let steps = quick ? max(5, w.peerSteps / 10) : w.peerSteps
                    do {
                        let timed = try runner.run(
                            peer.script, ["--file", files[w.id]!, "--warmup", "\(max(3, steps / 10))", "--steps", "\(steps)"] + peer.arguments)
                        results[w.id]!.peers[peer.name]!.seconds += timed.stepSeconds ?? []
                    } catch {
                        // One peer failing must not lose every other number of the run; its row says so.
                        print("  \(w.id) \(peer.name) failed: \(error)")
                        results[w.id]!.peers[peer.name]!.checked = false
                    }
                }
            }
        }
        // W1–W6's exchange files (W6's is 13 MB) and, once empty, this process's directory go with
        // the last round, as W7–W12's do: runs must not pile them up in the temporary directory.
        for file in files.values { try? FileManager.default.removeItem(atPath: file) }
        if let file = files.values.first { rmdir((file as NSString).deletingLastPathComponent) }
        // The table.
        var header = ["", "workload", "Neuron", "p10–p90", "GFLOP/s", "of ceiling", "allocs/step"]
        if peers { header += peerSpecs.map(\.column) + ["best peer / Neuron"] }
        var rows = [header]
        for w in chosen {
            var r = results[w.id]!
            let t = Timing(r.seconds)
            r.timing = t
            r.gflops = w.flops / t.median / 1e9
            var row = [
                w.id, w.title, format(t.median), "\(format(t.p10)) – \(format(t.p90))", String(format: "%.2f", r.gflops!),
                ceiling.map { String(format: "%.1f%%", r.gflops! / $0 * 100) } ?? "–", String(format: "%.2f", r.allocationsPerStep ?? .nan),
            ]
            if peers {
                var best: (name: String, ratio: Double)?
                for peer in peerSpecs {
                    let p = r.peers[peer.name]!
                    guard p.checked, !p.seconds.isEmpty else { row.append("unchecked"); continue }
                    let pt = Timing(p.seconds)
                    r.peers[peer.name]!.timing = pt
                    r.peers[peer.name]!.ratio = pt.median / t.median
                    row.append(format(pt.median))
                    if best == nil || pt.median / t.median < best!.ratio { best = (peer.column, pt.median / t.median) }
                }
                row.append(best.map { String(format: "%.2f× (%@)", $0.ratio, $0.name) } ?? "–")
            }
            results[w.id] = r
            rows.append(row)
        }
        print("\nTraining steps (median of \(rounds) interleaved round\(rounds == 1 ? "" : "s"); best peer / Neuron > 1 means Neuron is faster)")
        print(table(rows))
        print("")
        return chosen.map { results[$0.id]! }
    }

    // MARK: F1 and F2: Fashion-MNIST to a test accuracy

    /// A progress line on standard error, for work that runs minutes: standard output keeps the results alone.
    func progress(_ line: String) {
        FileHandle.standardError.write(Data("  … \(line)\n".utf8))
    }

    /// The end-to-end workloads: a shipped config trained until its test accuracy reaches the
    /// target, training time only, then the peers with the same recipe from the same initial weights.
    struct FashionWorkload {
        var id: String
        /// The config, relative to the package.
        var config: String
        var target: Double
        var scripts: [String]
        /// Whether the peers take the weights in PyTorch's layouts (F2, as W7) or ours (F1, as W1–W6).
        var pytorchLayouts: Bool
        /// Whether the peers train on our batches (F2): the same training rows, in the same order
        /// each epoch, so that the epochs it takes to reach the target are not down to the luck
        /// of two shufflers near a plateau (they were 8 against 6 when each drew its own).
        var sharesBatches = false

        /// F1: 784-256-128-10 tanh (Data/fashion-mnist.yaml) to 0.88.
        static let mlp = FashionWorkload(
            id: "F1", config: "Data/fashion-mnist.yaml", target: 0.88, scripts: ["torch_fashion.py", "jax_fashion.py"], pytorchLayouts: false)
        /// F2: W7's CNN with F2's recipe (Benchmarks/fashion-mnist-w7.yaml) to 0.91.
        static let cnn = FashionWorkload(
            id: "F2", config: "Benchmarks/fashion-mnist-w7.yaml", target: 0.91, scripts: ["torch_fashion_cnn.py"], pytorchLayouts: true,
            sharesBatches: true)
    }

    /// Time to reach the workload's test accuracy with its config's recipe, training time only.
    func fashion(_ workload: FashionWorkload) throws -> Report.Fashion {
        let configPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../\(workload.config)")
            .standardized.path
        var config = try ConfigLoader.load(configPath)
        // bf16 products in F1 only: F2's peer has no autocast run.
        let bf16 = products == .bf16 && workload.id == "F1"
        if bf16 { config.training.products = .bf16 }
        let target = workload.target
        progress("\(workload.id): loading \(workload.config)")
        // Training alone is timed, as the peers time it: the validation rows stay held out, but
        // are not evaluated after each epoch.
        let built = try RunBuilder.build(config).engine
        let batches = workload.sharesBatches && peers ? try SharedBatches(built, seed: config.training.seed, epochs: config.training.epochs) : nil
        let engine = try trainingAlone(built)
        // The run's own initial weights, for the peers (taken before the first step).
        let initial = initialEntries(engine, pytorchLayouts: workload.pytorchLayouts)
        // F2's config splits each batch: one BLAS thread per share, as `neuron train` sets it.
        let result = try withThreads(splitting: config.training.batchThreads ?? 1) {
            try fashionRun(engine, target: target, batches: batches, label: workload.id)
        }
        print(
            String(
                format: "%@ Fashion-MNIST to %.2f test accuracy (%@): Neuron %@ in %d epochs (training time only; accuracies %@)",
                workload.id, target, engine.title, result.reached ? format(result.seconds) : "not reached", result.epochs,
                result.accuracies.map { String(format: "%.4f", $0) }.joined(separator: " ")))
        var fashion = Report.Fashion(
            target: target, neuronSeconds: result.seconds, neuronEpochs: result.epochs,
            neuronReached: result.reached, neuronAccuracies: result.accuracies)
        if peers {
            let runner = try Peers(threads: threads, autocast: bf16)
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("neuron-bench-\(workload.id).safetensors").path
            try SafeTensors.write(
                initial,
                metadata: [
                    "learningRate": "\(config.optimizer.learningRate)", "momentum": "\(config.optimizer.momentum)",
                    "batchSize": "\(config.training.batchSize)", "epochs": "\(config.training.epochs)",
                    "schedule": config.optimizer.schedule.kind.rawValue, "optimizer": config.optimizer.kind.rawValue,
                    "validationSplit": "\(config.data.validationSplit ?? 0.1)", "seed": "\(config.training.seed)",
                ], to: file)
            var batchArguments: [String] = []
            if let batches {
                let orderFile = FileManager.default.temporaryDirectory.appendingPathComponent("neuron-bench-\(workload.id)-batches.json")
                try JSONEncoder().encode(batches).write(to: orderFile)
                batchArguments = ["--batches", orderFile.path]
            }
            for script in workload.scripts where !(bf16 && script.hasPrefix("jax_")) {
                progress("\(workload.id): \(script) to \(target), up to \(config.training.epochs) epochs (its result follows when it ends)")
                let peer: PeerResult
                do {
                    peer = try runner.run(
                        script,
                        [
                            "--data", "/usr/share/datasets/fashion-mnist", "--init", file,
                            "--target", "\(target)", "--max-epochs", "\(config.training.epochs)",
                        ] + batchArguments)
                } catch {
                    print("   \(script) failed: \(error)")
                    continue
                }
                fashion.peers[peer.peer] = Report.FashionPeer(
                    version: peer.version, seconds: peer.trainSeconds, epochs: peer.epochs, reached: peer.reached,
                    accuracies: peer.testAccuracies)
                print(
                    String(
                        format: "   %@ %@: %@ in %d epochs; %@/Neuron %.2f× (accuracies %@)", peer.peer, peer.version,
                        peer.reached == true ? format(peer.trainSeconds ?? .nan) : "not reached", peer.epochs ?? 0,
                        peer.peer, (peer.trainSeconds ?? .nan) / result.seconds,
                        (peer.testAccuracies ?? []).map { String(format: "%.4f", $0) }.joined(separator: " ")))
            }
        }
        print("")
        return fashion
    }

    /// The same run with no validation pass after each epoch (the rows stay held out), so that
    /// the time of training alone is measured, as the peers measure theirs.
    func trainingAlone(_ engine: any TrainingEngine) throws -> any TrainingEngine {
        guard let engine = engine as? any TrainingAlone else {
            throw ValidationError("\(engine.title): not a network run, so it has no training to time alone")
        }
        return try engine.trainingAlone()
    }

    /// A run's parameters before its first step, for the peers.
    func initialEntries<E: TrainingEngine>(_ engine: E, pytorchLayouts: Bool) -> [SafeTensors.Entry] {
        let point = engine.resumePoint()
        return point.tensors.filter { $0.name.hasPrefix("layers.") }.map {
            SafeTensors.entry($0.name, pytorchLayouts ? Checkpoint.fileLayout($0.tensor, order: point.pytorchOrders[$0.name]) : $0.tensor)
        }
    }

    /// Trains until the test accuracy reaches `target`, timing the steps alone; with `batches`,
    /// checks (untimed) after each epoch that it drew the order the peers were given.
    /// Prints a line per epoch to standard error (`label` first), since a run takes minutes.
    func fashionRun<E: TrainingEngine>(
        _ engine: E, target: Double, batches: SharedBatches? = nil, label: String
    ) throws -> (seconds: Double, epochs: Int, reached: Bool, accuracies: [Double]) {
        var run = engine
        let clock = ContinuousClock()
        var seconds = 0.0
        var accuracies: [Double] = []
        while !run.isFinished {
            let epoch = run.epoch
            seconds += clock.measure { while run.epoch == epoch && !run.isFinished { _ = run.step() } }.seconds
            if let batches, run.resumePoint().position?.batches.order != batches.orders[epoch] {
                throw ValidationError("\(engine.title): epoch \(epoch + 1) drew another order than the one given to the peers")
            }
            let accuracy = try run.finalEvaluation()?.evaluation.accuracy ?? 0  // untimed
            accuracies.append(accuracy)
            progress(
                String(
                    format: "%@: epoch %d of at most %d, %.1f s of training, test accuracy %.4f", label, run.epoch, run.totalEpochs, seconds, accuracy
                ))
            if accuracy >= target { return (seconds, run.epoch, true, accuracies) }
        }
        return (seconds, run.epoch, false, accuracies)
    }

    // MARK: Watching training

    /// The run that the observer and dashboard workloads watch: 784-256-128-10 (batch 64) on 2,048
    /// seeded random rows of 10 classes.
    func watchedEngine() throws -> NetworkTrainingEngine<Float, SGD<Float>> {
        var generator = SeededGenerator(seed: 3)
        let rows = 2_048
        var x = Tensor<Float>(zeros: [rows, 784])
        for i in 0..<x.count { x[i] = Float(generator.uniform(0, 1)) }
        let labels = (0..<rows).map { _ in generator.index(below: 10) }
        let data = try Dataset.classification(features: x, labels: labels, classNames: (0..<10).map(String.init))
        let network = try Network<Float>(features: 784, layers: [(256, .tanh), (128, .tanh), (10, .softmax)], loss: .softmaxCrossEntropy, seed: 1)
        return try NetworkTrainingEngine(
            network: network, optimizer: try SGD<Float>(learningRate: 0.01), dataset: data, batchSize: 64, epochs: quick ? 2 : 16, seed: 1)
    }

    /// The same steps of 784-256-128-10 (batch 64) run bare, through the view model with nobody
    /// watching, and through it with an observer that renders every state it sees, in alternating rounds.
    @MainActor
    func observerCost() async throws -> Report.Observer {
        let engine = try watchedEngine()
        let clock = ContinuousClock()
        var bare: [Double] = [], unobserved: [Double] = [], observed: [Double] = []
        var rendered = 0
        var observerBusy = Duration.zero
        for _ in 0..<(quick ? 1 : 9) {
            bare.append(
                clock.measure {
                    var e = engine
                    while !e.isFinished { _ = e.step() }
                }.seconds)
            let quiet = TrainingViewModel(engine: engine)
            unobserved.append(
                await clock.measure {
                    quiet.handle(event: .start)
                    await quiet.activity?.value
                }.seconds)
            let watched = TrainingViewModel(engine: engine)
            let renderer = ProgressRenderer()
            observed.append(
                await clock.measure {
                    let observer = Task { @MainActor in
                        var sink = 0
                        for await state in Observations({ watched.viewState }) {
                            let started = clock.now
                            sink &+= renderer.line(state).utf8.count
                            rendered += 1
                            observerBusy += clock.now - started
                            if state.phase == .finished { break }
                        }
                        return sink
                    }
                    watched.handle(event: .start)
                    _ = await observer.value
                }.seconds)
            guard watched.engine?.network.parameters == quiet.engine?.network.parameters else {
                throw ValidationError("observer check failed: watched and unwatched runs ended with different weights")
            }
        }
        let steps = Double(engine.totalSteps)
        func median(_ xs: [Double]) -> Double { xs.sorted()[xs.count / 2] }
        let (b, u, o) = (median(bare), median(unobserved), median(observed))
        let result = Report.Observer(
            steps: engine.totalSteps, bareStepsPerSecond: steps / b, unobservedStepsPerSecond: steps / u, observedStepsPerSecond: steps / o,
            observerCostPercent: (o / u - 1) * 100, roundSpreadPercent: (unobserved.max()! / unobserved.min()! - 1) * 100,
            observerWorkPercent: observerBusy.seconds / observed.reduce(0, +) * 100, statesRendered: rendered)
        print("Watching training (784-256-128-10, batch 64, \(engine.totalSteps) steps, median of \(bare.count) alternating rounds)")
        print(
            table([
                ["bare engine loop", String(format: "%.1f steps/s", result.bareStepsPerSecond), ""],
                [
                    "view model, unobserved", String(format: "%.1f steps/s", result.unobservedStepsPerSecond),
                    String(format: "%+.1f%% time vs bare", (u / b - 1) * 100),
                ],
                [
                    "view model, observed", String(format: "%.1f steps/s", result.observedStepsPerSecond),
                    String(format: "%+.1f%% time vs unobserved (rounds vary by %.1f%%)", result.observerCostPercent, result.roundSpreadPercent),
                ],
                ["observer's own work", String(format: "%.3f%% of the time", result.observerWorkPercent), "\(rendered) states rendered"],
            ]))
        print("")
        return result
    }

    // MARK: The single neuron as a plain struct

    func neuronStruct() throws {
        var neuron = Neuron<Float>(weight: 0.5, bias: 0.5)
        let inputs: [Float] = [0.01]
        let timing = Timing(try measureSteps(blocks: quick ? 5 : 30) { _ = try neuron.step(inputs: inputs, target: 0.1, learningRate: 0.01) })
        print(
            "The single neuron as a plain struct (Neuron<Float>.step, Docs/Reference.md §3): \(format(timing.median)) per step [\(format(timing.p10)) – \(format(timing.p90))]\n"
        )
    }

    /// The CPU, its cores and memory, and the vector extensions it has (which kernels it could run),
    /// e.g. `AMD EPYC, 2 cores, 23 GiB, avx2 fma avx512f avx512bw avx512vl avx512_vnni avx512_bf16`.
    static func machine() -> String {
        let lines = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?.split(separator: "\n") ?? []
        func field(_ name: String) -> String? {
            lines.first { $0.hasPrefix(name) }?.split(separator: ":", maxSplits: 1).last?.trimmingCharacters(in: .whitespaces)
        }
        let cpu = field("model name") ?? "unknown CPU"
        let flags = BLAS.cpuFlags
        let vector = ["sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "amx_tile"]
            .filter(flags.contains)
        let extensions = vector.isEmpty ? "no vector extensions listed" : vector.joined(separator: " ")
        let memory = ProcessInfo.processInfo.physicalMemory >> 30
        return "\(cpu), \(ProcessInfo.processInfo.activeProcessorCount) cores, \(memory) GiB, \(extensions); \(Kernels.vectorSummary)"
    }
}

/// Everything a run measured, for --json.
struct Report: Encodable {
    struct Ceiling: Encodable { var gflops: [String: Double]; var best: Double }
    struct PeerTiming: Encodable {
        var version: String
        var checked: Bool
        var seconds: [Double]
        var timing: Timing?
        var ratio: Double?
        /// The peer's losses before each of the check steps (W7, W8), compared with ours.
        var checkLosses: [Double]?
        /// Bytes resident before the peer built its model and at its process's peak, from the
        /// timing run that peaked highest (W9–W12).
        var rssBefore: Int?
        var peakRSS: Int?
    }
    /// A layer's median forward and backward seconds within a step (W7, W8).
    struct LayerTime: Encodable { var layer: String, forward: Double, backward: Double }
    struct WorkloadResult: Encodable {
        var id: String
        var title: String
        var flops: Double
        var checkLosses: [Double]
        var seconds: [Double] = []
        var timing: Timing?
        var gflops: Double?
        var allocationsPerStep: Double?
        var peers: [String: PeerTiming] = [:]
    }
    struct Fashion: Encodable {
        var target: Double
        var neuronSeconds: Double
        var neuronEpochs: Int
        var neuronReached: Bool
        var neuronAccuracies: [Double]
        /// By the peer's name (`torch`, `jax`).
        var peers: [String: FashionPeer] = [:]
    }
    struct FashionPeer: Encodable {
        var version: String
        var seconds: Double?
        var epochs: Int?
        var reached: Bool?
        var accuracies: [Double]?
    }
    struct Observer: Encodable {
        var steps: Int
        var bareStepsPerSecond, unobservedStepsPerSecond, observedStepsPerSecond: Double
        var observerCostPercent, roundSpreadPercent, observerWorkPercent: Double
        var statesRendered: Int
    }
    var date: String
    var blas: String
    /// The variables that pin OpenBLAS's kernels, as this run had them.
    var kernelEnvironment: String
    var threads: Int
    var machine: String
    /// Busy competitor processes beside the run (`--load`); 0 on the machine as it is.
    var load: Int
    var ceiling: Ceiling?
    var workloads: [Report.WorkloadResult] = []
    var fashion: Fashion?
    var fashionCNN: Fashion?
    var observer: Observer?
    var convolution: Convolution?
    var recurrent: Recurrent?
    var transformers: [Transformer] = []
    var words: Words?
    var transformerWords: Words?
    var shakespeare: Shakespeare?
    var tokenizers = Benchmarks.Tokenizers()
    var dashboard: Benchmarks.DashboardCost?
}

/// A network run rebuilt without its validation rows (see ``Benchmarks/trainingAlone(_:)``).
protocol TrainingAlone {
    func trainingAlone() throws -> any TrainingEngine
}

extension NetworkTrainingEngine: TrainingAlone {
    func trainingAlone() throws -> any TrainingEngine {
        try NetworkTrainingEngine(
            network: network, optimizer: training.optimizer, dataset: training.dataset, validation: nil, test: test,
            epochs: totalEpochs, seed: seed, position: training.position, records: records)
    }
}

/// The batches a run will draw, for a peer to train on the same ones: which rows of the training
/// file it trains on (`rows`, in the order of its training set), their labels (for the peer to
/// check the mapping against the file), and each epoch's order over them.
struct SharedBatches: Encodable {
    var rows: [Int]
    var labels: [Int]
    var batchSize: Int
    var orders: [[Int]]

    /// Drawn as a fresh run (validation rows still in it) draws them: the split replayed from the
    /// seed through the run's own split generator and `Dataset.splitRows`, then each epoch's
    /// shuffle from the run's own generator and order. The labels are the run's, so that a replay
    /// gone wrong is caught by the peer; the orders are checked against the run's after each epoch.
    init(_ engine: any TrainingEngine, seed: UInt64, epochs: Int) throws {
        guard let engine = engine as? NetworkTrainingEngine<Float, SGD<Float>>, let labels = engine.training.dataset.labels else {
            throw ValidationError("shared batches need a fresh Float SGD run of a classification network")
        }
        let held = engine.validation?.count ?? 0
        var split = RunData<Float>.splitGenerator(seed: seed)
        rows = try Dataset<Float>.splitRows(count: engine.training.dataset.count + held, validationCount: held, generator: &split).training
        self.labels = labels
        (batchSize, orders) = try Self.orders(engine, epochs: epochs)
    }

    /// The batch size of a fresh run and the order over its training rows of each of its first
    /// `epochs` epochs: each epoch's shuffle replayed from the run's own generator and order.
    static func orders<E: TrainingEngine>(_ engine: E, epochs: Int) throws -> (batchSize: Int, orders: [[Int]]) {
        guard var position = engine.resumePoint().position, position.epoch == 0, position.batchIndex == 0 else {
            throw ValidationError("shared batches need a fresh run, at its first step")
        }
        var orders: [[Int]] = []
        for _ in 0..<epochs {
            position.batches.shuffle(using: &position.generator)
            orders.append(position.batches.order)
        }
        return (position.batches.batchSize, orders)
    }
}

extension ProductPrecision: ExpressibleByArgument {}
