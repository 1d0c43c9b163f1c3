import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Runs `work` (blocking socket calls) on a thread of its own, off the main actor (the server's
/// routes need it) and off the cooperative pool (the server's socket pool, an actor, needs its
/// threads: a blocking client on one of them can starve the server it waits for).
func off<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { done in
        Thread { done.resume(with: Result { try work() }) }.start()
    }
}

/// A TCP socket connected to 127.0.0.1:`port`, or nil when none can be opened or the connection is refused.
private func loopbackSocket(port: Int) -> Int32? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else {
        close(fd)
        return nil
    }
    return fd
}

/// A minimal HTTP/1.1 client over a plain socket: it sends exactly the headers given (a browser's
/// `Origin` or a foreign `Host` included, which URLSession would not let a test forge) and reads
/// the answer until the server closes, the expected text shows, or the time is up.
enum RawHTTP {
    struct Answer {
        var status: Int
        var head: String
        var body: String
    }

    /// Sends one request to 127.0.0.1:`port` and reads the answer (`Connection: close`).
    /// - Parameters:
    ///   - until: stop reading once the body holds this text (an event stream never ends).
    static func request(
        port: Int, method: String = "GET", path: String, headers: [String: String] = [:], body: String = "",
        until: String? = nil, timeout: Double = 10
    ) throws -> Answer {
        guard let fd = loopbackSocket(port: port) else { throw POSIXError(.ECONNREFUSED) }
        defer { close(fd) }
        var receiveTimeout = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &receiveTimeout, socklen_t(MemoryLayout<timeval>.size))
        var all = ["Host": "127.0.0.1:\(port)", "Connection": "close"]
        for (k, v) in headers { all[k] = v }
        if !body.isEmpty || method == "POST" { all["Content-Length"] = "\(body.utf8.count)" }
        let text = "\(method) \(path) HTTP/1.1\r\n" + all.map { "\($0.key): \($0.value)\r\n" }.joined() + "\r\n" + body
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { break }
            if n > 0 { received += buffer[0..<n] }
            if let until, String(decoding: received, as: UTF8.self).contains(until) { break }
        }
        let answer = String(decoding: received, as: UTF8.self)
        let parts = answer.components(separatedBy: "\r\n\r\n")
        let head = parts.first ?? ""
        let status = head.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        return Answer(status: status, head: head, body: parts.dropFirst().joined(separator: "\r\n\r\n"))
    }
}

/// One client socket to 127.0.0.1, held open for as long as a test needs: for idle, slow and
/// oversized requests, sent in pieces. Every wait is bounded by a timeout.
final class RawConnection: Sendable {
    let fd: Int32

    /// Connects to 127.0.0.1:`port`; nil when the connection is refused.
    init?(port: Int) {
        guard let fd = loopbackSocket(port: port) else { return nil }
        self.fd = fd
        // A send the server does not read fails after 200 ms rather than waiting for ever.
        var sendTimeout = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &sendTimeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    /// Sends `bytes`; how many went (fewer when the server stopped reading or closed).
    @discardableResult
    func send(_ bytes: some Collection<UInt8>) -> Int {
        let array = Array(bytes)
        var sent = 0
        while sent < array.count {
            let n = array.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, array.count - sent, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { break }
            sent += n
        }
        return sent
    }

    @discardableResult
    func send(_ text: String) -> Int { send(Array(text.utf8)) }

    /// Reads until the server closes the connection or `timeout` seconds pass: what arrived, and
    /// whether the server closed (end of stream or reset).
    func receive(timeout: Double) -> (text: String, closed: Bool) {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 50) > 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return (String(decoding: received, as: UTF8.self), true) }
            received += buffer[0..<n]
        }
        return (String(decoding: received, as: UTF8.self), false)
    }

    /// The status of the answer in `text`, or 0.
    static func status(_ text: String) -> Int {
        text.split(separator: " ", maxSplits: 2).dropFirst().first.flatMap { Int($0) } ?? 0
    }
}
