// The HTTP side: the page, the state as Server-Sent Events and a handful of JSON routes, served
// by `DashboardListener` (bounded connections over FlyingSocks). Every request passes the gate
// first. A page that reads slowly, or goes away, costs its own connection's task and nothing else:
// its frames wait in a one-frame slot (`FrameBroadcaster`), and training never waits for the server.
import FlyingSocks
import Foundation
import NeuronCore
import NeuronTraining
import Synchronization

/// Serves a training run's dashboard on one address, bound to a ``DashboardBinding``.
public final class DashboardServer: Sendable {
    /// What can go wrong starting the server.
    public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        /// `--host` is not an IPv4 or IPv6 address.
        case badHost(String)
        /// The address could not be listened on (the port is taken).
        case cannotListen(host: String, port: Int, reason: String)

        public var description: String {
            switch self {
            case let .badHost(host): "--host \(host): expected an IPv4 or IPv6 address such as 127.0.0.1 or ::1"
            case let .cannotListen(host, port, reason): "cannot serve the dashboard on \(host):\(port): \(reason)"
            }
        }
    }

    /// The address listened on.
    public let host: String
    /// The port listened on (the one asked for, or the one the system chose for 0).
    public let port: Int
    /// The gate every request passes.
    public let gate: DashboardGate
    /// The bounds on each connection and on their number.
    public var limits: DashboardLimits { listener.limits }
    private let listener: DashboardListener
    private let binding: DashboardBinding

    /// The page's address, with the token.
    public var url: String { "http://\(host.contains(":") ? "[\(host)]" : host):\(port)/?token=\(gate.token)" }

    /// Whether `host` is a loopback address (the default); anything else reaches the network.
    public static func isLoopback(_ host: String) -> Bool {
        host == "::1" || host.hasPrefix("127.")
    }

    /// Starts serving `binding` on `host` and `port` (0: any free port) and publishing its frames.
    /// - Parameters:
    ///   - binding: the view model and engine the page shows.
    ///   - host: the address to listen on; loopback by default.
    ///   - port: the port to listen on; 0: any free port.
    ///   - token: the secret every request must carry.
    ///   - limits: the bounds on each connection and on their number.
    ///   - log: where the server says what goes wrong beyond one request (a failed accept).
    /// - Throws: ``Failure`` when the host is not an address or the port cannot be listened on.
    @MainActor
    public static func start(
        binding: DashboardBinding, host: String = "127.0.0.1", port: Int = 0, token: String = DashboardGate.makeToken(),
        limits: DashboardLimits = DashboardLimits(),
        log: @escaping @Sendable (String) -> Void = { FileHandle.standardError.write(Data($0.utf8)) }
    ) async throws(Failure) -> DashboardServer {
        guard (0...65535).contains(port) else { throw .cannotListen(host: host, port: port, reason: "a port is 0 to 65535") }
        let address: any SocketAddress
        do {
            address = host.contains(":") ? try sockaddr_in6.inet6(ip6: host, port: UInt16(port)) : try sockaddr_in.inet(ip4: host, port: UInt16(port))
        } catch {
            throw .badHost(host)
        }
        // The routes are bound once the listener knows its port (the gate names it); until then
        // nothing is accepted.
        let routes = RouteBox()
        let listener: DashboardListener
        do {
            listener = try await DashboardListener(address: address, limits: limits, log: log) { request in
                await routes.server?.respond(to: request) ?? DashboardListener.refusal(503, "starting\n")
            }
        } catch {
            throw .cannotListen(host: host, port: port, reason: "\(error.localizedDescription)")
        }
        let actual = listener.port
        let dashboard = DashboardServer(
            host: host, port: actual, gate: DashboardGate(token: token, host: host, port: actual), listener: listener, binding: binding)
        routes.server = dashboard
        listener.run()
        binding.start()
        return dashboard
    }

    private init(host: String, port: Int, gate: DashboardGate, listener: DashboardListener, binding: DashboardBinding) {
        (self.host, self.port, self.gate, self.listener, self.binding) = (host, port, gate, listener, binding)
    }

    /// Ends every page's stream, closes every connection and stops listening.
    @MainActor
    public func stop() async {
        binding.stop()
        await listener.stop()
    }

    /// Shows every connected page how the run ended, then stops as ``stop()`` does.
    ///
    /// `state` and `summary` are every page's last frame. Before closing, the server waits until
    /// each page's stream has written that frame and ended, or `patience` has passed, whichever
    /// comes first; with no page connected it does not wait at all. A page that had stopped
    /// reading costs at most `patience`, and the process exits on time.
    /// - Parameters:
    ///   - state: the run's final state (`RunEnd.state`).
    ///   - summary: what `summary.json` holds (`RunEnd.summary`); nil when the run diverged or failed.
    ///   - patience: the longest wait for the pages.
    /// - Returns: how many pages had not been sent the last frame when the wait ended (0: all had).
    @MainActor @discardableResult
    public func stop(showing state: TrainingViewState, summary: RunSummary?, patience: Duration = .seconds(3)) async -> Int {
        await stop(showing: state, summary: summary, patience: patience, clock: ContinuousClock())
    }

    /// ``stop(showing:summary:patience:)`` with `patience` measured on `clock`, which it sleeps on
    /// 10 ms at a time while a page has not been sent the end: a test passes a clock whose sleeps
    /// pass at once, to check how long the wait is without timing it.
    @MainActor @discardableResult
    func stop<C: Clock<Duration>>(showing state: TrainingViewState, summary: RunSummary?, patience: Duration, clock: C) async -> Int {
        binding.finish(state: state, summary: summary)
        let deadline = clock.now.advanced(by: patience)
        while binding.broadcaster.subscriberCount > 0, clock.now < deadline { try? await clock.sleep(for: .milliseconds(10)) }
        let unsent = binding.broadcaster.subscriberCount
        await stop()
        return unsent
    }

    /// Shows every connected page that the run failed with `message` (an error thrown after its
    /// last state), then stops: ``stop(showing:summary:patience:)`` with the view model's state, failed.
    @MainActor
    public func stop(failing message: String, patience: Duration = .seconds(3)) async {
        await stop(showing: binding.failedState(message), summary: nil, patience: patience)
    }

    /// Connections open now.
    var openConnections: Int { listener.openConnections }

    /// Pages whose event stream is open now.
    var connectedPages: Int { binding.broadcaster.subscriberCount }

    /// Makes the next `count` accepts fail as they do when the process is out of file descriptors.
    func simulateAcceptFailures(_ count: Int) { listener.simulatedAcceptFailures.store(count, ordering: .relaxed) }

    /// Accepts that failed so far.
    var acceptFailures: Int { listener.acceptFailures.load(ordering: .relaxed) }

    /// How long the accept loop has paused so far after failed accepts.
    var acceptPauses: Duration { .milliseconds(listener.acceptPauseMilliseconds.load(ordering: .relaxed)) }

    /// Connections closed so far to make room for newer ones, and because their deadline passed.
    var closedEarly: (evicted: Int, timedOut: Int) { listener.closedEarly }

    // MARK: Routes

    /// The answer to one request: refused at the gate (400 or 403), or routed.
    func respond(to request: DashboardRequest) async -> DashboardResponse {
        if let refusal = gate.check(token: request.queryValue("token"), values: request.values(of:)) {
            return Self.text(refusal.status, "refused: \(refusal)\n")
        }
        let get = request.method == "GET" || request.method == "HEAD"
        switch (request.path, get, request.method == "POST") {
        case ("/", true, _), ("/index.html", true, _):
            var response = DashboardResponse(status: 200, headers: Self.headers(type: "text/html; charset=utf-8"), body: Self.page)
            // Nothing from elsewhere: no script, style, image or connection outside this page and server.
            response.headers.append(
                (
                    "Content-Security-Policy",
                    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
                ))
            return response
        case ("/events", true, _):
            let subscription = binding.broadcaster.subscribe()
            await binding.publish()  // the new page sees the state at once
            return DashboardResponse(
                status: 200, headers: Self.headers(type: "text/event-stream") + [("X-Accel-Buffering", "no")], body: Data(), stream: subscription)
        case ("/api/state", true, _):
            return await Self.json(binding.stateJSON())
        case ("/api/event", _, true):
            guard request.values(of: "Content-Type").first?.lowercased().hasPrefix("application/json") == true else {
                return Self.text(415, "expected Content-Type: application/json\n")
            }
            let event: TrainingEvent
            do {
                event = try DashboardEventRequest.event(fromBody: Data(request.body))
            } catch {
                return Self.text(400, "\(error)\n")
            }
            return await Self.json(binding.handle(event))
        case ("/api/explain", true, _):
            return await explain(request)
        case ("/api/attention", _, true):
            return await attention(request)
        case ("/api/weights", true, _):
            guard let layer = Self.integer("layer", in: request) else { return Self.text(400, "expected ?layer=N\n") }
            guard let weights = await binding.weights(ofLayer: layer) else {
                return Self.text(409, "no weights to show for layer \(layer) now (a run owns the weights while it trains; pause it)\n")
            }
            struct Weights: Encodable { var layer: Int, shape: [Int], values: [Double] }
            return Self.json(try! TrainingViewState.encoder(.full).encode(Weights(layer: layer, shape: weights.shape, values: weights.values)))
        case ("/", false, _), ("/index.html", false, _), ("/events", false, _), ("/api/state", false, _), ("/api/event", _, false),
            ("/api/explain", false, _), ("/api/weights", false, _), ("/api/attention", _, false):
            return Self.text(405, "method \(request.method) not allowed on \(request.path)\n")
        default:
            return Self.text(404, "no such page: \(request.path)\n")
        }
    }

    private func explain(_ request: DashboardRequest) async -> DashboardResponse {
        let usage = "expected ?layer=L&unit=U[&sample=I][&position=P], whole numbers"
        guard let layer = Self.integer("layer", in: request), let unit = Self.integer("unit", in: request) else {
            return Self.text(400, usage + "\n")
        }
        // An optional value that is there must be a number: `sample=x` is refused, not read as sample 0.
        var optional: [String: Int] = [:]
        for name in ["sample", "position"] where request.queryValue(name) != nil {
            guard let value = Self.integer(name, in: request) else {
                return Self.text(400, "\(name)=\(request.queryValue(name)!.prefix(40)) is not a whole number; \(usage)\n")
            }
            optional[name] = value
        }
        do {
            guard
                let explanation = try await binding.explain(
                    layer: layer, unit: unit, sample: optional["sample"] ?? 0, position: optional["position"])
            else {
                return Self.text(409, "a run owns the weights while it trains: pause it to explain a unit\n")
            }
            struct Answer: Encodable { var explanation: UnitExplanation, table: String }
            return Self.json(try TrainingViewState.encoder(.full).encode(Answer(explanation: explanation, table: explanation.table)))
        } catch {
            return Self.text(400, "\(error)\n")
        }
    }

    /// The most characters of a line `/api/attention` reads: far more than any network's positions
    /// (a longer line is cropped to them), few enough that checking them costs nothing.
    static let attentionCharacters = 1000

    /// `POST /api/attention` with `{"text": "a line"}`: every attention layer's weights on the line.
    private func attention(_ request: DashboardRequest) async -> DashboardResponse {
        guard request.values(of: "Content-Type").first?.lowercased().hasPrefix("application/json") == true else {
            return Self.text(415, "expected Content-Type: application/json\n")
        }
        // Checked before JSON is parsed, so that the answer names the byte rather than a parser's complaint.
        if let offset = Self.firstInvalidUTF8(request.body) {
            return Self.text(
                400,
                "the body is not UTF-8 text: byte \(offset) (0x\(String(request.body[offset], radix: 16, uppercase: true)), counted from 0) starts no character\n"
            )
        }
        struct Line: Decodable { var text: String }
        guard let line = try? JSONDecoder().decode(Line.self, from: Data(request.body)) else {
            return Self.text(400, #"expected a JSON body {"text": "a line"}"# + "\n")
        }
        let count = line.text.unicodeScalars.count
        guard count <= Self.attentionCharacters else {
            return Self.text(
                413, "a line of \(count) characters; at most \(Self.attentionCharacters) are read (the network reads only its last positions)\n")
        }
        do {
            guard let maps = try await binding.attentionMaps(text: line.text) else {
                return Self.text(409, "a run owns the weights while it trains: pause it to see attention\n")
            }
            return Self.json(try TrainingViewState.encoder(.full).encode(maps))
        } catch {
            return Self.text(400, "\(error)\n")
        }
    }

    /// The offset of the first byte of `bytes` that is not part of a UTF-8 character; nil when all are.
    static func firstInvalidUTF8(_ bytes: [UInt8]) -> Int? {
        var parser = Unicode.UTF8.ForwardParser(), iterator = bytes.makeIterator(), offset = 0
        while true {
            switch parser.parseScalar(from: &iterator) {
            case let .valid(scalar): offset += scalar.count
            case .emptyInput: return nil
            case .error: return offset
            }
        }
    }

    // MARK: Answers

    private static let page = Data(PackageResources.dashboard_html)

    private static func headers(type: String) -> [(name: String, value: String)] {
        [
            ("Content-Type", type), ("Cache-Control", "no-store"),
            ("Referrer-Policy", "no-referrer"),  // the token never leaves in a Referer
            ("X-Content-Type-Options", "nosniff"), ("X-Frame-Options", "DENY"),
        ]
    }

    private static func text(_ status: Int, _ message: String) -> DashboardResponse {
        DashboardResponse(status: status, headers: headers(type: "text/plain; charset=utf-8"), body: Data(message.utf8))
    }

    private static func json(_ data: Data) -> DashboardResponse {
        DashboardResponse(status: 200, headers: headers(type: "application/json"), body: data)
    }

    private static func integer(_ name: String, in request: DashboardRequest) -> Int? {
        request.queryValue(name).flatMap { Int($0) }
    }
}

/// The server the routes answer for, set once it exists (the listener is made first, to learn its port).
private final class RouteBox: Sendable {
    private let held = Mutex<DashboardServer?>(nil)
    var server: DashboardServer? {
        get { held.withLock { $0 } }
        set { held.withLock { $0 = newValue } }
    }
}
