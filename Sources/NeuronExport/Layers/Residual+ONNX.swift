// A residual block in ONNX: its body's nodes are named `layers.<index>.body.<j>…`, as its tensors are.
import NeuronCore

extension Residual: ONNXLayer {
    func addNodes(to graph: inout GraphBuilder<Scalar>, index: Int, path: String) throws(ONNXExportError) {
        let prefix = graph.prefix(index, path)
        // y = x + f(x): the body's nodes, then an Add of the block's input.
        let (input, inputLayout) = (graph.current, graph.layout)
        for (j, inner) in body.layers.enumerated() { try graph.add(inner, index: index, path: path + "body.\(j).") }
        guard graph.layout == inputLayout else { throw refused(at: index, "its body changes the layout it is added to") }
        graph.current = graph.add("Add", [input, graph.current], name: "\(prefix).add")
    }
}
