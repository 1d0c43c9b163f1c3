// Which OpenBLAS kernel family a process runs, chosen and checked rather than left to a lottery.
//
// OpenBLAS (a DYNAMIC_ARCH build, Debian's 0.3.21) picks its kernels from the CPU's identity when it
// loads. A CPU it does not know (a newer model than the build, a cloud VM that masks its identity)
// gets a family far below what the CPU runs: SSE3's Prescott on an AVX-512 Xeon, a third of the
// speed. The family can only be chosen before OpenBLAS loads (`OPENBLAS_CORETYPE`, read by its
// constructor), so a program that wants the best one (the CLI, the benchmarks) calls
// `BLAS.runOnBestKernels()` first thing: when the user set no family and OpenBLAS's is below the
// best the CPU supports, the program runs itself again with that family set, and the new process
// checks the family's products against the naive loops (`BLAS.checkKernels`) before keeping it. A
// family that fails is replaced by the next one down, never kept: some builds compute wrong products
// on some CPUs, which is why environments pin a family. What was chosen, and why, travels to the
// new process in an environment variable, and `BLAS.summary` says it wherever the BLAS line is shown.
// A library user's process cannot be replaced: `BLAS.summary` then names the better family to set.
import Foundation

/// An OpenBLAS kernel family for x86-64, as `OPENBLAS_CORETYPE` names it, best first.
public enum KernelFamily: String, CaseIterable, Sendable {
    /// AVX-512 with bf16 (Cooper Lake; AMD Zen 4 and 5 run it).
    case cooperlake = "Cooperlake"
    /// AVX-512 (Skylake-X).
    case skylakeX = "SkylakeX"
    /// AVX2 and FMA (Haswell; OpenBLAS's Zen kernels are the same width).
    case haswell = "Haswell"
    /// AVX (Sandy Bridge).
    case sandybridge = "Sandybridge"
    /// SSE4.2 (Nehalem).
    case nehalem = "Nehalem"
    /// SSSE3 (Core 2).
    case core2 = "Core2"
    /// SSE3 (Prescott): OpenBLAS's fallback for a CPU it does not know.
    case prescott = "Prescott"

    /// The CPU's flags (as Linux's `/proc/cpuinfo` names them) the family's kernels need.
    public var requiredFlags: Set<String> {
        switch self {
        case .cooperlake: ["avx512f", "avx512dq", "avx512bw", "avx512vl", "avx512_bf16", "avx2", "fma"]
        case .skylakeX: ["avx512f", "avx512dq", "avx512bw", "avx512vl", "avx2", "fma"]
        case .haswell: ["avx2", "fma", "avx"]
        case .sandybridge: ["avx", "sse4_2"]
        case .nehalem: ["sse4_2", "ssse3"]
        case .core2: ["ssse3"]
        case .prescott: []
        }
    }

    /// How wide the family's kernels are, 6 (Cooperlake) down to 0 (Prescott).
    public var rank: Int { Self.allCases.count - 1 - Self.allCases.firstIndex(of: self)! }

    /// The rank of the family OpenBLAS names `coreName` (its own names for other vendors' cores
    /// among them: Zen's kernels are Haswell's width); nil for a name not known here.
    public static func rank(ofCoreName coreName: String) -> Int? {
        if let family = KernelFamily(rawValue: coreName) { return family.rank }
        switch coreName.lowercased() {
        case "zen", "excavator", "skylake", "cannonlake": return KernelFamily.haswell.rank
        case "steamroller", "piledriver", "bulldozer": return KernelFamily.sandybridge.rank
        case "dunnington", "penryn", "atom", "opteron_sse3", "opteron", "barcelona": return KernelFamily.core2.rank
        default: return nil
        }
    }

    /// The families a CPU with `flags` runs that are wider than `coreName`'s, best first: the ones
    /// to try, in order, when OpenBLAS chose `coreName` itself. Empty when its choice is the best
    /// the CPU runs, or a name not known here (another architecture's).
    public static func betterThan(_ coreName: String, cpuFlags flags: Set<String>) -> [KernelFamily] {
        guard let chosen = rank(ofCoreName: coreName) else { return [] }
        return allCases.filter { $0.rank > chosen && $0.requiredFlags.isSubset(of: flags) }
    }
}

extension BLAS {
    /// The CPU's feature flags, from Linux's `/proc/cpuinfo` (empty where it cannot be read).
    public static var cpuFlags: Set<String> {
        guard let text = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("flags") }),
            let colon = line.firstIndex(of: ":")
        else { return [] }
        return Set(line[line.index(after: colon)...].split(separator: " ").map(String.init))
    }

    /// The environment variables that carry a choice from one process to the one it becomes.
    public enum ChoiceVariable {
        /// Why the running family was chosen, as `BLAS.summary` says it.
        public static let reason = "NEURON_BLAS_CHOICE"
        /// The families still to try, comma-separated, should the running one fail its check.
        public static let remaining = "NEURON_BLAS_REMAINING"
        /// Tests: take `OPENBLAS_CORETYPE` for OpenBLAS's own pick, not the user's (a mis-detection
        /// simulated on any machine).
        public static let simulatedPick = "NEURON_BLAS_SIMULATED_PICK"
        /// Tests: the families, comma-separated, whose check fails (a wrong kernel planted), on any machine.
        public static let plantedFault = "NEURON_BLAS_PLANTED_FAULT"
    }

    /// For a program's entry, before anything else: when the user set no `OPENBLAS_CORETYPE` and
    /// OpenBLAS chose a family below the best this CPU runs, replaces the process by itself with
    /// that family set (and so on down, while a family fails its check); in the process that runs
    /// a chosen family, checks it first. Returns when the process runs the family it keeps.
    /// `BLAS.summary` then says what was chosen and why.
    public static func runOnBestKernels() {
        let environment = ProcessInfo.processInfo.environment
        if let remaining = environment[ChoiceVariable.remaining] {
            // This process runs a family chosen by its parent: keep it only if its products are right.
            let passed =
                (environment[ChoiceVariable.plantedFault] ?? "").split(separator: ",").contains { $0 == coreName }
                ? (try? checkKernels(Float.self, gemm: plantedWrongGemm)) != nil : (try? checkKernels()) != nil
            guard !passed else { return }
            let next = remaining.split(separator: ",").map(String.init)
            let reason = (environment[ChoiceVariable.reason] ?? "") + "; \(coreName) \(failedCheck)"
            // The next family down; with none left, OpenBLAS's own, whose check the run makes (and
            // refuses to train on wrong products).
            restart(
                family: next.first, remaining: Array(next.dropFirst()),
                reason: next.isEmpty ? reason + "; every wider family failed: OpenBLAS's own pick" : reason)
            return
        }
        // Chosen once: a process whose parent went through the families keeps what it was given.
        guard environment[ChoiceVariable.reason] == nil else { return }
        let simulated = environment[ChoiceVariable.simulatedPick] != nil
        guard environment["OPENBLAS_CORETYPE"] == nil || simulated else { return }  // the user's family wins
        let better = KernelFamily.betterThan(coreName, cpuFlags: cpuFlags).map(\.rawValue)
        guard let family = better.first else { return }
        restart(family: family, remaining: Array(better.dropFirst()), reason: "OpenBLAS picked \(coreName) on a CPU that runs \(family)")
    }

    /// What `summary` adds about the family: why it was chosen, or the better one to set; nil when
    /// OpenBLAS's pick is the best the CPU runs or the user set it.
    public static var choiceNote: String? {
        let environment = ProcessInfo.processInfo.environment
        if let reason = environment[ChoiceVariable.reason] { return "chosen by Neuron: \(reason)" }
        guard environment["OPENBLAS_CORETYPE"] == nil, let best = KernelFamily.betterThan(coreName, cpuFlags: cpuFlags).first else {
            return nil
        }
        return "OpenBLAS picked \(coreName) below this CPU's \(best.rawValue): set OPENBLAS_CORETYPE=\(best.rawValue)"
    }

    /// What a reason says of a family whose products were wrong.
    private static let failedCheck = "failed the self-check"

    /// The part of the choice a user must hear about at once: a family that failed its self-check,
    /// so the process runs narrower kernels than the CPU could (or OpenBLAS's own pick). nil when
    /// the widest family passed or nothing was chosen: a choice that simply worked is said by
    /// `summary` (summary.json, the benchmarks' header, the dashboard) and not on every command's stderr.
    public static var choiceWarning: String? {
        guard let reason = ProcessInfo.processInfo.environment[ChoiceVariable.reason], reason.contains(failedCheck) else { return nil }
        return "chosen by Neuron: \(reason)"
    }

    /// sgemm with one element of every product off by one: the wrong kernel the tests plant.
    private static func plantedWrongGemm(
        _ transposeA: Bool, _ transposeB: Bool, _ m: Int, _ n: Int, _ k: Int, _ alpha: Float, _ a: UnsafePointer<Float>, _ lda: Int,
        _ b: UnsafePointer<Float>, _ ldb: Int, _ beta: Float, _ c: UnsafeMutablePointer<Float>, _ ldc: Int
    ) {
        Float.blasGemm(
            transposeA: transposeA, transposeB: transposeB, m: m, n: n, k: k, alpha: alpha, a: a, lda: lda, b: b, ldb: ldb, beta: beta, c: c, ldc: ldc
        )
        c[0] += 1
    }

    /// Runs this program again with `family` (nil: OpenBLAS's own pick), the families left to try
    /// after it (none for OpenBLAS's own) and the reason.
    private static func restart(family: String?, remaining: [String], reason: String) {
        if let family {
            setenv("OPENBLAS_CORETYPE", family, 1)
            setenv(ChoiceVariable.remaining, remaining.joined(separator: ","), 1)
        } else {
            unsetenv("OPENBLAS_CORETYPE")
            unsetenv(ChoiceVariable.remaining)
        }
        setenv(ChoiceVariable.reason, reason, 1)
        unsetenv(ChoiceVariable.simulatedPick)
        execSelf()
    }

    /// Replaces the process by its own executable with the same arguments; returns only if that
    /// fails (the process then goes on, on the kernels it has).
    private static func execSelf() {
        #if canImport(Glibc)
        execv("/proc/self/exe", CommandLine.unsafeArgv)
        #endif
    }
}
