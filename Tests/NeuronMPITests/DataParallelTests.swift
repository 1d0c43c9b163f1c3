// `neuron train` under `mpirun -np 2` against one process, run as a user would: the built
// executable, its run directory, its exit. Built with the trait MPI only (`swift test --traits MPI`,
// as CI runs it); without the trait this target checks only that starting under mpirun is refused.
// With the trait, a missing or broken Open MPI fails these tests: none is skipped.
import Foundation
import NeuronCore
import NeuronDistributed
import NeuronTraining
import Testing

@Suite("Starting a process group")
struct ProcessGroupStartTests {
    @Test("Started alone (no launcher's environment, or one process), a neuron trains alone, with or without MPI")
    func alone() throws {
        #expect(try ProcessGroup.start(environment: [:]) == nil)
        #expect(try ProcessGroup.start(environment: ["OMPI_COMM_WORLD_SIZE": "1"]) == nil)
    }

    #if !MPI
    @Test("Built without MPI and started as one of 2 processes, it refuses, saying how to build with MPI")
    func refusedWithoutMPI() {
        #expect(throws: DistributedError.notBuilt) { try ProcessGroup.start(environment: ["OMPI_COMM_WORLD_SIZE": "2"]) }
        #expect(DistributedError.notBuilt.description.contains("swift build --traits MPI"))
    }
    #endif
}

#if MPI
@Suite("neuron train under mpirun", .serialized)
struct DataParallelTests {
    @Test("XOR in Double: 2 ranks reach one process's weights within 1e-12 after 100 steps, the same bits run to run")
    func xorTwoRanks() throws {
        let scratch = try Scratch()
        let config = try scratch.config(from: "xor.yaml", replacing: ["checkpointEvery: 250": "checkpointEvery: 25"])
        try expectTrains(config, epochs: 100, output: scratch.path("one"))
        try expectTrains(config, epochs: 100, output: scratch.path("two"), ranks: 2)
        try expectTrains(config, epochs: 100, output: scratch.path("again"), ranks: 2)
        let one = try Checkpoint.read(scratch.path("one")), two = try Checkpoint.read(scratch.path("two"))
        #expect(two.state.progress.step == 100 && two.state.progress.epoch == 100)
        let difference = try relativeDifference(one, two, as: Double.self)
        #expect(difference <= 1e-12, "2 ranks against 1 process: \(difference)")
        // Rounding differs from one process's (each rank sums half the batch), but not between runs.
        #expect(try relativeDifference(two, Checkpoint.read(scratch.path("again")), as: Double.self) == 0)
        print("xor, Double, 100 steps: 2 ranks against 1 process, largest relative difference \(difference)")
    }

    @Test("Digits in Float: 2 ranks reach one process's weights within 1e-5 after 2 epochs (90 steps)")
    func digitsTwoRanks() throws {
        let scratch = try Scratch()
        let config = try scratch.config(from: "digits.yaml")
        try expectTrains(config, epochs: 2, output: scratch.path("one"))
        try expectTrains(config, epochs: 2, output: scratch.path("two"), ranks: 2)
        let one = try Checkpoint.read(scratch.path("one")), two = try Checkpoint.read(scratch.path("two"))
        #expect(two.state.progress.step == 90)
        let difference = try relativeDifference(one, two, as: Float.self)
        #expect(difference <= 1e-5, "2 ranks against 1 process: \(difference)")
        // The epoch's records are sums over both ranks' shares: the same samples and accuracy as one process's.
        #expect(two.state.records.map(\.trainingAccuracy) == one.state.records.map(\.trainingAccuracy))
        print("digits, Float, 90 steps: 2 ranks against 1 process, largest relative difference \(difference)")
    }

    @Test("A tied transformer in Double, AdamW on matrices, clipped, warmed up: 2 ranks reach one process's weights after an epoch")
    func tiedTransformerTwoRanks() throws {
        let scratch = try Scratch()
        let words = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Data/words-small.txt").standardized
        let config = scratch.path("gpt.yaml")
        // Padded and windowed lines: two shares of 16 rows count different numbers of positions. A
        // tight clip and a warmup, so that the ranks' summed gradient goes through both.
        try """
        model:
          transformer: {blocks: 1, heads: 2, features: 8, tieWeights: true}
        data: {kind: text, path: \(words.path), blockSize: 8, longLines: window}
        optimizer:
          kind: adam
          learningRate: 0.01
          weightDecay: 0.1
          decoupled: true
          decay: matrices
          schedule: {kind: cosine, warmupSteps: 5}
        training: {batchSize: 32, seed: 7, precision: double, clipGradientNorm: 0.1}
        """.write(toFile: config, atomically: true, encoding: .utf8)
        try expectTrains(config, epochs: 1, output: scratch.path("one"))
        try expectTrains(config, epochs: 1, output: scratch.path("two"), ranks: 2)
        let one = try Checkpoint.read(scratch.path("one")), two = try Checkpoint.read(scratch.path("two"))
        #expect(two.state.progress.step == one.state.progress.step && one.state.progress.step > 20)
        let difference = try relativeDifference(one, two, as: Double.self)
        #expect(difference <= 1e-9, "2 ranks against 1 process: \(difference)")
        print("tied transformer, Double, \(one.state.progress.step) steps: 2 ranks against 1 process, largest relative difference \(difference)")
    }

    @Test("A checkpoint written by 2 ranks goes on in 1 process, and one written by 1 process in 2 ranks")
    func resumeAcrossRankCounts() throws {
        let scratch = try Scratch()
        let config = try scratch.config(from: "xor.yaml")
        try expectTrains(config, epochs: 100, output: scratch.path("one"))
        try expectTrains(config, epochs: 100, output: scratch.path("two"), ranks: 2)
        // 2 ranks, then 1 process: within rounding of one process throughout.
        try expectTrains(config, epochs: 50, output: scratch.path("two-one"), ranks: 2)
        try expectTrains(config, epochs: 100, output: scratch.path("two-one"), resume: true)
        let twoOne = try Checkpoint.read(scratch.path("two-one"))
        #expect(twoOne.state.progress.step == 100 && twoOne.state.records.count == 100)
        #expect(try relativeDifference(Checkpoint.read(scratch.path("one")), twoOne, as: Double.self) <= 1e-12)
        // 1 process, then 2 ranks, then 2 ranks again from 2 ranks' checkpoint: resuming on the same
        // ranks gives the bits of an uninterrupted 2-rank run.
        try expectTrains(config, epochs: 30, output: scratch.path("two-two"), ranks: 2)
        try expectTrains(config, epochs: 100, output: scratch.path("two-two"), ranks: 2, resume: true)
        #expect(try relativeDifference(Checkpoint.read(scratch.path("two")), Checkpoint.read(scratch.path("two-two")), as: Double.self) == 0)
        // A finished run resumed on 2 ranks: nothing to do, said once, and every rank ends cleanly.
        let finished = try launch(["train", config, "--epochs", "100", "--resume", scratch.path("two")], ranks: 2, timeout: 300)
        #expect(finished.status == 0 && finished.stderr.contains("nothing to do"), "\(finished.stderr)")
        try expectTrains(config, epochs: 40, output: scratch.path("one-two"))
        try expectTrains(config, epochs: 100, output: scratch.path("one-two"), ranks: 2, resume: true)
        #expect(try relativeDifference(Checkpoint.read(scratch.path("one")), Checkpoint.read(scratch.path("one-two")), as: Double.self) <= 1e-12)
    }

    @Test("A killed rank ends the run (mpirun ends it, not the test), naming it; the last checkpoint resumes")
    func killedRank() throws {
        let scratch = try Scratch()
        let config = try scratch.config(
            from: "digits.yaml", replacing: ["epochs: 20": "epochs: 100000"], appending: "output:\n  checkpointEvery: 1\n")
        let output = scratch.path("run")
        let run = try launch(["train", config, "--output", output, "--quiet"], ranks: 2, timeout: 300) { mpirun in
            // Epoch 3's checkpoint, written by rank 0, is the one that must survive.
            guard (try? Checkpoint.read(output))?.state.progress.epoch ?? 0 >= 3, let rank1 = rank(1, of: mpirun) else { return false }
            kill(rank1, SIGKILL)
            return true
        }
        #expect(run.status != 0)
        #expect(run.stderr.contains("rank 1") && run.stderr.contains("signal 9"), "\(run.stderr)")
        // mpirun ended the run itself on the lost rank: without that the run (of 100,000 epochs)
        // goes on until the launch's 300 s bound kills it.
        #expect(!run.timedOut, "mpirun did not end the run in the \(run.secondsAfterAction) s after the kill")
        let kept = try Checkpoint.read(output)
        #expect(kept.state.progress.epoch >= 3)
        // Resumable in one process, for one more epoch.
        try expectTrains(config, epochs: kept.state.progress.epoch + 1, output: output, resume: true)
        #expect(try Checkpoint.read(output).state.progress.epoch == kept.state.progress.epoch + 1)
    }

    @Test("SIGTERM to mpirun: every rank stops after the same step and rank 0 writes a checkpoint that resumes")
    func terminatedMpirun() throws {
        let scratch = try Scratch()
        let config = try scratch.config(from: "digits.yaml", replacing: ["epochs: 20": "epochs: 100000"])
        let output = scratch.path("run")
        let run = try launch(["train", config, "--output", output], ranks: 2, timeout: 300) { mpirun in
            guard (try? String(contentsOfFile: output + "/metrics.csv", encoding: .utf8))?.split(separator: "\n").count ?? 0 > 2 else { return false }
            kill(mpirun, SIGTERM)
            return true
        }
        #expect(run.stdout.contains("stopped: checkpoint written to"), "\(run.stdout)\n\(run.stderr)")
        let saved = try Checkpoint.read(output)
        #expect(saved.state.progress.step > 0)
        let summary = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: output + "/summary.json"))) as? [String: Any]
        #expect(summary?["phase"] as? String == "stopped")
        #expect(summary?["step"] as? Int == saved.state.progress.step)
        #expect(summary?["processes"] as? Int == 2)  // the ranks that trained it
        // The stopped step is a step boundary every rank agreed on: 2 ranks go on from it.
        let next = saved.state.progress.epoch + 1
        try expectTrains(config, epochs: next, output: output, ranks: 2, resume: true)
        #expect(try Checkpoint.read(output).state.progress.epoch == next)
    }
}

// MARK: - Helpers

/// The largest difference between two checkpoints' parameters and optimizer buffers, relative to
/// the largest magnitude of the tensor it is in (‖a − b‖∞ / ‖a‖∞); the tensors must be the same.
private func relativeDifference<Scalar: TensorScalar>(_ a: LoadedCheckpoint, _ b: LoadedCheckpoint, as: Scalar.Type) throws -> Double {
    #expect(a.tensors.keys.sorted() == b.tensors.keys.sorted())
    var largest = 0.0
    for name in a.tensors.keys.sorted() where name.hasPrefix("layers.") || name.hasPrefix("optimizer.") {
        let x = try a.tensors[name]!.tensor(as: Scalar.self, source: a.path).scalars
        let y = try b.tensors[name]!.tensor(as: Scalar.self, source: b.path).scalars
        #expect(x.count == y.count, "\(name)")
        let scale = x.map { Double(abs($0)) }.max() ?? 0
        let difference = zip(x, y).map { Double(abs($0 - $1)) }.max() ?? 0
        largest = max(largest, scale == 0 ? difference : difference / scale)
    }
    return largest
}

/// A directory of the test's own, removed at the end, holding configs that point at `Data/`.
private final class Scratch {
    let url: URL
    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("neuron-mpi-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(at: url) }
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    /// A copy of `Data/<name>` with its data path made absolute, `replacing` applied and `appending` added.
    func config(from name: String, replacing: [String: String] = [:], appending: String = "") throws -> String {
        let data = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Data").standardized
        var text = try String(contentsOf: data.appendingPathComponent(name), encoding: .utf8)
        text = text.replacingOccurrences(of: "path: ", with: "path: \(data.path)/")
        for (old, new) in replacing {
            #expect(text.contains(old), "\(name) has no '\(old)'")
            text = text.replacingOccurrences(of: old, with: new)
        }
        text += appending
        let target = path(name)
        try text.write(toFile: target, atomically: true, encoding: .utf8)
        return target
    }
}

/// Trains `config` for `epochs` into `output` (resuming it when asked), in one process or under
/// mpirun with `ranks` processes, and expects exit status 0.
private func expectTrains(_ config: String, epochs: Int, output: String, ranks: Int? = nil, resume: Bool = false) throws {
    var arguments = ["train", config, "--epochs", "\(epochs)", "--output", output, "--quiet"]
    if resume { arguments += ["--resume", output] }
    let run = try launch(arguments, ranks: ranks, timeout: 300)
    #expect(run.status == 0, "\(arguments.joined(separator: " ")) on \(ranks ?? 1) process(es): \(run.stdout)\n\(run.stderr)")
}

/// The process of `rank` among mpirun's children (its environment names its rank).
private func rank(_ rank: Int, of mpirun: Int32) -> Int32? {
    guard let children = try? String(contentsOfFile: "/proc/\(mpirun)/task/\(mpirun)/children", encoding: .utf8) else { return nil }
    for child in children.split(separator: " ").compactMap({ Int32($0) }) {
        guard let environment = FileManager.default.contents(atPath: "/proc/\(child)/environ") else { continue }
        let variables = environment.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        if variables.contains("OMPI_COMM_WORLD_RANK=\(rank)") { return child }
    }
    return nil
}

/// Runs the built `neuron` with `arguments`, alone or under `mpirun -np ranks` on this machine (one
/// BLAS thread per process), output to files; calls `action` every 50 ms with the child's process id
/// until it returns true. A run still going after `timeout` seconds is killed, fails the test and
/// is returned with `timedOut` true.
///
/// Spawned with an empty signal mask: a thread of the test runner blocks SIGTERM, and a child
/// started by `Process` inherits the block, so that mpirun would never see the signal a user sends.
private func launch(
    _ arguments: [String], ranks: Int?, timeout: Double, action: ((pid_t) -> Bool)? = nil
) throws -> (status: Int32, stdout: String, stderr: String, secondsAfterAction: Double, timedOut: Bool) {
    let directory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
    let neuron = directory.appendingPathComponent("neuron").path
    // Loopback: shared memory between the ranks (`vader`), no network interface needed.
    let argv =
        ranks.map { ["/usr/bin/mpirun", "--allow-run-as-root", "--oversubscribe", "--mca", "btl", "self,vader", "-np", "\($0)", neuron] }
        ?? [neuron]
    let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("neuron-mpi-out-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: scratch) }
    let outPath = scratch.appendingPathComponent("stdout").path, errPath = scratch.appendingPathComponent("stderr").path

    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var none = sigset_t(), defaults = sigset_t()
    sigemptyset(&none)
    sigemptyset(&defaults)
    for signal in [SIGINT, SIGTERM, SIGHUP, SIGPIPE] { sigaddset(&defaults, signal) }
    posix_spawnattr_setsigmask(&attributes, &none)
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    var environment = ProcessInfo.processInfo.environment
    environment["OPENBLAS_NUM_THREADS"] = "1"
    let cArguments = (argv + arguments).map { strdup($0) } + [nil]
    let cEnvironment = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { for pointer in cArguments + cEnvironment { free(pointer) } }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, argv[0], &actions, &attributes, cArguments, cEnvironment)
    guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EIO) }

    let started = Date()
    var acted: Date? = action == nil ? started : nil
    var status: Int32 = 0
    var timedOut = false
    while waitpid(pid, &status, WNOHANG) == 0 {
        if acted == nil, action!(pid) { acted = Date() }
        if Date().timeIntervalSince(started) > timeout {
            kill(pid, SIGKILL)
            waitpid(pid, &status, 0)
            Issue.record("timed out after \(timeout) s: \((argv + arguments).joined(separator: " "))")
            timedOut = true
            break
        }
        Thread.sleep(forTimeInterval: 0.05)
    }
    let text = { (path: String) in String(decoding: FileManager.default.contents(atPath: path) ?? Data(), as: UTF8.self) }
    #expect(acted != nil, "the run ended before the test could act on it: \(text(errPath))")
    // Exit status, or minus the signal that ended it.
    let exitStatus = status & 0x7f == 0 ? (status >> 8) & 0xff : -(status & 0x7f)
    return (exitStatus, text(outPath), text(errPath), Date().timeIntervalSince(acted ?? Date()), timedOut)
}
#endif
