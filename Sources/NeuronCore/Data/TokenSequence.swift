/// A text's tokens in the fewest bytes their vocabulary allows: one byte a token below 256
/// tokens, two below 65,536, four above. A document of a hundred million characters is then a
/// hundred megabytes, not the four hundred of `Int32` or the eight hundred of a `Double` tensor;
/// the windows a step reads are widened to `Scalar` only as they are copied into the batch
/// (``copy(_:into:)``).
///
/// A part (``part(_:)``) shares the whole sequence's storage.
public struct TokenSequence: RandomAccessCollection, Sendable, Equatable, CustomStringConvertible {
    private enum Storage: Sendable {
        case bytes([UInt8])
        case pairs([UInt16])
        case words([UInt32])
    }

    private let storage: Storage
    /// The first token of this sequence in `storage`.
    private let offset: Int
    public var startIndex: Int { 0 }
    public let endIndex: Int

    /// The bytes one token takes for a vocabulary of `vocabulary` tokens: 1, 2 or 4.
    public static func bytesPerToken(vocabulary: Int) -> Int { vocabulary <= 1 << 8 ? 1 : vocabulary <= 1 << 16 ? 2 : 4 }

    /// `count` tokens, each below `vocabulary`, written in order by `fill`, which is handed a
    /// buffer of the width ``bytesPerToken(vocabulary:)`` chooses (through `write`).
    /// - Precondition: `vocabulary` is at most 2³², and `fill` writes tokens below it.
    init(count: Int, vocabulary: Int, fill: (inout TokenWriter) throws(DataError) -> Void) throws(DataError) {
        precondition(vocabulary <= 1 << 32, "a vocabulary of \(vocabulary) tokens")
        var writer = TokenWriter(width: Self.bytesPerToken(vocabulary: vocabulary), capacity: count)
        try fill(&writer)
        switch writer.width {
        case 1: storage = .bytes(writer.bytes)
        case 2: storage = .pairs(writer.pairs)
        default: storage = .words(writer.words)
        }
        (offset, endIndex) = (0, writer.count)
    }

    private init(storage: Storage, offset: Int, count: Int) {
        (self.storage, self.offset, self.endIndex) = (storage, offset, count)
    }

    /// The bytes each token takes: 1, 2 or 4.
    public var bytesPerToken: Int {
        switch storage {
        case .bytes: 1
        case .pairs: 2
        case .words: 4
        }
    }

    public subscript(position: Int) -> Int {
        precondition(position >= 0 && position < endIndex, "token \(position) outside 0..<\(endIndex)")
        switch storage {
        case .bytes(let tokens): return Int(tokens[offset + position])
        case .pairs(let tokens): return Int(tokens[offset + position])
        case .words(let tokens): return Int(tokens[offset + position])
        }
    }

    /// The tokens at `range`, sharing this sequence's storage.
    public func part(_ range: Range<Int>) -> TokenSequence {
        precondition(range.lowerBound >= 0 && range.upperBound <= endIndex, "part \(range) outside 0..<\(endIndex)")
        return TokenSequence(storage: storage, offset: offset + range.lowerBound, count: range.count)
    }

    /// Copies the tokens at `range` into `destination`, each widened to `Scalar`: the one place a
    /// token becomes a tensor's scalar (one switch on the width per call, a tight loop within).
    ///
    ///     // destination[k] = Scalar(self[range.lowerBound + k]) for k in 0..<range.count
    ///
    /// - Precondition: `range` is within the sequence; `destination` holds `range.count` scalars.
    public func copy<Scalar: TensorScalar>(_ range: Range<Int>, into destination: UnsafeMutablePointer<Scalar>) {
        precondition(range.lowerBound >= 0 && range.upperBound <= endIndex, "tokens \(range) outside 0..<\(endIndex)")
        let first = offset + range.lowerBound
        func widen<T: BinaryInteger>(_ tokens: UnsafeBufferPointer<T>) {
            for k in 0..<range.count { destination[k] = Scalar(tokens[first + k]) }
        }
        switch storage {
        case .bytes(let tokens): tokens.withUnsafeBufferPointer(widen)
        case .pairs(let tokens): tokens.withUnsafeBufferPointer(widen)
        case .words(let tokens): tokens.withUnsafeBufferPointer(widen)
        }
    }

    /// The largest token; nil for an empty sequence.
    public var largest: Int? {
        let tokens = offset..<offset + endIndex
        return switch storage {
        case .bytes(let all): all[tokens].max().map(Int.init)
        case .pairs(let all): all[tokens].max().map(Int.init)
        case .words(let all): all[tokens].max().map(Int.init)
        }
    }

    public static func == (a: TokenSequence, b: TokenSequence) -> Bool { a.count == b.count && a.elementsEqual(b) }

    /// `TokenSequence(1003854 tokens, 1 byte each)`.
    public var description: String {
        "TokenSequence(\(count) tokens, \(bytesPerToken) byte\(bytesPerToken == 1 ? "" : "s") each)"
    }
}

/// Appends tokens to a ``TokenSequence`` being built, in the width it chose.
struct TokenWriter {
    let width: Int
    fileprivate var bytes: [UInt8] = []
    fileprivate var pairs: [UInt16] = []
    fileprivate var words: [UInt32] = []

    fileprivate init(width: Int, capacity: Int) {
        self.width = width
        switch width {
        case 1: bytes.reserveCapacity(capacity)
        case 2: pairs.reserveCapacity(capacity)
        default: words.reserveCapacity(capacity)
        }
    }

    /// The tokens written so far.
    var count: Int { width == 1 ? bytes.count : width == 2 ? pairs.count : words.count }

    /// Appends `token`, which is below the vocabulary the sequence was made for.
    @inline(__always)
    mutating func append(_ token: Int) {
        switch width {
        case 1: bytes.append(UInt8(truncatingIfNeeded: token))
        case 2: pairs.append(UInt16(truncatingIfNeeded: token))
        default: words.append(UInt32(truncatingIfNeeded: token))
        }
    }
}
