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
    }

    @Test("A suggestion is made only for a close name: a typo, another case or separator, a prefix")
    func nearest() {
        let iris = ["sepal_length", "sepal_width", "petal_length", "petal_width", "species"]
        #expect(Spelling.nearest(to: "sepal_lenght", in: iris) == "sepal_length")
        #expect(Spelling.nearest(to: "SepalLength", in: iris) == "sepal_length")
        #expect(Spelling.nearest(to: "spec", in: iris) == "species")
        // Far from every column: no hint rather than the least far one.
        #expect(Spelling.nearest(to: "a", in: iris) == nil)
        #expect(Spelling.nearest(to: "sepal_length", in: ["a", "b", "species"]) == nil)
        #expect(Spelling.nearest(to: "x", in: []) == nil)
    }

    @Test("A CSV header hint names a close column, and none for a column unlike every other")
    func csvHint() throws {
        #expect(Spelling.nearest(to: "Speceis", in: ["sepal_length", "species"]) == "species")
        #expect(Spelling.nearest(to: "sepal_length", in: ["a", "b"]) == nil)
    }
}
