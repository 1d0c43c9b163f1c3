import ArgumentParser
import Foundation
import NeuronCore
import NeuronTraining

/// `neuron explain`: the table a learner would draw for one tanh neuron, or for one unit of a trained network.
struct Explain: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Explain one tanh neuron: forward quantities, local, global and faux gradients.",
        discussion: """
            Defaults are Docs/Reference.md §1's reference neuron: x = 0.4, w = 0.5, b = 0.6, target 0.7. \
            With --iterations and --learning-rate the neuron is trained by gradient descent first, and the \
            trained neuron is explained.

            With --checkpoint RUN --layer L --unit U [--sample I], the same table for unit U of dense layer L \
            of a trained network on training sample I, in Double: its inputs are the layer's inputs, its \
            weights its column of the layer's weights, and its output gradient flows back from the network's \
            loss; faux gradients by forward difference (or --central) through the network's forward pass, \
            with the network's own backward pass beside them.

            A unit of a per-position dense layer or of an RNN (a text run's) is explained at one position \
            P of the sample (--position P; by default the last position the sample's line reaches, where \
            its last character is read and its end is to be predicted): its inputs are the layer's input at \
            P (an RNN's also the state before, h_{P-1}), its gradients ∂L/∂(quantity at P) with L the \
            loss over the whole sample, a weight's row position P's share of its gradient beside the \
            network's sum over positions, and its faux gradients nudge the quantity at P alone. A GRU unit, \
            three gates joined into a state, gets its own table at P: each gate's sums, pre-activation and \
            value, the state, the local derivatives, and the gradients of the state, the gates and the \
            unit's rows of every weight and bias beside their faux gradients. An embedding, a position \
            embedding or a context window has no unit and is refused.

            With --checkpoint RUN --attention TEXT, for a text model with attention layers: one forward \
            pass of the line (⏎ then its characters, cropped to the network's last positions as sampling \
            crops), and each attention layer's weights on it, a map per head per block, with the \
            characters on both axes: rows the position attending, columns the positions attended to, each \
            weight a shade (the legend says which). --json gives the numbers.
            """
    )

    /// Docs/Reference.md §1's neuron and §2's nudge: the defaults, named once for the options and their help.
    private enum Reference {
        static let input = 0.4, weight = 0.5, bias = 0.6, target = 0.7, tiny = 1e-4
    }

    @Option(
        name: .customLong("input"), parsing: .unconditional,
        help: help("The input x, or comma-separated inputs x₁,…,xₙ.", default: Reference.input), transform: parseNumbers)
    var inputs: [Double] = [Reference.input]

    @Option(
        name: .customLong("weight"), parsing: .unconditional,
        help: help("The weight w, or comma-separated weights, one per input.", default: Reference.weight), transform: parseNumbers)
    var weights: [Double] = [Reference.weight]

    @Option(parsing: .unconditional, help: help("The bias b.", default: Reference.bias), transform: parseNumber)
    var bias: Double = Reference.bias

    @Option(parsing: .unconditional, help: help("The target t the output should reach.", default: Reference.target), transform: parseNumber)
    var target: Double = Reference.target

    @Option(parsing: .unconditional, help: help("The nudge of the faux gradients; greater than 0.", default: Reference.tiny), transform: parseNumber)
    var tiny: Double = Reference.tiny

    @Flag(help: "Central differences (L(q+tiny) - L(q-tiny)) / 2·tiny instead of forward differences.")
    var central = false

    // `.unconditional`: a negative count is read as the value it is and refused by `validate`, not
    // taken for an option name ("Missing value for '--layer'").
    @Option(parsing: .unconditional, help: "Train by gradient descent for this many iterations first (needs --learning-rate).")
    var iterations: Int?

    @Option(
        name: .customLong("learning-rate"), parsing: .unconditional, help: "The learning rate of the training (needs --iterations).",
        transform: parseNumber)
    var learningRate: Double?

    @Option(help: "Compute in double or float.")
    var precision: Precision = .double

    @Flag(help: "Print one JSON object instead of the table.")
    var json = false

    @Option(help: "Explain a unit of this run's trained network (its run directory or checkpoint file).")
    var checkpoint: String?

    @Option(parsing: .unconditional, help: "With --checkpoint: the layer (dense, or a text run's RNN or GRU), counted from 0.")
    var layer: Int?

    @Option(parsing: .unconditional, help: "With --checkpoint: the unit of the layer, counted from 0.")
    var unit: Int?

    @Option(
        parsing: .unconditional,
        help: "With --checkpoint: the training sample, counted from 0 (as the run's training rows are read, before shuffling).")
    var sample: Int = 0

    @Option(
        parsing: .unconditional,
        help: """
            With --checkpoint, for a per-position dense layer, an RNN or a GRU: the position, counted from 0 \
            (default: the last position the sample's line reaches, its last character).
            """)
    var position: Int?

    @Option(help: "With --checkpoint: a line of text; show each attention head's weights on it, a map per head per block.")
    var attention: String?

    func validate() throws {
        guard tiny > 0 else { throw ValidationError("--tiny must be greater than 0, got \(tiny)") }
        if let attention {
            guard checkpoint != nil else { throw ValidationError("--attention needs --checkpoint RUN, a text model with attention layers") }
            guard layer == nil, unit == nil, sample == 0, position == nil else {
                throw ValidationError("--attention shows a line's attention maps; --layer, --unit, --sample and --position explain a unit instead")
            }
            guard !attention.isEmpty else { throw ValidationError("--attention '': give a line of at least one character") }
            return
        }
        if checkpoint != nil {
            guard let layer, let unit else { throw ValidationError("--checkpoint needs --layer L and --unit U") }
            for (name, value) in [("--layer", layer), ("--unit", unit), ("--sample", sample), ("--position", position ?? 0)] where value < 0 {
                throw ValidationError("\(name) \(value): layers, units, samples and positions are counted from 0")
            }
            guard iterations == nil, learningRate == nil else {
                throw ValidationError("--iterations and --learning-rate train the single neuron; a checkpoint's network is explained as trained")
            }
            return
        }
        guard layer == nil, unit == nil, sample == 0, position == nil else {
            throw ValidationError("--layer, --unit, --sample and --position need --checkpoint")
        }
        guard inputs.count == weights.count else {
            throw ValidationError(
                "--input has \(inputs.count) value\(inputs.count == 1 ? "" : "s") but --weight has \(weights.count); give one weight per input")
        }
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
        if let checkpoint, let attention {
            let maps = try Self.attentionMaps(checkpoint: checkpoint, text: attention)
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
                encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
                print(String(decoding: try encoder.encode(maps), as: UTF8.self))
            } else {
                print(maps.picture())
            }
            return
        }
        if let checkpoint, let layer, let unit {
            let (explanation, line) = try Self.explainUnit(
                checkpoint: checkpoint, layer: layer, unit: unit, sample: sample, position: position,
                difference: FiniteDifference(central ? .central : .forward, tiny: tiny))
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
                print(String(decoding: try encoder.encode(explanation), as: UTF8.self))
            } else {
                if let line { print(line + "\n") }
                print(explanation.table)
            }
            return
        }
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

extension Explain {
    /// Unit `unit` of layer `layer` of the checkpoint's network on training sample `sample`, at
    /// `position` for a layer over a sequence (nil: its default); for a text run, a line saying what
    /// the network reads and is to predict there.
    /// - Throws: ``CheckpointError``, ``RunError``, ``NetworkError`` or ``DataError`` naming what does not fit.
    static func explainUnit(
        checkpoint path: String, layer: Int, unit: Int, sample: Int, position: Int? = nil, difference: FiniteDifference<Double>
    ) throws -> (explanation: ExplainedUnit, line: String?) {
        let saved = try Checkpoint.read(path)
        switch saved.state.precision {
        case .float:
            return try explainUnit(Float.self, saved, layer: layer, unit: unit, sample: sample, position: position, difference: difference)
        case .double:
            return try explainUnit(Double.self, saved, layer: layer, unit: unit, sample: sample, position: position, difference: difference)
        }
    }

    private static func explainUnit<Scalar: TensorScalar>(
        _: Scalar.Type, _ saved: LoadedCheckpoint, layer: Int, unit: Int, sample: Int, position: Int?, difference: FiniteDifference<Double>
    ) throws -> (explanation: ExplainedUnit, line: String?) {
        let network: Network<Scalar> = try Prediction<Scalar>.network(saved)
        // A layer, unit or position that is not there is refused before the dataset is read.
        let gru = network.layers.indices.contains(layer) ? network.layers[layer] as? GRU<Scalar> : nil
        if gru != nil {
            try GRUUnitExplanation.check(layer: layer, unit: unit, of: network)
        } else {
            try UnitExplanation.check(layer: layer, unit: unit, of: network)
        }
        if let position {
            let name = "layer \(layer) \(network.layers[layer])"
            guard let time = gru?.time ?? UnitExplanation.positions(of: network.layers[layer]) else {
                throw RunError.invalid(
                    "--position \(position): \(name) is a layer over features, with no positions; --position is for a per-position dense layer, an RNN or a GRU"
                )
            }
            guard (0..<time).contains(position) else { throw RunError.invalid("--position \(position): \(name) has positions 0 to \(time - 1)") }
        }
        // The training rows as the run read them: the same split and the same fitted statistics.
        let data = try RunData<Scalar>(saved.state.config.data, seed: saved.state.progress.seed ?? 0)
        guard data.preprocessing == saved.state.preprocessing else {
            throw RunError.invalid("\(saved.path): the data's statistics differ from the checkpoint's (did the data files change?)")
        }
        guard (0..<data.trainingSampleCount).contains(sample) else {
            throw RunError.invalid("--sample \(sample): the run has training samples 0 to \(data.trainingSampleCount - 1)")
        }
        let row = data.trainingSample(sample)
        let (features, targets) = (row.features.scalars, row.targets.scalars)
        let explanation: ExplainedUnit =
            gru != nil
            ? .gru(
                try GRUUnitExplanation(
                    network: network, sample: features, target: targets, layer: layer, unit: unit, position: position, difference: difference))
            : .neuron(
                try UnitExplanation(
                    network: network, sample: features, target: targets, layer: layer, unit: unit, position: position, difference: difference))
        guard let text = data.text, let at = explanation.position else { return (explanation, nil) }
        // What the position means in the line: the character read there and the one to predict.
        let vocabulary = text.corpus.vocabulary
        let read = vocabulary.name(of: Int(row.features[at])), next = Int(row.targets[at])
        var line =
            "Training sample \(sample), \"\(text.corpus.lines[text.corpus.lineOfEachSample(text.training)[sample]])\": at position \(at) the network reads '\(read)' and "
        line += next < 0 ? "has nothing to predict (padding past the line's end)." : "is to predict '\(vocabulary.name(of: next))'."
        if explanation.isOutput, network.loss == .sequenceCrossEntropy { line += " Unit \(unit) is the score of '\(vocabulary.name(of: unit))'." }
        return (explanation, line)
    }
}

extension Explain {
    /// Every attention layer's weights on the line `text`, through the checkpoint's network.
    /// - Throws: ``CheckpointError``; ``RunError`` for a model that does not read text or has no
    ///   attention layer, and for a character outside its vocabulary (named, with its place).
    static func attentionMaps(checkpoint path: String, text: String) throws -> AttentionMaps {
        let saved = try Checkpoint.read(path)
        guard let vocabulary = saved.state.vocabulary else {
            throw RunError.invalid(
                "\(saved.file): \(saved.state.network) is not a text model (its data is \(saved.state.config.data.kind.rawValue)); attention maps are of a line of text"
            )
        }
        switch saved.state.precision {
        case .float: return try attentionMaps(Float.self, saved, vocabulary: vocabulary, text: text)
        case .double: return try attentionMaps(Double.self, saved, vocabulary: vocabulary, text: text)
        }
    }

    private static func attentionMaps<Scalar: TensorScalar>(
        _: Scalar.Type, _ saved: LoadedCheckpoint, vocabulary: Vocabulary, text: String
    ) throws -> AttentionMaps {
        var network: Network<Scalar> = try Prediction<Scalar>.network(saved)
        guard !network.attentionLayers.isEmpty else {
            throw RunError.invalid(
                "\(saved.file): \(saved.state.network) has no attention layer (kind: attention), so there are no attention maps to show")
        }
        do {
            return try network.attentionMaps(text: text, vocabulary: vocabulary, boundary: saved.state.config.data.unit != .document)
        } catch {
            throw RunError.invalid("--attention: \(error)")
        }
    }
}

/// A unit explained: one neuron's table (a dense or RNN unit), or a GRU unit's, gate by gate.
enum ExplainedUnit: Encodable {
    case neuron(UnitExplanation), gru(GRUUnitExplanation)

    /// The text table.
    var table: String {
        switch self {
        case .neuron(let e): e.table
        case .gru(let e): e.table
        }
    }

    /// The position explained; nil for a layer over features.
    var position: Int? {
        switch self {
        case .neuron(let e): e.position
        case .gru(let e): e.position
        }
    }

    /// Whether the unit is one of the network's outputs.
    var isOutput: Bool {
        switch self {
        case .neuron(let e): e.isOutput
        case .gru(let e): e.isOutput
        }
    }

    /// The explanation's own JSON object, as if it were not wrapped.
    func encode(to encoder: Encoder) throws {
        switch self {
        case .neuron(let e): try e.encode(to: encoder)
        case .gru(let e): try e.encode(to: encoder)
        }
    }
}

/// The scalar type a command computes in.
enum Precision: String, ExpressibleByArgument, CaseIterable {
    case double, float
}
