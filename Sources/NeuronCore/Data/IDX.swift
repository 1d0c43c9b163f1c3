/// The IDX format of MNIST and Fashion-MNIST: a magic number, big-endian 32-bit dimensions, then
/// the elements in row-major order.
///
/// Header: `0x00 0x00 <type> <ndims>`, then `ndims` big-endian `UInt32` extents; only the
/// unsigned-byte type (0x08) is read. Files may be gzip-compressed, as they are distributed.
public enum IDX {
    /// Reads one IDX file, raw or gzip-compressed (detected by the gzip magic `1f 8b`), as its
    /// dimensions and unsigned bytes.
    /// - Throws: ``DataError`` naming the file: missing, neither gzip nor IDX, an unsupported
    ///   element type, truncated or with trailing bytes, a corrupt gzip stream.
    ///
    /// A gzip stream is inflated header first, and then no further than the size the header
    /// declares plus one byte, so a small file that inflates to gigabytes is refused after
    /// inflating what its header admits; a header that declares more than the machine's memory
    /// is refused before inflating its body.
    public static func read(_ path: String) throws(DataError) -> (dimensions: [Int], bytes: [UInt8]) {
        try decode(DataFile.bytes(at: path), path: path)
    }

    /// ``read(_:)`` of a file's bytes already in memory; `path` names them in errors.
    static func decode(_ raw: [UInt8], path: String) throws(DataError) -> (dimensions: [Int], bytes: [UInt8]) {
        guard Gzip.isCompressed(raw) else { return try parse(raw, path: path) }
        let inflater = try Gzip.Inflater(raw, path: path)
        try inflater.fill(upTo: 4)
        let rank = inflater.count >= 4 ? Int(inflater.bytes[3]) : 0
        try inflater.fill(upTo: 4 + 4 * rank)
        let expected = try declaredSize(inflater.bytes, path: path)
        try inflater.fill(upTo: expected + 1)
        guard inflater.count <= expected else { throw .inflatesPastHeader(path: path, expectedBytes: expected) }
        return try parse(inflater.bytes, path: path)
    }

    /// The total bytes (header and elements) an IDX header declares, once the header itself is
    /// checked; `bytes` may stop after the header.
    private static func declaredSize(_ bytes: [UInt8], path: String) throws(DataError) -> Int {
        let header = try parseHeader(bytes, path: path)
        let memory = PhysicalMemory.bytes
        guard header.size <= memory else {
            throw .exceedsMemory(
                path: path, what: "its header declares \(header.dimensions.map(String.init).joined(separator: "×")) bytes", bytes: header.size,
                memory: memory)
        }
        return header.size
    }

    /// Images (N, rows, cols) and labels (N) as a classification dataset.
    ///
    /// `features: (N, rows · cols)` with each byte times `scale` (default 1/255, so [0, 1]);
    /// `targets: (N, classCount)` one-hot. The class names are `classNames` when given, else
    /// "0", "1", … for max(10, largest label + 1) classes.
    /// - Parameters:
    ///   - images: the IDX images file (gzip or raw).
    ///   - labels: the IDX labels file (gzip or raw).
    ///   - scale: each pixel byte's factor.
    ///   - classNames: the classes' names, in label order.
    ///   - limit: read only the first `limit` samples (at least 1).
    ///   - reference: another IDX images file (the training images, for a test set) whose image
    ///     size (rows × columns) these images must have.
    /// - Throws: ``DataError`` naming the file(s): everything ``read(_:)`` throws, images that are
    ///   not 3-dimensional or labels that are not 1-dimensional, image and label counts that
    ///   differ, a label outside the classes.
    public static func load<Scalar: TensorScalar>(
        images: String, labels: String, scale: Scalar = 1 / 255, classNames: [String]? = nil, limit: Int? = nil,
        imageSizeOf reference: String? = nil
    ) throws(DataError) -> Dataset<Scalar> {
        if let limit, limit < 1 {
            throw .invalidArgument(name: "limit", value: "\(limit)", expected: "at least 1 sample")
        }
        if let classNames, classNames.isEmpty {
            throw .invalidArgument(name: "class names", value: "[]", expected: "at least one class name")
        }
        let image = try read(images)
        guard image.dimensions.count == 3 else {
            throw .wrongDimensionCount(path: images, role: "an image file (samples, rows, columns)", expected: 3, found: image.dimensions.count)
        }
        if let reference {
            let other = try readHeader(reference)
            if other.count == 3, Array(other[1...]) != Array(image.dimensions[1...]) {
                throw .imageSizeMismatch(
                    trainPath: reference, trainSize: Array(other[1...]), testPath: images, testSize: Array(image.dimensions[1...]))
            }
        }
        let label = try read(labels)
        guard label.dimensions.count == 1 else {
            throw .wrongDimensionCount(path: labels, role: "a label file (samples)", expected: 1, found: label.dimensions.count)
        }
        guard image.dimensions[0] == label.dimensions[0] else {
            throw .sampleCountMismatch(imagesPath: images, images: image.dimensions[0], labelsPath: labels, labels: label.dimensions[0])
        }
        let count = min(limit ?? image.dimensions[0], image.dimensions[0])
        let pixels = image.dimensions[1] * image.dimensions[2]
        let used = label.bytes[..<count].map(Int.init)
        let classCount: Int
        if let classNames {
            classCount = classNames.count
        } else {
            // The classes are 0..<10 (MNIST's) or, past 10, 0 up to the largest label with every
            // label in between present: a stray 200 among 0…9 is an error, not 191 empty classes.
            let seen = Set(used)
            var count = 10
            while seen.contains(count) { count += 1 }
            classCount = count
        }
        if let bad = used.firstIndex(where: { $0 >= classCount }) {
            throw .labelOutOfRange(path: labels, sample: bad, label: used[bad], classCount: classCount)
        }
        let featureBytes = count.multipliedReportingOverflow(by: pixels).partialValue.multipliedReportingOverflow(by: MemoryLayout<Scalar>.size)
        guard !featureBytes.overflow, featureBytes.partialValue <= PhysicalMemory.bytes else {
            throw .exceedsMemory(
                path: images, what: "its \(count) images of \(pixels) pixels as \(Scalar.self)",
                bytes: featureBytes.overflow ? .max : featureBytes.partialValue,
                memory: PhysicalMemory.bytes)
        }

        // A table of the 256 scaled byte values: one multiply per possible byte, not per pixel.
        let table = (0..<256).map { Scalar($0) * scale }
        var features = [Scalar](repeating: 0, count: count * pixels)
        features.withUnsafeMutableBufferPointer { out in
            image.bytes.withUnsafeBufferPointer { bytes in
                for i in 0..<out.count { out[i] = table[Int(bytes[i])] }
            }
        }
        return try Dataset.classification(
            features: Tensor(matrix: features, rows: count, columns: pixels), labels: used,
            classNames: classNames ?? (0..<classCount).map(String.init))
    }

    /// The dimensions and elements of an uncompressed IDX file's bytes; `path` names it in errors.
    static func parse(_ data: [UInt8], path: String) throws(DataError) -> (dimensions: [Int], bytes: [UInt8]) {
        let (dimensions, headerSize, expected) = try parseHeader(data, path: path)
        guard data.count >= expected else { throw .truncated(path: path, expectedBytes: expected, foundBytes: data.count) }
        guard data.count == expected else { throw .trailingBytes(path: path, expectedBytes: expected, foundBytes: data.count) }
        return (dimensions, Array(data[headerSize...]))
    }

    /// The dimensions, header size and total size an IDX header declares.
    private static func parseHeader(_ data: [UInt8], path: String) throws(DataError) -> (dimensions: [Int], headerSize: Int, size: Int) {
        guard !data.isEmpty else { throw .emptyFile(path: path, expected: "an IDX header (0x00 0x00 0x08 <ndims>) and data") }
        let magic = data.prefix(4)
        guard magic.prefix(2).allSatisfy({ $0 == 0 }) else {
            throw .notIDX(path: path, reason: "it starts with \(magic.map(hex).joined(separator: " "))")
        }
        guard data.count >= 4 else { throw .truncated(path: path, expectedBytes: 4, foundBytes: data.count) }
        switch data[2] {
        case 0x08: break
        case 0x09, 0x0B, 0x0C, 0x0D, 0x0E: throw .unsupportedIDXType(path: path, typeCode: data[2])
        default: throw .notIDX(path: path, reason: "byte 3 is \(hex(data[2])), which is no IDX data type")
        }
        let rank = Int(data[3])
        let headerSize = 4 + 4 * rank
        guard data.count >= headerSize else { throw .truncated(path: path, expectedBytes: headerSize, foundBytes: data.count) }
        var dimensions = [Int]()
        var elements = 1
        for d in 0..<rank {
            let at = 4 + 4 * d
            let extent = Int(data[at]) << 24 | Int(data[at + 1]) << 16 | Int(data[at + 2]) << 8 | Int(data[at + 3])
            dimensions.append(extent)
            let (product, overflow) = elements.multipliedReportingOverflow(by: extent)
            guard !overflow else { throw .notIDX(path: path, reason: "the dimensions \(dimensions)… hold more elements than can be addressed") }
            elements = product
        }
        let (expected, overflow) = headerSize.addingReportingOverflow(elements)
        guard !overflow, expected < Int.max else {
            throw .notIDX(path: path, reason: "the dimensions \(dimensions) hold more elements than can be addressed")
        }
        return (dimensions, headerSize, expected)
    }

    /// The dimensions in the header of the IDX file at `path`, inflating no more of a gzip file
    /// than its header.
    public static func readHeader(_ path: String) throws(DataError) -> [Int] {
        let raw = try DataFile.bytes(at: path)
        guard Gzip.isCompressed(raw) else { return try parseHeader(raw, path: path).dimensions }
        let inflater = try Gzip.Inflater(raw, path: path)
        try inflater.fill(upTo: 4)
        let rank = inflater.count >= 4 ? Int(inflater.bytes[3]) : 0
        try inflater.fill(upTo: 4 + 4 * rank)
        return try parseHeader(inflater.bytes, path: path).dimensions
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = String(byte, radix: 16)
        return "0x" + (digits.count == 1 ? "0" + digits : digits)
    }

    /// The bytes of an uncompressed IDX file of unsigned bytes: the inverse of ``parse(_:path:)``,
    /// for writing test fixtures.
    static func encode(dimensions: [Int], bytes: [UInt8]) -> [UInt8] {
        var data: [UInt8] = [0, 0, 0x08, UInt8(dimensions.count)]
        for extent in dimensions {
            data += [
                UInt8(truncatingIfNeeded: extent >> 24), UInt8(truncatingIfNeeded: extent >> 16),
                UInt8(truncatingIfNeeded: extent >> 8), UInt8(truncatingIfNeeded: extent),
            ]
        }
        return data + bytes
    }
}
