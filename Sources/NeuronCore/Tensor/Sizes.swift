// Sizes from configs (units, positions, batch sizes, epochs × steps) multiplied together: one
// rule for all of them. A layer refuses, where it is built, a buffer past ``maximumHeldCount``
// elements; an estimate of memory or steps saturates at `Int.max` instead of trapping, so that a
// size past counting reads as "too large" in the message that refuses it.

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
