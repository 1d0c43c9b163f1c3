// A dense layer in ONNX: one Gemm against the checkpoint's weight (over a sequence, a MatMul at every
// position), then its activation.
import NeuronCore

extension Dense: ONNXLayer {
    func addNodes(to graph: inout GraphBuilder<Scalar>, index: Int, path: String) throws(ONNXExportError) {
        let prefix = graph.prefix(index, path)
        if case .sequence(let block, _) = graph.layout {
            // The same layer at every position: (batch, time, inputs) → (batch, time, outputs).
            let w = graph.initializer(graph.parameter(index, path + "weight")), b = graph.initializer(graph.parameter(index, path + "bias"))
            graph.current = graph.linear(weight: w, bias: b, prefix: prefix)
            graph.addActivation(activation, prefix: prefix)
            graph.layout = .sequence(block: block, features: outputs)
            return
        }
        guard case .features = graph.layout else { throw refused(at: index, "a dense layer needs features, not an image: add a flatten layer") }
        // y = x·Wᵀ + b with W in nn.Linear's (outputs, inputs).
        let w = graph.initializer(graph.parameter(index, path + "weight")), b = graph.initializer(graph.parameter(index, path + "bias"))
        graph.current = graph.add("Gemm", [graph.current, w, b], name: "\(prefix).linear", [ONNXAttribute(name: "transB", value: .int(1))])
        graph.addActivation(activation, prefix: prefix)
        graph.layout = .features(outputs)
    }
}
