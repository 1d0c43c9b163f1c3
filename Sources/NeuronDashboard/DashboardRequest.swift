// Requests in, bounded: the dashboard reads a request's head and body through `RequestReader`,
// which holds at most `headBytes + bodyBytes` of a connection's bytes, searches each byte for the
// head's end once (linear in what arrives), and refuses with a status as soon as a bound is passed
// (a request line longer than `requestLineBytes`: 414; a head longer than `headBytes` or with more
// than `headerCount` fields: 431; a body longer than `bodyBytes`: 413). Pure: no sockets, no clock;
// the fuzz test feeds it mutated heads.
import Foundation

/// The bounds on what one connection may send and how long it may take.
public struct DashboardLimits: Sendable, Equatable {
    /// The request line (`GET /api/state?token=… HTTP/1.1`), in bytes.
    public var requestLineBytes = 8 << 10
    /// The whole head: request line and header fields, in bytes.
    public var headBytes = 16 << 10
    /// Header fields in a head.
    public var headerCount = 64
    /// A request body (`POST /api/event`), in bytes.
    public var bodyBytes = 16 << 10
    /// Connections open at once; past it the oldest still sending its request is closed.
    public var connections = 512
    /// Seconds from a connection's accept to its whole request (head and body) read.
    public var requestSeconds = 5.0
    /// Seconds one write of an answer (or of one event-stream frame) may take.
    public var writeSeconds = 10.0

    /// The default bounds.
    public init() {}
}

/// One request as the dashboard's routes see it: method, path, query, header fields, body.
public struct DashboardRequest: Sendable, Equatable {
    /// `GET`, `POST`, … as sent (case-sensitive, as HTTP methods are).
    public var method: String
    /// The target's path, before any `?`.
    public var path: String
    /// The query's items, percent-decoded, in order.
    public var query: [(name: String, value: String)]
    /// The header fields in order, names as sent.
    public var headers: [(name: String, value: String)]
    /// The body (`Content-Length` bytes).
    public var body: [UInt8]

    /// Every value of header `name` (case-insensitive), in order.
    public func values(of name: String) -> [String] {
        headers.compactMap { $0.name.caseInsensitiveCompare(name) == .orderedSame ? $0.value : nil }
    }

    /// The first query item named `name`.
    public func queryValue(_ name: String) -> String? { query.first { $0.name == name }?.value }

    public static func == (a: Self, b: Self) -> Bool {
        a.method == b.method && a.path == b.path && a.body == b.body && a.query.map { [$0.name, $0.value] } == b.query.map { [$0.name, $0.value] }
            && a.headers.map { [$0.name, $0.value] } == b.headers.map { [$0.name, $0.value] }
    }
}

/// Why a request was refused before it reached the gate, with the status it is answered with.
public enum RequestRefusal: Error, Equatable, Sendable, CustomStringConvertible {
    /// The request line passed `requestLineBytes` (414).
    case requestLineTooLong(limit: Int)
    /// The head passed `headBytes` (431).
    case headTooLarge(limit: Int)
    /// More than `headerCount` header fields (431).
    case tooManyHeaders(limit: Int)
    /// A `Content-Length` over `bodyBytes` (413).
    case bodyTooLarge(length: Int, limit: Int)
    /// A body framed by `Transfer-Encoding` rather than `Content-Length` (411).
    case lengthRequired
    /// Not `HTTP/1.0` or `HTTP/1.1` (505).
    case unsupportedVersion(String)
    /// A head that is not HTTP (400).
    case malformed(String)

    /// The HTTP status answered.
    public var status: Int {
        switch self {
        case .requestLineTooLong: 414
        case .headTooLarge, .tooManyHeaders: 431
        case .bodyTooLarge: 413
        case .lengthRequired: 411
        case .unsupportedVersion: 505
        case .malformed: 400
        }
    }

    public var description: String {
        switch self {
        case let .requestLineTooLong(limit): "request line longer than \(limit) bytes"
        case let .headTooLarge(limit): "request head longer than \(limit) bytes"
        case let .tooManyHeaders(limit): "more than \(limit) header fields"
        case let .bodyTooLarge(length, limit): "body of \(length) bytes; at most \(limit) accepted"
        case .lengthRequired: "a body needs a Content-Length (Transfer-Encoding is not accepted)"
        case let .unsupportedVersion(version): "HTTP version \(version) not supported; expected HTTP/1.1 or HTTP/1.0"
        case let .malformed(what): "malformed request: \(what)"
        }
    }
}

/// Reads one request from a connection's bytes, as they arrive, within ``DashboardLimits``.
public struct RequestReader: Sendable {
    /// What the bytes so far make.
    public enum Outcome: Sendable, Equatable {
        /// Not a whole request yet.
        case more
        /// A whole request (bytes past its body are ignored: one request per connection).
        case request(DashboardRequest)
        /// A request refused; the connection answers with the refusal's status and closes.
        case refused(RequestRefusal)
    }

    /// The bounds applied.
    public let limits: DashboardLimits
    private var bytes: [UInt8] = []
    /// Bytes already searched for the head's end.
    private var searched = 0
    /// Bytes handed to the search for the head's end so far, counting again the up to three looked
    /// behind on each read: linear in the bytes that arrive (tests check the work, not its time).
    private(set) var examinedBytes = 0
    /// Where the request line's line feed is, once seen.
    private var requestLineEnd: Int?
    /// The head, once read, and where its body starts in `bytes`.
    private var head: (request: DashboardRequest, bodyStart: Int, bodyLength: Int)?
    private var outcome = Outcome.more

    /// The bytes held now (at most `headBytes + bodyBytes` and one read past them).
    public var heldBytes: Int { bytes.count }

    public init(limits: DashboardLimits = DashboardLimits()) {
        self.limits = limits
        bytes.reserveCapacity(min(4096, limits.headBytes))
    }

    /// Adds the bytes that arrived and says what they make. Once a request or a refusal is
    /// returned, later calls return it again and hold nothing more.
    public mutating func read(_ arrived: some Collection<UInt8>) -> Outcome {
        guard outcome == .more else { return outcome }
        if let head {
            let wanted = head.bodyStart + head.bodyLength - bytes.count
            bytes.append(contentsOf: arrived.prefix(max(0, wanted)))
        } else {
            bytes.append(contentsOf: arrived.prefix(max(0, limits.headBytes + 4 + limits.bodyBytes - bytes.count)))
            outcome = findHead()
            guard outcome == .more else { return finish() }
        }
        if let head, bytes.count >= head.bodyStart + head.bodyLength {
            var request = head.request
            request.body = Array(bytes[head.bodyStart..<head.bodyStart + head.bodyLength])
            outcome = .request(request)
        }
        return finish()
    }

    private mutating func finish() -> Outcome {
        if outcome != .more { bytes = [] }
        return outcome
    }

    /// Searches the new bytes for the empty line ending the head; parses the head once found.
    private mutating func findHead() -> Outcome {
        // Line feeds found by memchr, each looked behind once: the empty line is LF LF, LF CR LF
        // or CR LF CR LF (a bare LF ends a line as CR LF does).
        let from = max(0, searched - 3)
        examinedBytes += bytes.count - from
        let (end, firstFeed): ((head: Int, body: Int)?, Int?) = bytes.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return (nil, nil) }
            var firstFeed: Int?
            var i = from
            while i < buffer.count, let found = memchr(base + i, 0x0A, buffer.count - i) {
                i = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
                if firstFeed == nil { firstFeed = i }
                if i >= 1 && buffer[i - 1] == 0x0A { return ((i - 1, i + 1), firstFeed) }
                if i >= 3 && buffer[i - 1] == 0x0D && buffer[i - 2] == 0x0A && buffer[i - 3] == 0x0D { return ((i - 3, i + 1), firstFeed) }
                if i >= 2 && buffer[i - 1] == 0x0D && buffer[i - 2] == 0x0A { return ((i - 2, i + 1), firstFeed) }
                i += 1
            }
            return (nil, firstFeed)
        }
        if requestLineEnd == nil { requestLineEnd = firstFeed }
        searched = bytes.count
        // The request line's length (without its CR LF) decides first, however the bytes were split.
        let lineLength = requestLineEnd.map { $0 > 0 && bytes[$0 - 1] == 0x0D ? $0 - 1 : $0 } ?? max(0, bytes.count - 1)
        if lineLength > limits.requestLineBytes { return .refused(.requestLineTooLong(limit: limits.requestLineBytes)) }
        guard let end else {
            // The empty line (up to 4 bytes) may still end a head of `headBytes` three bytes on.
            if bytes.count > limits.headBytes + 3 { return .refused(.headTooLarge(limit: limits.headBytes)) }
            return .more
        }
        guard end.head <= limits.headBytes else { return .refused(.headTooLarge(limit: limits.headBytes)) }
        switch Self.parseHead(bytes[..<end.head], limits: limits) {
        case let .failure(refusal): return .refused(refusal)
        case let .success((request, length)):
            head = (request, end.body, length)
            return .more
        }
    }

    /// The request line and header fields of `head` (without the empty line), and the body's length.
    static func parseHead(_ head: ArraySlice<UInt8>, limits: DashboardLimits) -> Result<(DashboardRequest, Int), RequestRefusal> {
        var lines = head.split(separator: 0x0A, omittingEmptySubsequences: false).map { line in
            line.last == 0x0D ? line.dropLast() : line
        }
        guard let first = lines.first, !first.isEmpty else { return .failure(.malformed("no request line")) }
        guard first.count <= limits.requestLineBytes else { return .failure(.requestLineTooLong(limit: limits.requestLineBytes)) }
        lines.removeFirst()
        guard lines.count <= limits.headerCount else { return .failure(.tooManyHeaders(limit: limits.headerCount)) }

        let parts = first.split(separator: 0x20, omittingEmptySubsequences: false)
        guard parts.count == 3 else { return .failure(.malformed("expected a request line such as GET / HTTP/1.1")) }
        let (method, target, version) = (parts[0], parts[1], parts[2])
        guard (1...16).contains(method.count), method.allSatisfy(isTokenByte) else { return .failure(.malformed("bad method")) }
        guard target.first == UInt8(ascii: "/"), target.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            return .failure(.malformed("expected a target starting with /"))
        }
        let versionText = String(decoding: version, as: UTF8.self)
        guard versionText == "HTTP/1.1" || versionText == "HTTP/1.0" else {
            guard versionText.hasPrefix("HTTP/"), version.allSatisfy({ (0x21...0x7E).contains($0) }) else {
                return .failure(.malformed("expected HTTP/1.1 at the end of the request line"))
            }
            return .failure(.unsupportedVersion(versionText))
        }

        var headers: [(name: String, value: String)] = []
        headers.reserveCapacity(lines.count)
        for line in lines {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return .failure(.malformed("a header line without ':'")) }
            let name = line[..<colon]
            // An empty name, or one starting with a space (a folded line), is not a field.
            guard !name.isEmpty, name.allSatisfy(isTokenByte) else { return .failure(.malformed("bad header name")) }
            var value = line[(colon + 1)...]
            while let byte = value.first, byte == 0x20 || byte == 0x09 { value.removeFirst() }
            while let byte = value.last, byte == 0x20 || byte == 0x09 { value.removeLast() }
            guard value.allSatisfy({ $0 == 0x09 || $0 >= 0x20 && $0 != 0x7F }) else {
                return .failure(.malformed("a control byte in a header value"))
            }
            headers.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
        }

        func values(_ name: String) -> [String] {
            headers.compactMap { $0.name.caseInsensitiveCompare(name) == .orderedSame ? $0.value : nil }
        }
        guard values("Transfer-Encoding").isEmpty else { return .failure(.lengthRequired) }
        var length = 0
        let lengths = values("Content-Length")
        if let text = lengths.first {
            guard lengths.count == 1 else { return .failure(.malformed("more than one Content-Length")) }
            guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let value = Int(text) else {
                return .failure(.malformed("Content-Length \(text.prefix(40)) is not a number of bytes"))
            }
            guard value <= limits.bodyBytes else { return .failure(.bodyTooLarge(length: value, limit: limits.bodyBytes)) }
            length = value
        }

        let targetText = String(decoding: target, as: UTF8.self)
        let split = targetText.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let query: [(name: String, value: String)] =
            split.count < 2
            ? []
            : split[1].split(separator: "&").map { item in
                let pair = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                func decoded(_ text: Substring) -> String { text.removingPercentEncoding ?? String(text) }
                return (decoded(pair[0]), pair.count > 1 ? decoded(pair[1]) : "")
            }
        let request = DashboardRequest(
            method: String(decoding: method, as: UTF8.self), path: String(split[0]), query: query, headers: headers, body: [])
        return .success((request, length))
    }

    /// RFC 9110's `tchar`: the bytes a method or a field name is made of.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }
}
