// A token embedding in ONNX: one Gather of the table's rows by the token indices.
import NeuronCore

extension Embedding: ONNXLayer {
    func addNodes(to graph: inout GraphBuilder<Scalar>, index: Int, path: String) throws(ONNXExportError) {
        guard case .tokens(let block) = graph.layout else {
            throw refused(at: index, "an embedding reads token indices, as a text model's first layer")
        }
        // tokens: (batch, time) int64  →  (batch, time, features): row tokens[b, t] of weight (vocabulary, features)
        let table = graph.initializer(graph.parameter(index, path + "weight"))
        graph.current = graph.add(
            "Gather", [table, graph.current], name: "\(graph.prefix(index, path)).gather", [ONNXAttribute(name: "axis", value: .int(0))])
        graph.layout = .sequence(block: block, features: features)
    }
}
