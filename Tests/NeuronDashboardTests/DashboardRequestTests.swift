import Foundation
import Testing

@testable import NeuronDashboard

/// SplitMix64: a seeded generator, so that a failing fuzz input can be found again from its seed.
private struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

private func read(_ text: String, limits: DashboardLimits = DashboardLimits()) -> RequestReader.Outcome {
    var reader = RequestReader(limits: limits)
    return reader.read(Array(text.utf8))
}

@Suite("Requests in: the bounded reader of a request's head and body")
struct DashboardRequestTests {
    @Test("A request read whole or a byte at a time: method, path, decoded query, fields in order, body")
    func wellFormed() throws {
        let text =
            "POST /api/event?token=ab%20c&layer=2&flag HTTP/1.1\r\nHost: 127.0.0.1:8765\r\nContent-Type:  application/json \r\n"
            + "Content-Length: 17\r\n\r\n{\"event\":\"pause\"}trailing bytes are not read"
        var bytewise = RequestReader()
        var outcome = RequestReader.Outcome.more
        for byte in text.utf8 where outcome == .more { outcome = bytewise.read([byte]) }
        #expect(outcome == read(text))
        guard case let .request(request) = outcome else {
            Issue.record("not read: \(outcome)")
            return
        }
        #expect(request.method == "POST" && request.path == "/api/event")
        #expect(request.queryValue("token") == "ab c" && request.queryValue("layer") == "2" && request.queryValue("flag") == "")
        #expect(request.headers.map(\.name) == ["Host", "Content-Type", "Content-Length"])
        #expect(request.values(of: "content-type") == ["application/json"])
        #expect(String(decoding: request.body, as: UTF8.self) == #"{"event":"pause"}"#)
        // Bare LFs end lines as CRLFs do; a request without a body needs no Content-Length.
        guard case let .request(bare) = read("GET /events HTTP/1.0\nHost: x\n\n") else {
            Issue.record("a head with bare line feeds was not read")
            return
        }
        #expect(bare.path == "/events" && bare.values(of: "HOST") == ["x"] && bare.body.isEmpty)
    }

    @Test("Each bound refuses with its status: request line 414, head 431, field count 431, body 413")
    func bounds() {
        var limits = DashboardLimits()
        (limits.requestLineBytes, limits.headBytes, limits.headerCount, limits.bodyBytes) = (100, 300, 3, 10)
        func status(_ text: String) -> Int? {
            if case let .refused(refusal) = read(text, limits: limits) { return refusal.status }
            return nil
        }
        #expect(status("GET /" + String(repeating: "a", count: 100)) == 414)  // no line end yet
        #expect(status("GET /" + String(repeating: "a", count: 100) + " HTTP/1.1\r\n\r\n") == 414)
        #expect(status("GET / HTTP/1.1\r\nX: " + String(repeating: "a", count: 300)) == 431)
        #expect(status("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n") == 431)
        #expect(status("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n") == nil)
        #expect(status("POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n") == 413)
        #expect(status("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n") == 400)
        #expect(status("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx") == 400)
        #expect(status("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n") == 400)
        #expect(status("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n") == 411)
        #expect(status("GET / HTTP/9.9\r\n\r\n") == 505)
        for malformed in [
            "\r\n\r\n", "GET\r\n\r\n", "GET  / HTTP/1.1\r\n\r\n", "GET x HTTP/1.1\r\n\r\n", "G(T / HTTP/1.1\r\n\r\n",
            "GET / HTTP/1.1\r\nNoColon\r\n\r\n", "GET / HTTP/1.1\r\n: empty\r\n\r\n", "GET / HTTP/1.1\r\n folded: x\r\n\r\n",
            "GET / HTTP/1.1\r\nX: a\u{01}b\r\n\r\n", "GET / HTTP/1.1\r\nX Y: 1\r\n\r\n",
        ] {
            #expect(status(malformed) == 400, "\(malformed.debugDescription)")
        }
    }

    @Test("64 MB of head in 4 KB pieces: refused at 16 KB, never holding more than the bounds")
    func neverBuffersPastTheBounds() {
        var reader = RequestReader()
        let limits = reader.limits
        let piece = [UInt8](repeating: UInt8(ascii: "a"), count: 4096)
        var outcome = reader.read(Array("GET / HTTP/1.1\r\nX: ".utf8))
        var pieces = 0
        while outcome == .more && pieces < 16 * 1024 {
            outcome = reader.read(piece)
            pieces += 1
            #expect(reader.heldBytes <= limits.headBytes + 4 + limits.bodyBytes)
        }
        #expect(outcome == .refused(.headTooLarge(limit: limits.headBytes)))
        #expect(pieces * 4096 <= limits.headBytes + 4096)
        #expect(reader.heldBytes == 0)
        #expect(reader.read(piece) == outcome)  // refused for good
    }

    @Test("A head that arrives a byte at a time is searched once: linear time")
    func linearTime() {
        // A 16 KB head one byte per read: each byte searched once, with the three before it looked
        // at again (a reader that searched everything held on each read would examine n²/2 bytes).
        let head = Array(("GET / HTTP/1.1\r\nX: " + String(repeating: "a", count: 16_000) + "\r\n\r\n").utf8)
        var reader = RequestReader()
        var outcome = RequestReader.Outcome.more
        for byte in head where outcome == .more { outcome = reader.read(CollectionOfOne(byte)) }
        #expect(outcome != .more)
        #expect(reader.examinedBytes <= 4 * head.count, "\(reader.examinedBytes) bytes examined for a head of \(head.count)")
        #expect(reader.examinedBytes >= head.count)
    }

    /// Feeds mutated heads to the reader for `seconds`, checking on each input that (1) it does not
    /// crash, (2) the bytes held stay within the bounds after every piece, (3) the outcome does not
    /// depend on how the bytes were split into reads, (4) a request read holds what its head said
    /// (a path starting with /, at most `headerCount` fields, `Content-Length` bytes of body).
    /// - Returns: inputs tried and the failures found (each with its seed and input).
    static func fuzz(seconds: Double, seed: UInt64) -> (inputs: Int, failures: [String]) {
        var random = SplitMix64(state: seed)
        var limits = DashboardLimits()
        (limits.requestLineBytes, limits.headBytes, limits.headerCount, limits.bodyBytes) = (200, 600, 6, 40)
        let seeds: [[UInt8]] = [
            "GET /api/state?token=abc&x=%41%zz HTTP/1.1\r\nHost: 127.0.0.1:8765\r\nOrigin: http://127.0.0.1:8765\r\n\r\n",
            "POST /api/event HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: 17\r\n\r\n{\"event\":\"pause\"}",
            "GET /events HTTP/1.0\nHost: x\nSec-Fetch-Site: same-origin\n\n",
            "HEAD / HTTP/1.1\r\nHost: a\r\nHost: b\r\nTransfer-Encoding: chunked\r\n\r\n",
        ].map { Array($0.utf8) }
        let alphabet = Array("\r\n: \t/?=&%HTP1.0GETPOSTContent-Length0123456789\u{0}\u{7F}\u{FF}".utf8)
        var inputs = 0
        var failures: [String] = []
        let clock = ContinuousClock(), start = clock.now
        while clock.now - start < .seconds(seconds) && failures.count < 10 {
            var input = seeds[Int.random(in: 0..<seeds.count, using: &random)]
            for _ in 0..<Int.random(in: 1...6, using: &random) {
                let at = Int.random(in: 0...input.count, using: &random)
                switch Int.random(in: 0..<7, using: &random) {
                case 0 where at < input.count: input[at] = UInt8.random(in: 0...255, using: &random)
                case 1: input.insert(alphabet.randomElement(using: &random)!, at: at)
                case 2: input.removeSubrange(at..<min(input.count, at + Int.random(in: 1...8, using: &random)))
                case 3:
                    let end = min(input.count, at + Int.random(in: 1...40, using: &random))
                    let copies = Int.random(in: 1...30, using: &random)
                    input.insert(contentsOf: Array(repeating: Array(input[at..<end]), count: copies).joined(), at: at)
                case 4: input.removeSubrange(at...)
                case 5:
                    let other = seeds.randomElement(using: &random)!
                    input.insert(contentsOf: other[Int.random(in: 0..<other.count, using: &random)...], at: at)
                default: input.insert(contentsOf: Array("\r\nX-\(at): \(at)".utf8), at: at)
                }
            }
            inputs += 1
            var whole = RequestReader(limits: limits)
            let expected = whole.read(input)
            var pieces = RequestReader(limits: limits)
            var outcome = RequestReader.Outcome.more
            var offset = 0
            var problem: String?
            while offset < input.count {
                let length = Int.random(in: 1...64, using: &random)
                outcome = pieces.read(input[offset..<min(input.count, offset + length)])
                offset += length
                if pieces.heldBytes > limits.headBytes + 4 + limits.bodyBytes + 64 { problem = "held \(pieces.heldBytes) bytes" }
            }
            if input.isEmpty { outcome = pieces.read([]) }
            if outcome != expected { problem = "read in pieces: \(outcome); read whole: \(expected)" }
            if case let .request(request) = expected {
                let length = request.values(of: "Content-Length").first.flatMap { Int($0) } ?? 0
                if !request.path.hasPrefix("/") || request.headers.count > limits.headerCount || request.body.count != length {
                    problem = "a request that breaks its head: \(request.path), \(request.headers.count) fields, body \(request.body.count)"
                }
            }
            if let problem { failures.append("seed \(seed), input \(String(decoding: input, as: UTF8.self).debugDescription): \(problem)") }
        }
        return (inputs, failures)
    }

    @Test("Fuzz: mutated heads, read whole and in random pieces, for 2 s (NEURON_FUZZ_SECONDS for longer)")
    func fuzzing() async {
        let seconds = ProcessInfo.processInfo.environment["NEURON_FUZZ_SECONDS"].flatMap(Double.init) ?? 2
        let seed = UInt64.random(in: 0 ... .max)
        // On a thread of its own: the other suites' servers need the cooperative pool's threads meanwhile.
        let (inputs, failures) = await withCheckedContinuation { done in
            Thread { done.resume(returning: Self.fuzz(seconds: seconds, seed: seed)) }.start()
        }
        print("fuzz: \(inputs) inputs in \(seconds) s, \(failures.count) failures (seed \(seed))")
        #expect(inputs > 1000)
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
    }
}
