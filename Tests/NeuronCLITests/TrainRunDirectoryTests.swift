import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The `neuron` executable beside the test bundle.
private let neuronPath = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
    .appendingPathComponent("neuron").path

/// XOR as in Data/xor.yaml but long enough to be stopped mid-run, checkpointing by time.
private func longXOR(_ directory: String) throws -> String {
    let config = directory + "/xor.yaml"
    try """
    model:
      layers:
        - {units: 4, activation: tanh}
        - {units: 1, activation: tanh}
    data: {kind: synthetic, name: xor}
    optimizer: {kind: sgd, learningRate: 0.5}
    training: {epochs: 100000000, batchSize: 4, precision: double, seed: 1}
    """.write(toFile: config, atomically: true, encoding: .utf8)
    return config
}

/// Whether process `pid` has taken over `signal` (caught or ignored), read from /proc.
private func handles(_ pid: Int32, _ signal: Int32) -> Bool {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return false }
    for line in status.split(separator: "\n") where line.hasPrefix("SigIgn:") || line.hasPrefix("SigCgt:") {
        if let mask = UInt64(line.split(separator: "\t").last ?? "", radix: 16), mask & (1 << UInt64(signal - 1)) != 0 { return true }
    }
    return false
}

/// The processor seconds process `pid` has used (user and system, all threads), read from
/// /proc; nil once it has ended.
private func processorSeconds(_ pid: Int32) -> Double? {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let close = stat.lastIndex(of: ")")
    else { return nil }
    // After the command's name in parentheses: state is field 3, utime and stime fields 14 and 15.
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// `neuron ARGUMENTS` started in the background, its standard error to `base/stderr` (read back
/// with the URL returned), its output discarded.
private func startNeuron(_ arguments: [String], base: String, environment: [String: String] = [:]) throws -> (Process, stderr: URL) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: neuronPath)
    process.arguments = arguments
    if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
    let errURL = URL(fileURLWithPath: base + "/stderr")
    let err = try emptyFileForWriting(errURL)
    process.standardError = err
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    try err.close()
    return (process, errURL)
}

@Suite("neuron train: signals, the run directory's lock, resuming with other settings, unusable outputs")
struct TrainRunDirectoryTests {
    @Test(
        "SIGTERM and SIGHUP stop a run as Ctrl-C does: a checkpoint, the resume hint, exit 128 + the signal",
        arguments: [(SIGTERM, Int32(143)), (SIGHUP, Int32(129))])
    func stopSignals(signal: Int32, status: Int32) throws {
        let base = try scratchDirectory("signal")
        let out = base + "/run"
        let run = try runNeuron(
            ["train", try longXOR(base), "--output", out, "--json"], interruptWhen: { $0.contains("\"phase\":\"running\"") }, signal: signal)
        #expect(run.status == status, "status \(run.status): \(run.stderr)")
        #expect(try summary(out).phase == "stopped")
        #expect(run.stdout.contains("\"checkpoint\":\"\(out)/checkpoint.safetensors\""), "\(run.stdout.suffix(500))")
        // The checkpoint resumes.
        let resumed = try runNeuron(["train", try longXOR(base), "--resume", out, "--epochs", "\(try summary(out).epoch + 3)", "--quiet"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
    }

    @Test("A signal before training begins ends the process at once with a message and the same status")
    func earlySignal() throws {
        let base = try scratchDirectory("early")
        let (process, errURL) = try startNeuron(["train", try longXOR(base), "--output", base + "/run", "--quiet"], base: base)
        // As soon as the handler is in place (the first thing main does), before the config is read.
        let deadline = Date().addingTimeInterval(20)
        while !handles(process.processIdentifier, SIGTERM) && Date() < deadline && process.isRunning { usleep(100) }
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        let stderr = try String(contentsOf: errURL, encoding: .utf8)
        #expect(process.terminationReason == .exit && process.terminationStatus == 143, "\(process.terminationReason) \(process.terminationStatus)")
        // Either before the run began, or the run stopped with its checkpoint: never a silent death.
        #expect(stderr.contains("stopped by SIGTERM") || (try? summary(base + "/run").phase) == "stopped", "\(stderr)")
    }

    @Test("A stop signal inside a step that outlasts the grace period ends the process, saying so, with the signal's status")
    func longStep() throws {
        let base = try scratchDirectory("long-step")
        // A block of 100,000 positions: one step is minutes of attention in a debug build.
        try String(repeating: "to be, or not to be: that is the question.\n", count: 3_000).write(
            toFile: base + "/doc.txt", atomically: true, encoding: .utf8)
        try """
        model: {transformer: {blocks: 1, heads: 2, features: 16}}
        data: {kind: text, unit: document, path: doc.txt, blockSize: 100000}
        training: {steps: 2, evaluateEvery: 1, batchSize: 1, seed: 1}
        """.write(toFile: base + "/long.yaml", atomically: true, encoding: .utf8)
        let (process, errURL) = try startNeuron(
            ["train", base + "/long.yaml", "--output", base + "/run", "--quiet"], base: base, environment: ["NEURON_STOP_GRACE_SECONDS": "2"])
        // Training has begun once the run directory holds its lock; then the first step is under way.
        let started = Date().addingTimeInterval(60)
        while !FileManager.default.fileExists(atPath: base + "/run/.lock") && Date() < started && process.isRunning { usleep(10_000) }
        // What follows the lock before the step begins takes milliseconds of processor time; two
        // seconds of it more are inside the step, however busy the machine (a wait by the wall
        // clock let the signal land before the step on a loaded machine, a stop between steps).
        let lockedAt = processorSeconds(process.processIdentifier) ?? 0
        while (processorSeconds(process.processIdentifier) ?? .infinity) < lockedAt + 2 && Date() < started { usleep(20_000) }
        kill(process.processIdentifier, SIGTERM)
        // A bound on a hang, not a timing: without the grace period the step runs on for minutes.
        let hang = Date().addingTimeInterval(120)
        while process.isRunning && Date() < hang { usleep(50_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        let stderr = try String(contentsOf: errURL, encoding: .utf8)
        #expect(
            process.terminationReason == .exit && process.terminationStatus == 143,
            "\(process.terminationReason) \(process.terminationStatus) \(stderr)")
        #expect(stderr.contains("the step in progress did not end within 2 s of SIGTERM"), "\(stderr)")
    }

    @Test("Two trainings started together into one --output: one trains, the other exits 2 saying why")
    func concurrentRuns() throws {
        let base = try scratchDirectory("lock")
        let out = base + "/run"
        let results = Mutex<[(Int32, String)]>([])
        DispatchQueue.concurrentPerform(iterations: 2) { _ in
            let run = try? runNeuron(["train", dataDirectory + "/xor.yaml", "--output", out, "--quiet"])
            results.withLock { $0.append((run?.status ?? -1, run?.stderr ?? "")) }
        }
        let all = results.withLock { $0 }.sorted { $0.0 < $1.0 }
        #expect(all.map(\.0) == [0, 2], "\(all)")
        let loser = all.last?.1 ?? ""
        #expect(loser.contains("another neuron process is training into this run directory") || loser.contains("already holds a run"), "\(loser)")
        #expect(try summary(out).phase == "finished")
    }

    @Test("Resuming: a changed batch size is refused, a changed learning rate said; a finished run has nothing to do")
    func resumeSettings() throws {
        let base = try scratchDirectory("settings")
        let out = base + "/run"
        #expect(try runNeuron(["train", dataDirectory + "/xor.yaml", "--output", out, "--epochs", "5", "--quiet"]).status == 0)
        let before = try checkpointTensors(out)
        let batch = try runNeuron(["train", dataDirectory + "/xor.yaml", "--resume", out, "--epochs", "9", "--batch-size", "2", "--quiet"])
        #expect(batch.status == 2 && batch.stderr.contains("training.batchSize is 2 but the run was trained with 4"), "\(batch.stderr)")
        #expect(try checkpointTensors(out) == before)
        // Finished, and no larger --epochs: nothing happens, and no directory is made.
        let elsewhere = base + "/elsewhere"
        let done = try runNeuron(["train", dataDirectory + "/xor.yaml", "--resume", out, "--epochs", "5", "--output", elsewhere, "--quiet"])
        #expect(done.status == 0 && done.stderr.contains("already finished its 5 epochs; nothing to do"), "\(done.stderr)")
        #expect(!FileManager.default.fileExists(atPath: elsewhere))
        let rate = try runNeuron(["train", dataDirectory + "/xor.yaml", "--resume", out, "--epochs", "9", "--learning-rate", "0.25", "--quiet"])
        #expect(rate.status == 0, "\(rate.stderr)")
        #expect(rate.stderr == "neuron: optimizer.learningRate changed from 0.5 to 0.25\n")
        #expect(try summary(out).epoch == 9)
    }

    @Test(
        "An output that cannot be a run directory: exit 2 and one line naming it, no Foundation dump",
        arguments: ["file", "/dev/null", "/proc/x", "long"])
    func unusableOutput(kind: String) throws {
        let base = try scratchDirectory("output")
        let out: String
        switch kind {
        case "file":
            out = base + "/file"
            try Data().write(to: URL(fileURLWithPath: out))
        case "long": out = base + "/" + String(repeating: "x", count: 300)
        default: out = kind
        }
        let run = try runNeuron(["train", dataDirectory + "/xor.yaml", "--output", out, "--quiet"])
        #expect(run.status == 2, "\(run.stderr)")
        #expect(
            run.stderr.hasPrefix("neuron: \(out): cannot use as the run directory") && run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
        #expect(!run.stderr.contains("NSCocoaErrorDomain"))
    }

    @Test("Temporary files a killed run left behind are removed when the directory is next trained in")
    func staleTemporaryFiles() throws {
        let base = try scratchDirectory("stale")
        let out = base + "/run"
        #expect(try runNeuron(["train", dataDirectory + "/xor.yaml", "--output", out, "--epochs", "3", "--quiet"]).status == 0)
        try Data([1]).write(to: URL(fileURLWithPath: out + "/.checkpoint.json.tmp-2147483646-4"))
        let resumed = try runNeuron(["train", dataDirectory + "/xor.yaml", "--resume", out, "--epochs", "4", "--quiet"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: out).filter { $0.contains(".tmp-") }.isEmpty)
    }

    @Test(
        "A full disk (a 128 KB tmpfs) stops the run at the first failed write: one message, exit 1, the last checkpoint resumable",
        .enabled(if: tmpfsMountable, "needs the privilege to mount a tmpfs"))
    func diskFull() throws {
        let base = try scratchDirectory("full")
        let mountPoint = base + "/disk"
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        let mount = try runProcess("/bin/mount", ["-t", "tmpfs", "-o", "size=128k", "tmpfs", mountPoint])
        try #require(mount == 0, "mounting a tmpfs failed")
        defer { _ = try? runProcess("/bin/umount", [mountPoint]) }
        let config = base + "/xor.yaml"
        try (try String(contentsOfFile: try longXOR(base), encoding: .utf8)).replacingOccurrences(of: "100000000", with: "3000").replacingOccurrences(
            of: "units: 4,", with: "units: 64,"
        )
        .appending("\noutput: {checkpointEvery: 1}\n").write(toFile: config, atomically: true, encoding: .utf8)
        let run = try runNeuron(["train", config, "--output", mountPoint + "/run", "--quiet"])
        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.stderr.contains("No space left on device") && run.stderr.contains("make room, then resume with"), "\(run.stderr)")
        #expect(run.stderr.split(separator: "\n").count == 2, "\(run.stderr)")
        // With room again, the run resumes from the checkpoint it kept (when the disk took one
        // before it filled: the first checkpoint may already be too large).
        guard run.stderr.contains("keeps the checkpoint of epoch") else { return }
        #expect(try runProcess("/bin/mount", ["-o", "remount,size=2m", mountPoint]) == 0)
        // The checkpoint is one file, written in one rename: the disk filling cannot tear it.
        let resumed = try runNeuron(["train", config, "--resume", mountPoint + "/run", "--quiet"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
    }

    @Test(
        "--resume on a read-only run directory fails before training, naming the directory and the reason",
        .enabled(if: tmpfsMountable, "needs the privilege to mount a tmpfs"))
    func readOnlyResume() throws {
        let base = try scratchDirectory("read-only")
        let mountPoint = base + "/disk"
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        try #require(try runProcess("/bin/mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", mountPoint]) == 0, "mounting a tmpfs failed")
        defer { _ = try? runProcess("/bin/umount", [mountPoint]) }
        let out = mountPoint + "/run"
        #expect(try runNeuron(["train", dataDirectory + "/xor.yaml", "--output", out, "--epochs", "5", "--quiet"]).status == 0)
        #expect(try runProcess("/bin/mount", ["-o", "remount,ro", mountPoint]) == 0)
        let resumed = try runNeuron(["train", dataDirectory + "/xor.yaml", "--resume", out, "--epochs", "9", "--quiet"])
        #expect(resumed.status == 2 && resumed.stdout.isEmpty, "\(resumed.stdout)")
        #expect(resumed.stderr == "neuron: \(out): cannot write to the run directory (\(out)/.lock: Read-only file system)\n", "\(resumed.stderr)")
    }
}

/// Runs `executable` with `arguments`, output discarded; its exit status.
/// Whether this machine lets the tests mount a tmpfs (root, with the privilege to mount).
let tmpfsMountable: Bool = {
    let probe = FileManager.default.temporaryDirectory.appendingPathComponent("neuron-mount-probe-\(getpid())").path
    guard (try? FileManager.default.createDirectory(atPath: probe, withIntermediateDirectories: true)) != nil else { return false }
    defer { try? FileManager.default.removeItem(atPath: probe) }
    guard (try? runProcess("/bin/mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", probe])) == 0 else { return false }
    _ = try? runProcess("/bin/umount", [probe])
    return true
}()

private func runProcess(_ executable: String, _ arguments: [String]) throws -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    return process.terminationStatus
}
