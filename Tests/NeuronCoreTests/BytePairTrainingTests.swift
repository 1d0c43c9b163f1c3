import Foundation
import Testing

@testable import NeuronCore

/// Tests/Fixtures/bpe.json: what minbpe and tiktoken make of texts (Scripts/bpe-oracle).
struct BytePairOracle: Decodable {
    struct Trained: Decodable {
        let vocabularySize: Int
        let merges: [[Int]]
        let model: String?
        let vocab: String?
        let idsOfFirst2000: [Int]?
        enum CodingKeys: String, CodingKey {
            case vocabularySize = "vocab_size", merges, model, vocab, idsOfFirst2000 = "ids_of_first_2000"
        }
    }
    struct Llama: Decodable {
        let text: String
        let merges: [[Int]]
        let specialTokens: [String: Int]
        let ids: [Int]
        enum CodingKeys: String, CodingKey { case text, merges, specialTokens = "special_tokens", ids }
    }
    struct Encoded: Decodable {
        let text: String
        let ids: [Int]
        let allowed: String?
    }
    struct Digest: Decodable {
        let count: Int
        let fnv1a64: String
        let first1000: [Int]
        enum CodingKeys: String, CodingKey { case count, fnv1a64, first1000 = "first_1000" }
    }
    struct CL100k: Decodable {
        let strings: [Encoded]
        let shakespeareTimes10: Digest
        enum CodingKeys: String, CodingKey { case strings, shakespeareTimes10 = "shakespeare_x10" }
    }
    let shakespeare512: Trained
    let shakespeare4096: Trained
    let llama: Llama
    let cl100k: CL100k

    static let fixture: BytePairOracle = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../Fixtures/bpe.json")
        // The fixture is part of the repository: a missing or unreadable one is a failure, not a skip.
        return try! JSONDecoder().decode(BytePairOracle.self, from: Data(contentsOf: url.standardized))
    }()

    static let shakespeare: String = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Data/tinyshakespeare.txt")
        return try! String(contentsOf: url.standardized, encoding: .utf8)
    }()
}

/// Random text from pools that make ties and repeats likely: few letters, runs, digits, apostrophes, newlines.
func tieProneText(length: Int, seed: UInt64) -> String {
    var generator = SeededGenerator(seed: seed)
    let pools: [[Character]] = [
        Array("ab"), Array("abc "), Array("aaab"), Array("xy\n"), Array("0123"), Array("'s'll "), Array("é ü\u{0301}"),
        Array("  \t"),
    ]
    var text = ""
    while text.count < length {
        let pool = pools[Int(generator.next() % UInt64(pools.count))]
        for _ in 0..<(1 + Int(generator.next() % 6)) { text.append(pool[Int(generator.next() % UInt64(pool.count))]) }
    }
    return text
}

@Suite("Byte-pair training: minbpe's merges, by its rule")
struct BytePairTrainingTests {
    @Test("Wikipedia's example, as minbpe's test has it: aaabdaaabac, 3 merges, gives XdXac")
    func wikipedia() throws {
        let tokenizer = try BytePairTokenizer.train("aaabdaaabac", vocabularySize: 256 + 3)
        // aa (4 times, overlapping) → Z: Z a b d Z a b a c. Then Za and ab twice each, Za seen first → Y = Za:
        // Y b d Y b a c. Then Yb twice → X: X d X a c.
        #expect(tokenizer.merges.map { [$0.left, $0.right] } == [[97, 97], [256, 97], [257, 98]])
        #expect(try tokenizer.encode("aaabdaaabac") == [258, 100, 258, 97, 99])
    }

    @Test("minbpe's RegexTokenizer on tiny Shakespeare: the same 256 merges at vocabulary 512")
    func shakespeare512() throws {
        let oracle = BytePairOracle.fixture.shakespeare512
        let tokenizer = try BytePairTokenizer.train(BytePairOracle.shakespeare, vocabularySize: 512)
        #expect(tokenizer.merges.map { [$0.left, $0.right] } == oracle.merges)
        #expect(tokenizer.encodeOrdinary(String(BytePairOracle.shakespeare.prefix(2000))) == oracle.idsOfFirst2000)
    }

    @Test("minbpe's RegexTokenizer on tiny Shakespeare: the same 3,840 merges at vocabulary 4,096")
    func shakespeare4096() throws {
        let oracle = BytePairOracle.fixture.shakespeare4096
        let tokenizer = try BytePairTokenizer.train(BytePairOracle.shakespeare, vocabularySize: 4096)
        let merges = tokenizer.merges.map { [$0.left, $0.right] }
        #expect(merges.count == oracle.merges.count)
        let first = zip(merges, oracle.merges).enumerated().first { $0.element.0 != $0.element.1 }?.offset
        #expect(first == nil, "the first merge that differs: \(first.map { "\($0 + 1)" } ?? "")")
    }

    @Test("minbpe's save/load test: 64 merges on its llama text", arguments: [BytePairOracle.fixture.llama])
    func llama(oracle: BytePairOracle.Llama) throws {
        let tokenizer = try BytePairTokenizer.train(oracle.text, vocabularySize: 256 + 64)
        #expect(tokenizer.merges.map { [$0.left, $0.right] } == oracle.merges)
    }

    @Test("Against minbpe's algorithm as written (a full recount per merge), on tie-prone texts", arguments: SplitPattern.allCases)
    func againstRecount(pattern: SplitPattern) throws {
        for seed in 1...6 {
            let text = tieProneText(length: 400 * seed, seed: UInt64(seed))
            let expected = Naive.bytePairMerges(text, merges: 60, pattern: pattern)
            let trained = try BytePairTokenizer.train(text, vocabularySize: 256 + expected.count, pattern: pattern)
            #expect(trained.merges.map { [$0.left, $0.right] } == expected.map { [$0.0, $0.1] }, "seed \(seed), \(pattern)")
        }
    }

    @Test("A text that runs out of pairs is an error that says how many merges it can make")
    func nothingToMerge() {
        #expect(throws: TokenizerError.nothingToMerge(merges: 1, asked: 2)) {
            try BytePairTokenizer.train("ab", vocabularySize: 258)
        }
        #expect(throws: TokenizerError.invalidVocabularySize(255)) {
            try BytePairTokenizer.train("ab", vocabularySize: 255)
        }
        // "ab" and " ab": (a, b) twice, then (" ", ab) once; no pair is left.
        #expect(
            anyMessage { try BytePairTokenizer.train("ab ab", vocabularySize: 300) }.contains(
                "after 2 of the 44 merges asked for: a vocabulary of at most 258 tokens"))
    }

    @Test("Progress is reported after every merge, with the pair and its count")
    func progress() throws {
        var seen: [BytePairTokenizer.TrainingProgress] = []
        _ = try BytePairTokenizer.train("aaabdaaabac", vocabularySize: 259) { seen.append($0) }
        #expect(seen.map(\.merges) == [1, 2, 3])
        #expect(seen.map(\.occurrences) == [4, 2, 2])
        #expect(seen.last?.merge == BytePairTokenizer.Merge(left: 257, right: 98, token: 258))
        #expect(seen.map(\.bytes) == [Array("aa".utf8), Array("aaa".utf8), Array("aaab".utf8)])
    }

    @Test("Special tokens are registered after the merges")
    func specials() throws {
        let tokenizer = try BytePairTokenizer.train("aaab", vocabularySize: 257, specialTokens: ["<|end|>", "<|pad|>"])
        #expect(tokenizer.specialTokens == [.init(name: "<|end|>", id: 257), .init(name: "<|pad|>", id: 258)])
        #expect(tokenizer.vocabularySize == 259)
    }
}
