// SIGINT (Ctrl-C), SIGTERM (batch schedulers, `kill`) and SIGHUP (a closed terminal) all mean
// "stop": during training, finish the step, write a checkpoint and exit 128 + the signal's number
// (within a grace period: a step that outlasts it ends the process, the last checkpoint whole);
// at any other moment, say so and exit with that status at once. The handlers are installed first
// thing in `main`, so that no signal arrives while the default action (a silent death) still holds.
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// The stop signals and what each currently does.
enum StopSignals {
    /// The signals handled, with the names the messages use.
    static let handled: [(number: Int32, name: String)] = [(SIGINT, "SIGINT"), (SIGTERM, "SIGTERM"), (SIGHUP, "SIGHUP")]

    private struct State {
        /// What a signal does while a run can stop at a step boundary; nil: exit at once.
        var onStop: (@Sendable (Int32) -> Void)?
        /// The first signal received, whose number the exit status carries.
        var received: Int32?
        /// What is printed when a signal ends the process at once, given the signal's name.
        var exitMessage: @Sendable (String) -> String = { "stopped by \($0) before any training step; nothing to save" }
    }

    private static let state = Mutex(State())
    /// The dispatch sources, kept alive for the process's life; written once, by `install`.
    nonisolated(unsafe) private static var sources: [any DispatchSourceSignal] = []

    /// Takes over the stop signals: ignored by the kernel (their default action would end the
    /// process silently), then delivered to a dispatch handler off the main thread, so that one
    /// arriving while the main thread is busy (reading a large dataset) still ends the process now.
    /// A file grown past `ulimit -f` then fails its write with EFBIG instead of killing the process.
    static func install() {
        signal(SIGXFSZ, SIG_IGN)
        let queue = DispatchQueue(label: "neuron.signals")
        var sources: [any DispatchSourceSignal] = []
        for (number, _) in handled {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { received(number) }
            source.resume()
            sources.append(source)
        }
        Self.sources = sources
    }

    /// What a stop signal does from now on: `stop`, called with each signal, instead of exiting at
    /// once; nil restores exiting.
    static func onStop(_ stop: (@Sendable (Int32) -> Void)?) {
        state.withLock { $0.onStop = stop }
    }

    /// What a signal that ends the process at once prints after "neuron: ", given the signal's name
    /// (a command that does not train, such as `neuron dashboard`, says what it was doing instead).
    static func onExit(say message: @escaping @Sendable (String) -> String) {
        state.withLock { $0.exitMessage = message }
    }

    /// Seconds a run has after a stop signal to finish its step and write its checkpoint before
    /// the process ends regardless: 30, or `NEURON_STOP_GRACE_SECONDS` (the tests' shorter bound).
    static var gracePeriod: Double {
        ProcessInfo.processInfo.environment["NEURON_STOP_GRACE_SECONDS"].flatMap(Double.init).flatMap { $0 > 0 && $0.isFinite ? $0 : nil } ?? 30
    }

    /// The exit status a stopped run ends with: 128 + the number of the signal that stopped it
    /// (130 for Ctrl-C, also when the stop came from elsewhere).
    static var stoppedStatus: Int32 { 128 + (state.withLock { $0.received } ?? SIGINT) }

    private static func received(_ number: Int32) {
        let (stop, message) = state.withLock { state in
            if state.received == nil { state.received = number }
            return (state.onStop, state.exitMessage)
        }
        if let stop {
            stop(number)
            // A step can run for minutes (a block of a million positions): the stop is bounded by
            // a grace period, after which the process ends without a new checkpoint. Checkpoints
            // are written by rename, so the last one on disk is whole and `--resume` takes it.
            let name = handled.first { $0.number == number }?.name ?? "signal \(number)"
            let grace = gracePeriod
            DispatchQueue.global().asyncAfter(deadline: .now() + grace) {
                FileHandle.standardError.write(
                    Data(
                        "neuron: the step in progress did not end within \(Int(grace)) s of \(name): stopping now without a new checkpoint; the run directory keeps the last one written, if any (--resume goes on from it)\n"
                            .utf8))
                _exit(128 + number)
            }
            return
        }
        let name = handled.first { $0.number == number }?.name ?? "signal \(number)"
        FileHandle.standardError.write(Data("neuron: \(message(name))\n".utf8))
        exit(128 + number)
    }
}
