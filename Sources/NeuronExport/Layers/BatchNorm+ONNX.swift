// Batch normalization in ONNX: one BatchNormalization in its evaluation form, with the running
// statistics from the checkpoint's state, then its activation.
import NeuronCore

extension BatchNorm: ONNXLayer {
    func addNodes(to graph: inout GraphBuilder<Scalar>, index: Int, path: String) throws(ONNXExportError) {
        let prefix = graph.prefix(index, path)
        // Evaluation form: y = γ·(x - running mean)/√(running variance + ε) + β, per channel
        // (axis 1 of both (batch, features) and NCHW).
        let inputs = [
            graph.current, graph.initializer(graph.parameter(index, path + "weight")), graph.initializer(graph.parameter(index, path + "bias")),
            graph.initializer(graph.state(index, path + "running_mean")), graph.initializer(graph.state(index, path + "running_var")),
        ]
        graph.current = graph.add(
            "BatchNormalization", inputs, name: "\(prefix).norm", [ONNXAttribute(name: "epsilon", value: .float(Float(epsilon)))])
        graph.addActivation(activation, prefix: prefix)
    }
}
