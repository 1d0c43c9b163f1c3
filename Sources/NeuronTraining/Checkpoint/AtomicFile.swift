// Every run output is written whole or not at all: the bytes go to a temporary file beside the
// target, reach the disk (fsync), and only then replace the target in one rename(2), which POSIX
// makes atomic within a file system. A crash at any point leaves the old file or the new one.
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// Writing a file so that a crash never leaves half of it in place of the old one.
public enum AtomicFile {
    /// Writes `bytes` to `path`, replacing any file there in one step.
    ///
    /// The bytes go to a temporary file in the same directory (`.name.tmp-<pid>-<counter>`), are
    /// flushed to disk (fsync), then renamed over `path`. On any failure the temporary file is
    /// removed and `path` is left as it was. Creates no directories. A symbolic link at `path` is
    /// replaced by the file, not followed. Anything else that is not a regular file (a device such
    /// as `/dev/null`, a FIFO, a socket) is refused: a rename would put a file in its place.
    /// - Throws: ``CheckpointError/writeFailed(path:reason:)`` naming `path` and the system's reason.
    public static func write(_ bytes: [UInt8], to path: String) throws(CheckpointError) {
        func failed(_ reason: String) -> CheckpointError { .writeFailed(path: path, reason: reason) }

        guard let (directory, temporary) = temporaryPath(for: path) else { throw failed("the path names a directory, not a file") }
        var existing = stat()
        if lstat(path, &existing) == 0 {
            switch existing.st_mode & S_IFMT {
            case S_IFREG, S_IFLNK, S_IFDIR: break  // a directory: the rename refuses it, saying so
            case S_IFCHR, S_IFBLK: throw failed("it is a device, not a regular file; only a regular file is replaced")
            case S_IFIFO: throw failed("it is a FIFO (a named pipe), not a regular file; only a regular file is replaced")
            default: throw failed("it is not a regular file; only a regular file is replaced")
            }
        }

        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            let code = errno
            let hint = code == ENOENT ? " (the directory \(directory.isEmpty ? "." : directory) does not exist)" : ""
            throw failed("cannot create the temporary file \(temporary): \(systemMessage(code))\(hint)")
        }
        var renamed = false
        var isOpen = true
        defer {
            if isOpen { close(fd) }
            if !renamed { unlink(temporary) }
        }

        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { systemWrite(fd, $0.baseAddress! + written, $0.count - written) }
            if n < 0 {
                if errno == EINTR { continue }
                throw failed("writing the temporary file \(temporary): \(systemMessage(errno))")
            }
            written += n
        }
        guard fsync(fd) == 0 else { throw failed("flushing the temporary file \(temporary) to disk: \(systemMessage(errno))") }
        isOpen = false
        // A close that fails can mean the data never reached the file (NFS reports write errors here).
        guard close(fd) == 0 else { throw failed("closing the temporary file \(temporary): \(systemMessage(errno))") }
        guard rename(temporary, path) == 0 else {
            let code = errno
            let hint = code == EISDIR ? " (it is a directory)" : ""
            throw failed("renaming the temporary file over it: \(systemMessage(code))\(hint)")
        }
        renamed = true

        // The rename itself is durable once the directory is flushed. The new file is in place
        // whether or not this succeeds, so a failure here is not reported as a failed write.
        let directoryFD = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryFD >= 0 {
            _ = fsync(directoryFD)
            close(directoryFD)
        }
    }

    /// Writes `text` as UTF-8 to `path`, atomically like the bytes.
    /// - Throws: ``CheckpointError/writeFailed(path:reason:)``.
    public static func write(_ text: String, to path: String) throws(CheckpointError) {
        try write(Array(text.utf8), to: path)
    }

    /// The directory of `path` (empty for the current one) and a temporary file's path in it,
    /// `dir/.name.tmp-<pid>-<counter>`; nil when `path` ends in no file name. The same directory,
    /// so that the rename never crosses file systems, which rename(2) cannot do.
    static func temporaryPath(for path: String) -> (directory: String, temporary: String)? {
        let slash = path.lastIndex(of: "/")
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        guard !name.isEmpty, name != ".", name != ".." else { return nil }
        let directory = slash.map { String(path[...$0]) } ?? ""
        return (directory, directory + ".\(name).tmp-\(getpid())-\(counter.add(1, ordering: .relaxed).oldValue)")
    }

    /// Tells apart the temporary files of concurrent writes from one process.
    private static let counter = Atomic<Int>(0)

    private static func systemMessage(_ code: Int32) -> String { String(cString: strerror(code)) }
}

/// write(2), which `AtomicFile.write` would otherwise shadow.
private func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    write(fd, buffer, count)
}
