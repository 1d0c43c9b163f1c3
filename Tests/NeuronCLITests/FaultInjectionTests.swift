import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// SplitMix64: the trials' own seeded numbers, the same on every machine.
private struct TrialRandom {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    /// A uniform double in [0, upper).
    mutating func uniform(_ upper: Double) -> Double { Double(next() >> 11) * 0x1p-53 * upper }
}

/// When a trial's kill comes.
private enum KillMoment: CaseIterable {
    /// After a uniformly random delay.
    case random
    /// As soon as a checkpoint's temporary file is seen: written, maybe flushed, not yet renamed.
    case temporaryFile
    /// As soon as the checkpoint file changes: just after a rename.
    case renamed
}

/// `neuron train` started with its output discarded, to be killed.
private func startNeuron(_ arguments: [String]) throws -> Process {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent(
        "neuron")
    process.arguments = arguments
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    return process
}

/// The step a run directory's checkpoint is at, from its header, or nil when there is none.
private func checkpointStep(_ directory: String) -> Int? {
    guard let data = FileManager.default.contents(atPath: directory + "/checkpoint.safetensors"), data.count >= 8 else { return nil }
    let length = Int(data.prefix(8).enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) })
    guard data.count >= 8 + length,
        let header = try? JSONSerialization.jsonObject(with: data.subdata(in: 8..<8 + length)) as? [String: Any],
        let step = (header["__metadata__"] as? [String: String])?["step"]
    else { return nil }
    return Int(step)
}

@Suite("kill -9 at random moments: every run resumes to the weights of an uninterrupted one")
struct FaultInjectionTests {
    @Test("32 seeded trials of kill -9 (random delays, between write and rename, just after a rename), each resumed to byte-identical weights")
    func killAndResume() throws {
        let base = try scratchDirectory("kill")
        defer { try? FileManager.default.removeItem(atPath: base) }
        // 400 digits rows (320 to train on, 10 steps an epoch) for 20 epochs, a checkpoint every epoch:
        // long enough that most kills land between checkpoints, short enough for 32 trials.
        let config = base + "/digits.yaml"
        try """
        model: {layers: [{units: 32, activation: tanh}, {units: 10, activation: softmax}]}
        data: {kind: csv, path: \(dataDirectory)/digits.csv, labelColumn: digit, validationSplit: 0.2, limit: 400}
        optimizer: {kind: sgd, learningRate: 0.05, momentum: 0.9}
        training: {epochs: 20, batchSize: 32, seed: 7}
        output: {checkpointEvery: 1}
        """.write(toFile: config, atomically: true, encoding: .utf8)
        let totalSteps = 200
        let reference = base + "/reference"
        let started = ContinuousClock.now
        let straight = try runNeuron(["train", config, "--output", reference, "--quiet"])
        try #require(straight.status == 0, "\(straight.stderr)")
        let runTime = (ContinuousClock.now - started) / .seconds(1)
        let expected = try checkpointTensors(reference)

        var random = TrialRandom(state: 20_261_123)
        var outcomes: [String: Int] = [:]
        let trials = 32
        for trial in 0..<trials {
            let run = base + "/trial-\(trial)"
            let moment = KillMoment.allCases[trial % KillMoment.allCases.count]
            let delay = random.uniform(max(runTime, 0.05) * 1.1)
            let process = try startNeuron(["train", config, "--output", run, "--quiet"])
            let start = ContinuousClock.now
            let deadline = start + .seconds(30)
            var lastStep = checkpointStep(run)
            waiting: while process.isRunning && ContinuousClock.now < deadline {
                switch moment {
                case .random:
                    if (ContinuousClock.now - start) / .seconds(1) >= delay { break waiting }
                case .temporaryFile:
                    let names = (try? FileManager.default.contentsOfDirectory(atPath: run)) ?? []
                    // Every other such trial waits for a checkpoint to be there already: a kill between a later write and its rename.
                    if (ContinuousClock.now - start) / .seconds(1) >= delay / 2, names.contains(where: { $0.contains(".tmp-") }),
                        trial % 2 == 0 || names.contains("checkpoint.safetensors")
                    {
                        break waiting
                    }
                case .renamed:
                    let step = checkpointStep(run)
                    if (ContinuousClock.now - start) / .seconds(1) >= delay / 2, step != lastStep { break waiting }
                    lastStep = step
                }
                usleep(200)
            }
            let killed = process.isRunning
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            let leftovers = ((try? FileManager.default.contentsOfDirectory(atPath: run)) ?? []).filter { $0.contains(".tmp-") }

            // Go on: resume from whatever checkpoint the kill left, or start afresh when there is none.
            let step = checkpointStep(run)
            var outcome = killed ? "killed" : "finished before the kill"
            if step == nil {
                outcome += ", no checkpoint yet: fresh start"
                let fresh = try runNeuron(["train", config, "--output", run, "--quiet"])
                #expect(fresh.status == 0, "trial \(trial): \(fresh.stderr)")
            } else if step! < totalSteps {
                outcome += ", resumed"
                let resumed = try runNeuron(["train", config, "--resume", run, "--quiet"])
                #expect(resumed.status == 0, "trial \(trial) (\(moment), checkpoint at step \(step!)): \(resumed.stderr)")
            } else {
                outcome += ", checkpoint already final"
            }
            if !leftovers.isEmpty { outcome += ", temporary file left" }
            outcomes[outcome, default: 0] += 1
            #expect(try checkpointTensors(run) == expected, "trial \(trial) (\(moment), killed at step \(step.map(String.init) ?? "none"))")
        }
        #expect(outcomes.values.reduce(0, +) == trials)
        print("kill -9 trials: \(trials); " + outcomes.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: "; "))
    }
}
