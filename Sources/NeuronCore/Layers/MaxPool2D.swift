// Max pooling: each window's largest value, channel by channel; backward sends each output's
// gradient to the one input that won (recorded in forward), the others get none.

/// Max pooling over channels-last images, e.g. `MaxPool2D(26×26×32→13×13×32, 2×2)`; no parameters.
public struct MaxPool2D<Scalar: TensorScalar>: Layer {
    /// The window (no padding: every window lies inside the image).
    public let window: Window2D

    /// What forward keeps for backward; sized when a batch shape is first seen, then reused.
    public struct Cache: Sendable {
        /// `(batch, outputHeight · outputWidth · channels)`.
        public var output = Tensor<Scalar>(zeros: [0, 0])
        /// For each output, the index in the input of the value it took.
        public var argmax: [Int] = []
        /// `dx`, like the input, only when asked for.
        public var inputGradient = Tensor<Scalar>(zeros: [0, 0])
    }

    /// The layer's caches.
    public private(set) var cache = Cache()

    /// Max pooling with a `size` window moving by `stride` (by default, the window's own size).
    /// - Throws: ``NetworkError/invalidLayer(_:reason:)`` when the window does not fit the image
    ///   (a 2×2 pool over a 1×1 map), naming both.
    public init(input: [Int], size: (height: Int, width: Int), stride: (height: Int, width: Int)? = nil) throws(NetworkError) {
        window = try Window2D(
            input: input, kernel: size, stride: stride ?? size, padding: .valid,
            layer: "MaxPool2D(\(imageDescription(input)), \(size.height)×\(size.width))")
    }

    public var description: String {
        "MaxPool2D(\(imageDescription(inputShape))→\(imageDescription(outputShape)), "
            + "\(window.describe(defaultStride: (window.kernelHeight, window.kernelWidth), showPadding: false)))"
    }

    public var inputShape: [Int] { [window.height, window.width, window.channels] }
    public var outputShape: [Int] { [window.outputHeight, window.outputWidth, window.channels] }
    public var parameterShapes: [(name: String, shape: [Int])] { [] }

    public func converted<Other: TensorScalar>(to: Other.Type) -> any Layer<Other> {
        try! MaxPool2D<Other>(
            input: inputShape, size: (window.kernelHeight, window.kernelWidth), stride: (window.strideHeight, window.strideWidth))
    }

    public var output: Tensor<Scalar> { cache.output }
    public var inputGradient: Tensor<Scalar> { cache.inputGradient }
    /// Each output's winner, an `Int`, counted in scalars of this precision.
    public var cacheCount: Int { outputShape.reduce(1) { $0.times($1) }.times(max(1, MemoryLayout<Int>.size / MemoryLayout<Scalar>.size)) }

    public func initialize(
        parameters: UnsafeMutableBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        using generator: inout SeededGenerator
    ) {}

    /// Each window's maximum, and where it was.
    public mutating func forward(
        _ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        mode: LayerMode
    ) {
        // x: (batch, height·width·channels)  →  y, argmax: (batch, outputHeight·outputWidth·channels)
        let batch = x.shape[0], window = window, columns = window.outputPixels * window.channels
        cache.output.resize(rows: batch, columns: columns)
        cache.argmax.resize(to: batch * columns)
        x.withUnsafeBufferPointer { px in
            cache.output.withUnsafeMutableBufferPointer { py in
                cache.argmax.withUnsafeMutableBufferPointer { pa in
                    Kernels.maxPool(px, batch: batch, window: window, into: py, argmax: pa)
                }
            }
        }
    }

    /// `dx[argmax] += dy`; no parameters, so nothing to add to the gradients.
    public mutating func backward(
        input x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>,
        parameters: UnsafeBufferPointer<Scalar>, gradients: UnsafeMutableBufferPointer<Scalar>,
        computeInputGradient: Bool
    ) {
        guard computeInputGradient else { return }
        cache.inputGradient.resize(rows: x.shape[0], columns: window.inputPixels * window.channels)
        dy.withUnsafeBufferPointer { pdy in
            cache.argmax.withUnsafeBufferPointer { pa in
                cache.inputGradient.withUnsafeMutableBufferPointer { pdx in Kernels.maxPoolBackward(pdy, argmax: pa, into: pdx) }
            }
        }
    }
}

extension Naive {
    /// The definition of ``MaxPool2D``: for every sample, output pixel and channel, the largest
    /// input in its window (the first, on ties), and the gradient routed to it.
    ///
    ///     // x: (batch, height, width, channels), dy: (batch, outputHeight, outputWidth, channels)
    ///     // →  y: like dy, dx: like x
    public static func maxPool2d<Scalar>(
        _ x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>?, window: Window2D
    ) -> (output: Tensor<Scalar>, input: Tensor<Scalar>) {
        let (h, wd, c, oh, ow) = (window.height, window.width, window.channels, window.outputHeight, window.outputWidth)
        let batch = x.count / (h * wd * c)
        var y = Tensor<Scalar>(zeros: [batch, oh, ow, c]), dx = Tensor<Scalar>(zeros: x.shape)
        for n in 0..<batch {
            for oy in 0..<oh {
                for ox in 0..<ow {
                    for ch in 0..<c {
                        var best: Int? = nil
                        for ky in 0..<window.kernelHeight {
                            for kx in 0..<window.kernelWidth {
                                let i = ((n * h + oy * window.strideHeight + ky) * wd + ox * window.strideWidth + kx) * c + ch
                                if best == nil || x[i] > x[best!] { best = i }
                            }
                        }
                        let o = ((n * oh + oy) * ow + ox) * c + ch
                        y[o] = x[best!]
                        if let dy { dx[best!] += dy[o] }
                    }
                }
            }
        }
        return (y, dx)
    }
}
