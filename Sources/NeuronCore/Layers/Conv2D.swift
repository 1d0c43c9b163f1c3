// The convolution: im2col unfolds every window of the whole batch into a row, one gemm with the
// weight gives every filter at every output pixel (already channels-last, the next layer's input),
// then the bias and the activation. Backward is the adjoint of each step: the activation's chain
// rule, two more gemms (weight and input side) and a col2im. A 1×1 kernel with stride 1 skips the
// unfolding: the image is its own im2col.

/// A 2-D convolution `y = f(conv(x, w) + b)` over channels-last images, e.g.
/// `Conv2D(28×28×1→26×26×32, 3×3, relu)`.
///
/// Its parameter slice holds the weight `w: (kernelHeight, kernelWidth, inputChannels, filters)`
/// row-major (each filter is a column of the `(patchSize, filters)` matrix the gemm reads), then
/// the bias `b: (filters)`. Checkpoints store the weight in PyTorch's `(filters, inputChannels,
/// kernelHeight, kernelWidth)` instead.
public struct Conv2D<Scalar: TensorScalar>: ActivatedLayer {
    /// The window: input size, kernel, stride, padding and the output size they give.
    public let window: Window2D
    /// Output channels: one per filter.
    public let filters: Int
    /// The non-linearity at the output.
    public let activation: Activation
    /// The padding as asked for (the window holds what it came to).
    public let padding: Padding

    /// What forward keeps for backward, and backward's own buffers; sized when a batch shape is
    /// first seen, then reused.
    public struct Cache: Sendable {
        /// The unfolded input, `(batch · outputPixels, patchSize)` (unused for a pointwise kernel).
        public var columns = Tensor<Scalar>(zeros: [0, 0])
        /// `y = f(z)`: `(batch, outputHeight · outputWidth · filters)`, channels last.
        public var output = Tensor<Scalar>(zeros: [0, 0])
        /// `dz = dy ⊙ f'(z)`, `(batch · outputPixels, filters)`.
        public var preActivationGradient = Tensor<Scalar>(zeros: [0, 0])
        /// `dz·wᵀ`, the gradient of the unfolded input, `(batch · outputPixels, patchSize)`.
        public var columnsGradient = Tensor<Scalar>(zeros: [0, 0])
        /// `dx`, like the input, only when asked for.
        public var inputGradient = Tensor<Scalar>(zeros: [0, 0])
    }

    /// The layer's caches.
    public private(set) var cache = Cache()

    /// A convolution of `filters` filters over images of shape `input = [height, width, channels]`.
    /// - Throws: ``NetworkError/invalidLayer(_:reason:)`` for a window that does not fit the
    ///   image (naming both), sizes below 1, or more weights than can be counted.
    public init(
        input: [Int], filters: Int, kernel: (height: Int, width: Int), stride: (height: Int, width: Int) = (1, 1),
        padding: Padding = .valid, activation: Activation = .identity
    ) throws(NetworkError) {
        let name = "Conv2D(\(imageDescription(input))→\(filters) filters, \(kernel.height)×\(kernel.width))"
        window = try Window2D(input: input, kernel: kernel, stride: stride, padding: padding, layer: name)
        guard filters >= 1, filters <= 1 << 24 else {
            throw .invalidLayer(name, reason: "the number of filters must be between 1 and \(1 << 24), got \(filters)")
        }
        guard heldCount([window.patchSize, filters]) != nil else {
            throw .invalidLayer(name, reason: "\(window.patchSize) × \(filters) weights are more than can be held")
        }
        guard heldCount([window.outputPixels, filters]) != nil else {
            throw .invalidLayer(name, reason: "\(window.outputPixels) × \(filters) outputs per sample are more than can be held")
        }
        self.filters = filters
        self.activation = activation
        self.padding = padding
    }

    public var description: String {
        "Conv2D(\(imageDescription(inputShape))→\(imageDescription(outputShape)), "
            + "\(window.describe(defaultStride: (1, 1), showPadding: true)), \(activation))"
    }

    public var inputShape: [Int] { [window.height, window.width, window.channels] }
    public var outputShape: [Int] { [window.outputHeight, window.outputWidth, filters] }

    public var parameterShapes: [(name: String, shape: [Int])] {
        [("weight", [window.kernelHeight, window.kernelWidth, window.channels, filters]), ("bias", [filters])]
    }

    /// `nn.Conv2d` keeps its weight as `(filters, channels, kh, kw)`; here it is `(kh, kw, channels, filters)`.
    public func pytorchOrder(of tensor: String) -> [Int]? { tensor == "weight" ? [3, 2, 0, 1] : nil }

    /// The filters: a product's matrix.
    public func isDecayed(_ tensor: String) -> Bool { tensor == "weight" }

    public func converted<Other: TensorScalar>(to: Other.Type) -> any Layer<Other> {
        // Sizes were checked when self was built.
        try! Conv2D<Other>(
            input: inputShape, filters: filters, kernel: (window.kernelHeight, window.kernelWidth),
            stride: (window.strideHeight, window.strideWidth), padding: padding, activation: activation)
    }

    public var output: Tensor<Scalar> { cache.output }
    public var inputGradient: Tensor<Scalar> { cache.inputGradient }
    /// The unfolded input and its gradient, `outputPixels × patchSize` each (none for a 1×1 window),
    /// and the pre-activation gradient.
    public var cacheCount: Int {
        (window.isPointwise ? 0 : window.outputPixels.times(window.patchSize).times(2)).adding(outputShape.reduce(1) { $0.times($1) })
    }

    /// As ``Dense``, with PyTorch's fans for a convolution (`fanIn = kh·kw·in`, `fanOut = kh·kw·filters`):
    /// He uniform for relu, Glorot uniform otherwise; zero biases.
    public func initialize(
        parameters: UnsafeMutableBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        using generator: inout SeededGenerator
    ) {
        let area = Double(window.kernelHeight * window.kernelWidth)
        let fanIn = area * Double(window.channels), fanOut = area * Double(filters)
        let limit = activation == .relu ? (6 / fanIn).squareRoot() : (6 / (fanIn + fanOut)).squareRoot()
        let weights = window.patchSize * filters
        for i in 0..<weights { parameters[i] = Scalar(generator.uniform(-limit, limit)) }
        for i in weights..<weights + filters { parameters[i] = 0 }
    }

    // MARK: Forward

    /// Runs the layer on a batch: `y = f(im2col(x)·w + b)`.
    public mutating func forward(
        _ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        mode: LayerMode
    ) {
        // x: (batch, height·width·channels)  columns: (rows, patch)  w: (patch, filters)  y: (rows, filters)
        // with rows = batch · outputPixels
        let batch = x.shape[0], window = window, filters = filters, patch = window.patchSize
        let rows = batch * window.outputPixels
        cache.output.resize(rows: batch, columns: window.outputPixels * filters)
        if !window.isPointwise {
            cache.columns.resize(rows: rows, columns: patch)
            x.withUnsafeBufferPointer { px in
                cache.columns.withUnsafeMutableBufferPointer { pc in Kernels.im2col(px, batch: batch, window: window, into: pc) }
            }
        }
        let columns = window.isPointwise ? x : cache.columns
        columns.withUnsafeBufferPointer { pc in
            cache.output.withUnsafeMutableBufferPointer { py in
                // y = columns·w
                Scalar.blasGemm(
                    transposeA: false, transposeB: false, m: rows, n: filters, k: patch,
                    alpha: 1, a: pc.baseAddress!, lda: patch, b: parameters.baseAddress!, ldb: filters,
                    beta: 0, c: py.baseAddress!, ldc: filters)
                // y += b, then y = f(y)
                Kernels.addBias(UnsafeBufferPointer(rebasing: parameters[patch * filters..<patch * filters + filters]), thenActivate: activation, py)
            }
        }
    }

    // MARK: Backward

    /// Adds `dw += im2col(x)ᵀ·dz` and `db += Σ dz`, with `dz = dy ⊙ f'(z)`, and `dx = col2im(dz·wᵀ)` when asked.
    public mutating func backward(
        input x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>,
        parameters: UnsafeBufferPointer<Scalar>, gradients: UnsafeMutableBufferPointer<Scalar>,
        computeInputGradient: Bool
    ) {
        // dy, dz: (rows, filters)  columns, dcolumns: (rows, patch)  dw: (patch, filters)  db: (filters)  dx: like x
        let batch = x.shape[0], window = window, filters = filters, patch = window.patchSize, activation = activation
        let rows = batch * window.outputPixels
        cache.preActivationGradient.resize(rows: rows, columns: filters)
        cache.output.withUnsafeBufferPointer { py in
            dy.withUnsafeBufferPointer { pdy in
                cache.preActivationGradient.withUnsafeMutableBufferPointer { pdz in
                    // dz = dy ⊙ f'(z), from the saved output
                    Kernels.activationBackward(activation, output: py, gradient: pdy, into: pdz)
                }
            }
        }
        let columns = window.isPointwise ? x : cache.columns
        columns.withUnsafeBufferPointer { pc in
            cache.preActivationGradient.withUnsafeBufferPointer { pdz in
                // dw += columnsᵀ·dz  (beta 1: backward adds into the gradient buffer)
                Scalar.blasGemm(
                    transposeA: true, transposeB: false, m: patch, n: filters, k: rows,
                    alpha: 1, a: pc.baseAddress!, lda: patch, b: pdz.baseAddress!, ldb: filters,
                    beta: 1, c: gradients.baseAddress!, ldc: filters)
                // db += Σ over every output pixel of dz
                Kernels.addColumnSums(pdz, to: UnsafeMutableBufferPointer(rebasing: gradients[patch * filters..<patch * filters + filters]))
            }
        }
        guard computeInputGradient else { return }
        cache.inputGradient.resize(rows: batch, columns: window.inputPixels * window.channels)
        if window.isPointwise {
            cache.preActivationGradient.withUnsafeBufferPointer { pdz in
                cache.inputGradient.withUnsafeMutableBufferPointer { pdx in
                    // dx = dz·wᵀ: the unfolded input is the input
                    Scalar.blasGemm(
                        transposeA: false, transposeB: true, m: rows, n: patch, k: filters,
                        alpha: 1, a: pdz.baseAddress!, lda: filters, b: parameters.baseAddress!, ldb: filters,
                        beta: 0, c: pdx.baseAddress!, ldc: patch)
                }
            }
            return
        }
        cache.columnsGradient.resize(rows: rows, columns: patch)
        cache.preActivationGradient.withUnsafeBufferPointer { pdz in
            cache.columnsGradient.withUnsafeMutableBufferPointer { pdc in
                // dcolumns = dz·wᵀ
                Scalar.blasGemm(
                    transposeA: false, transposeB: true, m: rows, n: patch, k: filters,
                    alpha: 1, a: pdz.baseAddress!, lda: filters, b: parameters.baseAddress!, ldb: filters,
                    beta: 0, c: pdc.baseAddress!, ldc: patch)
            }
        }
        cache.columnsGradient.withUnsafeBufferPointer { pdc in
            cache.inputGradient.withUnsafeMutableBufferPointer { pdx in
                // dx = col2im(dcolumns): each window's entries added back where they came from
                Kernels.col2im(pdc, batch: batch, window: window, into: pdx)
            }
        }
    }
}

// MARK: The definitions

extension Naive {
    /// The definition of ``Conv2D``'s forward pass: for every sample, output pixel and filter, the
    /// sum over the window and the channels of `x · w`, reading zero outside the image.
    ///
    ///     // x: (batch, height, width, channels)  w: (kh, kw, channels, filters)  b: (filters)
    ///     // →  z, y: (batch, outputHeight, outputWidth, filters)
    public static func conv2dForward<Scalar>(
        _ x: Tensor<Scalar>, weight w: Tensor<Scalar>, bias b: Tensor<Scalar>, window: Window2D, activation: Activation
    ) -> (preActivation: Tensor<Scalar>, output: Tensor<Scalar>) {
        let (h, wd, c) = (window.height, window.width, window.channels)
        let (kh, kw, f) = (window.kernelHeight, window.kernelWidth, w.shape[3])
        let (oh, ow) = (window.outputHeight, window.outputWidth)
        let batch = x.count / (h * wd * c)
        var z = Tensor<Scalar>(zeros: [batch, oh, ow, f]), y = z
        for n in 0..<batch {
            for oy in 0..<oh {
                for ox in 0..<ow {
                    for filter in 0..<f {
                        var sum = b[filter]
                        for ky in 0..<kh {
                            for kx in 0..<kw {
                                let iy = oy * window.strideHeight + ky - window.padTop
                                let ix = ox * window.strideWidth + kx - window.padLeft
                                guard iy >= 0, iy < h, ix >= 0, ix < wd else { continue }
                                for ch in 0..<c {
                                    sum += x[((n * h + iy) * wd + ix) * c + ch] * w[((ky * kw + kx) * c + ch) * f + filter]
                                }
                            }
                        }
                        let o = ((n * oh + oy) * ow + ox) * f + filter
                        z[o] = sum
                        y[o] = Naive.activation(activation, sum)
                    }
                }
            }
        }
        return (z, y)
    }

    /// The definition of ``Conv2D``'s backward pass from the pre-activation `z`: with
    /// `dz = dy ⊙ f'(z)`, every product `x · w` of the forward sum sends `dz · x` to the weight and
    /// `dz · w` to the input; `db = Σ dz`.
    public static func conv2dBackward<Scalar>(
        _ x: Tensor<Scalar>, weight w: Tensor<Scalar>, preActivation z: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>,
        window: Window2D, activation: Activation
    ) -> (weight: Tensor<Scalar>, bias: Tensor<Scalar>, input: Tensor<Scalar>) {
        let (h, wd, c) = (window.height, window.width, window.channels)
        let (kh, kw, f) = (window.kernelHeight, window.kernelWidth, w.shape[3])
        let (oh, ow) = (window.outputHeight, window.outputWidth)
        let batch = x.count / (h * wd * c)
        var dw = Tensor<Scalar>(zeros: w.shape), db = Tensor<Scalar>(zeros: [f]), dx = Tensor<Scalar>(zeros: x.shape)
        for n in 0..<batch {
            for oy in 0..<oh {
                for ox in 0..<ow {
                    for filter in 0..<f {
                        let o = ((n * oh + oy) * ow + ox) * f + filter
                        let dz = dy[o] * activationDerivative(activation, z[o])
                        db[filter] += dz
                        for ky in 0..<kh {
                            for kx in 0..<kw {
                                let iy = oy * window.strideHeight + ky - window.padTop
                                let ix = ox * window.strideWidth + kx - window.padLeft
                                guard iy >= 0, iy < h, ix >= 0, ix < wd else { continue }
                                for ch in 0..<c {
                                    let i = ((n * h + iy) * wd + ix) * c + ch, k = ((ky * kw + kx) * c + ch) * f + filter
                                    dw[k] += dz * x[i]
                                    dx[i] += dz * w[k]
                                }
                            }
                        }
                    }
                }
            }
        }
        return (dw, db, dx)
    }
}
