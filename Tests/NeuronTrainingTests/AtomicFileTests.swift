import Foundation
import Synchronization
import Testing

@testable import NeuronTraining

@Suite("AtomicFile: whole files or none")
struct AtomicFileTests {
    @Test("Writing over an existing file replaces it whole and leaves no temporary file")
    func replaces() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        let path = directory.file("metrics.json")
        try AtomicFile.write("a much longer first version of the file\n", to: path)
        #expect(try directory.bytes("metrics.json") == Array("a much longer first version of the file\n".utf8))
        try AtomicFile.write([1, 2, 3], to: path)
        #expect(try directory.bytes("metrics.json") == [1, 2, 3])  // no tail of the longer old file
        try AtomicFile.write([], to: path)
        #expect(try directory.bytes("metrics.json") == [])
        #expect(try directory.names() == ["metrics.json"])
    }

    @Test("A missing directory: the write throws, naming the file, and creates nothing")
    func missingDirectory() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        let path = directory.file("missing/checkpoint.safetensors")
        let message = checkpointErrorMessage { () throws(CheckpointError) in try AtomicFile.write([1], to: path) }
        #expect(
            message.hasPrefix("\(path): cannot be written: cannot create the temporary file \(directory.path)/missing/.checkpoint.safetensors.tmp-"))
        #expect(message.hasSuffix(": No such file or directory (the directory \(directory.path)/missing/ does not exist)"))
        #expect(try directory.names() == [])
    }

    @Test("A path that is a directory: the write throws, the directory and its files stay, no temporary file")
    func pathIsDirectory() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        let target = directory.file("checkpoint.safetensors")
        try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: false)
        _ = try directory.write([9], "checkpoint.safetensors/inside")
        let message = checkpointErrorMessage { () throws(CheckpointError) in try AtomicFile.write([1, 2], to: target) }
        #expect(message == "\(target): cannot be written: renaming the temporary file over it: Is a directory (it is a directory)")
        #expect(try directory.names() == ["checkpoint.safetensors"])
        #expect(try directory.bytes("checkpoint.safetensors/inside") == [9])
        #expect(
            checkpointErrorMessage { () throws(CheckpointError) in try AtomicFile.write([1], to: directory.path + "/") }
                == "\(directory.path)/: cannot be written: the path names a directory, not a file")
    }

    @Test("A FIFO at the path is refused, not replaced by a file; a symbolic link is replaced, not followed")
    func specialFiles() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        let fifo = directory.file("pipe")
        try #require(mkfifo(fifo, 0o600) == 0)
        let message = checkpointErrorMessage { () throws(CheckpointError) in try AtomicFile.write([1], to: fifo) }
        #expect(message == "\(fifo): cannot be written: it is a FIFO (a named pipe), not a regular file; only a regular file is replaced")
        var status = stat()
        #expect(lstat(fifo, &status) == 0 && status.st_mode & S_IFMT == S_IFIFO)
        #expect(try directory.names() == ["pipe"])
        let target = try directory.write([7], "target")
        try FileManager.default.createSymbolicLink(atPath: directory.file("link"), withDestinationPath: target)
        try AtomicFile.write([8], to: directory.file("link"))
        #expect(try directory.bytes("target") == [7] && directory.bytes("link") == [8])
    }

    @Test("A failed write leaves the old file untouched")
    func failureKeepsOldFile() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        // A 250-byte name is allowed (NAME_MAX is 255), but the temporary ".name.tmp-pid-n" beside it is too long.
        let name = String(repeating: "c", count: 250)
        let path = try directory.write([7, 7, 7], name)
        let message = checkpointErrorMessage { () throws(CheckpointError) in try SafeTensors.write([], to: path) }
        #expect(message.hasPrefix("\(path): cannot be written: cannot create the temporary file"))
        #expect(message.hasSuffix("File name too long"))
        #expect(try directory.bytes(name) == [7, 7, 7])
        #expect(try directory.names() == [name])
    }

    @Test("Concurrent writes to one path: the file ends whole, one writer's bytes, no temporary files")
    func concurrentWrites() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        let path = directory.file("state.json")
        let contents = (0..<8).map { i in [UInt8](repeating: UInt8(i), count: 64 * 1024) }
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: contents.count) { i in
            do throws(CheckpointError) {
                try AtomicFile.write(contents[i], to: path)
            } catch {
                failures.withLock { $0.append(error.description) }
            }
        }
        #expect(failures.withLock { $0 } == [])
        #expect(contents.contains(try directory.bytes("state.json")))
        #expect(try directory.names() == ["state.json"])
    }

    @Test("The temporary file sits beside the target, hidden, with a unique name")
    func temporaryNames() throws {
        let pid = getpid()
        let a = try #require(AtomicFile.temporaryPath(for: "out/run-1/checkpoint.safetensors"))
        let b = try #require(AtomicFile.temporaryPath(for: "out/run-1/checkpoint.safetensors"))
        #expect(a.directory == "out/run-1/")
        #expect(a.temporary.hasPrefix("out/run-1/.checkpoint.safetensors.tmp-\(pid)-"))
        #expect(a.temporary != b.temporary)
        let bare = try #require(AtomicFile.temporaryPath(for: "config.json"))
        #expect(bare.directory == "" && bare.temporary.hasPrefix(".config.json.tmp-\(pid)-"))
        #expect(try #require(AtomicFile.temporaryPath(for: "/x")).directory == "/")
        #expect(AtomicFile.temporaryPath(for: "out/") == nil && AtomicFile.temporaryPath(for: "out/..") == nil)
    }
}
