/// What went wrong reading or preparing data. Every case says where and what was expected.
public enum DataError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A saved random-generator state that cannot be resumed.
    case invalidGeneratorState([UInt64])

    public var description: String {
        switch self {
        case let .invalidGeneratorState(state):
            return "a random-generator state must be 4 words, not all zero; got \(state)"
        }
    }
}
