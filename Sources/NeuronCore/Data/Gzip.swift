// The zlib seam: the only file that imports CZlib. Data files come off disk as bytes here, and
// gzip streams are inflated in memory, so the IDX reader sees plain bytes and precise errors.
import CZlib
import Foundation

/// Reading a data file's bytes, with errors that name the file.
enum DataFile {
    /// All bytes of the file at `path`.
    /// - Throws: ``DataError/fileNotFound(path:)``, ``DataError/unreadableFile(path:reason:)``.
    static func bytes(at path: String) throws(DataError) -> [UInt8] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw .fileNotFound(path: path)
        }
        guard !isDirectory.boolValue else { throw .unreadableFile(path: path, reason: "it is a directory") }
        do {
            return [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw .unreadableFile(path: path, reason: error.localizedDescription)
        }
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
        var stream = z_stream()  // zero-initialised: zalloc/zfree/opaque nil select zlib's own allocator
        var status = inflateInit2_(
            &stream,
            15 + 16,  // windowBits: the largest window (32 KiB); +16 expects a gzip header and trailer, not zlib's
            zlibVersion(),  // the linked library's version, which inflateInit2_ checks against its own
            Int32(MemoryLayout<z_stream>.size))  // the struct size we compiled against, checked likewise
        guard status == Z_OK else { throw .corruptGzip(path: path, reason: "zlib could not start inflating (status \(status))") }
        defer { inflateEnd(&stream) }

        var output = [UInt8](repeating: 0, count: sizeHint(compressed))
        var produced = 0
        var consumed = 0
        let chunkLimit = Int(UInt32.max)  // avail_in / avail_out are 32-bit
        while true {
            if produced == output.count {
                output.append(contentsOf: repeatElement(0, count: output.count))
            }
            let inputLeft = compressed.count - consumed
            status = compressed.withUnsafeBufferPointer { input in
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
                    output.removeLast(output.count - produced)
                    return output
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
                    path: path, reason: "the stream ends early (truncated after \(compressed.count) compressed bytes, \(produced) bytes inflated)")
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

    /// The decompressed size from the gzip trailer (ISIZE, the length mod 2³²), bounded by deflate's
    /// best ratio (about 1032:1) so that a corrupt trailer cannot ask for gigabytes.
    private static func sizeHint(_ compressed: [UInt8]) -> Int {
        guard compressed.count >= 18 else { return 1024 }
        let n = compressed.count
        let isize = Int(compressed[n - 4]) | Int(compressed[n - 3]) << 8 | Int(compressed[n - 2]) << 16 | Int(compressed[n - 1]) << 24
        return max(1024, min(isize, 1032 * n))
    }
}
