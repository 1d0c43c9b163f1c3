import Testing

@testable import NeuronCore

@Suite("tanh over whole buffers")
struct VectorTanhTests {
    @Test("Float's rational tanh stays within 4e-7 of tanh, everywhere, and keeps NaN and the bounds")
    func floatApproximation() {
        // The bound is the approximation's measured maximum error (3.95e-7 near |x| = 5.8):
        // about 7 units in the last place of a Float near 1.
        var xs: [Float] = stride(from: -12.0, through: 12.0, by: 0.0007).map { Float($0) }
        var small: Float = 1e-12  // down to tiny magnitudes, where relative accuracy matters
        while small < 1 {
            xs += [small, -small]
            small *= 1.07
        }
        xs += [0, -0.0, 9, -9, 100, -100, .infinity, -.infinity]
        var ys = xs
        ys.withUnsafeMutableBufferPointer { Float.tanh(inPlace: $0) }
        var worst = 0.0
        for (x, y) in zip(xs, ys) {
            let exact = Double.libmTanh(Double(x))
            worst = max(worst, abs(Double(y) - exact))
            #expect(abs(y) <= 1, "tanh(\(x)) = \(y) is outside [-1, 1]")
            #expect(x == 0 || (y > 0) == (x > 0), "tanh(\(x)) = \(y) has the wrong sign")
        }
        #expect(worst <= 4e-7, "max error \(worst)")
        var nan: [Float] = [.nan]
        nan.withUnsafeMutableBufferPointer { Float.tanh(inPlace: $0) }
        #expect(nan[0].isNaN)
    }

    @Test("Double's is the C library's tanh, bit for bit")
    func doubleIsLibm() {
        var xs = stride(from: -20.0, through: 20.0, by: 0.013).map { $0 }
        let expected = xs.map { Double.libmTanh($0) }
        xs.withUnsafeMutableBufferPointer { Double.tanh(inPlace: $0) }
        #expect(xs == expected)
    }
}
