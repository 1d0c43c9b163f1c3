/// Encodes texts with one ``BytePairTokenizer``, reusing its buffers: once they have grown to the longest chunk
/// seen, encoding allocates nothing but the ids' growth.
///
/// A chunk is merged as tiktoken merges it: the adjacent pair of the lowest rank, the leftmost of equals, one at
/// a time. That is minbpe's and GPT-2's result too, which merge every occurrence of the lowest-ranked pair at
/// once: a merge makes a new token, so it never makes another occurrence of the pair it merged. Under
/// ``BytePairTokenizer/MergeRule/ranks`` a chunk whose bytes are a token is looked up first, as tiktoken does.
public struct BytePairEncoder {
    public let tokenizer: BytePairTokenizer
    private let splitter: TextSplitter

    /// A short chunk's tokens and the value of each adjacent pair (`rank << 32 | token`, or `none`).
    private var parts: [UInt32] = []
    private var values: [UInt64] = []
    /// A long chunk's tokens as a linked list (`next`, `previous`: -1 at the ends, `dead` once merged away) and
    /// its pairs in a heap.
    private var next: [Int32] = []
    private var previous: [Int32] = []
    private var heap = BinaryHeap<Candidate>()

    /// No pair has this value.
    private static let none = UInt64.max
    private static let dead: Int32 = -2
    /// Chunks longer than this many bytes merge through a heap: the scan that finds the lowest pair costs a
    /// chunk's length per merge, so it is quadratic, and only cheaper below about this length.
    static let longChunk = 128

    public init(_ tokenizer: BytePairTokenizer) {
        self.tokenizer = tokenizer
        self.splitter = TextSplitter(tokenizer.pattern)
    }

    /// Appends the ids of the UTF-8 `text` to `ids`.
    ///
    /// - Throws: ``TokenizerError/specialTokenNotAllowed(name:offset:)`` for a registered special token in the
    ///   text that `allowedSpecial` does not allow.
    public mutating func encode(
        _ text: UnsafeBufferPointer<UInt8>, allowedSpecial: BytePairTokenizer.SpecialTokens, into ids: inout [UInt32]
    ) throws {
        let specials = tokenizer.specialTokens.map { (name: Array($0.name.utf8), id: UInt32($0.id), text: $0.name) }
        if allowedSpecial == .ordinary || specials.isEmpty {
            encodeOrdinary(text, into: &ids)
            return
        }
        // Where each name next occurs at or after `start` (nil: nowhere): found again only once passed, so the
        // text is searched once per name, however many special tokens it holds.
        var next: [Int?] = specials.map { Self.find($0.name, in: text, from: 0) }
        var start = 0
        while true {
            for k in specials.indices where next[k].map({ $0 < start }) == true {
                next[k] = Self.find(specials[k].name, in: text, from: start)
            }
            // The leftmost; of those that begin there, the longest.
            var special: Int?
            for k in specials.indices {
                guard let offset = next[k] else { continue }
                if let best = special,
                    next[best]! < offset || (next[best]! == offset && specials[best].name.count >= specials[k].name.count)
                {
                    continue
                }
                special = k
            }
            guard let special, let offset = next[special] else { break }
            let found = specials[special]
            let allowed: Bool
            switch allowedSpecial {
            case .all: allowed = true
            case .only(let names): allowed = names.contains(found.text)
            case .none, .ordinary: allowed = false
            }
            guard allowed else { throw TokenizerError.specialTokenNotAllowed(name: found.text, offset: offset) }
            encodeOrdinary(UnsafeBufferPointer(rebasing: text[start..<offset]), into: &ids)
            ids.append(found.id)
            start = offset + found.name.count
        }
        encodeOrdinary(UnsafeBufferPointer(rebasing: text[start...]), into: &ids)
    }

    /// The first offset at or after `start` where `name` begins, or nil.
    private static func find(_ name: [UInt8], in text: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        var offset = start
        let last = text.count - name.count
        while offset <= last {
            if text[offset] == name[0],
                name.withUnsafeBytes({ memoryEqual(text.baseAddress! + offset, $0.baseAddress!, name.count) })
            {
                return offset
            }
            offset += 1
        }
        return nil
    }

    /// Appends the ids of the UTF-8 `text` to `ids`, special tokens' names read as ordinary text.
    public mutating func encodeOrdinary(_ text: UnsafeBufferPointer<UInt8>, into ids: inout [UInt32]) {
        let splitter = self.splitter
        splitter.forEachChunk(in: text) { range in
            encodeChunk(UnsafeBufferPointer(rebasing: text[range]), into: &ids)
        }
    }

    /// Appends the ids of one chunk.
    @inline(__always) mutating func encodeChunk(_ chunk: UnsafeBufferPointer<UInt8>, into ids: inout [UInt32]) {
        if chunk.count == 1 {
            ids.append(tokenizer.byteToken(chunk[0]))
            return
        }
        if tokenizer.rule == .ranks, let whole = tokenizer.wholeTokens.value(of: UnsafeRawBufferPointer(chunk)) {
            ids.append(whole)
            return
        }
        if chunk.count <= Self.longChunk {
            mergeShort(chunk, into: &ids)
        } else {
            mergeLong(chunk, into: &ids)
        }
    }

    /// The value of the pair `(left, right)`: `rank << 32 | token`, or `none`.
    @inline(__always) private func value(_ left: UInt32, _ right: UInt32) -> UInt64 {
        tokenizer.pairs.value(left, right) ?? Self.none
    }

    /// Merges a short chunk by scanning its pairs for the lowest value before each merge.
    private mutating func mergeShort(_ chunk: UnsafeBufferPointer<UInt8>, into ids: inout [UInt32]) {
        // parts: (count) tokens  values: (count - 1) values[i] is the pair parts[i], parts[i + 1]
        var count = chunk.count
        if parts.count < count {
            parts = Array(repeating: 0, count: Self.longChunk)
            values = Array(repeating: 0, count: Self.longChunk)
        }
        for i in 0..<count { parts[i] = tokenizer.byteToken(chunk[i]) }
        for i in 0..<count - 1 { values[i] = value(parts[i], parts[i + 1]) }
        while count > 1 {
            var lowest = Self.none, at = -1
            for i in 0..<count - 1 where values[i] < lowest {
                lowest = values[i]
                at = i
            }
            if at < 0 { break }
            // parts[at], parts[at + 1] → token; the pairs after it move down one place.
            parts[at] = UInt32(truncatingIfNeeded: lowest)
            var i = at + 1
            while i + 1 < count {
                parts[i] = parts[i + 1]
                i += 1
            }
            i = at + 1
            while i + 1 < count - 1 {
                values[i] = values[i + 1]
                i += 1
            }
            count -= 1
            if at > 0 { values[at - 1] = value(parts[at - 1], parts[at]) }
            if at < count - 1 { values[at] = value(parts[at], parts[at + 1]) }
        }
        for i in 0..<count { ids.append(parts[i]) }
    }

    /// One pair a long chunk may merge: `key` is `rank << 32 | position` (the left token's first byte), so that
    /// the heap's least is the lowest rank and the leftmost of equals; `left` and `right` say whether the pair is
    /// still there when it comes up.
    private struct Candidate: HeapOrdered {
        var key: UInt64
        var left: UInt32
        var right: UInt32
        var token: UInt32

        @inline(__always) func precedes(_ other: Candidate) -> Bool { key < other.key }
    }

    /// Merges a long chunk through a heap of its pairs: a merge costs the logarithm of the chunk's length.
    private mutating func mergeLong(_ chunk: UnsafeBufferPointer<UInt8>, into ids: inout [UInt32]) {
        // parts: (n) tokens  next, previous: (n) neighbours in the list  heap: pairs, each checked when it comes up
        let n = chunk.count
        if parts.count < n {
            parts = Array(repeating: 0, count: n)
            values = Array(repeating: 0, count: n)
        }
        if next.count < n {
            next = Array(repeating: 0, count: n)
            previous = Array(repeating: 0, count: n)
        }
        heap.removeAll()
        for i in 0..<n {
            parts[i] = tokenizer.byteToken(chunk[i])
            next[i] = i + 1 < n ? Int32(i + 1) : -1
            previous[i] = Int32(i - 1)
        }
        for i in 0..<n - 1 { push(at: i, n) }
        while let top = heap.pop() {
            let at = Int(UInt32(truncatingIfNeeded: top.key))
            guard next[at] != Self.dead, parts[at] == top.left else { continue }
            let right = Int(next[at])
            guard right >= 0, parts[right] == top.right else { continue }
            parts[at] = top.token
            let after = next[right]
            next[at] = after
            if after >= 0 { previous[Int(after)] = Int32(at) }
            next[right] = Self.dead
            if previous[at] >= 0 { push(at: Int(previous[at]), n) }
            if after >= 0 { push(at: at, n) }
        }
        var i: Int32 = 0
        while i >= 0 {
            ids.append(parts[Int(i)])
            i = next[Int(i)]
        }
    }

    /// Pushes the pair that starts at list node `at`, if it merges.
    private mutating func push(at: Int, _ n: Int) {
        let right = Int(next[at])
        let value = value(parts[at], parts[right])
        guard value != Self.none else { return }
        heap.push(
            Candidate(
                key: (value >> 32) << 32 | UInt64(at), left: parts[at], right: parts[right],
                token: UInt32(truncatingIfNeeded: value)))
    }

}

extension Naive {
    /// minbpe's `_encode_chunk`, as it is written: while some adjacent pair is a merge, every occurrence of the
    /// earliest such merge is made, left to right. The ids of one chunk under a merge list (merge i makes 256 + i).
    public static func bytePairEncode(_ chunk: [UInt8], merges: [(Int, Int)]) -> [Int] {
        var rank: [[Int]: Int] = [:]
        for (i, merge) in merges.enumerated() where rank[[merge.0, merge.1]] == nil { rank[[merge.0, merge.1]] = i }
        var ids = chunk.map(Int.init)
        while ids.count >= 2 {
            var best: (rank: Int, pair: [Int])?
            for i in 0..<ids.count - 1 {
                if let r = rank[[ids[i], ids[i + 1]]], best == nil || r < best!.rank { best = (r, [ids[i], ids[i + 1]]) }
            }
            guard let (r, pair) = best else { break }
            var merged: [Int] = [], i = 0
            while i < ids.count {
                if i + 1 < ids.count && ids[i] == pair[0] && ids[i + 1] == pair[1] {
                    merged.append(256 + r)
                    i += 2
                } else {
                    merged.append(ids[i])
                    i += 1
                }
            }
            ids = merged
        }
        return ids
    }

    /// tiktoken's `_byte_pair_merge`, as it is written: the chunk's bytes as parts, and while two adjacent parts
    /// together are a token, the lowest-ranked such pair (the leftmost of equals) joined into one part. The ids
    /// of one chunk under ranks (a token's bytes to its rank, the rank its id); a chunk that is a token is it.
    public static func bytePairEncode(_ chunk: [UInt8], ranks: [[UInt8]: Int]) -> [Int] {
        if let whole = ranks[chunk] { return [whole] }
        var parts = chunk.map { [$0] }
        while parts.count >= 2 {
            var best: (rank: Int, at: Int)?
            for i in 0..<parts.count - 1 {
                if let r = ranks[parts[i] + parts[i + 1]], best == nil || r < best!.rank { best = (r, i) }
            }
            guard let (_, at) = best else { break }
            parts[at] += parts[at + 1]
            parts.remove(at: at + 1)
        }
        return parts.map { ranks[$0]! }
    }
}
