// F3: the character GRU of Data/words-gru.yaml trained on Debian's word list until its test loss
// reaches a stated target, training time only, then PyTorch on the same batches from the same
// initial weights (Benchmarks/peers/torch_words_gru.py).
import ArgumentParser
import Foundation
import NeuronCore
import NeuronTraining

extension Report {
    /// F3's figures: the test loss after each epoch, and the training time until it reached the target.
    struct Words: Encodable {
        var config: String
        var target: Double
        var neuronSeconds: Double
        var neuronEpochs: Int
        var neuronReached: Bool
        var neuronTestLosses: [Double]
        /// By the peer's name (`torch`).
        var peers: [String: WordsPeer] = [:]
    }
    struct WordsPeer: Encodable {
        var version: String
        var seconds: Double?
        var epochs: Int?
        var reached: Bool?
        var testLosses: [Double]?
    }
}

/// The lines a text run trains and tests on and the order it draws them in, for a peer to read
/// the same words from the same file and train on the same batches (F3): the indices of its
/// training lines among the file's kept lines (in its training set's order) and of its test
/// lines, each epoch's order over the training lines, and what the peer checks its own reading
/// against: the kept lines' count, the block size and the vocabulary (token 0 the boundary, "").
struct SharedLines: Encodable {
    var lineCount: Int
    var vocabulary: [String]
    var blockSize: Int
    var batchSize: Int
    var rows: [Int]
    var testRows: [Int]
    var orders: [[Int]]
}

extension Benchmarks {
    /// F3's config, relative to the package.
    static let wordsConfig = "Data/words-gru.yaml"
    /// F3's target: the test loss (nats per position) the GRU first reaches in its third epoch here
    /// (2.032, 2.000, 1.983, 1.975 after epochs 1–4; it levels off near 1.96 by epoch 7).
    static let wordsTarget = 1.99

    /// F3: trains the config's run (its validation lines held out, not evaluated) until the test
    /// loss reaches ``wordsTarget``, timing the steps alone; then, with `--peers`, PyTorch on the
    /// same lines, batches and initial weights.
    func words() throws -> Report.Words {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../\(Self.wordsConfig)").standardized.path
        let config = try ConfigLoader.load(path)
        let optimizer = config.optimizer
        guard config.training.precision == .float, optimizer.kind == .adam, optimizer.schedule.kind == .constant, optimizer.weightDecay == 0
        else {
            throw ValidationError(
                "F3 times a Float run with Adam at a constant rate and no weight decay, as its PyTorch peer trains; \(path) asks otherwise")
        }
        progress("F3: loading \(Self.wordsConfig)")
        let built = try RunBuilder.build(config).engine
        // The lines as the run split them: the peer's, and the test lines our test loss reads.
        let data = try RunData<Float>(config.data, seed: config.training.seed)
        guard let text = data.text, let test = data.test,
            let engine = try trainingAlone(built) as? NetworkTrainingEngine<Float, Adam<Float>>,
            engine.training.dataset.features == data.training.features
        else { throw ValidationError("F3: \(path) did not build a Float Adam text run with test lines, on the lines read here") }
        let (batchSize, orders) = try SharedBatches.orders(built, epochs: config.training.epochs)
        let shared = SharedLines(
            lineCount: text.corpus.count, vocabulary: [""] + text.corpus.vocabulary.characters.map { String(Character($0)) },
            blockSize: text.corpus.blockSize, batchSize: batchSize, rows: text.training, testRows: text.test, orders: orders)
        let initial = initialEntries(engine, pytorchLayouts: true)

        let target = Self.wordsTarget
        // The config splits each batch: one BLAS thread per share, as `neuron train` sets it.
        let result = try withThreads(splitting: config.training.batchThreads ?? 1) {
            try wordsRun(engine, test: test, target: target, orders: orders)
        }
        print(
            String(
                format: "F3 %@ to test loss %.2f (%@): Neuron %@ in %d epochs (training time only; test losses %@)",
                Self.wordsConfig, target, engine.title, result.reached ? format(result.seconds) : "not reached", result.epochs,
                result.losses.map { String(format: "%.4f", $0) }.joined(separator: " ")))
        var words = Report.Words(
            config: Self.wordsConfig, target: target, neuronSeconds: result.seconds, neuronEpochs: result.epochs,
            neuronReached: result.reached, neuronTestLosses: result.losses)
        if peers {
            let runner = try Peers(threads: threads)
            let directory = FileManager.default.temporaryDirectory
            let file = directory.appendingPathComponent("neuron-bench-F3.safetensors").path
            try SafeTensors.write(
                initial,
                metadata: [
                    "learningRate": "\(optimizer.learningRate)", "optimizer": optimizer.kind.rawValue, "beta1": "\(optimizer.beta1)",
                    "beta2": "\(optimizer.beta2)", "epsilon": "\(optimizer.epsilon)", "batchSize": "\(config.training.batchSize)",
                    "epochs": "\(config.training.epochs)", "lowercase": "\(config.data.lowercase ?? false)", "keep": config.data.keep ?? "",
                    "blockSize": "\(text.corpus.blockSize)", "seed": "\(config.training.seed)",
                    "validationSplit": "\(config.data.validationSplit ?? 0.1)", "testSplit": "\(config.data.testSplit ?? 0.1)",
                ], to: file)
            try runWordsPeer(
                "torch_words_gru.py", id: "F3", text: config.data.path!, exchange: file, shared: shared, target: target,
                epochs: config.training.epochs, neuronSeconds: result.seconds, runner: runner, into: &words)
        }
        print("")
        return words
    }

    /// Runs a words workload's PyTorch peer (`script`) on the lines and batches Neuron trained on
    /// (written beside `exchange`, the initial weights and recipe) to `target`, records its result
    /// in `words` and prints it against Neuron's `neuronSeconds`; a peer that fails is reported, not thrown.
    func runWordsPeer(
        _ script: String, id: String, text: String, exchange: String, shared: SharedLines, target: Double, epochs: Int,
        neuronSeconds: Double, runner: Peers, into words: inout Report.Words
    ) throws {
        let lines = FileManager.default.temporaryDirectory.appendingPathComponent("neuron-bench-\(id)-lines.json")
        try JSONEncoder().encode(shared).write(to: lines)
        progress("\(id): \(script) to \(target), up to \(epochs) epochs (its result follows when it ends)")
        do {
            let peer = try runner.run(
                script, ["--text", text, "--init", exchange, "--batches", lines.path, "--target", "\(target)", "--max-epochs", "\(epochs)"])
            words.peers[peer.peer] = Report.WordsPeer(
                version: peer.version, seconds: peer.trainSeconds, epochs: peer.epochs, reached: peer.reached, testLosses: peer.testLosses)
            print(
                String(
                    format: "   %@ %@: %@ in %d epochs; %@/Neuron %.2f× (test losses %@)", peer.peer, peer.version,
                    peer.reached == true ? format(peer.trainSeconds ?? .nan) : "not reached", peer.epochs ?? 0,
                    peer.peer, (peer.trainSeconds ?? .nan) / neuronSeconds,
                    (peer.testLosses ?? []).map { String(format: "%.4f", $0) }.joined(separator: " ")))
        } catch {
            print("   \(script) failed: \(error)")
        }
    }

    /// Trains until the test loss reaches `target`, timing the steps alone; checks (untimed) after
    /// each epoch that the run drew the order the peer was given. Prints a line per epoch to
    /// standard error, since a run takes minutes.
    func wordsRun(
        _ engine: NetworkTrainingEngine<Float, Adam<Float>>, test: Dataset<Float>, target: Double, orders: [[Int]], id: String = "F3"
    ) throws -> (seconds: Double, epochs: Int, reached: Bool, losses: [Double]) {
        var run = engine
        let clock = ContinuousClock()
        var seconds = 0.0
        var losses: [Double] = []
        while !run.isFinished {
            let epoch = run.epoch
            seconds += clock.measure { while run.epoch == epoch && !run.isFinished { _ = run.step() } }.seconds
            guard run.resumePoint().position?.batches.order == orders[epoch] else {
                throw ValidationError("\(id): epoch \(epoch + 1) drew another order than the one given to the peer")
            }
            var network = run.network
            let loss = try testLoss(&network, test)  // untimed
            losses.append(loss)
            progress(String(format: "%@: epoch %d of at most %d, %.1f s of training, test loss %.4f", id, run.epoch, run.totalEpochs, seconds, loss))
            if loss <= target { return (seconds, run.epoch, true, losses) }
        }
        return (seconds, run.epoch, false, losses)
    }

    /// F3's test loss: `-log softmax(z)[target]` averaged over every counted position of the test
    /// lines — PyTorch's `cross_entropy(ignore_index=-1)` over them all, which the peer computes —
    /// in batches of 1,000 lines, each batch's mean weighted by its counted positions.
    func testLoss(_ network: inout Network<Float>, _ test: Dataset<Float>) throws -> Double {
        let block = test.featureCount
        var total = 0.0, counted = 0
        for start in stride(from: 0, to: test.count, by: 1_000) {
            let rows = min(1_000, test.count - start), range = start * block..<(start + rows) * block
            let x = try Tensor(shape: [rows, block], scalars: Array(test.features.scalars[range]))
            let t = try Tensor(shape: [rows, block], scalars: Array(test.targets.scalars[range]))
            let positions = t.scalars.filter { $0 >= 0 }.count
            total += Double(try network.loss(x, targets: t)) * Double(positions)
            counted += positions
        }
        return total / Double(counted)
    }
}
