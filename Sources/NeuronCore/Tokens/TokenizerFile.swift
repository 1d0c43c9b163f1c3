import Foundation

/// Tokenizer files, read and written: minbpe's `.model` (with its `.vocab` beside it, for people), tiktoken's
/// ranks (`.tiktoken`), Hugging Face's `tokenizer.json`, and GPT-2's `vocab.json` with `merges.txt`.
///
/// Every file read is checked whole before it becomes a tokenizer: a line that does not parse, a token or rank
/// given twice, a rank missing, a merge whose parts or result are no tokens, a pattern this engine does not match.
/// The error names the file and line (``TokenizerError/invalidFile(path:line:reason:)``).
public enum TokenizerFile {
    /// The largest tokenizer file read: cl100k_base's ranks are 1.7 MB, GPT-2's `tokenizer.json` 1.4 MB.
    public static let maximumBytes = 256 << 20

    /// tiktoken's special tokens of cl100k_base, which its ranks file does not carry.
    public static let cl100kSpecialTokens = [
        BytePairTokenizer.SpecialToken(name: "<|endoftext|>", id: 100257),
        BytePairTokenizer.SpecialToken(name: "<|fim_prefix|>", id: 100258),
        BytePairTokenizer.SpecialToken(name: "<|fim_middle|>", id: 100259),
        BytePairTokenizer.SpecialToken(name: "<|fim_suffix|>", id: 100260),
        BytePairTokenizer.SpecialToken(name: "<|endofprompt|>", id: 100276),
    ]

    /// The tokenizer in the file at `path`, by its name: `.model` minbpe's, `.tiktoken` tiktoken's ranks (split by
    /// `pattern`, `cl100k` if nil), `vocab.json` GPT-2's with the `merges.txt` beside it (`gpt2` if nil), any
    /// other `.json` Hugging Face's `tokenizer.json`.
    ///
    /// - Parameters:
    ///   - path: the file.
    ///   - pattern: for a ranks file or GPT-2's, which carry none: the split pattern.
    ///   - specialTokens: for a ranks file, which carries none.
    public static func read(
        _ path: String, pattern: SplitPattern? = nil, specialTokens: [BytePairTokenizer.SpecialToken] = []
    ) throws -> BytePairTokenizer {
        let url = URL(fileURLWithPath: path)
        switch url.pathExtension {
        case "model":
            return try readMinbpe(path)
        case "tiktoken":
            return try readTiktoken(path, pattern: pattern ?? .cl100k, specialTokens: specialTokens)
        case "json" where url.lastPathComponent == "vocab.json":
            let merges = url.deletingLastPathComponent().appendingPathComponent("merges.txt").path
            return try readGPT2(vocabulary: path, merges: merges, pattern: pattern ?? .gpt2)
        case "json":
            return try readHuggingFace(path)
        default:
            throw TokenizerError.invalidFile(
                path: path, line: 0,
                reason: "expected a tokenizer file named .model (minbpe), .tiktoken (tiktoken's ranks), "
                    + "tokenizer.json (Hugging Face) or vocab.json (GPT-2, with merges.txt beside it)")
        }
    }

    /// Writes `tokenizer` to `path`, by its name: `.model` minbpe's (and the `.vocab` beside it), `.json`
    /// Hugging Face's `tokenizer.json`. Each file is written whole or not at all.
    public static func write(_ tokenizer: BytePairTokenizer, to path: String) throws {
        let url = URL(fileURLWithPath: path)
        switch url.pathExtension {
        case "model":
            let model = try minbpeModel(tokenizer, path: path)
            try Data(model.utf8).write(to: url, options: .atomic)
            try Data(minbpeVocabulary(tokenizer).utf8).write(
                to: url.deletingPathExtension().appendingPathExtension("vocab"), options: .atomic)
        case "json":
            try huggingFaceJSON(tokenizer, path: path).write(to: url, options: .atomic)
        default:
            throw TokenizerError.invalidFile(
                path: path, line: 0, reason: "expected a name ending .model (minbpe) or .json (Hugging Face)")
        }
    }

    // MARK: - Reading lines

    /// The UTF-8 text in the file at `path`, a text to train on or encode: read as every data file is
    /// (``DataError``'s reader), so a directory, a FIFO or a device is refused before it is opened, and a file
    /// past `maximumBytes` by its size, or one byte past the limit where the size is not told.
    ///
    /// - Throws: ``DataError/fileNotFound(path:)``, ``DataError/unreadableFile(path:reason:)``,
    ///   ``DataError/fileTooLarge(path:bytes:limit:)``, ``DataError/invalidUTF8(path:line:offset:found:)`` (with the
    ///   line and byte offset of the first byte that is not UTF-8).
    public static func text(at path: String, maximumBytes: Int) throws(DataError) -> String {
        let bytes = try DataFile.bytes(at: path, maximumBytes: maximumBytes)
        if let text = String(validating: bytes, as: UTF8.self) { return text }
        // Not UTF-8: the text reader's decoder finds where, and throws there.
        var i = 0, line = 1
        while i < bytes.count {
            if try TextCorpus.character(in: bytes, at: &i, end: bytes.count, source: path, line: line) == "\n" { line += 1 }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A file that cannot be read as a tokenizer file's error.
    private static func unreadable(_ error: DataError, path: String) -> TokenizerError {
        switch error {
        case .fileNotFound:
            return .invalidFile(path: path, line: 0, reason: "no such file")
        case .fileTooLarge(_, let bytes, _):
            let size = bytes.map { "\($0) bytes" } ?? "more bytes"
            return .invalidFile(path: path, line: 0, reason: "\(size), past the \(maximumBytes >> 20) MiB a tokenizer file may have")
        case .unreadableFile(_, let reason):
            return .invalidFile(path: path, line: 0, reason: "unreadable: \(reason)")
        case .invalidUTF8(_, let line, let offset, _):
            return .invalidFile(path: path, line: line, reason: "not UTF-8 text (at byte offset \(offset))")
        default:
            return .invalidFile(path: path, line: 0, reason: "\(error)")
        }
    }

    /// The file's bytes, refused past ``maximumBytes``.
    static func contents(_ path: String) throws -> [UInt8] {
        do { return try DataFile.bytes(at: path, maximumBytes: maximumBytes) } catch { throw unreadable(error, path: path) }
    }

    /// The file's lines (without their `\n`, a final empty line dropped), refused unless UTF-8.
    static func lines(_ path: String) throws -> [Substring] {
        let text: String
        do { text = try Self.text(at: path, maximumBytes: maximumBytes) } catch { throw unreadable(error, path: path) }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        if lines.last == "" { lines.removeLast() }
        return lines
    }

    /// A ``DefinitionFailure`` as a file error, its place turned into a line by `line`.
    static func failure(_ failure: DefinitionFailure, path: String, line: (DefinitionFailure.Place) -> Int)
        -> TokenizerError
    {
        let reason: String
        switch failure.place {
        case .token(let i): reason = "token \(i): \(failure.reason)"
        default: reason = failure.reason
        }
        return .invalidFile(path: path, line: line(failure.place), reason: reason)
    }

    // MARK: - minbpe

    /// Reads minbpe's `.model`: `minbpe v1`, the pattern, the number of special tokens, a `name id` line for each,
    /// then one `left right` merge per line (merge i makes token 256 + i).
    public static func readMinbpe(_ path: String) throws -> BytePairTokenizer {
        let lines = try lines(path)
        func fail(_ line: Int, _ reason: String) -> TokenizerError { .invalidFile(path: path, line: line, reason: reason) }
        guard lines.count >= 3 else { throw fail(lines.count + 1, "expected the header lines of a minbpe model") }
        guard lines[0] == "minbpe v1" else { throw fail(1, "expected \"minbpe v1\", found \(String(lines[0]).debugDescription)") }
        guard let pattern = SplitPattern(regex: String(lines[1])) else {
            throw fail(2, TokenizerError.unsupportedPattern(String(lines[1])).description)
        }
        guard let count = Int(lines[2]), count >= 0, count <= lines.count - 3 else {
            throw fail(3, "expected the number of special tokens (0 to \(lines.count - 3)), found \(String(lines[2]).debugDescription)")
        }
        var specials: [BytePairTokenizer.SpecialToken] = []
        for line in 3..<3 + count {
            let fields = lines[line].split(separator: " ", omittingEmptySubsequences: false)
            guard fields.count == 2, !fields[0].isEmpty, let id = Int(fields[1]) else {
                throw fail(line + 1, "expected a special token's name and id, found \(String(lines[line]).debugDescription)")
            }
            specials.append(.init(name: String(fields[0]), id: id))
        }
        var merges: [(Int, Int)] = []
        for line in 3 + count..<lines.count {
            let fields = lines[line].split(separator: " ", omittingEmptySubsequences: false)
            guard fields.count == 2, let left = Int(fields[0]), let right = Int(fields[1]) else {
                throw fail(line + 1, "expected a merge, two token ids, found \(String(lines[line]).debugDescription)")
            }
            merges.append((left, right))
        }
        do {
            return try BytePairTokenizer(checking: pattern, merges: merges, specialTokens: specials)
        } catch let failure as DefinitionFailure {
            throw Self.failure(failure, path: path) { place in
                switch place {
                case .merge(let i): return 4 + count + i
                case .special(let i): return 4 + i
                case .token, .vocabulary: return 0
                }
            }
        }
    }

    /// minbpe's `.model` text of a tokenizer of merges whose token i + 256 is merge i's.
    static func minbpeModel(_ tokenizer: BytePairTokenizer, path: String) throws -> String {
        guard tokenizer.isMinbpe else {
            throw TokenizerError.invalidFile(
                path: path, line: 0,
                reason: "a minbpe model holds bytes 0–255 then one token per merge in order; this tokenizer is not "
                    + "of that kind: write it as Hugging Face's tokenizer.json")
        }
        var text = "minbpe v1\n\(tokenizer.pattern.regex)\n\(tokenizer.specialTokens.count)\n"
        for special in tokenizer.specialTokens { text += "\(special.name) \(special.id)\n" }
        for merge in tokenizer.merges { text += "\(merge.left) \(merge.right)\n" }
        return text
    }

    /// minbpe's `.vocab`, for people: `[token] id` for the bytes, `[left][right] -> [token] id` for each merge,
    /// each token's bytes read as UTF-8 (U+FFFD for what is not) with control characters as `\uXXXX`.
    static func minbpeVocabulary(_ tokenizer: BytePairTokenizer) -> String {
        func render(_ id: Int) -> String {
            let text = String(decoding: (try? tokenizer.bytes(of: id)) ?? [], as: UTF8.self)
            var result = ""
            for scalar in text.unicodeScalars {
                switch scalar.properties.generalCategory {
                case .control, .format, .surrogate, .privateUse, .unassigned:
                    result +=
                        "\\u" + String(repeating: "0", count: max(0, 4 - String(scalar.value, radix: 16).count))
                        + String(scalar.value, radix: 16)
                default:
                    result.unicodeScalars.append(scalar)
                }
            }
            return result
        }
        var text = ""
        for id in 0..<256 { text += "[\(render(id))] \(id)\n" }
        for merge in tokenizer.merges {
            text += "[\(render(merge.left))][\(render(merge.right))] -> [\(render(merge.token))] \(merge.token)\n"
        }
        for special in tokenizer.specialTokens { text += "[\(render(special.id))] \(special.id)\n" }
        return text
    }

    // MARK: - tiktoken

    /// Reads tiktoken's ranks: a token's bytes in base64 and its rank per line, the ranks 0..<n each once.
    public static func readTiktoken(
        _ path: String, pattern: SplitPattern, specialTokens: [BytePairTokenizer.SpecialToken] = []
    ) throws -> BytePairTokenizer {
        let lines = try lines(path)
        func fail(_ line: Int, _ reason: String) -> TokenizerError { .invalidFile(path: path, line: line, reason: reason) }
        guard !lines.isEmpty else { throw fail(0, "no ranks: expected a base64 token and its rank per line") }
        var ranks = [[UInt8]?](repeating: nil, count: lines.count)
        var lineOfRank = [Int](repeating: 0, count: lines.count)
        for (index, line) in lines.enumerated() {
            let fields = line.split(separator: " ", omittingEmptySubsequences: false)
            guard fields.count == 2 else {
                throw fail(index + 1, "expected a base64 token and its rank, found \(String(line.prefix(80)).debugDescription)")
            }
            guard let bytes = Data(base64Encoded: String(fields[0])), !bytes.isEmpty else {
                throw fail(index + 1, "\(String(fields[0].prefix(80)).debugDescription) is not the base64 of a token's bytes")
            }
            guard let rank = Int(fields[1]), rank >= 0, rank < Int(Int32.max) else {
                throw fail(index + 1, "the rank \(String(fields[1].prefix(40)).debugDescription) is not in 0..<2³¹")
            }
            guard rank < lines.count else {
                throw fail(index + 1, "the rank \(rank) leaves a gap: \(lines.count) lines give ranks 0..<\(lines.count)")
            }
            guard ranks[rank] == nil else {
                throw fail(index + 1, "the rank \(rank) is line \(lineOfRank[rank])'s too")
            }
            ranks[rank] = Array(bytes)
            lineOfRank[rank] = index + 1
        }
        // Each rank below the line count is given once, so the ranks are exactly 0..<n.
        let tokens = ranks.map { $0! }
        do {
            return try BytePairTokenizer(checking: pattern, ranks: tokens, specialTokens: specialTokens)
        } catch let failure as DefinitionFailure {
            throw Self.failure(failure, path: path) { place in
                if case .token(let rank) = place { return lineOfRank[rank] }
                return 0
            }
        }
    }

    // MARK: - Hugging Face and GPT-2

    /// GPT-2's byte-to-unicode table: the printable bytes stand for themselves, the others for U+0100 on, so that
    /// every token is a printable string.
    static let byteCharacters: [Character] = {
        let printable = Array(33...126) + Array(161...172) + Array(174...255)
        var scalars = [UInt32](repeating: 0, count: 256)
        var next: UInt32 = 256
        for byte in 0..<256 {
            if printable.contains(byte) {
                scalars[byte] = UInt32(byte)
            } else {
                scalars[byte] = next
                next += 1
            }
        }
        return scalars.map { Character(Unicode.Scalar($0)!) }
    }()

    static let characterBytes: [Character: UInt8] = Dictionary(
        uniqueKeysWithValues: byteCharacters.enumerated().map { ($1, UInt8($0)) })

    /// A token's string in GPT-2's byte-level alphabet.
    static func byteLevel(_ bytes: [UInt8]) -> String { String(bytes.map { byteCharacters[Int($0)] }) }

    /// A byte-level string's bytes, or nil for a character outside the alphabet.
    static func bytes(ofByteLevel text: String) -> [UInt8]? {
        var result: [UInt8] = []
        for character in text {
            guard let byte = characterBytes[character] else { return nil }
            result.append(byte)
        }
        return result
    }

    /// Reads GPT-2's `vocab.json` (a byte-level token to its id) and `merges.txt` (`#version` then a
    /// `left right` merge per line, in rank order).
    public static func readGPT2(vocabulary path: String, merges mergesPath: String, pattern: SplitPattern = .gpt2)
        throws -> BytePairTokenizer
    {
        let object = try json(path)
        guard let vocabulary = object as? [String: Any] else {
            throw TokenizerError.invalidFile(path: path, line: 0, reason: "expected an object of tokens and their ids")
        }
        let (tokens, idOf) = try Self.vocabulary(vocabulary, path: path, place: "")
        // GPT-2's end of text is in its vocabulary; tiktoken's r50k_base registers it as special.
        let specials = idOf["<|endoftext|>"].map { [BytePairTokenizer.SpecialToken(name: "<|endoftext|>", id: $0)] } ?? []
        let lines = try lines(mergesPath)
        var merges: [(Int, Int)] = []
        var lineOfMerge: [Int] = []
        for (index, line) in lines.enumerated() where !(index == 0 && line.hasPrefix("#version")) {
            let fields = line.split(separator: " ", omittingEmptySubsequences: false)
            guard fields.count == 2 else {
                throw TokenizerError.invalidFile(
                    path: mergesPath, line: index + 1, reason: "expected two tokens, found \(String(line.prefix(80)).debugDescription)")
            }
            var pair: [Int] = []
            for field in fields {
                guard let id = idOf[String(field)] else {
                    throw TokenizerError.invalidFile(
                        path: mergesPath, line: index + 1,
                        reason: "\(String(field).debugDescription) is no token of \(path)")
                }
                pair.append(id)
            }
            merges.append((pair[0], pair[1]))
            lineOfMerge.append(index + 1)
        }
        do {
            return try BytePairTokenizer(checking: pattern, tokens: tokens, merges: merges, specialTokens: specials)
        } catch let failure as DefinitionFailure {
            if case .merge(let i) = failure.place {
                throw TokenizerError.invalidFile(path: mergesPath, line: lineOfMerge[i], reason: failure.reason)
            }
            throw Self.failure(failure, path: path) { _ in 0 }
        }
    }

    /// Reads Hugging Face's `tokenizer.json` of a byte-level BPE: model `BPE` with a vocabulary and merges, a
    /// `ByteLevel` pre-tokenizer (after a `Split` of one of ``SplitPattern``'s patterns, or with GPT-2's own),
    /// no normalizer; the added tokens are its special tokens.
    public static func readHuggingFace(_ path: String) throws -> BytePairTokenizer {
        func fail(_ place: String, _ reason: String) -> TokenizerError {
            .invalidFile(path: path, line: 0, reason: "\(place): \(reason)")
        }
        guard let root = try json(path) as? [String: Any] else { throw fail("the file", "expected a JSON object") }
        guard let model = root["model"] as? [String: Any], model["type"] as? String == "BPE" else {
            throw fail("model", "expected a byte-pair model, {\"type\": \"BPE\", …}")
        }
        if let normalizer = root["normalizer"], !(normalizer is NSNull) {
            throw fail("normalizer", "expected null: a byte-level BPE reads the text's bytes as they are")
        }
        for key in ["continuing_subword_prefix", "end_of_word_suffix"] {
            if let value = model[key], !(value is NSNull), value as? String != "" {
                throw fail("model.\(key)", "expected null: Neuron's BPE marks no word boundaries")
            }
        }
        if model["byte_fallback"] as? Bool == true { throw fail("model.byte_fallback", "expected false") }
        if model["ignore_merges"] as? Bool == true { throw fail("model.ignore_merges", "expected false") }
        let pattern = try huggingFacePattern(root["pre_tokenizer"], fail: fail)
        guard let vocabulary = model["vocab"] as? [String: Any] else {
            throw fail("model.vocab", "expected an object of tokens and their ids")
        }
        var (tokens, idOf) = try Self.vocabulary(vocabulary, path: path, place: "model.vocab: ")
        var specials: [BytePairTokenizer.SpecialToken] = []
        for (index, item) in ((root["added_tokens"] as? [Any]) ?? []).enumerated() {
            guard let added = item as? [String: Any], let name = added["content"] as? String,
                let id = (added["id"] as? NSNumber)?.intValue
            else { throw fail("added_tokens[\(index)]", "expected {\"id\": …, \"content\": …}") }
            specials.append(.init(name: name, id: id))
            // An added token inside the vocabulary is there as its byte-level string; as a special token it is
            // its name's bytes.
            if id < tokens.count, tokens[id] != Array(name.utf8) { tokens[id] = Array(name.utf8) }
        }
        guard let list = model["merges"] as? [Any] else { throw fail("model.merges", "expected a list of merges") }
        var merges: [(Int, Int)] = []
        for (index, item) in list.enumerated() {
            let parts: [String]
            if let text = item as? String {
                parts = text.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
            } else if let pair = item as? [String] {
                parts = pair
            } else {
                parts = []
            }
            guard parts.count == 2 else {
                throw fail("model.merges[\(index)]", "expected \"left right\" or [\"left\", \"right\"]")
            }
            guard let left = idOf[parts[0]], let right = idOf[parts[1]] else {
                let missing = idOf[parts[0]] == nil ? parts[0] : parts[1]
                throw fail("model.merges[\(index)]", "\(missing.debugDescription) is no token of model.vocab")
            }
            merges.append((left, right))
        }
        idOf.removeAll()
        do {
            return try BytePairTokenizer(checking: pattern, tokens: tokens, merges: merges, specialTokens: specials)
        } catch let failure as DefinitionFailure {
            switch failure.place {
            case .merge(let i): throw fail("model.merges[\(i)]", failure.reason)
            case .special(let i): throw fail("added_tokens[\(i)]", failure.reason)
            case .token(let i): throw fail("model.vocab", "token \(i): \(failure.reason)")
            case .vocabulary: throw fail("model.vocab", failure.reason)
            }
        }
    }

    /// The split pattern of a Hugging Face pre-tokenizer: `ByteLevel` with `use_regex` (GPT-2's), or a
    /// `Sequence` of a `Split` by one of ``SplitPattern``'s regexes and a `ByteLevel` without; `ByteLevel` alone
    /// without `use_regex` splits nothing.
    private static func huggingFacePattern(_ value: Any?, fail: (String, String) -> TokenizerError) throws
        -> SplitPattern
    {
        let expected = "expected ByteLevel, or a Sequence of a Split and a ByteLevel"
        guard let pre = value as? [String: Any] else { throw fail("pre_tokenizer", expected) }
        var steps = [pre]
        if pre["type"] as? String == "Sequence" {
            guard let list = pre["pretokenizers"] as? [[String: Any]] else { throw fail("pre_tokenizer", expected) }
            steps = list
        }
        guard let byteLevel = steps.last, byteLevel["type"] as? String == "ByteLevel" else {
            throw fail("pre_tokenizer", expected)
        }
        if byteLevel["add_prefix_space"] as? Bool == true {
            throw fail("pre_tokenizer", "ByteLevel's add_prefix_space: expected false (it changes the text)")
        }
        let gpt2Regex = (byteLevel["use_regex"] as? Bool) ?? true
        switch steps.count {
        case 1:
            return gpt2Regex ? .gpt2 : .none
        case 2 where !gpt2Regex:
            let split = steps[0]
            guard split["type"] as? String == "Split", let regex = (split["pattern"] as? [String: Any])?["Regex"] as? String
            else { throw fail("pre_tokenizer", "expected a Split by a Regex before ByteLevel") }
            guard split["behavior"] as? String == "Isolated", (split["invert"] as? Bool) != true else {
                throw fail("pre_tokenizer", "expected the Split's behavior \"Isolated\", not inverted")
            }
            guard let pattern = SplitPattern(regex: regex) else {
                throw fail("pre_tokenizer", TokenizerError.unsupportedPattern(regex).description)
            }
            return pattern
        default:
            throw fail("pre_tokenizer", expected)
        }
    }

    /// A byte-level vocabulary's tokens by id (every id from 0 to the largest given once) and the id of each string.
    private static func vocabulary(_ object: [String: Any], path: String, place: String) throws
        -> ([[UInt8]], [String: Int])
    {
        func fail(_ reason: String) -> TokenizerError { .invalidFile(path: path, line: 0, reason: place + reason) }
        guard object.count < Int(Int32.max) else { throw fail("too many tokens") }
        var tokens = [[UInt8]?](repeating: nil, count: object.count)
        var idOf: [String: Int] = [:]
        for (string, value) in object {
            guard let number = value as? NSNumber, let id = Int(exactly: number.doubleValue), id >= 0 else {
                throw fail("the token \(string.debugDescription) has the id \(value), expected a whole number from 0")
            }
            guard id < object.count else {
                throw fail("the id \(id) of \(string.debugDescription) leaves a gap: \(object.count) tokens have ids 0..<\(object.count)")
            }
            guard tokens[id] == nil else {
                throw fail("the id \(id) of \(string.debugDescription) is another token's too")
            }
            guard let bytes = bytes(ofByteLevel: string) else {
                throw fail("the token \(string.debugDescription) holds a character outside GPT-2's byte-level alphabet")
            }
            tokens[id] = bytes
            idOf[string] = id
        }
        return (tokens.map { $0! }, idOf)
    }

    /// The JSON value in the file at `path`.
    private static func json(_ path: String) throws -> Any {
        let data = Data(try contents(path))
        do { return try JSONSerialization.jsonObject(with: data) } catch {
            throw TokenizerError.invalidFile(path: path, line: 0, reason: "not JSON: \(error.localizedDescription)")
        }
    }

    /// Hugging Face's `tokenizer.json` for a tokenizer whose tokens are each one string (no two the same bytes):
    /// what ``write(_:to:)`` writes to a `.json` path, and `tokenizers`' `Tokenizer.from_str` reads.
    ///
    /// - Parameters:
    ///   - tokenizer: a tokenizer of a merge list.
    ///   - path: the file named in errors.
    /// - Throws: ``TokenizerError/invalidFile(path:line:reason:)`` for tiktoken's ranks (no merge list) or two
    ///   tokens of the same bytes.
    public static func huggingFaceJSON(_ tokenizer: BytePairTokenizer, path: String) throws -> Data {
        var vocabulary: [String: Int] = [:]
        for id in 0..<tokenizer.tokenCount {
            let string = byteLevel(try tokenizer.bytes(of: id))
            if let other = vocabulary[string] {
                throw TokenizerError.invalidFile(
                    path: path, line: 0,
                    reason: "tokens \(other) and \(id) have the same bytes, which Hugging Face's vocabulary cannot hold: "
                        + "write it as a minbpe .model")
            }
            vocabulary[string] = id
        }
        guard tokenizer.rule == .merges else {
            throw TokenizerError.invalidFile(
                path: path, line: 0, reason: "a tokenizer of tiktoken's ranks has no merge list to write")
        }
        let merges = try tokenizer.merges.map { [byteLevel(try tokenizer.bytes(of: $0.left)), byteLevel(try tokenizer.bytes(of: $0.right))] }
        let byteLevelStep: [String: Any] = [
            "type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": tokenizer.pattern == .gpt2,
        ]
        let preTokenizer: [String: Any]
        switch tokenizer.pattern {
        case .gpt2, .none:
            preTokenizer = byteLevelStep
        case .gpt4, .cl100k:
            preTokenizer = [
                "type": "Sequence",
                "pretokenizers": [
                    ["type": "Split", "pattern": ["Regex": tokenizer.pattern.regex], "behavior": "Isolated", "invert": false],
                    byteLevelStep.merging(["use_regex": false]) { $1 },
                ],
            ]
        }
        let added: [[String: Any]] = tokenizer.specialTokens.map {
            [
                "id": $0.id, "content": $0.name, "single_word": false, "lstrip": false, "rstrip": false,
                "normalized": false, "special": true,
            ]
        }
        let root: [String: Any] = [
            "version": "1.0", "truncation": NSNull(), "padding": NSNull(), "added_tokens": added,
            "normalizer": NSNull(), "pre_tokenizer": preTokenizer, "post_processor": NSNull(),
            "decoder": ["type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true],
            "model": [
                "type": "BPE", "dropout": NSNull(), "unk_token": NSNull(), "continuing_subword_prefix": NSNull(),
                "end_of_word_suffix": NSNull(), "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
                "vocab": vocabulary, "merges": merges,
            ] as [String: Any],
        ]
        return try JSONSerialization.data(withJSONObject: root, options: [.sortedKeys, .withoutEscapingSlashes])
    }
}

// MARK: - Coded

extension BytePairTokenizer: Codable {
    private enum CodingKeys: String, CodingKey { case pattern, merges, tokens, ranks, specialTokens }

    /// Coded (a checkpoint's run state, say) as its pattern, special tokens and either minbpe's merges
    /// (`"merges": [[left, right], …]`), a merge list with its tokens' bytes in base64 (`"tokens"`), or tiktoken's
    /// ranks in base64 (`"ranks"`).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(pattern.rawValue, forKey: .pattern)
        try container.encode(specialTokens, forKey: .specialTokens)
        let tokens = try (0..<tokenCount).map { Data(try bytes(of: $0)).base64EncodedString() }
        switch rule {
        case .ranks:
            try container.encode(tokens, forKey: .ranks)
        case .merges:
            try container.encode(merges.map { [$0.left, $0.right] }, forKey: .merges)
            if !isMinbpe { try container.encode(tokens, forKey: .tokens) }
        }
    }

    /// Reads what ``encode(to:)`` writes, checked as the initializers check.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let name = try container.decode(String.self, forKey: .pattern)
        guard let pattern = SplitPattern(rawValue: name) else {
            throw DecodingError.dataCorruptedError(
                forKey: .pattern, in: container, debugDescription: "\(name.debugDescription) is no split pattern")
        }
        let specials = try container.decode([SpecialToken].self, forKey: .specialTokens)
        func bytes(_ key: CodingKeys) throws -> [[UInt8]] {
            try container.decode([String].self, forKey: key).enumerated().map { index, text in
                guard let bytes = Data(base64Encoded: text) else {
                    throw DecodingError.dataCorruptedError(
                        forKey: key, in: container, debugDescription: "token \(index) is not base64")
                }
                return Array(bytes)
            }
        }
        do {
            if container.contains(.ranks) {
                self = try Self(checking: pattern, ranks: try bytes(.ranks), specialTokens: specials)
            } else {
                let pairs = try container.decode([[Int]].self, forKey: .merges)
                if let bad = pairs.firstIndex(where: { $0.count != 2 }) {
                    throw DecodingError.dataCorruptedError(
                        forKey: .merges, in: container, debugDescription: "merge \(bad + 1) is not two ids")
                }
                let merges = pairs.map { ($0[0], $0[1]) }
                self =
                    container.contains(.tokens)
                    ? try Self(checking: pattern, tokens: try bytes(.tokens), merges: merges, specialTokens: specials)
                    : try Self(checking: pattern, merges: merges, specialTokens: specials)
            }
        } catch let failure as DefinitionFailure {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: failure.error.description))
        }
    }
}
