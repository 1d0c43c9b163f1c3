// RMS normalization in ONNX: the formula, `x / √(mean(x²) + ε) ⊙ weight`, over the last axis, at
// every operator set (`RMSNormalization` came only in opset 23). `ReduceMean` takes its axes as an
// attribute up to opset 17 and as an input from 18; ε is a constant of the model's precision.
import NeuronCore

extension RMSNorm: ONNXLayer {
    func addNodes(to graph: inout GraphBuilder<Scalar>, index: Int, path: String) throws(ONNXExportError) {
        try graph.checkRows(of: features, for: self, at: index, "RMS normalization")
        // x, y: (batch, features) or (batch, time, features)  weight: (features)
        let prefix = graph.prefix(index, path)
        let x = graph.current
        let w = graph.initializer(graph.parameter(index, path + "weight"))
        let squares = graph.add("Mul", [x, x], name: "\(prefix).squares")
        let meanSquare: String
        let keep = ONNXAttribute(name: "keepdims", value: .int(1))
        if graph.opset >= 18 {
            meanSquare = graph.add("ReduceMean", [squares, graph.int64s("\(prefix).axes", [-1])], name: "\(prefix).mean_square", [keep])
        } else {
            meanSquare = graph.add("ReduceMean", [squares], name: "\(prefix).mean_square", [ONNXAttribute(name: "axes", value: .ints([-1])), keep])
        }
        let e = graph.constant("\(prefix).epsilon", [], [Scalar(epsilon)])
        let shifted = graph.add("Add", [meanSquare, e], name: "\(prefix).shifted")
        let rms = graph.add("Sqrt", [shifted], name: "\(prefix).rms")
        let normalized = graph.add("Div", [x, rms], name: "\(prefix).normalized")
        graph.current = graph.add("Mul", [normalized, w], name: "\(prefix).scaled")
    }
}
