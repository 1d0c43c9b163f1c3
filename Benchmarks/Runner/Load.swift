// A load the benchmarks can name: `--load N` starts N busy processes beside the run, so that
// Neuron and every peer are timed on a machine doing other work, in the same interleaved rounds.
// Each competitor is a shell loop that spins until the benchmark's process is gone, so a killed
// benchmark leaves no loop behind.
import Foundation

/// Busy competitor processes, started before the timings and stopped after them.
final class CompetingLoad {
    /// How many were asked for.
    let count: Int
    private var processes: [Process] = []

    /// Starts `count` processes that each keep a core busy until ``stop()`` or until this process ends.
    /// - Throws: the error of a process that could not be started (the ones started are stopped).
    init(count: Int) throws {
        self.count = count
        let parent = ProcessInfo.processInfo.processIdentifier
        for _ in 0..<count {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            // `kill -0` is a system call that fails once the benchmark is gone: the loop ends with it.
            process.arguments = ["-c", "while kill -0 \(parent) 2>/dev/null; do :; done"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            do {
                try process.run()
            } catch {
                stop()
                throw error
            }
            processes.append(process)
        }
    }

    /// `1 busy process (a shell loop) beside the run`, for the header; nil without a load.
    var description: String? {
        count == 0 ? nil : "\(count) busy process\(count == 1 ? "" : "es") (a shell loop each) beside the run, for its whole duration"
    }

    /// Ends every competitor and waits for it: by SIGKILL, which no process can ignore (a shell
    /// started from this one may inherit SIGTERM ignored, and then never ends).
    func stop() {
        for process in processes where process.isRunning { kill(process.processIdentifier, SIGKILL) }
        for process in processes { process.waitUntilExit() }
        processes = []
    }

    deinit { stop() }
}
