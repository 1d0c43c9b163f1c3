// Counts from configs and checkpoints multiplied together, each kind under one rule. Sizes (units,
// positions, batch sizes): a layer refuses, where it is built, a buffer past ``maximumHeldCount``
// elements; an estimate of memory saturates at `Int.max` instead of trapping, so that a size past
// counting reads as "too large" in the message that refuses it. Steps (epochs × steps per epoch):
// counted to ``maximumStepCount`` by ``stepCount(epochs:stepsPerEpoch:plus:)``, which every check of
// a run's length calls (the config's, the schedule's, the engine's, a saved position's).

/// The largest number of elements a layer's buffer may be sized for, per sample or per tensor.
let maximumHeldCount = 1 << 40

/// The product of `factors` when every one is at least 1 and the product is at most
/// ``maximumHeldCount``, else nil: sizes come from configs, so a count past that is an error where
/// the layer is built, not a trap (or a wrapped product) in a later multiplication.
func heldCount(_ factors: [Int]) -> Int? {
    var product = 1
    for factor in factors {
        guard factor >= 1 else { return nil }
        let (next, overflow) = product.multipliedReportingOverflow(by: factor)
        guard !overflow, next <= maximumHeldCount else { return nil }
        product = next
    }
    return product
}

/// The most steps a run counts, 2⁵³: steps leave a run as numbers (metrics.csv, summary.json, the
/// checkpoint's JSON state, the dashboard's frames), and a JSON reader, JavaScript's among them,
/// holds a number as a `Double`, whose whole numbers are exact up to 2⁵³ and no further. No run comes
/// near it: a billion steps a second would take 104 days.
public let maximumStepCount = 1 << 53

/// `epochs × stepsPerEpoch + extra` steps, or nil when one of them is negative or the count passes
/// ``maximumStepCount``: epochs and steps per epoch come from configs and checkpoints, so a run too
/// long to count is an error where its length is checked, never a trap or a wrapped product later.
/// - Parameters:
///   - epochs: whole epochs (a step schedule's interval counts the same way).
///   - stepsPerEpoch: the steps (batches) each epoch takes.
///   - extra: steps into the next epoch (a saved position's batch), 0 for whole epochs.
public func stepCount(epochs: Int, stepsPerEpoch: Int, plus extra: Int = 0) -> Int? {
    guard epochs >= 0, stepsPerEpoch >= 0, extra >= 0 else { return nil }
    let (whole, overflow) = epochs.multipliedReportingOverflow(by: stepsPerEpoch)
    guard !overflow, whole <= maximumStepCount, extra <= maximumStepCount - whole else { return nil }
    return whole + extra
}

extension Int {
    /// The product, or `Int.max` when it is past counting: for sizes, which are never negative, so
    /// that a size from a config reads as "too large" rather than trapping.
    public func times(_ other: Int) -> Int {
        let (product, overflow) = multipliedReportingOverflow(by: other)
        return overflow ? .max : product
    }

    /// The sum, or `Int.max` when it is past counting (sizes are never negative).
    public func adding(_ other: Int) -> Int {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }
}
