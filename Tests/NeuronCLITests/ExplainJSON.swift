import Foundation

/// The JSON schema of `neuron explain --json`, mirrored independently of the library's encoder.
///
/// Read with `JSONDecoder`, which parses numbers with correct rounding; Foundation's
/// `JSONSerialization` on Linux can land one ulp off (it reads 0.1000000000000007 as
/// 0.10000000000000071), which would make exact comparisons meaningless.
struct ExplainJSON: Decodable {
    /// A number for a single-input neuron, an array for n inputs.
    enum Values: Decodable, Equatable {
        case one(Double), many([Double])
        init(from decoder: Decoder) throws {
            let c = try decoder.singleValueContainer()
            if let x = try? c.decode(Double.self) { self = .one(x) } else { self = .many(try c.decode([Double].self)) }
        }
        var values: [Double] {
            switch self {
            case let .one(x): [x];
            case let .many(xs): xs
            }
        }
    }
    struct Local: Decodable { var input, weight: Values; var bias, net: Double }
    struct Gradients: Decodable { var output, net, bias: Double; var weight, input: Values }
    struct Difference: Decodable { var method: String; var tiny: Double }
    struct State: Decodable { var weight: Values; var bias: Double; var loss: Double; var output: Double? }

    var net, output, error, loss: Double
    var local: Local
    var gradients, faux, absoluteError, relativeError: Gradients
    var difference: Difference
    var iterations: Int?
    var learningRate: Double?
    var initial, trained: State?

    static func decode(_ text: String) throws -> ExplainJSON {
        try JSONDecoder().decode(ExplainJSON.self, from: Data(text.utf8))
    }
}
