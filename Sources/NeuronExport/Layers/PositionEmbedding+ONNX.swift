// A learned position embedding in ONNX: the table's first `time` rows, cut with a Slice whose end is
// the tokens' own length, added to every sample (Add broadcasts over the batch).
import NeuronCore

extension PositionEmbedding: ONNXLayer {
    func addNodes(to graph: inout GraphBuilder<Scalar>, index: Int, path: String) throws(ONNXExportError) {
        guard case .sequence(_, let inputFeatures) = graph.layout, inputFeatures == features else {
            throw refused(at: index, "a position embedding adds to a sequence of \(features) features, as after a token embedding")
        }
        let prefix = graph.prefix(index, path)
        // x: (batch, time, features)  weight: (positions ≥ block, features)  →  y[b, t] = x[b, t] + weight[t]
        let table = graph.initializer(graph.parameter(index, path + "weight"))
        let start = graph.int64s("\(prefix).slice_start", [0]), axis = graph.int64s("\(prefix).slice_axis", [0])
        let used = graph.add("Slice", [table, start, graph.time(), axis], name: "\(prefix).rows")
        graph.current = graph.add("Add", [graph.current, used], name: "\(prefix).add")
    }
}
