/// The text of tokens as they come, one at a time, as a sampler prints them: a byte-level token can end inside
/// a character's UTF-8 sequence, so the bytes of an unfinished sequence are held until the tokens after it
/// complete it. Bytes that can never become a character (a stray continuation byte, a byte no UTF-8 sequence
/// starts with) are given at once, as U+FFFD.
public struct TokenTextStream: Sendable {
    public let tokenizer: BytePairTokenizer
    /// An unfinished UTF-8 sequence's first bytes: at most three.
    private var held: [UInt8] = []

    public init(_ tokenizer: BytePairTokenizer) { self.tokenizer = tokenizer }

    /// The text that token `id` completes (empty while it only starts or continues a character).
    ///
    /// - Throws: ``TokenizerError/unknownToken(id:position:)`` for an id that names no token.
    public mutating func append(_ id: Int) throws -> String {
        held += try tokenizer.bytes(of: id)
        let cut = Self.unfinishedStart(held)
        let text = String(decoding: held[..<cut], as: UTF8.self)
        held.removeFirst(cut)
        return text
    }

    /// What is held, given up: U+FFFD for the unfinished sequence, if any.
    public mutating func finish() -> String {
        defer { held = [] }
        return String(decoding: held, as: UTF8.self)
    }

    /// Where an unfinished sequence at the end of `bytes` starts (`bytes.count` if none): a lead byte of a
    /// sequence of n bytes (C2–DF: 2, E0–EF: 3, F0–F4: 4) followed by fewer than n − 1 continuation bytes.
    static func unfinishedStart(_ bytes: [UInt8]) -> Int {
        var i = bytes.count - 1
        while i >= 0, i >= bytes.count - 3, bytes[i] & 0xC0 == 0x80 { i -= 1 }
        guard i >= 0, i >= bytes.count - 3 else { return bytes.count }
        let lead = bytes[i]
        let length = (0xC2...0xDF).contains(lead) ? 2 : (0xE0...0xEF).contains(lead) ? 3 : (0xF0...0xF4).contains(lead) ? 4 : 1
        return bytes.count - i < length ? i : bytes.count
    }
}
