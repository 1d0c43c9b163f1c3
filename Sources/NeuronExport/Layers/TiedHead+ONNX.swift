// The tied head in ONNX: a MatMul against the transposed token embedding's table, the very
// initializer the embedding's Gather reads (the file holds the table once, as the checkpoint does).
import NeuronCore

extension TiedHead: ONNXLayer {
    func addNodes(to graph: inout GraphBuilder<Scalar>, index: Int, path: String) throws(ONNXExportError) {
        guard case .sequence(let block, let inputFeatures) = graph.layout, inputFeatures == features else {
            throw refused(at: index, "a tied head scores a sequence of \(features) features")
        }
        // x: (batch, time, features)  E: (vocabulary, features)  →  y = x·Eᵀ: (batch, time, vocabulary), no bias
        let table = graph.initializer(graph.parameter(sharedLayer, "weight"))
        graph.current = graph.linear(weight: table, bias: nil, prefix: graph.prefix(index, path))
        graph.layout = .sequence(block: block, features: vocabulary)
    }
}
