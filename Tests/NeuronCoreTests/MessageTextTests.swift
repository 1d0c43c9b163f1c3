import Testing

@testable import NeuronCore

@Suite("Text in messages: one spelling of a code point, control characters escaped")
struct MessageTextTests {
    @Test("A code point has at least four hexadecimal digits, upper case: U+0051, U+004B, U+1F600")
    func codePoints() {
        #expect(Unicode.Scalar(0x51)!.codePoint == "U+0051")
        #expect(Unicode.Scalar(0x4B)!.codePoint == "U+004B")
        #expect(Unicode.Scalar(0x7)!.codePoint == "U+0007")
        #expect(Unicode.Scalar(0x1F600)!.codePoint == "U+1F600")
    }

    @Test("Controls (C0, DEL, C1) are escaped, everything else is kept: a bell, an escape sequence, a carriage return")
    func printable() {
        #expect("a\u{7}b".printable == "a\\u{07}b")
        #expect("\u{1B}[31mred".printable == "\\u{1B}[31mred")
        #expect("x\ry\tz\u{7F}\u{85}".printable == "x\\ry\\tz\\u{7F}\\u{0085}")
        // Letters of every script, emoji and punctuation are not controls.
        #expect("naïve café — 日本 😀 'q'".printable == "naïve café — 日本 😀 'q'")
        #expect("".printable == "")
    }
}
