// The HTTP side: FlyingFox (no swift-nio, so the first build stays quick) serving the page, the
// state as Server-Sent Events and a handful of JSON routes. Every request passes the gate first.
// A page that reads slowly, or goes away, costs its own connection's task and nothing else: its
// frames wait in a one-frame slot (`FrameBroadcaster`), and training never waits for the server.
import FlyingFox
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
    private let server: HTTPServer
    private let task: Task<Void, any Error>
    private let binding: DashboardBinding

    /// The page's address, with the token.
    public var url: String { "http://\(host.contains(":") ? "[\(host)]" : host):\(port)/?token=\(gate.token)" }

    /// Whether `host` is a loopback address (the default); anything else reaches the network.
    public static func isLoopback(_ host: String) -> Bool {
        host == "::1" || host.hasPrefix("127.")
    }

    /// Starts serving `binding` on `host` and `port` (0: any free port) and publishing its frames.
    /// - Throws: ``Failure`` when the host is not an address or the port cannot be listened on.
    @MainActor
    public static func start(
        binding: DashboardBinding, host: String = "127.0.0.1", port: Int = 0, token: String = DashboardGate.makeToken()
    ) async throws(Failure) -> DashboardServer {
        guard (0...65535).contains(port) else { throw .cannotListen(host: host, port: port, reason: "a port is 0 to 65535") }
        let address: any SocketAddress
        do {
            address = host.contains(":") ? try sockaddr_in6.inet6(ip6: host, port: UInt16(port)) : try sockaddr_in.inet(ip4: host, port: UInt16(port))
        } catch {
            throw .badHost(host)
        }
        // Long-lived event streams are not requests that time out: the timeout bounds a handler's
        // answer only, and the stream's answer is immediate.
        let server = HTTPServer(config: .init(address: address, timeout: 30, logger: .disabled))
        let failure = Mutex<String?>(nil)
        let task = Task {
            do {
                try await server.run()
            } catch {
                failure.withLock { $0 = "\(error)" }
                throw error
            }
        }
        // Listening, or failed to (the port is taken): whichever comes first, within 10 s.
        for _ in 0..<1000 where failure.withLock({ $0 }) == nil {
            if await server.isListening { break }
            try? await Task.sleep(for: .milliseconds(10))
        }
        guard await server.isListening else {
            task.cancel()
            throw .cannotListen(host: host, port: port, reason: failure.withLock { $0 } ?? "not listening after 10 s")
        }
        let actual: Int
        switch await server.listeningAddress {
        case let .ip4(_, p)?, let .ip6(_, p)?: actual = Int(p)
        default: actual = port
        }
        let dashboard = DashboardServer(
            host: host, port: actual, gate: DashboardGate(token: token, host: host, port: actual), server: server, task: task, binding: binding)
        await server.appendRoute("*") { [dashboard] request in await dashboard.respond(to: request) }
        binding.start()
        return dashboard
    }

    private init(host: String, port: Int, gate: DashboardGate, server: HTTPServer, task: Task<Void, any Error>, binding: DashboardBinding) {
        (self.host, self.port, self.gate, self.server, self.task, self.binding) = (host, port, gate, server, task, binding)
    }

    /// Ends every page's stream and stops listening.
    @MainActor
    public func stop() async {
        binding.stop()
        await server.stop(timeout: 1)
        task.cancel()
    }

    // MARK: Routes

    /// The answer to one request: refused at the gate (403), or routed.
    func respond(to request: HTTPRequest) async -> HTTPResponse {
        let token = request.query.first { $0.name == "token" }?.value
        if let refusal = gate.check(token: token, header: { request.headers[HTTPHeader($0)] }) {
            return Self.text(.forbidden, "refused: \(refusal)\n")
        }
        let get = request.method == .GET || request.method == .HEAD
        switch (request.path, get, request.method == .POST) {
        case ("/", true, _), ("/index.html", true, _):
            var response = HTTPResponse(
                statusCode: .ok, headers: Self.headers(type: "text/html; charset=utf-8"), body: Data(PackageResources.dashboard_html))
            // Nothing from elsewhere: no script, style, image or connection outside this page and server.
            response.headers[HTTPHeader("Content-Security-Policy")] =
                "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
            return response
        case ("/events", true, _):
            let subscription = binding.broadcaster.subscribe()
            await binding.publish()  // the new page sees the state at once
            var headers = Self.headers(type: "text/event-stream")
            headers[HTTPHeader("X-Accel-Buffering")] = "no"
            return HTTPResponse(statusCode: .ok, headers: headers, body: HTTPBodySequence(from: subscription, suggestedBufferSize: 1 << 16))
        case ("/api/state", true, _):
            return await Self.json(binding.frame().json())
        case ("/api/event", _, true):
            guard request.headers[.contentType]?.lowercased().hasPrefix("application/json") == true else {
                return Self.text(.unsupportedMediaType, "expected Content-Type: application/json\n")
            }
            let event: TrainingEvent
            do {
                event = try DashboardEventRequest.event(fromBody: try await request.bodyData)
            } catch {
                return Self.text(.badRequest, "\(error)\n")
            }
            return await Self.json(binding.handle(event).json())
        case ("/api/explain", true, _):
            return await explain(request)
        case ("/api/weights", true, _):
            guard let layer = Self.integer("layer", in: request) else { return Self.text(.badRequest, "expected ?layer=N\n") }
            guard let weights = await binding.weights(ofLayer: layer) else {
                return Self.text(.conflict, "no weights to show for layer \(layer) now (a run owns the weights while it trains; pause it)\n")
            }
            struct Weights: Encodable { var layer: Int, shape: [Int], values: [Double] }
            return Self.json(try! DashboardJSON.encoder.encode(Weights(layer: layer, shape: weights.shape, values: weights.values)))
        case ("/", false, _), ("/index.html", false, _), ("/events", false, _), ("/api/state", false, _), ("/api/event", _, false),
            ("/api/explain", false, _), ("/api/weights", false, _):
            return Self.text(.methodNotAllowed, "method \(request.method.rawValue) not allowed on \(request.path)\n")
        default:
            return Self.text(.notFound, "no such page: \(request.path)\n")
        }
    }

    private func explain(_ request: HTTPRequest) async -> HTTPResponse {
        guard let layer = Self.integer("layer", in: request), let unit = Self.integer("unit", in: request) else {
            return Self.text(.badRequest, "expected ?layer=L&unit=U[&sample=I]\n")
        }
        let sample = Self.integer("sample", in: request) ?? 0
        do {
            guard let explanation = try await binding.explain(layer: layer, unit: unit, sample: sample) else {
                return Self.text(.conflict, "a run owns the weights while it trains: pause it to explain a unit\n")
            }
            struct Answer: Encodable { var explanation: UnitExplanation, table: String }
            return Self.json(try DashboardJSON.encoder.encode(Answer(explanation: explanation, table: explanation.table)))
        } catch {
            return Self.text(.badRequest, "\(error)\n")
        }
    }

    // MARK: Answers

    private static func headers(type: String) -> HTTPHeaders {
        var headers = HTTPHeaders()
        headers[.contentType] = type
        headers[.cacheControl] = "no-store"
        headers[HTTPHeader("Referrer-Policy")] = "no-referrer"  // the token never leaves in a Referer
        headers[HTTPHeader("X-Content-Type-Options")] = "nosniff"
        headers[HTTPHeader("X-Frame-Options")] = "DENY"
        return headers
    }

    private static func text(_ status: HTTPStatusCode, _ message: String) -> HTTPResponse {
        HTTPResponse(statusCode: status, headers: headers(type: "text/plain; charset=utf-8"), body: Data(message.utf8))
    }

    private static func json(_ data: Data) -> HTTPResponse {
        HTTPResponse(statusCode: .ok, headers: headers(type: "application/json"), body: data)
    }

    private static func integer(_ name: String, in request: HTTPRequest) -> Int? {
        request.query.first { $0.name == name }.flatMap { Int($0.value) }
    }
}
