// A network is a fold over its layers: forward folds left to right, backward right to left.
// All parameters live in one contiguous buffer and all gradients in another of the same layout;
// each layer sees its slice, and an optimizer sees only the two flat buffers.

/// Where one parameter tensor lives in a network's flat buffer, e.g. `layers.0.weight`.
public struct ParameterTensor: Sendable, Equatable, Codable, CustomStringConvertible {
    /// The layer's index in the network.
    public var layer: Int
    /// The tensor's name within its layer: `weight` or `bias`.
    public var tensor: String
    /// The tensor's shape.
    public var shape: [Int]
    /// The first element's index in the flat buffer.
    public var offset: Int
    /// The order of its dimensions in PyTorch's module (see ``Layer/pytorchOrder(of:)``); nil
    /// when it is this layout.
    public var pytorchOrder: [Int]? = nil
    /// Whether weight decay applies to it when an optimizer decays matrices only (``Layer/isDecayed(_:)``).
    public var isDecayed = false
    /// The number of elements.
    public var count: Int { shape.reduce(1, *) }
    /// The elements' indices in the flat buffer.
    public var range: Range<Int> { offset..<offset + count }
    /// `layers.0.weight`: the name checkpoints use.
    public var name: String { "layers.\(layer).\(tensor)" }
    public var description: String { "\(name) \(TensorError.format(shape))" }
}

/// Layers in sequence with a loss at the end, e.g. `Network[Dense(784→256, tanh), Dense(256→10, softmax)]`.
///
/// With ``Loss/softmaxCrossEntropy`` the last layer's output are the logits and the network's
/// ``output`` is their softmax: the loss head applies it, fused with the loss. With
/// ``Loss/sequenceCrossEntropy`` the same holds at every position of a sequence.
public struct Network<Scalar: TensorScalar>: Sendable, CustomStringConvertible {
    /// The layers, input side first.
    public internal(set) var layers: [any Layer<Scalar>]
    /// The loss at the output.
    public let loss: Loss
    /// Every parameter, layer after layer, each layer's tensors in its ``Layer/parameterShapes`` order.
    public var parameters: [Scalar]
    /// The gradient of the last batch's loss with respect to each entry of ``parameters``.
    public internal(set) var gradients: [Scalar]
    /// Every layer's non-trainable state (running statistics), in ``Layer/stateShapes`` order:
    /// saved in checkpoints, never seen by an optimizer.
    public var state: [Scalar]
    /// Where each parameter tensor lives in ``parameters`` and ``gradients``.
    public let parameterTensors: [ParameterTensor]
    /// Where each state tensor lives in ``state``.
    public let stateTensors: [ParameterTensor]
    /// Each layer's slice of the parameter and gradient buffers, and of the state buffer.
    let layerRanges: [Range<Int>], stateRanges: [Range<Int>]
    /// The softmax of the last layer's logits (the cross-entropies only); sized when a batch shape is first seen.
    private var probabilities = Tensor<Scalar>(zeros: [0, 0])
    /// The loss's gradient, the start of backward; sized when a batch shape is first seen.
    var lossGradient = Tensor<Scalar>(zeros: [0, 0])
    /// The seed of every training pass's random draws (dropout masks): the seed of
    /// ``initialize(seed:)``, so a run's one recorded seed names them too.
    public var noiseSeed: UInt64 = 0
    /// How many training passes have drawn noise: each ``lossAndGradients(_:targets:inputGradient:)``
    /// draws layer `i`'s with the key of `(noiseSeed, noiseStep, i)`, then advances it. Saved with a
    /// run, so that a resumed run draws the masks it would have drawn.
    public var noiseStep: UInt64 = 0
    /// The threads a training pass splits its batch over (``lossAndGradients(_:targets:inputGradient:)``):
    /// 1 (the default) computes the batch whole; `n > 1` cuts it into `n` shares of rows computed
    /// side by side, each by its own copy of the layers, their gradients summed (see
    /// `Network/BatchThreads.swift`). Set the process's BLAS threads once by
    /// ``BLAS/threadCount(blasThreads:batchThreads:)`` (one thread per product when split): a pass
    /// never changes that process-wide count. The numbers then differ from one
    /// thread's by rounding alone, and are the same on every machine for the same `n`. A network
    /// with state (batch normalization, whose statistics are the whole batch's) computes on one thread.
    public var batchThreads = 1 {
        didSet { batchThreads = max(1, batchThreads) }
    }
    /// The operands of this network's matrix products: ``ProductPrecision/full`` (the default), or
    /// ``ProductPrecision/bf16`` for a Float network's products on bfloat16 operands, summed in Float,
    /// in every forward and backward pass (training and evaluation alike; decoding position by
    /// position stays in Float). Set `.bf16` only where ``BLAS/bf16Refusal`` is nil: elsewhere each
    /// product falls back to Float and is counted in ``BLAS/bf16Fallbacks``. The parameters,
    /// gradients and every other computation stay in the network's scalar type.
    public var products = ProductPrecision.full
    /// The replicas and buffers of a pass split over threads; empty until the first one.
    var split = BatchSplit<Scalar>()
    /// Whether a training step with plain SGD and no clipping (``trainStep(_:targets:optimizer:maximumGradientNorm:)``,
    /// ``MiniBatchTraining/step()``) applies the update inside its backward pass, each layer's as
    /// soon as its gradient is known, a dense layer's in its weight gradient's product (see
    /// `Network/FusedUpdate.swift`). True by default. ``gradients`` is then not the step's:
    /// set it to false to read them after a step, or call ``lossAndGradients(_:targets:inputGradient:)``.
    /// The numbers differ from an update after backward by rounding alone.
    public var fusesUpdate = true
    /// Whether a layer computes with an earlier layer's parameters (``ParameterSharing``), whose
    /// update must wait for both gradients: such a network never fuses its update.
    let sharesParameters: Bool

    /// A network of the given layers, parameters all zero (see ``initialize(seed:)``).
    /// - Throws: ``NetworkError`` when a layer's output shape is not the next one's input shape
    ///   (naming both layers and shapes), when a softmax is not the last layer, when softmax
    ///   and cross-entropy do not come together, when a layer that reads token indices
    ///   (``TokenInput``) is not the first, when ``Loss/sequenceCrossEntropy`` does not follow
    ///   logits of shape `[time, vocabulary]` (an identity activation, or none), or when a
    ///   ``ParameterSharing`` layer names a layer that is not earlier or does not hold the tensors it expects.
    public init(_ layers: [any Layer<Scalar>], loss: Loss) throws(NetworkError) {
        guard !layers.isEmpty else { throw .invalidLayer("Network[]", reason: "a network needs at least one layer") }
        for (i, (a, b)) in zip(layers, layers.dropFirst()).enumerated() where a.outputShape != b.inputShape {
            throw .layersDoNotChain(
                index: i, layer: a.description, outputShape: a.outputShape, next: b.description, inputShape: b.inputShape)
        }
        if let i = layers.indices.dropFirst().first(where: { layers[$0] is any TokenInput }) {
            throw .invalidLayer(
                "layer \(i) \(layers[i])", reason: "it reads token indices: only a network's first layer can, where the network checks them")
        }
        let activations = layers.map { ($0 as? any ActivatedLayer)?.activation }
        if let i = activations.dropLast().firstIndex(of: .softmax) {
            throw .invalidLayer("layer \(i) \(layers[i])", reason: "softmax is only allowed at the output layer, fused with softmaxCrossEntropy")
        }
        let last = layers[layers.count - 1]
        switch (loss, activations.last!) {
        case (.softmaxCrossEntropy, .softmax?), (.halfSquaredError, .tanh?), (.halfSquaredError, .sigmoid?),
            (.halfSquaredError, .relu?), (.halfSquaredError, .identity?), (.halfSquaredError, nil),
            (.sequenceCrossEntropy, .identity?), (.sequenceCrossEntropy, nil):
            break
        case (.softmaxCrossEntropy, _):
            throw .lossMismatch("softmaxCrossEntropy needs a softmax output layer, got \(last)")
        case (.halfSquaredError, .softmax?):
            throw .lossMismatch("a softmax output needs the softmaxCrossEntropy loss, got halfSquaredError")
        case (.sequenceCrossEntropy, _?):
            throw .lossMismatch(
                "sequenceCrossEntropy takes logits: the last layer's activation must be identity (the loss head applies the softmax), got \(last)")
        }
        if loss == .sequenceCrossEntropy, last.outputShape.count != 2 {
            throw .lossMismatch(
                "sequenceCrossEntropy needs logits of shape [time, vocabulary] per sample, but the last layer \(last) gives \(last.outputShape)")
        }
        // Counted with overflow checks: layer sizes come from configs, and a total past Int.max must
        // be an error rather than a trap.
        func lay(_ shapes: (any Layer<Scalar>) -> [(name: String, shape: [Int])]) throws(NetworkError) -> ([ParameterTensor], [Range<Int>]) {
            var tensors: [ParameterTensor] = [], ranges: [Range<Int>] = []
            var offset = 0
            for (i, layer) in layers.enumerated() {
                let start = offset
                for (name, shape) in shapes(layer) {
                    tensors.append(
                        ParameterTensor(
                            layer: i, tensor: name, shape: shape, offset: offset, pytorchOrder: layer.pytorchOrder(of: name),
                            isDecayed: layer.isDecayed(name)))
                    var count = 1
                    for extent in shape {
                        let (product, overflow) = count.multipliedReportingOverflow(by: extent)
                        guard !overflow else {
                            throw .invalidLayer("layer \(i) \(layer)", reason: "its \(name) has more elements than can be counted")
                        }
                        count = product
                    }
                    let (end, overflow) = offset.addingReportingOverflow(count)
                    guard !overflow else { throw .invalidLayer("layer \(i) \(layer)", reason: "the network has more parameters than can be counted") }
                    offset = end
                }
                ranges.append(start..<offset)
            }
            return (tensors, ranges)
        }
        self.layers = layers
        self.loss = loss
        inputShape = layers[0].inputShape
        outputShape = last.outputShape
        outputCount = outputShape.reduce(1, *)
        // A class index per position for the sequence loss, whose softmax runs over each position's vocabulary.
        (targetCount, softmaxColumns) = loss == .sequenceCrossEntropy ? (outputShape[0], outputShape[1]) : (outputCount, outputCount)
        tokenVocabulary = (layers[0] as? any TokenInput)?.vocabulary
        var (tensors, ranges) = try lay(\.parameterShapes)
        // A layer that computes with an earlier layer's parameters is handed that layer's slice.
        for (i, layer) in layers.enumerated() {
            guard let sharing = layer as? any ParameterSharing<Scalar> else { continue }
            let j = sharing.sharedLayer
            guard j < i else {
                throw .invalidLayer("layer \(i) \(layer)", reason: "it uses layer \(j)'s parameters, but only an earlier layer's can be shared")
            }
            let held = layers[j].parameterShapes, expected = sharing.sharedShapes
            guard held.map(\.name) == expected.map(\.name), held.map(\.shape) == expected.map(\.shape) else {
                func list(_ shapes: [(name: String, shape: [Int])]) -> String {
                    shapes.isEmpty ? "none" : shapes.map { "\($0.name) \(TensorError.format($0.shape))" }.joined(separator: ", ")
                }
                throw .invalidLayer(
                    "layer \(i) \(layer)", reason: "it uses layer \(j)'s \(list(expected)), but layer \(j) \(layers[j]) holds \(list(held))")
            }
            ranges[i] = ranges[j]
        }
        (parameterTensors, layerRanges) = (tensors, ranges)
        sharesParameters = layers.contains { $0 is any ParameterSharing<Scalar> }
        (stateTensors, stateRanges) = try lay(\.stateShapes)
        // The last layer's range ends the buffer unless it shares an earlier layer's.
        parameters = Array(repeating: 0, count: layerRanges.map(\.upperBound).max()!)
        gradients = parameters
        state = Array(repeating: 0, count: stateRanges.last!.upperBound)
    }

    /// A network of dense layers, initialised from `seed`.
    /// - Parameters:
    ///   - featureCount: features per sample (the first layer's inputs).
    ///   - layers: units and activation of each dense layer, input side first.
    ///   - loss: the loss at the output.
    ///   - seed: the seed of the initial weights (Glorot/He, see ``Dense/initialize(parameters:state:using:)``).
    /// - Throws: ``NetworkError`` for a size below 1 or an invalid softmax/loss pairing.
    public init(features featureCount: Int, layers: [(units: Int, activation: Activation)], loss: Loss, seed: UInt64) throws(NetworkError) {
        var built: [any Layer<Scalar>] = []
        var inputs = featureCount
        for (units, activation) in layers {
            built.append(try Dense<Scalar>(inputs, units, activation: activation))
            inputs = units
        }
        try self.init(built, loss: loss)
        initialize(seed: seed)
    }

    /// `Network[Dense(784→256, tanh), Dense(256→10, softmax)]`.
    public var description: String { "Network[" + layers.map(\.description).joined(separator: ", ") + "]" }

    /// The shape of one sample going in.
    public let inputShape: [Int]
    /// The shape of one sample's output.
    public let outputShape: [Int]
    /// Features per sample the network takes (the product of ``inputShape``).
    public var featureCount: Int { inputShape.reduce(1, *) }
    /// Outputs per sample it gives (the product of ``outputShape``), kept so that steps need not
    /// ask a layer for its shape (an array each time).
    public let outputCount: Int
    /// Targets per sample the loss takes: ``outputCount``, or, for ``Loss/sequenceCrossEntropy``,
    /// one class index per position (`time`, the first extent of ``outputShape``).
    public let targetCount: Int
    /// The width of each softmax the loss head takes: the whole output (softmax cross-entropy) or
    /// one position's vocabulary (sequence cross-entropy).
    let softmaxColumns: Int
    /// The first layer's vocabulary when it reads token indices (``TokenInput``): the door checks every token against it.
    let tokenVocabulary: Int?
    /// The number of scalar parameters.
    public var parameterCount: Int { parameters.count }

    /// Draws every layer's initial parameters and state from one generator seeded with `seed`, in layer order.
    public mutating func initialize(seed: UInt64) {
        noiseSeed = seed
        noiseStep = 0
        var generator = SeededGenerator(seed: seed)
        for (i, layer) in layers.enumerated() {
            parameters.withUnsafeMutableBufferPointer { p in
                state.withUnsafeMutableBufferPointer { s in
                    layer.initialize(
                        parameters: UnsafeMutableBufferPointer(rebasing: p[layerRanges[i]]),
                        state: UnsafeMutableBufferPointer(rebasing: s[stateRanges[i]]), using: &generator)
                }
            }
        }
    }

    /// The same network computing in another precision: the same layers, the parameters and state
    /// converted entry by entry (Float → Double is exact), caches and gradients fresh.
    public func converted<Other: TensorScalar>(to: Other.Type) -> Network<Other> {
        // The layers chained and paired with the loss already, so building the copy cannot fail.
        var copy = try! Network<Other>(layers.map { $0.converted(to: Other.self) }, loss: loss)
        copy.parameters = parameters.map { Other($0) }
        copy.state = state.map { Other($0) }
        copy.noiseSeed = noiseSeed
        copy.noiseStep = noiseStep
        copy.products = products
        return copy
    }

    /// The parts of ``parameters`` that weight decay shrinks when it decays matrices only: the
    /// tensors whose layers declare them decayed (``Layer/isDecayed(_:)``), in buffer order, adjacent
    /// ones merged (a recurrent layer's two weights are one range), so that an optimizer takes as
    /// few slices as it can.
    public var decayedRanges: [Range<Int>] {
        var ranges: [Range<Int>] = []
        for tensor in parameterTensors where tensor.isDecayed && tensor.count > 0 {
            if let last = ranges.last, last.upperBound == tensor.offset {
                ranges[ranges.count - 1] = last.lowerBound..<tensor.range.upperBound
            } else {
                ranges.append(tensor.range)
            }
        }
        return ranges
    }

    /// One parameter tensor's current values (a copy).
    public func parameter(_ tensor: ParameterTensor) -> Tensor<Scalar> {
        try! Tensor(shape: tensor.shape, scalars: Array(parameters[tensor.range]))
    }

    /// One state tensor's current values (a copy).
    public func stateTensor(_ tensor: ParameterTensor) -> Tensor<Scalar> {
        try! Tensor(shape: tensor.shape, scalars: Array(state[tensor.range]))
    }

    /// One parameter tensor's gradient from the last backward pass (a copy).
    public func gradient(_ tensor: ParameterTensor) -> Tensor<Scalar> {
        try! Tensor(shape: tensor.shape, scalars: Array(gradients[tensor.range]))
    }

    // MARK: Forward

    /// Runs the batch through every layer and returns the output (probabilities after a softmax).
    ///
    ///     // x: (batch, inputShape…)  →  (batch, outputShape…)
    ///
    /// - Parameters:
    ///   - x: the batch.
    ///   - mode: `.evaluation` (the default) or `.training`, for layers that behave differently.
    /// - Throws: ``NetworkError/shapeMismatch(_:)`` naming both shapes when `x` does not fit,
    ///   ``NetworkError/invalidValue(_:)`` for a token index out of range.
    @discardableResult
    public mutating func forward(_ x: Tensor<Scalar>, mode: LayerMode = .evaluation) throws(NetworkError) -> Tensor<Scalar> {
        try checkInput(x)
        forwardUnchecked(x, mode: mode)
        return output
    }

    /// The last forward pass's output: the last layer's, or the softmax of its logits.
    public var output: Tensor<Scalar> {
        if split.isOutputCurrent, let whole = split.output { return whole }
        return loss == .halfSquaredError ? layers[layers.count - 1].output : probabilities
    }

    mutating func forwardUnchecked(_ x: Tensor<Scalar>, mode: LayerMode) {
        let parameters = self.parameters
        parameters.withUnsafeBufferPointer { forwardUnchecked(x, mode: mode, parameters: $0, share: 0) }
    }

    /// The forward pass with `parameters` read in place (a replica reads its network's); in
    /// training mode each layer draws the noise of share `share` of the batch.
    mutating func forwardUnchecked(_ x: Tensor<Scalar>, mode: LayerMode, parameters p: UnsafeBufferPointer<Scalar>, share: Int) {
        let outside = BLAS.enterProducts(products)  // on this thread, for this pass
        defer { BLAS.leaveProducts(outside) }
        split.isOutputCurrent = false
        var state: [Scalar] = []
        swap(&state, &self.state)  // borrowed out of `self` (no copy) while layers are mutated
        defer { swap(&state, &self.state) }
        if mode == .training {
            for i in layers.indices { layers[i].drawNoise(key: noiseKey(seed: noiseSeed, step: noiseStep, layer: i, share: share)) }
        }
        state.withUnsafeMutableBufferPointer { s in
            for i in layers.indices {
                let input = i == 0 ? x : layers[i - 1].output
                layers[i].forward(
                    input, parameters: UnsafeBufferPointer(rebasing: p[layerRanges[i]]),
                    state: UnsafeMutableBufferPointer(rebasing: s[stateRanges[i]]), mode: mode)
            }
        }
        if loss != .halfSquaredError {
            // p = softmax(z), row by row (a sample, or a position of a sequence), from the logits the last layer left.
            let z = layers[layers.count - 1].output, columns = softmaxColumns
            probabilities.resize(to: z.shape)
            probabilities.withUnsafeMutableBufferPointer { p in
                z.withUnsafeBufferPointer { z in _ = p.update(fromContentsOf: z) }
                Kernels.softmaxRows(p, columns: columns)
            }
        }
    }

    /// The loss of the last forward pass against `targets`; its gradient into ``lossGradient`` when asked.
    mutating func evaluateLoss(_ t: Tensor<Scalar>, gradient wantsGradient: Bool) -> Scalar {
        let y = layers[layers.count - 1].output
        if wantsGradient { lossGradient.resize(to: y.shape) }
        let probabilities = probabilities, loss = loss, columns = outputCount, vocabulary = softmaxColumns
        return y.withUnsafeBufferPointer { y in
            t.withUnsafeBufferPointer { t in
                lossGradient.withUnsafeMutableBufferPointer { g in
                    let g = wantsGradient ? g : nil
                    switch loss {
                    case .halfSquaredError:
                        return Kernels.halfSquaredError(output: y, targets: t, batch: y.count / columns, gradient: g)
                    case .softmaxCrossEntropy:
                        return probabilities.withUnsafeBufferPointer { p in
                            Kernels.softmaxCrossEntropy(logits: y, probabilities: p, targets: t, columns: columns, gradient: g)
                        }
                    case .sequenceCrossEntropy:
                        return probabilities.withUnsafeBufferPointer { p in
                            Kernels.sequenceCrossEntropy(logits: y, probabilities: p, targets: t, columns: vocabulary, gradient: g)
                        }
                    }
                }
            }
        }
    }

    /// The batch's loss, forward only: in evaluation mode by default; in training mode it uses
    /// the batch's statistics and the noise of the current ``noiseStep`` (without advancing it), as
    /// the next ``lossAndGradients(_:targets:inputGradient:)`` would, and updates running statistics.
    ///
    ///     // x: (batch, inputShape…)  targets: (batch, targetCount)
    ///
    /// - Throws: ``NetworkError/shapeMismatch(_:)`` naming both shapes when `x` or `targets` does not fit,
    ///   ``NetworkError/invalidValue(_:)`` for a token or class index out of range.
    public mutating func loss(_ x: Tensor<Scalar>, targets: Tensor<Scalar>, mode: LayerMode = .evaluation) throws(NetworkError) -> Scalar {
        try checkInput(x)
        try checkTargets(targets, batch: x.shape[0])
        forwardUnchecked(x, mode: mode)
        return evaluateLoss(targets, gradient: false)
    }

    // MARK: Backward

    /// Forward (in training mode, drawing the noise of ``noiseStep`` and then advancing it), loss
    /// and backward for one batch: afterwards ``gradients``
    /// holds the loss's gradient for every parameter (cleared first, once) and, when
    /// `inputGradient` is set, ``inputGradient`` holds it for every input.
    ///
    ///     // x: (batch, inputShape…)  targets: (batch, targetCount)
    ///
    /// - Returns: the batch's loss before any update.
    /// - Throws: ``NetworkError/shapeMismatch(_:)`` naming both shapes when `x` or `targets` does not fit,
    ///   ``NetworkError/invalidValue(_:)`` for a token or class index out of range.
    @discardableResult
    public mutating func lossAndGradients(
        _ x: Tensor<Scalar>, targets: Tensor<Scalar>, inputGradient: Bool = false
    ) throws(NetworkError) -> Scalar {
        try checkInput(x)
        try checkTargets(targets, batch: x.shape[0])
        return lossAndGradientsUnchecked(x, targets: targets, inputGradient: inputGradient)
    }

    /// ``lossAndGradients(_:targets:inputGradient:)`` with the checks at the door done (by the
    /// caller, or for a whole dataset before its steps).
    @_specialize(where Scalar == Float)  // the step's entry from generic callers in other modules (the trainer):
    @_specialize(where Scalar == Double)  // the fold over `any Layer` runs concrete (W1 1.85 → 0.92 µs a step)
    mutating func lossAndGradientsUnchecked(_ x: Tensor<Scalar>, targets: Tensor<Scalar>, inputGradient: Bool) -> Scalar {
        let value: Scalar
        if splitsBatch(rows: x.shape[0], inputGradient: inputGradient) {
            value = splitLossAndGradients(x, targets: targets)
        } else {
            let parameters = self.parameters
            value = parameters.withUnsafeBufferPointer { p in
                forwardUnchecked(x, mode: .training, parameters: p, share: 0)
                let value = evaluateLoss(targets, gradient: true)
                backwardUnchecked(x, computeInputGradient: inputGradient, parameters: p)
                return value
            }
        }
        noiseStep &+= 1
        return value
    }

    mutating func backwardUnchecked(_ x: Tensor<Scalar>, computeInputGradient: Bool) {
        let parameters = self.parameters
        parameters.withUnsafeBufferPointer { backwardUnchecked(x, computeInputGradient: computeInputGradient, parameters: $0) }
    }

    /// The backward pass with `parameters` read in place, into this network's ``gradients``.
    mutating func backwardUnchecked(_ x: Tensor<Scalar>, computeInputGradient: Bool, parameters p: UnsafeBufferPointer<Scalar>) {
        let outside = BLAS.enterProducts(products)
        defer { BLAS.leaveProducts(outside) }
        // Borrow the gradient buffer out of `self` (a swap, no copy) so that layers can be
        // mutated while it is open for writing.
        var gradients: [Scalar] = []
        swap(&gradients, &self.gradients)
        defer { swap(&gradients, &self.gradients) }
        let dy = lossGradient
        gradients.withUnsafeMutableBufferPointer { g in
            Tensor<Scalar>.zero(g)  // gradients are cleared once per step; layers add into them
            for i in layers.indices.reversed() {
                let input = i == 0 ? x : layers[i - 1].output
                let outputGradient = i == layers.count - 1 ? dy : layers[i + 1].inputGradient
                layers[i].backward(
                    input: input, outputGradient: outputGradient,
                    parameters: UnsafeBufferPointer(rebasing: p[layerRanges[i]]),
                    gradients: UnsafeMutableBufferPointer(rebasing: g[layerRanges[i]]),
                    computeInputGradient: i > 0 || computeInputGradient)
            }
        }
    }

    /// One step of training on one batch: loss and gradients, clipped when asked, then the
    /// optimizer's update of the flat parameter buffer. With plain SGD and no clipping the update
    /// is applied inside the backward pass instead (``fusesUpdate``).
    ///
    ///     // x: (batch, inputShape…)  targets: (batch, targetCount)
    ///
    /// - Parameters:
    ///   - x: the batch's inputs.
    ///   - targets: the batch's targets.
    ///   - optimizer: updates the parameters from the gradients.
    ///   - maximumGradientNorm: when given (> 0), the gradients' global norm is clipped to
    ///     it before the update (``clipGradientNorm(maximum:)``).
    /// - Returns: the batch's loss before the update.
    /// - Throws: ``NetworkError/shapeMismatch(_:)`` naming both shapes when `x` or `targets` does not fit,
    ///   ``NetworkError/invalidValue(_:)`` for a token or class index out of range.
    @discardableResult
    public mutating func trainStep<O: Optimizer>(
        _ x: Tensor<Scalar>, targets: Tensor<Scalar>, optimizer: inout O, maximumGradientNorm: Double? = nil
    ) throws(NetworkError) -> Scalar where O.Scalar == Scalar {
        try checkInput(x)
        try checkTargets(targets, batch: x.shape[0])
        if maximumGradientNorm == nil, fusesUpdate(rows: x.shape[0]), let step = optimizer.fusableStep() {
            return fusedLossAndUpdate(x, targets: targets, step: step)
        }
        let value = lossAndGradientsUnchecked(x, targets: targets, inputGradient: false)
        if let maximumGradientNorm { clipGradientNorm(maximum: maximumGradientNorm) }
        optimizer.update(parameters: &parameters, gradients: gradients)
        return value
    }

    /// Scales ``gradients`` down so that their global norm, over every parameter of every layer,
    /// is at most `maximum`: PyTorch's `torch.nn.utils.clip_grad_norm_(parameters, maximum)`
    /// (``Kernels/clipGradientNorm(_:maximum:)``). Allocation-free.
    /// - Returns: the global norm before clipping, a health signal: a norm that keeps growing
    ///   warns of divergence before the loss does.
    @discardableResult
    public mutating func clipGradientNorm(maximum: Double) -> Double {
        gradients.withUnsafeMutableBufferPointer { Kernels.clipGradientNorm($0, maximum: maximum) }
    }

    /// The loss's gradient with respect to the network's input, from the last
    /// ``lossAndGradients(_:targets:inputGradient:)`` that asked for it.
    public var inputGradient: Tensor<Scalar> { layers[0].inputGradient }

    // MARK: Checks at the door

    /// The batch's shape, and, when the first layer reads token indices, every token.
    func checkInput(_ x: Tensor<Scalar>) throws(NetworkError) {
        // An image network also takes each sample as one row of its elements, in the same order.
        let shape = inputShape
        guard x.rank >= 1, x.shape[0] >= 1,
            (x.rank == shape.count + 1 && x.shape.dropFirst().elementsEqual(shape)) || x.isMatrix(rows: x.shape[0], columns: featureCount)
        else {
            let flat = shape.count > 1 ? " or (batch ≥ 1, \(featureCount))" : ""
            throw .shapeMismatch(
                "the input batch has shape \(TensorError.format(x.shape)) but \(self) takes (batch ≥ 1\(shape.map { ", \($0)" }.joined()))\(flat)")
        }
        if let vocabulary = tokenVocabulary,
            let i = x.withUnsafeBufferPointer({ Kernels.firstNonIndex($0, below: vocabulary, negativesAllowed: false) })
        {
            let time = featureCount
            throw .invalidValue(
                "the inputs' row \(i / time), position \(i % time) holds \(x[i]), but \(layers[0]) takes token indices: whole numbers in 0..<\(vocabulary)"
            )
        }
    }

    /// A whole dataset, as ``checkInput(_:)`` and ``checkTargets(_:batch:)`` check a batch, before
    /// the steps that take its batches on trust. Labels come with one-hot targets, and the sequence
    /// loss's targets are class indices: a labelled dataset does not fit it (its confusion matrix
    /// would count samples, not positions).
    func checkDataset(_ dataset: Dataset<Scalar>) throws(NetworkError) {
        if loss == .sequenceCrossEntropy, dataset.labels != nil {
            throw .lossMismatch("sequenceCrossEntropy takes a class index per position as its targets, not a labelled dataset's one-hot rows")
        }
        try checkInput(dataset.features)
        try checkTargets(dataset.targets, batch: dataset.count)
    }

    /// The targets' shape, and, for the sequence loss, every class index (a negative one is padding).
    func checkTargets(_ t: Tensor<Scalar>, batch: Int) throws(NetworkError) {
        guard t.isMatrix(rows: batch, columns: targetCount) else {
            if loss == .sequenceCrossEntropy {
                throw .shapeMismatch(
                    "the targets have shape \(TensorError.format(t.shape)) but sequenceCrossEntropy takes a class index per position: (batch, time) = \(TensorError.format([batch, targetCount]))"
                )
            }
            throw .shapeMismatch(
                "the targets have shape \(TensorError.format(t.shape)) but the outputs have shape \(TensorError.format([batch, outputCount]))")
        }
        if loss == .sequenceCrossEntropy,
            let i = t.withUnsafeBufferPointer({ Kernels.firstNonIndex($0, below: softmaxColumns, negativesAllowed: true) })
        {
            throw .invalidValue(
                "the targets' row \(i / targetCount), position \(i % targetCount) holds \(t[i]), but sequenceCrossEntropy takes class indices: whole numbers in 0..<\(softmaxColumns), or negative ones for padding"
            )
        }
    }
}

/// What went wrong building or running a network. Every case says what was expected.
public enum NetworkError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A layer that cannot be built as asked.
    case invalidLayer(String, reason: String)
    /// Layer `index`'s output shape differs from layer `index + 1`'s input shape.
    case layersDoNotChain(index: Int, layer: String, outputShape: [Int], next: String, inputShape: [Int])
    /// A loss that does not fit the output layer.
    case lossMismatch(String)
    /// A batch or target whose shape does not fit the network; the message names both shapes.
    case shapeMismatch(String)
    /// A batch or target entry the network cannot take (a token or class index out of range);
    /// the message names the row, the position, the value and what is allowed.
    case invalidValue(String)
    /// A parameter buffer of the wrong size.
    case parameterCount(expected: Int, actual: Int)

    public var description: String {
        switch self {
        case let .invalidLayer(layer, reason): "\(layer): \(reason)"
        case let .layersDoNotChain(i, layer, outputShape, next, inputShape):
            "layer \(i) \(layer) gives samples of shape \(TensorError.format(outputShape)) but layer \(i + 1) \(next) takes \(TensorError.format(inputShape))"
        case let .lossMismatch(message): message
        case let .shapeMismatch(message): message
        case let .invalidValue(message): message
        case let .parameterCount(expected, actual): "expected \(expected) parameters, got \(actual)"
        }
    }
}
