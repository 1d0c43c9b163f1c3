// Layer normalization in ONNX: one LayerNormalization over the last axis, an operator of opset 17
// (the default); an older operator set is refused rather than spelled out in eight nodes.
//
// The operator's `stash_type` (the precision of the mean and deviation, float32 by default) is left
// as it is: ONNX allows only float32 and bfloat16 there, and ONNX Runtime computes a float64 input's
// rows in float64 regardless (within 1e-13 of the engine, as the tests measure). Its `epsilon` is a
// float32 attribute: 1e-5 becomes 1e-5 + 2.5e-14, which moves a float64 model's outputs by a
// relative 1e-14 for rows of unit variance.
import NeuronCore

extension LayerNorm: ONNXLayer {
    func addNodes(to graph: inout GraphBuilder<Scalar>, index: Int, path: String) throws(ONNXExportError) {
        guard graph.opset >= 17 else {
            throw refused(
                at: index,
                "LayerNormalization needs ONNX operator set 17 or later (17 is the default), got \(graph.opset)")
        }
        try graph.checkRows(of: features, for: self, at: index, "layer normalization")
        // x, y: (batch, features) or (batch, time, features)  weight, bias: (features)
        // y = (x − mean)/√(var + ε) ⊙ weight + bias, each row's mean and biased variance over the last axis
        let w = graph.initializer(graph.parameter(index, path + "weight")), b = graph.initializer(graph.parameter(index, path + "bias"))
        graph.current = graph.add(
            "LayerNormalization", [graph.current, w, b], name: "\(graph.prefix(index, path)).layer_norm",
            [ONNXAttribute(name: "axis", value: .int(-1)), ONNXAttribute(name: "epsilon", value: .float(Float(epsilon)))])
    }
}
