import Testing

@testable import NeuronCore

@Suite("Sizes and step counts: one rule each, an error rather than a trap")
struct SizesTests {
    @Test("Steps are counted to 2⁵³, the whole numbers a Double (a JSON number) holds exactly")
    func stepCounts() {
        #expect(maximumStepCount == 9_007_199_254_740_992)
        #expect(Double(maximumStepCount) == 9_007_199_254_740_992 && Double(maximumStepCount + 1) == Double(maximumStepCount))
        #expect(stepCount(epochs: 3, stepsPerEpoch: 8) == 24)
        #expect(stepCount(epochs: 3, stepsPerEpoch: 8, plus: 5) == 29)
        #expect(stepCount(epochs: 0, stepsPerEpoch: 8) == 0)
        // 2⁵¹ epochs of 4 steps are exactly the ceiling; one step more is past it.
        #expect(stepCount(epochs: 1 << 51, stepsPerEpoch: 4) == 1 << 53)
        #expect(stepCount(epochs: 1 << 51, stepsPerEpoch: 4, plus: 1) == nil)
        #expect(stepCount(epochs: (1 << 51) + 1, stepsPerEpoch: 4) == nil)
        // Past Int.max, and a batch index that would wrap the sum: nil, not a trap.
        #expect(stepCount(epochs: .max, stepsPerEpoch: 2) == nil)
        #expect(stepCount(epochs: 1, stepsPerEpoch: 1, plus: .max) == nil)
        #expect(stepCount(epochs: -1, stepsPerEpoch: 4) == nil && stepCount(epochs: 1, stepsPerEpoch: -4) == nil)
        #expect(stepCount(epochs: 1, stepsPerEpoch: 4, plus: -1) == nil)
    }

    @Test("Sizes: a held count is at most 2⁴⁰ elements; estimates saturate at Int.max")
    func sizes() {
        #expect(heldCount([2, 3, 4]) == 24 && heldCount([1 << 20, 1 << 20]) == 1 << 40)
        #expect(heldCount([1 << 20, (1 << 20) + 1]) == nil && heldCount([4, 0]) == nil && heldCount([.max, 2]) == nil)
        #expect(6.times(7) == 42 && Int.max.times(2) == .max && 6.adding(7) == 13 && Int.max.adding(1) == .max)
    }
}
