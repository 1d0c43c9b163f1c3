import Testing

@testable import NeuronCore

@Suite("erf over whole buffers")
struct VectorErfTests {
    @Test("Float's rational erf stays within 4.3e-7 of erf, everywhere, and keeps NaN and the bounds")
    func floatApproximation() {
        // The bound is the approximation's measured maximum error (4.21e-7 near |x| = 3.62):
        // about 7 units in the last place of a Float near 1.
        var xs: [Float] = stride(from: -7.0, through: 7.0, by: 0.0003).map { Float($0) }
        var small: Float = 1e-12  // down to tiny magnitudes, where relative accuracy matters
        while small < 1 {
            xs += [small, -small]
            small *= 1.07
        }
        xs += [0, -0.0, 4, -4, 100, -100, .infinity, -.infinity]
        var ys = xs
        ys.withUnsafeMutableBufferPointer { Float.erf(inPlace: $0) }
        var worst = 0.0, worstRelative = 0.0
        for (x, y) in zip(xs, ys) {
            let exact = Double.libmErf(Double(x))
            worst = max(worst, abs(Double(y) - exact))
            if exact != 0 { worstRelative = max(worstRelative, abs(Double(y) - exact) / abs(exact)) }
            #expect(abs(y) <= 1, "erf(\(x)) = \(y) is outside [-1, 1]")
            #expect(x == 0 || (y > 0) == (x > 0), "erf(\(x)) = \(y) has the wrong sign")
        }
        #expect(worst <= 4.3e-7, "max error \(worst)")
        #expect(worstRelative <= 4.3e-7, "max relative error \(worstRelative)")
        var nan: [Float] = [.nan]
        nan.withUnsafeMutableBufferPointer { Float.erf(inPlace: $0) }
        #expect(nan[0].isNaN)
    }

    @Test("Double's is the C library's erf, bit for bit")
    func doubleIsLibm() {
        var xs = stride(from: -8.0, through: 8.0, by: 0.013).map { $0 }
        let expected = xs.map { Double.libmErf($0) }
        xs.withUnsafeMutableBufferPointer { Double.erf(inPlace: $0) }
        #expect(xs == expected)
        #expect(Double.libmErf(1) == 0.8427007929497149)  // Python's math.erf(1)
    }
}
