// What the dashboard reads of an engine beyond its snapshots, at a step boundary where the view
// model holds it: the layers' shapes, one layer's weights (filters to draw), and a unit explained
// on a training sample. Kept out of the engines themselves: only a display needs these.
import NeuronCore
import NeuronTraining

/// An engine whose network the dashboard can look into.
public protocol InspectableEngine: TrainingEngine {
    /// Each layer's title, units and positions (the layers whose units can be explained) and weight shape.
    func layerLayouts() -> [LayerLayout]
    /// Layer `index`'s weight tensor as Doubles with its shape; nil when it has none.
    func layerWeights(_ index: Int) -> (shape: [Int], values: [Double])?
    /// The training samples a unit can be explained on.
    var explainableSampleCount: Int { get }
    /// Unit `unit` of layer `layer` explained on training sample `sample` (Docs/Reference.md §1–2's
    /// table), at `position` for a per-position dense layer or an RNN (nil: the last position the
    /// sample's line reaches).
    /// - Throws: `NetworkError` for a layer, unit or position out of range, or a layer whose units
    ///   cannot be explained; `DataError` for a sample out of range.
    func explainUnit(layer: Int, unit: Int, sample: Int, position: Int?) throws -> UnitExplanation
    /// A line to show attention on first (the first held-out line); nil when the model reads no
    /// text or has no attention layer, so that the page shows no attention panel.
    var attentionLine: String? { get }
    /// Every attention layer's weights on the line `text` (`AttentionMaps`).
    /// - Throws: `NetworkError` for a model without attention layers, empty text or a character
    ///   outside the vocabulary (named, with its place); `DataError` for a model that reads no text.
    func attentionMaps(text: String) throws -> AttentionMaps
}

extension Network {
    /// Each layer's ``LayerLayout``.
    func layouts() -> [LayerLayout] {
        layers.enumerated().map { i, layer in
            let weight = parameterTensors.first { $0.layer == i && $0.tensor == "weight" }
            return LayerLayout(
                title: layer.description, units: UnitExplanation.units(of: layer), positions: UnitExplanation.positions(of: layer),
                weightShape: weight?.shape)
        }
    }

    /// Layer `index`'s weights, or nil.
    func weights(ofLayer index: Int) -> (shape: [Int], values: [Double])? {
        guard let weight = parameterTensors.first(where: { $0.layer == index && $0.tensor == "weight" }) else { return nil }
        return (weight.shape, parameters[weight.range].map { Double($0) })
    }
}

extension NetworkTrainingEngine: InspectableEngine {
    public func layerLayouts() -> [LayerLayout] { network.layouts() }

    public func layerWeights(_ index: Int) -> (shape: [Int], values: [Double])? { network.weights(ofLayer: index) }

    public var explainableSampleCount: Int { training.dataset.count }

    public func explainUnit(layer: Int, unit: Int, sample: Int, position: Int?) throws -> UnitExplanation {
        let dataset = training.dataset
        guard (0..<dataset.count).contains(sample) else {
            throw DataError.invalidArgument(name: "sample", value: "\(sample)", expected: "0 to \(dataset.count - 1) (the training rows)")
        }
        let row = dataset.subset([sample])
        return try UnitExplanation(
            network: network, sample: row.features.scalars, target: row.targets.scalars, layer: layer, unit: unit, position: position)
    }

    public var attentionLine: String? {
        guard let vocabulary = vocabulary ?? lineSampler?.vocabulary, !network.attentionLayers.isEmpty else { return nil }
        // A features row is `⏎ c1 … cn ⏎ …`: its line is what decoding it reads.
        let rows = test ?? validation ?? training.dataset
        guard rows.count > 0 else { return nil }
        let tokens = rows.subset([0]).features.scalars.map { Int($0) }
        // A document's window is text from its first position: its first line, up to 40 characters.
        let text = vocabulary.decode(tokens)
        guard training.document != nil else { return text }
        return String(text.split(separator: "\n").first { !$0.isEmpty }?.prefix(40) ?? "")
    }

    public func attentionMaps(text: String) throws -> AttentionMaps {
        guard let vocabulary = vocabulary ?? lineSampler?.vocabulary else {
            throw DataError.invalidArgument(
                name: "text", value: String(text.prefix(40)), expected: "a model of text data (this one reads no characters)")
        }
        var network = self.network
        return try network.attentionMaps(text: text, vocabulary: vocabulary, boundary: training.document == nil)
    }
}
