// How `neuron` was started, so that a command it prints for later (`resume with: …`) starts it the
// same way: `neuron` on PATH, a path to the binary, or `swift run` in the package it was built in
// (whose binary is on no PATH: a hint starting with `neuron` would fail with status 127). A pure
// function of argv[0], the executable's path and the working directory, so that every case is
// tested without starting a process.

/// How to start `neuron` again the way this process was started, and shell lines that do.
public struct Invocation: Sendable, Equatable {
    /// The words that start `neuron`: `["neuron"]`, `["./neuron"]`, `["swift", "run", "-c", "release", "neuron"]`.
    public var program: [String]

    /// An invocation that starts `neuron` with `program`.
    public init(program: [String]) {
        self.program = program
    }

    /// `neuron`, found on PATH.
    public static let installed = Invocation(program: ["neuron"])

    /// How a process was started, from what it can read about itself.
    ///
    /// An executable inside a `.build` folder, in its `debug` or `release` configuration's folder
    /// (`.build/release/neuron`, `.build/x86_64-unknown-linux-gnu/debug/neuron`), was built by
    /// SwiftPM and is started by `swift run [-c release] neuron`, with `--package-path` when the
    /// package is not the working directory. Otherwise an argv[0] with a `/` is a path the shell
    /// ran and runs again from the same directory, and a bare argv[0] a name found on PATH.
    /// - Parameters:
    ///   - argv0: the process's argv[0], as its parent passed it.
    ///   - executable: the executable's absolute path, links resolved (`/proc/self/exe`).
    ///   - workingDirectory: the process's working directory, absolute, where the printed line runs.
    public init(argv0: String, executable: String, workingDirectory: String) {
        let parts = executable.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        if let build = parts.lastIndex(of: ".build"), parts.count >= build + 3, ["debug", "release"].contains(parts[parts.count - 2]) {
            let package = parts[..<build].joined(separator: "/")
            var program = ["swift", "run"]
            if package != workingDirectory { program += ["--package-path", package.isEmpty ? "/" : package] }
            if parts[parts.count - 2] == "release" { program += ["-c", "release"] }
            self.init(program: program + [parts[parts.count - 1]])
        } else {
            self.init(program: [argv0.isEmpty ? "neuron" : argv0])
        }
    }

    /// The shell line that runs `neuron` with `arguments`, each word quoted where a POSIX shell
    /// would otherwise split or expand it.
    public func commandLine(_ arguments: [String]) -> String {
        (program + arguments).map(Self.quoted).joined(separator: " ")
    }

    /// `word` as one word of a POSIX shell: as it is when every character is one the shell takes
    /// literally, else in single quotes (a single quote inside written `'\''`); `''` when empty.
    public static func quoted(_ word: String) -> String {
        let literal = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-")
        guard word.isEmpty || !word.allSatisfy(literal.contains) else { return word }
        return "'" + word.split(separator: "'", omittingEmptySubsequences: false).joined(separator: #"'\''"#) + "'"
    }
}
