// A flatten layer in ONNX: Flatten of an NCHW image, which is the engine's channels-first vector;
// nothing when the value is already features.
import NeuronCore

extension Flatten: ONNXLayer {
    func addNodes(to graph: inout GraphBuilder<Scalar>, index: Int, path: String) throws(ONNXExportError) {
        if case .image(let h, let w, let c) = graph.layout {
            graph.current = graph.add(
                "Flatten", [graph.current], name: "\(graph.prefix(index, path)).flatten", [ONNXAttribute(name: "axis", value: .int(1))])
            graph.layout = .features(h * w * c)
        }
    }
}
