/// The pattern a text is cut into chunks by before byte-pair merging; no merge crosses a chunk.
///
/// Each case is matched by hand, exactly as Python's `regex` module matches the pattern it names (the classes
/// \p{L}, \p{N} and \s from `regex`'s own Unicode tables, in UnicodeClasses.swift):
/// - `gpt4`: minbpe's `GPT4_SPLIT_PATTERN`,
///   `'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+`;
/// - `cl100k`: tiktoken's cl100k_base pattern, the same but for `\s++$` before `\s*[\r\n]` (whitespace that
///   runs to the end of the text is one chunk);
/// - `gpt2`: `'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`;
/// - `none`: the whole text is one chunk.
public enum SplitPattern: String, Sendable, CaseIterable {
    case gpt4, cl100k, gpt2, none
}

/// Cuts UTF-8 text into the chunks of a ``SplitPattern``, as byte ranges, without allocating.
public struct TextSplitter: Sendable {
    public let pattern: SplitPattern

    public init(_ pattern: SplitPattern) { self.pattern = pattern }

    /// Calls `body` with the byte range of each chunk of `text` (UTF-8), in order; the ranges cover it.
    public func forEachChunk(in text: UnsafeBufferPointer<UInt8>, _ body: (Range<Int>) -> Void) {
        let cursor = Cursor(text: text)
        var start = 0
        while start < text.count {
            let end: Int
            switch pattern {
            case .gpt4: end = cursor.gpt4Chunk(at: start, wholeTrailingSpace: false)
            case .cl100k: end = cursor.gpt4Chunk(at: start, wholeTrailingSpace: true)
            case .gpt2: end = cursor.gpt2Chunk(at: start)
            case .none: end = text.count
            }
            body(start..<end)
            start = end
        }
    }

    /// The chunks of `text`, as strings.
    public func chunks(of text: String) -> [String] {
        let utf8 = Array(text.utf8)
        var result: [String] = []
        utf8.withUnsafeBufferPointer { bytes in
            forEachChunk(in: bytes) { range in
                result.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self))
            }
        }
        return result
    }
}

/// A scalar's classes: a letter, a number, whitespace (\s), or none of them.
private struct ScalarClass: OptionSet {
    let rawValue: UInt8
    static let letter = ScalarClass(rawValue: 1)
    static let number = ScalarClass(rawValue: 2)
    static let space = ScalarClass(rawValue: 4)

    /// Neither a letter, a number nor whitespace: `[^\s\p{L}\p{N}]`.
    var isOther: Bool { isDisjoint(with: [.letter, .number, .space]) }

    /// Whether `scalar` is CR or LF, `[\r\n]`.
    static func isNewline(_ scalar: UInt32) -> Bool { scalar == 0x0A || scalar == 0x0D }

    /// ASCII's classes, by code point.
    static let ascii: [ScalarClass] = (0..<128).map { c in
        classOf(UInt32(c))
    }

    static func of(_ scalar: UInt32) -> ScalarClass {
        scalar < 128 ? ascii[Int(scalar)] : classOf(scalar)
    }

    private static func classOf(_ scalar: UInt32) -> ScalarClass {
        var result: ScalarClass = []
        if contains(UnicodeClasses.letters, scalar) { result.insert(.letter) }
        if contains(UnicodeClasses.numbers, scalar) { result.insert(.number) }
        if contains(UnicodeClasses.whitespace, scalar) { result.insert(.space) }
        return result
    }

    /// Whether `scalar` lies in one of `ranges` (ascending, disjoint): a binary search.
    private static func contains(_ ranges: [(UInt32, UInt32)], _ scalar: UInt32) -> Bool {
        var low = 0, high = ranges.count
        while low < high {
            let middle = (low + high) / 2
            if ranges[middle].1 < scalar { low = middle + 1 } else { high = middle }
        }
        return low < ranges.count && ranges[low].0 <= scalar
    }
}

/// Reads scalars of UTF-8 text by byte offset.
private struct Cursor {
    let text: UnsafeBufferPointer<UInt8>
    /// ASCII's classes, held here so that the innermost loops read no global.
    private let ascii: [ScalarClass]

    init(text: UnsafeBufferPointer<UInt8>) {
        self.text = text
        self.ascii = ScalarClass.ascii
    }

    /// The scalar at byte offset `i` (< text.count) and the offset of the next one.
    /// A sequence cut short by the end of the text (not valid UTF-8) is read as U+FFFD, never past the end.
    func scalar(at i: Int) -> (value: UInt32, next: Int) {
        let lead = UInt32(text[i])
        if lead < 0x80 { return (lead, i + 1) }
        let length = lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4
        if i + length > text.count { return (0xFFFD, text.count) }
        if lead < 0xE0 { return ((lead & 0x1F) << 6 | UInt32(text[i + 1] & 0x3F), i + 2) }
        if lead < 0xF0 {
            return ((lead & 0x0F) << 12 | UInt32(text[i + 1] & 0x3F) << 6 | UInt32(text[i + 2] & 0x3F), i + 3)
        }
        let value = (lead & 0x07) << 18 | UInt32(text[i + 1] & 0x3F) << 12 | UInt32(text[i + 2] & 0x3F) << 6 | UInt32(text[i + 3] & 0x3F)
        return (value, i + 4)
    }

    /// The scalar at `i` and its classes, or nil at the end of the text.
    @inline(__always) func peek(_ i: Int) -> (value: UInt32, kind: ScalarClass, next: Int)? {
        guard i < text.count else { return nil }
        let byte = text[i]
        if byte < 0x80 { return (UInt32(byte), ascii[Int(byte)], i + 1) }
        let (value, next) = scalar(at: i)
        return (value, ScalarClass.of(value), next)
    }

    /// The end of the longest run from `i` of scalars whose classes satisfy `accept`, at most `limit` of them.
    @inline(__always) func run(from i: Int, limit: Int = .max, _ accept: (ScalarClass) -> Bool) -> Int {
        var end = i, count = 0
        while count < limit, let s = peek(end), accept(s.kind) {
            end = s.next
            count += 1
        }
        return end
    }

    /// The end of a contraction ('s 'd 'm 't 'll 've 're) at `i`, or nil; `folding`: case-insensitively,
    /// as `regex` folds (s also matches ſ, U+017F).
    func contraction(at i: Int, folding: Bool) -> Int? {
        guard let apostrophe = peek(i), apostrophe.value == 0x27, let first = peek(apostrophe.next) else { return nil }
        let lower = { (c: UInt32) -> UInt32 in folding && c >= 0x41 && c <= 0x5A ? c + 0x20 : c }
        let one = lower(first.value)
        if one == 0x73 || one == 0x64 || one == 0x6D || one == 0x74 || (folding && first.value == 0x17F) { return first.next }
        guard let second = peek(first.next) else { return nil }
        let two = lower(second.value)
        if (one == 0x6C && two == 0x6C) || (one == 0x76 && two == 0x65) || (one == 0x72 && two == 0x65) { return second.next }
        return nil
    }

    /// The whitespace alternatives shared by the patterns, at `i` (whitespace): with `newlines`,
    /// `\s*[\r\n]` first; then `\s+(?!\S)`, then `\s+`; `wholeTrailingSpace`: `\s++$` before them all.
    func whitespace(at i: Int, newlines: Bool, wholeTrailingSpace: Bool) -> Int {
        var end = i, lastNewline: Int?, lastStart = i
        while let s = peek(end), s.kind.contains(.space) {
            if ScalarClass.isNewline(s.value) { lastNewline = s.next }
            lastStart = end
            end = s.next
        }
        if wholeTrailingSpace && end == text.count { return end }
        if newlines, let lastNewline { return lastNewline }
        if end == text.count { return end }
        // Two scalars or more: all but the last, which \S follows.
        return lastStart > i ? lastStart : end
    }

    /// The end of the GPT-4 pattern's match at `i`.
    func gpt4Chunk(at i: Int, wholeTrailingSpace: Bool) -> Int {
        if let end = contraction(at: i, folding: true) { return end }
        let first = peek(i)!
        // [^\r\n\p{L}\p{N}]?+\p{L}+
        if first.kind.contains(.letter) { return run(from: first.next) { $0.contains(.letter) } }
        if !ScalarClass.isNewline(first.value) && !first.kind.contains(.number), let second = peek(first.next), second.kind.contains(.letter) {
            return run(from: second.next) { $0.contains(.letter) }
        }
        // \p{N}{1,3}
        if first.kind.contains(.number) { return run(from: i, limit: 3) { $0.contains(.number) } }
        // ' ?[^\s\p{L}\p{N}]++[\r\n]*'
        var symbols = i
        if first.value == 0x20, let second = peek(first.next), second.kind.isOther { symbols = first.next }
        if let s = peek(symbols), s.kind.isOther {
            var end = run(from: symbols) { $0.isOther }
            while end < text.count, ScalarClass.isNewline(UInt32(text[end])) { end += 1 }
            return end
        }
        return whitespace(at: i, newlines: true, wholeTrailingSpace: wholeTrailingSpace)
    }

    /// The end of the GPT-2 pattern's match at `i`.
    func gpt2Chunk(at i: Int) -> Int {
        if let end = contraction(at: i, folding: false) { return end }
        let first = peek(i)!
        // ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+', each with its optional space
        var body = i
        if first.value == 0x20, let second = peek(first.next), !second.kind.contains(.space) { body = first.next }
        if let s = peek(body) {
            if s.kind.contains(.letter) { return run(from: s.next) { $0.contains(.letter) } }
            if s.kind.contains(.number) { return run(from: s.next) { $0.contains(.number) } }
            if s.kind.isOther { return run(from: s.next) { $0.isOther } }
        }
        return whitespace(at: i, newlines: false, wholeTrailingSpace: false)
    }
}

extension SplitPattern {
    /// The regular expression the pattern matches, as minbpe and tiktoken write it (empty for `none`): the
    /// `pattern` line of a minbpe `.model`, the `Split` regex of a Hugging Face `tokenizer.json`.
    public var regex: String {
        switch self {
        case .gpt4:
            return #"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"#
        case .cl100k:
            return #"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"#
        case .gpt2:
            return #"'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"#
        case .none:
            return ""
        }
    }

    /// The pattern whose regular expression is `regex` exactly, or nil.
    public init?(regex: String) {
        guard let found = Self.allCases.first(where: { $0.regex == regex }) else { return nil }
        self = found
    }
}
