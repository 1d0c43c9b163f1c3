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
        version: NeuronVersion.current,
        subcommands: [
            Train.self, Gradcheck.self, Evaluate.self, Predict.self, Explain.self, Sample.self, Export.self, Dashboard.self, Tokenizer.self,
        ]
    )

    /// Parses and runs a command. A bad argument, config, data file or checkpoint exits with
    /// status 2 and a message naming what is wrong (ArgumentParser's own usage status is 64); an
    /// unknown command, a missing argument or an unknown option also prints the command's usage.
    static func main() async {
        // First: OpenBLAS's kernel family, chosen and checked (may run this program again with it).
        BLAS.runOnBestKernels()
        // A family that failed its check is said at once; a choice that worked is in summary.json.
        if BLAS.choiceWarning != nil { FileHandle.standardError.write(Data("BLAS: \(BLAS.summary)\n".utf8)) }
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
            if let unknown = unknownCommand(in: Array(CommandLine.arguments.dropFirst())) {
                FileHandle.standardError.write(Data("neuron: \(unknown.printable)\n\(usage(for: error))".utf8))
                Foundation.exit(2)
            }
            if exitCode(for: error) == .validationFailure || isBadInput(error) {
                let message = isBadInput(error) ? "\(error)" : message(for: error)
                let line = message.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
                    .filter { !$0.isEmpty }.joined(separator: " ")
                let usage = isMisshapen(error) ? usage(for: error) : ""
                // Control characters escaped: a name from outside cannot ring or rewrite the terminal.
                FileHandle.standardError.write(Data("neuron: \(line.printable)\n\(usage)".utf8))
                Foundation.exit(2)
            }
            exit(withError: error)
        }
    }

    /// `unknown command 'trian'; did you mean 'train'?` when the first argument is a word that
    /// names no command (the nearest command suggested when it is a likely typo, else every
    /// command listed); nil when it names one, or is an option (`--help`, `--version`).
    static func unknownCommand(in arguments: [String]) -> String? {
        guard let word = arguments.first, !word.hasPrefix("-") else { return nil }
        // `_commandName`: ArgumentParser's name for a command, its type's name in kebab case unless configured.
        let names = configuration.subcommands.map { $0._commandName }
        guard !(names + ["help"]).contains(word) else { return nil }
        let hint = Spelling.nearest(to: word, in: names).map { "did you mean '\($0)'?" } ?? "the commands are \(names.joined(separator: ", "))"
        return "unknown command '\(word)'; \(hint)"
    }

    /// Whether ArgumentParser found the command line misshapen (an argument or an option's value
    /// missing, an option or argument it does not know), which the usage answers, rather than a
    /// value refused by a command's own checks (`validate()`, a transform), whose message already
    /// says what is allowed.
    static func isMisshapen(_ error: Error) -> Bool {
        // ArgumentParser keeps its error kinds internal: the case is read by its name. A renamed
        // case only loses the usage lines, and MessagesTests says so.
        guard let kind = Mirror(reflecting: error).descendant("parserError"), let name = Mirror(reflecting: kind).children.first?.label else {
            return false
        }
        return [
            "noValue", "missingValueForOption", "missingValueOrUnknownCompositeOption", "unknownOption", "invalidOption",
            "nonAlphanumericShortOption", "unexpectedValueForOption", "unexpectedExtraValues",
        ].contains(name)
    }

    /// The lines ArgumentParser writes after an error's message: the argument's help when one is
    /// missing, the usage of the command the error is in, and where to read more.
    static func usage(for error: Error) -> String {
        let lines = fullMessage(for: error).split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(where: { $0.hasPrefix("Help:") || $0.hasPrefix("Usage:") }) else { return "" }
        return lines[start...].joined(separator: "\n") + "\n"
    }

    /// Errors that say the input (config, data, checkpoint, sizes) is wrong, not the program.
    static func isBadInput(_ error: Error) -> Bool {
        error is ConfigError || error is DataError || error is CheckpointError || error is RunError
            || error is NetworkError || error is OptimizerError || error is NeuronError || error is TensorError
            || error is DistributedError || error is ONNXExportError || error is BLAS.KernelMismatch || error is TokenizerError
    }
}

extension Invocation {
    /// How this process was started: its argv[0], its executable (`/proc/self/exe`, links
    /// resolved) and its working directory, read here so that `Invocation` stays a pure function.
    static var current: Invocation {
        let argv0 = CommandLine.arguments.first ?? "neuron"
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? argv0
        return Invocation(argv0: argv0, executable: executable, workingDirectory: FileManager.default.currentDirectoryPath)
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
