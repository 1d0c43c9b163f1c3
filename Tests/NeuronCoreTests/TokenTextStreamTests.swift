import Testing

@testable import NeuronCore

@Suite("The text of tokens as they come: unfinished UTF-8 held until complete")
struct TokenTextStreamTests {
    @Test("Byte by byte, each character appears whole once its last byte comes, never as U+FFFD")
    func byteByByte() throws {
        let tokenizer = try BytePairTokenizer(pattern: .gpt4, merges: [])
        let text = "hé😉 ok ∑"
        var stream = TokenTextStream(tokenizer)
        var pieces: [String] = []
        for byte in text.utf8 { pieces.append(try stream.append(Int(byte))) }
        pieces.append(stream.finish())
        #expect(pieces.joined() == text)
        #expect(!pieces.joined().contains("\u{FFFD}"))
        // é is C3 A9: nothing after C3, "é" after A9; 😉 is F0 9F 98 89: three empty pieces, then the emoji.
        #expect(Array(pieces[1...2]) == ["", "é"])
        #expect(Array(pieces[3...6]) == ["", "", "", "😉"])
    }

    @Test("Bytes that can never start a character come at once as U+FFFD; an unfinished end is given up by finish")
    func illFormed() throws {
        let tokenizer = try BytePairTokenizer(pattern: .gpt4, merges: [])
        var stream = TokenTextStream(tokenizer)
        #expect(try stream.append(0xFF) == "\u{FFFD}")
        #expect(try stream.append(0x80) == "\u{FFFD}")
        #expect(try stream.append(0xE2) == "")
        #expect(try stream.append(0x88) == "")
        #expect(stream.finish() == "\u{FFFD}")
        #expect(throws: TokenizerError.unknownToken(id: 999, position: 0)) { try stream.append(999) }
    }

    @Test("Merged tokens that split a character: the text comes whole")
    func mergedTokens() throws {
        // "é" + "x" as tokens C3 and (A9, x): the second token completes the first's character.
        let tokenizer = try BytePairTokenizer(pattern: .none, merges: [(0xA9, 0x78)])
        var stream = TokenTextStream(tokenizer)
        #expect(try stream.append(0xC3) == "")
        #expect(try stream.append(256) == "éx")
    }
}
