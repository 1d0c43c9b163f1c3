import Foundation
import Testing

/// `url` as a new, empty file open for writing, where a child process's output goes: throws, with
/// the reason, when the file cannot be created (FileManager.createFile would only return false).
func emptyFileForWriting(_ url: URL) throws -> FileHandle {
    try Data().write(to: url)
    return try FileHandle(forWritingTo: url)
}

/// Runs the `neuron` executable built next to this test bundle and captures what it prints.
/// With `interruptWhen`, sends SIGINT (Ctrl-C) once the output so far satisfies it.
/// Runs `neuron` with `arguments` (in `workingDirectory` when given, else this process's); with
/// `interruptWhen`, sends `signal` once its standard output satisfies it. The status is the exit
/// status, or minus the signal's number when one ended it.
func runNeuron(
    _ arguments: [String], in workingDirectory: String? = nil, interruptWhen: (@Sendable (String) -> Bool)? = nil, signal: Int32 = SIGINT,
    environment: [String: String?] = [:]
) throws -> (status: Int32, stdout: String, stderr: String) {
    let directory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
    let process = Process()
    process.executableURL = directory.appendingPathComponent("neuron")
    process.arguments = arguments
    if !environment.isEmpty {
        // The test's variables over this process's, a nil value removing one.
        var variables = ProcessInfo.processInfo.environment
        for (name, value) in environment { variables[name] = value }
        process.environment = variables
    }
    if let workingDirectory { process.currentDirectoryURL = URL(fileURLWithPath: workingDirectory) }
    // Output goes to files, not pipes: a pipe's write end can be inherited by another test's child
    // spawned at the same moment, and then its end of file waits for that child, however long it runs.
    let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("neuron-cli-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: scratch) }
    let outURL = scratch.appendingPathComponent("stdout"), errURL = scratch.appendingPathComponent("stderr")
    let out = try emptyFileForWriting(outURL), err = try emptyFileForWriting(errURL)
    process.standardOutput = out
    process.standardError = err
    try process.run()
    try out.close()
    try err.close()
    func stdout() -> String { String(decoding: (try? Data(contentsOf: outURL)) ?? Data(), as: UTF8.self) }
    if let interruptWhen {
        var interrupted = false
        while process.isRunning {
            if !interrupted, interruptWhen(stdout()) {
                kill(process.processIdentifier, signal)
                interrupted = true
            }
            Thread.sleep(forTimeInterval: 0.01)
        }
    }
    process.waitUntilExit()
    let status = process.terminationReason == .uncaughtSignal ? -process.terminationStatus : process.terminationStatus
    return (status, stdout(), String(decoding: (try? Data(contentsOf: errURL)) ?? Data(), as: UTF8.self))
}

@Suite("neuron explain")
struct ExplainCommandTests {
    @Test("The reference neuron as JSON gives Docs/Reference.md §1–2's values")
    func referenceJSON() throws {
        let run = try runNeuron(["explain", "--input", "0.4", "--weight", "0.5", "--bias", "0.6", "--target", "0.7", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let json = try ExplainJSON.decode(run.stdout)
        #expect(json.net == 0.8 && json.output == 0.6640367702678491)
        #expect(json.error == -0.035963229732150825 && json.loss == 0.0006466769463837285)
        #expect(json.local.net == 0.5590551677322437 && json.local.input == .one(0.5) && json.local.weight == .one(0.4))
        #expect(json.gradients.output == -0.035963229732150825)
        #expect(json.gradients.net == -0.020105429430100793 && json.gradients.bias == -0.020105429430100793)
        #expect(json.gradients.weight == .one(-0.008042171772040318) && json.gradients.input == .one(-0.010052714715050396))
        #expect(json.faux.output == -0.03591322973214633 && json.faux.net == -0.020088469318535994)
        #expect(json.faux.bias == -0.020088469318535994)
        #expect(json.faux.weight == .one(-0.008039457952816777) && json.faux.input == .one(-0.01004847442496147))
        #expect(json.difference.method == "forward" && json.difference.tiny == 0.0001)
        #expect(json.trained == nil && json.iterations == nil)
        // Full round-trip precision in the text itself, not only after parsing.
        #expect(run.stdout.contains("-0.035963229732150825"))
    }

    @Test("Training first: 100,000 iterations at 0.01 give trained.output 0.1000000000000007")
    func trainedJSON() throws {
        let run = try runNeuron([
            "explain", "--input", "0.01", "--target", "0.1", "--weight", "0.5", "--bias", "0.5",
            "--iterations", "100000", "--learning-rate", "0.01", "--json",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let json = try ExplainJSON.decode(run.stdout)
        let trained = try #require(json.trained)
        #expect(trained.output == 0.1000000000000007)
        #expect(trained.weight == .one(0.4959537581015022) && trained.bias == 0.09537581015006125)
        #expect(json.iterations == 100_000 && json.learningRate == 0.01)
        #expect(json.initial?.weight == .one(0.5) && json.initial?.bias == 0.5)
        #expect(run.stdout.contains("0.1000000000000007"))
    }

    @Test("Central differences and n inputs")
    func centralManyInputs() throws {
        let run = try runNeuron(["explain", "--input", "1,-0.5", "--weight", "0.3,-0.2", "--central", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let json = try ExplainJSON.decode(run.stdout)
        #expect(json.difference.method == "central")
        #expect(json.faux.weight.values.count == 2 && json.faux.input.values.count == 2)
        #expect(json.local.input == .many([0.3, -0.2]) && json.local.weight == .many([1, -0.5]))
        // Central differences in Double agree far beyond forward ones' three figures.
        #expect((json.relativeError.weight.values + json.relativeError.input.values).allSatisfy { $0 < 1e-6 })
    }

    @Test("The table for people", arguments: [["explain"], ["explain", "--precision", "float"]])
    func table(arguments: [String]) throws {
        let run = try runNeuron(arguments)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("Global gradients") && run.stdout.contains("faux"))
    }

    @Test(
        "Bad arguments exit 2 with one line saying what is wrong",
        arguments: [
            (["explain", "--input", "abc"], "not a number"),
            (["explain", "--bias", "1e999"], "not a finite number"),
            (["explain", "--input", "1,2", "--weight", "0.5"], "one weight per input"),
            (["explain", "--tiny", "0"], "--tiny must be greater than 0"),
            (["explain", "--tiny", "-0.001"], "--tiny must be greater than 0"),
            (["explain", "--iterations", "10"], "--iterations needs --learning-rate"),
            (["explain", "--iterations", "10", "--learning-rate", "-1"], "--learning-rate must be greater than 0"),
        ])
    func badArguments(arguments: [String], message: String) throws {
        let run = try runNeuron(arguments)
        #expect(run.status == 2)
        #expect(run.stdout.isEmpty)
        #expect(run.stderr.contains(message), "\(run.stderr)")
        #expect(run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
    }
}
