/// Byte-pair training, exactly as minbpe's `RegexTokenizer.train` chooses its merges, without its full recount:
/// each distinct chunk is kept once with its number of occurrences, every pair's count is kept up to date as
/// merges change the chunks that hold it, and the next pair comes off a heap.
///
/// minbpe merges the most frequent pair; of equally frequent pairs, the one seen first (its `max` over a dict in
/// insertion order, refilled each round by a pass over the chunks in text order). The heap orders pairs by count,
/// then by where they first occur: the earliest distinct chunk that holds them (distinct chunks are numbered in
/// order of first appearance) and the byte offset in it. A pair's entry goes stale as its occurrences are merged
/// away; an existing pair never gains occurrences (a merge's new pairs all hold its new token), so a stale entry
/// only ever overstates, and is put back with the pair's true place when it comes up.
extension BytePairTokenizer {
    /// How far training has come: reported after each merge.
    public struct TrainingProgress: Sendable {
        /// Merges made, of `total`.
        public let merges: Int
        public let total: Int
        /// The last merge, its token's bytes, and how often its pair occurred.
        public let merge: Merge
        public let bytes: [UInt8]
        public let occurrences: Int
    }

    /// A tokenizer trained on `text`: `vocabularySize - 256` merges, then the special tokens.
    ///
    /// - Parameters:
    ///   - text: the text to train on.
    ///   - vocabularySize: 256 (the single bytes) plus the number of merges.
    ///   - pattern: the split pattern chunks are cut by.
    ///   - specialTokens: names registered after training, with ids from `vocabularySize` on.
    ///   - progress: called after each merge.
    /// - Throws: ``TokenizerError/invalidVocabularySize(_:)``; ``TokenizerError/nothingToMerge(merges:asked:)``
    ///   when the text runs out of pairs first.
    public static func train(
        _ text: String, vocabularySize: Int, pattern: SplitPattern = .gpt4, specialTokens: [String] = [],
        progress: ((TrainingProgress) -> Void)? = nil
    ) throws -> BytePairTokenizer {
        guard vocabularySize >= 256, vocabularySize + specialTokens.count < Int(Int32.max) else {
            throw TokenizerError.invalidVocabularySize(vocabularySize)
        }
        let merges = try Array(text.utf8).withUnsafeBufferPointer { bytes in
            var trainer = BytePairTrainer(bytes, pattern: pattern)
            return try trainer.train(merges: vocabularySize - 256, progress: progress)
        }
        let specials = specialTokens.enumerated().map { SpecialToken(name: $1, id: vocabularySize + $0) }
        return try BytePairTokenizer(pattern: pattern, merges: merges, specialTokens: specials)
    }
}

/// The trainer's state: the distinct chunks as token sequences, and every adjacent pair's count, chunks and place.
struct BytePairTrainer {
    /// Distinct chunk c's tokens are `symbols[starts[c]..<starts[c] + lengths[c]]`; it occurs `weights[c]` times.
    private var symbols: [UInt32] = []
    private var starts: [Int] = []
    private var lengths: [Int] = []
    private var weights: [Int] = []
    /// Each token's length in bytes.
    private var tokenLengths: [Int] = Array(repeating: 1, count: 256)

    /// A pair to its slot; per slot: the pair, its count (occurrences over the text), the distinct chunks that
    /// hold or held it (ascending), how many of those are known not to any more, and the newest count pushed.
    private var slotOf = PairTable(minimumCapacity: 1 << 16)
    private var pairs: [(left: UInt32, right: UInt32)] = []
    private var counts: [Int] = []
    private var holders: [[Int32]] = []
    private var skipped: [Int] = []
    private var pushed: [Int] = []
    private var heap = BinaryHeap<Entry>()

    /// A heap entry: a pair's count and first place when pushed.
    private struct Entry: HeapOrdered {
        var count: Int
        var chunk: Int32
        var offset: Int32
        var slot: Int32

        /// Whether `self` comes off the heap before `other`: more occurrences, then the earlier first place.
        @inline(__always) func precedes(_ other: Entry) -> Bool {
            if count != other.count { return count > other.count }
            if chunk != other.chunk { return chunk < other.chunk }
            return offset < other.offset
        }
    }

    /// Merge positions found in one chunk, the merged tokens' positions afterwards, and the slots made by a merge.
    private var found: [Int] = []
    private var merged: [Int] = []
    private var created: [Int] = []

    init(_ text: UnsafeBufferPointer<UInt8>, pattern: SplitPattern) {
        var distinct = ByteStringTable(minimumCapacity: 1 << 12)
        TextSplitter(pattern).forEachChunk(in: text) { range in
            let chunk = UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: text[range]))
            let (index, inserted) = distinct.insert(chunk, value: 0)
            if inserted {
                starts.append(symbols.count)
                lengths.append(chunk.count)
                weights.append(0)
                for byte in chunk { symbols.append(UInt32(byte)) }
            }
            weights[index] += 1
        }
        for c in 0..<starts.count {
            let start = starts[c], weight = weights[c]
            for i in 0..<max(lengths[c] - 1, 0) {
                add(symbols[start + i], symbols[start + i + 1], chunk: c, weight: weight)
            }
        }
        heap = BinaryHeap((0..<pairs.count).map { entry(for: $0, chunk: holders[$0][0], offset: Int32(firstOffset($0)!)) })
        for slot in 0..<pairs.count { pushed[slot] = counts[slot] }
        created.removeAll()
    }

    /// Makes `count` merges; each is the most frequent pair, the earliest seen of equals (minbpe's rule).
    mutating func train(merges count: Int, progress: ((BytePairTokenizer.TrainingProgress) -> Void)?) throws
        -> [(Int, Int)]
    {
        var result: [(Int, Int)] = []
        result.reserveCapacity(min(count, 1 << 16))
        // Each token's bytes, kept only for the progress report.
        var bytes: [[UInt8]] = progress == nil ? [] : (0..<256).map { [UInt8($0)] }
        for m in 0..<count {
            guard let slot = nextPair() else { throw TokenizerError.nothingToMerge(merges: m, asked: count) }
            let (left, right) = pairs[slot]
            let token = UInt32(256 + m)
            let occurrences = counts[slot]
            tokenLengths.append(tokenLengths[Int(left)] + tokenLengths[Int(right)])
            // Each chunk once: a pair's holders are appended without repeats.
            for c in holders[slot][skipped[slot]...] { mergeChunk(Int(c), left, right, into: token) }
            assert(counts[slot] == 0, "a merged pair is left in the counts")
            holders[slot] = []
            for slot in created { push(slot, chunk: holders[slot][0], offset: firstOffset(slot)!) }
            created.removeAll(keepingCapacity: true)
            result.append((Int(left), Int(right)))
            if let progress {
                bytes.append(bytes[Int(left)] + bytes[Int(right)])
                progress(
                    BytePairTokenizer.TrainingProgress(
                        merges: m + 1, total: count,
                        merge: BytePairTokenizer.Merge(left: Int(left), right: Int(right), token: Int(token)),
                        bytes: bytes[Int(token)], occurrences: occurrences))
            }
        }
        return result
    }

    /// The slot of the pair to merge next, or nil when no pair is left.
    private mutating func nextPair() -> Int? {
        while let top = heap.pop() {
            let slot = Int(top.slot)
            let count = counts[slot]
            if count == 0 { continue }
            if count == top.count { return slot }
            // Stale: its count has fallen since, and maybe its first place moved on. Put it back unless a newer
            // entry of this count is already there.
            if pushed[slot] != count {
                let (chunk, offset) = firstPlace(slot)
                push(slot, chunk: chunk, offset: offset)
            }
        }
        return nil
    }

    /// The first distinct chunk that still holds the pair of `slot`, and its first byte offset there; the
    /// chunks before it are skipped from then on (they never hold it again).
    private mutating func firstPlace(_ slot: Int) -> (Int32, Int) {
        while true {
            let chunk = holders[slot][skipped[slot]]
            if let offset = offsetOfPair(slot, in: Int(chunk)) { return (chunk, offset) }
            skipped[slot] += 1
        }
    }

    private func firstOffset(_ slot: Int) -> Int? { offsetOfPair(slot, in: Int(holders[slot][skipped[slot]])) }

    /// The byte offset of the first occurrence of the pair of `slot` in chunk `c`, or nil.
    private func offsetOfPair(_ slot: Int, in c: Int) -> Int? {
        let (left, right) = pairs[slot]
        let start = starts[c]
        var offset = 0
        for i in 0..<max(lengths[c] - 1, 0) {
            if symbols[start + i] == left && symbols[start + i + 1] == right { return offset }
            offset += tokenLengths[Int(symbols[start + i])]
        }
        return nil
    }

    /// Merges every occurrence of `(left, right)` in chunk `c` (left to right, not overlapping, as minbpe's
    /// `merge`), taking the pairs that touched a merged pair out of the counts and adding the pairs the new
    /// tokens make. The pairs elsewhere in the chunk are unchanged.
    private mutating func mergeChunk(_ c: Int, _ left: UInt32, _ right: UInt32, into token: UInt32) {
        let start = starts[c], length = lengths[c], weight = weights[c]
        // symbols[start...]: (length) the chunk's tokens before the merge
        found.removeAll(keepingCapacity: true)
        var i = 0
        while i + 1 < length {
            if symbols[start + i] == left && symbols[start + i + 1] == right {
                found.append(i)
                i += 2
            } else {
                i += 1
            }
        }
        if found.isEmpty { return }
        var removedThrough = -1
        for i in found {
            var j = max(i - 1, removedThrough + 1)
            while j <= min(i + 1, length - 2) {
                remove(symbols[start + j], symbols[start + j + 1], weight: weight)
                j += 1
            }
            removedThrough = min(i + 1, length - 2)
        }
        // The new tokens, written over the old ones; the merged ones' new positions kept.
        merged.removeAll(keepingCapacity: true)
        var read = 0, write = 0, next = 0
        while read < length {
            if next < found.count && found[next] == read {
                symbols[start + write] = token
                merged.append(write)
                next += 1
                read += 2
            } else {
                symbols[start + write] = symbols[start + read]
                read += 1
            }
            write += 1
        }
        lengths[c] = write
        var addedThrough = -1
        for p in merged {
            var j = max(p - 1, addedThrough + 1)
            while j <= min(p, write - 2) {
                add(symbols[start + j], symbols[start + j + 1], chunk: c, weight: weight)
                j += 1
            }
            addedThrough = min(p, write - 2)
        }
    }

    /// Counts `weight` more occurrences of `(left, right)` in chunk `c`; a new pair gets a slot.
    private mutating func add(_ left: UInt32, _ right: UInt32, chunk c: Int, weight: Int) {
        let (value, inserted) = slotOf.insert(left, right, value: UInt64(pairs.count))
        let slot = Int(value)
        if inserted {
            pairs.append((left, right))
            counts.append(0)
            holders.append([])
            skipped.append(0)
            pushed.append(0)
            created.append(slot)
        }
        counts[slot] += weight
        if holders[slot].last != Int32(c) { holders[slot].append(Int32(c)) }
    }

    private mutating func remove(_ left: UInt32, _ right: UInt32, weight: Int) {
        let slot = Int(slotOf.value(left, right)!)
        counts[slot] -= weight
    }

    // MARK: - The heap

    private func entry(for slot: Int, chunk: Int32, offset: Int32) -> Entry {
        Entry(count: counts[slot], chunk: chunk, offset: offset, slot: Int32(slot))
    }

    private mutating func push(_ slot: Int, chunk: Int32, offset: Int) {
        pushed[slot] = counts[slot]
        heap.push(entry(for: slot, chunk: chunk, offset: Int32(offset)))
    }
}

extension Naive {
    /// minbpe's `RegexTokenizer.train`, as it is written: every chunk of the text kept, and before each merge every
    /// pair counted afresh into a table that keeps the order pairs were first seen in; the most frequent pair is
    /// merged, the first seen of equals. The merges (merge i makes token 256 + i).
    public static func bytePairMerges(_ text: String, merges count: Int, pattern: SplitPattern) -> [(Int, Int)] {
        var chunks = TextSplitter(pattern).chunks(of: text).map { $0.utf8.map(Int.init) }
        var merges: [(Int, Int)] = []
        for m in 0..<count {
            var order: [[Int]] = [], counts: [[Int]: Int] = [:]
            for chunk in chunks where chunk.count > 1 {
                for i in 0..<chunk.count - 1 {
                    let pair = [chunk[i], chunk[i + 1]]
                    if counts[pair] == nil { order.append(pair) }
                    counts[pair, default: 0] += 1
                }
            }
            guard var best = order.first else { break }
            for pair in order where counts[pair]! > counts[best]! { best = pair }
            let token = 256 + m
            chunks = chunks.map { chunk in
                var merged: [Int] = [], i = 0
                while i < chunk.count {
                    if i + 1 < chunk.count && chunk[i] == best[0] && chunk[i + 1] == best[1] {
                        merged.append(token)
                        i += 2
                    } else {
                        merged.append(chunk[i])
                        i += 1
                    }
                }
                return merged
            }
            merges.append((best[0], best[1]))
        }
        return merges
    }
}
