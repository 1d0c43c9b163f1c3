// Optimizers see parameters, never layers: a network keeps all its parameters in one contiguous
// buffer and all gradients in another of the same layout, and an update is one flat loop over
// both. What an optimizer remembers between steps (velocities, moments, the step count) lives in
// the optimizer value, so saving it and restoring it resumes training exactly.

/// Updates a flat parameter buffer from its gradient buffer.
///
/// A value type: its state (velocities, moments, step count) travels with it and can be saved in
/// a checkpoint through ``state`` and ``step``, and resumed with ``restore(state:step:)``.
///
/// The update's loop is a kernel (``Kernels/sgdUpdate(parameters:gradients:learningRate:weightDecay:)``,
/// ``Kernels/adamUpdate(parameters:gradients:m:v:step:)``), so an optimizer reached as
/// `some Optimizer` or `any Optimizer<Float>` runs its loop as concrete Float code.
public protocol Optimizer<Scalar>: Sendable, CustomStringConvertible {
    associatedtype Scalar: TensorScalar

    /// The base learning rate; a schedule scales it per step.
    var learningRate: Scalar { get set }

    /// How the learning rate changes with the step.
    var schedule: LearningRateSchedule { get }

    /// Steps taken so far (Adam's bias correction uses it; schedules read it).
    var step: Int { get }

    /// One update.
    ///
    /// `parameters` and `gradients` have the same count, which stays the same from call to call:
    /// state buffers are sized on the first call and never allocated again. A different count is
    /// a programming error in the caller (one optimizer serves one network) and stops the program.
    mutating func update(parameters: inout [Scalar], gradients: [Scalar])

    /// Names and flat contents of the state, for checkpoints (e.g. `["velocity": [...]]` or
    /// `["m": [...], "v": [...]]`). Every buffer is empty before the first update.
    var state: [String: [Scalar]] { get }

    /// Replaces the state and step count with saved ones, so that the next update continues
    /// exactly where the saved optimizer left off.
    /// - Throws: ``OptimizerError/invalidStep(_:)`` for a negative step,
    ///   ``OptimizerError/stateNames(expected:actual:)`` when the buffers are not the ones this
    ///   optimizer keeps, and ``OptimizerError/stateCount(name:expected:actual:)`` when a buffer's
    ///   length does not fit (empty at step 0; otherwise all equal, and equal to the parameter
    ///   count this optimizer has already seen). A refused state leaves the optimizer unchanged.
    mutating func restore(state: [String: [Scalar]], step: Int) throws(OptimizerError)

    /// The next update's rule, counted as taken, when it is plain gradient descent: entry by entry,
    /// from the gradient alone, nothing remembered (``SGDStep``). A network then applies it inside
    /// its backward pass, each tensor as soon as its gradient is known (``Network/fusesUpdate``).
    /// Nil, and nothing changes, for every other update (momentum, Adam): the default.
    mutating func fusableStep() -> SGDStep?
}

extension Optimizer {
    public mutating func fusableStep() -> SGDStep? { nil }

    /// The learning rate the next update uses: ``learningRate`` scaled by the schedule at ``step``.
    public var scheduledLearningRate: Scalar {
        learningRate * Scalar(schedule.factor(at: step))
    }
}

/// The parameters weight decay applies to.
///
/// Transformers decay the weights of products only (Loshchilov & Hutter; nanoGPT's
/// `configure_optimizers`, which decays every tensor of two or more dimensions): a bias, a norm's
/// scale and shift, or an embedding row pulled towards 0 only hurts. In PyTorch that is two
/// parameter groups, one with `weight_decay=λ` and one with `weight_decay=0`; here it is the same
/// update with λ taken as 0 outside the decayed ranges.
public enum WeightDecayScope: Sendable, Equatable, CustomStringConvertible {
    /// Every parameter (PyTorch's one parameter group).
    case all
    /// Only these ranges of the flat buffer, ascending and disjoint: a network's matrices
    /// (``Network/decayedRanges``).
    case matrices([Range<Int>])

    /// This scope, once its ranges are checked; optimizers call it at their door.
    /// - Throws: ``OptimizerError/invalidHyperparameter(name:value:allowed:)`` for a range that
    ///   starts below 0, is empty, or starts before the one before it ends.
    func validated() throws(OptimizerError) -> WeightDecayScope {
        guard case let .matrices(ranges) = self else { return self }
        var end = 0
        for range in ranges {
            guard range.lowerBound >= end, !range.isEmpty else {
                throw .invalidHyperparameter(
                    name: "decayed ranges", value: "\(ranges)", allowed: "non-empty ranges from 0 up, ascending and disjoint")
            }
            end = range.upperBound
        }
        return self
    }

    /// Calls `body` on each piece of `0..<count` in order, with whether weight decay applies to it:
    /// `0..<count` once for ``all``; for ``matrices`` the decayed ranges and the gaps between them.
    func forEachPiece(count: Int, _ body: (_ piece: Range<Int>, _ isDecayed: Bool) -> Void) {
        if case let .matrices(ranges) = self, let last = ranges.last {
            precondition(last.upperBound <= count, "decayed range \(last) beyond the \(count) parameters")
        }
        forEachPiece(of: 0..<count, body)
    }

    /// Calls `body` on each piece of `slice` of the flat buffer in order, with whether weight decay
    /// applies to it: the whole slice for ``all``; for ``matrices`` the parts of the decayed ranges
    /// within it and the gaps between them (a layer's slice, updated on its own).
    func forEachPiece(of slice: Range<Int>, _ body: (_ piece: Range<Int>, _ isDecayed: Bool) -> Void) {
        switch self {
        case .all:
            body(slice, true)
        case let .matrices(ranges):
            var start = slice.lowerBound
            for range in ranges where range.overlaps(slice) {
                let decayed = range.clamped(to: slice)
                if start < decayed.lowerBound { body(start..<decayed.lowerBound, false) }
                body(decayed, true)
                start = decayed.upperBound
            }
            if start < slice.upperBound { body(start..<slice.upperBound, false) }
        }
    }

    /// `all`, or `matrices`.
    public var description: String {
        switch self {
        case .all: "all"
        case .matrices: "matrices"
        }
    }
}

/// What went wrong building an optimizer or restoring its state. Every case names what it refers to.
public enum OptimizerError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A hyperparameter outside its allowed range.
    case invalidHyperparameter(name: String, value: String, allowed: String)
    /// A saved state buffer whose length does not fit.
    case stateCount(name: String, expected: Int, actual: Int)
    /// A saved state whose buffers are not the ones this optimizer keeps (names sorted).
    case stateNames(expected: [String], actual: [String])
    /// A saved step count below zero.
    case invalidStep(Int)

    public var description: String {
        switch self {
        case let .invalidHyperparameter(name, value, allowed):
            return "\(name) must be \(allowed), got \(value)"
        case let .stateCount(name, expected, actual):
            return "optimizer state \"\(name)\" must hold \(expected) value\(expected == 1 ? "" : "s"), got \(actual)"
        case let .stateNames(expected, actual):
            return "optimizer state must hold exactly \(Self.list(expected)), got \(Self.list(actual))"
        case let .invalidStep(step):
            return "optimizer step must be 0 or more, got \(step)"
        }
    }

    private static func list(_ names: [String]) -> String {
        names.isEmpty ? "no buffers" : names.map { "\"\($0)\"" }.joined(separator: ", ")
    }
}

// MARK: - Checks at the door

/// `value` finite and greater than 0 (learning rates, epsilon).
func checkPositive<Scalar: TensorScalar>(_ value: Scalar, name: String) throws(OptimizerError) {
    guard value.isFinite, value > 0 else {
        throw .invalidHyperparameter(name: name, value: "\(value)", allowed: "a finite number greater than 0")
    }
}

/// `value` finite and 0 or greater (weight decay).
func checkNonNegative<Scalar: TensorScalar>(_ value: Scalar, name: String) throws(OptimizerError) {
    guard value.isFinite, value >= 0 else {
        throw .invalidHyperparameter(name: name, value: "\(value)", allowed: "a finite number 0 or greater")
    }
}

/// `value` in [0, 1) (momentum, Adam's betas): at 1 the average never forgets and never settles.
func checkDecayRate<Scalar: TensorScalar>(_ value: Scalar, name: String) throws(OptimizerError) {
    guard value >= 0, value < 1 else {  // NaN fails both comparisons
        throw .invalidHyperparameter(name: name, value: "\(value)", allowed: "in [0, 1)")
    }
}

/// Checks a saved state before any of it is applied, so that a refused state changes nothing.
/// - Parameters:
///   - names: the buffers the optimizer keeps.
///   - sizedCount: the parameter count the optimizer has already sized its buffers for, if any.
func checkSavedState<Scalar>(
    _ state: [String: [Scalar]], names: [String], step: Int, sizedCount: Int?
) throws(OptimizerError) {
    guard step >= 0 else { throw .invalidStep(step) }
    guard Set(state.keys) == Set(names) else {
        throw .stateNames(expected: names.sorted(), actual: state.keys.sorted())
    }
    // Before the first update nothing has been sized; after it, every buffer holds one value per
    // parameter, so all agree with each other and with any count already seen.
    var expected: Int? = step == 0 ? 0 : sizedCount
    for name in names.sorted() {
        let actual = state[name]!.count
        if let expected, expected != actual { throw .stateCount(name: name, expected: expected, actual: actual) }
        expected = actual
    }
}
