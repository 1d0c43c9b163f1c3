/// A byte-level byte-pair-encoding tokenizer: a text's UTF-8 bytes, cut into chunks by a ``SplitPattern``, merged
/// pair by pair into tokens within each chunk, as minbpe's `RegexTokenizer`, GPT-2's encoder and tiktoken define it.
///
/// Two rules rank a chunk's pairs (``MergeRule``); both merge one pair at a time, the lowest-ranked adjacent pair
/// first and the leftmost of equal ranks, until no adjacent pair has a rank. Registered special tokens are found in
/// the text by name, never by merging, and only where the caller allows them (``SpecialTokens``).
///
/// Build one from a trained merge list (``train(_:vocabularySize:pattern:specialTokens:progress:)``, minbpe's `.model`),
/// from tiktoken's ranks, or from a Hugging Face vocabulary and merges; ``TokenizerFile`` reads and writes them.
public struct BytePairTokenizer: Sendable {
    /// How the pairs of a chunk are ranked.
    public enum MergeRule: Sendable, Equatable {
        /// A listed merge list, earliest first (minbpe, GPT-2's `merges.txt`, Hugging Face): only a listed pair
        /// of tokens merges.
        case merges
        /// tiktoken's ranks: any two adjacent tokens whose bytes together are a token merge, the token of the
        /// lower rank first; and a chunk whose bytes are a token is that token, unmerged.
        case ranks
    }

    /// One merge: the tokens `left` and `right`, side by side, become `token`.
    public struct Merge: Hashable, Sendable {
        public let left: Int
        public let right: Int
        public let token: Int
        public init(left: Int, right: Int, token: Int) {
            self.left = left
            self.right = right
            self.token = token
        }
    }

    /// A special token: a name found in the text as a whole (`<|endoftext|>`) and its id.
    public struct SpecialToken: Hashable, Sendable, Codable {
        public let name: String
        public let id: Int
        public init(name: String, id: Int) {
            self.name = name
            self.id = id
        }
    }

    /// Which registered special tokens `encode` turns into their ids. A special token in the text that is not
    /// allowed is an error (``TokenizerError/specialTokenNotAllowed(name:offset:)``), never silently ids of its
    /// bytes, as tiktoken's `disallowed_special="all"` and minbpe's `"none_raise"` have it.
    public enum SpecialTokens: Sendable, Equatable {
        /// None: the text must hold none of them.
        case none
        /// Every registered special token.
        case all
        /// These, by name; the others must not occur.
        case only(Set<String>)
        /// None, and their names are encoded as ordinary text (tiktoken's `encode_ordinary`, minbpe's `"none"`).
        case ordinary
    }

    /// The split pattern chunks are cut by.
    public let pattern: SplitPattern
    /// How pairs are ranked.
    public let rule: MergeRule
    /// The merges, in rank order (empty under ``MergeRule/ranks``, whose ranks are the token ids).
    public let merges: [Merge]
    /// The special tokens, as registered.
    public let specialTokens: [SpecialToken]

    /// Token i's bytes are `tokenBytes[tokenStarts[i]..<tokenStarts[i + 1]]`, for the ordinary tokens 0..<tokenCount.
    private let tokenBytes: [UInt8]
    private let tokenStarts: [Int]
    /// The token of each single byte.
    private let byteTokens: [UInt32]
    /// A pair of adjacent tokens to `rank << 32 | token`: comparing values compares ranks.
    let pairs: PairTable
    /// Every ordinary token's bytes to its id (under ``MergeRule/ranks``, the whole-chunk lookup).
    let wholeTokens: ByteStringTable

    /// The most bytes all tokens of a merge list may come to.
    public static let maximumTokenBytes = 256 << 20
    /// The longest token of tiktoken's ranks (cl100k_base's longest has 128 bytes).
    public static let maximumRankedTokenLength = 1024

    /// The number of ordinary tokens, ids 0..<tokenCount.
    public var tokenCount: Int { tokenStarts.count - 1 }

    /// One past the largest id, special tokens included.
    public var vocabularySize: Int { max(tokenCount, (specialTokens.map(\.id).max() ?? -1) + 1) }

    // MARK: - Making one

    /// A tokenizer of minbpe's kind: ids 0–255 are the bytes, and merge i makes token 256 + i.
    ///
    /// - Parameters:
    ///   - pattern: the split pattern chunks are cut by.
    ///   - merges: the pairs merged, in order; each part an id below the token it makes.
    ///   - specialTokens: names found in the text whole, with their ids.
    /// - Throws: ``TokenizerError/invalidDefinition(place:reason:)`` naming the merge or special token at fault.
    public init(pattern: SplitPattern, merges: [(Int, Int)], specialTokens: [SpecialToken] = []) throws {
        self = try DefinitionFailure.public { try Self(checking: pattern, merges: merges, specialTokens: specialTokens) }
    }

    /// ``init(pattern:merges:specialTokens:)``, throwing ``DefinitionFailure``.
    init(checking pattern: SplitPattern, merges: [(Int, Int)], specialTokens: [SpecialToken]) throws {
        var tokens: [[UInt8]] = (0..<256).map { [UInt8($0)] }
        var listed: [Merge] = []
        var bytes = 256
        for (i, (left, right)) in merges.enumerated() {
            let token = 256 + i
            for part in [left, right] where part < 0 || part >= token {
                throw DefinitionFailure(
                    place: .merge(i), reason: "\(part) is no token made before token \(token) (0..<\(token))")
            }
            // Each merge can double a token's length: a list of a few dozen would fill the memory.
            bytes += tokens[left].count + tokens[right].count
            guard bytes <= Self.maximumTokenBytes else {
                throw DefinitionFailure(
                    place: .merge(i),
                    reason: "the tokens' bytes come to more than \(Self.maximumTokenBytes >> 20) MiB by token \(token) "
                        + "(\(tokens[left].count + tokens[right].count) bytes long)")
            }
            tokens.append(tokens[left] + tokens[right])
            listed.append(Merge(left: left, right: right, token: token))
        }
        try self.init(pattern: pattern, rule: .merges, tokens: tokens, merges: listed, specialTokens: specialTokens)
    }

    /// A tokenizer of tiktoken's kind: `ranks[i]` is the bytes of token i, whose rank is i.
    ///
    /// - Throws: ``TokenizerError/invalidDefinition(place:reason:)`` for a token listed twice, an empty token, a
    ///   single byte with no token, or a special token at fault.
    public init(pattern: SplitPattern, ranks: [[UInt8]], specialTokens: [SpecialToken] = []) throws {
        self = try DefinitionFailure.public { try Self(checking: pattern, ranks: ranks, specialTokens: specialTokens) }
    }

    /// ``init(pattern:ranks:specialTokens:)``, throwing ``DefinitionFailure``.
    init(checking pattern: SplitPattern, ranks: [[UInt8]], specialTokens: [SpecialToken]) throws {
        try self.init(pattern: pattern, rule: .ranks, tokens: ranks, merges: [], specialTokens: specialTokens)
    }

    /// A tokenizer of GPT-2's and Hugging Face's kind: a vocabulary by id and a merge list of id pairs in rank
    /// order, each pair's bytes together a token of the vocabulary.
    ///
    /// - Throws: ``TokenizerError/invalidDefinition(place:reason:)`` naming the token, merge or special token at
    ///   fault.
    public init(pattern: SplitPattern, tokens: [[UInt8]], merges: [(Int, Int)], specialTokens: [SpecialToken] = [])
        throws
    {
        self = try DefinitionFailure.public {
            try Self(checking: pattern, tokens: tokens, merges: merges, specialTokens: specialTokens)
        }
    }

    /// ``init(pattern:tokens:merges:specialTokens:)``, throwing ``DefinitionFailure``.
    init(checking pattern: SplitPattern, tokens: [[UInt8]], merges: [(Int, Int)], specialTokens: [SpecialToken]) throws {
        let table = try Self.table(of: tokens, allowingRepeats: false)
        var listed: [Merge] = []
        for (i, (left, right)) in merges.enumerated() {
            for part in [left, right] where part < 0 || part >= tokens.count {
                throw DefinitionFailure(place: .merge(i), reason: "\(part) is no token (0..<\(tokens.count))")
            }
            let joined = tokens[left] + tokens[right]
            guard let token = joined.withUnsafeBytes({ table.value(of: $0) }) else {
                throw DefinitionFailure(
                    place: .merge(i),
                    reason: "tokens \(left) and \(right) together are \(Self.describe(joined)), which is no token")
            }
            listed.append(Merge(left: left, right: right, token: Int(token)))
        }
        try self.init(pattern: pattern, rule: .merges, tokens: tokens, merges: listed, specialTokens: specialTokens)
    }

    private init(pattern: SplitPattern, rule: MergeRule, tokens: [[UInt8]], merges: [Merge], specialTokens: [SpecialToken])
        throws
    {
        guard tokens.count < Int(Int32.max) else { throw TokenizerError.invalidVocabularySize(tokens.count) }
        // Two merges of a merge list can make the same bytes ((a, bc) and (ab, c)); the first is looked up.
        let table = try Self.table(of: tokens, allowingRepeats: rule == .merges)
        var byteTokens: [UInt32] = []
        for byte in 0..<256 {
            guard let token = [UInt8(byte)].withUnsafeBytes({ table.value(of: $0) }) else {
                throw DefinitionFailure(
                    place: .vocabulary, reason: "the byte \(byte) has no token, so some texts cannot be encoded")
            }
            byteTokens.append(token)
        }
        var pairs = PairTable(minimumCapacity: max(merges.count, 16))
        switch rule {
        case .merges:
            for (i, merge) in merges.enumerated() {
                let value = UInt64(i) << 32 | UInt64(merge.token)
                if !pairs.insert(UInt32(merge.left), UInt32(merge.right), value: value).inserted {
                    throw DefinitionFailure(
                        place: .merge(i), reason: "the pair \(merge.left) \(merge.right) is merged earlier too")
                }
            }
        case .ranks:
            // Every split of a token into two tokens merges into it: a token of n bytes costs n² to split.
            if let long = tokens.firstIndex(where: { $0.count > Self.maximumRankedTokenLength }) {
                throw DefinitionFailure(
                    place: .token(long),
                    reason: "it is \(tokens[long].count) bytes long; a ranked token has at most \(Self.maximumRankedTokenLength)")
            }
            for (token, bytes) in tokens.enumerated() where bytes.count > 1 {
                bytes.withUnsafeBytes { all in
                    for cut in 1..<bytes.count {
                        guard let left = table.value(of: UnsafeRawBufferPointer(rebasing: all[..<cut])),
                            let right = table.value(of: UnsafeRawBufferPointer(rebasing: all[cut...]))
                        else { continue }
                        pairs.insert(left, right, value: UInt64(token) << 32 | UInt64(token))
                    }
                }
            }
        }
        var names = Set<String>(), ids = Set<Int>()
        for (index, special) in specialTokens.enumerated() {
            let place = DefinitionFailure.Place.special(index)
            guard !special.name.isEmpty else { throw DefinitionFailure(place: place, reason: "its name is empty") }
            guard names.insert(special.name).inserted else {
                throw DefinitionFailure(place: place, reason: "it is registered twice")
            }
            guard special.id >= 0, special.id < Int(Int32.max) else {
                throw DefinitionFailure(place: place, reason: "its id \(special.id) is not in 0..<2³¹")
            }
            guard ids.insert(special.id).inserted else {
                throw DefinitionFailure(place: place, reason: "its id \(special.id) is another special token's")
            }
            if special.id < tokens.count, tokens[special.id] != Array(special.name.utf8) {
                throw DefinitionFailure(
                    place: place,
                    reason: "its id \(special.id) is the ordinary token \(Self.describe(tokens[special.id]))")
            }
        }
        self.pattern = pattern
        self.rule = rule
        self.merges = merges
        self.specialTokens = specialTokens
        self.tokenBytes = tokens.flatMap { $0 }
        var starts = [0]
        starts.reserveCapacity(tokens.count + 1)
        for token in tokens { starts.append(starts.last! + token.count) }
        self.tokenStarts = starts
        self.byteTokens = byteTokens
        self.pairs = pairs
        self.wholeTokens = table
    }

    /// Every token's bytes to its id; throws for an empty token, and for one listed twice unless `allowingRepeats`.
    private static func table(of tokens: [[UInt8]], allowingRepeats: Bool) throws -> ByteStringTable {
        var table = ByteStringTable(minimumCapacity: tokens.count)
        for (id, bytes) in tokens.enumerated() {
            guard !bytes.isEmpty else { throw DefinitionFailure(place: .token(id), reason: "it has no bytes") }
            let (entry, inserted) = bytes.withUnsafeBytes { table.insert($0, value: UInt32(id)) }
            guard inserted || allowingRepeats else {
                throw DefinitionFailure(
                    place: .token(id),
                    reason: "its bytes \(describe(bytes)) are token \(table.values[entry])'s too")
            }
        }
        return table
    }

    /// Bytes as a reader can check them: the text where they are UTF-8, else hex.
    static func describe(_ bytes: [UInt8]) -> String {
        if let text = String(validating: bytes, as: UTF8.self) { return text.debugDescription }
        return hex(bytes)
    }

    /// Bytes in hex, `<e2 80>`: how bytes that are no UTF-8 on their own are shown.
    static func hex(_ bytes: [UInt8]) -> String {
        "<" + bytes.map { String($0, radix: 16) }.joined(separator: " ") + ">"
    }

    // MARK: - Tokens

    /// The bytes of token `id`: an ordinary token's, or a special token's name.
    ///
    /// - Throws: ``TokenizerError/unknownToken(id:position:)`` (position 0) for an id that names no token.
    public func bytes(of id: Int) throws -> [UInt8] {
        var bytes: [UInt8] = []
        guard appendBytes(of: id, to: &bytes) else { throw TokenizerError.unknownToken(id: id, position: 0) }
        return bytes
    }

    /// Appends the bytes of token `id` to `result`; false, appending nothing, for an id that names no token.
    private func appendBytes(of id: Int, to result: inout [UInt8]) -> Bool {
        if id >= 0, id < tokenCount {
            result.append(contentsOf: tokenBytes[tokenStarts[id]..<tokenStarts[id + 1]])
        } else if let special = specialTokens.first(where: { $0.id == id }) {
            result.append(contentsOf: special.name.utf8)
        } else {
            return false
        }
        return true
    }

    /// The characters whose UTF-8 sequences start in token `id`'s bytes (each byte that is not a
    /// continuation byte), without copying them; 0 for an id that names no token.
    func characterStarts(of id: Int) -> Int {
        func starts(_ bytes: some Sequence<UInt8>) -> Int { bytes.reduce(0) { $0 + ($1 & 0xC0 == 0x80 ? 0 : 1) } }
        if id >= 0, id < tokenCount { return starts(tokenBytes[tokenStarts[id]..<tokenStarts[id + 1]]) }
        return specialTokens.first { $0.id == id }.map { starts($0.name.utf8) } ?? 0
    }

    /// The id of the ordinary token whose bytes are `bytes`, or nil.
    public func id(of bytes: [UInt8]) -> Int? {
        bytes.withUnsafeBufferPointer { id(ofChunk: $0) }
    }

    /// The id of the ordinary token whose bytes are `chunk`, or nil: the lookup that ranks try first.
    public func id(ofChunk chunk: UnsafeBufferPointer<UInt8>) -> Int? {
        wholeTokens.value(of: UnsafeRawBufferPointer(chunk)).map(Int.init)
    }

    // MARK: - Encoding

    /// The ids of `text`.
    ///
    /// - Parameters:
    ///   - text: the text to encode.
    ///   - allowedSpecial: which special tokens become their ids (``SpecialTokens``).
    /// - Throws: ``TokenizerError/specialTokenNotAllowed(name:offset:)`` for a special token the text holds that
    ///   is not allowed.
    public func encode(_ text: String, allowedSpecial: SpecialTokens = .none) throws -> [Int] {
        try Array(text.utf8).withUnsafeBufferPointer { bytes in
            var encoder = BytePairEncoder(self)
            var ids: [UInt32] = []
            try encoder.encode(bytes, allowedSpecial: allowedSpecial, into: &ids)
            return ids.map(Int.init)
        }
    }

    /// The ids of `text` with special tokens' names encoded as ordinary text.
    public func encodeOrdinary(_ text: String) -> [Int] {
        // `.ordinary` looks for no special token, so nothing can be thrown.
        (try? encode(text, allowedSpecial: .ordinary)) ?? []
    }

    // MARK: - Decoding

    /// The bytes of `ids`, one token after another.
    ///
    /// - Throws: ``TokenizerError/unknownToken(id:position:)`` for an id that names no token.
    public func decodeBytes(_ ids: some Sequence<Int>) throws -> [UInt8] {
        var result: [UInt8] = []
        for (position, id) in ids.enumerated() where !appendBytes(of: id, to: &result) {
            throw TokenizerError.unknownToken(id: id, position: position)
        }
        return result
    }

    /// The text of `ids`: their bytes read as UTF-8, each ill-formed sequence read as U+FFFD (as Python's
    /// `decode("utf-8", errors="replace")`, minbpe's and tiktoken's `decode`).
    ///
    /// - Throws: ``TokenizerError/unknownToken(id:position:)`` for an id that names no token.
    public func decode(_ ids: some Sequence<Int>) throws -> String {
        String(decoding: try decodeBytes(ids), as: UTF8.self)
    }

    /// Whether it is of minbpe's kind: the bytes as tokens 0–255, then merge i's token 256 + i.
    var isMinbpe: Bool {
        guard rule == .merges, tokenCount == 256 + merges.count else { return false }
        for (i, merge) in merges.enumerated() where merge.token != 256 + i { return false }
        for byte in 0..<256 where tokenStarts[byte + 1] != byte + 1 || tokenBytes[byte] != UInt8(byte) { return false }
        return true
    }

    // MARK: - For the encoder

    @inline(__always) func byteToken(_ byte: UInt8) -> UInt32 { byteTokens[Int(byte)] }

    @inline(__always) func tokenLength(_ id: UInt32) -> Int { tokenStarts[Int(id) + 1] - tokenStarts[Int(id)] }
}

extension BytePairTokenizer: Equatable {
    /// Whether the two encode and decode every text alike: the same pattern, rule, merges, tokens' bytes and
    /// special tokens.
    public static func == (a: BytePairTokenizer, b: BytePairTokenizer) -> Bool {
        a.pattern == b.pattern && a.rule == b.rule && a.merges == b.merges && a.specialTokens == b.specialTokens
            && a.tokenStarts == b.tokenStarts && a.tokenBytes == b.tokenBytes
    }
}

/// Why a vocabulary, merge list or special token cannot make a tokenizer, and which: the file readers turn the
/// place into a line, the public initializers into ``TokenizerError/invalidDefinition(place:reason:)``.
struct DefinitionFailure: Error {
    enum Place {
        /// 0-based indices into what was given.
        case token(Int), merge(Int), special(Int)
        /// The vocabulary as a whole.
        case vocabulary
    }
    let place: Place
    let reason: String

    var error: TokenizerError {
        let name: String
        switch place {
        case .token(let i): name = "token \(i)"
        case .merge(let i): name = "merge \(i + 1)"
        case .special(let i): name = "special token \(i + 1)"
        case .vocabulary: name = "the vocabulary"
        }
        return .invalidDefinition(place: name, reason: reason)
    }

    /// `make()`, a ``DefinitionFailure`` thrown as the public error.
    static func `public`<T>(_ make: () throws -> T) throws -> T {
        do { return try make() } catch let failure as DefinitionFailure { throw failure.error }
    }
}
