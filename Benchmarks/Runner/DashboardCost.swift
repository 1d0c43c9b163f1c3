// The cost of a browser watching: the same training run through the view model, alone and with
// the dashboard serving it to one connected page that reads every frame it is sent, in
// alternating rounds. The page is a plain socket reading the event stream on a thread of its own,
// as a browser's network process would.
import Foundation
import NeuronCore
import NeuronDashboard
import NeuronTraining

#if canImport(Glibc)
import Glibc
#endif

extension Benchmarks {
    struct DashboardCost: Encodable {
        var steps: Int
        var unobservedStepsPerSecond, dashboardStepsPerSecond: Double
        var costPercent, roundSpreadPercent: Double
        var framesReceived: Int
        var bytesReceived: Int
    }

    /// 784-256-128-10 (batch 64) through a view model, alone and with a connected dashboard page.
    @MainActor
    func dashboardCost() async throws -> DashboardCost {
        let engine = try watchedEngine()
        let clock = ContinuousClock()
        var alone: [Double] = [], watched: [Double] = []
        var frames = 0, bytes = 0, finished = 0
        for _ in 0..<(quick ? 1 : 9) {
            let quiet = TrainingViewModel(engine: engine)
            alone.append(
                await clock.measure {
                    quiet.handle(event: .start)
                    await quiet.activity?.value
                }.seconds)

            let model = TrainingViewModel(engine: engine)
            let server = try await DashboardServer.start(binding: DashboardBinding(model: model, engine: { model.engine }))
            let page = try EventStreamReader(port: server.port, token: server.gate.token)
            // The page is connected (its first frame arrived) before training starts.
            while page.frames == 0 { try await Task.sleep(for: .milliseconds(1)) }
            watched.append(
                await clock.measure {
                    model.handle(event: .start)
                    await model.activity?.value
                }.seconds)
            try await Task.sleep(for: .milliseconds(100))  // the last frame on its way
            (frames, bytes) = (frames + page.frames, bytes + page.bytes)
            if page.sawFinished { finished += 1 }
            page.close()
            await server.stop()
            guard model.engine?.network.parameters == quiet.engine?.network.parameters else {
                throw DashboardCostError("dashboard check failed: watched and unwatched runs ended with different weights")
            }
        }
        // At least the first frame and the last (the finished run) of each round; a short run (64
        // steps in about 50 ms, frames at most every 50 ms) may have no frame between them.
        guard frames >= alone.count * 2, finished == alone.count else {
            throw DashboardCostError("dashboard check failed: the page received \(frames) frames, \(finished) of \(alone.count) runs' last")
        }
        let steps = Double(engine.totalSteps)
        func median(_ xs: [Double]) -> Double { xs.sorted()[xs.count / 2] }
        let (a, w) = (median(alone), median(watched))
        let result = DashboardCost(
            steps: engine.totalSteps, unobservedStepsPerSecond: steps / a, dashboardStepsPerSecond: steps / w, costPercent: (w / a - 1) * 100,
            roundSpreadPercent: (alone.max()! / alone.min()! - 1) * 100, framesReceived: frames, bytesReceived: bytes)
        print("A browser watching (784-256-128-10, batch 64, \(engine.totalSteps) steps, median of \(alone.count) alternating rounds)")
        print(
            table([
                ["view model, no dashboard", String(format: "%.1f steps/s", result.unobservedStepsPerSecond), ""],
                [
                    "view model + dashboard, 1 page", String(format: "%.1f steps/s", result.dashboardStepsPerSecond),
                    String(format: "%+.1f%% time (rounds vary by %.1f%%)", result.costPercent, result.roundSpreadPercent),
                ],
                ["the page received", "\(frames) frames", "\(bytes / 1024) KiB"],
            ]))
        print("")
        return result
    }
}

struct DashboardCostError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A page's event stream read on a thread of its own: counts frames and bytes, and discards them.
final class EventStreamReader: @unchecked Sendable {
    private let fd: Int32
    private let lock = NSLock()
    private var counted = (frames: 0, bytes: 0)
    private var finished = false
    private var thread: Thread?

    var frames: Int { lock.withLock { counted.frames } }
    var bytes: Int { lock.withLock { counted.bytes } }
    /// Whether a frame of a finished run arrived.
    var sawFinished: Bool { lock.withLock { finished } }

    init(port: Int, token: String) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard fd >= 0, connected == 0 else { throw DashboardCostError("cannot connect to the dashboard on port \(port)") }
        let request = Array("GET /events?token=\(token) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nAccept: text/event-stream\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        let thread = Thread { [self] in
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            let marker = Array(#""phase":"finished""#.utf8)
            var tail: [UInt8] = []  // the end of the previous read, for a marker split across two
            while true {
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                guard n > 0 else { return }
                // A frame ends with a blank line: count "\n\n" (split across reads now and then: good enough to count).
                var ends = 0
                for i in 1..<n where buffer[i] == 10 && buffer[i - 1] == 10 { ends += 1 }
                let seen = tail + buffer[0..<n]
                let hasFinished =
                    seen.count >= marker.count && (0...(seen.count - marker.count)).contains { seen[$0..<$0 + marker.count].elementsEqual(marker) }
                tail = Array(seen.suffix(marker.count - 1))
                lock.withLock {
                    counted = (counted.frames + ends, counted.bytes + n)
                    finished = finished || hasFinished
                }
            }
        }
        self.thread = thread
        thread.start()
    }

    /// Ends the connection (the reading thread returns).
    func close() { shutdown(fd, Int32(SHUT_RDWR)) }

    deinit { Glibc.close(fd) }
}
