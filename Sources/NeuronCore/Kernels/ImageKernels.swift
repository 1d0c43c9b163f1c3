// Images, channels last: the unfolding that makes a convolution one matrix product (im2col) and
// its adjoint, max and average pooling forward and backward, and the per-image transpose that
// flattens to channels-first order. The naive definitions of the layers they serve are beside
// the layers (`Naive.conv2dForward`, `Naive.maxPool2d`, `Naive.avgPool2d`).

extension Kernels {
    /// Unfolds every window of a batch of images into a row (im2col), zeros where it overhangs
    /// the border, so that a convolution becomes one matrix product. Row `(n, oy, ox)` holds the
    /// window's pixels in `(ky, kx, channel)` order, the order of the weight's rows.
    ///
    ///     // x: (batch, height, width, channels)  →  columns: (batch · outputHeight · outputWidth, patchSize)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func im2col<T: TensorScalar>(
        _ x: UnsafeBufferPointer<T>, batch: Int, window w: Window2D, into columns: UnsafeMutableBufferPointer<T>
    ) {
        // x: (batch, height, width, channels)  →  columns: (batch · outputHeight · outputWidth, patchSize)
        guard let source = x.baseAddress, var row = columns.baseAddress else { return }
        let c = w.channels, span = w.kernelWidth * c
        for n in 0..<batch {
            let image = source + n * w.inputPixels * c
            for oy in 0..<w.outputHeight {
                for ox in 0..<w.outputWidth {
                    let x0 = ox * w.strideWidth - w.padLeft
                    let inside = x0 >= 0 && x0 + w.kernelWidth <= w.width
                    for ky in 0..<w.kernelHeight {
                        let y = oy * w.strideHeight - w.padTop + ky
                        if y < 0 || y >= w.height {
                            row.update(repeating: 0, count: span)  // a row of the window above or below the image
                        } else if inside {
                            row.update(from: image + (y * w.width + x0) * c, count: span)  // the window's row, contiguous
                        } else {
                            for kx in 0..<w.kernelWidth {
                                let xx = x0 + kx
                                if xx < 0 || xx >= w.width {
                                    (row + kx * c).update(repeating: 0, count: c)
                                } else {
                                    (row + kx * c).update(from: image + (y * w.width + xx) * c, count: c)
                                }
                            }
                        }
                        row += span
                    }
                }
            }
        }
    }

    /// The adjoint of ``im2col(_:batch:window:into:)`` (col2im): each row's entries added back
    /// onto the pixels they were copied from; `x` is overwritten.
    ///
    ///     // columns: (batch · outputHeight · outputWidth, patchSize)  →  x: (batch, height, width, channels)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func col2im<T: TensorScalar>(
        _ columns: UnsafeBufferPointer<T>, batch: Int, window w: Window2D, into x: UnsafeMutableBufferPointer<T>
    ) {
        // columns: (batch · outputHeight · outputWidth, patchSize)  →  x: (batch, height, width, channels)
        guard var row = columns.baseAddress, let target = x.baseAddress else { return }
        Tensor<T>.zero(x)
        let c = w.channels, span = w.kernelWidth * c
        for n in 0..<batch {
            let image = target + n * w.inputPixels * c
            for oy in 0..<w.outputHeight {
                for ox in 0..<w.outputWidth {
                    let x0 = ox * w.strideWidth - w.padLeft
                    for ky in 0..<w.kernelHeight {
                        let y = oy * w.strideHeight - w.padTop + ky
                        if y >= 0 && y < w.height {
                            let from = max(0, -x0) * c, to = (min(w.kernelWidth, w.width - x0)) * c  // the part inside the image
                            let first = (y * w.width + x0) * c  // where the window's row would start (left of the image if x0 < 0)
                            if to > from {
                                // Pointers to the part inside the image, so that the run vectorizes.
                                let target = image + (first + from), source = row + from
                                for i in 0..<(to - from) { target[i] += source[i] }
                            }
                        }
                        row += span
                    }
                }
            }
        }
    }
}

extension Kernels {
    /// The maximum of each window, channel by channel, and where it was (the first, on ties), as
    /// an index into `x`.
    ///
    ///     // x: (batch, height, width, channels)  →  y, argmax: (batch, outputHeight, outputWidth, channels)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func maxPool<T: TensorScalar>(
        _ x: UnsafeBufferPointer<T>, batch: Int, window w: Window2D,
        into y: UnsafeMutableBufferPointer<T>, argmax: UnsafeMutableBufferPointer<Int>
    ) {
        // x: (batch, height, width, channels)  →  y, argmax: (batch, outputHeight, outputWidth, channels)
        // Channels last: a window pixel's channels are contiguous, so each comparison runs along them.
        guard batch > 0, let xs = x.baseAddress, let ys = y.baseAddress, let indices = argmax.baseAddress else { return }
        let c = w.channels
        var o = 0
        for n in 0..<batch {
            let image = n * w.inputPixels * c
            for oy in 0..<w.outputHeight {
                for ox in 0..<w.outputWidth {
                    let corner = image + ((oy * w.strideHeight) * w.width + ox * w.strideWidth) * c
                    // One channel's window at a time, its best value and place held in registers:
                    // which value wins is data, and a branch per element read (the loop with the
                    // window outside and the channels inside) was 6× slower, as slow as a convolution.
                    if w.kernelHeight == 2 && w.kernelWidth == 2 {
                        // The common 2×2 window unrolled: the general loop's bookkeeping cost 4× its comparisons.
                        let below = w.width &* c
                        for ch in 0..<c {
                            let i0 = corner &+ ch, i1 = i0 &+ c, i2 = i0 &+ below, i3 = i2 &+ c
                            var best = xs[i0], at = i0
                            var wins = xs[i1] > best
                            (best, at) = (wins ? xs[i1] : best, wins ? i1 : at)
                            wins = xs[i2] > best
                            (best, at) = (wins ? xs[i2] : best, wins ? i2 : at)
                            wins = xs[i3] > best
                            (best, at) = (wins ? xs[i3] : best, wins ? i3 : at)
                            ys[o &+ ch] = best
                            indices[o &+ ch] = at
                        }
                        o += c
                        continue
                    }
                    for ch in 0..<c {
                        var best = xs[corner &+ ch], at = corner &+ ch
                        for ky in 0..<w.kernelHeight {
                            let row = corner &+ (ky &* w.width) &* c &+ ch
                            for kx in 0..<w.kernelWidth {
                                let i = row &+ kx &* c, value = xs[i], wins = value > best
                                best = wins ? value : best
                                at = wins ? i : at
                            }
                        }
                        ys[o &+ ch] = best
                        indices[o &+ ch] = at
                    }
                    o += c
                }
            }
        }
    }

    /// The adjoint of ``maxPool(_:batch:window:into:argmax:)``: each output's gradient added to
    /// the input it came from; `dx` is overwritten.
    ///
    ///     // dy, argmax: (batch, outputHeight, outputWidth, channels)  →  dx: (batch, height, width, channels)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func maxPoolBackward<T: TensorScalar>(
        _ dy: UnsafeBufferPointer<T>, argmax: UnsafeBufferPointer<Int>, into dx: UnsafeMutableBufferPointer<T>
    ) {
        // dy, argmax: (batch, outputHeight, outputWidth, channels)  →  dx: (batch, height, width, channels)
        Tensor<T>.zero(dx)
        for i in 0..<dy.count { dx[argmax[i]] += dy[i] }  // overlapping windows may pick one input twice
    }
}

extension Kernels {
    /// The mean of each window, channel by channel (every window lies inside the image).
    ///
    ///     // x: (batch, height, width, channels)  →  y: (batch, outputHeight, outputWidth, channels)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func averagePool<T: TensorScalar>(
        _ x: UnsafeBufferPointer<T>, batch: Int, window w: Window2D, into y: UnsafeMutableBufferPointer<T>
    ) {
        // x: (batch, height, width, channels)  →  y: (batch, outputHeight, outputWidth, channels)
        let c = w.channels, scale = 1 / T(w.kernelHeight * w.kernelWidth)
        Tensor<T>.zero(y)
        var o = 0
        for n in 0..<batch {
            let image = n * w.inputPixels * c
            for oy in 0..<w.outputHeight {
                for ox in 0..<w.outputWidth {
                    for ky in 0..<w.kernelHeight {
                        for kx in 0..<w.kernelWidth {
                            let pixel = image + ((oy * w.strideHeight + ky) * w.width + ox * w.strideWidth + kx) * c
                            for ch in 0..<c { y[o + ch] += x[pixel + ch] }
                        }
                    }
                    for ch in 0..<c { y[o + ch] *= scale }
                    o += c
                }
            }
        }
    }

    /// The adjoint of ``averagePool(_:batch:window:into:)``: each output's gradient shared evenly
    /// among its window's pixels; `dx` is overwritten.
    ///
    ///     // dy: (batch, outputHeight, outputWidth, channels)  →  dx: (batch, height, width, channels)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func averagePoolBackward<T: TensorScalar>(
        _ dy: UnsafeBufferPointer<T>, batch: Int, window w: Window2D, into dx: UnsafeMutableBufferPointer<T>
    ) {
        // dy: (batch, outputHeight, outputWidth, channels)  →  dx: (batch, height, width, channels)
        let c = w.channels, scale = 1 / T(w.kernelHeight * w.kernelWidth)
        Tensor<T>.zero(dx)
        var o = 0
        for n in 0..<batch {
            let image = n * w.inputPixels * c
            for oy in 0..<w.outputHeight {
                for ox in 0..<w.outputWidth {
                    for ky in 0..<w.kernelHeight {
                        for kx in 0..<w.kernelWidth {
                            let pixel = image + ((oy * w.strideHeight + ky) * w.width + ox * w.strideWidth + kx) * c
                            for ch in 0..<c { dx[pixel + ch] += dy[o + ch] * scale }
                        }
                    }
                    o += c
                }
            }
        }
    }
}

extension Kernels {
    /// Transposes each of `count` consecutive `rows × columns` matrices (flattening an image to
    /// channels-first order, and back).
    ///
    ///     // x: (count, rows, columns)  →  y: (count, columns, rows)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func transposeEach<T: TensorScalar>(
        _ x: UnsafeBufferPointer<T>, count: Int, rows: Int, columns: Int, into y: UnsafeMutableBufferPointer<T>
    ) {
        // x: (count, rows, columns)  →  y: (count, columns, rows)
        let size = rows * columns
        guard rows > 1, columns > 1 else {
            _ = y.update(fromContentsOf: x)  // a vector's transpose is itself
            return
        }
        for m in 0..<count {
            let base = m * size
            for r in 0..<rows {
                for c in 0..<columns { y[base + c * rows + r] = x[base + r * columns + c] }
            }
        }
    }
}
