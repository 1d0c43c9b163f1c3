/// The tokens of a character model: token 0 is the boundary, then one token per character.
///
/// A character is a Unicode scalar (a code point, as Python's `str` iterates), so a peer in another
/// language sees the same tokens. The boundary token both starts and ends a sample: a line `cab` is
/// the sequence `⏎ c a b ⏎`. The characters follow in order of code point (Python's
/// `sorted(set(text))`), token 1 the lowest; that order fixes every token's index.
///
/// Coded (JSON, a checkpoint) as the list of the tokens' strings in token order, the boundary as
/// the empty string, the one string that is no character: `["", "a", "b", "c"]`. A peer maps token
/// `i` to `list[i]`, and joining the strings of a generated sequence drops the boundary. Decoding
/// checks that the list is such a list. Shown, the boundary is ``boundarySymbol``.
public struct Vocabulary: Sendable, Equatable, Codable, CustomStringConvertible {
    /// The boundary token, which starts and ends every sample.
    public static let boundary = 0
    /// How the boundary token is shown (`⏎`, U+23CE RETURN SYMBOL): it ends a line.
    public static let boundarySymbol = "⏎"

    /// The characters of tokens 1, 2, …, in token order (ascending code point).
    public let characters: [Unicode.Scalar]
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
    }

    /// The number of tokens: the characters and the boundary.
    public var count: Int { characters.count + 1 }

    /// The token of `character`, or nil when it is not in the vocabulary.
    public func index(of character: Unicode.Scalar) -> Int? { tokens[character] }

    /// The tokens of the characters of `line`, without boundaries; nil when a character is not in
    /// the vocabulary.
    public func encode(_ line: String) -> [Int]? {
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
    public func decode(_ tokens: some Sequence<Int>) -> String {
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
    /// token 1 (the first character in code-point order). The run's passages and `neuron sample`
    /// both start there.
    public var documentStart: Int { index(of: "\n") ?? 1 }

    /// How `token` is shown: ``boundarySymbol`` for the boundary, the character itself otherwise,
    /// with control characters escaped (`\t`); `?` for an index outside `0..<count`.
    public func name(of token: Int) -> String {
        if token == Self.boundary { return Self.boundarySymbol }
        guard token >= 1, token <= characters.count else { return "?" }
        let character = characters[token - 1]
        return character.properties.generalCategory == .control ? character.escaped(asASCII: true) : String(character)
    }

    /// `Vocabulary(27 tokens: ⏎abcdefghijklmnopqrstuvwxyz)`, the first 100 tokens shown.
    public var description: String {
        let shown = (0..<min(count, 100)).map(name(of:)).joined()
        return "Vocabulary(\(count) tokens: \(shown)\(count > 100 ? "… and \(count - 100) more" : ""))"
    }

    public static func == (a: Vocabulary, b: Vocabulary) -> Bool { a.characters == b.characters }

    // MARK: Coding

    /// Writes `["", "a", "b", …]`: the tokens' strings in token order, the boundary empty.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode([""] + characters.map { String($0) })
    }

    /// Reads the list ``encode(to:)`` writes, checked: the empty string first, then single
    /// characters (Unicode scalars) in ascending order of code point, so each at most once.
    public init(from decoder: any Decoder) throws {
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
