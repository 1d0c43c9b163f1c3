// A checkpoint: an engine at a step boundary, saved with what its run was built from, as one file,
// `checkpoint.safetensors`, written in one atomic rename. The tensors are the file's tensors; the
// run state (config, position, records: `CheckpointState`) is JSON in the header's `__metadata__`
// under `neuron.state`. One file cannot tear, and weights cannot be paired with another run's
// state. Python's safetensors reads the file as it reads any other.
//
// Weights are stored in PyTorch's layouts and permuted at this boundary: dense weights as
// `nn.Linear`'s (outputs, inputs), the engine's (inputs, outputs); convolution weights as
// `nn.Conv2d`'s (filters, inputChannels, kh, kw), the engine's (kh, kw, inputChannels, filters).
// Batch norm's tensors have PyTorch's names (`weight`, `bias`, `running_mean`, `running_var`).
// The numbers are unchanged bit for bit, so the file loads into the same `nn.Sequential`.
import Foundation
import NeuronCore

/// A checkpoint's contents: its tensors, in the file's layout, and its run state.
public struct Checkpoint: Sendable {
    /// The file's tensors: `layers.<i>.weight` in PyTorch's layout, `layers.<i>.bias`, batch norm's
    /// `layers.<i>.running_mean` and `running_var`, `optimizer.<name>`.
    public var tensors: [SafeTensors.Entry]
    public var state: CheckpointState

    /// The checkpoint's file name in a run directory.
    public static let fileName = "checkpoint.safetensors"
    /// The `__metadata__` key holding the run state as JSON.
    public static let stateKey = "neuron.state"
    /// The most epoch records a checkpoint carries (about 90 KB of its JSON): a long run's
    /// checkpoint keeps a thinned history (``EpochRecord/bounded(_:limit:)``), and reading it takes
    /// every record back from the run's `metrics.csv`.
    public static let recordLimit = 500

    public init(tensors: [SafeTensors.Entry], state: CheckpointState) {
        (self.tensors, self.state) = (tensors, state)
    }

    /// `engine` as it stands, saved with the config it was built from, the preprocessing fitted
    /// on its training rows and the command-line settings the config was overridden with.
    public init<Engine: TrainingEngine>(
        _ engine: Engine, config: RunConfig, preprocessing: Preprocessing, overrides: RunOverrides = RunOverrides(),
        data: DataFingerprint? = nil
    ) {
        let point = engine.resumePoint()
        tensors = point.tensors.map { SafeTensors.entry($0.name, Self.fileLayout($0.tensor, order: point.pytorchOrders[$0.name])) }
        state = CheckpointState(
            config: config, network: point.network, precision: Engine.Scalar.self == Float.self ? .float : .double,
            progress: point.progress, position: point.position,
            optimizerKind: config.optimizer.kind, optimizerStep: point.optimizerStep, preprocessing: preprocessing,
            classNames: point.classNames, featureNames: point.featureNames,
            records: EpochRecord.bounded(point.records, limit: Self.recordLimit),
            recordCount: point.records.count > Self.recordLimit ? point.records.count : nil,
            overrides: overrides.isEmpty ? nil : overrides, vocabulary: point.vocabulary, data: data)
    }

    /// The tensor as the file stores it, in PyTorch's layout: its dimensions reordered as
    /// `order` says (`Layer.pytorchOrder(of:)`: a dense weight transposed to `nn.Linear`'s
    /// (outputs, inputs), a convolution's weight permuted to `nn.Conv2d`'s (filters, channels, kh,
    /// kw)); as is when `order` is nil.
    public static func fileLayout<Scalar: TensorScalar>(_ tensor: Tensor<Scalar>, order: [Int]?) -> Tensor<Scalar> {
        order.map { permuted(tensor, to: $0) } ?? tensor
    }

    /// The shape in the file of a tensor of the engine's `shape` (or the position in the file's
    /// tensor of an element at engine position `shape`): the dimensions reordered by `order`.
    static func fileShape(_ shape: [Int], order: [Int]?) -> [Int] { order.map { $0.map { shape[$0] } } ?? shape }

    /// A stored tensor back in the engine's layout (the inverse of ``fileLayout(_:order:)``).
    static func engineLayout<Scalar: TensorScalar>(_ tensor: Tensor<Scalar>, order: [Int]?) -> Tensor<Scalar> {
        guard let order else { return tensor }
        var inverse = order
        for (d, source) in order.enumerated() { inverse[source] = d }
        return permuted(tensor, to: inverse)
    }

    /// `t` with its dimensions reordered: dimension `d` of the result is dimension `order[d]` of `t`.
    static func permuted<Scalar>(_ t: Tensor<Scalar>, to order: [Int]) -> Tensor<Scalar> {
        let shape = order.map { t.shape[$0] }
        var sourceStrides = Array(repeating: 1, count: t.shape.count)
        for d in stride(from: t.shape.count - 2, through: 0, by: -1) { sourceStrides[d] = sourceStrides[d + 1] * t.shape[d + 1] }
        let strides = order.map { sourceStrides[$0] }  // the step in `t` for a step along each result dimension
        var scalars = [Scalar](repeating: 0, count: t.count)
        var index = Array(repeating: 0, count: shape.count)
        for i in 0..<t.count {
            var source = 0
            for d in 0..<shape.count { source += index[d] * strides[d] }
            scalars[i] = t[source]
            var d = shape.count - 1
            while d >= 0 {
                index[d] += 1
                if index[d] < shape[d] { break }
                index[d] = 0
                d -= 1
            }
        }
        return try! Tensor(shape: shape, scalars: scalars)  // the same count, the dimensions reordered
    }
}

/// A checkpoint's run state: what the tensors alone cannot say.
public struct CheckpointState: Sendable, Equatable {
    /// Bumped when the layout changes: 2 is one file, the state in the header, dense weights (outputs, inputs).
    public var format = CheckpointState.currentFormat
    /// The format this engine writes and reads.
    public static let currentFormat = 2
    /// The run's config, with its data paths resolved.
    public var config: RunConfig
    /// `Network[Dense(784→256, tanh), …]`.
    public var network: String
    /// The tensors' type.
    public var precision: TrainingConfig.Precision
    /// Epochs and steps done and planned, and the seed. The file holds `epoch`, `step` and `seed`
    /// (0 for a run that makes none) at the top level of the state; the totals follow from the
    /// config, as the run builder counts them (see `init(from:)`).
    public var progress: RunProgress
    /// The epoch order, the random generator's state and the position within the epoch.
    public var position: TrainingPosition?
    /// The optimizer, and its step count; its buffers are the `optimizer.*` tensors.
    public var optimizerKind: OptimizerConfig.Kind
    public var optimizerStep: Int
    public var preprocessing: Preprocessing
    public var classNames: [String]?
    public var featureNames: [String]
    /// The epochs' records: all of them, or at most ``Checkpoint/recordLimit`` of a longer run.
    public var records: [EpochRecord]
    /// How many records ``records`` stands for when it holds fewer (the rest are in the run's
    /// `metrics.csv`); absent when it holds them all.
    public var recordCount: Int? = nil
    /// The command-line settings over the config file's (`--epochs`, `--learning-rate`, …), which
    /// `config` already holds: `--resume` applies them again to the config file, so that the run
    /// goes on as it was started. Absent when none were given.
    public var overrides: RunOverrides? = nil
    /// A text model's tokens, in their order (token `i` is the `i`th), as its data gave them; absent for other data.
    public var vocabulary: Vocabulary? = nil
    /// The data files trained on, each with its size and CRC-32; absent for synthetic data and in
    /// checkpoints written before it was recorded. A resume on files that differ is refused.
    public var data: DataFingerprint? = nil

    /// A state from its parts.
    public init(
        config: RunConfig, network: String, precision: TrainingConfig.Precision, progress: RunProgress, position: TrainingPosition?,
        optimizerKind: OptimizerConfig.Kind, optimizerStep: Int, preprocessing: Preprocessing, classNames: [String]?,
        featureNames: [String], records: [EpochRecord], recordCount: Int? = nil, overrides: RunOverrides? = nil,
        vocabulary: Vocabulary? = nil, data: DataFingerprint? = nil
    ) {
        (self.config, self.network, self.precision, self.progress, self.position) = (config, network, precision, progress, position)
        (self.optimizerKind, self.optimizerStep, self.preprocessing) = (optimizerKind, optimizerStep, preprocessing)
        (self.classNames, self.featureNames, self.records, self.recordCount) = (classNames, featureNames, records, recordCount)
        (self.overrides, self.vocabulary, self.data) = (overrides, vocabulary, data)
    }
}

extension CheckpointState: Codable {
    // The keys of the file's state, each at the top level (the progress's counters too), as every
    // checkpoint since format 2 has written them.
    private enum CodingKeys: String, CodingKey {
        case format, config, network, precision, epoch, step, seed, position, optimizerKind, optimizerStep, preprocessing
        case classNames, featureNames, records, recordCount, overrides, vocabulary, data
    }

    /// Reads the state as the file holds it. The seed 0 with no position is a run that makes
    /// none (the only one that saves no position); the planned epochs are the config's, the planned
    /// steps those epochs of the position's batches (on one sample, a step each).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        format = try c.decode(Int.self, forKey: .format)
        config = try c.decode(RunConfig.self, forKey: .config)
        network = try c.decode(String.self, forKey: .network)
        precision = try c.decode(TrainingConfig.Precision.self, forKey: .precision)
        let (epoch, step) = (try c.decode(Int.self, forKey: .epoch), try c.decode(Int.self, forKey: .step))
        let seed = try c.decode(UInt64.self, forKey: .seed)
        position = try c.decodeIfPresent(TrainingPosition.self, forKey: .position)
        let totalEpochs = config.desugared.training.epochs
        // A plan past counting is refused by `validate`, which checks the same product.
        let totalSteps = stepCount(epochs: totalEpochs, stepsPerEpoch: position?.batches.batchesPerEpoch ?? 1) ?? maximumStepCount
        progress = RunProgress(
            epoch: epoch, totalEpochs: totalEpochs, step: step, totalSteps: totalSteps, seed: position == nil && seed == 0 ? nil : seed)
        optimizerKind = try c.decode(OptimizerConfig.Kind.self, forKey: .optimizerKind)
        optimizerStep = try c.decode(Int.self, forKey: .optimizerStep)
        preprocessing = try c.decode(Preprocessing.self, forKey: .preprocessing)
        classNames = try c.decodeIfPresent([String].self, forKey: .classNames)
        featureNames = try c.decode([String].self, forKey: .featureNames)
        records = try c.decode([EpochRecord].self, forKey: .records)
        recordCount = try c.decodeIfPresent(Int.self, forKey: .recordCount)
        overrides = try c.decodeIfPresent(RunOverrides.self, forKey: .overrides)
        vocabulary = try c.decodeIfPresent(Vocabulary.self, forKey: .vocabulary)
        data = try c.decodeIfPresent(DataFingerprint.self, forKey: .data)
    }

    /// Writes the state as the file holds it: the progress's counters at the top level, the seed 0
    /// for a run that makes none, the totals left to the config.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(format, forKey: .format)
        try c.encode(config, forKey: .config)
        try c.encode(network, forKey: .network)
        try c.encode(precision, forKey: .precision)
        try c.encode(progress.epoch, forKey: .epoch)
        try c.encode(progress.step, forKey: .step)
        try c.encode(progress.seed ?? 0, forKey: .seed)
        try c.encodeIfPresent(position, forKey: .position)
        try c.encode(optimizerKind, forKey: .optimizerKind)
        try c.encode(optimizerStep, forKey: .optimizerStep)
        try c.encode(preprocessing, forKey: .preprocessing)
        try c.encodeIfPresent(classNames, forKey: .classNames)
        try c.encode(featureNames, forKey: .featureNames)
        try c.encode(records, forKey: .records)
        try c.encodeIfPresent(recordCount, forKey: .recordCount)
        try c.encodeIfPresent(overrides, forKey: .overrides)
        try c.encodeIfPresent(vocabulary, forKey: .vocabulary)
        try c.encodeIfPresent(data, forKey: .data)
    }
}

/// A checkpoint read back and checked: its state and its tensors by name, in the file's layout.
public struct LoadedCheckpoint: Sendable {
    /// The run directory it was read from.
    public var path: String
    /// The checkpoint file.
    public var file: String
    public var state: CheckpointState
    public var tensors: [String: SafeTensors.Entry]

    public init(path: String, file: String, state: CheckpointState, tensors: [String: SafeTensors.Entry]) {
        (self.path, self.file, self.state, self.tensors) = (path, file, state, tensors)
    }

    /// Throws when the entry at `target` is this checkpoint's file, another file of its run
    /// directory or one of the run's data files, so that an output made from the run (an export)
    /// never replaces the run itself or what it resumes from.
    /// Entries are compared by identity (device and inode of the entry itself, which a rename
    /// replaces), so another spelling of the same path (`run/./checkpoint.safetensors`, a link to
    /// the directory) is caught too.
    /// - Throws: ``CheckpointError/writeFailed(path:reason:)`` naming `target` and the run's file.
    public func checkNotOwnFile(_ target: String) throws(CheckpointError) {
        var entry = stat()
        guard lstat(target, &entry) == 0 else { return }  // nothing there yet: nothing to destroy
        var isDirectory: ObjCBool = false
        let names =
            FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
            ? (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] : []
        // The run's data files too (the saved config holds them absolute): a resume reads them again.
        let data = state.config.data
        let dataFiles = [data.path, data.testPath, data.trainImages, data.trainLabels, data.testImages, data.testLabels].compactMap { $0 }
        for own in [file] + names.map({ (path as NSString).appendingPathComponent($0) }) + dataFiles {
            var ownEntry = stat()
            if lstat(own, &ownEntry) == 0, ownEntry.st_dev == entry.st_dev, ownEntry.st_ino == entry.st_ino {
                let what =
                    own == file
                    ? "the checkpoint it is made from"
                    : dataFiles.contains(own) ? "a data file of the run it is made from" : "a file of the run it is made from"
                throw .writeFailed(path: target, reason: "it is \(what) (\(own)); writing over it would destroy the run")
            }
        }
    }

    /// The tensor `name` as stored, in `Scalar`, of the expected shape.
    /// - Throws: ``CheckpointError`` when it is missing, of another dtype or of another shape.
    public func tensor<Scalar: TensorScalar>(_ name: String, as: Scalar.Type, shape: [Int]) throws(CheckpointError) -> [Scalar] {
        guard let entry = tensors[name] else { throw .missingTensor(path: file, name: name) }
        let tensor = try entry.tensor(as: Scalar.self, source: file)
        guard tensor.shape == shape else { throw .shapeMismatch(path: file, name: name, found: tensor.shape, expected: shape) }
        return tensor.scalars
    }

    /// The parameter `name` in the engine's layout, `shape`, stored in PyTorch's dimension
    /// `order` (`Layer.pytorchOrder(of:)`) and permuted back.
    /// - Throws: ``CheckpointError`` when it is missing, of another dtype or of another shape.
    public func parameter<Scalar: TensorScalar>(_ name: String, as: Scalar.Type, shape: [Int], order: [Int]?) throws(CheckpointError)
        -> [Scalar]
    {
        let fileShape = Checkpoint.fileShape(shape, order: order)
        let stored = try tensor(name, as: Scalar.self, shape: fileShape)
        return Checkpoint.engineLayout(try! Tensor(shape: fileShape, scalars: stored), order: order).scalars
    }
}

extension Checkpoint {
    /// The file's bytes: the tensors, and the state as JSON in the header.
    /// - Throws: an `EncodingError` for a state that cannot be encoded.
    public func encoded() throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.nonConformingFloatEncodingStrategy = Self.nonFiniteEncoding
        let json = String(decoding: try encoder.encode(state), as: UTF8.self)
        // The short keys let a reader see what the file holds without parsing the state.
        let metadata = [
            "format": "neuron-\(state.format)", "network": state.network, "step": "\(state.progress.step)",
            "epoch": "\(state.progress.epoch)", "precision": state.precision.rawValue, Self.stateKey: json,
        ]
        return SafeTensors.encode(tensors, metadata: metadata)
    }

    /// Writes `checkpoint.safetensors` in `directory` atomically: one file, one rename, so a crash
    /// leaves the previous checkpoint or this one. The state is encoded before the file is touched.
    /// - Throws: ``CheckpointError/writeFailed(path:reason:)``, or an encoding error.
    public func write(to directory: String) throws {
        try AtomicFile.write(try encoded(), to: (directory as NSString).appendingPathComponent(Self.fileName))
    }

    /// A validation loss can be infinite while training goes on (a record, not a divergence); JSON
    /// has no such numbers, so they are written as strings, as the progress JSON writes them.
    static let nonFiniteEncoding = JSONEncoder.NonConformingFloatEncodingStrategy.convertToString(
        positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")

    /// Reads and checks a checkpoint: a run directory's `checkpoint.safetensors`, or a checkpoint file.
    /// - Throws: ``CheckpointError`` for a missing, truncated or corrupt file, or a state or tensor
    ///   that does not fit the rest (naming the file and the field).
    public static func read(_ path: String) throws(CheckpointError) -> LoadedCheckpoint {
        var isDirectory: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
        let file = exists && isDirectory.boolValue ? (path as NSString).appendingPathComponent(fileName) : path
        let (entries, metadata): ([SafeTensors.Entry], [String: String])
        do {
            (entries, metadata) = try SafeTensors.read(file)
        } catch {
            throw formatOne(file, instead: error) ?? error
        }
        return try decode(entries: entries, metadata: metadata, file: file)
    }

    /// What to say instead of "missing" or "corrupt" for a checkpoint of format 1 (its run state
    /// was `checkpoint.json`, beside tensors without it) or another JSON file: its first 8 bytes
    /// (`{"config`) would otherwise be read as a header of quintillions of bytes. Nil for anything else.
    static func formatOne(_ file: String, instead error: CheckpointError) -> CheckpointError? {
        let formatOne =
            "this version reads format \(CheckpointState.currentFormat), one checkpoint.safetensors holding the tensors and the run state; train the run again"
        switch error {
        case .fileNotFound:
            let stateFile = ((file as NSString).deletingLastPathComponent as NSString).appendingPathComponent("checkpoint.json")
            guard (file as NSString).lastPathComponent == fileName, FileManager.default.fileExists(atPath: stateFile) else { return nil }
            return .invalidState(
                path: stateFile, field: "format", reason: "1, whose run state is this checkpoint.json beside the tensors; \(formatOne)")
        case .corrupt:
            guard let handle = FileHandle(forReadingAtPath: file), let head = try? handle.read(upToCount: 64) else { return nil }
            try? handle.close()
            guard head.first(where: { !" \t\r\n".utf8.contains($0) }) == UInt8(ascii: "{") else { return nil }
            // The format number of a format-1 state is its key "format"; the file is read whole only here.
            let object = (try? Data(contentsOf: URL(fileURLWithPath: file))).flatMap { try? JSONSerialization.jsonObject(with: $0) }
            if let state = object as? [String: Any], let format = state["format"] as? Int {
                return .invalidState(
                    path: file, field: "format",
                    reason: "\(format), a JSON run state (format 1's checkpoint.json) rather than a checkpoint; \(formatOne)")
            }
            return .corrupt(
                path: file, reason: "a JSON file, not a checkpoint (a safetensors file: an 8-byte header length, a JSON header, the tensors' data)")
        default:
            return nil
        }
    }

    /// Decodes and checks a checkpoint from a safetensors file's bytes; `file` names it.
    /// - Throws: ``CheckpointError``, as ``read(_:)``.
    public static func decode(_ bytes: [UInt8], file: String) throws(CheckpointError) -> LoadedCheckpoint {
        let (entries, metadata) = try SafeTensors.decode(bytes, source: file)
        return try decode(entries: entries, metadata: metadata, file: file)
    }

    private static func decode(entries: [SafeTensors.Entry], metadata: [String: String], file: String) throws(CheckpointError)
        -> LoadedCheckpoint
    {
        guard let json = metadata[stateKey] else {
            throw .invalidState(
                path: file, field: "__metadata__.\(stateKey)",
                reason: "missing: not a Neuron checkpoint, or one of format 1 (with checkpoint.json beside it), which this version does not read")
        }
        let state: CheckpointState
        do {
            let decoder = JSONDecoder()
            decoder.nonConformingFloatDecodingStrategy = .convertFromString(positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
            state = try decoder.decode(CheckpointState.self, from: Data(json.utf8))
        } catch let error as DecodingError {
            let (field, reason) = describe(error)
            throw .invalidState(path: file, field: field, reason: reason)
        } catch {
            throw .invalidState(path: file, field: stateKey, reason: "\(error)")
        }
        let tensors = Dictionary(entries.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        var checked = state
        try checked.validate(tensors: tensors, file: file)
        // The folder by hand: Foundation's `deletingLastPathComponent` traps on some bare names.
        let directory = file.lastIndex(of: "/").map { $0 == file.startIndex ? "/" : String(file[..<$0]) } ?? "."
        if let count = checked.recordCount,
            let all = RunOutputs.readMetrics((directory as NSString).appendingPathComponent("metrics.csv"), records: count),
            EpochRecord.bounded(all, limit: recordLimit).elementsEqual(checked.records, by: { $0.isSame(as: $1) })
        {
            // The whole history, as the checkpoint's own thinned records say it was; otherwise
            // (metrics.csv gone or edited) the run goes on with the thinned one.
            (checked.records, checked.recordCount) = (all, nil)
        }
        return LoadedCheckpoint(path: directory, file: file, state: checked, tensors: tensors)
    }

    /// The field a decoding error is about, as a key path (`position.batches.order`), and what is wrong.
    static func describe(_ error: DecodingError) -> (field: String, reason: String) {
        func path(_ keys: [any CodingKey]) -> String {
            var text = ""
            for key in keys {
                if let index = key.intValue { text += "[\(index)]" } else { text += (text.isEmpty ? "" : ".") + key.stringValue }
            }
            return text.isEmpty ? stateKey : text
        }
        switch error {
        case let .typeMismatch(type, context):
            return (path(context.codingPath), "expected \(typeName(type)): \(context.debugDescription)")
        case let .valueNotFound(type, context):
            return (path(context.codingPath), "expected \(typeName(type)), found null")
        case let .keyNotFound(key, context):
            return (path(context.codingPath + [key]), "missing")
        case let .dataCorrupted(context):
            return (path(context.codingPath), context.debugDescription)
        @unknown default:
            return (stateKey, "\(error)")
        }
    }

    private static func typeName(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Int.Type, is UInt64.Type: "an integer"
        case is Double.Type: "a number"
        case is Bool.Type: "true or false"
        default: "\(type)"
        }
    }
}

extension GradientCheckReport.TensorResult {
    /// The result with its shape in the layout the checkpoint stores the tensor in.
    public var inFileLayout: GradientCheckReport.TensorResult {
        var result = self
        result.shape = Checkpoint.fileShape(shape, order: pytorchOrder)
        return result
    }
}

extension GradientCheckReport {
    /// The report with each tensor's shape, and each entry's position and flat index, in the layout
    /// the checkpoint stores that tensor in (`layers.0.weight` as `nn.Linear`'s (outputs, inputs)),
    /// so that a name and a position point at the element a reader of the file finds there. The
    /// input and every other tensor keep their shapes.
    public func inFileLayout() -> GradientCheckReport {
        var report = self
        report.tensors = tensors.map(\.inFileLayout)
        let held = Dictionary(report.tensors.map { ($0.name, ($0.shape, $0.pytorchOrder)) }, uniquingKeysWith: { a, _ in a })
        for i in report.worst.indices {
            let entry = report.worst[i]
            guard let (shape, order) = held[entry.name] else { continue }
            let position = Checkpoint.fileShape(entry.position, order: order)
            report.worst[i].position = position
            report.worst[i].index = zip(position, shape).reduce(0) { $0 * $1.1 + $1.0 }  // row-major, within a held tensor's count
        }
        return report
    }
}
