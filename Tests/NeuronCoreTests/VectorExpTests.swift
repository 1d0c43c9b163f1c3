import Testing

@testable import NeuronCore

@Suite("exp over whole buffers")
struct VectorExpTests {
    @Test("Float's polynomial exp stays within 1e-7 (relative) of exp over Float's normal range")
    func floatApproximation() {
        // The bound is the approximation's measured maximum error, 8.0e-8 relative (within one unit
        // in the last place; a Float's unit is 6e-8 to 1.2e-7 of its value), with a little room.
        var xs: [Float] = stride(from: -87.3, through: 88.3, by: 0.0007).map { Float($0) }
        var small: Float = 1e-12  // near 0, where e^x ≈ 1 + x must keep x
        while small < 1 {
            xs += [small, -small]
            small *= 1.07
        }
        xs += [0, -0.0, 1, -1, 88.37, -87.33]
        var ys = xs
        ys.withUnsafeMutableBufferPointer { Float.exp(inPlace: $0) }
        var worstRelative = 0.0
        for (x, y) in zip(xs, ys) {
            let exact = Double.libmExp(Double(x))
            worstRelative = max(worstRelative, abs(Double(y) - exact) / exact)
        }
        #expect(worstRelative <= 1e-7, "max relative error \(worstRelative)")
        #expect(ys[ys.count - 6] == 1 && ys[ys.count - 5] == 1, "e^0 is exactly 1")
    }

    @Test("Float's exp gives 0 below Float's normal range, infinity above it, and keeps NaN")
    func floatEdges() {
        var xs: [Float] = [-87.34, -100, -1e30, -.infinity, 88.38, 100, 1e30, .infinity, .nan]
        xs.withUnsafeMutableBufferPointer { Float.exp(inPlace: $0) }
        #expect(Array(xs[0..<4]) == [0, 0, 0, 0])
        #expect(Array(xs[4..<8]) == [.infinity, .infinity, .infinity, .infinity])
        #expect(xs[8].isNaN)
    }

    @Test("Double's is the C library's exp, bit for bit")
    func doubleIsLibm() {
        var xs = stride(from: -700.0, through: 700.0, by: 0.37).map { $0 }
        let expected = xs.map { Double.libmExp($0) }
        xs.withUnsafeMutableBufferPointer { Double.exp(inPlace: $0) }
        #expect(xs == expected)
        #expect(Double.libmExp(1) == 2.718281828459045)  // Python's math.exp(1)
    }
}
