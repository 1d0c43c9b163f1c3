// GELU in ONNX, as the engine's kernel computes it: `x·½(1 + erf(x/√2))`, or with the tanh form's
// `tanh(√(2/π)·(x + 0.044715·x³))` in erf's place, in elementwise nodes (Mul, Erf or Tanh, Add).
//
// The formula rather than opset 20's `Gelu`: the same nodes at every operator set, so that what the
// tests check at one holds at all, and `Gelu` would bring nothing more, ONNX defining it by this
// same formula (its function body). ONNX Runtime 1.32 has no float64 Erf (nor a float64 exact
// `Gelu`, which it expands to Erf): a float64 model with the exact form is valid ONNX that it
// refuses to run; a float32 model, or the tanh form in either precision, runs.
import NeuronCore

extension GELU: ONNXLayer {
    func addNodes(to graph: inout GraphBuilder<Scalar>, index: Int, path: String) throws(ONNXExportError) {
        let prefix = graph.prefix(index, path), x = graph.current
        // x, y: any shape, element by element; `u` is erf's or tanh's value
        let u: String
        switch approximation {
        case .none:
            let scale = graph.constant("\(prefix).inverse_sqrt2", [], [Scalar(0.70710678118654752440)])  // 1/√2
            u = graph.add("Erf", [graph.add("Mul", [x, scale], name: "\(prefix).scaled")], name: "\(prefix).erf")
        case .tanh:
            let c = graph.constant("\(prefix).sqrt_2_over_pi", [], [Scalar(0.79788456080286535588)])  // √(2/π)
            let a = graph.constant("\(prefix).cubic_coefficient", [], [Scalar(0.044715)])
            let square = graph.add("Mul", [x, x], name: "\(prefix).square")
            let cube = graph.add("Mul", [square, x], name: "\(prefix).cube")
            let inner = graph.add("Add", [x, graph.add("Mul", [a, cube], name: "\(prefix).cubic")], name: "\(prefix).inner")
            u = graph.add("Tanh", [graph.add("Mul", [c, inner], name: "\(prefix).argument")], name: "\(prefix).tanh")
        }
        // gate = ½(1 + u), y = x·gate
        let one = graph.constant("\(prefix).one", [], [1]), half = graph.constant("\(prefix).half", [], [Scalar(0.5)])
        let gate = graph.add("Mul", [half, graph.add("Add", [one, u], name: "\(prefix).shifted")], name: "\(prefix).gate")
        graph.current = graph.add("Mul", [x, gate], name: "\(prefix).gelu")
    }
}
