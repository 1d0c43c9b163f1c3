import Foundation
import NeuronCore
import Testing

/// The BLAS line a run's summary.json records.
private func blasLine(_ directory: String) throws -> String { try #require(try summary(directory).blas) }

// OpenBLAS's kernel lottery simulated on any machine: `NEURON_BLAS_SIMULATED_PICK` makes the
// family in OPENBLAS_CORETYPE count as OpenBLAS's own (mis-)detection, and
// `NEURON_BLAS_PLANTED_FAULT` plants a wrong kernel in a family's self-check.
@Suite("neuron on OpenBLAS's best kernels: a low pick replaced by the best family the CPU runs that passes its check")
struct KernelChoiceCommandTests {
    /// The families this machine's CPU runs above Prescott, best first.
    static let better = KernelFamily.betterThan("Prescott", cpuFlags: BLAS.cpuFlags).map(\.rawValue)

    private func train(_ name: String, _ environment: [String: String?]) throws -> (line: String, stderr: String) {
        let out = try scratchDirectory("kernels-\(name)") + "/run"
        let run = try runNeuron(["train", dataDirectory + "/xor.yaml", "--epochs", "2", "--output", out, "--quiet"], environment: environment)
        #expect(run.status == 0, "\(run.stderr)")
        return (try blasLine(out), run.stderr)
    }

    /// The family a BLAS line names: `· Haswell kernels`.
    private func family(_ line: String) -> String? {
        Self.better.first { line.contains("· \($0) kernels") }
    }

    @Test("A pick of Prescott on a CPU that runs more is replaced by the best family, and the summary says why")
    func lowPickReplaced() throws {
        let best = try #require(Self.better.first, "this CPU runs nothing above SSE3")
        let (line, stderr) = try train("low", ["OPENBLAS_CORETYPE": "Prescott", BLAS.ChoiceVariable.simulatedPick: "1"])
        #expect(line.contains("(chosen by Neuron: OpenBLAS picked Prescott on a CPU that runs \(best)"), "\(line)")
        // The best family, or (where this OpenBLAS computes it wrong on this CPU) a later one, saying so.
        let running = try #require(family(line), "\(line)")
        #expect(running == best || line.contains("\(best) failed the self-check"), "\(line)")
        // A choice that worked is the summary's to say, not every command's stderr (unless a family failed).
        #expect(stderr.contains("BLAS: ") == line.contains("failed the self-check"), "\(stderr)")
    }

    @Test("A family whose self-check fails is never kept: the next one down runs, and the summary names the failure")
    func failedCheckFallsBack() throws {
        let best = try #require(Self.better.first)
        let (line, stderr) = try train(
            "fault",
            ["OPENBLAS_CORETYPE": "Prescott", BLAS.ChoiceVariable.simulatedPick: "1", BLAS.ChoiceVariable.plantedFault: best])
        let running = try #require(family(line), "\(line)")
        #expect(running != best && line.contains("(chosen by Neuron: "), "\(line)")
        #expect(line.contains("\(best) failed the self-check"), "\(line)")
        #expect(stderr.contains("BLAS: ") && stderr.contains("\(best) failed the self-check"), "\(stderr)")
    }

    @Test("When every wider family fails its check, the run goes on OpenBLAS's own pick, saying so, or refuses wrong products")
    func everyFamilyFails() throws {
        let out = try scratchDirectory("kernels-all") + "/run"
        let environment: [String: String?] = [
            "OPENBLAS_CORETYPE": "Prescott", BLAS.ChoiceVariable.simulatedPick: "1",
            BLAS.ChoiceVariable.plantedFault: Self.better.joined(separator: ","),
        ]
        let run = try runNeuron(["train", dataDirectory + "/xor.yaml", "--epochs", "2", "--output", out, "--quiet"], environment: environment)
        if run.status == 0 {
            let line = try blasLine(out)
            #expect(line.contains("every wider family failed: OpenBLAS's own pick"), "\(line)")
        } else {
            // Unpinned, this OpenBLAS computes wrong products on this CPU: the run's own check refuses them.
            #expect(run.stderr.contains("compute wrong products"), "\(run.stderr)")
        }
    }

    @Test("An OPENBLAS_CORETYPE the user set wins, whatever the CPU runs: no choice, no note")
    func userFamilyWins() throws {
        let (line, stderr) = try train("user", ["OPENBLAS_CORETYPE": "Prescott"])
        #expect(line.contains("· Prescott kernels · "), "\(line)")
        #expect(!line.contains("chosen by Neuron") && !stderr.contains("BLAS: "), "\(line) \(stderr)")
    }
}
