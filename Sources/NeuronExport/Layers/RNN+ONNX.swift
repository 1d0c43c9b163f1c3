// An Elman RNN in ONNX: ONNX's own `RNN` operator, whose default cell (tanh) is the engine's
// `h_t = tanh(W_ih·x_t + b_ih + W_hh·h_{t-1} + b_hh)` term for term (ONNX's Wi, Ri, Wbi, Rbi), from
// the learned `h0` as `initial_h`.
import NeuronCore

extension RNN: ONNXLayer {
    func addNodes(to graph: inout GraphBuilder<Scalar>, index: Int, path: String) throws(ONNXExportError) {
        guard case .sequence(let block, _) = graph.layout else {
            throw refused(at: index, "an RNN reads a sequence (batch, time, features), such as an embedding's")
        }
        // x: (batch, time, inputs)  →  (batch, time, hidden); one gate, so PyTorch's order is ONNX's.
        graph.addRecurrent("RNN", index: index, path: path, hidden: hidden, gateOrder: [0], gates: "")
        graph.layout = .sequence(block: block, features: hidden)
    }
}
