// A training step whose update runs inside its backward pass (`Network.fusesUpdate`). Plain SGD
// moves each parameter by its own gradient alone, so a layer can be updated as soon as its
// gradient is known, once its input gradient has been computed from the parameters as they were.
// A dense layer goes further: `w ← (1 - lr·λ)·w - lr·xᵀ·dz` is one product (`alpha = -lr`,
// `beta = 1 - lr·λ`) writing into the weights, so the weight gradient is never stored, never
// cleared, and never read again by a separate update pass.
//
// Why: on a network of large dense layers the update and the clearing are the step's largest work
// besides the products. W6 (1024⁴, 3.1M parameters) spent 11% of its step in the update's pass
// over the 12.6 MB of weights and gradients, and more clearing the gradients, one core idle.
//
// Not fused: momentum and Adam (they read and write state per entry: `Optimizer.fusableStep()`
// is nil), clipping (it needs every gradient first), a split batch (the shares' gradients are
// summed first), data parallelism (the gradients are summed across processes first), and shared
// parameters (the tied head's gradient and the embedding's add up before the update).

extension Network {
    /// Whether a training step on `rows` rows would fuse a plain SGD update into its backward pass.
    func fusesUpdate(rows: Int) -> Bool {
        fusesUpdate && !sharesParameters && !splitsBatch(rows: rows, inputGradient: false)
    }

    /// Whether ``lossAndGradients(_:targets:inputGradient:)`` splits a batch of `rows` over ``batchThreads``.
    func splitsBatch(rows: Int, inputGradient: Bool) -> Bool {
        batchThreads > 1 && !inputGradient && rows > 1 && state.isEmpty
    }

    /// Forward (in training mode, drawing the noise of ``noiseStep`` and then advancing it), loss,
    /// and backward with `step` applied to each layer's parameters inside it; the checks at the
    /// door are done. ``gradients`` is scratch space afterwards.
    ///
    ///     // x: (batch, inputShape…)  targets: (batch, targetCount)
    ///
    /// - Returns: the batch's loss before the update.
    @_specialize(where Scalar == Float)  // a step's entry from generic callers, as lossAndGradients
    @_specialize(where Scalar == Double)
    mutating func fusedLossAndUpdate(_ x: Tensor<Scalar>, targets: Tensor<Scalar>, step: SGDStep) -> Scalar {
        // Both buffers are borrowed out of `self` (a swap, no copy) while layers are mutated.
        var parameters: [Scalar] = [], gradients: [Scalar] = []
        swap(&parameters, &self.parameters)
        swap(&gradients, &self.gradients)
        defer {
            swap(&parameters, &self.parameters)
            swap(&gradients, &self.gradients)
        }
        let value = parameters.withUnsafeMutableBufferPointer { p in
            forwardUnchecked(x, mode: .training, parameters: UnsafeBufferPointer(p), share: 0)
            let value = evaluateLoss(targets, gradient: true)
            let dy = lossGradient
            // The fold of `backwardUnchecked`, written out again: a shared method reading the layers
            // and the loss's gradient copied the network for each layer (Benchmarks/README.md,
            // “Figures behind the code”: fused update).
            let outside = BLAS.enterProducts(products)
            defer { BLAS.leaveProducts(outside) }
            gradients.withUnsafeMutableBufferPointer { g in
                for i in layers.indices.reversed() {
                    let input = i == 0 ? x : layers[i - 1].output
                    let outputGradient = i == layers.count - 1 ? dy : layers[i + 1].inputGradient
                    layers[i].backward(
                        input: input, outputGradient: outputGradient,
                        parameters: UnsafeMutableBufferPointer(rebasing: p[layerRanges[i]]),
                        gradients: UnsafeMutableBufferPointer(rebasing: g[layerRanges[i]]),
                        updating: step, offset: layerRanges[i].lowerBound, computeInputGradient: i > 0)
                }
            }
            return value
        }
        noiseStep &+= 1
        return value
    }
}
