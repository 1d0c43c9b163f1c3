// Cost as the work grows: time per step against the batch size and against the width, for Neuron
// and the strongest peers, written as a CSV that Benchmarks/peers/plot_scaling.py draws as an SVG.
import Foundation
import NeuronCore
import NeuronTraining

enum Scaling {
    /// 784-256-128-10 (tanh, tanh, softmax + cross-entropy) at batch 1…1024.
    static let batches: [Workload] = (0...10).map { power in
        let batch = 1 << power
        return Workload(
            id: "batch \(batch)", title: "784-256-128-10, batch \(batch)", sizes: [784, 256, 128, 10], activations: [.tanh, .tanh, .softmax],
            loss: .softmaxCrossEntropy, batch: batch, learningRate: 0.01, peerSteps: 0)
    }

    /// width-width-width (tanh, identity + half squared error) at batch 64, width 64…4096.
    static let widths: [Workload] = (6...12).map { power in
        let width = 1 << power
        return Workload(
            id: "width \(width)", title: "\(width)-\(width)-\(width), batch 64", sizes: [width, width, width], activations: [.tanh, .identity],
            loss: .halfSquaredError, batch: 64, learningRate: 1e-4, peerSteps: 0)
    }

    /// The peers drawn beside Neuron: the strongest at large sizes (JAX) and at small ones (NumPy).
    static let peers = PeerSpec.steps.filter { ["jax", "numpy"].contains($0.name) }

    /// Times every point (Neuron, then each peer on the same exchange file, checked on its losses)
    /// and writes `sweep,batch,width,gflop,engine,median_s,p10_s,p90_s` rows to `csv`; with the
    /// sgemm ceiling, an `sgemm ceiling` row per point: the step's flops at that rate.
    static func run(peers runner: Peers?, quick: Bool, ceiling: Double?, csv: String) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("neuron-scaling-\(ProcessInfo.processInfo.processIdentifier)")
            .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var lines = ["sweep,batch,width,gflop,engine,median_s,p10_s,p90_s"]
        print("Scaling: median per training step (784-256-128-10 against the batch; width-width-width, batch 64, against the width)")
        var rows = [["sweep", "point", "Neuron"] + (runner == nil ? [] : peers.map(\.column))]
        for (sweep, workloads) in [("batch", batches), ("width", widths)] {
            for w in workloads {
                let checkSteps = 3
                let ours = try w.engineLosses(steps: checkSteps)
                let timing = Timing(try w.time(blocks: quick ? 3 : 15).seconds)
                let point = "\(sweep),\(w.batch),\(w.sizes[1]),\(w.flops / 1e9)"
                lines.append("\(point),neuron,\(timing.median),\(timing.p10),\(timing.p90)")
                if let ceiling, ceiling > 0 {
                    let bound = w.flops / (ceiling * 1e9)
                    lines.append("\(point),sgemm ceiling,\(bound),\(bound),\(bound)")
                }
                var row = [sweep, w.id, format(timing.median)]
                if let runner {
                    let file = try w.writeExchangeFile(to: directory, checkSteps: checkSteps)
                    // About half a second of timed steps, from our own step time.
                    let steps = max(quick ? 3 : 10, min(2_000, Int((quick ? 0.05 : 0.5) / max(timing.median, 1e-6))))
                    for peer in peers {
                        do {
                            let result = try runner.run(
                                peer.script, ["--file", file, "--warmup", "\(max(3, steps / 10))", "--steps", "\(steps)"] + peer.arguments)
                            guard agree(result.checkLosses ?? [], ours) else {
                                row.append("disagrees")
                                print("  \(w.id) \(peer.name): losses \(result.checkLosses ?? []) disagree with ours \(ours); not drawn")
                                continue
                            }
                            let t = Timing(result.stepSeconds ?? [])
                            lines.append("\(point),\(peer.name),\(t.median),\(t.p10),\(t.p90)")
                            row.append(format(t.median))
                        } catch {
                            row.append("failed")
                            print("  \(w.id) \(peer.name) failed: \(error)")
                        }
                    }
                }
                rows.append(row)
            }
        }
        print(table(rows))
        try AtomicFile.write(Array((lines.joined(separator: "\n") + "\n").utf8), to: csv)
        print("Scaling results written to \(csv) (draw: python3 Benchmarks/peers/plot_scaling.py \(csv) Benchmarks/scaling.svg)\n")
    }
}
