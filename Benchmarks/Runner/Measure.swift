// Timing: blocks of steps long enough that reading the clock costs nothing, after a warm-up;
// results as median and 10th/90th percentiles of the per-step time.
import Foundation

/// Median, 10th and 90th percentile of per-step seconds.
struct Timing: Codable {
    var median: Double
    var p10: Double
    var p90: Double
    var samples: Int

    init(_ seconds: [Double]) {
        let sorted = seconds.sorted()
        func percentile(_ p: Double) -> Double {
            sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int((p * Double(sorted.count - 1)).rounded()))]
        }
        median = percentile(0.5)
        p10 = percentile(0.1)
        p90 = percentile(0.9)
        samples = sorted.count
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) * 1e-18 }
}

/// Per-step seconds of `step`, measured in `blocks` blocks of enough steps to last ~`blockTarget`,
/// after `warmup` of untimed running.
func measureSteps(
    blocks: Int, blockTarget: Duration = .microseconds(500), warmup: Duration = .milliseconds(200),
    _ step: () throws -> Void
) rethrows -> [Double] {
    let clock = ContinuousClock()
    var stepsPerBlock = 1
    var warmed = Duration.zero
    while warmed < warmup {  // warm up and calibrate the block size together
        let elapsed = try clock.measure { for _ in 0..<stepsPerBlock { try step() } }
        warmed += elapsed
        if elapsed < blockTarget { stepsPerBlock *= 2 }
    }
    var seconds: [Double] = []
    seconds.reserveCapacity(blocks)
    for _ in 0..<blocks {
        let elapsed = try clock.measure { for _ in 0..<stepsPerBlock { try step() } }
        seconds.append(elapsed.seconds / Double(stepsPerBlock))
    }
    return seconds
}

/// Seconds in the unit that reads best: ns, µs, ms or s.
func format(_ seconds: Double) -> String {
    guard seconds.isFinite else { return "–" }
    switch seconds {
    case ..<1e-6: return String(format: "%.1f ns", seconds * 1e9)
    case ..<1e-3: return String(format: "%.2f µs", seconds * 1e6)
    case ..<1: return String(format: "%.2f ms", seconds * 1e3)
    default: return String(format: "%.2f s", seconds)
    }
}

/// Columns padded to their widest cell.
func table(_ rows: [[String]]) -> String {
    let widths = (0..<(rows.map(\.count).max() ?? 0)).map { j in rows.map { $0.count > j ? $0[j].count : 0 }.max() ?? 0 }
    return rows.map { row in
        "  "
            + row.enumerated().map { j, cell in j == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[j] - cell.count + 2) }
            .joined()
    }.joined(separator: "\n")
}
