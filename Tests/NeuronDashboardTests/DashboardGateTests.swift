import Testing

@testable import NeuronDashboard

@Suite("The dashboard's gate: token, origin, host")
struct DashboardGateTests {
    let gate = DashboardGate(token: "abc123", host: "127.0.0.1", port: 8765)

    /// The gate's answer to `token` with `headers` (the server's own Host unless given).
    private func check(_ token: String?, _ headers: [String: String] = [:]) -> DashboardGate.Refusal? {
        let fields = headers.keys.contains { $0.lowercased() == "host" } ? headers : headers.merging(["Host": "127.0.0.1:8765"]) { $1 }
        return check(token, fields: fields.map { ($0.key, $0.value) })
    }

    private func check(_ token: String?, fields: [(String, String)]) -> DashboardGate.Refusal? {
        gate.check(token: token) { name in fields.filter { $0.0.lowercased() == name.lowercased() }.map(\.1) }
    }

    @Test("The right token passes; none, a wrong one or a prefix of it is refused")
    func token() {
        #expect(check("abc123") == nil)
        #expect(check(nil) == .badToken)
        #expect(check("abc124") == .badToken)
        #expect(check("abc12") == .badToken)
        #expect(check("abc1234") == .badToken)
        #expect(check("") == .badToken)
    }

    @Test("The page's own origin passes; another origin or a cross-site fetch is refused")
    func origin() {
        #expect(check("abc123", ["Origin": "http://127.0.0.1:8765", "Sec-Fetch-Site": "same-origin"]) == nil)
        #expect(check("abc123", ["Origin": "http://localhost:8765"]) == nil)
        #expect(check("abc123", ["Sec-Fetch-Site": "none"]) == nil)  // typed into the address bar
        #expect(check("abc123", ["Origin": "http://evil.example"]) == .crossOrigin("http://evil.example"))
        #expect(check("abc123", ["Origin": "http://127.0.0.1:9999"]) == .crossOrigin("http://127.0.0.1:9999"))
        #expect(check("abc123", ["Origin": "null"]) == .crossOrigin("null"))
        #expect(check("abc123", ["Sec-Fetch-Site": "cross-site"]) == .crossSite("cross-site"))
        #expect(check("abc123", ["Sec-Fetch-Site": "same-site"]) == .crossSite("same-site"))
    }

    @Test("A Host other than the server's own or a loopback name is refused (DNS rebinding)")
    func host() {
        #expect(check("abc123", ["Host": "127.0.0.1:8765"]) == nil)
        #expect(check("abc123", ["Host": "LOCALHOST:8765"]) == nil)
        #expect(check("abc123", ["Host": "[::1]:8765"]) == nil)
        #expect(check("abc123", ["Host": "rebind.example:8765"]) == .foreignHost("rebind.example:8765"))
        #expect(check("abc123", ["Host": "127.0.0.1:80"]) == .foreignHost("127.0.0.1:80"))
        let wide = DashboardGate(token: "t", host: "10.1.2.3", port: 80)
        #expect(wide.check(token: "t") { $0 == "Host" ? ["10.1.2.3:80"] : [] } == nil)
    }

    @Test("A request without a Host, or with two, is refused with 400 before its token is looked at")
    func hostCount() {
        #expect(check("abc123", fields: []) == .missingHost)
        #expect(check(nil, fields: [("Accept", "*/*")]) == .missingHost)
        // Two Host headers, the last the server's own: which one a proxy or a browser meant cannot be told.
        #expect(check("abc123", fields: [("Host", "rebind.example:8765"), ("Host", "127.0.0.1:8765")]) == .duplicateHost)
        #expect(check("abc123", fields: [("Host", "127.0.0.1:8765"), ("host", "127.0.0.1:8765")]) == .duplicateHost)
        #expect(DashboardGate.Refusal.missingHost.status == 400 && DashboardGate.Refusal.duplicateHost.status == 400)
        #expect(DashboardGate.Refusal.badToken.status == 403)
        // Any foreign Origin among several is refused.
        #expect(check("abc123", ["Origin": "http://127.0.0.1:8765"]) == nil)
        #expect(
            check("abc123", fields: [("Host", "127.0.0.1:8765"), ("Origin", "http://127.0.0.1:8765"), ("Origin", "http://evil.example")])
                == .crossOrigin("http://evil.example"))
    }

    @Test("Tokens are 32 hex digits, new each time")
    func tokens() {
        let a = DashboardGate.makeToken(), b = DashboardGate.makeToken()
        #expect(a.count == 32 && a.allSatisfy(\.isHexDigit) && b.count == 32 && a != b)
    }
}
