// A context window in ONNX: the sequence padded with `size − 1` zero vectors before its first
// position, then `size` slices of it, each `time` positions long and one position later than the
// one before, laid side by side: slice j holds x[t − size + 1 + j] at position t, oldest first.
import NeuronCore

extension ContextWindow: ONNXLayer {
    func addNodes(to graph: inout GraphBuilder<Scalar>, index: Int, path: String) throws(ONNXExportError) {
        guard case .sequence(let block, let f) = graph.layout, f == features else {
            throw refused(at: index, "a context window reads a sequence of \(features)-vectors")
        }
        let prefix = graph.prefix(index, path)
        // (batch, time, features) → (batch, size − 1 + time, features): Pad's pads are every
        // axis's starts, then every axis's ends.
        let pads = graph.int64s("\(prefix).pads", [0, size - 1, 0, 0, 0, 0])
        let padded = graph.add("Pad", [graph.current, pads], name: "\(prefix).padded")
        let time = graph.time()
        let axis = graph.int64s("\(prefix).time_axis", [1])
        var slices: [String] = []
        for j in 0..<size {
            let start = graph.int64s("\(prefix).start_\(j)", [j])
            let end = graph.add("Add", [time, start], name: "\(prefix).end_\(j)")
            slices.append(graph.add("Slice", [padded, start, end, axis], name: "\(prefix).slice_\(j)"))
        }
        graph.current = graph.add("Concat", slices, name: "\(prefix).window", [ONNXAttribute(name: "axis", value: .int(-1))])
        graph.layout = .sequence(block: block, features: size * features)
    }
}
