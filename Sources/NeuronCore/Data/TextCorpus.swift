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
/// positions hold lines of at most `blockSize - 1` characters; a longer line is an error, or, with
/// ``LongLines/window``, several samples (``dataset(_:as:)``).
public struct TextCorpus: Sendable, Equatable, CustomStringConvertible {
    /// What becomes of a line whose n + 1 positions are more than the block size.
    public enum LongLines: String, Sendable, Codable, CaseIterable {
        /// The line is an error naming it.
        case error
        /// The line is cut into samples so that every target is predicted once, with as much
        /// context as the block holds: the first `blockSize` positions, then for each later target
        /// the `blockSize` inputs just before it, every target but that last one masked (−1). The
        /// loss then counts each character of the line once, as nanoGPT crops its context when it samples.
        case window
    }

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
    /// The number of non-empty lines that ``load(_:lowercase:keep:blockSize:longLines:maximumBytes:)``
    /// dropped for a character outside `keep`.
    public let droppedCount: Int
    /// What a line longer than the block becomes: an error when read, or windows in ``dataset(_:as:)``.
    public let longLines: LongLines

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
    ///     `blockSize - 1` characters is an error unless `longLines` is ``LongLines/window``. Nil:
    ///     the longest kept line's characters + 1.
    ///   - longLines: what a line longer than the block becomes (default ``LongLines/error``).
    ///   - maximumBytes: the largest file read, at least 1.
    /// - Throws: ``DataError`` naming the file, and the line where it applies: a missing,
    ///   unreadable or too large file, invalid UTF-8 (with the byte offset), a control
    ///   character, a file with no line, or no line kept (with the count dropped), a line longer
    ///   than the block size (unless windowed); a block size below 2 or a limit below 1
    ///   (``DataError/invalidArgument(name:value:expected:)``); features and targets too large
    ///   for the machine's memory (``DataError/exceedsMemory(path:what:bytes:memory:)``).
    public static func load(
        _ path: String, lowercase: Bool = false, keep: CharacterClass? = nil, blockSize: Int? = nil, longLines: LongLines = .error,
        maximumBytes: Int
    ) throws(DataError) -> TextCorpus {
        guard maximumBytes >= 1 else {
            throw .invalidArgument(name: "maximum bytes", value: "\(maximumBytes)", expected: "at least 1")
        }
        if let blockSize, blockSize < 2 {
            throw .invalidArgument(
                name: "block size", value: "\(blockSize)", expected: "at least 2 (the boundary token and one character)")
        }
        let bytes = try DataFile.bytes(at: path, maximumBytes: maximumBytes)
        return try parse(bytes: bytes, source: path, lowercase: lowercase, keep: keep, blockSize: blockSize, longLines: longLines)
    }

    /// The reader behind ``load(_:lowercase:keep:blockSize:longLines:maximumBytes:)``, over a
    /// file's bytes; `source` names them in errors. `blockSize`, when given, is at least 2.
    static func parse(
        bytes: [UInt8], source: String, lowercase: Bool, keep: CharacterClass?, blockSize: Int?, longLines: LongLines = .error
    ) throws(DataError) -> TextCorpus {
        let newline = UInt8(ascii: "\n"), carriageReturn = UInt8(ascii: "\r")
        // The characters a line may hold: windows take a line of any length.
        let maximumLength = longLines == .window ? .max : blockSize.map { $0 - 1 } ?? .max
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
        // A line's samples: one, and with windows one more per target past the block. Each line
        // holds at most the file's bytes, so the sum cannot overflow.
        let samples = lines.reduce(0) { $0 + Self.sampleCount(characters: $1.unicodeScalars.count, blockSize: size) }
        // features and targets: (samples, size) each, checked as Double, the larger scalar
        let (elements, overflow) = samples.multipliedReportingOverflow(by: size)
        let (bytesNeeded, overflow2) = elements.multipliedReportingOverflow(by: 2 * MemoryLayout<Double>.size)
        let memory = PhysicalMemory.bytes
        guard !overflow, !overflow2, bytesNeeded <= memory else {
            throw .exceedsMemory(
                path: source, what: "its \(samples) samples at block size \(size) as features and targets in Double",
                bytes: overflow || overflow2 ? .max : bytesNeeded, memory: memory)
        }
        return TextCorpus(
            path: source, lines: lines, lineNumbers: lineNumbers, vocabulary: Vocabulary(characters: seen), blockSize: size,
            droppedCount: dropped, longLines: longLines)
    }

    /// The samples a line of `characters` makes: its n + 1 positions fill one sample of the block,
    /// and each target past the block takes one more (only when windowed: otherwise the line fits).
    static func sampleCount(characters: Int, blockSize: Int) -> Int { 1 + max(0, characters + 1 - blockSize) }

    /// The character (Unicode scalar) whose UTF-8 starts at `bytes[i]`, before `end`; `i` steps past it.
    /// - Throws: ``DataError/invalidUTF8(path:line:offset:found:)`` at the first invalid sequence
    ///   (the standard library's UTF-8 decoder: no overlong forms, surrogates or code points past U+10FFFF).
    static func character(
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

    /// The lines at `indices` (all, in order, when nil) as a dataset of token indices, a row per
    /// sample: one per line, or, for a windowed line longer than the block, its windows in order.
    ///
    ///     // features: (samples, blockSize)  ⏎ c1 … cn, then 0 (the boundary: harmless as input)
    ///     // targets:  (samples, blockSize)  c1 … cn ⏎, then −1 (no target: the loss skips it)
    ///     // a window of target k past the block: features c(k−blockSize+1) … ck, targets −1 … −1 c(k+1)
    ///
    /// Feature names are the positions `t0`, `t1`, …; no labels, no class names.
    /// - Parameters:
    ///   - indices: lines, each in `0..<count`; nil: every line in file order.
    ///   - as: the scalar type of the dataset.
    public func dataset<Scalar: TensorScalar>(_ indices: [Int]? = nil, as: Scalar.Type = Scalar.self) -> Dataset<Scalar> {
        let chosen = indices ?? Array(lines.indices)
        let rows = lineOfEachSample(chosen).count
        var features = [Scalar](repeating: 0, count: rows * blockSize)
        var targets = [Scalar](repeating: -1, count: rows * blockSize)
        var row = 0
        for line in chosen {
            precondition(lines.indices.contains(line), "line \(line) is outside 0..<\(count)")
            // Every character of a line is in the vocabulary built from the lines.
            let characters = lines[line].unicodeScalars.map { Scalar(vocabulary.index(of: $0)!) }
            let inputs = [Scalar(Vocabulary.boundary)] + characters, outputs = characters + [Scalar(Vocabulary.boundary)]
            // The first sample: the first blockSize positions (all of them when the line fits).
            let first = min(blockSize, inputs.count)
            for t in 0..<first {
                features[row * blockSize + t] = inputs[t]
                targets[row * blockSize + t] = outputs[t]
            }
            row += 1
            // Each later target k: the blockSize inputs ending at k, and only that target counted.
            for k in blockSize..<max(blockSize, inputs.count) {
                for t in 0..<blockSize { features[row * blockSize + t] = inputs[k - blockSize + 1 + t] }
                targets[row * blockSize + blockSize - 1] = outputs[k]
                row += 1
            }
        }
        return Dataset(
            unchecked: Tensor(matrix: features, rows: rows, columns: blockSize),
            targets: Tensor(matrix: targets, rows: rows, columns: blockSize),
            labels: nil, classNames: nil, featureNames: (0..<blockSize).map { "t\($0)" })
    }

    /// The line of each row of ``dataset(_:as:)`` for the lines at `indices`: each line once, or,
    /// windowed, once per sample it makes.
    public func lineOfEachSample(_ indices: [Int]) -> [Int] {
        indices.flatMap { line in
            Array(repeating: line, count: Self.sampleCount(characters: lines[line].unicodeScalars.count, blockSize: blockSize))
        }
    }

    /// The first `count` samples (all when there are fewer), with the vocabulary and block size
    /// of the whole file, so that a quick run on part of a file has the tokens of the whole.
    public func prefix(_ count: Int) -> TextCorpus {
        let n = max(0, min(count, lines.count))
        return TextCorpus(
            path: path, lines: Array(lines[..<n]), lineNumbers: Array(lineNumbers[..<n]), vocabulary: vocabulary, blockSize: blockSize,
            droppedCount: droppedCount, longLines: longLines)
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
                            + "(\(lower.codePoint) > \(upper.codePoint))")
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
