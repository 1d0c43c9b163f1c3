// Who may talk to the dashboard: whoever holds the token printed at start (as Jupyter does), from
// the page itself. A page of another site open in the same browser can reach a loopback port, so
// the token alone is not the whole story: requests that a browser marks as cross-site, or that
// name another origin or another host (DNS rebinding), are refused too.

/// Decides whether a request may reach the dashboard. Pure: no sockets, no clock.
public struct DashboardGate: Sendable, Equatable {
    /// Why a request was refused: 400 Bad Request without exactly one `Host`, else 403 Forbidden.
    public enum Refusal: Error, Equatable, Sendable, CustomStringConvertible {
        /// No `Host` header: the host the request is meant for cannot be checked.
        case missingHost
        /// More than one `Host` header: which one a proxy or the browser meant cannot be told.
        case duplicateHost
        /// No `token` query item, or a wrong one.
        case badToken
        /// An `Origin` header that is not the dashboard's own.
        case crossOrigin(String)
        /// `Sec-Fetch-Site` says the request came from another site.
        case crossSite(String)
        /// A `Host` header that names neither the address the server listens on nor a loopback name.
        case foreignHost(String)

        /// The HTTP status answered.
        public var status: Int {
            switch self {
            case .missingHost, .duplicateHost: 400
            case .badToken, .crossOrigin, .crossSite, .foreignHost: 403
            }
        }

        public var description: String {
            switch self {
            case .missingHost: "no Host header"
            case .duplicateHost: "more than one Host header"
            case .badToken: "missing or wrong token"
            case let .crossOrigin(origin): "cross-origin request from \(origin)"
            case let .crossSite(site): "cross-site request (Sec-Fetch-Site: \(site))"
            case let .foreignHost(host): "request for host \(host)"
            }
        }
    }

    /// The secret every request carries as `?token=`.
    public let token: String
    /// The hosts a request may name, with the port (`127.0.0.1:8765`, `localhost:8765`, …).
    public let hosts: Set<String>

    /// A gate for a server reachable as `host` on `port`; loopback names are always allowed.
    public init(token: String, host: String, port: Int) {
        self.token = token
        let names = [host, "127.0.0.1", "localhost", "[::1]"].map { $0.contains(":") && !$0.hasPrefix("[") ? "[\($0)]" : $0 }
        hosts = Set(names.map { "\($0):\(port)" })
    }

    /// 32 random hex digits (128 bits) from the system's generator.
    public static func makeToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<4).map { _ in
            let word = String(UInt32.random(in: .min ... .max, using: &generator), radix: 16)
            return String(repeating: "0", count: 8 - word.count) + word
        }.joined()
    }

    /// Nil when the request may pass, else why not.
    /// - Parameters:
    ///   - given: the request's `token` query item.
    ///   - values: every value of the request's header of a name (case-insensitive), in order.
    public func check(token given: String?, values: (String) -> [String]) -> Refusal? {
        let host = values("Host")
        guard host.count <= 1 else { return .duplicateHost }
        guard let host = host.first else { return .missingHost }
        guard let given, Self.equalInConstantTime(given, token) else { return .badToken }
        if !hosts.contains(host.lowercased()) { return .foreignHost(host) }
        if let site = values("Sec-Fetch-Site").first(where: { $0 != "same-origin" && $0 != "none" }) { return .crossSite(site) }
        if let origin = values("Origin").first(where: { origin in !hosts.contains { "http://\($0)" == origin.lowercased() } }) {
            return .crossOrigin(origin)
        }
        return nil
    }

    /// Compares every byte whatever the first difference, so that timing does not reveal a prefix.
    static func equalInConstantTime(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        var difference = UInt8(x.count == y.count ? 0 : 1)
        for i in 0..<min(x.count, y.count) { difference |= x[i] ^ y[i] }
        return difference == 0
    }
}
