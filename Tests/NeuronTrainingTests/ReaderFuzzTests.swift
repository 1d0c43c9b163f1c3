import Foundation
import Testing

@testable import NeuronCore
@testable import NeuronTraining

/// Byte-level mutations of valid inputs: what a bad disk, a bad edit or a hostile file makes of them.
private struct Mutator {
    var generator: SeededGenerator

    /// Values that have broken readers before: past Int and Double, negative, NUL, alias syntax.
    static let insertions: [[UInt8]] = [
        "9223372036854775807", "9223372036854775808", "4611686018427387904", "1e400", "-1", "1e308", "\u{0}", ".nan", "*a", "&a ",
        "? ", "yes", "\"", ",", "\n", "[", "{", "0x7fffffff",
    ].map { Array($0.utf8) }

    mutating func index(_ count: Int) -> Int { count == 0 ? 0 : generator.index(below: count) }

    /// `input` after one to three mutations.
    mutating func mutate(_ input: [UInt8]) -> [UInt8] {
        var bytes = input
        for _ in 0...index(3) {
            switch index(6) {
            case 0 where !bytes.isEmpty:  // flip a bit
                let at = index(bytes.count)
                bytes[at] ^= UInt8(1) << UInt8(index(8))
            case 1:  // truncate
                bytes.removeLast(index(bytes.count + 1))
            case 2 where !bytes.isEmpty:  // delete a range
                let start = index(bytes.count)
                bytes.removeSubrange(start..<min(bytes.count, start + 1 + index(16)))
            case 3:  // insert a hostile value
                bytes.insert(contentsOf: Self.insertions[index(Self.insertions.count)], at: index(bytes.count + 1))
            case 4 where !bytes.isEmpty:  // overwrite a byte with an extreme
                bytes[index(bytes.count)] = [0x00, 0xFF, 0x7F, 0x80][index(4)]
            default:  // duplicate a range
                guard !bytes.isEmpty else { continue }
                let start = index(bytes.count)
                let range = start..<min(bytes.count, start + 1 + index(64))
                bytes.insert(contentsOf: bytes[range], at: index(bytes.count + 1))
            }
        }
        return bytes
    }
}

/// A seeded mutation fuzz over the readers of everything a user hands the engine: every input
/// must load or throw the reader's typed error (the signatures say which); a crash or a hang
/// fails the whole test run. Bounded in inputs and in time.
@Suite("Reader fuzzing: mutated configs, CSV and IDX files load or throw, never crash or hang")
struct ReaderFuzzTests {
    /// The Data folder's configs, as text.
    private static func configs() throws -> [[UInt8]] {
        try ["xor.yaml", "xor.json", "iris.yaml", "digits.yaml", "fashion-mnist.yaml", "single-neuron.yaml"].map {
            [UInt8](try Data(contentsOf: URL(fileURLWithPath: dataDirectory + "/" + $0)))
        }
    }

    @Test("Seeded mutations of the shipped configs, iris rows and small IDX files (raw and gzip)")
    func fuzz() throws {
        var mutator = Mutator(generator: SeededGenerator(seed: 10))
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(20)
        var tried = 0, loaded = 0

        let configs = try Self.configs()
        for i in 0..<2_400 where clock.now < deadline {
            let text = String(decoding: mutator.mutate(configs[i % configs.count]), as: UTF8.self)
            // Typed throws: the only way out besides a config is a ConfigError.
            if (try? ConfigLoader.parse(text, source: "fuzz.yaml", baseDirectory: nil)) != nil { loaded += 1 }
            tried += 1
        }

        let iris = Array(
            try String(contentsOfFile: dataDirectory + "/iris.csv", encoding: .utf8).split(separator: "\n").prefix(20)
                .joined(separator: "\n").utf8)
        for i in 0..<1_500 where clock.now < deadline {
            let bytes = mutator.mutate(iris)
            let task: CSV.Task = i % 2 == 0 ? .classification : .regression
            let column = task == .classification ? "species" : "petal_width"
            let d: Dataset<Float>? = try? CSV.parse(bytes: bytes, source: "fuzz.csv", labelColumn: column, task: task, featureColumns: nil)
            if let d {
                let finite = d.features.scalars.allSatisfy { $0.isFinite }
                #expect(finite)
                loaded += 1
            }
            tried += 1
        }

        let images = IDX.encode(dimensions: [3, 2, 2], bytes: [0, 51, 102, 255, 255, 0, 0, 0, 1, 2, 3, 4])
        let labels = IDX.encode(dimensions: [3], bytes: [3, 0, 7])
        let seeds = [images, labels, Gzip.compress(images), Gzip.compress(labels)]
        for i in 0..<2_000 where clock.now < deadline {
            let bytes = mutator.mutate(seeds[i % seeds.count])
            if let read = try? IDX.decode(bytes, path: "fuzz.idx") {
                #expect(read.bytes.count == read.dimensions.reduce(1, *))
                loaded += 1
            }
            tried += 1
        }

        // Whole datasets from files: mutated labels against valid images, mutated test images against the training ones.
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("neuron-fuzz-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let imagesPath = folder.appendingPathComponent("images").path, mutatedPath = folder.appendingPathComponent("mutated").path
        try Data(images).write(to: URL(fileURLWithPath: imagesPath))
        try Data(labels).write(to: folder.appendingPathComponent("labels"))
        for i in 0..<500 where clock.now < deadline {
            let isLabels = i % 2 == 0
            try Data(mutator.mutate(isLabels ? labels : images)).write(to: URL(fileURLWithPath: mutatedPath))
            let d: Dataset<Float>? =
                isLabels
                ? try? IDX.load(images: imagesPath, labels: mutatedPath)
                : try? IDX.load(images: mutatedPath, labels: folder.appendingPathComponent("labels").path, imageSizeOf: imagesPath)
            if let d {
                #expect(d.outputCount >= 10 && d.labels?.allSatisfy { $0 < d.outputCount } == true)
                loaded += 1
            }
            tried += 1
        }

        print("Reader fuzzing: \(tried) inputs tried, \(loaded) loaded, the rest refused with a typed error; no crash, no hang")
        // 6,400 inputs take about 6 s alone; under a loaded full test run the 20 s bound may cut
        // them short, but never to nothing.
        #expect(tried >= 1_000, "only \(tried) inputs within the time bound")
    }
}
