import ArgumentParser
import Foundation
import NeuronCore
import NeuronDistributed
import NeuronExport
import NeuronTraining

/// `neuron`: the command line of the Neuron engine.
@main
struct NeuronCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "neuron",
        abstract: "Neural networks from one neuron up, over OpenBLAS.",
        subcommands: [Train.self, Gradcheck.self, Evaluate.self, Predict.self, Explain.self, Sample.self, Export.self, Dashboard.self]
    )

    /// Parses and runs a command. A bad argument, config, data file or checkpoint exits with
    /// status 2 and a message naming what is wrong (ArgumentParser's own usage status is 64).
    static func main() async {
        StopSignals.install()
        do {
            var command = try parseAsRoot()
            if var command = command as? AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch let error as ExitCode {
            exit(withError: error)
        } catch {
            if exitCode(for: error) == .validationFailure || isBadInput(error) {
                let message = isBadInput(error) ? "\(error)" : message(for: error)
                let line = message.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
                    .filter { !$0.isEmpty }.joined(separator: " ")
                // Control characters escaped: a name from outside cannot ring or rewrite the terminal.
                FileHandle.standardError.write(Data("neuron: \(line.printable)\n".utf8))
                Foundation.exit(2)
            }
            exit(withError: error)
        }
    }

    /// Errors that say the input (config, data, checkpoint, sizes) is wrong, not the program.
    static func isBadInput(_ error: Error) -> Bool {
        error is ConfigError || error is DataError || error is CheckpointError || error is RunError
            || error is NetworkError || error is OptimizerError || error is NeuronError || error is TensorError
            || error is DistributedError || error is ONNXExportError || error is BLAS.KernelMismatch
    }
}

/// Help for an option read through a `transform`, whose default ArgumentParser cannot show: the
/// text with "(default: value)" as ArgumentParser writes it for other options.
func help(_ text: String, default value: some CustomStringConvertible) -> ArgumentHelp {
    ArgumentHelp("\(text) (default: \(value))")
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

/// Writes to standard output without buffering surprises for live progress lines.
@MainActor
func writeOut(_ text: String) {
    FileHandle.standardOutput.write(Data(text.utf8))
}
