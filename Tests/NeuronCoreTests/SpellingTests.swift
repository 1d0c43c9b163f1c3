import Testing

@testable import NeuronCore

@Suite("Spelling distance for suggestions")
struct SpellingTests {
    @Test("Insertions, deletions, substitutions and swaps of neighbours, by hand")
    func byHand() {
        #expect(Spelling.distance(Array("kitten"), Array("sitting")) == 3)
        #expect(Spelling.distance(Array("modle"), Array("model")) == 1)  // a swap of neighbours is one edit
        #expect(Spelling.distance(Array(""), Array("abc")) == 3)
        #expect(Spelling.distance(Array("label"), Array("label")) == 0)
        // CSV suggestions use it too: the nearest header name, ignoring case.
        #expect(CSV.closest(to: "Speceis", in: ["sepal_length", "species"]) == "species")
    }
}
