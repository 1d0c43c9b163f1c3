/// Whether a forward pass is part of training or only evaluates.
///
/// Layers that behave differently in the two (dropout, batch normalization) read it; the others
/// ignore it. Backward follows a `.training` forward pass.
public enum LayerMode: Sendable, Equatable {
    /// Training: batch statistics, random masks, and state such as running means updated.
    case training
    /// Evaluation (validation, test, evaluate, predict): deterministic, state read only.
    case evaluation
}

/// A stage of a network: a function of a batch and of its own parameters, with its backward pass.
///
/// A layer declares the shape of one sample going in and coming out (`[features]` for a dense
/// layer; `[height, width, channels]` for an image: channels-last); a batch adds a leading dimension. The
/// network checks each layer's output shape against the next one's input shape when it is built.
///
/// A layer owns no parameters: the network keeps every layer's parameters in one contiguous
/// buffer (and gradients in another of the same layout) and hands each layer its slice, so
/// optimizers update everything in one flat loop. Non-trainable state (a running mean) lives the
/// same way in a third buffer, saved in checkpoints but never seen by an optimizer. A layer owns
/// its caches: what forward keeps for backward, sized when a batch shape is first seen and reused
/// after.
public protocol Layer<Scalar>: Sendable, CustomStringConvertible {
    associatedtype Scalar: TensorScalar

    /// The shape of one sample going in, e.g. `[784]`.
    var inputShape: [Int] { get }
    /// The shape of one sample coming out, e.g. `[256]`.
    var outputShape: [Int] { get }
    /// The trainable tensors, in buffer order, e.g. `[("weight", [in, out]), ("bias", [out])]`.
    var parameterShapes: [(name: String, shape: [Int])] { get }
    /// The non-trainable tensors (saved, not trained), in buffer order; none by default.
    var stateShapes: [(name: String, shape: [Int])] { get }
    /// The order of `tensor`'s dimensions in PyTorch's module, as a permutation of this layer's:
    /// dimension `d` there is dimension `order[d]` here (a dense weight, `(inputs, outputs)` here
    /// and `nn.Linear`'s `(outputs, inputs)`: `[1, 0]`). Nil, the default, when the two agree.
    /// Checkpoints store tensors in PyTorch's order.
    func pytorchOrder(of tensor: String) -> [Int]?
    /// Whether weight decay applies to `tensor` when an optimizer decays matrices only: the
    /// weights of products (a dense layer's, a convolution's, a recurrent layer's, attention's
    /// projections), not biases, norms' scale and shift, or embeddings. False, the default.
    func isDecayed(_ tensor: String) -> Bool

    /// Fills this layer's parameter and state slices with seeded initial values.
    func initialize(
        parameters: UnsafeMutableBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        using generator: inout SeededGenerator)

    /// Runs the layer on a batch and keeps ``output`` (and, in training, whatever backward needs).
    ///
    ///     // x: (batch, inputShape…)  →  output: (batch, outputShape…)
    mutating func forward(
        _ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        mode: LayerMode)
    /// The last forward pass's output.
    var output: Tensor<Scalar> { get }

    /// Whether ``forward(position:_:parameters:state:)`` computes one position alone: true for a
    /// layer that computes each position of a sequence from that position only (a norm, a dense
    /// layer per position, GELU, dropout, the embeddings, the tied head) or from it and the keys
    /// and values its caches hold of the positions before it (causal attention). False by default
    /// (a recurrent layer, a context window, anything over images): a network that holds such a
    /// layer decodes text by whole passes (``Network/continueText(_:length:rule:seed:cache:each:)``).
    var runsByPosition: Bool { get }
    /// Position `position` of ``output`` alone, in evaluation mode, for a batch of one whose
    /// earlier positions a forward pass of a batch of one (and the calls since) computed: that
    /// position of `x` is new, the ones before it are those the layer saw, and the caches are
    /// sized. By default the whole evaluation pass, every position recomputed: right for any
    /// causal layer, at a pass's cost; a layer that ``runsByPosition`` computes that position's row
    /// alone, and leaves the others as they were.
    ///
    ///     // x: (1, inputShape…), positions 0...position current  →  output's position `position`
    mutating func forward(
        position: Int, _ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>)

    /// Adds this batch's parameter gradients into `gradients` (cleared once per step by the
    /// network) and, only when asked, computes ``inputGradient``.
    ///
    ///     // x: (batch, inputShape…)  dy: (batch, outputShape…)  →  gradients += …, inputGradient: like x
    mutating func backward(
        input x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>,
        parameters: UnsafeBufferPointer<Scalar>, gradients: UnsafeMutableBufferPointer<Scalar>,
        computeInputGradient: Bool)
    /// The last backward pass's gradient with respect to the layer's input (when it was asked for).
    var inputGradient: Tensor<Scalar> { get }
    /// The scalars per sample that the layer holds between passes beyond its ``output`` and
    /// ``inputGradient``: what forward keeps for backward and backward's workspaces (a convolution's
    /// unfolded input, attention's `heads × time²` weights, a block's inner layers). 0 by default.
    /// A run's memory estimate reads it before anything is sized, so a layer whose caches grow
    /// faster than its output must answer it.
    var cacheCount: Int { get }
    /// The neurons of this layer whose net and output the neuron's table fits, for
    /// ``UnitExplanation``: how many, and at how many positions; or why none does. By default none,
    /// with the reason that names the layers whose units can be explained.
    var explainableUnits: ExplainableUnits { get }
    /// The layers inside this one, each with its place in its tensors' names (`body.0` inside a
    /// residual block, `0` inside a sequence): what a search through a network (attention's
    /// maps) walks into. None by default.
    var innerLayers: [(path: String, layer: any Layer<Scalar>)] { get }
    /// A layer whose training pass computes this layer's evaluation pass, with its parameters, from
    /// this layer's `parameters` and `state` slices: what a backward pass differentiates to
    /// explain evaluation (``UnitExplanation``). Nil, the default, for a layer whose two passes
    /// agree; dropout and batch normalization answer it.
    /// - Throws: ``NetworkError`` for a layer whose evaluation has no such form.
    func evaluationForm(
        parameters: UnsafeBufferPointer<Scalar>, state: UnsafeBufferPointer<Scalar>
    ) throws(NetworkError) -> (layer: any Layer<Scalar>, parameters: [Scalar])?

    /// Backward with a plain SGD update of this layer's parameters (``Network/fusesUpdate``):
    /// ``inputGradient`` (when asked) from the parameters as they were, and each parameter moved
    /// by `step`. `gradients` is scratch space; `offset` is the slice's start in the flat buffer,
    /// which says where `step`'s weight decay applies. By default (``backwardThenUpdate(input:outputGradient:parameters:gradients:updating:offset:computeInputGradient:)``)
    /// the slice's gradient is computed whole, then the update applied; a layer whose weight
    /// gradient is a product can compute the update in it instead (``Dense``).
    ///
    ///     // x: (batch, inputShape…)  dy: (batch, outputShape…)  →  parameters -= …, inputGradient: like x
    mutating func backward(
        input x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>,
        parameters: UnsafeMutableBufferPointer<Scalar>, gradients: UnsafeMutableBufferPointer<Scalar>,
        updating step: SGDStep, offset: Int, computeInputGradient: Bool)

    /// The same layer computing in another precision, with empty caches.
    func converted<Other: TensorScalar>(to: Other.Type) -> any Layer<Other>

    /// Takes the key of the next training pass's random draws (dropout's mask), which the network
    /// derives from its seed, its step and the layer's index; layers without randomness ignore it.
    mutating func drawNoise(key: UInt64)
}

/// What a layer says of its units to a unit's explanation.
public enum ExplainableUnits: Sendable, Equatable {
    /// `count` units, each one neuron `out = f(w·x + b)`, over features (`positions` nil) or at
    /// each of `positions` positions.
    case units(count: Int, positions: Int?)
    /// No unit is one neuron's net and output, for `reason`.
    case none(reason: String)
}

extension Layer {
    public var stateShapes: [(name: String, shape: [Int])] { [] }
    public var cacheCount: Int { 0 }
    public var innerLayers: [(path: String, layer: any Layer<Scalar>)] { [] }
    public func evaluationForm(
        parameters: UnsafeBufferPointer<Scalar>, state: UnsafeBufferPointer<Scalar>
    ) throws(NetworkError) -> (layer: any Layer<Scalar>, parameters: [Scalar])? { nil }
    public var explainableUnits: ExplainableUnits {
        .none(reason: "only the units of a dense layer (over features or per position) or of an RNN can be explained")
    }

    public func pytorchOrder(of tensor: String) -> [Int]? { nil }

    public var runsByPosition: Bool { false }

    public mutating func forward(
        position: Int, _ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>
    ) {
        forward(x, parameters: parameters, state: state, mode: .evaluation)
    }

    public func isDecayed(_ tensor: String) -> Bool { false }

    public mutating func drawNoise(key: UInt64) {}

    public mutating func backward(
        input x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>,
        parameters: UnsafeMutableBufferPointer<Scalar>, gradients: UnsafeMutableBufferPointer<Scalar>,
        updating step: SGDStep, offset: Int, computeInputGradient: Bool
    ) {
        backwardThenUpdate(
            input: x, outputGradient: dy, parameters: parameters, gradients: gradients, updating: step, offset: offset,
            computeInputGradient: computeInputGradient)
    }

    /// The slice's gradient into `gradients` (cleared first), then `step` applied with it: an
    /// update after backward, one layer at a time.
    public mutating func backwardThenUpdate(
        input x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>,
        parameters: UnsafeMutableBufferPointer<Scalar>, gradients: UnsafeMutableBufferPointer<Scalar>,
        updating step: SGDStep, offset: Int, computeInputGradient: Bool
    ) {
        Tensor<Scalar>.zero(gradients)
        backward(
            input: x, outputGradient: dy, parameters: UnsafeBufferPointer(parameters), gradients: gradients,
            computeInputGradient: computeInputGradient)
        Kernels.sgdUpdate(step, parameters: parameters, gradients: UnsafeBufferPointer(gradients), offset: offset)
    }

    /// The number of scalars in this layer's parameter slice.
    public var parameterCount: Int { parameterShapes.reduce(0) { $0 + $1.shape.reduce(1, *) } }
    /// The number of scalars in this layer's state slice.
    public var stateCount: Int { stateShapes.reduce(0) { $0 + $1.shape.reduce(1, *) } }
    /// The scalars per sample of ``output`` and ``inputGradient`` together with ``cacheCount``,
    /// saturating at `Int.max` rather than trapping for a shape past counting.
    public var footprintCount: Int { outputShape.reduce(1) { $0.times($1) }.times(2).adding(cacheCount) }
}

/// A layer whose output goes through an ``Activation`` (a dense layer): the network reads it to
/// place the softmax head, and displays to measure saturated or dead units.
public protocol ActivatedLayer<Scalar>: Layer {
    /// The non-linearity at the output.
    var activation: Activation { get }
}

/// A layer that reads token indices rather than features (an ``Embedding``): a batch is
/// `(batch, time)` of indices stored as scalars, exact below 2^24 in Float.
///
/// A network takes it only as its first layer, and checks at its door that every entry of a batch
/// is a whole number in `0..<vocabulary` (``NetworkError/invalidValue(_:)`` otherwise), so that a
/// stray index is an error rather than a read past the table.
public protocol TokenInput<Scalar>: Layer {
    /// The number of distinct tokens: indices run from 0 to `vocabulary - 1`.
    var vocabulary: Int { get }
}

/// A layer that computes with an earlier layer's parameters instead of its own (a ``TiedHead``
/// reads the token ``Embedding``'s table, nanoGPT's `lm_head.weight = wte.weight`).
///
/// Its own ``Layer/parameterShapes`` are empty, so optimizers, checkpoints and reports see the
/// shared tensors once, under the earlier layer's name. The network checks when it is built that
/// layer ``sharedLayer`` comes before it and holds exactly ``sharedShapes``, then hands it that
/// layer's slice of the parameter and gradient buffers: both backward passes add into the one
/// gradient (this layer's first, as backward runs from the output).
public protocol ParameterSharing<Scalar>: Layer {
    /// The index in the network of the layer whose parameters this one computes with.
    var sharedLayer: Int { get }
    /// The parameter tensors it expects that layer to hold, in buffer order.
    var sharedShapes: [(name: String, shape: [Int])] { get }
}
