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
        graph.graph.initializers.append(ONNXTensor("\(prefix).pads", int64s: [0, size - 1, 0, 0, 0, 0]))
        let padded = graph.add("Pad", [graph.current, "\(prefix).pads"], name: "\(prefix).padded")
        let time = graph.time()
        graph.graph.initializers.append(ONNXTensor("\(prefix).time_axis", int64s: [1]))
        var slices: [String] = []
        for j in 0..<size {
            graph.graph.initializers.append(ONNXTensor("\(prefix).start_\(j)", int64s: [j]))
            let end = graph.add("Add", [time, "\(prefix).start_\(j)"], name: "\(prefix).end_\(j)")
            slices.append(graph.add("Slice", [padded, "\(prefix).start_\(j)", end, "\(prefix).time_axis"], name: "\(prefix).slice_\(j)"))
        }
        graph.current = graph.add("Concat", slices, name: "\(prefix).window", [ONNXAttribute(name: "axis", value: .int(-1))])
        graph.layout = .sequence(block: block, features: size * features)
    }
}
