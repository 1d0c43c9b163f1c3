import ArgumentParser
import Foundation
import NeuronCore

/// `neuron explain`: the table a learner would draw for one tanh neuron.
struct Explain: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Explain one tanh neuron: forward quantities, local, global and faux gradients.",
        discussion: """
            Defaults are Docs/Reference.md §1's reference neuron: x = 0.4, w = 0.5, b = 0.6, target 0.7.
            With --iterations and --learning-rate the neuron is trained by gradient descent first,
            and the trained neuron is explained.
            """
    )

    @Option(name: .customLong("input"), parsing: .unconditional, help: "The input x, or comma-separated inputs x₁,…,xₙ.", transform: parseNumbers)
    var inputs: [Double] = [0.4]

    @Option(
        name: .customLong("weight"), parsing: .unconditional, help: "The weight w, or comma-separated weights, one per input.",
        transform: parseNumbers)
    var weights: [Double] = [0.5]

    @Option(parsing: .unconditional, help: "The bias b.", transform: parseNumber)
    var bias: Double = 0.6

    @Option(parsing: .unconditional, help: "The target t the output should reach.", transform: parseNumber)
    var target: Double = 0.7

    @Option(parsing: .unconditional, help: "The nudge of the faux gradients; greater than 0.", transform: parseNumber)
    var tiny: Double = 1e-4

    @Flag(help: "Central differences (L(q+tiny) - L(q-tiny)) / 2·tiny instead of forward differences.")
    var central = false

    @Option(help: "Train by gradient descent for this many iterations first (needs --learning-rate).")
    var iterations: Int?

    @Option(
        name: .customLong("learning-rate"), parsing: .unconditional, help: "The learning rate of the training (needs --iterations).",
        transform: parseNumber)
    var learningRate: Double?

    @Option(help: "Compute in double or float.")
    var precision: Precision = .double

    @Flag(help: "Print one JSON object instead of the table.")
    var json = false

    func validate() throws {
        guard inputs.count == weights.count else {
            throw ValidationError(
                "--input has \(inputs.count) value\(inputs.count == 1 ? "" : "s") but --weight has \(weights.count); give one weight per input")
        }
        guard tiny > 0 else { throw ValidationError("--tiny must be greater than 0, got \(tiny)") }
        switch (iterations, learningRate) {
        case (nil, nil): break
        case (nil, _?): throw ValidationError("--learning-rate needs --iterations")
        case (_?, nil): throw ValidationError("--iterations needs --learning-rate")
        case let (n?, lr?):
            guard n >= 0 else { throw ValidationError("--iterations must be 0 or more, got \(n)") }
            guard lr > 0 else { throw ValidationError("--learning-rate must be greater than 0, got \(lr)") }
        }
    }

    func run() throws {
        switch precision {
        case .double: try explain(Double.self)
        case .float: try explain(Float.self)
        }
    }

    private func explain<Scalar: TensorScalar>(_: Scalar.Type) throws {
        let s = { (x: Double) in Scalar(x) }
        let explanation = try NeuronExplanation(
            neuron: Neuron(weights: weights.map(s), bias: s(bias)),
            inputs: inputs.map(s), target: s(target),
            difference: FiniteDifference(central ? .central : .forward, tiny: s(tiny)),
            train: iterations.map { (learningRate: s(learningRate!), iterations: $0) })
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(explanation), as: UTF8.self))
        } else {
            print(explanation.table)
        }
    }
}

/// The scalar type a command computes in.
enum Precision: String, ExpressibleByArgument, CaseIterable {
    case double, float
}
