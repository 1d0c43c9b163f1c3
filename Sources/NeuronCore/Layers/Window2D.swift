// The geometry every image layer shares: a window sliding over a channels-last image. A
// convolution's kernel and a pool's window are both one; the image kernels (im2col, col2im,
// the pools) read it instead of a long list of sizes.
//
// Images are channels-last throughout the engine: one sample of shape (height, width, channels)
// is stored with the channels of a pixel next to each other, and a batch adds a leading dimension
// (NHWC). Measured on this machine (Benchmarks, "layout" rows): with channels last, a convolution
// is one gemm for the whole batch whose product is already the next layer's input, while
// channels-first needs a gemm per sample (or a transpose of the product); see the README.

/// How a window is padded at the image's borders (zeros outside the image).
public enum Padding: Sendable, Equatable, CustomStringConvertible {
    /// No padding: the window stays inside the image.
    case valid
    /// Enough padding that the output is `ceil(input / stride)` along each axis, split evenly and
    /// the odd one at the bottom and right (TensorFlow's rule; with stride 1 and an odd kernel,
    /// PyTorch's `padding='same'`).
    case same
    /// `rows` zeros above and below, `columns` zeros left and right (PyTorch's `padding=(rows, columns)`).
    case explicit(rows: Int, columns: Int)

    public var description: String {
        switch self {
        case .valid: "valid"
        case .same: "same"
        case let .explicit(rows, columns): rows == columns ? "padding \(rows)" : "padding \(rows)×\(columns)"
        }
    }
}

/// A window of `kernelHeight × kernelWidth` pixels sliding over a `height × width × channels`
/// image with the given strides and padding, and the output size that gives.
public struct Window2D: Sendable, Equatable {
    /// The input image, per sample: (height, width, channels).
    public let height: Int, width: Int, channels: Int
    /// The window's extent.
    public let kernelHeight: Int, kernelWidth: Int
    /// How far the window moves between outputs.
    public let strideHeight: Int, strideWidth: Int
    /// Zeros added at each border.
    public let padTop: Int, padLeft: Int, padBottom: Int, padRight: Int
    /// The output's extent: `(height + padTop + padBottom - kernelHeight) / strideHeight + 1`, and across.
    public let outputHeight: Int, outputWidth: Int

    /// The geometry of a window over an image.
    /// - Parameters:
    ///   - input: one sample's shape, `[height, width, channels]`.
    ///   - kernel: the window's extent.
    ///   - stride: how far the window moves between outputs.
    ///   - padding: the zeros added at the borders.
    ///   - layer: the layer's description, for the error.
    /// - Throws: ``NetworkError/invalidLayer(_:reason:)`` for an extent, stride or padding out of
    ///   range, or a window that does not fit the (padded) image, naming the shapes.
    public init(
        input: [Int], kernel: (height: Int, width: Int), stride: (height: Int, width: Int), padding: Padding,
        layer: String
    ) throws(NetworkError) {
        guard input.count == 3, input.allSatisfy({ $0 >= 1 }) else {
            throw .invalidLayer(layer, reason: "takes images of shape (height, width, channels), each at least 1, got \(TensorError.format(input))")
        }
        guard kernel.height >= 1, kernel.width >= 1 else {
            throw .invalidLayer(layer, reason: "the window must be at least 1×1, got \(kernel.height)×\(kernel.width)")
        }
        guard stride.height >= 1, stride.width >= 1 else {
            throw .invalidLayer(layer, reason: "the stride must be at least 1, got \(stride.height)×\(stride.width)")
        }
        // Sizes come from configs: refuse what cannot be counted before multiplying anything.
        let limit = 1 << 24
        guard (input + [kernel.height, kernel.width, stride.height, stride.width]).allSatisfy({ $0 <= limit }) else {
            throw .invalidLayer(layer, reason: "extents above \(limit) are not supported")
        }
        let (height, width, channels) = (input[0], input[1], input[2])
        let pads: (top: Int, left: Int, bottom: Int, right: Int)
        switch padding {
        case .valid:
            pads = (0, 0, 0, 0)
        case .same:
            func split(_ size: Int, _ k: Int, _ s: Int) -> (Int, Int) {
                let out = (size + s - 1) / s
                let total = max((out - 1) * s + k - size, 0)
                return (total / 2, total - total / 2)
            }
            let (top, bottom) = split(height, kernel.height, stride.height)
            let (left, right) = split(width, kernel.width, stride.width)
            pads = (top, left, bottom, right)
        case let .explicit(rows, columns):
            guard rows >= 0, columns >= 0, rows <= limit, columns <= limit else {
                throw .invalidLayer(layer, reason: "padding must be between 0 and \(limit), got \(rows)×\(columns)")
            }
            guard rows < kernel.height, columns < kernel.width else {
                throw .invalidLayer(
                    layer, reason: "padding \(rows)×\(columns) must be smaller than the \(kernel.height)×\(kernel.width) window")
            }
            pads = (rows, columns, rows, columns)
        }
        let paddedHeight = height + pads.top + pads.bottom, paddedWidth = width + pads.left + pads.right
        guard kernel.height <= paddedHeight, kernel.width <= paddedWidth else {
            let padded = pads == (0, 0, 0, 0) ? "" : " (\(paddedHeight)×\(paddedWidth) padded)"
            throw .invalidLayer(
                layer,
                reason: "a \(kernel.height)×\(kernel.width) window does not fit its \(height)×\(width) input\(padded): "
                    + "input shape \(TensorError.format(input))")
        }
        outputHeight = (paddedHeight - kernel.height) / stride.height + 1
        outputWidth = (paddedWidth - kernel.width) / stride.width + 1
        // Every count a buffer is sized by must fit an Int: a shape past that is an error here,
        // not a trap in a later multiplication.
        for factors in [[height, width, channels], [kernel.height, kernel.width, channels], [outputHeight, outputWidth, channels]]
        where heldCount(factors) == nil {
            throw .invalidLayer(layer, reason: "\(factors.map(String.init).joined(separator: " × ")) elements are more than can be held")
        }
        self.height = height
        self.width = width
        self.channels = channels
        (kernelHeight, kernelWidth) = kernel
        (strideHeight, strideWidth) = stride
        (padTop, padLeft, padBottom, padRight) = pads
    }

    /// Pixels per sample going in and coming out (per channel).
    public var inputPixels: Int { height * width }
    public var outputPixels: Int { outputHeight * outputWidth }
    /// One im2col row: the window's pixels times the channels, `kernelHeight · kernelWidth · channels`.
    public var patchSize: Int { kernelHeight * kernelWidth * channels }

    /// Whether the window is one pixel that visits every pixel once (a 1×1 kernel, stride 1, no
    /// padding): im2col would copy the image unchanged, so a convolution reads the image itself.
    public var isPointwise: Bool {
        kernelHeight == 1 && kernelWidth == 1 && strideHeight == 1 && strideWidth == 1
            && padTop == 0 && padLeft == 0 && padBottom == 0 && padRight == 0
    }

    /// `3×3, stride 2, same`: the parts a layer's description shows (stride and padding only when not the default).
    func describe(defaultStride: (Int, Int), showPadding: Bool) -> String {
        var parts = ["\(kernelHeight)×\(kernelWidth)"]
        if (strideHeight, strideWidth) != defaultStride {
            parts.append(strideHeight == strideWidth ? "stride \(strideHeight)" : "stride \(strideHeight)×\(strideWidth)")
        }
        if showPadding, (padTop, padLeft, padBottom, padRight) != (0, 0, 0, 0) {
            parts.append(
                padTop == padBottom && padLeft == padRight && padTop == padLeft
                    ? "padding \(padTop)" : "padding \(padTop),\(padLeft),\(padBottom),\(padRight)")
        }
        return parts.joined(separator: ", ")
    }
}

/// `28×28×1`: an image shape as layer descriptions show it.
func imageDescription(_ shape: [Int]) -> String { shape.map(String.init).joined(separator: "×") }

extension Array where Element == Int {
    /// Resizes to `count` keeping the capacity, as ``Tensor/resize(to:)`` does: a buffer sized for
    /// the largest batch serves a smaller one without allocating. Contents are unspecified afterwards.
    mutating func resize(to count: Int) {
        if count < self.count {
            removeLast(self.count - count)
        } else if count > self.count {
            append(contentsOf: repeatElement(0, count: count - self.count))
        }
    }
}
