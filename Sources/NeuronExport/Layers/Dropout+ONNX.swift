// Dropout in ONNX: no node, since the graph is the network in evaluation, where dropout is the identity.
import NeuronCore

extension Dropout: ONNXLayer {
    func addNodes(to graph: inout GraphBuilder<Scalar>, index: Int, path: String) throws(ONNXExportError) {}
}
