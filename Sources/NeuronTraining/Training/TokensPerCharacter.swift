// How a document model's losses, means over predicted tokens, read per character of the text they
// cover, so that a token model and a character model compare on the same held-out text.
import Foundation
import NeuronCore

/// The predicted tokens of each part of a document per character they hold: a loss of `L` nats
/// per token over a part is `L · tokensPerCharacter / ln 2` bits per character there. A character
/// document's ratios are 1.
///
/// Coded as an object of the parts' ratios by name: `{"training": 0.38, "validation": 0.41}`.
public struct TokensPerCharacter: Sendable, Equatable, Codable {
    /// Each part's ratio by name: `training`, and `validation` and `test` where the document has them.
    public var parts: [String: Double]

    public init(parts: [String: Double]) { self.parts = parts }

    /// The ratios of `document`'s parts: each part's tokens but its first (the ones its windows
    /// predict) over the characters they hold (``Vocabulary/characterCount(_:)``).
    public init(_ document: TextDocument, parts: (training: Range<Int>, validation: Range<Int>, test: Range<Int>)) {
        var ratios: [String: Double] = [:]
        for (name, part) in [("training", parts.training), ("validation", parts.validation), ("test", parts.test)] where part.count >= 2 {
            let predicted = document.tokens.part(part.dropFirst())
            ratios[name] = Double(predicted.count) / Double(max(1, document.vocabulary.characterCount(predicted)))
        }
        self.init(parts: ratios)
    }

    /// The training part's ratio (the training loss is a mean over windows drawn from it).
    public var training: Double? { parts["training"] }
    /// The validation part's ratio; nil without one.
    public var validation: Double? { parts["validation"] }
    /// The test part's ratio; nil without one.
    public var test: Double? { parts["test"] }

    /// `loss`, nats per token over a part of ratio `tokensPerCharacter`, in bits per character.
    public static func bitsPerCharacter(_ loss: Double, tokensPerCharacter: Double) -> Double {
        loss * tokensPerCharacter / log(2)
    }

    public init(from decoder: any Decoder) throws {
        parts = try decoder.singleValueContainer().decode([String: Double].self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(parts)
    }
}
