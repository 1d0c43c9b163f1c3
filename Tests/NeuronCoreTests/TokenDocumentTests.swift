import Foundation
import Testing

@testable import NeuronCore

// A vocabulary of a tokenizer's tokens, and a document read as them: the text split into parts of
// characters first, the tokenizer made from the training part's text alone, each part encoded on
// its own. The oracles are hand-worked tokens and the parts cut again here from the text's scalars.

/// minbpe's kind, no split: bytes 0–255, then `hi` as token 256.
private func hiTokenizer() throws -> BytePairTokenizer {
    try BytePairTokenizer(pattern: .none, merges: [(104, 105)])
}

@Suite("A vocabulary of a tokenizer's tokens, and documents read as them")
struct TokenDocumentTests {
    @Test("A tokenizer's vocabulary: its ids, their text and names, the characters they hold")
    func vocabulary() throws {
        let v = Vocabulary(tokenizer: try hiTokenizer())
        #expect(v.count == 257 && v.tokenizer != nil && v.characters.isEmpty)
        // "hi hé": h i → 256, space, h, then é's two bytes C3 A9 as tokens 195 and 169.
        let tokens = try #require(v.encode("hi hé"))
        #expect(tokens == [256, 32, 104, 195, 169])
        #expect(v.decode(tokens) == "hi hé")
        // Padding (−1) ends the text; half a character decodes as U+FFFD.
        #expect(v.decode([256, 32, -1, 104]) == "hi " && v.decode([104, 195]) == "h\u{FFFD}")
        // One character per token but the continuation byte, whose character started in the token before.
        #expect(v.characterCount(tokens) == 5 && v.characterCount([256]) == 2 && v.characterCount([169]) == 0)
        #expect(v.name(of: 256) == "hi" && v.name(of: 10) == "\\n" && v.name(of: 195) == "<c3>" && v.name(of: 257) == "?")
        #expect(v.documentStart == 10)
        #expect(v.description == "Vocabulary(257 tokens of a none byte-pair tokenizer)")
        #expect(v != Vocabulary(tokenizer: try BytePairTokenizer(pattern: .none, merges: [(104, 104)])))
        #expect(v != Vocabulary(characters: "hi".unicodeScalars))
    }

    @Test("Coded as {\"tokenizer\": …} and read back equal; a character vocabulary stays a list; a bad tokenizer is refused")
    func coding() throws {
        let v = Vocabulary(tokenizer: try hiTokenizer())
        let data = try JSONEncoder().encode(v)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object.keys.sorted() == ["tokenizer"])
        #expect(try JSONDecoder().decode(Vocabulary.self, from: data) == v)
        let characters = Vocabulary(characters: "ab".unicodeScalars)
        #expect(String(decoding: try JSONEncoder().encode(characters), as: UTF8.self) == #"["","a","b"]"#)
        #expect(try JSONDecoder().decode(Vocabulary.self, from: try JSONEncoder().encode(characters)) == characters)
        for bad in [
            #"{"tokenizer": {"pattern": "nope", "specialTokens": [], "merges": []}}"#,
            #"{"tokenizer": {"pattern": "none", "specialTokens": [], "merges": [[300, 1]]}}"#,
        ] {
            #expect(throws: DecodingError.self) { try JSONDecoder().decode(Vocabulary.self, from: Data(bad.utf8)) }
        }
    }

    @Test("A token document: the parts are the character document's, the tokenizer sees the training text alone, each part encoded on its own")
    func parts() throws {
        // 100 characters, some of two bytes, with a byte-order mark the reader skips.
        let text = String(repeating: "hi hé, hi!\n", count: 9) + "hi héhi\n"
        let scalars = Array(text.unicodeScalars)
        #expect(scalars.count == 107)
        let file = try temporaryFile("token-document.txt", contents: Data([0xEF, 0xBB, 0xBF] + Array(text.utf8)))
        var seen: [String] = []
        let (document, parts) = try TextDocument.load(file, validationFraction: 0.1, testFraction: 0.05, maximumBytes: 1 << 20) { training in
            seen.append(training)
            return try hiTokenizer()
        }
        // The character document's parts, from the same rule: ⌊107 · 0.85⌋ = 90 for training, 5 (107 · 0.05 rounded) for test.
        let characters = try TextDocument.load(file, maximumBytes: 1 << 20).parts(validationFraction: 0.1, testFraction: 0.05)
        #expect(characters.training == 0..<90 && characters.test == 102..<107)
        func piece(_ range: Range<Int>) -> String { String(String.UnicodeScalarView(scalars[range])) }
        #expect(seen == [piece(0..<90)])
        let tokenizer = try hiTokenizer()
        for (part, range) in [(parts.training, 0..<90), (parts.validation, 90..<102), (parts.test, 102..<107)] {
            #expect(Array(document.tokens.part(part)) == tokenizer.encodeOrdinary(piece(range)), "\(range)")
        }
        #expect(parts.test.upperBound == document.count && document.vocabulary == Vocabulary(tokenizer: tokenizer))
        #expect(document.description.hasSuffix(": \(document.count) tokens of 257)"))
    }

    @Test("A held-out part of one token, or a training part short of the block, is refused with the counts")
    func tooFewTokens() throws {
        // 20 characters, the last two `hi`: the validation part is one token.
        let file = try temporaryFile("one-token.txt", contents: Data((String(repeating: "ab", count: 9) + "hi").utf8))
        let error = try #require(throws: DataError.self) {
            _ = try TextDocument.load(file, validationFraction: 0.1, testFraction: 0, maximumBytes: 1 << 20) { _ in try hiTokenizer() }
        }
        #expect("\(error)".contains("the validation part is 1 token"), "\(error)")
        let short = try #require(throws: DataError.self) {
            _ = try TextDocument.load(file, validationFraction: 0.5, testFraction: 0, minimumTraining: 11, maximumBytes: 1 << 20) { _ in
                try hiTokenizer()
            }
        }
        #expect("\(short)".contains("the training part is 10 tokens"), "\(short)")
    }

    @Test("What the tokenizer throws comes out as it is")
    func tokenizerFails() throws {
        let file = try temporaryFile("fails.txt", contents: Data("abcdefghij".utf8))
        #expect(throws: TokenizerError.invalidVocabularySize(3)) {
            _ = try TextDocument.load(file, validationFraction: 0.2, testFraction: 0, maximumBytes: 1 << 20) { training in
                try BytePairTokenizer.train(training, vocabularySize: 3)
            }
        }
    }
}
