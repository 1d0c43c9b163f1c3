import Foundation
import Testing

@testable import NeuronCore

@Suite("Vocabulary: the boundary token, then the characters by code point")
struct VocabularyTests {
    @Test("Tokens in order of code point, each character once, the boundary 0")
    func order() {
        let v = Vocabulary(characters: "cabbage".unicodeScalars)
        #expect(v.characters == ["a", "b", "c", "e", "g"] && v.count == 6)
        #expect(v.index(of: "a") == 1 && v.index(of: "g") == 5 && v.index(of: "z") == nil)
        #expect((0..<6).map(v.name(of:)) == ["⏎", "a", "b", "c", "e", "g"] && v.name(of: 6) == "?")
        #expect(v.description == "Vocabulary(6 tokens: ⏎abceg)")
        // Code points, not alphabetical order: A (U+41) < z (U+7A) < é (U+E9) < 😀 (U+1F600); e + U+0301 is two characters.
        let w = Vocabulary(characters: "😀zéAe\u{301}\t".unicodeScalars)
        #expect(w.characters == ["\t", "A", "e", "z", "é", "\u{301}", "😀"])
        #expect(w.name(of: 1) == "\\t")
        #expect(Vocabulary(characters: []).count == 1)
    }

    @Test("A document starts at its newline's token, else at token 1, the first character in code-point order")
    func documentStart() {
        // ⏎, then \t (U+0009) before \n (U+000A): the newline is token 2.
        #expect(Vocabulary(characters: "a\tb\n".unicodeScalars).documentStart == 2)
        // No newline: token 1, here the space (U+0020 before "a").
        let line = Vocabulary(characters: "ab a".unicodeScalars)
        #expect(line.documentStart == 1 && line.characters[0] == " ")
    }

    @Test("Encode a line, decode tokens: boundaries and padding end the text")
    func encodeDecode() {
        let v = Vocabulary(characters: "abc".unicodeScalars)
        #expect(v.encode("cab") == [3, 1, 2] && v.encode("") == [] && v.encode("cax") == nil)
        #expect(v.decode([0, 3, 1, 2, 0, 0, 0]) == "cab")  // a features row
        #expect(v.decode([3, 1, 2, 0, -1, -1]) == "cab")  // a targets row
        #expect(v.decode([0, 0, 2, 0, 1]) == "b" && v.decode([]) == "" && v.decode([0, 0]) == "" && v.decode([1, 9, 2]) == "a")
        #expect(v.decode(v.encode("abcabc") ?? []) == "abcabc")
    }

    @Test("Coded as [\"\", characters…]; decoding round-trips exactly and refuses anything else")
    func coding() throws {
        let v = Vocabulary(characters: "b\"a\\é".unicodeScalars)
        let json = String(decoding: try JSONEncoder().encode(v), as: UTF8.self)
        #expect(json == #"["","\"","\\","a","b","é"]"#)
        #expect(try JSONDecoder().decode(Vocabulary.self, from: Data(json.utf8)) == v)
        func refused(_ json: String) -> Bool {
            (try? JSONDecoder().decode(Vocabulary.self, from: Data(json.utf8))) == nil
        }
        #expect(!refused(#"[""]"#))
        #expect(refused(#"[]"#))
        #expect(refused(#"["a","b"]"#))  // no boundary first
        #expect(refused(#"["","a","a"]"#))  // a repeat
        #expect(refused(#"["","b","a"]"#))  // out of order
        #expect(refused(#"["","ab"]"#) && refused(#"["",""]"#) && refused(#"["","e\u0301"]"#))  // not one scalar
        #expect(refused(#"{"characters":["a"]}"#))
    }
}
