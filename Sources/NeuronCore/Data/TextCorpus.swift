/// Lines of text as samples for a character model that reads a line one character at a time and
/// predicts the next (words, names, codes: one sample per line).
///
/// The file is UTF-8 and its characters are Unicode scalars (code points, as Python's `str`
/// iterates them), so a peer in another language sees the same tokens. Lines end in LF or CRLF (one
/// CR before the LF is stripped); empty lines are skipped and are no samples; nothing else is
/// trimmed. A UTF-8 byte-order mark opening the file is skipped. Tab is the one control character
/// a line may hold.
///
/// A sample of n characters is the sequence `⏎ c1 … cn ⏎` (``Vocabulary/boundary`` at both
/// ends): fed `⏎ c1 … cn`, the model is to predict `c1 … cn ⏎`, n + 1 positions. ``blockSize``
/// positions hold lines of at most `blockSize - 1` characters.
public struct TextCorpus: Sendable, Equatable, CustomStringConvertible {
    /// The file the lines were read from, as given.
    public let path: String
    /// The samples: the lines kept, lowercased when asked.
    public let lines: [String]
    /// The 1-based line in the file of each sample, for messages.
    public let lineNumbers: [Int]
    /// The boundary token and every character of the samples.
    public let vocabulary: Vocabulary
    /// The positions of a sample's features and targets rows: the longest sample's characters + 1
    /// unless given.
    public let blockSize: Int
    /// The number of non-empty lines that ``load(_:lowercase:keep:blockSize:maximumBytes:)`` dropped
    /// for a character outside `keep`.
    public let droppedCount: Int

    /// The number of samples.
    public var count: Int { lines.count }

    /// Loads a text file of one sample per line.
    ///
    /// The file's size is checked before it is read; at most `maximumBytes` are read, which bounds
    /// the longest line too. Each line is checked (UTF-8, no control character but tab) whether it
    /// is kept or not: a file with a NUL in it is taken for binary, not filtered.
    /// - Parameters:
    ///   - path: the UTF-8 text file.
    ///   - lowercase: map each character to its lowercase (Unicode's full lowercase mapping, scalar
    ///     by scalar: `Unicode.Scalar.Properties.lowercaseMapping`; unlike Python's `str.lower()`,
    ///     without the final-sigma rule), before `keep` and the vocabulary see it.
    ///   - keep: keep only lines whose every character is in this class; the others are dropped
    ///     and counted in ``droppedCount``.
    ///   - blockSize: the positions of a sample (at least 2); a kept line longer than
    ///     `blockSize - 1` characters is an error. Nil: the longest kept line's characters + 1.
    ///   - maximumBytes: the largest file read, at least 1.
    /// - Throws: ``DataError`` naming the file, and the line where it applies: a missing,
    ///   unreadable or too large file, invalid UTF-8 (with the byte offset), a control
    ///   character, a file with no line, or no line kept (with the count dropped), a line longer
    ///   than the block size; a block size below 2 or a limit below 1
    ///   (``DataError/invalidArgument(name:value:expected:)``); features and targets too large
    ///   for the machine's memory (``DataError/exceedsMemory(path:what:bytes:memory:)``).
    public static func load(
        _ path: String, lowercase: Bool = false, keep: CharacterClass? = nil, blockSize: Int? = nil, maximumBytes: Int
    ) throws(DataError) -> TextCorpus {
        guard maximumBytes >= 1 else {
            throw .invalidArgument(name: "maximum bytes", value: "\(maximumBytes)", expected: "at least 1")
        }
        if let blockSize, blockSize < 2 {
            throw .invalidArgument(
                name: "block size", value: "\(blockSize)", expected: "at least 2 (the boundary token and one character)")
        }
        let bytes = try DataFile.bytes(at: path, maximumBytes: maximumBytes)
        return try parse(bytes: bytes, source: path, lowercase: lowercase, keep: keep, blockSize: blockSize)
    }

    /// The reader behind ``load(_:lowercase:keep:blockSize:maximumBytes:)``, over a file's bytes;
    /// `source` names them in errors. `blockSize`, when given, is at least 2.
    static func parse(
        bytes: [UInt8], source: String, lowercase: Bool, keep: CharacterClass?, blockSize: Int?
    ) throws(DataError) -> TextCorpus {
        let newline = UInt8(ascii: "\n"), carriageReturn = UInt8(ascii: "\r")
        let maximumLength = blockSize.map { $0 - 1 } ?? .max  // the characters a line may hold
        var lines = [String](), lineNumbers = [Int]()
        var dropped = 0, longestKept = 0
        var seen = Set<Unicode.Scalar>()
        var line = String.UnicodeScalarView()

        var start = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0  // a byte-order mark, as some editors write
        var lineNumber = 0
        while start < bytes.count {
            lineNumber += 1
            let next = (bytes[start...].firstIndex(of: newline) ?? bytes.count - 1) + 1
            var end = next
            if end > start, bytes[end - 1] == newline { end -= 1 }
            if end > start, bytes[end - 1] == carriageReturn { end -= 1 }
            defer { start = next }
            guard end > start else { continue }  // an empty line: no sample

            // One pass over the line: UTF-8 and control characters checked to its end, characters
            // stored only while the line may still be kept and fits, so that a line of a hundred
            // megabytes costs no more than its bytes.
            line.removeAll(keepingCapacity: true)
            var length = 0, column = 0, kept = true
            var i = start
            while i < end {
                let character = try Self.character(in: bytes, at: &i, end: end, source: source, line: lineNumber)
                column += 1
                let isControl =
                    character.isASCII ? character.value < 0x20 || character.value == 0x7F : character.properties.generalCategory == .control
                if isControl, character != "\t" {
                    throw .controlCharacter(path: source, line: lineNumber, column: column, character: character)
                }
                guard lowercase else {
                    Self.add(character, to: &line, length: &length, kept: &kept, keep: keep, maximumLength: maximumLength)
                    continue
                }
                if character.isASCII {
                    let lower = (0x41...0x5A).contains(character.value) ? Unicode.Scalar(UInt8(character.value) + 0x20) : character
                    Self.add(lower, to: &line, length: &length, kept: &kept, keep: keep, maximumLength: maximumLength)
                } else {
                    for lower in character.properties.lowercaseMapping.unicodeScalars {
                        Self.add(lower, to: &line, length: &length, kept: &kept, keep: keep, maximumLength: maximumLength)
                    }
                }
            }
            guard kept else {
                dropped += 1
                continue
            }
            if let blockSize, length > maximumLength {
                throw .lineTooLong(path: source, line: lineNumber, length: length, blockSize: blockSize)
            }
            seen.formUnion(line)
            lines.append(String(line))
            lineNumbers.append(lineNumber)
            longestKept = max(longestKept, length)
        }

        guard !lines.isEmpty else {
            guard let keep, dropped > 0 else { throw .emptyFile(path: source, expected: "one sample per line, in UTF-8") }
            throw .noLinesKept(path: source, dropped: dropped, keep: keep.description, lowercased: lowercase)
        }
        let size = blockSize ?? longestKept + 1
        // features and targets: (lines, size) each, checked as Double, the larger scalar
        let (elements, overflow) = lines.count.multipliedReportingOverflow(by: size)
        let (bytesNeeded, overflow2) = elements.multipliedReportingOverflow(by: 2 * MemoryLayout<Double>.size)
        let memory = PhysicalMemory.bytes
        guard !overflow, !overflow2, bytesNeeded <= memory else {
            throw .exceedsMemory(
                path: source, what: "its \(lines.count) samples at block size \(size) as features and targets in Double",
                bytes: overflow || overflow2 ? .max : bytesNeeded, memory: memory)
        }
        return TextCorpus(
            path: source, lines: lines, lineNumbers: lineNumbers, vocabulary: Vocabulary(characters: seen), blockSize: size,
            droppedCount: dropped)
    }

    /// The character (Unicode scalar) whose UTF-8 starts at `bytes[i]`, before `end`; `i` steps past it.
    /// - Throws: ``DataError/invalidUTF8(path:line:offset:found:)`` at the first invalid sequence
    ///   (the standard library's UTF-8 decoder: no overlong forms, surrogates or code points past U+10FFFF).
    private static func character(
        in bytes: [UInt8], at i: inout Int, end: Int, source: String, line: Int
    ) throws(DataError) -> Unicode.Scalar {
        if bytes[i] < 0x80 {
            defer { i += 1 }
            return Unicode.Scalar(bytes[i])
        }
        var input = bytes[i..<end].makeIterator()
        var parser = Unicode.UTF8.ForwardParser()
        switch parser.parseScalar(from: &input) {
        case .valid(let encoded):
            i += encoded.count
            return Unicode.UTF8.decode(encoded)
        case .error(let count):
            throw .invalidUTF8(path: source, line: line, offset: i, found: Array(bytes[i..<i + count]))
        case .emptyInput:
            preconditionFailure("i < end: the input holds at least one byte")
        }
    }

    /// Counts `character` into a line, and stores it while the line may still be kept and fits.
    private static func add(
        _ character: Unicode.Scalar, to line: inout String.UnicodeScalarView, length: inout Int, kept: inout Bool,
        keep: CharacterClass?, maximumLength: Int
    ) {
        length += 1
        if kept, let keep, !keep.contains(character) { kept = false }
        if kept, length <= maximumLength { line.append(character) }
    }

    /// The samples at `indices` (all, in order, when nil) as a dataset of token indices.
    ///
    ///     // features: (indices.count, blockSize)  ⏎ c1 … cn, then 0 (the boundary: harmless as input)
    ///     // targets:  (indices.count, blockSize)  c1 … cn ⏎, then −1 (no target: the loss skips it)
    ///
    /// Feature names are the positions `t0`, `t1`, …; no labels, no class names.
    /// - Parameters:
    ///   - indices: samples, each in `0..<count`; nil: every sample in file order.
    ///   - as: the scalar type of the dataset.
    public func dataset<Scalar: TensorScalar>(_ indices: [Int]? = nil, as: Scalar.Type = Scalar.self) -> Dataset<Scalar> {
        let rows = indices ?? Array(lines.indices)
        var features = [Scalar](repeating: 0, count: rows.count * blockSize)
        var targets = [Scalar](repeating: -1, count: rows.count * blockSize)
        for (row, sample) in rows.enumerated() {
            precondition(lines.indices.contains(sample), "sample \(sample) is outside 0..<\(count)")
            let base = row * blockSize
            var position = 0
            for character in lines[sample].unicodeScalars {
                // Every character of a sample is in the vocabulary built from the samples.
                let token = Scalar(vocabulary.index(of: character)!)
                features[base + position + 1] = token
                targets[base + position] = token
                position += 1
            }
            targets[base + position] = Scalar(Vocabulary.boundary)
        }
        return Dataset(
            unchecked: Tensor(matrix: features, rows: rows.count, columns: blockSize),
            targets: Tensor(matrix: targets, rows: rows.count, columns: blockSize),
            labels: nil, classNames: nil, featureNames: (0..<blockSize).map { "t\($0)" })
    }

    /// The first `count` samples (all when there are fewer), with the vocabulary and block size
    /// of the whole file, so that a quick run on part of a file has the tokens of the whole.
    public func prefix(_ count: Int) -> TextCorpus {
        let n = max(0, min(count, lines.count))
        return TextCorpus(
            path: path, lines: Array(lines[..<n]), lineNumbers: Array(lineNumbers[..<n]), vocabulary: vocabulary, blockSize: blockSize,
            droppedCount: droppedCount)
    }

    /// Which samples go to training, validation and test: `0..<count` shuffled with `generator`,
    /// the last `testFraction` of them the test part, the `validationFraction` before those the
    /// validation part (each rounded, at least one sample when its fraction is above 0), the rest
    /// training. The same seed gives the same parts on every machine.
    /// - Throws: ``DataError/invalidArgument(name:value:expected:)`` for a fraction outside
    ///   [0, 1), or fractions that leave no training sample.
    public func split(
        validationFraction: Double, testFraction: Double, generator: inout SeededGenerator
    ) throws(DataError) -> (training: [Int], validation: [Int], test: [Int]) {
        func held(_ fraction: Double, _ name: String) throws(DataError) -> Int {
            guard fraction >= 0, fraction < 1 else { throw .invalidArgument(name: name, value: "\(fraction)", expected: "a number in [0, 1)") }
            return fraction == 0 ? 0 : max(1, Int((Double(count) * fraction).rounded()))
        }
        let validationCount = try held(validationFraction, "validation fraction"), testCount = try held(testFraction, "test fraction")
        guard validationCount + testCount < count else {
            throw .invalidArgument(
                name: "validation and test fractions", value: "\(validationFraction) and \(testFraction)",
                expected:
                    "fractions that leave at least one of the \(count) samples for training (they take \(validationCount) and \(testCount))"
            )
        }
        let parts = try Dataset<Double>.splitRows(count: count, validationCount: validationCount + testCount, generator: &generator)
        return (parts.training, Array(parts.validation.prefix(validationCount)), Array(parts.validation.suffix(testCount)))
    }

    /// `TextCorpus(words.txt: 999 samples, 27 tokens, block size 16)`, with the lines dropped when any were.
    public var description: String {
        let dropped = droppedCount > 0 ? ", \(droppedCount) dropped" : ""
        return "TextCorpus(\(path): \(count) samples\(dropped), \(vocabulary.count) tokens, block size \(blockSize))"
    }
}

/// A set of characters written as the body of a regular expression's bracket expression: `a-z`,
/// `a-z'`, `A-Za-z0-9_-`.
///
/// Ranges of characters (Unicode scalars, by code point) and single characters. A `-` first or
/// last is itself; `\-`, `\\`, `\]` and `\^` are the characters `-`, `\`, `]` and `^`. Negation
/// (a leading `^`) is not supported, and an unescaped `]` is refused, so that `[a-z]` or `^a-z`
/// given by mistake is an error rather than a different class.
public struct CharacterClass: Sendable, Equatable, CustomStringConvertible {
    /// The text the class was parsed from.
    public let description: String
    private let ranges: [ClosedRange<Unicode.Scalar>]

    /// Parses the body of a bracket expression.
    /// - Throws: ``DataError/invalidArgument(name:value:expected:)`` for an empty class, a range
    ///   that runs backwards (`z-a`), an unknown escape, a `\` at the end, an unescaped `]`, a
    ///   leading `^`.
    public init(_ text: String) throws(DataError) {
        func invalid(_ expected: String) -> DataError {
            .invalidArgument(name: "character class", value: "\"\(DataError.cut(text))\"", expected: expected)
        }
        // Each character, and whether it was escaped (an escaped `-` never makes a range).
        var atoms = [(character: Unicode.Scalar, escaped: Bool)]()
        var scalars = text.unicodeScalars.makeIterator()
        while let character = scalars.next() {
            switch character {
            case "\\":
                guard let escaped = scalars.next() else { throw invalid("an escaped character after the final \\ (write \\\\ for \\)") }
                guard "-\\]^".unicodeScalars.contains(escaped) else {
                    throw invalid("one of the escapes \\-, \\\\, \\], \\^; \\\(escaped) is none (no class shorthands such as \\d)")
                }
                atoms.append((escaped, true))
            case "]":
                throw invalid("\\] for the character ] (the class is written without the brackets around it: a-z, not [a-z])")
            case "^" where atoms.isEmpty:
                throw invalid("no leading ^: a class cannot be negated; write \\^ for the character ^")
            default:
                atoms.append((character, false))
            }
        }
        guard !atoms.isEmpty else { throw invalid("at least one character, such as a-z") }
        var ranges = [ClosedRange<Unicode.Scalar>]()
        var i = 0
        while i < atoms.count {
            let lower = atoms[i].character
            if i + 2 < atoms.count, atoms[i + 1].character == "-", !atoms[i + 1].escaped {
                let upper = atoms[i + 2].character
                guard lower <= upper else {
                    throw invalid(
                        "ranges from the lower code point to the higher; \(lower)-\(upper) runs backwards "
                            + "(U+\(String(lower.value, radix: 16, uppercase: true)) > U+\(String(upper.value, radix: 16, uppercase: true)))")
                }
                ranges.append(lower...upper)
                i += 3
            } else {
                ranges.append(lower...lower)
                i += 1
            }
        }
        self.description = text
        self.ranges = ranges
    }

    /// Whether `character` is in the class.
    public func contains(_ character: Unicode.Scalar) -> Bool {
        ranges.contains { $0.contains(character) }
    }
}
