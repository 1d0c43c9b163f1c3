// Reading a run config from YAML or JSON (JSON is YAML 1.2, so Yams reads both). The text is first
// composed into a node tree and walked against the schema, so that an unknown key or a value of the
// wrong type is reported where it is written; only then is it decoded into `RunConfig`, and every
// value is checked, each error pointing at the line and column of the value at fault.
import Foundation
import NeuronCore
import Yams

/// What is wrong with a config file, and where.
public struct ConfigError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The config file, as given to ``ConfigLoader/load(_:)`` (or the `source` given to ``ConfigLoader/parse(_:source:baseDirectory:)``).
    public var file: String
    /// The line, counted from 1, when the parser knows it.
    public var line: Int?
    /// The column, counted from 1 in Unicode scalars (as libyaml counts), when the parser knows it.
    public var column: Int?
    /// What was found and what was expected.
    public var message: String

    /// An error in `file`, at `line` and `column` when they are known.
    public init(file: String, line: Int? = nil, column: Int? = nil, message: String) {
        (self.file, self.line, self.column, self.message) = (file, line, column, message)
    }

    init(_ file: String, at mark: Mark?, _ message: String) {
        self.init(file: file, line: mark?.line, column: mark?.column, message: message)
    }

    /// `Data/xor.yaml:7:5: unknown key 'learning_rate' in optimizer; did you mean 'learningRate'?`,
    /// or `Data/xor.yaml: …` when the place is unknown: the compiler's shape, so an editor can jump there.
    public var description: String {
        var place = file
        if let line {
            place += ":\(line)"
            if let column { place += ":\(column)" }
        }
        return "\(place): \(message)"
    }
}

/// Reads run configs: YAML or JSON, one schema (``RunConfig``), every key and value checked.
public enum ConfigLoader {
    /// Reads a YAML or JSON config (Yams parses both: JSON is YAML 1.2), checks every key and value,
    /// and resolves relative data paths against the config file's folder.
    ///
    /// After loading, `model.loss` is set for a network (from the last activation when the file
    /// leaves it out), and every data file the config names exists.
    /// - Parameter path: the config file; errors name it as given.
    /// - Throws: ``ConfigError`` naming the file, and the line and column where the parser knows
    ///   them: a missing or unreadable file, a YAML syntax error, an unknown key (with the nearest
    ///   valid one), a value of the wrong type, a value out of range, a missing data file.
    public static func load(_ path: String) throws(ConfigError) -> RunConfig {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw ConfigError(path, at: nil, "no such file")
        }
        guard !isDirectory.boolValue else { throw ConfigError(path, at: nil, "is a directory; expected a YAML or JSON config file") }
        guard let data = FileManager.default.contents(atPath: path) else { throw ConfigError(path, at: nil, "cannot be read") }
        guard data.count <= ConfigLimits.textBytes else {
            throw ConfigError(path, at: nil, "is \(data.count) bytes; a config is at most \(ConfigLimits.textBytes) bytes (is this the config file?)")
        }
        guard let text = String(data: data, encoding: .utf8) else { throw ConfigError(path, at: nil, "is not UTF-8 text; expected YAML or JSON") }
        return try parse(text, source: path, baseDirectory: folder(of: path))
    }

    /// The same as ``load(_:)`` from text; `source` names it in errors.
    /// - Parameters:
    ///   - text: the config's YAML or JSON.
    ///   - source: the config's name in errors (its path).
    ///   - baseDirectory: the folder relative data paths are resolved against (`""`: the
    ///     current directory), after which every data file must exist; nil leaves the paths as they
    ///     are and does not look for the files.
    /// - Throws: ``ConfigError``, as ``load(_:)``.
    public static func parse(_ text: String, source: String, baseDirectory: String?) throws(ConfigError) -> RunConfig {
        try checkExpandedSize(text, source: source)
        let composed: Node?
        do {
            composed = try Yams.compose(yaml: text)
        } catch let error as YamlError {
            throw syntaxError(error, source: source)
        } catch {
            throw ConfigError(source, at: nil, "invalid YAML: \(error)")
        }
        guard let root = composed else {
            throw ConfigError(source, at: nil, "the file is empty; expected a mapping with the keys model and data")
        }

        var walk = ConfigSchemaWalk(source: source)
        try walk.check(root, against: RunConfig.shape, at: "")

        var config: RunConfig
        do {
            config = try YAMLDecoder().decode(RunConfig.self, from: root)
        } catch {
            // The walk has checked every key and type the decoder reads, so this is a bug here.
            throw ConfigError(source, at: root.mark, "cannot be decoded after passing the schema check: \(error)")
        }

        let checker = ConfigChecker(source: source, nodes: walk.nodes)
        try checker.validate(&config)
        config.origin = walk.nodes.origin(file: source)
        if let baseDirectory { try checker.resolveDataPaths(in: &config, against: baseDirectory) }
        return config
    }

    /// The folder holding `path` (`""` for a bare file name, which is relative to the current directory).
    static func folder(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "" }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// `path` relative to `base` unless it is absolute (or `base` is the current directory, `""`).
    static func resolve(_ path: String, against base: String) -> String {
        guard !path.hasPrefix("/"), !base.isEmpty else { return path }
        return base.hasSuffix("/") ? base + path : base + "/" + path
    }

    /// Yams' syntax errors, at the place libyaml reports.
    private static func syntaxError(_ error: YamlError, source: String) -> ConfigError {
        switch error {
        case let .scanner(context, problem, mark, _), let .parser(context, problem, mark, _), let .composer(context, problem, mark, _):
            let during = context.map { " (\($0.text) at line \($0.mark.line), column \($0.mark.column))" } ?? ""
            return ConfigError(source, at: mark, "invalid YAML: \(problem)\(during)")
        case let .duplicatedKeysInMapping(duplicates, context):
            let keys = duplicates.map { "'\($0)'" }.joined(separator: ", ")
            let repeated = duplicates.count == 1 ? "the key \(keys) appears" : "the keys \(keys) appear"
            return ConfigError(source, at: context.mark, "\(repeated) more than once in one mapping; each key may appear once")
        default:
            return ConfigError(source, at: nil, "invalid YAML: \(error)")
        }
    }
}

extension ConfigLoader {
    /// Every key path the schema allows (`model.layers[].units`), for the test against the Codable keys.
    static var schemaKeyPaths: Set<String> { RunConfig.shape.keyPaths() }
}

// MARK: - The walk: keys and types, with their places

/// The nodes of a config by path (`optimizer.learningRate`, `model.layers[0].units`): values, and
/// the keys that name them, so that later checks can point at them.
private struct ConfigNodes {
    var values: [String: Node] = [:]
    var keys: [String: Node] = [:]

    /// Whether the file gives `path` a value (null counts as absent: the default).
    func has(_ path: String) -> Bool { values[path].map { !isNull($0) } ?? false }

    /// Each path's place (its value's, else its key's), for checks made after loading.
    func origin(file: String) -> ConfigOrigin {
        var places: [String: (line: Int, column: Int)] = [:]
        for (path, node) in keys { if let mark = node.mark { places[path] = (mark.line, mark.column) } }
        for (path, node) in values { if let mark = node.mark { places[path] = (mark.line, mark.column) } }
        return ConfigOrigin(file: file, places: places)
    }
}

private func isNull(_ node: Node) -> Bool { node.null != nil }

/// The text of a scalar as written, quoted when it is a string: `-1`, `'parquet'`.
private func written(_ node: Node) -> String {
    guard case let .scalar(scalar) = node else { return describe(node) }
    return isString(scalar) ? "'\(cut(scalar.string))'" : cut(scalar.string)
}

private func isString(_ scalar: Node.Scalar) -> Bool {
    scalar.style == .singleQuoted || scalar.style == .doubleQuoted || resolvedTag(.scalar(scalar)) == .str
}

/// The node's tag, resolved from its text when implicit (`1` is an int, `1.5` a float, `on` a bool).
private func resolvedTag(_ node: Node) -> Tag.Name { Tag.Name(rawValue: node.tag.rawValue) }

/// `text` cut to its first 40 characters and `…`: a message quotes what was written, never a
/// megabyte of it.
private func cut(_ text: String) -> String {
    guard text.unicodeScalars.count > 40 else { return text }
    return String(String.UnicodeScalarView(text.unicodeScalars.prefix(40))) + "… (\(text.utf8.count) bytes)"
}

/// What a node is, for "found …": `a list`, `the string '0.1'`, `1.5`, `nothing (null)`.
private func describe(_ node: Node) -> String {
    switch node {
    case let .mapping(mapping): return mapping.isEmpty ? "an empty mapping" : "a mapping"
    case let .sequence(sequence): return sequence.isEmpty ? "an empty list" : "a list"
    case .alias: return "an alias"
    case let .scalar(scalar):
        if isNull(node) { return "nothing (null)" }
        if isString(scalar) { return "the string '\(cut(scalar.string))'" }
        return cut(scalar.string)
    }
}

/// Walks the node tree against the schema: unknown keys (with the nearest valid one), missing
/// required keys, values of the wrong type and names that are not among a choice's (with the
/// nearest), in document order; records every node's place.
private struct ConfigSchemaWalk {
    let source: String
    var nodes = ConfigNodes()

    /// Refuses `!!null xor`: the tag says absent, the text says xor, and neither reading is safe to pick.
    func refuseTaggedNull(_ node: Node, at path: String) throws(ConfigError) {
        guard resolvedTag(node) == .null, !isNull(node) else { return }
        throw ConfigError(
            source, at: node.mark,
            "\(path): tagged !!null but written \(written(node)); write null (or leave the key out) for the default, or the value without the tag")
    }

    mutating func check(_ node: Node, against shape: ConfigShape, at path: String) throws(ConfigError) {
        switch shape {
        case let .mapping(fields, required):
            guard case let .mapping(mapping) = node else { throw typeError(node, shape, path) }
            for (keyNode, value) in mapping {
                let key = keyNode.scalar?.string ?? describe(keyNode)
                guard let field = fields.first(where: { $0.key == key }) else {
                    throw ConfigError(source, at: keyNode.mark, unknownKey(key, in: path, valid: fields.map(\.key)))
                }
                let child = path.isEmpty ? key : path + "." + key
                nodes.keys[child] = keyNode
                nodes.values[child] = value
                try refuseTaggedNull(value, at: child)
                if isNull(value) {
                    guard !required.contains(key) else { throw typeError(value, field.shape, child) }
                    continue  // null is the default
                }
                try check(value, against: field.shape, at: child)
            }
            for (key, _) in fields where required.contains(key) && mapping[key] == nil {
                let place = path.isEmpty ? "at the top level" : "in \(path)"
                throw ConfigError(source, at: nodes.keys[path]?.mark ?? (path.isEmpty ? nil : node.mark), "missing key '\(key)' \(place)")
            }
        case let .list(element):
            guard case let .sequence(sequence) = node else { throw typeError(node, shape, path) }
            for (i, item) in sequence.enumerated() {
                let child = "\(path)[\(i)]"
                nodes.values[child] = item
                try refuseTaggedNull(item, at: child)
                try check(item, against: element, at: child)
            }
        case .string:
            guard node.scalar != nil, !isNull(node) else { throw typeError(node, shape, path) }
        case let .choice(names):
            guard let scalar = node.scalar, !isNull(node) else { throw typeError(node, shape, path) }
            guard names.contains(scalar.string) else {
                var message = "\(path): expected one of \(names.joined(separator: ", ")); found '\(cut(scalar.string))'"
                if let suggestion = Spelling.nearest(to: scalar.string, in: names) { message += "; did you mean '\(suggestion)'?" }
                throw ConfigError(source, at: node.mark, message)
            }
        case .number:
            guard let scalar = plainScalar(node, tags: [.int, .float]), let value = Double.construct(from: scalar) else {
                throw typeError(node, shape, path)
            }
            // `1e400` reads as infinity; say so with the text as written, not "inf".
            if value.isInfinite, !scalar.string.lowercased().contains("inf") {
                throw ConfigError(
                    source, at: node.mark,
                    "\(path): expected a number of at most about 1.8e308 in size; found \(cut(scalar.string)), which is beyond it")
            }
        case .integer:
            guard let scalar = plainScalar(node, tags: [.int]), Int.construct(from: scalar) != nil else {
                throw typeError(node, shape, path)
            }
        case .seed:
            guard let scalar = plainScalar(node, tags: [.int]), UInt64.construct(from: scalar) != nil else {
                throw typeError(node, shape, path)
            }
        case .boolean:
            // YAML 1.1 also reads yes, no, on, off, y and n as booleans; a config takes only true and false.
            guard let scalar = plainScalar(node, tags: [.bool]), ["true", "false"].contains(scalar.string) else {
                throw typeError(node, shape, path)
            }
        }
    }

    /// An unquoted scalar whose resolved tag is one of `tags`: so `"0.1"` is a string, not a number.
    private func plainScalar(_ node: Node, tags: Set<Tag.Name>) -> Node.Scalar? {
        guard case let .scalar(scalar) = node, !isString(scalar), tags.contains(resolvedTag(node)) else { return nil }
        return scalar
    }

    private func typeError(_ node: Node, _ shape: ConfigShape, _ path: String) -> ConfigError {
        var message = "\(path.isEmpty ? "top level" : path): expected \(shape.expectation); found \(describe(node))"
        switch shape {
        case .number, .integer, .seed:
            if case let .scalar(scalar) = node, isString(scalar), Double(scalar.string) != nil {
                message += " (numbers are written without quotes)"
            }
        case .boolean:
            if case let .scalar(scalar) = node, isString(scalar), ["true", "false"].contains(scalar.string.lowercased()) {
                message += " (true and false are written without quotes)"
            }
        case .mapping, .list, .string, .choice:
            break
        }
        return ConfigError(source, at: node.mark, message)
    }

    private func unknownKey(_ key: String, in path: String, valid: [String]) -> String {
        let place = path.isEmpty ? "at the top level" : "in \(path)"
        if let suggestion = Spelling.nearest(to: key, in: valid) {
            return "unknown key '\(cut(key))' \(place); did you mean '\(suggestion)'?"
        }
        return "unknown key '\(cut(key))' \(place); expected one of \(valid.joined(separator: ", "))"
    }
}

// MARK: - Values

/// The checks on decoded values, each pointing at the value at fault (or, for a key that is
/// missing, at the mapping that should hold it).
struct ConfigChecker {
    let source: String
    fileprivate let nodes: ConfigNodes

    /// Whether the file writes the key `path`, with any value, null among them.
    func writesKey(_ path: String) -> Bool { nodes.keys[path] != nil }

    // MARK: Reporting

    /// An error at the value of `path` (or at its key, or nowhere when neither is in the file).
    func error(at path: String, _ message: String) -> ConfigError {
        ConfigError(source, at: (nodes.values[path] ?? nodes.keys[path])?.mark, message)
    }

    /// `path: expected <expected>; found <the value as written>`.
    func expected(_ expected: String, at path: String, found fallback: @autoclosure () -> String) -> ConfigError {
        let found = nodes.values[path].map(written) ?? fallback()
        return error(at: path, "\(path): expected \(expected); found \(found)")
    }

    func require(
        _ condition: Bool, _ expected: @autoclosure () -> String, at path: String,
        found: @autoclosure () -> String
    ) throws(ConfigError) {
        guard condition else { throw self.expected(expected(), at: path, found: found()) }
    }

    /// Runs the shared range checks of `check` (Config/ConfigRanges.swift), reporting the first
    /// value out of range where it is written.
    func ranges(_ check: () throws(ConfigRangeError) -> Void) throws(ConfigError) {
        do { try check() } catch { throw expected(error.expected, at: error.key, found: error.value) }
    }

    /// `tanh, sigmoid, relu or identity`: the names of `choices`, for prose.
    func alternatives<Choice: ConfigChoice>(_ choices: [Choice]) -> String {
        let names = choices.map(\.rawValue)
        return names.count < 2 ? names.joined() : names.dropLast().joined(separator: ", ") + " or " + names.last!
    }

    /// A key the section requires for its kind: missing, at the section's key.
    func missing(_ key: String, in section: String, because reason: String) -> ConfigError {
        ConfigError(source, at: (nodes.keys[section] ?? nodes.values[section])?.mark, "missing key '\(key)' in \(section); \(reason)")
    }

    /// Rejects, in document order, any key of `section` given a value but not among `allowed` (or `kind`).
    func onlyKeys<Key: CodingKey>(_ allowed: [Key], in section: String, for what: String) throws(ConfigError) {
        guard case let .mapping(mapping)? = nodes.values[section] else { return }
        let allowed = allowed.map(\.stringValue)
        for (keyNode, value) in mapping {
            guard let key = keyNode.scalar?.string, key != "kind", !allowed.contains(key), !isNull(value) else { continue }
            let takes = allowed.isEmpty ? "it takes no other keys" : "it takes \(allowed.joined(separator: ", "))"
            throw ConfigError(source, at: keyNode.mark, "\(section).\(key) does not apply to \(what); \(takes)")
        }
    }

    // MARK: Sections

    // The walk has checked every choice against its names, and every key against its section's
    // keys; what remains are ranges, keys that belong to another kind, and choices that do not fit
    // together.

    func validate(_ config: inout RunConfig) throws(ConfigError) {
        if config.model.neuron != nil { try validateNeuron(config) } else { try validateNetwork(&config) }
        try validateData(config.data)
        try validateOptimizer(config.optimizer)
        try validateTraining(config.training)
        try ranges { () throws(ConfigRangeError) in try config.output.checkRanges() }
        try validatePairing(config)
    }

    /// The choices of one section that another's decide: text data and a text model go together,
    /// counting fits only a bigram model, samples are drawn only from a text model.
    func validatePairing(_ config: RunConfig) throws(ConfigError) {
        guard config.model.neuron == nil else { return }
        let model = config.model
        if let threads = config.training.batchThreads, threads > 1, let i = model.layers.firstIndex(where: { $0.kind == .batchNorm }) {
            throw expected(
                "1, as model.layers[\(i)] (batchNorm) normalizes with the whole batch's statistics, which a batch split over threads would not see",
                at: "training.batchThreads", found: "\(threads)")
        }
        if model.transformer != nil {
            try require(
                config.data.kind == .text, "text for a transformer, which reads token indices (model.transformer)", at: "data.kind",
                found: "'\(config.data.kind.rawValue)'")
            if let positions = model.transformer?.positions, let block = config.data.blockSize, block > positions {
                throw error(
                    at: "model.transformer.positions",
                    "model.transformer.positions: the position table's \(positions) rows cannot serve data.blockSize \(block) positions; give positions of at least \(block), or leave it out for the block size"
                )
            }
        } else if config.data.kind == .text {
            try require(
                model.takesTokens, "an embedding as the first layer: text data is read as token indices", at: "model.layers[0].kind",
                found: "'\(model.layers[0].kind.rawValue)'")
        } else if model.takesTokens {
            throw error(
                at: "model.layers[0].kind",
                "model.layers[0].kind: an embedding reads token indices, which only text data gives (data.kind is \(config.data.kind.rawValue))")
        }
        try validateLength(config)
        if config.training.fit == .counts {
            let layers = model.layers.map(\.kind.rawValue).joined(separator: ", ")
            let found = model.transformer != nil ? "a transformer" : "\(model.layers.count) layer\(model.layers.count == 1 ? "" : "s") (\(layers))"
            try require(
                model.transformer == nil && model.layers.count == 1 && model.takesTokens && model.layers[0].features == nil,
                "a bigram model for training.fit: counts: one embedding layer whose features are left out (the vocabulary's size, a table of logits)",
                at: "model.layers",
                found: found)
        }
        if let samples = config.output.samples {
            try require(model.takesTokens || samples == 0, "0: only a text model samples lines", at: "output.samples", found: "\(samples)")
        }
    }

    /// A document run is measured in steps with evaluations between them; any other in epochs.
    func validateLength(_ config: RunConfig) throws(ConfigError) {
        let training = config.training
        guard config.data.kind == .text, config.data.unit == .document else {
            for key in ["steps", "evaluateEvery", "evaluation", "evaluationBatches"] where nodes.has("training.\(key)") {
                throw ConfigError(
                    source, at: nodes.keys["training.\(key)"]?.mark,
                    "training.\(key) applies to a document run (data.kind: text, data.unit: document), which is measured in steps; this run is measured in training.epochs"
                )
            }
            return
        }
        if nodes.has("training.epochs") {
            throw ConfigError(
                source, at: nodes.keys["training.epochs"]?.mark,
                "training.epochs does not apply to a document run, which draws windows at random rather than passing over its text; give training.steps, and training.evaluateEvery for the steps between evaluations"
            )
        }
        guard training.steps != nil else {
            throw missing("steps", in: "training", because: "a document run (data.unit: document) is measured in steps")
        }
        if training.evaluationBatches != nil, training.evaluation != .estimate {
            throw error(
                at: "training.evaluationBatches",
                "training.evaluationBatches applies to training.evaluation: estimate (the exact loss reads every validation character once)")
        }
        try require(
            training.fit != .counts, "gradientDescent for a document (counting reads the pairs of lines)", at: "training.fit", found: "counts")
    }

    /// The sugar's own rules: `model.neuron` stands for one tanh unit on one sample, trained by
    /// plain gradient steps for `training.iterations` (``RunConfig/desugared``), so the keys that
    /// would say otherwise are refused rather than ignored.
    func validateNeuron(_ config: RunConfig) throws(ConfigError) {
        guard config.model.layers.isEmpty, config.model.transformer == nil else {
            let other = config.model.transformer == nil ? "layers (a network)" : "transformer (a GPT)"
            throw ConfigError(
                source, at: nodes.keys["model.neuron"]?.mark, "model: expected either \(other) or neuron (the single neuron), not both")
        }
        if let inputs = config.model.inputs {
            try require(inputs == 1, "1 for the single neuron (it has one input)", at: "model.inputs", found: "\(inputs)")
        }
        try ranges { () throws(ConfigRangeError) in try config.model.checkRanges() }  // its weight and bias
        if nodes.has("model.loss") {
            throw ConfigError(
                source, at: nodes.keys["model.loss"]?.mark,
                "model.loss does not apply to the single neuron; its loss is always half the squared error")
        }
        try require(
            config.data.kind == .sample, "sample for the single neuron (model.neuron trains on one input and target)", at: "data.kind",
            found: "'\(config.data.kind.rawValue)'")
        try require(
            config.optimizer.kind == .sgd, "sgd for the single neuron (it takes plain gradient steps)", at: "optimizer.kind",
            found: "'\(config.optimizer.kind.rawValue)'")
        try onlyKeys([OptimizerConfig.CodingKeys.learningRate], in: "optimizer", for: "the single neuron (plain gradient steps)")
        if nodes.has("training.iterations"), nodes.has("training.epochs") {
            throw ConfigError(
                source, at: nodes.keys["training.epochs"]?.mark,
                "training: expected iterations or epochs, not both (the single neuron's iterations are its epochs, one step on its one sample)")
        }
    }

    /// A network's model; `sample` data and `training.iterations` are the single neuron's.
    func validateNetwork(_ config: inout RunConfig) throws(ConfigError) {
        try require(
            config.data.kind != .sample,
            "\(alternatives(DataConfig.Kind.allCases.filter { $0 != .sample })) for a network (sample is the single neuron's one input and target)",
            at: "data.kind", found: "'sample'")
        if nodes.has("training.iterations") {
            throw ConfigError(
                source, at: nodes.keys["training.iterations"]?.mark,
                "training.iterations is the single neuron's name for its epochs; a network trains for training.epochs")
        }
        try validateModel(&config.model)
    }

    func validateModel(_ model: inout ModelConfig) throws(ConfigError) {
        if model.transformer != nil {
            guard !nodes.has("model.layers") else {
                throw ConfigError(
                    source, at: nodes.keys["model.transformer"]?.mark,
                    "model: expected either layers (a network of the layers listed) or transformer (a GPT by its sizes), not both")
            }
            try ranges { () throws(ConfigRangeError) in try model.checkRanges() }  // the sizes, the inputs
            if nodes.has("model.inputShape") {
                throw ConfigError(
                    source, at: nodes.keys["model.inputShape"]?.mark, "model.inputShape does not apply to a transformer, which reads text")
            }
            if let loss = model.loss {
                try require(loss == .sequenceCrossEntropy, "sequenceCrossEntropy for a transformer", at: "model.loss", found: "'\(loss.rawValue)'")
            }
            model.loss = .sequenceCrossEntropy
            return
        }
        guard nodes.has("model.layers") else {
            throw missing("layers", in: "model", because: "a model needs layers (a network), transformer (a GPT) or neuron (the single neuron)")
        }
        try ranges { () throws(ConfigRangeError) in try model.checkRanges() }  // at least one layer, the inputs, the image shape
        for (i, layer) in model.layers.enumerated() {
            try validateLayer(layer, at: "model.layers[\(i)]", isLast: i == model.layers.count - 1)
            model.layers[i].writeActivations()
        }
        for (i, layer) in model.layers.enumerated().dropFirst() where layer.kind == .embedding {
            throw error(
                at: "model.layers[\(i)].kind",
                "model.layers[\(i)].kind: an embedding reads token indices, so it can only be the first layer (found at \(i))")
        }
        if model.takesTokens, let last = model.layers.last, last.kind != .embedding, last.effectiveActivation != .identity {
            let i = model.layers.count - 1
            throw error(
                at: "model.layers[\(i)].activation",
                "model.layers[\(i)].activation: expected identity for a text model's output layer, which gives the scores (logits) whose softmax the loss takes at each position; found \(last.effectiveActivation.rawValue)\(last.activation == nil ? " (the default)" : "")"
            )
        }
        guard let loss = model.loss else {
            model.loss = model.effectiveLoss
            return
        }
        let last = model.layers.last!.effectiveActivation  // at least one layer: checked above
        if model.takesTokens || loss == .sequenceCrossEntropy {
            try require(
                model.takesTokens && loss == .sequenceCrossEntropy,
                model.takesTokens
                    ? "sequenceCrossEntropy for a text model (its first layer is an embedding)"
                    : "\(alternatives(Loss.allCases.filter { $0 != .sequenceCrossEntropy })): sequenceCrossEntropy needs a text model, whose first layer is an embedding",
                at: "model.loss", found: "'\(loss.rawValue)'")
        } else if last == .softmax {
            try require(
                loss == .softmaxCrossEntropy, "softmaxCrossEntropy after a softmax output layer",
                at: "model.loss", found: "'\(loss.rawValue)'")
        } else {
            try require(
                loss == .halfSquaredError,
                "halfSquaredError: softmaxCrossEntropy needs a softmax output layer, and the last layer's activation is \(last.rawValue)",
                at: "model.loss", found: "'\(loss.rawValue)'")
        }
    }

    /// One layer's keys for its kind, the keys its kind needs, and their ranges; shapes are
    /// checked when the network is built against the data.
    func validateLayer(_ layer: LayerConfig, at path: String, isLast: Bool) throws(ConfigError) {
        let kind = layer.kind
        try onlyKeys(kind.keys, in: path, for: "a \(kind.rawValue) layer")
        try kind.spec.validate(layer, at: path, self)
        try ranges { () throws(ConfigRangeError) in try layer.checkRanges(at: path) }
        if layer.activation == .softmax {
            let others = alternatives(Activation.allCases.filter { $0 != .softmax })
            try require(
                kind.spec.takesSoftmax, "\(others) for a \(kind.rawValue) layer (softmax belongs only in a dense output layer)",
                at: "\(path).activation", found: "'softmax'")
            try require(
                isLast, "\(others) before the last layer (softmax belongs only in the output layer)", at: "\(path).activation", found: "'softmax'")
        }
    }

    func validateData(_ data: DataConfig) throws(ConfigError) {
        try onlyKeys(data.kind.keys, in: "data", for: "a \(data.kind.rawValue) dataset")
        switch data.kind {
        case .csv:
            let needs = "a csv dataset needs path and labelColumn"
            guard data.path != nil else { throw missing("path", in: "data", because: needs) }
            guard data.labelColumn != nil else { throw missing("labelColumn", in: "data", because: needs) }
            if let columns = data.featureColumns {
                try require(
                    !columns.isEmpty, "at least one column (or leave featureColumns out for every other column)",
                    at: "data.featureColumns", found: "an empty list")
            }
        case .idx:
            let needs = "an idx dataset needs trainImages and trainLabels"
            guard data.trainImages != nil else { throw missing("trainImages", in: "data", because: needs) }
            guard data.trainLabels != nil else { throw missing("trainLabels", in: "data", because: needs) }
            if (data.testImages == nil) != (data.testLabels == nil) {
                let (given, absent) = data.testImages == nil ? ("testLabels", "testImages") : ("testImages", "testLabels")
                throw missing(absent, in: "data", because: "a test set needs testImages and testLabels together, and \(given) is given")
            }
        case .synthetic:
            guard let name = data.name else {
                throw missing("name", in: "data", because: "a synthetic dataset needs name (\(alternatives(DataConfig.SyntheticName.allCases)))")
            }
            if data.count != nil, name != .sine {
                throw ConfigError(
                    source, at: nodes.keys["data.count"]?.mark,
                    "data.count does not apply to the xor dataset (always its 4 rows); only sine takes a count")
            }
        case .sample:
            let needs = "a sample needs input and target"
            guard data.input != nil else { throw missing("input", in: "data", because: needs) }
            guard data.target != nil else { throw missing("target", in: "data", because: needs) }
        case .text where data.unit == .document:
            try onlyKeys(
                [DataConfig.CodingKeys.path, .unit, .blockSize, .tokenizer, .vocabularySize, .pattern, .validationSplit, .testSplit], in: "data",
                for: "a text document (its whole text is one sample; nothing is dropped, lowercased or cut into lines)")
            guard data.path != nil else { throw missing("path", in: "data", because: "a text document needs path, the file of its text") }
            guard data.blockSize != nil else {
                throw missing(
                    "blockSize", in: "data", because: "a text document needs blockSize, the characters a window reads (nanoGPT's block_size)")
            }
            if data.tokenizer != nil, data.vocabularySize != nil {
                throw self.error(
                    at: "data.vocabularySize",
                    "data.vocabularySize trains a tokenizer, but data.tokenizer gives one; give one of the two")
            }
            if let pattern = data.pattern, data.vocabularySize == nil, !(data.tokenizer ?? "").hasSuffix(".tiktoken") {
                throw self.error(
                    at: "data.pattern",
                    "data.pattern \(pattern.rawValue) splits the text for a tokenizer data.vocabularySize trains, or for a .tiktoken ranks file (data.tokenizer), which carries none; \(data.tokenizer == nil ? "this document reads characters" : "the tokenizer file gives its own")"
                )
            }
        case .text:
            guard data.path != nil else { throw missing("path", in: "data", because: "a text dataset needs path, a file of one sample per line") }
            let tokenizerKeys: [DataConfig.CodingKeys] = [.tokenizer, .vocabularySize, .pattern]
            try onlyKeys(
                DataConfig.Kind.text.keys.filter { !tokenizerKeys.contains($0) }, in: "data",
                for: "a text of lines, whose model reads characters (a tokenizer's tokens need data.unit: document)")
            if let keep = data.keep {
                do { _ = try CharacterClass(keep) } catch { throw self.error(at: "data.keep", "data.keep: \(error)") }
            }
        }
        try ranges { () throws(ConfigRangeError) in try data.checkRanges() }
    }

    func validateOptimizer(_ optimizer: OptimizerConfig) throws(ConfigError) {
        try onlyKeys(optimizer.kind.keys, in: "optimizer", for: optimizer.kind.rawValue)
        let schedule = optimizer.schedule
        try onlyKeys(schedule.kind.keys, in: "optimizer.schedule", for: "a \(schedule.kind.rawValue) schedule")
        if schedule.kind == .step, schedule.every == nil {
            throw missing("every", in: "optimizer.schedule", because: "a step schedule multiplies the rate by factor every so many epochs")
        }
        try ranges { () throws(ConfigRangeError) in try optimizer.checkRanges() }
    }

    func validateTraining(_ training: TrainingConfig) throws(ConfigError) {
        if let smoothing = training.smoothing {
            try require(
                training.fit == .counts, "nothing: smoothing belongs to training.fit: counts", at: "training.smoothing", found: "\(smoothing)")
        }
        if training.products == .bf16 {
            try require(
                training.precision == .float, "precision: float for bf16 products, which round Float operands", at: "training.precision",
                found: "'\(training.precision.rawValue)'")
        }
        try ranges { () throws(ConfigRangeError) in try training.checkRanges() }
    }

    // MARK: Data files

    /// Resolves each data path against `base` and checks that the file is there.
    func resolveDataPaths(in config: inout RunConfig, against base: String) throws(ConfigError) {
        func resolved(_ path: String?, key: String) throws(ConfigError) -> String? {
            guard let path else { return nil }
            let full = ConfigLoader.resolve(path, against: base)
            let shown = full == path ? "'\(path)'" : "'\(path)' (looked for \(full))"
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory) else {
                throw error(at: "data.\(key)", "data.\(key): no such file \(shown)")
            }
            guard !isDirectory.boolValue else { throw error(at: "data.\(key)", "data.\(key): \(shown) is a directory; expected a file") }
            return full
        }
        config.data.path = try resolved(config.data.path, key: "path")
        config.data.testPath = try resolved(config.data.testPath, key: "testPath")
        config.data.tokenizer = try resolved(config.data.tokenizer, key: "tokenizer")
        config.data.trainImages = try resolved(config.data.trainImages, key: "trainImages")
        config.data.trainLabels = try resolved(config.data.trainLabels, key: "trainLabels")
        config.data.testImages = try resolved(config.data.testImages, key: "testImages")
        config.data.testLabels = try resolved(config.data.testLabels, key: "testLabels")
    }
}
