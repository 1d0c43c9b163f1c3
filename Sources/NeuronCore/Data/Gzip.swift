// The zlib seam: the only file that imports CZlib. Data files come off disk as bytes here, and
// gzip streams are inflated in memory, so the IDX reader sees plain bytes and precise errors.
import CZlib
import Foundation

/// Reading a data file's bytes, with errors that name the file.
enum DataFile {
    /// All bytes of the file at `path`.
    /// - Throws: ``DataError/fileNotFound(path:)``, ``DataError/unreadableFile(path:reason:)``.
    static func bytes(at path: String) throws(DataError) -> [UInt8] {
        try checkFile(at: path)
        do {
            return [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw .unreadableFile(path: path, reason: error.localizedDescription)
        }
    }

    /// All bytes of the file at `path`, which may hold at most `maximumBytes`: its size is checked
    /// before reading, and the reading stops one byte past the limit, so that a file that grows
    /// meanwhile, or one whose size the system does not report (`/dev/zero`, a pipe), costs no more.
    /// - Throws: ``DataError/fileNotFound(path:)``, ``DataError/unreadableFile(path:reason:)``,
    ///   ``DataError/fileTooLarge(path:bytes:limit:)``.
    static func bytes(at path: String, maximumBytes: Int) throws(DataError) -> [UInt8] {
        try checkFile(at: path)
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size]) as? Int
        if let size, size > maximumBytes { throw .fileTooLarge(path: path, bytes: size, limit: maximumBytes) }
        // POSIX reads of at most 1 MiB each, counted here: a file whose size `stat` does not tell
        // (`/proc/self/pagemap` says 0 and reads without end) still stops one byte past the limit.
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .unreadableFile(path: path, reason: String(cString: strerror(errno))) }
        defer { close(descriptor) }
        let cap = maximumBytes == .max ? maximumBytes : maximumBytes + 1
        var bytes = [UInt8]()
        bytes.reserveCapacity(min(size ?? 0, cap))
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        while bytes.count < cap {
            // Whole chunks (some kernel files refuse reads of odd sizes), kept up to the cap.
            let got = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if got < 0 {
                if errno == EINTR { continue }
                throw .unreadableFile(path: path, reason: String(cString: strerror(errno)))
            }
            if got == 0 { break }
            bytes.append(contentsOf: chunk[0..<min(got, cap - bytes.count)])
        }
        guard bytes.count <= maximumBytes else { throw .fileTooLarge(path: path, bytes: nil, limit: maximumBytes) }
        return bytes
    }

    /// Refuses, before anything opens it, a path that is not a regular file (after symbolic links):
    /// opening a FIFO blocks until a writer comes, and a device such as `/dev/zero` has no end and
    /// no size to check, so either would hang a run or read until the byte cap.
    /// - Throws: ``DataError/fileNotFound(path:)``, or ``DataError/unreadableFile(path:reason:)``
    ///   for a directory, a FIFO, a device or a socket.
    static func checkFile(at path: String) throws(DataError) {
        var status = stat()
        guard stat(path, &status) == 0 else {
            if errno == ENOENT || errno == ENOTDIR { throw .fileNotFound(path: path) }
            throw .unreadableFile(path: path, reason: String(cString: strerror(errno)))
        }
        switch status.st_mode & S_IFMT {
        case S_IFREG: return
        case S_IFDIR: throw .unreadableFile(path: path, reason: "it is a directory")
        case S_IFIFO: throw .unreadableFile(path: path, reason: "it is a FIFO (a named pipe), not a regular file")
        case S_IFCHR, S_IFBLK: throw .unreadableFile(path: path, reason: "it is a device, not a regular file")
        default: throw .unreadableFile(path: path, reason: "it is not a regular file")
        }
    }
}

/// A data file's size and CRC-32 (zlib's, the checksum gzip stores): enough to tell that a file
/// a checkpoint was trained on has changed since (a line reordered, edited, added), at a fraction
/// of reading it as data.
public struct FileFingerprint: Sendable, Equatable, Codable, CustomStringConvertible {
    /// The file's size in bytes.
    public var bytes: Int
    /// The CRC-32 of every byte.
    public var crc32: UInt32

    public init(bytes: Int, crc32: UInt32) { (self.bytes, self.crc32) = (bytes, crc32) }

    /// The fingerprint of the regular file at `path`, read in 1 MB chunks.
    /// - Throws: ``DataError`` as reading the file as data throws: missing, not a regular file, unreadable.
    public init(of path: String) throws(DataError) {
        try DataFile.checkFile(at: path)
        guard let handle = FileHandle(forReadingAtPath: path) else { throw .unreadableFile(path: path, reason: "it cannot be opened") }
        defer { try? handle.close() }
        var (bytes, checksum) = (0, CZlib.crc32(0, nil, 0))
        do {
            while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
                checksum = chunk.withUnsafeBytes { CZlib.crc32(checksum, $0.bindMemory(to: Bytef.self).baseAddress, uInt($0.count)) }
                bytes += chunk.count
            }
        } catch {
            throw .unreadableFile(path: path, reason: error.localizedDescription)
        }
        (self.bytes, self.crc32) = (bytes, UInt32(checksum))
    }

    /// `1115394 bytes, CRC-32 0x3A2B1C0D`.
    public var description: String {
        let hex = String(crc32, radix: 16, uppercase: true)
        return "\(bytes) bytes, CRC-32 0x" + String(repeating: "0", count: 8 - hex.count) + hex
    }
}

/// gzip (RFC 1952) over zlib, in memory.
enum Gzip {
    /// Whether `bytes` start with the gzip magic `1f 8b`.
    static func isCompressed(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 2 && bytes[0] == 0x1F && bytes[1] == 0x8B
    }

    /// The decompressed bytes of a gzip file (all members, as `gunzip` would concatenate them).
    /// - Throws: ``DataError/corruptGzip(path:reason:)`` naming `path` when zlib rejects the stream,
    ///   including a stream that ends early.
    static func decompress(_ compressed: [UInt8], path: String) throws(DataError) -> [UInt8] {
        let inflater = try Inflater(compressed, path: path)
        try inflater.fill(upTo: .max)
        return inflater.bytes
    }

    /// A gzip stream inflated as far as asked and no further, so that a reader can check a header
    /// before inflating a body whose size the header bounds: a 1 KB bomb of a gigabyte of zeros
    /// costs only what its header admits.
    final class Inflater {
        private var stream = z_stream()  // zero-initialised: zalloc/zfree/opaque nil select zlib's own allocator
        private let compressed: [UInt8]
        private let path: String
        private var output: [UInt8] = []
        private var produced = 0, consumed = 0
        /// Whether the last member's trailer has been read.
        private(set) var isFinished = false

        /// The bytes inflated so far.
        var bytes: [UInt8] { Array(output[..<produced]) }
        /// How many bytes are inflated so far.
        var count: Int { produced }

        init(_ compressed: [UInt8], path: String) throws(DataError) {
            (self.compressed, self.path) = (compressed, path)
            let status = inflateInit2_(
                &stream,
                15 + 16,  // windowBits: the largest window (32 KiB); +16 expects a gzip header and trailer, not zlib's
                zlibVersion(),  // the linked library's version, which inflateInit2_ checks against its own
                Int32(MemoryLayout<z_stream>.size))  // the struct size we compiled against, checked likewise
            guard status == Z_OK else { throw .corruptGzip(path: path, reason: "zlib could not start inflating (status \(status))") }
        }

        deinit { inflateEnd(&stream) }

        /// Inflates until at least `target` bytes are out or the stream ends, whichever is first.
        /// - Throws: ``DataError/corruptGzip(path:reason:)`` when zlib rejects the stream or it ends early.
        func fill(upTo target: Int) throws(DataError) {
            let chunkLimit = Int(UInt32.max)  // avail_in / avail_out are 32-bit
            while produced < target, !isFinished {
                if produced == output.count {
                    // Double, but never past the target by more than what one step may overshoot.
                    output.append(contentsOf: repeatElement(0, count: min(max(output.count, 1 << 16), target - produced)))
                }
                let inputLeft = compressed.count - consumed
                let status: Int32 = compressed.withUnsafeBufferPointer { input in
                    output.withUnsafeMutableBufferPointer { out in
                        // zlib reads next_in but declares it non-const (pre-C89 heritage); it never writes there.
                        stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress.map { $0 + consumed })
                        stream.avail_in = UInt32(min(inputLeft, chunkLimit))
                        stream.next_out = out.baseAddress.map { $0 + produced }
                        stream.avail_out = UInt32(min(out.count - produced, chunkLimit))
                        let availableIn = Int(stream.avail_in), availableOut = Int(stream.avail_out)
                        let result = inflate(&stream, Z_NO_FLUSH)  // flush: no forced flushing; we loop until the end
                        consumed += availableIn - Int(stream.avail_in)
                        produced += availableOut - Int(stream.avail_out)
                        return result
                    }
                }
                switch status {
                case Z_STREAM_END:
                    let rest = compressed.count - consumed
                    if rest == 0 {
                        isFinished = true
                        continue
                    }
                    // Concatenated members are valid gzip; anything else after the trailer is not.
                    guard rest >= 2, compressed[consumed] == 0x1F, compressed[consumed + 1] == 0x8B else {
                        throw .corruptGzip(path: path, reason: "\(rest) unexpected bytes after the end of the gzip stream")
                    }
                    inflateReset(&stream)
                case Z_OK:
                    continue
                case Z_BUF_ERROR where produced < output.count:
                    // No progress with output space left: the input ran out before the stream's end.
                    throw .corruptGzip(
                        path: path,
                        reason: "the stream ends early (truncated after \(compressed.count) compressed bytes, \(produced) bytes inflated)")
                case Z_BUF_ERROR:
                    continue  // output full: grow and go on
                case Z_DATA_ERROR:
                    let detail = stream.msg.map { String(cString: $0) } ?? "invalid data"
                    throw .corruptGzip(path: path, reason: "\(detail) (after \(consumed) compressed bytes)")
                case Z_MEM_ERROR:
                    throw .corruptGzip(path: path, reason: "zlib ran out of memory")
                case Z_NEED_DICT:
                    throw .corruptGzip(path: path, reason: "the stream needs a preset dictionary, which gzip files never use")
                default:
                    throw .corruptGzip(path: path, reason: "zlib status \(status)")
                }
            }
        }
    }

    /// gzip-compressed `bytes`: for writing test fixtures; the engine itself only reads gzip.
    static func compress(_ bytes: [UInt8]) -> [UInt8] {
        var stream = z_stream()
        var status = deflateInit2_(
            &stream,
            Z_DEFAULT_COMPRESSION,  // level
            Z_DEFLATED,  // method: the only one there is
            15 + 16,  // windowBits: largest window, +16 writes a gzip header and trailer
            8,  // memLevel: zlib's default
            Z_DEFAULT_STRATEGY,
            zlibVersion(),
            Int32(MemoryLayout<z_stream>.size))
        precondition(status == Z_OK, "deflateInit2_ failed with status \(status)")
        defer { deflateEnd(&stream) }
        var input = bytes
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, UInt(bytes.count))) + 32)  // + the gzip header's extra
        let written: Int = input.withUnsafeMutableBufferPointer { inp in
            output.withUnsafeMutableBufferPointer { out in
                stream.next_in = inp.baseAddress
                stream.avail_in = UInt32(inp.count)
                stream.next_out = out.baseAddress
                stream.avail_out = UInt32(out.count)
                status = deflate(&stream, Z_FINISH)  // flush: all input at once, then the trailer
                return out.count - Int(stream.avail_out)
            }
        }
        precondition(status == Z_STREAM_END, "deflate did not finish within deflateBound (status \(status))")
        output.removeLast(output.count - written)
        return output
    }
}
