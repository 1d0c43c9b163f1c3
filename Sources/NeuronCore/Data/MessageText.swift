// Text from outside (file names, config keys, CSV headers, characters of a data file) as it is
// shown in a message: one spelling for a code point, and control characters escaped, so that a
// name holding a bell, an escape sequence or a carriage return can neither hide in a terminal nor
// rewrite what it shows.

extension Unicode.Scalar {
    /// `U+004B`: the code point as Unicode writes it, at least four hexadecimal digits.
    public var codePoint: String {
        let digits = String(value, radix: 16, uppercase: true)
        return "U+" + String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}

extension String {
    /// The text with every control character (C0, DEL, C1) written as Swift escapes it, `\u{07}`,
    /// `\n`, `\r`, and everything else as it is: what a message prints of text from outside.
    public var printable: String {
        guard unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else { return self }
        var shown = ""
        for scalar in unicodeScalars {
            shown += scalar.properties.generalCategory == .control ? scalar.escaped(asASCII: true) : String(scalar)
        }
        return shown
    }
}
