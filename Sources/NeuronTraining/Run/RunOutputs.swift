// The files a run leaves in its directory besides the checkpoint: metrics per epoch, curves, and
// a summary. Each is written whole and atomically, so a crash leaves the previous version.
import Foundation
import NeuronCore

#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// What only the end of a finished (or stopped) run knows; `summary.json` holds it beside the
/// final state's progress (``json(with:pretty:)``).
public struct RunSummary: Sendable, Equatable, Codable {
    public var precision: String
    public var blas: String
    /// A run with `training.products: bf16`: the library and kernels of its bfloat16 products, e.g.
    /// `bf16 (oneDNN 2.6.3, brg:avx512_core_bf16)`, and any that fell back to Float; nil for full products.
    public var products: String?
    /// The last epoch's mean training loss.
    public var trainingLoss: Double?
    /// `test` or `validation`: the rows of the final evaluation.
    public var evaluatedOn: String?
    public var evaluationLoss: Double?
    /// What a loss is the mean of, when it is not a sample's: a text model's is ``perCharacter``.
    public var lossUnit: String?
    /// A text model's loss: nats per predicted token, each line's characters and its closing boundary.
    public static let perCharacter = "nats per character, a line's end counted as one"
    /// A document model's loss: nats per predicted character.
    public static let perDocumentCharacter = "nats per character"
    /// A token document model's loss: nats per predicted token (``bitsPerCharacter`` reads it per character).
    public static let perToken = "nats per token"

    /// What the loss of a model of `vocabulary` over text read as `unit` is the mean of: nil for a
    /// model that reads no text (a sample's), ``perCharacter`` for lines, ``perDocumentCharacter``
    /// or ``perToken`` for a document.
    public static func lossUnit(unit: DataConfig.TextUnit?, vocabulary: Vocabulary?) -> String? {
        guard let vocabulary else { return nil }
        guard unit == .document else { return perCharacter }
        return vocabulary.tokenizer == nil ? perDocumentCharacter : perToken
    }
    /// A document model's losses in bits per character of the text each covers: `training`,
    /// `validation` and the final evaluation's part, by name.
    public var bitsPerCharacter: [String: Double]?
    /// A document model's predicted tokens per character in each part (1 for characters).
    public var tokensPerCharacter: TokensPerCharacter?
    /// A document run's: how each epoch's validation loss was measured, `exact` (every validation
    /// character once) or nanoGPT's `estimate` (with its batches); the final evaluation is exact.
    public var validationMeasure: String?
    public var evaluationAccuracy: Double?
    /// Loss and accuracy on the validation rows at the end, when the run has them: the last
    /// epoch's, or, for a run that took no epoch (a counted table), evaluated at its end.
    public var validationLoss: Double?
    public var validationAccuracy: Double?
    /// The processes that trained the run together: 1 alone, the ranks under `mpirun`.
    public var processes: Int?
    /// The neuron's trained parameters and output (single-neuron runs).
    public var trainedWeight: Double?
    public var trainedBias: Double?
    public var trainedOutput: Double?
    /// The run's training time, every segment of a resumed run included.
    public var trainingSeconds: Double
    /// This segment's training time, when the run was resumed (the rest is in earlier segments).
    public var segmentSeconds: Double?
    public var checkpoint: String?

    public init(precision: String, blas: String, trainingSeconds: Double) {
        (self.precision, self.blas, self.trainingSeconds) = (precision, blas, trainingSeconds)
    }

    /// The summary and `state`'s ``TrainingViewState/Extent/progress`` encoding, as one JSON object:
    /// `summary.json`, and the last line of `--json`. Each decodes from it on its own.
    public func json(with state: TrainingViewState, pretty: Bool = false) throws -> Data {
        struct Both: Encodable {
            var state: TrainingViewState, summary: RunSummary
            func encode(to encoder: any Encoder) throws {
                try state.encode(to: encoder)
                try summary.encode(to: encoder)
            }
        }
        return try TrainingViewState.encoder(.progress, pretty: pretty).encode(Both(state: state, summary: self))
    }
}

/// The run directory's files.
public struct RunOutputs: Sendable {
    /// The run directory.
    public let directory: String
    /// Called with a file's name before each write; a test makes it throw to play a full disk.
    public var beforeWrite: @Sendable (_ name: String) throws -> Void = { _ in }

    public init(directory: String) { self.directory = directory }

    /// The training time `summary.json` records for a run that ended (finished or stopped) at
    /// `step`: what a resumed run adds its own time to. 0 when there is no summary, or it is of
    /// another step (a segment ended by SIGKILL writes none; its time is not known). Kept out of the
    /// checkpoint, which stays a function of the training alone, byte for byte.
    public func trainedSeconds(upTo step: Int) -> Double {
        guard let data = FileManager.default.contents(atPath: path("summary.json")),
            let summary = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            summary["step"] as? Int == step, let seconds = summary["trainingSeconds"] as? Double, seconds.isFinite, seconds >= 0
        else { return 0 }
        return seconds
    }

    /// Creates the directory (and its parents) when missing.
    /// - Throws: ``RunError/invalid(_:)`` naming the directory and the system's reason when it
    ///   cannot be created or is not a directory.
    public func prepare() throws(RunError) {
        var partial = directory.hasPrefix("/") ? "/" : ""
        for component in directory.split(separator: "/") {
            partial += partial.isEmpty || partial.hasSuffix("/") ? component : "/" + component
            if mkdir(partial, 0o755) == 0 { continue }
            let code = errno
            var status = stat()
            if code == EEXIST, stat(partial, &status) == 0, status.st_mode & S_IFMT == S_IFDIR { continue }
            let reason = code == EEXIST ? "it is a file, not a directory" : String(cString: strerror(code))
            let what = partial == directory || partial == directory + "/" ? "" : " (at \(partial))"
            throw .invalid("\(directory): cannot use as the run directory\(what): \(reason); choose another --output")
        }
    }

    /// Takes the run directory for this process alone: an exclusive lock on its `.lock` file,
    /// held until the returned lock is released. Creating the lock file also proves the directory
    /// writable, before any training.
    /// - Throws: ``RunError/invalid(_:)`` when another process holds it or it cannot be written.
    public func lock() throws(RunError) -> RunDirectoryLock {
        let file = path(".lock")
        let fd = open(file, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw .invalid("\(directory): cannot write to the run directory (\(file): \(String(cString: strerror(errno))))")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(fd)
            if code == EWOULDBLOCK {
                throw .invalid(
                    "\(directory): another neuron process is training into this run directory (it holds \(file)); wait for it or choose another --output"
                )
            }
            throw .invalid("\(directory): cannot lock the run directory (\(file): \(String(cString: strerror(code))))")
        }
        return RunDirectoryLock(fd: fd)
    }

    /// Removes the temporary files (`.name.tmp-<pid>-<n>`) that a killed writer left behind: those
    /// of processes no longer alive, or, when `lockHeld` (no other process writes here), all but
    /// this process's own.
    /// - Returns: the names removed.
    @discardableResult
    public func removeStaleTemporaryFiles(lockHeld: Bool) -> [String] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        var removed: [String] = []
        for name in names where name.hasPrefix(".") {
            guard let range = name.range(of: ".tmp-", options: .backwards) else { continue }
            let parts = name[range.upperBound...].split(separator: "-", omittingEmptySubsequences: false)
            guard parts.count == 2, let pid = Int32(parts[0]), Int(parts[1]) != nil, pid != getpid() else { continue }
            let alive = kill(pid, 0) == 0 || errno == EPERM
            if (lockHeld || !alive) && unlink(path(name)) == 0 { removed.append(name) }
        }
        return removed
    }

    public func path(_ name: String) -> String { (directory as NSString).appendingPathComponent(name) }

    /// Whether the directory already holds a run's checkpoint.
    public var holdsRun: Bool { FileManager.default.fileExists(atPath: path("checkpoint.safetensors")) }

    /// The checkpoint, with the run's other files' failures: through ``beforeWrite``.
    public func writeCheckpoint(_ checkpoint: Checkpoint) throws {
        try beforeWrite("checkpoint.safetensors")
        try checkpoint.write(to: directory)
    }

    /// `metrics.csv`'s header row, which ``readMetrics(_:records:)`` expects back.
    static let metricsHeader = "epoch,step,training_loss,training_accuracy,validation_loss,validation_accuracy"

    /// `metrics.csv`: one row per epoch.
    public func writeMetrics(_ records: [EpochRecord]) throws {
        func cell(_ x: Double?) -> String { x.map { "\($0)" } ?? "" }
        var text = Self.metricsHeader + "\n"
        for r in records {
            text += "\(r.epoch),\(r.step),\(r.trainingLoss),\(cell(r.trainingAccuracy)),\(cell(r.validationLoss)),\(cell(r.validationAccuracy))\n"
        }
        try beforeWrite("metrics.csv")
        try AtomicFile.write(text, to: path("metrics.csv"))
    }

    /// The first `records` rows of a `metrics.csv` as written by ``writeMetrics(_:)``, or nil when
    /// the file is missing, shorter, or not such a file. Reads at most 256 bytes a row (the
    /// longest a written row can be), so a huge file costs no more than the rows asked for.
    static func readMetrics(_ file: String, records count: Int) -> [EpochRecord]? {
        guard count >= 0, count <= Int.max / 256 - 1, let handle = FileHandle(forReadingAtPath: file) else { return nil }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: (count + 1) * 256) else { return nil }
        let lines = data.split(separator: UInt8(ascii: "\n"), maxSplits: count + 1, omittingEmptySubsequences: false)
        guard lines.count > count, String(decoding: lines[0], as: UTF8.self) == metricsHeader else { return nil }
        var records: [EpochRecord] = []
        records.reserveCapacity(count)
        for line in lines[1...count] {
            let cells = String(decoding: line, as: UTF8.self).split(separator: ",", omittingEmptySubsequences: false)
            guard cells.count == 6, let epoch = Int(cells[0]), let step = Int(cells[1]), let loss = Double(cells[2]) else { return nil }
            // An empty cell is a number the run did not have (no validation rows); anything else must parse.
            var optional: [Double?] = []
            for cell in cells[3...] {
                if cell.isEmpty {
                    optional.append(nil)
                } else {
                    guard let value = Double(cell) else { return nil }
                    optional.append(value)
                }
            }
            records.append(
                EpochRecord(
                    epoch: epoch, step: step, trainingLoss: loss, trainingAccuracy: optional[0], validationLoss: optional[1],
                    validationAccuracy: optional[2]))
        }
        return records
    }

    /// `curves.svg`: loss and accuracy per epoch, training and validation.
    public func writeCurves(_ records: [EpochRecord], title: String) throws {
        try beforeWrite("curves.svg")
        try AtomicFile.write(Curves.svg(records, title: title), to: path("curves.svg"))
    }

    /// `summary.json`: the summary with the run's final `state`.
    public func writeSummary(_ summary: RunSummary, state: TrainingViewState) throws {
        try beforeWrite("summary.json")
        try AtomicFile.write(Array(try summary.json(with: state, pretty: true)), to: path("summary.json"))
    }
}

/// The exclusive lock of a run directory, released when this is deinitialized (or the process ends).
public final class RunDirectoryLock: Sendable {
    private let fd: Int32
    init(fd: Int32) { self.fd = fd }
    deinit { close(fd) }
}

/// Line charts as plain SVG: one panel for loss, one for accuracy (when there is any).
enum Curves {
    struct Series { var name: String; var color: String; var dashed: Bool; var points: [(Double, Double)] }

    static func svg(_ records: [EpochRecord], title: String) -> String {
        let loss = [
            Series(name: "training loss", color: "#1f77b4", dashed: false, points: records.map { (Double($0.epoch), $0.trainingLoss) }),
            Series(
                name: "validation loss", color: "#d62728", dashed: true,
                points: records.compactMap { r in r.validationLoss.map { (Double(r.epoch), $0) } }),
        ].filter { !$0.points.isEmpty }
        let accuracy = [
            Series(
                name: "training accuracy", color: "#1f77b4", dashed: false,
                points: records.compactMap { r in r.trainingAccuracy.map { (Double(r.epoch), $0) } }),
            Series(
                name: "validation accuracy", color: "#d62728", dashed: true,
                points: records.compactMap { r in r.validationAccuracy.map { (Double(r.epoch), $0) } }),
        ].filter { !$0.points.isEmpty }
        let panels = accuracy.isEmpty ? [("loss", loss)] : [("loss", loss), ("accuracy", accuracy)]
        // Each panel: its legend's row, the plot, the x axis's labels below it, a gap.
        let width = 720, plotHeight = 250, top = 40, block = legendRow + plotHeight + 70
        let height = top + panels.count * block
        var body = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(width)" height="\(height)" viewBox="0 0 \(width) \(height)" font-family="sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(width / 2)" y="24" text-anchor="middle" font-size="15">\(escape(title))</text>

            """
        for (i, (label, series)) in panels.enumerated() {
            body += panel(series, label: label, x: 70, y: top + legendRow + i * block, width: width - 100, height: plotHeight)
        }
        return body + "</svg>\n"
    }

    /// The height of the row above each plot that holds its legend.
    static let legendRow = 22

    /// One panel: axes with ticks and labels, a line per series, and a legend in the row above
    /// the plot (`y - legendRow ..< y`), where no curve can pass under it.
    static func panel(_ series: [Series], label: String, x: Int, y: Int, width: Int, height: Int) -> String {
        let all = series.flatMap(\.points)
        guard !all.isEmpty else { return "" }
        let (x0, x1) = (all.map(\.0).min()!, max(all.map(\.0).max()!, all.map(\.0).min()! + 1))
        var (y0, y1) = (all.map(\.1).min()!, all.map(\.1).max()!)
        if label == "accuracy" { y1 = min(1, y1 + 0.02); y0 = max(0, y0 - 0.02) }
        if y1 - y0 < 1e-12 { y1 = y0 + 1 }
        let yTicks = ticks(y0, y1), xTicks = ticks(x0, x1).filter { $0 == $0.rounded() }
        y0 = min(y0, yTicks.first ?? y0); y1 = max(y1, yTicks.last ?? y1)
        func px(_ v: Double) -> Double { Double(x) + (v - x0) / (x1 - x0) * Double(width) }
        func py(_ v: Double) -> Double { Double(y + height) - (v - y0) / (y1 - y0) * Double(height) }
        var s = "<g>\n"
        s += "<rect x=\"\(x)\" y=\"\(y)\" width=\"\(width)\" height=\"\(height)\" fill=\"none\" stroke=\"#444\"/>\n"
        for t in yTicks where t >= y0 && t <= y1 {
            s += "<line x1=\"\(x)\" x2=\"\(x + width)\" y1=\"\(f(py(t)))\" y2=\"\(f(py(t)))\" stroke=\"#ddd\"/>"
            s += "<text x=\"\(x - 6)\" y=\"\(f(py(t) + 4))\" text-anchor=\"end\">\(tickLabel(t))</text>\n"
        }
        for t in xTicks where t >= x0 && t <= x1 {
            s += "<line x1=\"\(f(px(t)))\" x2=\"\(f(px(t)))\" y1=\"\(y + height)\" y2=\"\(y + height + 5)\" stroke=\"#444\"/>"
            s += "<text x=\"\(f(px(t)))\" y=\"\(y + height + 18)\" text-anchor=\"middle\">\(tickLabel(t))</text>\n"
        }
        s += "<text x=\"\(x + width / 2)\" y=\"\(y + height + 34)\" text-anchor=\"middle\">epoch</text>\n"
        s +=
            "<text x=\"\(x - 50)\" y=\"\(y + height / 2)\" text-anchor=\"middle\" transform=\"rotate(-90 \(x - 50) \(y + height / 2))\">\(label)</text>\n"
        var legendX = x
        for line in series {
            let points = line.points.map { "\(f(px($0.0))),\(f(py($0.1)))" }.joined(separator: " ")
            s +=
                "<polyline fill=\"none\" stroke=\"\(line.color)\" stroke-width=\"2\"\(line.dashed ? " stroke-dasharray=\"6 4\"" : "") points=\"\(points)\"/>\n"
            if line.points.count == 1 {
                s += "<circle cx=\"\(f(px(line.points[0].0)))\" cy=\"\(f(py(line.points[0].1)))\" r=\"3\" fill=\"\(line.color)\"/>\n"
            }
            // One entry after another, left to right: a sample of the line, then its name (12 px
            // sans-serif is at most 7 px a character).
            let ly = y - 8
            s +=
                "<line x1=\"\(legendX)\" x2=\"\(legendX + 24)\" y1=\"\(ly - 4)\" y2=\"\(ly - 4)\" stroke=\"\(line.color)\" stroke-width=\"2\"\(line.dashed ? " stroke-dasharray=\"6 4\"" : "")/>"
            s += "<text x=\"\(legendX + 30)\" y=\"\(ly)\">\(line.name)</text>\n"
            legendX += 30 + 7 * line.name.count + 20
        }
        return s + "</g>\n"
    }

    /// About five round ticks covering [a, b].
    static func ticks(_ a: Double, _ b: Double) -> [Double] {
        let raw = (b - a) / 5
        let magnitude = pow(10, floor(log10(raw)))
        let step = [1.0, 2, 5, 10].map { $0 * magnitude }.first { $0 >= raw } ?? raw
        var t = floor(a / step) * step, result: [Double] = []
        while t <= b + step * 0.5 && result.count < 12 { result.append(t); t += step }
        return result
    }

    static func tickLabel(_ v: Double) -> String {
        if v == v.rounded() && abs(v) < 1e6 { return String(Int(v)) }
        if abs(v) < 1e-3 || abs(v) >= 1e4 { return String(format: "%.1e", v) }
        return String(format: "%g", (v * 1e4).rounded() / 1e4)
    }

    static func f(_ v: Double) -> String { String(format: "%.1f", v) }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }
}
