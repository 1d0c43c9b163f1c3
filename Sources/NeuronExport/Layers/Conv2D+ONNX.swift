// A convolution in ONNX: one Conv over the NCHW image, its weight already in ONNX's (filters,
// channels, kh, kw) as the checkpoint stores it, then its activation.
import NeuronCore

extension Conv2D: ONNXLayer {
    func addNodes(to graph: inout GraphBuilder<Scalar>, index: Int, path: String) throws(ONNXExportError) {
        let prefix = graph.prefix(index, path)
        guard case .image = graph.layout else { throw refused(at: index, "a convolution needs an image") }
        let w = graph.initializer(graph.parameter(index, path + "weight")), b = graph.initializer(graph.parameter(index, path + "bias"))
        graph.current = graph.add(
            "Conv", [graph.current, w, b], name: "\(prefix).conv",
            [
                ONNXAttribute(name: "kernel_shape", value: .ints([window.kernelHeight, window.kernelWidth])),
                ONNXAttribute(name: "pads", value: .ints([window.padTop, window.padLeft, window.padBottom, window.padRight])),
                ONNXAttribute(name: "strides", value: .ints([window.strideHeight, window.strideWidth])),
            ])
        graph.addActivation(activation, prefix: prefix)
        graph.layout = .image(height: window.outputHeight, width: window.outputWidth, channels: filters)
    }
}
