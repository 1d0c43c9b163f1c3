import Foundation
import Testing

@testable import NeuronCore

// Float's C kernels at every vector width this machine runs, each against the C library in Double
// (an oracle that shares nothing with them). The vectorized loops of each width have a main body
// and a remainder, so every kernel also runs over awkward lengths (0, 1, one under, at and over a
// register of 4, 8 and 16 Floats, 1001), with a sentinel past the end that it must not touch.
@Suite("Float's C kernels at every vector width")
struct VectorKernelsTests {
    /// What /proc/cpuinfo says the CPU has (the kernel reports a feature only if the OS saves its
    /// registers), read independently of the C dispatcher's cpuid.
    static func levelFromProcCPUInfo() -> VectorLevel? {
        #if arch(x86_64) && os(Linux)
        guard let text = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("flags") })
        else { return nil }
        let flags = Set(line.split(separator: " ").map(String.init))
        guard flags.isSuperset(of: ["avx2", "fma"]) else { return .baseline }
        return flags.isSuperset(of: ["avx512f", "avx512dq", "avx512bw", "avx512vl"]) ? .avx512 : .avx2
        #elseif arch(x86_64)
        return nil
        #else
        return .baseline
        #endif
    }

    @Test("the dispatcher finds the level /proc/cpuinfo reports, uses it by default, and clamps to it")
    func levels() {
        if let expected = Self.levelFromProcCPUInfo() { #expect(VectorLevel.supported == expected) }
        #expect(Kernels.vectorLevel == VectorLevel.supported)  // no test sets it: each runs a level explicitly
        #expect(Kernels.vectorSummary == "element-wise kernels: \(VectorLevel.supported)")
        #expect(VectorLevel.runnable.first == .baseline && VectorLevel.runnable.last == VectorLevel.supported)
        for level in VectorLevel.allCases {
            #expect(VectorKernels(level).level == min(level, VectorLevel.supported))
        }
        #expect(VectorLevel.avx512.description == "AVX-512")
    }

    static let lengths = [0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 1001]

    /// Runs `kernel` over each of `lengths` elements taken from `inputs` (cycled), with a sentinel
    /// after them, and checks every element against `exact` within `tolerance` (absolute, or
    /// relative to the exact value when `relative`), and that the sentinel stays.
    func checkLengths(
        _ inputs: [Float], _ kernel: (UnsafeMutableBufferPointer<Float>) -> Void, exact: (Double) -> Double,
        tolerance: Double, relative: Bool = false
    ) {
        let sentinel: Float = 12345.5
        for n in Self.lengths {
            var values = (0..<n).map { inputs[$0 % inputs.count] } + [sentinel]
            values.withUnsafeMutableBufferPointer { kernel(UnsafeMutableBufferPointer(rebasing: $0[0..<n])) }
            for i in 0..<n {
                let x = Double(inputs[i % inputs.count]), want = exact(x), error = abs(Double(values[i]) - want)
                #expect(error <= tolerance * (relative ? want : 1), "n \(n), element \(i): f(\(x)) = \(values[i]), not \(want)")
            }
            #expect(values[n] == sentinel, "n \(n): the element past the end was written")
        }
    }

    @Test("exp within 1e-7 (relative) of exp over Float's normal range; 0 below, infinity above, NaN kept", arguments: VectorLevel.runnable)
    func exp(level: VectorLevel) {
        let kernels = VectorKernels(level)
        var xs: [Float] = stride(from: -87.3, through: 88.3, by: 0.0007).map { Float($0) }
        var small: Float = 1e-12
        while small < 1 {
            xs += [small, -small]
            small *= 1.07
        }
        xs += [0, -0.0, 1, -1, 88.37, -87.33]
        var ys = xs
        ys.withUnsafeMutableBufferPointer { kernels.exp($0) }
        var worst = 0.0
        for (x, y) in zip(xs, ys) {
            let exact = Foundation.exp(Double(x))
            worst = max(worst, abs(Double(y) - exact) / exact)
        }
        #expect(worst <= 1e-7, "\(level): max relative error \(worst)")
        #expect(ys[ys.count - 6] == 1 && ys[ys.count - 5] == 1, "e^0 is exactly 1")
        var edges: [Float] = [-87.34, -100, -1e30, -.infinity, 88.38, 100, 1e30, .infinity, .nan]
        edges.withUnsafeMutableBufferPointer { kernels.exp($0) }
        #expect(Array(edges[0..<4]) == [0, 0, 0, 0])
        #expect(Array(edges[4..<8]) == [.infinity, .infinity, .infinity, .infinity])
        #expect(edges[8].isNaN)
        checkLengths([-3.5, 0.25, 7, -0.01, 40, -60, 1.5], kernels.exp, exact: Foundation.exp, tolerance: 1e-7, relative: true)
    }

    @Test("erf within 4.3e-7 of erf, in [-1, 1] with erf's sign, NaN kept", arguments: VectorLevel.runnable)
    func erf(level: VectorLevel) {
        let kernels = VectorKernels(level)
        var xs: [Float] = stride(from: -7.0, through: 7.0, by: 0.0003).map { Float($0) }
        var small: Float = 1e-12
        while small < 1 {
            xs += [small, -small]
            small *= 1.07
        }
        xs += [0, -0.0, 4, -4, 100, -100, .infinity, -.infinity]
        var ys = xs
        ys.withUnsafeMutableBufferPointer { kernels.erf($0) }
        var worst = 0.0, worstRelative = 0.0
        for (x, y) in zip(xs, ys) {
            let exact = Foundation.erf(Double(x))
            worst = max(worst, abs(Double(y) - exact))
            if exact != 0 { worstRelative = max(worstRelative, abs(Double(y) - exact) / abs(exact)) }
            #expect(abs(y) <= 1 && (x == 0 || (y > 0) == (x > 0)), "\(level): erf(\(x)) = \(y)")
        }
        #expect(worst <= 4.3e-7, "\(level): max error \(worst)")
        #expect(worstRelative <= 4.3e-7, "\(level): max relative error \(worstRelative)")
        var nan: [Float] = [.nan, 1, .nan]
        nan.withUnsafeMutableBufferPointer { kernels.erf($0) }
        #expect(nan[0].isNaN && nan[2].isNaN && abs(Double(nan[1]) - Foundation.erf(1)) <= 4.3e-7)
        checkLengths([-3.5, 0.25, 7, -0.01, 1, -2, 1.5], kernels.erf, exact: Foundation.erf, tolerance: 4.3e-7)
    }

    @Test("tanh within 4e-7 of tanh, in [-1, 1] with tanh's sign, NaN kept", arguments: VectorLevel.runnable)
    func tanh(level: VectorLevel) {
        let kernels = VectorKernels(level)
        var xs: [Float] = stride(from: -12.0, through: 12.0, by: 0.0007).map { Float($0) }
        var small: Float = 1e-12
        while small < 1 {
            xs += [small, -small]
            small *= 1.07
        }
        xs += [0, -0.0, 9, -9, 100, -100, .infinity, -.infinity]
        var ys = xs
        ys.withUnsafeMutableBufferPointer { kernels.tanh($0) }
        var worst = 0.0
        for (x, y) in zip(xs, ys) {
            let exact = Foundation.tanh(Double(x))
            worst = max(worst, abs(Double(y) - exact))
            #expect(abs(y) <= 1 && (x == 0 || (y > 0) == (x > 0)), "\(level): tanh(\(x)) = \(y)")
        }
        #expect(worst <= 4e-7, "\(level): max error \(worst)")
        var nan: [Float] = [.nan]
        nan.withUnsafeMutableBufferPointer { kernels.tanh($0) }
        #expect(nan[0].isNaN)
        checkLengths([-3.5, 0.25, 7, -0.01, 1, -2, 1.5], kernels.tanh, exact: Foundation.tanh, tolerance: 4e-7)
    }
}
