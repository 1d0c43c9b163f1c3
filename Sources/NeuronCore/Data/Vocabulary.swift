/// The tokens of a text model: a character model's, token 0 the boundary and then one token per
/// character, or a tokenizer's (``BytePairTokenizer``), whose ids are its tokens.
///
/// A character is a Unicode scalar (a code point, as Python's `str` iterates), so a peer in another
/// language sees the same tokens. The boundary token both starts and ends a sample: a line `cab` is
/// the sequence `⏎ c a b ⏎`. The characters follow in order of code point (Python's
/// `sorted(set(text))`), token 1 the lowest; that order fixes every token's index.
///
/// A tokenizer's vocabulary serves a document model (``TextDocument``), which never reads a
/// boundary: token `i` is the tokenizer's id `i`, and a text is its bytes' tokens.
///
/// Coded (JSON, a checkpoint): a character vocabulary as the list of the tokens' strings in token
/// order, the boundary as the empty string, the one string that is no character: `["", "a", "b",
/// "c"]`; a peer maps token `i` to `list[i]`, and joining the strings of a generated sequence drops
/// the boundary. A tokenizer's as `{"tokenizer": …}`, the tokenizer's own coding. Decoding checks
/// either. Shown, the boundary is ``boundarySymbol``.
public struct Vocabulary: Sendable, Equatable, Codable, CustomStringConvertible {
    /// The boundary token of a character vocabulary, which starts and ends every sample.
    public static let boundary = 0
    /// How the boundary token is shown (`⏎`, U+23CE RETURN SYMBOL): it ends a line.
    public static let boundarySymbol = "⏎"

    /// The characters of tokens 1, 2, …, in token order (ascending code point); empty for a
    /// tokenizer's vocabulary.
    public let characters: [Unicode.Scalar]
    /// The tokenizer whose ids are the tokens; nil for a character vocabulary.
    public var tokenizer: BytePairTokenizer? { box?.tokenizer }
    /// The tokenizer, held once however often the vocabulary is copied (a run, its engine, each
    /// snapshot and checkpoint hold one).
    private let box: TokenizerBox?
    /// Each character's token.
    private let tokens: [Unicode.Scalar: Int]

    /// The vocabulary of `characters`: each distinct one once, in order of code point.
    public init(characters: some Sequence<Unicode.Scalar>) {
        self.init(sorted: Array(Set(characters)).sorted())
    }

    /// `characters` already distinct and ascending.
    private init(sorted characters: [Unicode.Scalar]) {
        self.characters = characters
        var tokens = [Unicode.Scalar: Int](minimumCapacity: characters.count)
        for (i, character) in characters.enumerated() { tokens[character] = i + 1 }
        self.tokens = tokens
        box = nil
    }

    /// The vocabulary of `tokenizer`'s ids, special tokens included.
    public init(tokenizer: BytePairTokenizer) {
        (box, characters, tokens) = (TokenizerBox(tokenizer), [], [:])
    }

    /// The number of tokens: the characters and the boundary, or the tokenizer's ids.
    public var count: Int { tokenizer?.vocabularySize ?? characters.count + 1 }

    /// The token of `character`, or nil when it is not in the vocabulary (always, for a
    /// tokenizer's: a character may take several tokens, or share one).
    public func index(of character: Unicode.Scalar) -> Int? { tokens[character] }

    /// The tokens of the characters of `line`, without boundaries; nil when a character is not in
    /// the vocabulary. A tokenizer encodes any text: its registered special tokens' names become
    /// their ids, as in the documents it reads (``TextDocument``).
    public func encode(_ line: String) -> [Int]? {
        if let tokenizer { return try? tokenizer.encode(line, allowedSpecial: .all) }
        var result = [Int]()
        result.reserveCapacity(line.utf8.count)
        for character in line.unicodeScalars {
            guard let token = tokens[character] else { return nil }
            result.append(token)
        }
        return result
    }

    /// The text of a token sequence, boundaries left out: leading boundary tokens are skipped, and
    /// the text ends at the first token after them that is no character's (the closing boundary,
    /// the padding −1 of a target row, any index outside `0..<count`). So a features row
    /// (`⏎ c a b ⏎ ⏎ …`), a targets row (`c a b ⏎ −1 …`) and a generated sample all read `cab`.
    /// A tokenizer's tokens have no boundary: the text is their bytes up to the first index that
    /// names no token (the padding −1), ill-formed UTF-8 read as U+FFFD.
    public func decode(_ tokens: some Sequence<Int>) -> String {
        if let tokenizer {
            // Every id before the first that fails names a token, so decoding them cannot fail.
            let ids = Array(tokens.prefix { (try? tokenizer.bytes(of: $0)) != nil })
            return (try? tokenizer.decode(ids)) ?? ""
        }
        var text = String.UnicodeScalarView()
        var started = false
        for token in tokens {
            if !started, token == Self.boundary { continue }
            started = true
            guard token >= 1, token <= characters.count else { break }
            text.append(characters[token - 1])
        }
        return String(text)
    }

    /// Where a document model's text starts when no prompt is given: the newline's token, else
    /// token 1 (the first character in code-point order; a tokenizer's token 0). The run's passages
    /// and `neuron sample` both start there.
    public var documentStart: Int {
        if let tokenizer { return tokenizer.id(of: [0x0A]) ?? 0 }
        return index(of: "\n") ?? 1
    }

    /// The characters `tokens` hold, for a loss per character: one a token of a character
    /// vocabulary (a line's boundary counted as one); a tokenizer's tokens, the characters whose
    /// UTF-8 sequences start in them (each byte that is not a continuation byte), so that the
    /// tokens of a text hold its characters once however their bytes are cut.
    public func characterCount(_ tokens: some Sequence<Int>) -> Int {
        guard let tokenizer else { return tokens.reduce(0) { count, _ in count + 1 } }
        return tokens.reduce(0) { $0 + tokenizer.characterStarts(of: $1) }
    }

    /// How `token` is shown: ``boundarySymbol`` for the boundary, the character itself otherwise,
    /// with control characters escaped (`\t`); `?` for an index outside `0..<count`. A
    /// tokenizer's token is its text, control characters escaped, or its bytes in hex
    /// (`<e2 80>`) where they are no UTF-8 on their own.
    public func name(of token: Int) -> String {
        if let tokenizer {
            guard let bytes = try? tokenizer.bytes(of: token) else { return "?" }
            guard let text = String(validating: bytes, as: UTF8.self) else { return BytePairTokenizer.hex(bytes) }
            return text.unicodeScalars.map(Self.shown).joined()
        }
        if token == Self.boundary { return Self.boundarySymbol }
        guard token >= 1, token <= characters.count else { return "?" }
        return Self.shown(characters[token - 1])
    }

    /// A character as ``name(of:)`` shows it: itself, or escaped when it is a control character (`\t`).
    private static func shown(_ character: Unicode.Scalar) -> String {
        character.properties.generalCategory == .control ? character.escaped(asASCII: true) : String(character)
    }

    /// `Vocabulary(27 tokens: ⏎abcdefghijklmnopqrstuvwxyz)`, the first 100 tokens shown; a
    /// tokenizer's `Vocabulary(1024 tokens of a gpt4 byte-pair tokenizer)`.
    public var description: String {
        if let tokenizer { return "Vocabulary(\(count) tokens of a \(tokenizer.pattern.rawValue) byte-pair tokenizer)" }
        let shown = (0..<min(count, 100)).map(name(of:)).joined()
        return "Vocabulary(\(count) tokens: \(shown)\(count > 100 ? "… and \(count - 100) more" : ""))"
    }

    public static func == (a: Vocabulary, b: Vocabulary) -> Bool { a.characters == b.characters && a.tokenizer == b.tokenizer }

    // MARK: Coding

    private enum CodingKeys: String, CodingKey { case tokenizer }

    /// Writes `["", "a", "b", …]`: the tokens' strings in token order, the boundary empty; or
    /// `{"tokenizer": …}`.
    public func encode(to encoder: any Encoder) throws {
        if let tokenizer {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(tokenizer, forKey: .tokenizer)
            return
        }
        var container = encoder.singleValueContainer()
        try container.encode([""] + characters.map { String($0) })
    }

    /// Reads the list ``encode(to:)`` writes, checked: the empty string first, then single
    /// characters (Unicode scalars) in ascending order of code point, so each at most once.
    /// Or a tokenizer, as ``BytePairTokenizer`` reads it.
    public init(from decoder: any Decoder) throws {
        if let keyed = try? decoder.container(keyedBy: CodingKeys.self), keyed.contains(.tokenizer) {
            self.init(tokenizer: try keyed.decode(BytePairTokenizer.self, forKey: .tokenizer))
            return
        }
        let container = try decoder.singleValueContainer()
        let strings = try container.decode([String].self)
        func corrupt(_ reason: String) -> DecodingError {
            .dataCorruptedError(
                in: container,
                debugDescription: "a vocabulary is [\"\", then one character per token in ascending order of code point]; \(reason)")
        }
        guard strings.first == "" else {
            throw corrupt(strings.isEmpty ? "got an empty list" : "token 0 (the boundary) is \"\(DataError.cut(strings[0]))\", not \"\"")
        }
        var characters = [Unicode.Scalar]()
        for (token, string) in strings.enumerated().dropFirst() {
            let scalars = string.unicodeScalars
            guard scalars.count == 1, let character = scalars.first else {
                throw corrupt("token \(token) is \"\(DataError.cut(string))\", \(scalars.count) characters rather than one")
            }
            if let previous = characters.last, previous >= character {
                throw corrupt(
                    previous == character
                        ? "token \(token) repeats token \(token - 1)"
                        : "token \(token) (\(character.codePoint)) comes before token \(token - 1)")
            }
            characters.append(character)
        }
        self.init(sorted: characters)
    }
}

/// A tokenizer on the heap, shared by the copies of a ``Vocabulary``.
private final class TokenizerBox: Sendable {
    let tokenizer: BytePairTokenizer
    init(_ tokenizer: BytePairTokenizer) { self.tokenizer = tokenizer }
}
