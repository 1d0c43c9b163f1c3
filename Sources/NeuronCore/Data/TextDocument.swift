/// A whole text as one sequence of characters, for a character model that reads a book, a play or
/// a code file, where a newline is just another character and the context runs over hundreds of
/// them (nanoGPT's `shakespeare_char`).
///
/// The file is UTF-8 and its characters are Unicode scalars, as ``TextCorpus`` reads them; nothing
/// is trimmed or dropped (a byte-order mark opening the file is skipped). Whitespace controls (tab,
/// newline, vertical tab, form feed, carriage return) are characters like any other; any other
/// control character marks a binary file and is an error at its line and column.
///
/// The vocabulary is ``Vocabulary``'s: token 0 is the boundary, which a document never holds (no
/// window reads or predicts it), then every character of the file in order of code point. The
/// document is split into contiguous parts as nanoGPT splits it: the training part first, then
/// the validation part, the test part last (``parts(validationFraction:testFraction:minimumTraining:)``).
///
/// A document of a tokenizer's tokens (``load(_:validationFraction:testFraction:minimumTraining:maximumBytes:tokenizer:)``)
/// is the same text split into the same parts of characters, each part then encoded on its own, so
/// that a token model and a character model hold out the same text, and no token spans two parts.
public struct TextDocument: Sendable, Equatable, CustomStringConvertible {
    /// The file the text was read from, as given.
    public let path: String
    /// Every character's token, in file order, in a byte or two each
    /// (``TokenSequence/bytesPerToken(vocabulary:)``); or the tokenizer's tokens.
    public let tokens: TokenSequence
    /// The boundary token and every character of the file; or the tokenizer's tokens.
    public let vocabulary: Vocabulary

    /// The number of tokens: of characters, for a character vocabulary.
    public var count: Int { tokens.count }

    /// Loads a text file as one sequence of characters.
    ///
    /// The file's size is checked before it is read, and at most `maximumBytes` are read.
    /// - Throws: ``DataError`` naming the file: a missing, unreadable or too large file (a FIFO or
    ///   a device is refused before it is opened), invalid UTF-8 (with the line and byte offset), a
    ///   control character that is not whitespace (with its line and column), an empty file, a
    ///   text of one distinct character (nothing to predict); a limit below 1
    ///   (``DataError/invalidArgument(name:value:expected:)``).
    public static func load(_ path: String, maximumBytes: Int) throws(DataError) -> TextDocument {
        try parse(bytes: try bytes(at: path, maximumBytes: maximumBytes), source: path)
    }

    /// The file's bytes, as a document reads them: at most `maximumBytes` (at least 1).
    private static func bytes(at path: String, maximumBytes: Int) throws(DataError) -> [UInt8] {
        guard maximumBytes >= 1 else {
            throw .invalidArgument(name: "maximum bytes", value: "\(maximumBytes)", expected: "at least 1")
        }
        return try DataFile.bytes(at: path, maximumBytes: maximumBytes)
    }

    /// The reader behind ``load(_:maximumBytes:)``, over a file's bytes; `source` names them in errors.
    ///
    /// Two passes over the bytes, so that nothing but the tokens is held beside them: the first
    /// checks every character and marks the ones the text holds, the second writes the tokens in
    /// the width the vocabulary allows.
    static func parse(bytes: [UInt8], source: String) throws(DataError) -> TextDocument {
        let (start, count, characters, vocabulary) = try scan(bytes: bytes, source: source)
        // token[code point], for the code points up to the largest the text holds
        var token = [UInt32](repeating: 0, count: Int(characters.last!.value) + 1)
        for (index, character) in characters.enumerated() { token[Int(character.value)] = UInt32(index + 1) }
        let tokens = try TokenSequence(count: count, vocabulary: vocabulary.count) { (writer: inout TokenWriter) throws(DataError) in
            var i = start
            while i < bytes.count {
                if bytes[i] < 0x80 {
                    writer.append(Int(token[Int(bytes[i])]))
                    i += 1
                } else {
                    // Checked by the first pass: no error is left to throw.
                    writer.append(Int(token[Int(try TextCorpus.character(in: bytes, at: &i, end: bytes.count, source: source, line: 0).value)]))
                }
            }
        }
        return TextDocument(path: source, tokens: tokens, vocabulary: vocabulary)
    }

    /// The first pass of ``parse(bytes:source:)``: every character checked, counted and marked.
    /// - Returns: where the text starts (after a byte-order mark), its number of characters, the
    ///   distinct ones in ascending order, and their vocabulary.
    static func scan(bytes: [UInt8], source: String) throws(DataError) -> (
        start: Int, count: Int, characters: [Unicode.Scalar], vocabulary: Vocabulary
    ) {
        let start = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0  // a byte-order mark, as some editors write
        guard start < bytes.count else { throw .emptyFile(path: source, expected: "a text of at least two distinct characters, in UTF-8") }
        // One bit per code point the text holds.
        var seen = [UInt64](repeating: 0, count: 0x110000 / 64)
        var i = start, count = 0, line = 1, column = 0
        while i < bytes.count {
            // The line reader's decoder: the same UTF-8 rules and the same error, with the line and byte offset.
            let character = try TextCorpus.character(in: bytes, at: &i, end: bytes.count, source: source, line: line)
            column += 1
            if character == "\n" {
                (line, column) = (line + 1, 0)
            } else if Self.isBinary(character) {
                throw .binaryCharacter(path: source, line: line, column: column, character: character)
            }
            seen[Int(character.value) / 64] |= 1 << (character.value % 64)
            count += 1
        }
        var characters = [Unicode.Scalar]()  // ascending
        for word in seen.indices where seen[word] != 0 {
            for bit in 0..<64 where seen[word] & (1 << bit) != 0 { characters.append(Unicode.Scalar(UInt32(word * 64 + bit))!) }
        }
        let vocabulary = Vocabulary(characters: characters)
        guard vocabulary.count >= 3 else {
            throw .unusableDocument(
                path: source,
                reason:
                    "its \(count) characters are all \(vocabulary.name(of: 1).debugDescription): one distinct character leaves nothing to predict; expected at least two distinct characters"
            )
        }
        return (start, count, characters, vocabulary)
    }

    /// Whether `character` marks a binary file: a control character other than whitespace (tab,
    /// newline, vertical tab, form feed, carriage return).
    private static func isBinary(_ character: Unicode.Scalar) -> Bool {
        if character.isASCII { return (character.value < 0x20 && !(0x09...0x0D).contains(character.value)) || character.value == 0x7F }
        return character.properties.generalCategory == .control
    }

    private init(path: String, tokens: TokenSequence, vocabulary: Vocabulary) {
        (self.path, self.tokens, self.vocabulary) = (path, tokens, vocabulary)
    }

    /// The contiguous parts of the document: training first, then validation, then test, as
    /// nanoGPT splits it (`data[:int(n*0.9)]`, the rest held out): the training part is
    /// `⌊count · (1 − validationFraction − testFraction)⌋` characters, the test part
    /// `count · testFraction` rounded half away from zero, the validation part the rest. A
    /// held-out part whose fraction is above 0 holds at least 2 characters (one to read, one to
    /// predict); one whose fraction is 0 is empty.
    ///
    ///     // [0 ..< training) [training ..< training + validation) [… ..< count)
    ///
    /// - Throws: ``DataError/invalidArgument(name:value:expected:)`` for a fraction outside
    ///   [0, 1), or parts that leave the training part fewer than `minimumTraining` characters.
    public func parts(validationFraction: Double, testFraction: Double, minimumTraining: Int = 2) throws(DataError) -> (
        training: Range<Int>, validation: Range<Int>, test: Range<Int>
    ) {
        try Self.parts(of: count, validationFraction: validationFraction, testFraction: testFraction, minimumTraining: minimumTraining)
    }

    /// ``parts(validationFraction:testFraction:minimumTraining:)`` of `count` characters.
    static func parts(of count: Int, validationFraction: Double, testFraction: Double, minimumTraining: Int) throws(DataError) -> (
        training: Range<Int>, validation: Range<Int>, test: Range<Int>
    ) {
        for (name, fraction) in [("validation fraction", validationFraction), ("test fraction", testFraction)]
        where !(fraction >= 0 && fraction < 1) {
            throw .invalidArgument(name: name, value: "\(fraction)", expected: "a number in [0, 1)")
        }
        let test = testFraction == 0 ? 0 : max(2, Int((Double(count) * testFraction).rounded()))
        let kept = Int((Double(count) * max(0, 1 - validationFraction - testFraction)).rounded(.down))
        let validation = validationFraction == 0 ? 0 : max(2, count - test - kept)
        let training = count - validation - test
        guard training >= minimumTraining else {
            throw .invalidArgument(
                name: "held-out fractions", value: "\(validationFraction) and \(testFraction)",
                expected:
                    "fractions that leave the training part at least \(minimumTraining) of the \(count) characters (they hold out \(validation) and \(test))"
            )
        }
        return (0..<training, training..<training + validation, training + validation..<count)
    }

    /// The characters at `range` as consecutive, non-overlapping windows of `blockSize` positions,
    /// so that every character of the range but its first is predicted exactly once: window `w`
    /// reads characters `w·blockSize ..< (w + 1)·blockSize` and predicts the ones a place later.
    /// The last window's positions past the range are padding (features 0, targets −1, which the
    /// loss skips). Position `t` of a window reads `t + 1` characters, as in a window drawn for
    /// training, so the loss over these rows is the exact loss of nanoGPT's estimate.
    ///
    ///     // features: (windows, blockSize)  c[wB] … c[wB + B − 1]
    ///     // targets:  (windows, blockSize)  c[wB + 1] … c[wB + B], −1 past the range
    ///     // windows = ⌈(characters − 1) / blockSize⌉
    ///
    /// - Precondition: `range` holds at least 2 characters, `blockSize` ≥ 1.
    public func windows<Scalar: TensorScalar>(_ range: Range<Int>, blockSize: Int, as: Scalar.Type = Scalar.self) -> Dataset<Scalar> {
        precondition(range.count >= 2 && blockSize >= 1, "windows need 2 characters and a block of 1")
        let rows = Self.windowCount(characters: range.count, blockSize: blockSize)
        var features = [Scalar](repeating: 0, count: rows * blockSize)
        var targets = [Scalar](repeating: -1, count: rows * blockSize)
        features.withUnsafeMutableBufferPointer { tokens.copy(range.dropLast(), into: $0.baseAddress!) }
        targets.withUnsafeMutableBufferPointer { tokens.copy(range.dropFirst(), into: $0.baseAddress!) }
        return Dataset(
            unchecked: Tensor(matrix: features, rows: rows, columns: blockSize),
            targets: Tensor(matrix: targets, rows: rows, columns: blockSize),
            labels: nil, classNames: nil, featureNames: (0..<blockSize).map { "t\($0)" })
    }

    /// The consecutive windows ``windows(_:blockSize:as:)`` cuts `characters` characters into:
    /// ⌈(characters − 1) / blockSize⌉, every character but the first predicted once.
    public static func windowCount(characters: Int, blockSize: Int) -> Int { (characters - 1 + blockSize - 1) / blockSize }

    /// `TextDocument(input.txt: 1115394 characters, 66 tokens)`; a tokenizer's
    /// `TextDocument(input.txt: 301966 tokens of 1024)`.
    public var description: String {
        vocabulary.tokenizer == nil
            ? "TextDocument(\(path): \(count) characters, \(vocabulary.count) tokens)"
            : "TextDocument(\(path): \(count) tokens of \(vocabulary.count))"
    }

    // MARK: - Tokens of a tokenizer

    /// Loads a text file as a tokenizer's tokens: read and checked as ``load(_:maximumBytes:)``
    /// reads a character document, split into the parts of characters
    /// ``parts(validationFraction:testFraction:minimumTraining:)`` gives it, and each part encoded
    /// on its own by the tokenizer `tokenizer` makes from the training part's text alone (a file's
    /// tokenizer, or one trained there), registered special tokens' names read as their ids.
    ///
    ///     // characters: [training)[validation)[test)  →  tokens: [training)[validation)[test)
    ///
    /// - Parameters:
    ///   - path: the text file.
    ///   - validationFraction: the characters held out for validation, as a character document's.
    ///   - testFraction: the characters held out for testing.
    ///   - minimumTraining: the fewest tokens the training part may hold.
    ///   - maximumBytes: the most bytes read.
    ///   - tokenizer: the tokenizer, given the training part's text.
    /// - Returns: the document and its parts, as ranges of its tokens.
    /// - Throws: what ``load(_:maximumBytes:)`` and the parts throw, in characters; what `tokenizer`
    ///   throws; ``DataError/invalidArgument(name:value:expected:)`` for a training part of fewer
    ///   than `minimumTraining` tokens, or a held-out part of one token (nothing to predict).
    public static func load(
        _ path: String, validationFraction: Double, testFraction: Double, minimumTraining: Int = 2, maximumBytes: Int,
        tokenizer: (_ trainingText: String) throws -> BytePairTokenizer
    ) throws -> (TextDocument, (training: Range<Int>, validation: Range<Int>, test: Range<Int>)) {
        let bytes = try bytes(at: path, maximumBytes: maximumBytes)
        // The characters checked and counted as a character document's, without its tokens.
        let (first, count, _, _) = try scan(bytes: bytes, source: path)
        let parts = try Self.parts(of: count, validationFraction: validationFraction, testFraction: testFraction, minimumTraining: 2)
        // The byte where each part starts: the bytes are checked UTF-8, so a character starts at each
        // byte that is not a continuation byte.
        var cuts = [first]
        var i = first, character = 0
        for end in [parts.validation.lowerBound, parts.test.lowerBound, count] {
            while character < end {
                i += 1
                while i < bytes.count, bytes[i] & 0xC0 == 0x80 { i += 1 }
                character += 1
            }
            cuts.append(i)
        }
        let tokenizer = try tokenizer(String(decoding: bytes[cuts[0]..<cuts[1]], as: UTF8.self))
        // Each part encoded from the file's bytes into one reused buffer and appended to the tokens,
        // so that beside the bytes only one part's ids are held (4 bytes a token) and the tokens (at
        // most a token a byte, in the width the vocabulary allows).
        var ends: [Int] = []
        var encoder = BytePairEncoder(tokenizer), ids: [UInt32] = []
        let tokens = try TokenSequence(count: bytes.count - first, vocabulary: tokenizer.vocabularySize) {
            (writer: inout TokenWriter) throws(DataError) in
            bytes.withUnsafeBufferPointer { all in
                for part in 0..<3 {
                    ids.removeAll(keepingCapacity: true)
                    // Every registered special token is allowed, so nothing can be thrown.
                    try? encoder.encode(UnsafeBufferPointer(rebasing: all[cuts[part]..<cuts[part + 1]]), allowedSpecial: .all, into: &ids)
                    for id in ids { writer.append(Int(id)) }
                    ends.append(writer.count)
                }
            }
        }
        let (training, validation, total) = (ends[0], ends[1] - ends[0], ends[2])
        let held = [("validation", validation), ("test", total - ends[1])].filter { $0.1 == 1 }.map { "the \($0.0) part is 1 token" }
        guard training >= minimumTraining, held.isEmpty else {
            throw DataError.invalidArgument(
                name: "held-out fractions", value: "\(validationFraction) and \(testFraction)",
                expected:
                    "fractions that leave the training part at least \(minimumTraining) of the \(total) tokens and each held-out part 2 or none (the training part is \(training) tokens\(held.isEmpty ? "" : "; " + held.joined(separator: ", ")))"
            )
        }
        return (
            TextDocument(path: path, tokens: tokens, vocabulary: Vocabulary(tokenizer: tokenizer)),
            (0..<training, training..<training + validation, training + validation..<total)
        )
    }
}
