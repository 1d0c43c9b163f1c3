// The peers a user would otherwise pick, run as separate processes from Benchmarks/peers/ with
// the Python of the virtual environment that Benchmarks/peers/setup.sh makes.
import Foundation

/// What a peer script prints (one JSON line).
struct PeerResult: Decodable {
    var peer: String
    var version: String
    var threads: Int
    var checkLosses: [Double]?
    var stepSeconds: [Double]?
    // F1
    var reached: Bool?
    var epochs: Int?
    var trainSeconds: Double?
    var testAccuracies: [Double]?
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

    /// The peers' Python, or an error saying how to set it up.
    init(threads: Int) throws {
        let venv =
            ProcessInfo.processInfo.environment["NEURON_PEERS_VENV"]
            ?? (NSHomeDirectory() as NSString).appendingPathComponent(".cache/neuron-peers")
        python = (venv as NSString).appendingPathComponent("bin/python3")
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw PeerError(description: "no peers' Python at \(python): run Benchmarks/peers/setup.sh first (or set NEURON_PEERS_VENV)")
        }
        self.threads = threads
    }

    /// Runs `script` with `arguments` in its own process and decodes its JSON line.
    func run(_ script: String, _ arguments: [String]) throws -> PeerResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [(Self.scripts as NSString).appendingPathComponent(script)] + arguments + ["--threads", "\(threads)"]
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
            return try JSONDecoder().decode(PeerResult.self, from: Data(line.utf8))
        } catch {
            throw PeerError(description: "\(script) printed no result: \(line.prefix(300))")
        }
    }
}
