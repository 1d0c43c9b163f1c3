import Foundation

#if canImport(Glibc)
import Glibc
#endif

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
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw POSIXError(.ECONNREFUSED) }
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
