// What a run was trained on, as a checkpoint records it: each data file's size and CRC-32. A
// resumed run whose files no longer match is refused with the file named, before anything else
// compares (a reordered or edited line otherwise resumed silently on other data; a file of twice
// the lines was refused only by the epoch's position, in words about samples and batches).
import NeuronCore

/// The data files of a run, each with its fingerprint, in the order of their config keys.
public struct DataFingerprint: Sendable, Equatable, Codable {
    /// One file: its config key (`data.path`, `data.trainImages`, …), its path and its fingerprint.
    public struct File: Sendable, Equatable, Codable {
        public var key: String
        public var path: String
        public var fingerprint: FileFingerprint
    }

    public var files: [File]

    /// The fingerprints of the files `data` names; nil for data made in memory (synthetic).
    /// - Throws: `DataError` for a file that cannot be read.
    public init?(_ data: DataConfig) throws(DataError) {
        let named: [(String, String?)] = [
            ("data.path", data.path), ("data.testPath", data.testPath), ("data.trainImages", data.trainImages),
            ("data.trainLabels", data.trainLabels), ("data.testImages", data.testImages), ("data.testLabels", data.testLabels),
        ]
        var files: [File] = []
        for case let (key, path?) in named { files.append(File(key: key, path: path, fingerprint: try FileFingerprint(of: path))) }
        guard !files.isEmpty else { return nil }
        self.files = files
    }

    /// What differs from `saved`, said plainly (`data.path (/x/words.txt) was 1,000 bytes, CRC-32 …;
    /// it is now …`), or nil when nothing does.
    public func differences(from saved: DataFingerprint) -> String? {
        var lines: [String] = []
        for old in saved.files {
            guard let new = files.first(where: { $0.key == old.key }) else {
                lines.append("\(old.key) (\(old.path)) is no longer given")
                continue
            }
            // The same bytes under another path (a moved file) are the same data.
            if new.fingerprint != old.fingerprint {
                let file = new.path == old.path ? "\(old.key) (\(old.path))" : "\(old.key) (\(old.path), now \(new.path))"
                lines.append("\(file) was \(old.fingerprint) when the checkpoint was written and is \(new.fingerprint) now")
            }
        }
        for new in files where !saved.files.contains(where: { $0.key == new.key }) { lines.append("\(new.key) (\(new.path)) is new") }
        return lines.isEmpty ? nil : lines.joined(separator: "; ")
    }
}
