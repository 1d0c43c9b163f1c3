// `Benchmarks --mpi`: what data parallelism costs and when it pays. Under `mpirun -np 2 … --threads 1`
// it times one allreduce of each workload's gradient buffer on loopback and the step of 2 ranks;
// alone (`--threads 2`) the step of 1 process; either way the step of one thread at each shard size
// (B/p rows) and, from those and a ring allreduce, a model of the step at 2–64 nodes.
import ArgumentParser
import Foundation
import NeuronCore
import NeuronDistributed

extension Benchmarks {
    /// The workloads worth sharing: big enough that a step is more than its overhead.
    static let parallelWorkloads = ["W3", "W4", "W5", "W6"]

    @MainActor
    func dataParallel() throws {
        let group = try ProcessGroup.start()
        let rank = group?.rank ?? 0, ranks = group?.processCount ?? 1
        func say(_ text: String) { if rank == 0 { print(text) } }
        BLAS.threadCount = threads
        say("Data parallelism: \(ranks) process\(ranks == 1 ? "" : "es") × \(threads) BLAS thread\(threads == 1 ? "" : "s"); BLAS: \(BLAS.summary)")
        let chosen = Workload.all.filter { workloads.isEmpty ? Self.parallelWorkloads.contains($0.id) : workloads.contains($0.id) }
        // Every rank runs the same fixed counts: a collective call per step, so no rank may time
        // itself into a different number of steps (measureSteps calibrates by the clock).
        let repeats = quick ? 3 : 15

        var rows = [["workload", "parameters", "gradient bytes", "allreduce (loopback)", "step, \(ranks) × \(threads)"]]
        for workload in chosen {
            let (network, x, t) = try workload.make()
            let bytes = network.parameterCount * MemoryLayout<Float>.size
            var allreduce = "–"
            if let group {
                var buffer = [Float](repeating: 1, count: network.parameterCount), totals = BatchTotals(loss: 0, correct: 0)
                let count = max(2, min(200, 50_000_000 / max(bytes, 1)))
                let seconds = (0..<repeats).map { _ in
                    let started = ContinuousClock.now
                    for _ in 0..<count { group.sum(gradients: &buffer, totals: &totals) }
                    return (ContinuousClock.now - started).seconds / Double(count)
                }
                // Checked after timing: ones on every rank sum to the rank count.
                var check = [Float](repeating: 1, count: 3)
                group.sum(gradients: &check, totals: &totals)
                guard check == [Float](repeating: Float(ranks), count: 3) else { throw ValidationError("allreduce check failed: \(check)") }
                allreduce = format(Timing(seconds).median)
            }
            let step = try stepTime(workload, network: network, x: x, t: t, group: group, repeats: repeats)
            rows.append([workload.id + " " + workload.title, "\(network.parameterCount)", "\(bytes)", allreduce, format(step)])
        }
        say(table(rows) + "\n")

        // Alone: one thread's step at each shard size a p-node run would give each node (the model's compute).
        if group == nil {
            BLAS.threadCount = 1
            var shardRows = [["workload", "B"] + [1, 2, 4, 8, 16, 32, 64].map { "B/\($0)" }]
            var modelRows = [["workload", "link"] + [2, 4, 8, 16, 32, 64].map { "p = \($0)" }]
            for workload in chosen {
                let (network, x, t) = try workload.make()
                var cells = [workload.id, "\(workload.batch)"]
                var compute: [Int: Double] = [:]
                for p in [1, 2, 4, 8, 16, 32, 64] {
                    let rows = (workload.batch + p - 1) / p
                    let shard = (try? Tensor(shape: [rows, x.columns], scalars: Array(x.scalars.prefix(rows * x.columns))))!
                    let targets = (try? Tensor(shape: [rows, t.columns], scalars: Array(t.scalars.prefix(rows * t.columns))))!
                    var copy = network
                    var sgd = try SGD<Float>(learningRate: workload.learningRate)
                    let seconds = try measureSteps(blocks: quick ? 3 : 15) { try copy.trainStep(shard, targets: targets, optimizer: &sgd) }
                    compute[p] = Timing(seconds).median
                    cells.append(format(compute[p]!))
                }
                shardRows.append(cells)
                let bytes = Double(network.parameterCount * MemoryLayout<Float>.size)
                for gigabits in [10.0, 25.0, 100.0] {
                    modelRows.append(
                        [workload.id, "\(Int(gigabits)) Gb/s"]
                            + [2, 4, 8, 16, 32, 64].map { p in
                                let step = compute[p]! + Self.ringAllreduce(bytes: bytes, nodes: p, bitsPerSecond: gigabits * 1e9)
                                return String(format: "%@ (%.1f×)", format(step), compute[1]! / step)
                            })
                }
            }
            print("One thread's step on a shard of ⌈B/p⌉ rows (the compute of one of p nodes):")
            print(table(shardRows) + "\n")
            print("Modelled step at p nodes of one thread each (shard step + ring allreduce; speed-up over one thread on the whole batch):")
            print(table(modelRows) + "\n")
        }
        group?.end(status: 0, together: true)
    }

    /// Latency per message of a ring step between nodes (TCP over Ethernet, a typical 10 µs).
    static let messageLatency = 10e-6

    /// A ring allreduce of `bytes` over `nodes`: a reduce-scatter and an allgather, each of p − 1
    /// steps sending 1/p of the buffer: 2(p − 1)/p · bytes / bandwidth + 2(p − 1) · latency.
    static func ringAllreduce(bytes: Double, nodes p: Int, bitsPerSecond: Double) -> Double {
        let steps = 2 * Double(p - 1)
        return steps / Double(p) * bytes * 8 / bitsPerSecond + steps * messageLatency
    }

    /// The median step of `workload` as a data-parallel run takes it: a replica on this rank's share
    /// of the batch, the allreduce, the update (alone: the whole batch).
    private func stepTime(
        _ workload: Workload, network: Network<Float>, x: Tensor<Float>, t: Tensor<Float>, group: ProcessGroup?, repeats: Int
    ) throws -> Double {
        let dataset = try Dataset(features: x, targets: t)
        var training = try MiniBatchTraining(
            network: network, optimizer: try SGD<Float>(learningRate: workload.learningRate), dataset: dataset, batchSize: workload.batch,
            seed: 1)
        func step() { if let group { group.step(&training) } else { training.step() } }
        for _ in 0..<3 { step() }  // warm-up: buffers sized
        let count = max(3, min(500, Int(2e9 / max(workload.flops, 1))))
        let seconds = (0..<repeats).map { _ in
            let started = ContinuousClock.now
            for _ in 0..<count { step() }
            return (ContinuousClock.now - started).seconds / Double(count)
        }
        return Timing(seconds).median
    }
}
