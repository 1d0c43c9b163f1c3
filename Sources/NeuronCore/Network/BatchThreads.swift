// A training pass split over threads (`Network.batchThreads`): the batch is cut into contiguous
// shares of rows; share 0 is computed by the network itself and every other share by a replica (a
// copy of the layers, with its own activations and gradients, reading the network's parameters in
// place), all at once, one thread each; then the shares' gradients are summed, each weighted by its
// part of what the batch's loss is a mean over, which makes them the whole batch's gradients.
//
// Why: on a small model most of a step is not products (GELU's erf, LayerNorm, the softmax, the
// update) and the products are small, so OpenBLAS's second thread helps little (Benchmarks/README.md,
// “Figures behind the code”: batch threads). Two threads each running half the batch,
// products included on one BLAS thread, keep both cores busy through the whole pass.
//
// The same weighting as data parallelism over processes (`MiniBatchTraining.step(share:combine:)`):
// for the sequence loss a share's weight is its counted positions over the batch's, not its rows.
//
// The product threads: each share's products should run on one thread. The count is one for the
// whole process (`BLAS.threadCount`, Neuron's own threads cutting large products into panels:
// `Tensor/ProductThreads.swift`), so it is a setting of the process, made once by whoever owns it
// (the CLI at a run's start, a benchmark per workload) by `BLAS.threadCount(blasThreads:batchThreads:)`;
// a pass never sets it. Results do not depend on it: a product's threads split its rows or columns,
// never the sum over k.
/// The replicas and buffers of a pass split over threads, kept from step to step so that a pass
/// allocates nothing once the first has sized them.
struct BatchSplit<Scalar: TensorScalar>: Sendable {
    /// The networks of shares 1…n−1 (share 0 is the network itself): its layers, without parameters.
    var replicas: [Network<Scalar>] = []
    /// The threads that compute shares 1…n−1.
    var threads: ShareThreads<SharePass<Scalar>>?
    /// Each share's rows of the batch and of its targets.
    var inputs: [Tensor<Scalar>] = []
    var targets: [Tensor<Scalar>] = []
    /// Each share's loss, a mean over what it counts: its rows, or its counted positions.
    var losses: [Scalar] = []
    var counts: [Int] = []
    /// The whole batch's output, the shares' outputs one after another; nil before the first
    /// pass (an empty split is made every pass, and must not allocate a shape).
    var output: Tensor<Scalar>?
    /// Whether ``output`` is the last pass's (the network's own ``Network/output`` is share 0's alone).
    var isOutputCurrent = false
}

extension Network {
    /// ``lossAndGradients(_:targets:inputGradient:)`` with the batch split into ``batchThreads``
    /// shares computed side by side; the checks at the door are done.
    ///
    ///     // x: (batch, inputShape…)  targets: (batch, targetCount)  share s: rows batch·s/n ..< batch·(s+1)/n
    mutating func splitLossAndGradients(_ x: Tensor<Scalar>, targets t: Tensor<Scalar>) -> Scalar {
        let rows = x.shape[0], n = min(batchThreads, rows)
        var split = BatchSplit<Scalar>()
        swap(&split, &self.split)  // borrowed out of `self` (no copy) while `self` computes share 0
        defer { swap(&split, &self.split) }
        prepare(&split, shares: n)
        for s in 0..<n {
            let part = rows * s / n..<rows * (s + 1) / n
            Self.copyRows(part, of: x, into: &split.inputs[s])
            Self.copyRows(part, of: t, into: &split.targets[s])
            if s > 0 { (split.replicas[s - 1].noiseSeed, split.replicas[s - 1].noiseStep) = (noiseSeed, noiseStep) }
        }

        // Every share on its own thread. The products run at the process's BLAS count, which the
        // process sets once (``BLAS/threadCount(blasThreads:batchThreads:)``, one thread each),
        // never this pass.
        let (parameters, inputs, targets, threads) = (self.parameters, split.inputs, split.targets, split.threads!)
        parameters.withUnsafeBufferPointer { p in
            inputs.withUnsafeBufferPointer { inputs in
                targets.withUnsafeBufferPointer { targets in
                    withUnsafeMutablePointer(to: &self) { network in
                        split.replicas.withUnsafeMutableBufferPointer { replicas in
                            split.losses.withUnsafeMutableBufferPointer { losses in
                                threads.run(
                                    SharePass(
                                        shares: n, network: network, replicas: replicas.baseAddress!, inputs: inputs.baseAddress!,
                                        targets: targets.baseAddress!, losses: losses.baseAddress!, parameters: p))
                            }
                        }
                    }
                }
            }
        }

        // The batch's loss and gradients: each share's weighted by its part of the batch.
        var total = 0
        for s in 0..<n {
            split.counts[s] = split.targets[s].withUnsafeBufferPointer { meanCount(targets: $0, rows: split.inputs[s].shape[0]) }
            total += split.counts[s]
        }
        // A batch of padding alone has a loss and gradients of 0 in every share: any weight keeps them so.
        func weight(_ s: Int) -> Scalar { total == 0 ? 0 : Scalar(split.counts[s]) / Scalar(total) }
        var loss = weight(0) * split.losses[0]
        gradients.withUnsafeMutableBufferPointer { g in
            Scalar.blasScal(n: g.count, alpha: weight(0), x: g.baseAddress!)
            for s in 1..<n {
                loss += weight(s) * split.losses[s]
                split.replicas[s - 1].gradients.withUnsafeBufferPointer { Kernels.addScaled($0, by: weight(s), to: g) }
            }
        }
        assembleOutput(&split, rows: rows, shares: n)
        return loss
    }

    /// Sizes the replicas and buffers for `n` shares: a replica is a copy of the layers with
    /// buffers of its own, and no parameters (it reads the network's). Kept when there are enough:
    /// a batch of fewer rows than threads (an epoch's last) leaves the extra ones idle.
    private func prepare(_ split: inout BatchSplit<Scalar>, shares n: Int) {
        guard split.replicas.count < n - 1 else { return }
        var replica = self
        replica.parameters = []
        replica.batchThreads = 1
        replica.gradients = Array(repeating: 0, count: gradients.count)
        split.replicas = Array(repeating: replica, count: n - 1)
        split.threads = ShareThreads(count: n - 1)
        split.inputs = Array(repeating: Tensor(zeros: [0, 0]), count: n)
        split.targets = split.inputs
        split.losses = Array(repeating: 0, count: n)
        split.counts = Array(repeating: 0, count: n)
    }

    /// `share` = the rows `part` of `x`, resized only when its shape changes (a step allocates nothing).
    private static func copyRows(_ part: Range<Int>, of x: Tensor<Scalar>, into share: inout Tensor<Scalar>) {
        resize(&share, rows: part.count, like: x)
        let width = x.count / x.shape[0]
        x.withUnsafeBufferPointer { x in
            share.withUnsafeMutableBufferPointer { share in
                _ = share.update(fromContentsOf: x[part.lowerBound * width..<part.upperBound * width])
            }
        }
    }

    /// `t` resized to `rows` samples of `like`'s shape, the shape array built only when it changes
    /// (a step allocates nothing).
    private static func resize(_ t: inout Tensor<Scalar>, rows: Int, like x: Tensor<Scalar>) {
        guard t.shape.first != rows || !t.shape.dropFirst().elementsEqual(x.shape.dropFirst()) else { return }
        t.resize(to: [rows] + x.shape.dropFirst())
    }

    /// The whole batch's output: share 0's rows (the network's own), then each replica's.
    private func assembleOutput(_ split: inout BatchSplit<Scalar>, rows: Int, shares n: Int) {
        let first = output  // share 0's: ``isOutputCurrent`` is still false here
        var assembled = split.output ?? Tensor(zeros: [0])
        split.output = nil  // the buffer held once, so that writing it does not copy it
        Self.resize(&assembled, rows: rows, like: first)
        assembled.withUnsafeMutableBufferPointer { whole in
            var offset = 0
            for s in 0..<n {
                let part = s == 0 ? first : split.replicas[s - 1].output
                part.withUnsafeBufferPointer { part in
                    _ = UnsafeMutableBufferPointer(rebasing: whole[offset..<offset + part.count]).update(fromContentsOf: part)
                    offset += part.count
                }
            }
        }
        split.output = assembled
        split.isOutputCurrent = true
    }
}

/// One share's forward pass, loss and backward pass, on its own network: the network itself
/// (share 0) or a replica; every share reads the same parameters and writes only its own
/// network and loss, so the shares run at once without locks.
struct SharePass<Scalar: TensorScalar>: ShareWork, @unchecked Sendable {
    /// The pass's shares: the threads of shares beyond them (a batch of fewer rows) stay idle.
    let shares: Int
    let network: UnsafeMutablePointer<Network<Scalar>>
    /// Shares 1…n−1's networks.
    let replicas: UnsafeMutablePointer<Network<Scalar>>
    /// Each share's rows of the batch and of its targets, and its loss.
    let inputs: UnsafePointer<Tensor<Scalar>>
    let targets: UnsafePointer<Tensor<Scalar>>
    let losses: UnsafeMutablePointer<Scalar>
    let parameters: UnsafeBufferPointer<Scalar>

    func run(share s: Int) {
        guard s < shares else { return }
        let share = s == 0 ? network : replicas + (s - 1)
        share.pointee.forwardUnchecked(inputs[s], mode: .training, parameters: parameters, share: s)
        losses[s] = share.pointee.evaluateLoss(targets[s], gradient: true)
        share.pointee.backwardUnchecked(inputs[s], computeInputGradient: false, parameters: parameters)
    }
}
