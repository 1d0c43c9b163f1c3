// A GRU in ONNX: ONNX's own `GRU` operator with `linear_before_reset = 1`, whose candidate
// `h = tanh(W_h·x + Wb_h + r ⊙ (R_h·h + Rb_h))` is PyTorch's `n` (the default, 0, would apply r
// to the state before the product instead); its default activations (sigmoid for the gates, tanh
// for the candidate) and `H = (1 - z) ⊙ h + z ⊙ H` are the engine's. ONNX stacks the gates z, r, h
// where PyTorch stacks r, z, n: the blocks are reordered in the initializers.
import NeuronCore

extension GRU: ONNXLayer {
    /// ONNX's gate blocks (z, r, h) as PyTorch's (r, z, n) indices.
    static var onnxGateOrder: [Int] { [1, 0, 2] }

    func addNodes(to graph: inout GraphBuilder<Scalar>, index: Int, path: String) throws(ONNXExportError) {
        try addNodes(to: &graph, index: index, path: path, gateOrder: Self.onnxGateOrder)
    }

    /// The GRU's nodes with its gate blocks written in `gateOrder` (ONNX's block `i` is PyTorch's
    /// block `gateOrder[i]`): ``onnxGateOrder`` for the layer's own form; the tests plant a wrong one.
    func addNodes(to graph: inout GraphBuilder<Scalar>, index: Int, path: String, gateOrder: [Int]) throws(ONNXExportError) {
        guard case .sequence(let block, _) = graph.layout else {
            throw refused(at: index, "a GRU reads a sequence (batch, time, features), such as an embedding's")
        }
        // x: (batch, time, inputs)  →  (batch, time, hidden)
        graph.addRecurrent(
            "GRU", index: index, path: path, hidden: hidden, gateOrder: gateOrder, gates: "_zrh",
            attributes: [ONNXAttribute(name: "linear_before_reset", value: .int(1))])
        graph.layout = .sequence(block: block, features: hidden)
    }
}
