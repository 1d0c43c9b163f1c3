import Foundation
import Testing

@testable import NeuronCore

/// Tests/Fixtures/splits.json: texts and their chunks as Python's `regex` module finds them (Scripts/split-oracle).
private struct SplitCase: Decodable {
    let pattern: String
    let text: String
    let chunks: [String]
}

private struct SplitOracle: Decodable {
    let cases: [SplitCase]
}

private let oracle: SplitOracle = {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../Fixtures/splits.json")
    // The fixture is part of the repository: a missing or unreadable one is a failure, not a skip.
    let data = try! Data(contentsOf: url.standardized)
    return try! JSONDecoder().decode(SplitOracle.self, from: data)
}()

@Suite("The split patterns, against Python's regex on adversarial text")
struct TextSplitterTests {
    @Test("Every case of the oracle: the chunks regex finds, for the GPT-4, cl100k and GPT-2 patterns", arguments: ["gpt4", "cl100k", "gpt2"])
    func againstRegex(pattern name: String) throws {
        let pattern = try #require(SplitPattern(rawValue: name))
        let cases = oracle.cases.filter { $0.pattern == name }
        #expect(cases.count > 40)
        for item in cases {
            let chunks = TextSplitter(pattern).chunks(of: item.text)
            #expect(chunks == item.chunks, "\(name): \(item.text.unicodeScalars.prefix(60).map { String($0.value, radix: 16) })")
        }
    }

    @Test("By hand: contractions, three digits, the whitespace before a word and at the end")
    func byHand() {
        let gpt4 = TextSplitter(.gpt4), cl100k = TextSplitter(.cl100k), gpt2 = TextSplitter(.gpt2)
        #expect(gpt4.chunks(of: "I'LL 12345  x") == ["I", "'LL", " ", "123", "45", " ", " x"])
        #expect(gpt2.chunks(of: "I'LL 12345  x") == ["I", "'", "LL", " 12345", " ", " x"])
        // Whitespace after the last newline: minbpe's GPT-4 pattern cuts at the newline, tiktoken's does not.
        #expect(gpt4.chunks(of: "a\n  ") == ["a", "\n", "  "])
        #expect(cl100k.chunks(of: "a\n  ") == ["a", "\n  "])
        #expect(TextSplitter(.none).chunks(of: "a b\n") == ["a b\n"])
        #expect(gpt4.chunks(of: "") == [])
    }

    @Test("Bytes that end inside a UTF-8 sequence are cut as one last chunk, never read past the end")
    func truncatedSequence() {
        // "ab" then the first two bytes of a three-byte sequence (U+65E5 is E6 97 A5).
        let bytes: [UInt8] = [0x61, 0x62, 0x20, 0xE6, 0x97]
        for pattern in SplitPattern.allCases {
            var ranges: [Range<Int>] = []
            bytes.withUnsafeBufferPointer { TextSplitter(pattern).forEachChunk(in: $0) { ranges.append($0) } }
            #expect(ranges.first?.lowerBound == 0 && ranges.last?.upperBound == bytes.count, "\(pattern)")
            #expect(zip(ranges, ranges.dropFirst()).allSatisfy { $0.upperBound == $1.lowerBound }, "\(pattern)")
        }
    }
}
