// A sequential chain in ONNX: its layers' nodes in order, named `layers.<index>.<j>…` as its tensors are.
import NeuronCore

extension Sequential: ONNXLayer {
    func addNodes(to graph: inout GraphBuilder<Scalar>, index: Int, path: String) throws(ONNXExportError) {
        for (j, inner) in layers.enumerated() { try graph.add(inner, index: index, path: path + "\(j).") }
    }
}
