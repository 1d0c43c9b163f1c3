import ArgumentParser
import Foundation

/// `neuron`: the command line of the Neuron engine.
@main
struct NeuronCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "neuron",
        abstract: "Neural networks from one neuron up, over OpenBLAS.",
        subcommands: [Explain.self]
    )

    /// Parses and runs a command; a bad argument exits with status 2 and a one-line message
    /// (ArgumentParser's own usage status is 64).
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch {
            if exitCode(for: error) == .validationFailure {
                let message = message(for: error)
                    .split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
                    .filter { !$0.isEmpty }.joined(separator: " ")
                FileHandle.standardError.write(Data("neuron: \(message)\n".utf8))
                Foundation.exit(2)
            }
            exit(withError: error)
        }
    }
}

/// Parses `0.4` or `0.4,-1.5,2` into numbers, each finite.
func parseNumbers(_ text: String) throws -> [Double] {
    let parts = text.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
    return try parts.map { part in
        guard !part.isEmpty else { throw ValidationError("empty entry in the list '\(text)'") }
        return try parseNumber(part)
    }
}

/// Parses one finite number.
func parseNumber(_ text: String) throws -> Double {
    guard let value = Double(text.trimmingCharacters(in: .whitespaces)) else {
        throw ValidationError("'\(text)' is not a number")
    }
    guard value.isFinite else { throw ValidationError("'\(text)' is not a finite number") }
    return value
}
