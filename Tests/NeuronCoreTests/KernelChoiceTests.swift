import Testing

@testable import NeuronCore

@Suite("OpenBLAS's kernel families: which ones a CPU runs above OpenBLAS's pick")
struct KernelChoiceTests {
    static let zen3: Set<String> = ["sse2", "ssse3", "sse4_1", "sse4_2", "avx", "avx2", "fma"]
    static let xeon = zen3.union(["avx512f", "avx512dq", "avx512bw", "avx512vl", "avx512cd"])
    static let zen4 = xeon.union(["avx512_bf16", "avx512_vnni"])

    @Test("A Prescott pick on an AVX-512 Xeon: SkylakeX first, then the narrower families, never Cooperlake (no bf16)")
    func xeonMisdetected() {
        #expect(KernelFamily.betterThan("Prescott", cpuFlags: Self.xeon) == [.skylakeX, .haswell, .sandybridge, .nehalem, .core2])
    }

    @Test("The best family already picked, or its equal (Zen is Haswell's width on a Zen 3), leaves nothing to try")
    func bestAlreadyPicked() {
        #expect(KernelFamily.betterThan("Cooperlake", cpuFlags: Self.zen4).isEmpty)
        #expect(KernelFamily.betterThan("Zen", cpuFlags: Self.zen3).isEmpty)
        #expect(KernelFamily.betterThan("Haswell", cpuFlags: Self.zen3).isEmpty)
        #expect(KernelFamily.betterThan("Zen", cpuFlags: Self.zen4) == [.cooperlake, .skylakeX])
    }

    @Test("A name not known here (another architecture's) and a CPU whose flags cannot be read: nothing to try")
    func unknown() {
        #expect(KernelFamily.betterThan("ARMV8", cpuFlags: Self.zen4).isEmpty)
        #expect(KernelFamily.betterThan("Prescott", cpuFlags: []).isEmpty)
        #expect(KernelFamily.rank(ofCoreName: "Zen") == KernelFamily.haswell.rank && KernelFamily.cooperlake.rank == 6)
    }

    @Test("This machine's flags are read from /proc/cpuinfo, and the family OpenBLAS runs is one known here, no wider than the CPU runs")
    func thisMachine() throws {
        let flags = BLAS.cpuFlags
        #expect(flags.contains("sse2"))
        let rank = try #require(KernelFamily.rank(ofCoreName: BLAS.coreName), "\(BLAS.coreName)")
        let widest = try #require(KernelFamily.allCases.first { $0.requiredFlags.isSubset(of: flags) })
        #expect(rank <= widest.rank)
    }
}
