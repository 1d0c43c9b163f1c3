/// What went wrong making, reading or using a tokenizer. Every case says where and what was expected.
///
/// File errors name the path and line first (`cl100k_base.tiktoken:17: ...`), as ``DataError`` does.
public enum TokenizerError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A vocabulary, merge list or special token that cannot make a tokenizer; `place` names it ("merge 17").
    case invalidDefinition(place: String, reason: String)
    /// A tokenizer file that cannot be used: its path, the 1-based line (0 where the file as a whole is wrong),
    /// and what was expected there.
    case invalidFile(path: String, line: Int, reason: String)
    /// A registered special token in the text that the caller did not allow; `offset` is its first byte's.
    case specialTokenNotAllowed(name: String, offset: Int)
    /// An id that names no token, at `position` (0-based) in the ids given.
    case unknownToken(id: Int, position: Int)
    /// A vocabulary size below the 256 single bytes, or past what ids can hold.
    case invalidVocabularySize(Int)
    /// Training that ran out of pairs to merge: `merges` were made of the `asked`.
    case nothingToMerge(merges: Int, asked: Int)
    /// A split pattern this engine does not match.
    case unsupportedPattern(String)

    public var description: String {
        switch self {
        case .invalidDefinition(let place, let reason):
            return "\(place): \(reason)"
        case .invalidFile(let path, let line, let reason):
            return line > 0 ? "\(path):\(line): \(reason)" : "\(path): \(reason)"
        case .specialTokenNotAllowed(let name, let offset):
            return "the text holds the special token \(name) at byte \(offset), which was not allowed: "
                + "allow it to encode it as its id, or encode the text as ordinary text"
        case .unknownToken(let id, let position):
            return "id \(id) at position \(position) is no token of this tokenizer"
        case .invalidVocabularySize(let size):
            return "a vocabulary size of \(size): expected at least 256 (the single bytes) and below 2³¹"
        case .nothingToMerge(let merges, let asked):
            return "the text has no pair of tokens left to merge after \(merges) of the \(asked) merges asked for: "
                + "a vocabulary of at most \(256 + merges) tokens can be trained on it"
        case .unsupportedPattern(let pattern):
            return "the split pattern \(pattern.debugDescription) is none of GPT-4's, cl100k_base's, GPT-2's or none "
                + "(the patterns this engine matches)"
        }
    }
}
