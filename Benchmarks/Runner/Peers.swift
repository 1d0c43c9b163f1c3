// The peers a user would otherwise pick, run as separate processes from Benchmarks/peers/ with
// the Python of the virtual environment that Benchmarks/peers/setup.sh makes.
import Foundation
import NeuronCore
import NeuronTraining

/// What a peer script prints (one JSON line).
struct PeerResult: Decodable {
    var peer: String
    var version: String
    var threads: Int
    var checkLosses: [Double]?
    var stepSeconds: [Double]?
    /// Bytes resident after the libraries loaded, before the model was built, and at the process's
    /// peak (`getrusage`'s `ru_maxrss`): the GPT peers (W9–W12).
    var rssBefore: Int?
    var peakRSS: Int?
    // F1, F2, F3
    var reached: Bool?
    var epochs: Int?
    var trainSeconds: Double?
    var testAccuracies: [Double]?
    var testLosses: [Double]?
    // F5
    var validationLosses: [Double]?
    var trainingLosses: [Double]?
    var secondsAfter: [Double]?
}

/// One peer row of the workload table: a script and its arguments.
struct PeerSpec: Sendable {
    /// The key in the JSON report (what the script prints as `peer`).
    var name: String
    /// The table's column heading.
    var column: String
    var script: String
    var arguments: [String] = []

    /// The W1–W6 peers, in the table's order.
    static let steps: [PeerSpec] = [
        PeerSpec(name: "numpy", column: "NumPy", script: "numpy_peer.py"),
        PeerSpec(name: "torch", column: "PyTorch", script: "torch_peer.py"),
        PeerSpec(name: "torch.compile", column: "torch.compile", script: "torch_peer.py", arguments: ["--compile"]),
        PeerSpec(name: "jax", column: "JAX (jit)", script: "jax_peer.py"),
    ]

    /// The W7 peers: the same CNN in `nn.Conv2d` (eager and compiled) and `lax.conv` (jit).
    static let convolution: [PeerSpec] = [
        PeerSpec(name: "torch", column: "PyTorch", script: "torch_cnn.py"),
        PeerSpec(name: "torch.compile", column: "torch.compile", script: "torch_cnn.py", arguments: ["--compile"]),
        PeerSpec(name: "jax", column: "JAX (jit)", script: "jax_cnn.py"),
    ]

    /// The W8 peers: the same character GRU in `nn.GRU` (eager and compiled) and `lax.scan` (jit).
    static let recurrent: [PeerSpec] = [
        PeerSpec(name: "torch", column: "PyTorch", script: "torch_gru.py"),
        PeerSpec(name: "torch.compile", column: "torch.compile", script: "torch_gru.py", arguments: ["--compile"]),
        PeerSpec(name: "jax", column: "JAX (jit)", script: "jax_gru.py"),
    ]

    /// The W9–W12 peers: the same GPT in `torch.nn` (eager, and its whole step compiled) and
    /// in `jax.numpy` (the whole step in one jit).
    static let transformer: [PeerSpec] = [
        PeerSpec(name: "torch", column: "PyTorch", script: "torch_gpt.py"),
        PeerSpec(name: "torch.compile", column: "torch.compile", script: "torch_gpt.py", arguments: ["--compile"]),
        PeerSpec(name: "jax", column: "JAX (jit)", script: "jax_gpt.py"),
    ]
}

struct PeerError: Error, CustomStringConvertible {
    var description: String
}

struct Peers {
    /// The scripts' folder, next to this runner's sources.
    static let scripts = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../peers").standardized.path
    /// The virtual environment's Python.
    let python: String
    let threads: Int
    /// Whether the PyTorch scripts run under `torch.autocast("cpu", bfloat16)` (`--autocast`), against bf16 products.
    var autocast = false

    /// The peers' Python, or an error saying how to set it up.
    init(threads: Int, autocast: Bool = false) throws {
        let venv =
            ProcessInfo.processInfo.environment["NEURON_PEERS_VENV"]
            ?? (NSHomeDirectory() as NSString).appendingPathComponent(".cache/neuron-peers")
        python = (venv as NSString).appendingPathComponent("bin/python3")
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw PeerError(description: "no peers' Python at \(python): run Benchmarks/peers/setup.sh first (or set NEURON_PEERS_VENV)")
        }
        self.threads = threads
        self.autocast = autocast
    }

    /// Runs `script` with `arguments` in its own process and decodes its JSON line as `Result`.
    func run<Result: Decodable>(_ script: String, _ arguments: [String], as _: Result.Type = PeerResult.self) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments =
            [(Self.scripts as NSString).appendingPathComponent(script)] + arguments + ["--threads", "\(threads)"]
            + (autocast && script.hasPrefix("torch_") ? ["--autocast"] : [])
        var environment = ProcessInfo.processInfo.environment
        for name in ["OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"] { environment[name] = "\(threads)" }
        process.environment = environment
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let output = out.fileHandleForReading.readDataToEndOfFile()
        let errors = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0, let line = String(decoding: output, as: UTF8.self).split(separator: "\n").last else {
            throw PeerError(
                description:
                    "\(script) \(arguments.joined(separator: " ")) failed (\(process.terminationStatus)): \(String(decoding: errors, as: UTF8.self).suffix(500))"
            )
        }
        do {
            return try JSONDecoder().decode(Result.self, from: Data(line.utf8))
        } catch {
            throw PeerError(description: "\(script) printed no result: \(line.prefix(300))")
        }
    }
}

extension Benchmarks {
    /// What ``againstPeers(_:specs:checkLosses:tolerance:peerSteps:writeFile:time:)`` measured.
    struct PeerRounds {
        /// Our per-step seconds, every round's blocks.
        var seconds: [Double] = []
        /// Our heap allocations per step, from the last round.
        var allocationsPerStep = 0.0
        /// By the peer's name; a peer that failed or disagreed is there, unchecked and untimed.
        var peers: [String: Report.PeerTiming] = [:]
    }

    /// One step workload against its peers (W7–W12): with `--peers`, the exchange file `writeFile`
    /// writes into a fresh folder, each peer run once to check its losses of the first steps
    /// against `checkLosses` (within `tolerance`, relative), a peer that fails, disagrees or runs
    /// on other threads than ours left untimed; then ours (`time`) and each checked peer's
    /// `peerSteps` steps, in interleaved rounds, so that a noisy phase of the machine hits
    /// everyone alike. The exchange file is deleted when this returns or throws.
    func againstPeers(
        _ id: String, specs: [PeerSpec], checkLosses: [Double], tolerance: Double, peerSteps: Int,
        writeFile: (_ directory: String) throws -> String, time: () throws -> (seconds: [Double], allocationsPerStep: Double)
    ) throws -> PeerRounds {
        var result = PeerRounds()
        var runner: Peers?
        var file = ""
        // The exchange file (W12's is 43 MB) and, once empty, this process's directory go when this
        // returns or throws: runs must not pile them up in the temporary directory.
        defer {
            if !file.isEmpty {
                try? FileManager.default.removeItem(atPath: file)
                rmdir((file as NSString).deletingLastPathComponent)
            }
        }
        if peers {
            runner = try Peers(threads: threads)
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("neuron-bench-\(ProcessInfo.processInfo.processIdentifier)")
                .path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            file = try writeFile(directory)
            for peer in specs {
                do {
                    let check = try runner!.run(peer.script, ["--file", file, "--warmup", "0", "--steps", "1"] + peer.arguments)
                    // Every engine on the same threads: a peer on its own default would time another machine.
                    let sameThreads = check.threads == threads
                    let ok = sameThreads && agree(check.checkLosses ?? [], checkLosses, tolerance: tolerance)
                    result.peers[peer.name] = Report.PeerTiming(version: check.version, checked: ok, seconds: [], checkLosses: check.checkLosses)
                    if !sameThreads { print("  \(id) \(peer.name): ran on \(check.threads) threads, not \(threads); not timed") }
                    if sameThreads && !ok {
                        print("  \(id) \(peer.name): losses \(check.checkLosses ?? []) disagree with ours \(checkLosses); not timed")
                    }
                } catch {
                    print("  \(id) \(peer.name) failed its check: \(error)")
                    result.peers[peer.name] = Report.PeerTiming(version: "?", checked: false, seconds: [])
                }
            }
        }
        let rounds = self.rounds ?? (quick ? 1 : (peers ? 3 : 1))
        for _ in 1...rounds {
            let timed = try time()
            result.seconds += timed.seconds
            result.allocationsPerStep = timed.allocationsPerStep
            guard let runner else { continue }
            for peer in specs where result.peers[peer.name]!.checked {
                do {
                    let timed = try runner.run(
                        peer.script, ["--file", file, "--warmup", "\(max(5, peerSteps / 10))", "--steps", "\(peerSteps)"] + peer.arguments)
                    result.peers[peer.name]!.seconds += timed.stepSeconds ?? []
                    if let peak = timed.peakRSS, peak > result.peers[peer.name]!.peakRSS ?? 0 {
                        result.peers[peer.name]!.peakRSS = peak
                        result.peers[peer.name]!.rssBefore = timed.rssBefore
                    }
                } catch {
                    print("  \(id) \(peer.name) failed: \(error)")
                    result.peers[peer.name]!.checked = false
                }
            }
        }
        return result
    }

    /// The table of a step workload against its peers (W7, W8): ours, then each peer's row with
    /// its time over ours; fills in each timed peer's `timing` and `ratio`.
    func stepTable(
        timing: Timing, allocations: Double, flops: Double, ceiling: Double?, specs: [PeerSpec], peers: inout [String: Report.PeerTiming]
    ) -> String {
        func rate(_ seconds: Double) -> [String] {
            let gflops = flops / seconds / 1e9
            return [String(format: "%.1f", gflops), ceiling.map { String(format: "%.1f%%", gflops / $0 * 100) } ?? "–"]
        }
        var rows = [
            ["", "median", "p10–p90", "GFLOP/s", "of ceiling", "allocs/step", "peer / Neuron"],
            ["Neuron", format(timing.median), "\(format(timing.p10))–\(format(timing.p90))"] + rate(timing.median) + [
                String(format: "%.2f", allocations), "",
            ],
        ]
        for peer in specs {
            guard var p = peers[peer.name] else { continue }
            guard p.checked, !p.seconds.isEmpty else {
                rows.append(["\(peer.column) \(p.version)", "unchecked", "", "", "", "", ""])
                continue
            }
            let t = Timing(p.seconds)
            p.timing = t
            p.ratio = t.median / timing.median
            peers[peer.name] = p
            rows.append(
                ["\(peer.column) \(p.version)", format(t.median), "\(format(t.p10))–\(format(t.p90))"] + rate(t.median) + [
                    "", String(format: "%.2f×", p.ratio!),
                ])
        }
        return table(rows)
    }
}

/// Writes a step workload's exchange file for its peers (W7–W12; Benchmarks/peers/README.md):
/// `x` and `t` as given, the parameters under our names in PyTorch's layouts (as our checkpoints
/// store them), the loss, the learning rate, the number of check steps and `metadata`; its path.
func writePeerExchange(
    _ id: String, network: Network<Float>, x: Tensor<Float>, targets t: Tensor<Float>, learningRate: Float, checkSteps: Int,
    to directory: String, metadata: [String: String] = [:]
) throws -> String {
    var entries = [SafeTensors.entry("x", x), SafeTensors.entry("t", t)]
    entries += network.parameterTensors.map { SafeTensors.entry($0.name, Checkpoint.fileLayout(network.parameter($0), order: $0.pytorchOrder)) }
    let path = (directory as NSString).appendingPathComponent("\(id).safetensors")
    try SafeTensors.write(
        entries,
        metadata: metadata.merging(["loss": network.loss.rawValue, "learningRate": "\(learningRate)", "checkSteps": "\(checkSteps)"]) { $1 },
        to: path)
    return path
}
