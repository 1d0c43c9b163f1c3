// Both of OpenBLAS's kernel sets from one command. OpenBLAS picks its kernels when it loads
// (`OPENBLAS_CORETYPE` pins a family; unset, it picks the CPU's own), so a process measures one
// set. For both, the runner runs itself twice, native kernels then pinned ones, each child with its
// peers under one environment (NumPy's bundled OpenBLAS reads the same variable; PyTorch's MKL and
// JAX's XLA pick their kernels by CPU either way), then sets the two runs' figures side by side.
import ArgumentParser
import Foundation
import NeuronTraining

/// Which of OpenBLAS's kernel sets a run measures.
enum KernelSet: String, ExpressibleByArgument, CaseIterable, Encodable {
    /// The kernels OpenBLAS picks for this CPU, as on a user's machine: the pinning variables unset.
    case native
    /// The kernels the environment pins with `OPENBLAS_CORETYPE`.
    case pinned
    /// Native, then pinned, each in a process of its own, then a summary of both.
    case both

    /// The variable that pins a kernel family.
    static let pin = "OPENBLAS_CORETYPE"
    /// The variables the native set runs without: the family and the cache size tuned for it.
    static let pinning = [pin, "OPENBLAS_L2_SIZE"]

    /// The environment's pinning variables as set, e.g. `OPENBLAS_CORETYPE=Haswell OPENBLAS_L2_SIZE=512`, or
    /// `OPENBLAS_CORETYPE unset`.
    static var environmentDescription: String {
        let environment = ProcessInfo.processInfo.environment
        let set = pinning.compactMap { name in environment[name].map { "\(name)=\($0)" } }
        return environment[pin] == nil ? "\(pin) unset" : set.joined(separator: " ")
    }

    /// Whether the environment pins the kernels.
    static var pinnedHere: Bool { ProcessInfo.processInfo.environment[pin] != nil }

    /// The environment a child measuring this set runs in.
    var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        if self == .native { for name in Self.pinning { environment[name] = nil } }
        return environment
    }

    /// How the set's environment reads in headings and errors.
    var environmentDescription: String {
        self == .native ? "\(Self.pinning.joined(separator: " and ")) unset" : Self.environmentDescription
    }
}

extension Benchmarks {
    /// The exit status of a run whose kernel self-check failed, for the run that started it to name it as such.
    static let kernelMismatchStatus: Int32 = 3

    /// The kernel sets to measure in child processes, in order; empty when this process's own
    /// kernels are the ones asked for. The default is both where the environment pins the kernels,
    /// except for `--quick` (CI's smoke run, which stays on the environment's kernels and under a
    /// minute), `--mpi` (whose ranks `mpirun` starts) and `scaling` (which writes one CSV).
    var childKernelSets: [KernelSet] {
        let pinnedHere = KernelSet.pinnedHere
        let bothByDefault = pinnedHere && !quick && !mpi && !workloads.contains("scaling")
        switch kernels ?? (bothByDefault ? .both : (pinnedHere ? .pinned : .native)) {
        case .both: return [.native, .pinned]
        case .native: return pinnedHere ? [.native] : []
        case .pinned: return []  // validate() makes sure the environment pins them
        }
    }

    /// Checks `--kernels` against the environment and the other options.
    func validateKernelSets() throws {
        guard let kernels, kernels != .native else { return }
        guard KernelSet.pinnedHere else {
            throw ValidationError(
                "--kernels \(kernels.rawValue) needs \(KernelSet.pin) set in the environment (it names the pinned kernels, e.g. \(KernelSet.pin)=Haswell); without it OpenBLAS runs its native kernels: use --kernels native"
            )
        }
        if kernels == .both && mpi { throw ValidationError("--kernels both cannot run under --mpi: choose native or pinned") }
        if kernels == .both && workloads.contains("scaling") {
            throw ValidationError("--kernels both cannot run 'scaling' (both runs would write one CSV): choose native or pinned")
        }
    }

    /// Runs this command again once per kernel set, with the same arguments and workloads, each
    /// child printing its own tables under a heading; with two sets, then prints the summary of
    /// both and writes the combined JSON if `--json` was given.
    /// - Throws: ``KernelSetFailure`` for the first child that fails (the next is not run).
    func runKernelSets(_ sets: [KernelSet]) throws {
        let arguments = Self.argumentsWithout(["--kernels", "--json"], in: Array(CommandLine.arguments.dropFirst()))
        var reports: [(set: KernelSet, json: Data)] = []
        for set in sets {
            // One child: its JSON is this run's. Two: each writes its own, for the summary.
            let file =
                sets.count == 1
                ? json
                : FileManager.default.temporaryDirectory.appendingPathComponent(
                    "neuron-bench-kernels-\(ProcessInfo.processInfo.processIdentifier)-\(set.rawValue).json"
                ).path
            print("━━ \(set.rawValue.capitalized) kernels (\(set.environmentDescription), for Neuron and its peers) ━━\n")
            try Self.runChild(set, arguments: arguments + ["--kernels", set.rawValue] + (file.map { ["--json", $0] } ?? []))
            guard sets.count > 1, let file else { continue }
            reports.append((set, try Data(contentsOf: URL(fileURLWithPath: file))))
            try? FileManager.default.removeItem(atPath: file)
        }
        guard sets.count > 1 else { return }
        let summary = try KernelSetSummary(reports)
        print(summary.printed)
        if let json {
            var combined = Data("{\n\"summary\": ".utf8)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
            combined += try encoder.encode(summary)
            for report in reports { combined += Data(",\n\"\(report.set.rawValue)\": ".utf8) + report.json }
            combined += Data("\n}\n".utf8)
            try AtomicFile.write(Array(combined), to: json)
            print("\nResults of both kernel sets written to \(json)")
        }
    }

    /// `arguments` without the given options and their values (`--name value` or `--name=value`).
    static func argumentsWithout(_ options: Set<String>, in arguments: [String]) -> [String] {
        var kept: [String] = []
        var skipValue = false
        for argument in arguments {
            if skipValue {
                skipValue = false
            } else if options.contains(argument) {
                skipValue = true
            } else if !options.contains(where: { argument.hasPrefix($0 + "=") }) {
                kept.append(argument)
            }
        }
        return kept
    }

    /// Runs this executable with `arguments` in `set`'s environment: its standard output is ours
    /// (its tables appear as it prints them), its standard error is passed on as it comes, and
    /// its end kept for the error.
    static func runChild(_ set: KernelSet, arguments: [String]) throws {
        fflush(nil)  // what this process printed comes before the child's lines
        let process = Process()
        process.executableURL = Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])
        process.arguments = arguments
        process.environment = set.environment
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        var tail = Data()
        while true {
            let chunk = errors.fileHandleForReading.availableData  // waits for the child's next lines; empty when it ends
            if chunk.isEmpty { break }
            FileHandle.standardError.write(chunk)
            tail = (tail + chunk).suffix(4096)
        }
        process.waitUntilExit()
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            throw KernelSetFailure(
                set: set, signal: process.terminationReason == .uncaughtSignal ? process.terminationStatus : nil,
                status: process.terminationStatus, message: String(decoding: tail, as: UTF8.self))
        }
    }
}

/// A kernel set's run that failed: named with the set and its environment.
struct KernelSetFailure: Error, CustomStringConvertible {
    var set: KernelSet
    /// The signal that killed the child, if one did (an illegal instruction: kernels this CPU lacks).
    var signal: Int32?
    var status: Int32
    /// The end of the child's standard error.
    var message: String

    /// The child's own error: its last `Error:` line on, or its last lines.
    var reason: String {
        let text = message.trimmingCharacters(in: .whitespacesAndNewlines)
        if let error = text.range(of: "Error: ", options: .backwards) { return String(text[error.upperBound...]) }
        return text.split(separator: "\n").suffix(3).joined(separator: "\n")
    }

    var description: String {
        let run = "the \(set.rawValue) kernels' run (\(set.environmentDescription))"
        if signal == SIGILL {
            return "\(run) died of an illegal instruction: the kernels OpenBLAS chose there may not run on this CPU; "
                + "pin a family this CPU runs with \(KernelSet.pin) (e.g. Haswell) and measure with --kernels pinned"
        }
        if let signal { return "\(run) was killed by signal \(signal)" }
        if status == Benchmarks.kernelMismatchStatus {
            return "\(run) failed the kernel self-check: \(reason)"
                + (set == .native ? "\nMeasure the pinned kernels alone with --kernels pinned." : "")
        }
        return "\(run) failed (status \(status)): \(reason)"
    }
}

/// Each workload's Neuron median and best peer, native kernels beside pinned ones, from the two
/// children's JSON reports.
struct KernelSetSummary: Encodable {
    /// One kernel set's figures for a workload. Seconds per step (W1–W12) or to the target (F1–F4);
    /// nil where Neuron did not reach the target or no peer was timed.
    struct Side: Encodable {
        var neuron: Double?
        var bestPeer: String?
        var bestPeerSeconds: Double?
        /// The best peer's seconds over Neuron's: above 1, Neuron is faster.
        var ratio: Double?
    }
    struct Row: Encodable {
        var id: String
        var sides: [String: Side]
    }
    struct Kernels: Encodable {
        var name: String
        var blas: String
        var environment: String
        var ceiling: Double?
    }
    var sets: [Kernels]
    var rows: [Row]

    init(_ reports: [(set: KernelSet, json: Data)]) throws {
        let decoder = JSONDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        sets = []
        rows = []
        for (set, json) in reports {
            let report = try decoder.decode(ChildReport.self, from: json)
            sets.append(Kernels(name: set.rawValue, blas: report.blas, environment: report.kernelEnvironment ?? "?", ceiling: report.ceiling?.best))
            for (id, side) in report.sides {
                if let i = rows.firstIndex(where: { $0.id == id }) {
                    rows[i].sides[set.rawValue] = side
                } else {
                    rows.append(Row(id: id, sides: [set.rawValue: side]))
                }
            }
        }
    }

    /// The summary table: per workload, Neuron, the best peer and their ratio under each set (the
    /// peers' columns when any peer was timed), and how much faster Neuron runs on the first set's
    /// kernels than on the second's.
    var printed: String {
        let names = sets.map(\.name)
        let withPeers = rows.contains { $0.sides.values.contains { $0.bestPeer != nil } }
        var lines = [
            "━━ Both kernel sets ━━\n",
            "Medians per step (F1–F5: training time to the target)\(withPeers ? "; best peer / Neuron > 1 means Neuron is faster" : "")",
        ]
        for set in sets {
            let ceiling = set.ceiling.map { String(format: ", sgemm ceiling %.1f GFLOP/s", $0) } ?? ""
            lines.append("  \(set.name): \(set.blas) (\(set.environment))\(ceiling)")
        }
        var header = [""]
        for name in names { header += ["Neuron, \(name)"] + (withPeers ? ["best peer, \(name)", "ratio"] : []) }
        if names.count == 2 { header.append("Neuron \(names[1]) / \(names[0])") }
        var cells = [header]
        for row in rows {
            var cell = [row.id]
            for name in names {
                let side = row.sides[name]
                cell.append(side.map { $0.neuron.map(format) ?? "not reached" } ?? "–")
                guard withPeers else { continue }
                cell += [
                    side?.bestPeer.map { "\($0) \(format(side?.bestPeerSeconds ?? .nan))" } ?? "–",
                    side?.ratio.map { String(format: "%.2f×", $0) } ?? "–",
                ]
            }
            if names.count == 2, let first = row.sides[names[0]]?.neuron, let second = row.sides[names[1]]?.neuron {
                cell.append(String(format: "%.2f×", second / first))
            }
            cells.append(cell)
        }
        let body = rows.isEmpty ? "  (no workload of W1–W12 or F1–F4 was run: nothing to set side by side)" : table(cells)
        return (lines + ["", body]).joined(separator: "\n")
    }
}

/// What the summary reads of a child's JSON report: `Report`'s fields of the same names.
struct ChildReport: Decodable {
    struct Ceiling: Decodable { var best: Double }
    struct StepPeer: Decodable {
        var checked: Bool
        var timing: Timing?
    }
    /// W1–W6 (`workloads`), W7, W8 and W9–W12.
    struct Step: Decodable {
        var id: String?
        var timing: Timing?
        var peers: [String: StepPeer]?
    }
    struct RunPeer: Decodable {
        var seconds: Double?
        var reached: Bool?
    }
    /// F1–F4.
    struct Run: Decodable {
        var neuronSeconds: Double
        var neuronReached: Bool
        var peers: [String: RunPeer]?
    }
    var blas: String
    var kernelEnvironment: String?
    var ceiling: Ceiling?
    var workloads: [Step]?
    var convolution: Step?
    var recurrent: Step?
    var transformers: [Step]?
    var fashion: Run?
    var fashionCNN: Run?
    var words: Run?
    var transformerWords: Run?
    var shakespeare: Run?

    /// The peers' display names by their JSON key.
    static let peerNames = Dictionary(
        (PeerSpec.steps + PeerSpec.convolution + PeerSpec.recurrent + PeerSpec.transformer).map { ($0.name, $0.column) }
            + [("numpy", "NumPy"), ("torch", "PyTorch"), ("jax", "JAX")],
        uniquingKeysWith: { first, _ in first })

    /// Each workload the report has, in the order the runner runs them.
    var sides: [(id: String, side: KernelSetSummary.Side)] {
        var steps = (workloads ?? []).map { ($0.id ?? "?", $0) }
        steps += [("W7", convolution), ("W8", recurrent)].compactMap { id, step in step.map { (id, $0) } }
        steps += (transformers ?? []).map { ($0.id ?? "?", $0) }
        var result = steps.map { id, step in
            let neuron = step.timing?.median
            let timed = (step.peers ?? [:]).compactMap { name, peer in
                peer.checked ? peer.timing.map { (name, $0.median) } : nil
            }.filter { $0.1.isFinite }
            return (id, Self.side(neuron: neuron, peers: timed))
        }
        result += [("F1", fashion), ("F2", fashionCNN), ("F3", words), ("F4", transformerWords), ("F5", shakespeare)].compactMap { id, run in
            run.map { run in
                let reached = (run.peers ?? [:]).compactMap { name, peer in peer.reached == true ? peer.seconds.map { (name, $0) } : nil }
                return (id, Self.side(neuron: run.neuronReached ? run.neuronSeconds : nil, peers: reached))
            }
        }
        return result
    }

    /// Neuron's seconds and the fastest of `peers` (name, seconds).
    static func side(neuron: Double?, peers: [(String, Double)]) -> KernelSetSummary.Side {
        let best = peers.min { $0.1 < $1.1 }
        return KernelSetSummary.Side(
            neuron: neuron, bestPeer: best.map { peerNames[$0.0] ?? $0.0 }, bestPeerSeconds: best?.1,
            ratio: best.flatMap { best in neuron.map { best.1 / $0 } })
    }
}
