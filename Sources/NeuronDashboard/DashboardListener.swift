// The connections side: one accept loop, one task per connection, one reaper, all off the main
// actor, over FlyingSocks' non-blocking sockets (a connection waiting for bytes holds no thread);
// the accept loop and the connections run on one thread at nice 10 (`DashboardExecutor`), beneath
// the training thread. Every connection is bounded: its request by `RequestReader` (bytes) and a
// deadline (time), its answer's writes by a deadline each, and the connections together by a
// count. A connection past its deadline is shut by the reaper; past the count, the oldest
// connection still waiting on its client makes room. A failed accept (the process is out of file
// descriptors) is said once and retried after a pause that grows to 1 s; the loop ends only when
// the server stops. The routes that read the view model hop to the main actor for that alone.
import FlyingSocks
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// An answer: status, header fields and a body, or an event stream.
struct DashboardResponse: Sendable {
    var status: Int
    var headers: [(name: String, value: String)]
    var body: Data
    /// Frames written one after another until the page goes away or the server stops.
    var stream: FrameSubscription?

    /// The head's bytes: status line, fields, `Content-Length` unless streaming, `Connection: close`.
    func head() -> Data {
        var text = "HTTP/1.1 \(status) \(Self.reason(status))\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if stream == nil { text += "Content-Length: \(body.count)\r\n" }
        text += "Connection: close\r\n\r\n"
        return Data(text.utf8)
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 400: "Bad Request"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 409: "Conflict"
        case 411: "Length Required"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 415: "Unsupported Media Type"
        case 431: "Request Header Fields Too Large"
        case 503: "Service Unavailable"
        case 505: "HTTP Version Not Supported"
        default: "Status"
        }
    }
}

/// Accepts connections on a listening socket and answers one request on each.
final class DashboardListener: Sendable {
    /// Where a connection is: reading its request, answering it, or being closed.
    private enum Phase { case request, answer, closing }

    private struct Connection {
        var task: Task<Void, Never>?
        var opened: ContinuousClock.Instant
        var phase: Phase
        var deadline: ContinuousClock.Instant?
        /// The socket's descriptor, to shut it from outside its task.
        var file: Int32
    }

    private struct Registry {
        var connections: [Int: Connection] = [:]
        /// Ids in the order accepted (oldest first) from `orderStart` on; some may have ended since.
        var order: [Int] = []
        var orderStart = 0
        /// Connections being closed (shut, their task not yet ended).
        var closing = 0
        var nextID = 0
        /// Connections closed to make room for newer ones.
        var evicted = 0
        /// Connections past their deadline.
        var timedOut = 0
    }

    let limits: DashboardLimits
    /// How long a connection may take to send its request before a newer one may take its place:
    /// a page's request arrives whole at once, and the server reads it within this time.
    static let patience = Duration.milliseconds(10)
    /// The most connections open at once: `limits.connections`, or fewer when the process's file
    /// limit is low (the process needs descriptors for its checkpoints and data too).
    let capacity: Int
    private let listener: AsyncSocket
    private let pool: any AsyncSocketPool
    private let registry = Mutex(Registry())
    private let tasks = Mutex<[Task<Void, Never>]>([])
    private let handler: @Sendable (DashboardRequest) async -> DashboardResponse
    private var executor: DashboardExecutor { .shared }
    private let log: @Sendable (String) -> Void
    /// Accept failures still to simulate (tests: a process out of file descriptors).
    let simulatedAcceptFailures = Atomic<Int>(0)
    /// Accept failures so far.
    let acceptFailures = Atomic<Int>(0)
    /// Milliseconds the accept loop has paused so far after failed accepts (10 ms doubling to 1 s
    /// each): what a test checks the back-off by, rather than by how long an answer took.
    let acceptPauseMilliseconds = Atomic<Int>(0)

    /// Connections open now.
    var openConnections: Int { registry.withLock { $0.connections.count } }
    /// Connections closed so far to make room, and because their deadline passed.
    var closedEarly: (evicted: Int, timedOut: Int) { registry.withLock { ($0.evicted, $0.timedOut) } }

    /// Listens on `address`; accepts nothing until ``run()``.
    init(
        address: some SocketAddress, limits: DashboardLimits, log: @escaping @Sendable (String) -> Void,
        handler: @escaping @Sendable (DashboardRequest) async -> DashboardResponse
    ) async throws {
        let pool = SocketPool<Poll>.make()
        try await pool.prepare()
        let socket = try Socket(domain: Int32(type(of: address).family))
        try socket.setValue(true, for: .localAddressReuse)
        do {
            try socket.bind(to: address)
            try socket.listen()
        } catch {
            try? socket.close()
            throw error
        }
        (self.limits, self.log, self.handler, self.pool) = (limits, log, handler, pool)
        listener = try AsyncSocket(socket: socket, pool: pool)
        var files = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &files)
        let fileLimit = Int(clamping: files.rlim_cur)  // RLIM_INFINITY is the largest value: no limit
        capacity = max(8, min(limits.connections, fileLimit / 2))
    }

    /// The port listened on.
    var port: Int {
        switch try? listener.socket.sockname() {
        case let .ip4(_, port)?, let .ip6(_, port)?: Int(port)
        default: 0
        }
    }

    /// Starts the socket pool, the accept loop and the reaper.
    func run() {
        let pool = self.pool
        let started: [Task<Void, Never>] = [
            Task.detached { _ = try? await pool.run() },
            Task.detached(executorPreference: executor) { [self] in await acceptLoop() },
            Task.detached { [self] in await reap() },
        ]
        tasks.withLock { $0 += started }
    }

    /// Stops accepting, closes every connection and waits (at most `timeout`) for their tasks.
    func stop(timeout: Duration = .seconds(1)) async {
        let started = tasks.withLock { tasks in
            defer { tasks = [] }
            return tasks
        }
        for task in started.dropFirst() { task.cancel() }
        try? listener.close()
        registry.withLock { registry in
            for id in Array(registry.connections.keys) { Self.close(&registry, id) }
        }
        let clock = ContinuousClock(), start = clock.now
        while openConnections > 0, clock.now - start < timeout { try? await Task.sleep(for: .milliseconds(10)) }
        started.first?.cancel()
    }

    // MARK: Accepting

    private func acceptLoop() async {
        var failures = 0
        while !Task.isCancelled {
            do {
                if simulatedAcceptFailures.load(ordering: .relaxed) > 0 {
                    simulatedAcceptFailures.subtract(1, ordering: .relaxed)
                    throw SocketError.failed(type: "Accept", errno: EMFILE, message: "Too many open files (simulated)")
                }
                let socket = try await listener.accept()
                if failures > 0 { log("neuron: dashboard: accepting connections again after \(failures) failed accepts\n") }
                failures = 0
                admit(socket)
            } catch {
                if Task.isCancelled { return }
                failures += 1
                acceptFailures.add(1, ordering: .relaxed)
                if failures == 1 { log("neuron: dashboard: cannot accept a connection (\(error.localizedDescription)); retrying\n") }
                // 10 ms, doubling to 1 s: a process out of descriptors gets time to close some.
                let pause = min(1000, 10 << min(failures - 1, 7))
                acceptPauseMilliseconds.add(pause, ordering: .relaxed)
                try? await Task.sleep(for: .milliseconds(pause))
            }
        }
    }

    /// Registers `socket` and starts its task. When `capacity` are open, one connection waiting on
    /// its client is closed to make room: of the oldest still sending their request after
    /// ``patience``, the first with nothing unread (a page's request, not read yet because the
    /// server is busy, is never the one). When there is none, or connections being closed still
    /// hold a quarter of `capacity` more, `socket` is answered 503 and closed.
    private func admit(_ socket: AsyncSocket) {
        let now = ContinuousClock.now
        let deadline = now + .seconds(limits.requestSeconds)
        let admitted = registry.withLock { registry -> Bool in
            guard registry.connections.count < capacity + capacity / 4 else { return false }
            if registry.connections.count - registry.closing >= capacity {
                guard let victim = Self.victim(in: &registry, now: now) else { return false }
                Self.close(&registry, victim)
                registry.evicted += 1
            }
            registry.nextID += 1
            let id = registry.nextID
            registry.order.append(id)
            registry.connections[id] = Connection(
                task: Task.detached(executorPreference: executor) { [self] in await serve(socket, id: id) }, opened: now, phase: .request,
                deadline: deadline,
                file: socket.socket.file.rawValue)
            return true
        }
        if !admitted {
            // Best effort, never waiting: the socket buffer of a new connection takes a short answer whole.
            _ = try? socket.socket.write(
                Self.refusal(503, "too many connections; try again\n").head() + Data("too many connections; try again\n".utf8))
            try? socket.close()
        }
    }

    /// Whether the client sent bytes that the connection has not read yet.
    private static func hasUnreadBytes(_ file: Int32) -> Bool {
        var byte: UInt8 = 0
        return recv(file, &byte, 1, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT)) > 0
    }

    /// The connection to close to make room: of the 32 oldest still sending their request after
    /// ``patience``, the first with nothing unread. Amortised O(1): ended ones leave `order` as they are passed.
    private static func victim(in registry: inout Registry, now: ContinuousClock.Instant) -> Int? {
        var examined = 0
        var i = registry.orderStart
        while i < registry.order.count && examined < 32 {
            let id = registry.order[i]
            guard let connection = registry.connections[id], connection.phase == .request else {
                // Ended or answering: never a candidate again.
                if i == registry.orderStart { registry.orderStart += 1 }
                i += 1
                continue
            }
            guard now - connection.opened >= patience else { return nil }  // the rest are younger
            if !hasUnreadBytes(connection.file) { return id }
            examined += 1
            i += 1
        }
        if registry.orderStart > 1024 && registry.orderStart * 2 > registry.order.count {
            registry.order.removeFirst(registry.orderStart)
            registry.orderStart = 0
        }
        return nil
    }

    /// Ends connection `id` now: its socket shut (its task's read or write fails at once; the
    /// descriptor itself is closed by the task, so that no other connection can reuse it meanwhile),
    /// and its task cancelled.
    private static func close(_ registry: inout Registry, _ id: Int) {
        guard let connection = registry.connections[id], connection.phase != .closing else { return }
        registry.connections[id]?.phase = .closing
        registry.closing += 1
        _ = shutdown(connection.file, Int32(SHUT_RDWR))
        connection.task?.cancel()
    }

    /// Cancels each connection past its deadline, ten times a second, until the server stops.
    private func reap() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(100))
            let now = ContinuousClock.now
            registry.withLock { registry in
                for (id, connection) in registry.connections {
                    guard let deadline = connection.deadline, deadline < now, connection.phase != .closing else { continue }
                    Self.close(&registry, id)
                    registry.timedOut += 1
                }
            }
        }
    }

    private func update(_ id: Int, phase: Phase? = nil, deadline: ContinuousClock.Instant?) {
        registry.withLock { registry in
            guard registry.connections[id]?.phase != .closing else { return }
            if let phase { registry.connections[id]?.phase = phase }
            registry.connections[id]?.deadline = deadline
        }
    }

    // MARK: One connection

    private func serve(_ socket: AsyncSocket, id: Int) async {
        defer {
            try? socket.close()
            registry.withLock { registry in
                if registry.connections.removeValue(forKey: id)?.phase == .closing { registry.closing -= 1 }
            }
        }
        do {
            var reader = RequestReader(limits: limits)
            var outcome = RequestReader.Outcome.more
            while outcome == .more {
                outcome = reader.read(try await socket.read(atMost: 4096))
            }
            switch outcome {
            case .more: return
            case let .refused(refusal):
                update(id, phase: .answer, deadline: .now + .seconds(limits.writeSeconds))
                let response = Self.refusal(refusal.status, "refused: \(refusal)\n")
                try await socket.write(response.head() + response.body)
                await drain(socket, id: id)
            case let .request(request):
                update(id, phase: .answer, deadline: nil)
                let response = await handler(request)
                try Task.checkCancellation()
                update(id, deadline: .now + .seconds(limits.writeSeconds))
                try await socket.write(response.head() + (request.method == "HEAD" ? Data() : response.body))
                guard let stream = response.stream, request.method != "HEAD" else { return }
                update(id, deadline: nil)
                while let frame = await stream.next(), !Task.isCancelled {
                    update(id, deadline: .now + .seconds(limits.writeSeconds))
                    try await socket.write(Data(frame))
                    update(id, deadline: nil)
                }
            }
        } catch {
            // The page went away, the deadline passed or the server stopped: the connection closes.
        }
    }

    /// After a refusal, reads (and drops) what the client is still sending for up to a quarter of
    /// a second and 64 KB, so that closing does not reset the connection before a client that
    /// sent a little too much reads the answer.
    private func drain(_ socket: AsyncSocket, id: Int) async {
        _ = shutdown(socket.socket.file.rawValue, Int32(SHUT_WR))
        update(id, deadline: .now + .milliseconds(250))
        var dropped = 0
        while dropped < 64 << 10, let bytes = try? await socket.read(atMost: 4096) { dropped += bytes.count }
    }

    static func refusal(_ status: Int, _ message: String) -> DashboardResponse {
        DashboardResponse(
            status: status, headers: [("Content-Type", "text/plain; charset=utf-8"), ("Cache-Control", "no-store")], body: Data(message.utf8))
    }
}

/// The thread the dashboard's connections run on: one for the process, at a lower scheduling
/// priority (nice 10), so that on a machine with every core busy a flood of connections takes its
/// time from the server and not from the training thread (or the main actor that writes checkpoints).
final class DashboardExecutor: TaskExecutor, Sendable {
    /// The process's one dashboard thread, started on first use; it waits for jobs for as long as the process lives.
    static let shared = DashboardExecutor(nice: 10)

    private let waiting = Mutex<[UnownedJob]>([])
    private let ready = DispatchSemaphore(value: 0)

    /// Starts the thread at `nice` (on Linux, the priority of the calling thread only).
    private init(nice: Int32) {
        let thread = Thread { [self] in
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, nice)
            while true {
                ready.wait()
                let batch = waiting.withLock { waiting in
                    defer { waiting = [] }
                    return waiting
                }
                for job in batch { job.runSynchronously(on: asUnownedTaskExecutor()) }
            }
        }
        thread.name = "neuron dashboard"
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        waiting.withLock { $0.append(job) }
        ready.signal()
    }
}
