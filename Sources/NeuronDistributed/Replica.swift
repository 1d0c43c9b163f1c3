// What the processes other than rank 0 do: train their replica in step with the others, silently.
// Rank 0 alone shows progress and writes the run directory, from its own replica, which holds the
// same numbers.
import Foundation
import NeuronCore
import NeuronTraining

/// How a replica's training ended.
public enum ReplicaEnd: Sendable, Equatable {
    /// Every planned step taken.
    case finished
    /// The processes agreed to stop.
    case stopped
    /// The summed loss was not finite (every process sees the same sum, and stops at the same step).
    case diverged
}

extension ProcessGroup {
    /// Trains `run`'s engine (joined to this group) on this process's share of every batch until
    /// every planned step is taken, the processes agree to stop, or the loss diverges; writes nothing.
    /// - Parameters:
    ///   - run: the run, its engine joined to this group.
    ///   - stopAsked: whether this process was asked to stop (a signal), read at each step boundary.
    public func trainReplica(_ run: Run, stopAsked: () -> Bool) -> ReplicaEnd {
        func train<Engine: TrainingEngine>(_ start: Engine) -> ReplicaEnd {
            var engine = start
            while !engine.isFinished {
                if agreesToStop(stopAsked()) { return .stopped }
                guard engine.step().isFinite else { return .diverged }
            }
            return .finished
        }
        return train(run.engine)
    }

    /// A fingerprint of what decides the run's numbers besides the weights rank 0 hands out: the
    /// config, the network, the data's shape and statistics, and where training stands. Equal
    /// fingerprints on every process mean they step through the same batches.
    public static func fingerprint(of run: Run) -> UInt64 {
        // JSON with sorted keys: a dictionary's own order differs from process to process.
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        func json(_ value: some Encodable) -> String { String(decoding: (try? encoder.encode(value)) ?? Data(), as: UTF8.self) }
        func describe<Engine: TrainingEngine>(_ engine: Engine) -> String {
            let point = engine.resumePoint()
            return [
                json(run.config), engine.title, "\(engine.totalSteps)", json(point.featureNames), json(point.classNames),
                json(run.preprocessing), json(point.position),
            ].joined(separator: "\n")
        }
        // FNV-1a, 64-bit: the same on every process (Swift's Hasher is seeded per process).
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in describe(run.engine).utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        return hash
    }
}
