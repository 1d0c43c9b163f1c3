import Foundation
import Testing

// `neuron export` against ONNX Runtime on the shipped configs, and on bad input. The oracle is
// Tests/ONNX/check_onnx.py, run with the virtual environment `.venv` at the package root that the
// README's test command makes (onnx, onnxruntime, numpy); these tests fail, never skip, without it.

private let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// One line of check_onnx.py's report on a `predict` comparison.
private struct PredictVerdict: Decodable {
    var checker: String
    var rows: Int
    var dtype: String
    var ran: Bool
    var reason: String?
    var maxAbsDiff: Double?
    var classesAgree: Int?
}

/// Runs `check_onnx.py <arguments>` with the package's virtual environment; its standard output.
private func checkONNX(_ arguments: [String]) throws -> String {
    try runPython("Tests/ONNX/check_onnx.py", arguments)
}

/// Runs the repository's Python program `script` with the package's virtual environment; its standard output.
func runPython(_ script: String, _ arguments: [String]) throws -> String {
    struct PythonFailed: Error, CustomStringConvertible { var description: String }
    let python = packageRoot.appendingPathComponent(".venv/bin/python3").path
    guard FileManager.default.isExecutableFile(atPath: python) else {
        throw PythonFailed(
            description: "the export tests need \(python): run `python3 -m venv .venv && .venv/bin/pip install onnx onnxruntime numpy`"
                + " at the package root (the README's test command does)")
    }
    let scratch = try scratchDirectory("check-onnx")
    defer { try? FileManager.default.removeItem(atPath: scratch) }
    let (out, err) = (scratch + "/stdout", scratch + "/stderr")
    let process = Process()
    process.executableURL = URL(fileURLWithPath: python)
    process.arguments = [packageRoot.appendingPathComponent(script).path] + arguments
    process.standardOutput = try emptyFileForWriting(URL(fileURLWithPath: out))
    process.standardError = try emptyFileForWriting(URL(fileURLWithPath: err))
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw PythonFailed(description: "\(script) exited with \(process.terminationStatus): \(try String(contentsOfFile: err, encoding: .utf8))")
    }
    return try String(contentsOfFile: out, encoding: .utf8)
}

/// A shipped config and the rows its export is compared on.
struct ShippedExport: Sendable, CustomStringConvertible {
    /// The config under Data/.
    var config: String
    /// Lines added under the config's `data:` key (a row limit, so that a debug build trains the shipped architecture quickly;
    /// the architecture, not the accuracy, is what the export is checked on).
    var dataLines: [String] = []
    var epochs: Int?
    /// The rows predicted: a CSV under Data/, or the first N Fashion-MNIST test images.
    var rows: Rows
    var float32 = false

    enum Rows: Sendable {
        case csv(String)
        case fashionTestImages(Int)
    }

    var description: String { config + (float32 ? " --float32" : "") }

    static let all: [ShippedExport] = [
        ShippedExport(config: "iris.yaml", rows: .csv("iris.csv")),
        ShippedExport(config: "digits.yaml", rows: .csv("digits.csv")),
        ShippedExport(config: "digits-residual.yaml", epochs: 3, rows: .csv("digits.csv")),
        ShippedExport(config: "xor.yaml", rows: .csv("xor")),
        ShippedExport(config: "xor.yaml", rows: .csv("xor"), float32: true),
        ShippedExport(config: "fashion-mnist.yaml", dataLines: ["  limit: 640"], epochs: 1, rows: .fashionTestImages(500)),
        ShippedExport(config: "fashion-mnist-cnn.yaml", dataLines: ["  limit: 192"], epochs: 1, rows: .fashionTestImages(200)),
    ]
}

@Suite("neuron export: ONNX files that ONNX Runtime runs as neuron predict does")
struct ExportCommandTests {
    @Test(
        "Each shipped config's export passes ONNX's checker and matches neuron predict on every row: the same classes, within 1e-5 in float32 and 1e-12 in float64",
        arguments: ShippedExport.all)
    func shippedConfig(_ shipped: ShippedExport) throws {
        let scratch = try scratchDirectory("export")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        var config = dataDirectory + "/" + shipped.config
        if !shipped.dataLines.isEmpty {
            // The shipped file with a row limit under `data:`, on one BLAS thread (beside the rest of
            // the suite); its relative paths are absolute (IDX) or unused.
            var lines = try String(contentsOfFile: config, encoding: .utf8).replacingOccurrences(of: "blasThreads: 2", with: "blasThreads: 1")
                .components(separatedBy: "\n")
            let data = try #require(lines.firstIndex(of: "data:"))
            lines.insert(contentsOf: shipped.dataLines, at: data + 1)
            config = scratch + "/" + shipped.config
            try lines.joined(separator: "\n").write(toFile: config, atomically: true, encoding: .utf8)
        }
        let run = scratch + "/run"
        var train = ["train", config, "--output", run, "--quiet"]
        if let epochs = shipped.epochs { train += ["--epochs", "\(epochs)"] }
        let trained = try runNeuron(train)
        try #require(trained.status == 0, "\(trained.stderr)")

        let model = scratch + "/model.onnx"
        let exported = try runNeuron(["export", run, model] + (shipped.float32 ? ["--float32"] : []))
        try #require(exported.status == 0, "\(exported.stderr)")
        #expect(exported.stdout.hasPrefix("\(model): Network["), "\(exported.stdout)")

        let rows: String
        switch shipped.rows {
        case .csv("xor"):
            rows = scratch + "/xor.csv"
            try "x0,x1\n0,0\n0,1\n1,0\n1,1\n".write(toFile: rows, atomically: true, encoding: .utf8)
        case let .csv(file):
            rows = dataDirectory + "/" + file
        case let .fashionTestImages(count):
            rows = scratch + "/test-images.csv"
            _ = try checkONNX(["idx-csv", "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz", model, "\(count)", rows])
        }
        let predicted = try runNeuron(["predict", run, rows])
        try #require(predicted.status == 0, "\(predicted.stderr)")
        let predictions = scratch + "/predictions.csv"
        try predicted.stdout.write(toFile: predictions, atomically: true, encoding: .utf8)

        let verdict = try JSONDecoder().decode(PredictVerdict.self, from: Data(try checkONNX(["predict", model, rows, predictions]).utf8))
        #expect(verdict.checker == "ok", "\(verdict.checker)")
        #expect(verdict.ran, "\(verdict.reason ?? "")")
        let rowCount = predicted.stdout.split(separator: "\n").count - 1
        #expect(verdict.rows == rowCount && rowCount > 0)
        if predicted.stdout.hasPrefix("row,class,") { #expect(verdict.classesAgree == rowCount) }
        let tolerance = verdict.dtype == "float64" ? 1e-12 : 1e-5
        let difference = try #require(verdict.maxAbsDiff)
        #expect(difference <= tolerance, "largest difference \(difference)")
        let size = (try FileManager.default.attributesOfItem(atPath: model)[.size] as? Int) ?? 0
        print(
            "neuron export \(shipped): \(size) bytes, \(verdict.dtype), checker \(verdict.checker), \(rowCount) rows, "
                + "classes agree \(verdict.classesAgree.map(String.init) ?? "n/a"), largest |Δ| \(difference)")
    }

    @Test(
        "A missing or corrupt run, an unwritable path and options out of range exit 2 naming them; an earlier file stays whole and nothing is left beside it"
    )
    func badInput() throws {
        let scratch = try scratchDirectory("export-bad")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let run = scratch + "/run", model = scratch + "/model.onnx"
        try #require(try runNeuron(["train", dataDirectory + "/xor.yaml", "--output", run, "--epochs", "5", "--quiet"]).status == 0)
        let earlier = Data("an earlier file".utf8)
        try earlier.write(to: URL(fileURLWithPath: model))

        let missing = try runNeuron(["export", scratch + "/nowhere", model])
        #expect(missing.status == 2 && missing.stderr.contains(scratch + "/nowhere"), "\(missing.stderr)")

        let corrupt = scratch + "/corrupt"
        try FileManager.default.createDirectory(atPath: corrupt, withIntermediateDirectories: true)
        try Data(repeating: 0xAB, count: 100).write(to: URL(fileURLWithPath: corrupt + "/checkpoint.safetensors"))
        let corrupted = try runNeuron(["export", corrupt, model])
        #expect(corrupted.status == 2 && corrupted.stderr.contains(corrupt + "/checkpoint.safetensors"), "\(corrupted.stderr)")

        let unwritable = scratch + "/no-such-folder/model.onnx"
        let refused = try runNeuron(["export", run, unwritable])
        #expect(refused.status == 2 && refused.stderr.contains(unwritable), "\(refused.stderr)")
        let intoFile = model + "/model.onnx"  // its parent is a file
        let underFile = try runNeuron(["export", run, intoFile])
        #expect(underFile.status == 2 && underFile.stderr.contains(intoFile), "\(underFile.stderr)")

        for (options, words) in [(["--opset", "12"], "operator set 12"), (["--batch", "0"], "--batch"), (["--batch", "many"], "--batch")] {
            let bad = try runNeuron(["export", run, model] + options)
            #expect(bad.status == 2 && bad.stderr.contains(words), "\(options): \(bad.stderr)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: model)) == earlier)
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch).sorted() == ["corrupt", "model.onnx", "run"])

        // And a good export replaces it.
        let good = try runNeuron(["export", run, model, "--batch", "4", "--opset", "21"])
        #expect(good.status == 0, "\(good.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: model)) != earlier)
    }

    @Test("An export over the run's own files (by any spelling) or over a FIFO is refused with exit 2, and the run stays whole")
    func ownFilesAndSpecialFiles() throws {
        let scratch = try scratchDirectory("export-own")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let run = scratch + "/run"
        try #require(try runNeuron(["train", dataDirectory + "/xor.yaml", "--output", run, "--epochs", "5", "--quiet"]).status == 0)
        let names = try FileManager.default.contentsOfDirectory(atPath: run).sorted()
        func contents() throws -> [Data] { try names.map { try Data(contentsOf: URL(fileURLWithPath: run + "/" + $0)) } }
        let before = try contents()
        try FileManager.default.createSymbolicLink(atPath: scratch + "/link", withDestinationPath: run)
        for (source, target, words) in [
            (run, run + "/checkpoint.safetensors", "it is the checkpoint it is made from"),
            (run + "/checkpoint.safetensors", run + "/./checkpoint.safetensors", "it is the checkpoint it is made from"),
            (run, run + "/metrics.csv", "it is a file of the run it is made from"),
            (scratch + "/link", scratch + "/link/summary.json", "it is a file of the run it is made from"),
        ] {
            let refused = try runNeuron(["export", source, target])
            #expect(refused.status == 2 && refused.stderr.contains("\(target): cannot be written: \(words)"), "\(target): \(refused.stderr)")
        }
        #expect(try contents() == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: run).sorted() == names)
        // A FIFO stays a FIFO: a rename would have put a regular file in its place (as it did over /dev/full).
        let fifo = scratch + "/fifo"
        try #require(mkfifo(fifo, 0o600) == 0)
        let overFIFO = try runNeuron(["export", run, fifo])
        #expect(overFIFO.status == 2 && overFIFO.stderr.contains("\(fifo): cannot be written: it is a FIFO"), "\(overFIFO.stderr)")
        var status = stat()
        #expect(lstat(fifo, &status) == 0 && status.st_mode & S_IFMT == S_IFIFO)
        #expect(try runNeuron(["export", run, scratch + "/model.onnx"]).status == 0)
        // A new file inside the run directory is not one of its files, and is written.
        #expect(try runNeuron(["export", run, run + "/model.onnx"]).status == 0)
    }

    @Test("A character model's export samples lines in ONNX Runtime with Docs/onnx_sample.py and the file alone")
    func sampledThroughONNXRuntime() throws {
        let directory = try scratchDirectory("export-text")
        let run = directory + "/bigram", model = directory + "/bigram.onnx"
        #expect(try runNeuron(["train", dataDirectory + "/words-bigram-counted.yaml", "--output", run, "--quiet"]).status == 0)
        let export = try runNeuron(["export", run, model])
        #expect(export.status == 0, "\(export.stderr)")
        #expect(export.stdout.contains("Network[Embedding(27→27)], float32, opset 17"), "\(export.stdout)")
        let lines = try runPython("Docs/onnx_sample.py", [model, "--count", "5", "--seed", "3"]).split(
            separator: "\n", omittingEmptySubsequences: false
        ).dropLast()
        #expect(lines.count == 5 && lines.allSatisfy { $0.allSatisfy { ("a"..."z").contains($0) } }, "\(lines)")
        #expect(
            try runPython("Docs/onnx_sample.py", [model, "--count", "5", "--seed", "3"]).split(separator: "\n").map(String.init)
                == lines.map(String.init))
        let prefixed = try runPython("Docs/onnx_sample.py", [model, "--count", "3", "--prefix", "qu", "--seed", "4"]).split(separator: "\n")
        #expect(prefixed.count == 3 && prefixed.allSatisfy { $0.hasPrefix("qu") }, "\(prefixed)")
    }
}
