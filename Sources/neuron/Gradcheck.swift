import ArgumentParser
import Foundation
import NeuronCore
import NeuronTraining

/// `neuron gradcheck CONFIG`: analytic gradients against faux ones, on the configured network.
struct Gradcheck: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check the configured network's gradients against finite differences (exit 0 pass, 1 fail).",
        discussion:
            "Central differences in Double by default (PyTorch gradcheck's eps 1e-6, atol 1e-5, rtol 1e-3); a Float network is checked on a Double copy."
    )

    /// PyTorch gradcheck's eps, atol and rtol, and Docs/Reference.md §2's nudge: named once for the options and their help.
    private enum Default {
        static let eps = 1e-6, atol = 1e-5, rtol = 1e-3, tiny = 1e-4
    }

    @Argument(help: "The config file.")
    var config: String

    @Option(help: "Check this many seeded entries per tensor instead of all.")
    var samples: Int?

    @Option(help: help("Central-difference step.", default: Default.eps), transform: parseNumber)
    var eps: Double = Default.eps

    @Option(help: help("Absolute tolerance.", default: Default.atol), transform: parseNumber)
    var atol: Double = Default.atol

    @Option(help: help("Relative tolerance.", default: Default.rtol), transform: parseNumber)
    var rtol: Double = Default.rtol

    @Flag(help: "Forward differences (Docs/Reference.md §2) with --tiny instead of central ones.")
    var forward = false

    @Option(help: help("The forward-difference nudge.", default: Default.tiny), transform: parseNumber)
    var tiny: Double = Default.tiny

    @Option(name: .customLong("batch-size"), help: "Training rows in the checked batch.")
    var batchSize: Int = 16

    @Option(help: "Check the weights of this checkpoint instead of the seeded initial ones.")
    var checkpoint: String?

    @Flag(help: "Print the report as JSON.")
    var json = false

    func validate() throws {
        if let samples, samples < 1 { throw ValidationError("--samples must be at least 1, got \(samples)") }
        if eps <= 0 { throw ValidationError("--eps must be greater than 0, got \(eps)") }
        if tiny <= 0 { throw ValidationError("--tiny must be greater than 0, got \(tiny)") }
        if atol < 0 || rtol < 0 { throw ValidationError("--atol and --rtol must be 0 or more") }
        if batchSize < 1 { throw ValidationError("--batch-size must be at least 1, got \(batchSize)") }
    }

    func run() throws {
        let config = try ConfigLoader.load(self.config)
        BLAS.threadCount = config.training.blasThreads
        // A check of the gradients at the checkpoint's weights, on whatever rows the data holds now.
        let run = try RunBuilder.build(config, resume: try checkpoint.map(Checkpoint.read), dataChanged: true)
        let difference = forward ? try FiniteDifference<Double>(.forward, tiny: tiny) : try FiniteDifference<Double>(.central, tiny: eps)
        let check = try GradientCheck(
            difference: difference, absoluteTolerance: atol, relativeTolerance: rtol,
            samplesPerTensor: samples, seed: config.training.seed)
        // Shapes and positions as the checkpoint's tensors of these names hold them.
        let report = try run.engine.gradientCheck(check, batchSize: batchSize).inFileLayout()
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            // A zero tolerance makes severities infinite, and a broken network's gradients may be
            // NaN: written as strings, as the progress JSON does, since JSON has no such numbers.
            encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
            print(String(decoding: try encoder.encode(Verdict(report: report)), as: UTF8.self))
        } else {
            print(report)
        }
        if !report.passed { throw ExitCode(1) }
    }
}

/// `gradcheck --json`'s object: the report's keys with the verdict, `passed`, beside them.
private struct Verdict: Encodable {
    let report: GradientCheckReport

    private enum Key: String, CodingKey { case passed }

    func encode(to encoder: any Encoder) throws {
        try report.encode(to: encoder)
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(report.passed, forKey: .passed)
    }
}
