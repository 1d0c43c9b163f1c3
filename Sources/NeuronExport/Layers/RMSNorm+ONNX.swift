// RMS normalization in ONNX: the formula, `x / √(mean(x²) + ε) ⊙ weight`, over the last axis, at
// every operator set (`RMSNormalization` came only in opset 23). `ReduceMean` takes its axes as an
// attribute up to opset 17 and as an input from 18; ε is a constant of the model's precision.
import NeuronCore

extension RMSNorm: ONNXLayer {
    func addNodes(to graph: inout GraphBuilder<Scalar>, index: Int, path: String) throws(ONNXExportError) {
        let inputFeatures: Int
        switch graph.layout {
        case .features(let count), .sequence(_, let count): inputFeatures = count
        case .image, .tokens: throw refused(at: index, "RMS normalization takes features or a sequence of them")
        }
        guard inputFeatures == features else {
            throw refused(at: index, "it normalizes \(features) features, but receives \(inputFeatures)")
        }
        // x, y: (batch, features) or (batch, time, features)  weight: (features)
        let prefix = graph.prefix(index, path)
        let x = graph.current
        let w = graph.initializer(graph.parameter(index, path + "weight"))
        let squares = graph.add("Mul", [x, x], name: "\(prefix).squares")
        let meanSquare: String
        let keep = ONNXAttribute(name: "keepdims", value: .int(1))
        if graph.opset >= 18 {
            graph.graph.initializers.append(ONNXTensor("\(prefix).axes", int64s: [-1]))
            meanSquare = graph.add("ReduceMean", [squares, "\(prefix).axes"], name: "\(prefix).mean_square", [keep])
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
