import Foundation
import Testing

@testable import NeuronCore

/// Temporary files for one test: written on demand, all removed by `removeAll()`.
private final class TemporaryFiles {
    private var urls = [URL]()

    /// Writes `bytes` to a fresh file whose name ends in `name`; returns its path.
    func write(_ bytes: [UInt8], name: String) throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("neuron-\(UUID().uuidString)-\(name)")
        try Data(bytes).write(to: url)
        urls.append(url)
        return url.path
    }

    func removeAll() {
        for url in urls { try? FileManager.default.removeItem(at: url) }
        urls.removeAll()
    }
}

/// Three 2×2 images (pixels 0, 51, 255, …) and their labels 3, 0, 7.
private let images = IDX.encode(dimensions: [3, 2, 2], bytes: [0, 51, 102, 255, 255, 0, 0, 0, 1, 2, 3, 4])
private let labels = IDX.encode(dimensions: [3], bytes: [3, 0, 7])

@Suite("IDX: MNIST-format files, raw and gzip")
struct IDXTests {
    @Test("Raw and gzip files read to the same dimensions and bytes")
    func read() throws {
        let files = TemporaryFiles()
        defer { files.removeAll() }
        let raw = try IDX.read(files.write(images, name: "images-idx3-ubyte"))
        #expect(raw.dimensions == [3, 2, 2] && raw.bytes == [0, 51, 102, 255, 255, 0, 0, 0, 1, 2, 3, 4])
        let compressed = Gzip.compress(images)
        #expect(Gzip.isCompressed(compressed) && !Gzip.isCompressed(images))
        #expect(try IDX.read(files.write(compressed, name: "images-idx3-ubyte.gz")) == raw)
        // Concatenated gzip members decompress as one stream, as gunzip does.
        let halves = Gzip.compress(Array(images[..<10])) + Gzip.compress(Array(images[10...]))
        #expect(try IDX.read(files.write(halves, name: "halves.gz")) == raw)
        // A rank-0 file holds one element.
        #expect(try IDX.read(files.write([0, 0, 8, 0, 42], name: "scalar")) == ([], [42]))
    }

    @Test("load: features scaled to [0, 1], one-hot targets, class names, limit")
    func load() throws {
        let files = TemporaryFiles()
        defer { files.removeAll() }
        let imagePath = try files.write(Gzip.compress(images), name: "i.gz")
        let labelPath = try files.write(labels, name: "l")
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            let d: Dataset<Scalar> = try IDX.load(images: imagePath, labels: labelPath)
            #expect(d.features.shape == [3, 4] && d.targets.shape == [3, 10])
            // Each byte times the scale 1/255 (a product, so 51 gives 51 · fl(1/255), not fl(51/255)).
            let scale: Scalar = 1 / 255
            #expect(d.features.rowArrays[0] == [0, 51 * scale, 102 * scale, 255 * scale])
            #expect(d.labels == [3, 0, 7] && d.classNames == (0..<10).map(String.init))
            #expect(d.targets.rowArrays[2] == [0, 0, 0, 0, 0, 0, 0, 1, 0, 0])
        }
        try check(Float.self)
        try check(Double.self)
        let raw: Dataset<Double> = try IDX.load(images: imagePath, labels: labelPath, scale: 1, limit: 2)
        #expect(raw.count == 2 && raw.features.rowArrays == [[0, 51, 102, 255], [255, 0, 0, 0]] && raw.labels == [3, 0])
        let named: Dataset<Float> = try IDX.load(images: imagePath, labels: labelPath, classNames: (0..<8).map { "c\($0)" })
        #expect(named.outputCount == 8 && named.classNames?.last == "c7")
        // Without names, labels above 9 widen the classes when none is missing in between ...
        let wide: Dataset<Float> = try IDX.load(images: imagePath, labels: files.write(IDX.encode(dimensions: [3], bytes: [10, 12, 11]), name: "w"))
        #expect(wide.outputCount == 13 && wide.classNames?.last == "12")
        // ... and a stray one is an error rather than empty classes up to it.
        let stray = try files.write(IDX.encode(dimensions: [3], bytes: [0, 12, 1]), name: "s")
        #expect(throws: DataError.labelOutOfRange(path: stray, sample: 1, label: 12, classCount: 10)) {
            let _: Dataset<Float> = try IDX.load(images: imagePath, labels: stray)
        }
        #expect(throws: DataError.invalidArgument(name: "limit", value: "0", expected: "at least 1 sample")) {
            let _: Dataset<Float> = try IDX.load(images: imagePath, labels: labelPath, limit: 0)
        }
    }

    @Test("Header errors: missing, empty, neither gzip nor IDX, unsupported type, wrong dimension count")
    func headerErrors() throws {
        let files = TemporaryFiles()
        defer { files.removeAll() }
        let missing = "/nonexistent/neuron-\(UUID().uuidString)"
        #expect(message { () throws(DataError) in try IDX.read(missing) } == "\(missing): no such file")
        let empty = try files.write([], name: "empty")
        #expect(
            message { () throws(DataError) in try IDX.read(empty) }
                == "\(empty): the file is empty; expected an IDX header (0x00 0x00 0x08 <ndims>) and data")
        let emptyGzip = try files.write(Gzip.compress([]), name: "empty.gz")
        #expect(message { () throws(DataError) in try IDX.read(emptyGzip) }.hasPrefix("\(emptyGzip): the file is empty"))
        let text = try files.write(Array("hello".utf8), name: "text")
        #expect(
            message { () throws(DataError) in try IDX.read(text) }
                == "\(text): not an IDX file (expected magic 0x00 0x00 0x08 <ndims>, or gzip 0x1f 0x8b): it starts with 0x68 0x65 0x6c 0x6c")
        let badType = try files.write([0, 0, 0x07, 1, 0, 0, 0, 0], name: "badtype")
        #expect(message { () throws(DataError) in try IDX.read(badType) }.contains("\(badType): not an IDX file"))
        #expect(message { () throws(DataError) in try IDX.read(badType) }.contains("byte 3 is 0x07"))
        let floats = try files.write([0, 0, 0x0D, 1, 0, 0, 0, 1, 0, 0, 0, 0], name: "floats")
        #expect(
            message { () throws(DataError) in try IDX.read(floats) }
                == "\(floats): IDX data type 0x0D (32-bit float) is not supported; only unsigned bytes (0x08) are")
        let labelPath = try files.write(labels, name: "labels")
        let imagePath = try files.write(images, name: "images")
        #expect(
            message { () throws(DataError) in let _: Dataset<Float> = try IDX.load(images: labelPath, labels: labelPath) }
                == "\(labelPath): an image file (samples, rows, columns) must have 3 dimensions, the header says 1")
        #expect(
            message { () throws(DataError) in let _: Dataset<Float> = try IDX.load(images: imagePath, labels: imagePath) }
                == "\(imagePath): a label file (samples) must have 1 dimension, the header says 3")
    }

    @Test("Size errors: truncated header and body, trailing bytes, say bytes expected and found")
    func sizeErrors() throws {
        let files = TemporaryFiles()
        defer { files.removeAll() }
        let short = try files.write(Array(images.dropLast(5)), name: "short")
        // 4 magic + 3 · 4 dimension bytes + 3 · 2 · 2 pixels = 28 bytes
        #expect(message { () throws(DataError) in try IDX.read(short) } == "\(short): truncated: the header says 28 bytes, found 23")
        let shortGzip = try files.write(Gzip.compress(Array(images.dropLast(5))), name: "short.gz")
        #expect(message { () throws(DataError) in try IDX.read(shortGzip) } == "\(shortGzip): truncated: the header says 28 bytes, found 23")
        let header = try files.write([0, 0, 8, 3, 0, 0, 0], name: "header")
        #expect(message { () throws(DataError) in try IDX.read(header) } == "\(header): truncated: the header says 16 bytes, found 7")
        let magicOnly = try files.write([0, 0, 8], name: "magic")
        #expect(message { () throws(DataError) in try IDX.read(magicOnly) } == "\(magicOnly): truncated: the header says 4 bytes, found 3")
        let long = try files.write(images + [9, 9], name: "long")
        #expect(message { () throws(DataError) in try IDX.read(long) } == "\(long): the header says 28 bytes, found 30 (2 extra)")
    }

    @Test("Corrupt and truncated gzip streams name the file")
    func gzipErrors() throws {
        let files = TemporaryFiles()
        defer { files.removeAll() }
        let compressed = Gzip.compress(images)
        var corrupt = compressed
        for i in 10..<(corrupt.count - 8) { corrupt[i] ^= 0xA5 }  // the deflate body, between header and trailer
        let corruptPath = try files.write(corrupt, name: "corrupt.gz")
        #expect(message { () throws(DataError) in try IDX.read(corruptPath) }.hasPrefix("\(corruptPath): corrupt gzip stream: "))
        var badCheck = compressed
        badCheck[badCheck.count - 6] ^= 0xFF  // the CRC-32 in the trailer
        let badCheckPath = try files.write(badCheck, name: "crc.gz")
        #expect(message { () throws(DataError) in try IDX.read(badCheckPath) }.contains("\(badCheckPath): corrupt gzip stream: incorrect data check"))
        let cut = try files.write(Array(compressed.dropLast(12)), name: "cut.gz")
        #expect(message { () throws(DataError) in try IDX.read(cut) }.hasPrefix("\(cut): corrupt gzip stream: the stream ends early"))
        let trailing = try files.write(compressed + [0, 1, 2], name: "trailing.gz")
        #expect(
            message { () throws(DataError) in try IDX.read(trailing) }
                == "\(trailing): corrupt gzip stream: 3 unexpected bytes after the end of the gzip stream")
    }

    @Test("Images and labels that disagree: counts naming both files, a label outside the classes")
    func pairErrors() throws {
        let files = TemporaryFiles()
        defer { files.removeAll() }
        let imagePath = try files.write(images, name: "images")
        let twoLabels = try files.write(IDX.encode(dimensions: [2], bytes: [1, 2]), name: "two-labels")
        #expect(
            message { () throws(DataError) in let _: Dataset<Float> = try IDX.load(images: imagePath, labels: twoLabels) }
                == "\(imagePath) holds 3 images but \(twoLabels) holds 2 labels; expected the same count")
        let labelPath = try files.write(labels, name: "labels")
        #expect(
            message { () throws(DataError) in
                let _: Dataset<Float> = try IDX.load(images: imagePath, labels: labelPath, classNames: ["a", "b", "c", "d", "e"])
            } == "\(labelPath): sample 2 has label 7; expected 0..<5")
    }

    @Test("Labels past 10 must leave no gap: a stray 200 among 0…9 is refused naming the file and sample")
    func labelGaps() throws {
        let files = TemporaryFiles()
        defer { files.removeAll() }
        let imagePath = try files.write(images, name: "images")
        let stray = try files.write(IDX.encode(dimensions: [3], bytes: [3, 200, 7]), name: "stray")
        #expect(
            message { () throws(DataError) in let _: Dataset<Float> = try IDX.load(images: imagePath, labels: stray) }
                == "\(stray): sample 1 has label 200; expected 0..<10")
        // 0…11 with every label present: twelve classes.
        let twelve = try files.write(IDX.encode(dimensions: [12, 1, 1], bytes: Array(repeating: 0, count: 12)), name: "twelve")
        let dense = try files.write(IDX.encode(dimensions: [12], bytes: (0..<12).map(UInt8.init)), name: "dense")
        let d: Dataset<Float> = try IDX.load(images: twelve, labels: dense)
        #expect(d.outputCount == 12)
    }

    @Test("A gzip bomb is refused after inflating what its header declares plus one byte")
    func gzipBomb() throws {
        let files = TemporaryFiles()
        defer { files.removeAll() }
        // The header declares one 2×2 image (20 bytes in all); 64 MB of zeros follow.
        let bomb = Gzip.compress(IDX.encode(dimensions: [1, 2, 2], bytes: []) + [UInt8](repeating: 0, count: 64 << 20))
        #expect(bomb.count < 100_000)
        let path = try files.write(bomb, name: "bomb.gz")
        #expect(
            message { () throws(DataError) in _ = try IDX.read(path) }
                == "\(path): the gzip stream inflates to more than the 20 bytes its IDX header declares; refused after 21")
        // A header that declares more than the machine's memory is refused before its body is inflated.
        let huge = try files.write(Gzip.compress(IDX.encode(dimensions: [0xFFFF_FFFF, 0xFFFF], bytes: [])), name: "huge.gz")
        #expect(message { () throws(DataError) in _ = try IDX.read(huge) }.contains("more than this machine's"))
    }

    @Test("Fashion-MNIST t10k: 10,000 images of 28×28 in [0, 1], 1,000 of each class")
    func fashionMNIST() throws {
        let directory = "/usr/share/datasets/fashion-mnist"
        guard FileManager.default.fileExists(atPath: directory) else {
            Issue.record("\(directory) is missing: run `apt-get install dataset-fashion-mnist` (see Data/README.md)")
            return
        }
        let d: Dataset<Float> = try IDX.load(
            images: directory + "/t10k-images-idx3-ubyte.gz", labels: directory + "/t10k-labels-idx1-ubyte.gz")
        #expect(d.count == 10_000 && d.featureCount == 28 * 28 && d.outputCount == 10)
        #expect(d.features.scalars.allSatisfy { $0 >= 0 && $0 <= 1 })
        #expect(d.features.scalars.contains(0) && d.features.scalars.contains(1))
        let labels = d.labels ?? []
        var counts = [Int](repeating: 0, count: 10)
        for label in labels { counts[label] += 1 }
        #expect(counts == [Int](repeating: 1000, count: 10))
        // The first test image is an ankle boot (class 9) whose pixels sum to 33,456 / 255.
        #expect(Array(labels.prefix(3)) == [9, 2, 1])
        let first = d.features.scalars[0..<784].reduce(0, +)
        expectClose(first, Float(33_456) / 255, tolerance: 1e-2)
    }
}
