// How a document model's losses, means over predicted tokens, read per character of the text they
// cover, so that a token model and a character model compare on the same held-out text.
import Foundation
import NeuronCore

/// The predicted tokens of each part of a document per character they hold: a loss of `L` nats
/// per token over a part is `L · tokensPerCharacter / ln 2` bits per character there. A character
/// document's ratios are 1.
public struct TokensPerCharacter: Sendable, Equatable, Codable {
    /// The training part's (the training loss is a mean over windows drawn from it).
    public var training: Double
    /// The validation part's; nil without one.
    public var validation: Double?
    /// The test part's; nil without one.
    public var test: Double?

    public init(training: Double, validation: Double?, test: Double?) {
        (self.training, self.validation, self.test) = (training, validation, test)
    }

    /// The ratios of `document`'s parts: each part's tokens but its first (the ones its windows
    /// predict) over the characters they hold (`Vocabulary.characterCount(_:)`).
    public init(_ document: TextDocument, parts: (training: Range<Int>, validation: Range<Int>, test: Range<Int>)) {
        func ratio(_ part: Range<Int>) -> Double? {
            guard part.count >= 2 else { return nil }
            let predicted = document.tokens.part(part.dropFirst())
            return Double(predicted.count) / Double(max(1, document.vocabulary.characterCount(predicted)))
        }
        self.init(training: ratio(parts.training) ?? 1, validation: ratio(parts.validation), test: ratio(parts.test))
    }

    /// The ratio of the part named `part` (`training`, `validation`, `test`), nil for another name.
    public func ratio(of part: String) -> Double? {
        switch part {
        case "training": training
        case "validation": validation
        case "test": test
        default: nil
        }
    }

    /// `loss`, nats per token over a part of ratio `tokensPerCharacter`, in bits per character.
    public static func bitsPerCharacter(_ loss: Double, tokensPerCharacter: Double) -> Double {
        loss * tokensPerCharacter / log(2)
    }

    /// `loss`, nats per token over the part named `part`, in bits per character; nil for a part
    /// the document does not have.
    public func bitsPerCharacter(_ loss: Double, over part: String) -> Double? {
        ratio(of: part).map { Self.bitsPerCharacter(loss, tokensPerCharacter: $0) }
    }
}
