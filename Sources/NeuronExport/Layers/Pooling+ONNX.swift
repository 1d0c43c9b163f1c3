// The two pools in ONNX: MaxPool and AveragePool over the NCHW image with the layer's window, and
// GlobalAveragePool for an average over the whole image.
import NeuronCore

extension MaxPool2D: ONNXLayer {
    func addNodes(to graph: inout GraphBuilder<Scalar>, index: Int, path: String) throws(ONNXExportError) {
        try graph.addPool("MaxPool", window, of: self, index: index, path: path)
    }
}

extension AvgPool2D: ONNXLayer {
    func addNodes(to graph: inout GraphBuilder<Scalar>, index: Int, path: String) throws(ONNXExportError) {
        if isGlobal, case .image = graph.layout {
            graph.current = graph.add("GlobalAveragePool", [graph.current], name: "\(graph.prefix(index, path)).pool")
            graph.layout = .image(height: 1, width: 1, channels: window.channels)
        } else {
            try graph.addPool("AveragePool", window, of: self, index: index, path: path)
        }
    }
}

extension GraphBuilder {
    /// Adds the pool `op` of `layer`, layer `index` or inside it at `path`, over `window`.
    fileprivate mutating func addPool(
        _ op: String, _ window: Window2D, of layer: some Layer<Scalar>, index: Int, path: String
    ) throws(ONNXExportError) {
        let prefix = prefix(index, path)
        guard case .image = layout else { throw layer.refused(at: index, "pooling needs an image") }
        current = add(
            op, [current], name: "\(prefix).pool",
            [
                ONNXAttribute(name: "kernel_shape", value: .ints([window.kernelHeight, window.kernelWidth])),
                ONNXAttribute(name: "strides", value: .ints([window.strideHeight, window.strideWidth])),
            ])
        layout = .image(height: window.outputHeight, width: window.outputWidth, channels: window.channels)
    }
}
