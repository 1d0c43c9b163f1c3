// The safetensors format (github.com/huggingface/safetensors), the one checkpoints are written in,
// so that a checkpoint loads in Python (`safetensors.numpy.load_file`) with identical tensors:
//
//     N: u64 little-endian | N bytes: UTF-8 JSON header, space-padded | data: every tensor, packed
//
//     {"__metadata__": {"epoch": "3"},
//      "layers.0.weight": {"dtype": "F32", "shape": [2, 4], "data_offsets": [0, 32]}, ...}
//
// Offsets count from the first byte after the header; tensors are packed in order with no gaps;
// elements are little-endian, row-major. Reading trusts nothing: every length, offset and shape is
// checked against the others and against the file, and each error names the file and what is wrong.
import Foundation
import NeuronCore

/// Reading and writing tensors in the safetensors format.
public enum SafeTensors {
    /// An element type: the subset of safetensors' dtypes that checkpoints use.
    public enum DType: String, Sendable, Codable, CaseIterable {
        case f32 = "F32", f64 = "F64", i64 = "I64", i32 = "I32", u8 = "U8"

        /// Bytes per element.
        public var size: Int {
            switch self {
            case .u8: 1
            case .f32, .i32: 4
            case .f64, .i64: 8
            }
        }
    }

    /// One named tensor as stored: its element type, shape and little-endian bytes.
    public struct Entry: Sendable, Equatable {
        /// The tensor's name, e.g. `layers.0.weight`.
        public var name: String
        public var dtype: DType
        /// The extent of each dimension, outermost first; `[]` is a scalar.
        public var shape: [Int]
        /// The elements, row-major, each little-endian; `shape`'s product × `dtype.size` of them.
        public var bytes: [UInt8]

        /// An entry of the given parts; ``SafeTensors/encode(_:metadata:)`` requires `bytes` to fill `shape`.
        public init(name: String, dtype: DType, shape: [Int], bytes: [UInt8]) {
            (self.name, self.dtype, self.shape, self.bytes) = (name, dtype, shape, bytes)
        }
    }

    // MARK: Entries

    /// A float tensor as F32 (`Float`) or F64 (`Double`), bit for bit.
    public static func entry<Scalar: TensorScalar>(_ name: String, _ tensor: Tensor<Scalar>) -> Entry {
        // Casting a `Tensor<Scalar>` to the concrete type it is shares the storage; nothing is converted.
        switch tensor {
        case let t as Tensor<Float>:
            return Entry(name: name, dtype: .f32, shape: t.shape, bytes: littleEndianBytes(t.scalars.lazy.map(\.bitPattern)))
        case let t as Tensor<Double>:
            return Entry(name: name, dtype: .f64, shape: t.shape, bytes: littleEndianBytes(t.scalars.lazy.map(\.bitPattern)))
        default:
            preconditionFailure("safetensors stores Float and Double tensors, not \(Scalar.self)")
        }
    }

    /// Integers as I64 (e.g. an epoch's sample order).
    /// - Precondition: `values.count` is the product of `shape`.
    public static func entry(_ name: String, int64 values: [Int64], shape: [Int]) -> Entry {
        precondition(
            shape.allSatisfy { $0 >= 0 } && shape.reduce(1, *) == values.count,
            "\(name): \(values.count) values do not fill shape \(format(shape))")
        return Entry(name: name, dtype: .i64, shape: shape, bytes: littleEndianBytes(values))
    }

    /// The entry called `name`.
    /// - Throws: ``CheckpointError/missingTensor(path:name:)`` naming `source` when there is none.
    public static func entry(named name: String, in entries: [Entry], source: String) throws(CheckpointError) -> Entry {
        guard let entry = entries.first(where: { $0.name == name }) else { throw .missingTensor(path: source, name: name) }
        return entry
    }

    // MARK: Encoding

    /// The file's bytes: header length, header (padded with spaces to a multiple of 8 bytes, as
    /// Python's safetensors pads it) and the entries' data packed in the order given.
    /// - Parameters:
    ///   - entries: the tensors, in the order their data is packed.
    ///   - metadata: free-form strings stored under `__metadata__`; left out when empty.
    /// - Precondition: names are unique and not `__metadata__`; each entry's bytes fill its shape.
    public static func encode(_ entries: [Entry], metadata: [String: String] = [:]) -> [UInt8] {
        var members: [String] = []
        if !metadata.isEmpty {
            let pairs = metadata.sorted { $0.key < $1.key }.map { jsonString($0.key) + ":" + jsonString($0.value) }
            members.append(jsonString(metadataKey) + ":{" + pairs.joined(separator: ",") + "}")
        }
        var names = Set<String>()
        var offset = 0
        for entry in entries {
            precondition(entry.name != metadataKey, "a tensor cannot be named \(metadataKey)")
            precondition(names.insert(entry.name).inserted, "tensor \"\(entry.name)\" appears twice")
            precondition(
                entry.shape.allSatisfy { $0 >= 0 } && entry.shape.reduce(1, *) * entry.dtype.size == entry.bytes.count,
                "tensor \"\(entry.name)\": \(entry.bytes.count) bytes do not fill shape \(format(entry.shape)) of \(entry.dtype.rawValue)")
            let shape = entry.shape.map(String.init).joined(separator: ",")
            members.append(
                jsonString(entry.name)
                    + ":{\"dtype\":\"\(entry.dtype.rawValue)\",\"shape\":[\(shape)],\"data_offsets\":[\(offset),\(offset + entry.bytes.count)]}")
            offset += entry.bytes.count
        }
        var header = Array(("{" + members.joined(separator: ",") + "}").utf8)
        header.append(contentsOf: repeatElement(UInt8(ascii: " "), count: (8 - header.count % 8) % 8))

        var bytes: [UInt8] = []
        bytes.reserveCapacity(8 + header.count + offset)
        bytes.append(contentsOf: littleEndianBytes(CollectionOfOne(UInt64(header.count))))
        bytes.append(contentsOf: header)
        for entry in entries { bytes.append(contentsOf: entry.bytes) }
        return bytes
    }

    /// Encodes `entries` and writes them to `path` atomically (see ``AtomicFile``): a crash leaves
    /// either the old file or the new one, never half of one.
    /// - Throws: ``CheckpointError/writeFailed(path:reason:)``.
    public static func write(_ entries: [Entry], metadata: [String: String] = [:], to path: String) throws(CheckpointError) {
        try AtomicFile.write(encode(entries, metadata: metadata), to: path)
    }

    // MARK: Decoding

    /// The entries and metadata of a safetensors file's bytes, every part checked.
    ///
    /// Entries come in the order of their data in the file, which is the header's order for the
    /// files this engine and Python's safetensors write. Fields of a tensor's header object other
    /// than `dtype`, `shape` and `data_offsets` are ignored, as Python's safetensors ignores them.
    /// - Parameters:
    ///   - bytes: the whole file.
    ///   - source: the file's name for messages.
    /// - Throws: ``CheckpointError/corrupt(path:reason:)`` for a malformed header or data that does
    ///   not fit it, ``CheckpointError/truncated(path:expectedBytes:foundBytes:)`` for data shorter
    ///   than the header says, ``CheckpointError/unsupportedDType(path:name:dtype:)``.
    public static func decode(_ bytes: [UInt8], source: String) throws(CheckpointError) -> (entries: [Entry], metadata: [String: String]) {
        func corrupt(_ reason: String) -> CheckpointError { .corrupt(path: source, reason: reason) }

        guard !bytes.isEmpty else {
            throw corrupt("the file is empty; expected a safetensors file (an 8-byte header length, a JSON header, the tensors' data)")
        }
        guard bytes.count >= 8 else {
            throw corrupt("the file is \(bytes.count) bytes, too short for a safetensors file's 8-byte header length")
        }
        let headerLength = bytes.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) }
        guard headerLength <= UInt64(bytes.count - 8) else {
            throw corrupt(
                "the first 8 bytes say the header is \(count(headerLength)) bytes, but only \(count(bytes.count - 8)) follow"
                    + " (a truncated file, or not a safetensors file)")
        }
        let headerEnd = 8 + Int(headerLength)
        let headerBytes = bytes[8..<headerEnd]
        guard String(validating: headerBytes, as: UTF8.self) != nil else { throw corrupt("the header is not valid UTF-8") }
        let json: HeaderJSON
        do {
            json = try HeaderJSON.parse(headerBytes)
        } catch {
            throw corrupt("the header is not valid JSON: at byte \(error.offset) of the header, \(error.reason)")
        }

        // The header: names, dtypes, shapes, offsets, each checked on its own.
        guard case let .object(members) = json else { throw corrupt("the header must be a JSON object, found \(json.kind)") }
        var metadata: [String: String] = [:]
        var slots: [Slot] = []
        var names = Set<String>()
        for (name, value) in members {
            guard names.insert(name).inserted else {
                throw corrupt("the header names \"\(name)\" twice; tensor names must be unique")
            }
            if name == metadataKey {
                metadata = try decodeMetadata(value, corrupt: corrupt)
            } else {
                slots.append(try decodeSlot(name, value, source: source, corrupt: corrupt))
            }
        }

        // The data: packed from byte 0, in offset order, with no gaps or overlaps, filling the rest of the file.
        let dataCount = bytes.count - headerEnd
        let order = slots.indices.sorted { (slots[$0].begin, slots[$0].end, $0) < (slots[$1].begin, slots[$1].end, $1) }
        var end = 0
        var previous: Slot?
        for slot in order.map({ slots[$0] }) {
            if slot.begin > end {
                let after = previous.map { "tensor \($0.described) and " } ?? "the start of the data and "
                throw corrupt("\(count(slot.begin - end)) unused bytes between \(after)tensor \(slot.described); tensors must be packed with no gaps")
            }
            if slot.begin < end, let previous {
                throw corrupt("tensor \(slot.described) overlaps tensor \(previous.described)")
            }
            end = slot.end
            previous = slot
        }
        if end > dataCount { throw .truncated(path: source, expectedBytes: end, foundBytes: dataCount) }
        if end < dataCount {
            throw corrupt(
                "the header says the data is \(count(end)) bytes, found \(count(dataCount)) (\(count(dataCount - end)) extra after the last tensor)")
        }
        let entries = order.map { i in
            let slot = slots[i]
            return Entry(
                name: slot.name, dtype: slot.dtype, shape: slot.shape,
                bytes: Array(bytes[headerEnd + slot.begin..<headerEnd + slot.end]))
        }
        return (entries, metadata)
    }

    /// Reads and decodes the safetensors file at `path` (see ``decode(_:source:)``).
    /// - Throws: ``CheckpointError/fileNotFound(path:)``, ``CheckpointError/unreadable(path:reason:)``,
    ///   and everything ``decode(_:source:)`` throws, each naming `path`.
    public static func read(_ path: String) throws(CheckpointError) -> (entries: [Entry], metadata: [String: String]) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { throw .fileNotFound(path: path) }
        guard !isDirectory.boolValue else { throw .unreadable(path: path, reason: "it is a directory") }
        let bytes: [UInt8]
        do {
            bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw .unreadable(path: path, reason: error.localizedDescription)
        }
        return try decode(bytes, source: path)
    }

    // MARK: Private

    static let metadataKey = "__metadata__"

    /// A tensor as the header describes it, checked against itself but not yet against the others.
    private struct Slot {
        var name: String, dtype: DType, shape: [Int], begin: Int, end: Int
        /// `"layers.0.bias" (data_offsets [32, 48])`.
        var described: String { "\"\(name)\" (data_offsets [\(begin), \(end)])" }
    }

    private static func decodeMetadata(_ value: HeaderJSON, corrupt: (String) -> CheckpointError) throws(CheckpointError) -> [String: String] {
        if case .null = value { return [:] }  // Python's reader accepts an explicit null
        guard case let .object(pairs) = value else { throw corrupt("\(metadataKey) must be an object of strings, found \(value.kind)") }
        var metadata: [String: String] = [:]
        for (key, value) in pairs {
            guard case let .string(text) = value else { throw corrupt("\(metadataKey) \"\(key)\" must be a string, found \(value.kind)") }
            guard metadata.updateValue(text, forKey: key) == nil else { throw corrupt("\(metadataKey) names \"\(key)\" twice") }
        }
        return metadata
    }

    private static func decodeSlot(
        _ name: String, _ value: HeaderJSON, source: String, corrupt: (String) -> CheckpointError
    ) throws(CheckpointError) -> Slot {
        let tensor = "tensor \"\(name)\""
        guard case let .object(pairs) = value else {
            throw corrupt("\(tensor) must be an object with dtype, shape and data_offsets, found \(value.kind)")
        }
        var fields: [String: HeaderJSON] = [:]
        for (key, value) in pairs {
            guard fields.updateValue(value, forKey: key) == nil else { throw corrupt("\(tensor) has \"\(key)\" twice") }
        }
        func field(_ key: String) throws(CheckpointError) -> HeaderJSON {
            guard let value = fields[key] else { throw corrupt("\(tensor) has no \"\(key)\"") }
            return value
        }
        func naturals(_ key: String, _ expected: String) throws(CheckpointError) -> [Int] {
            let value = try field(key)
            guard case let .array(items) = value else { throw corrupt("\(tensor): \(key) must be \(expected), found \(value.kind)") }
            var numbers: [Int] = []
            for item in items {
                guard case let .integer(n) = item, n >= 0 else {
                    throw corrupt("\(tensor): \(key) must be \(expected), found \(item.text) in it")
                }
                numbers.append(n)
            }
            return numbers
        }

        let dtypeValue = try field("dtype")
        guard case let .string(dtypeName) = dtypeValue else { throw corrupt("\(tensor): dtype must be a string, found \(dtypeValue.kind)") }
        guard let dtype = DType(rawValue: dtypeName) else { throw .unsupportedDType(path: source, name: name, dtype: dtypeName) }
        let shape = try naturals("shape", "an array of non-negative integers")
        let offsets = try naturals("data_offsets", "two non-negative integers [begin, end]")
        guard offsets.count == 2 else {
            throw corrupt("\(tensor): data_offsets must be two non-negative integers [begin, end], found \(offsets.count)")
        }
        let (begin, end) = (offsets[0], offsets[1])
        guard begin <= end else { throw corrupt("\(tensor): data_offsets [\(begin), \(end)] end before they begin") }
        let needed = byteCount(shape, dtype)
        guard needed == end - begin else {
            throw corrupt(
                "\(tensor): shape \(format(shape)) of \(dtype.rawValue) needs \(needed.map { count($0) } ?? "more than Int.max") bytes,"
                    + " but data_offsets [\(begin), \(end)] hold \(count(end - begin))")
        }
        return Slot(name: name, dtype: dtype, shape: shape, begin: begin, end: end)
    }

    /// The bytes a tensor of `shape` takes, or nil when that overflows `Int`.
    static func byteCount(_ shape: [Int], _ dtype: DType) -> Int? {
        var product = dtype.size
        for extent in shape {
            let (next, overflow) = product.multipliedReportingOverflow(by: extent)
            if overflow || extent < 0 { return nil }
            product = next
        }
        return product
    }

    /// Each value's bytes, least significant first.
    static func littleEndianBytes<Word: FixedWidthInteger>(_ words: some Collection<Word>) -> [UInt8] {
        let size = MemoryLayout<Word>.size
        var bytes = [UInt8](repeating: 0, count: words.count * size)
        bytes.withUnsafeMutableBytes { raw in
            for (i, word) in words.enumerated() { raw.storeBytes(of: word.littleEndian, toByteOffset: i * size, as: Word.self) }
        }
        return bytes
    }

    /// The little-endian words that `bytes` holds (`bytes.count` a multiple of the word's size).
    static func words<Word: FixedWidthInteger>(_ bytes: [UInt8], as: Word.Type) -> [Word] {
        let size = MemoryLayout<Word>.size
        return bytes.withUnsafeBytes { raw in
            (0..<raw.count / size).map { Word(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * size, as: Word.self)) }
        }
    }

    /// A JSON string literal; non-ASCII characters stay as UTF-8, as Python's safetensors writes them.
    static func jsonString(_ text: String) -> String {
        var literal = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": literal += "\\\""
            case "\\": literal += "\\\\"
            case "\n": literal += "\\n"
            case "\r": literal += "\\r"
            case "\t": literal += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                literal += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: literal.unicodeScalars.append(scalar)
            }
        }
        return literal + "\""
    }

    /// `(2, 3)`, the shape notation of the engine's messages.
    static func format(_ shape: [Int]) -> String { "(" + shape.map(String.init).joined(separator: ", ") + ")" }

    /// `803,760`: byte counts in messages, grouped in thousands. (The format's own: a file format
    /// does not borrow from the progress display.)
    static func count(_ n: Int) -> String {
        var digits = String(n.magnitude), grouped = ""
        while digits.count > 3 {
            grouped = "," + digits.suffix(3) + grouped
            digits.removeLast(3)
        }
        return (n < 0 ? "-" : "") + digits + grouped
    }
    static func count(_ n: UInt64) -> String { n <= UInt64(Int.max) ? count(Int(n)) : String(n) }
}

// MARK: - Entries as tensors

extension SafeTensors.Entry {
    /// The tensor converted to `Scalar` from F32 or F64 (F32 → `Double` is exact; F64 → `Float` rounds).
    /// - Parameters:
    ///   - as: the scalar type to convert to.
    ///   - source: the file's name for messages.
    /// - Throws: ``CheckpointError/wrongDType(path:name:found:expected:)`` for an integer dtype,
    ///   ``CheckpointError/corrupt(path:reason:)`` for bytes that do not fill the shape.
    public func tensor<Scalar: TensorScalar>(as: Scalar.Type, source: String) throws(CheckpointError) -> Tensor<Scalar> {
        try checkByteCount(source: source)
        let scalars: [Scalar]
        switch dtype {
        case .f32:
            let floats = SafeTensors.words(bytes, as: UInt32.self).map(Float.init(bitPattern:))
            // The same type is handed over as is, so that even a NaN's payload survives.
            scalars = Scalar.self == Float.self ? floats as! [Scalar] : floats.map { Scalar($0) }
        case .f64:
            let doubles = SafeTensors.words(bytes, as: UInt64.self).map(Double.init(bitPattern:))
            scalars = Scalar.self == Double.self ? doubles as! [Scalar] : doubles.map { Scalar($0) }
        case .i64, .i32, .u8:
            throw .wrongDType(path: source, name: name, found: dtype, expected: "F32 or F64")
        }
        return try! Tensor(shape: shape, scalars: scalars)  // checkByteCount checked the shape and the count
    }

    /// The tensor converted to `Scalar` (see ``tensor(as:source:)``), checked to have `shape`.
    /// - Throws: also ``CheckpointError/shapeMismatch(path:name:found:expected:)``.
    public func tensor<Scalar: TensorScalar>(as type: Scalar.Type, shape expected: [Int], source: String) throws(CheckpointError) -> Tensor<Scalar> {
        guard shape == expected else { throw .shapeMismatch(path: source, name: name, found: shape, expected: expected) }
        return try tensor(as: type, source: source)
    }

    /// Integers from I64 or I32.
    /// - Throws: ``CheckpointError/wrongDType(path:name:found:expected:)`` for other dtypes,
    ///   ``CheckpointError/corrupt(path:reason:)`` for bytes that do not fill the shape.
    public func int64s(source: String) throws(CheckpointError) -> [Int64] {
        try checkByteCount(source: source)
        switch dtype {
        case .i64: return SafeTensors.words(bytes, as: Int64.self)
        case .i32: return SafeTensors.words(bytes, as: Int32.self).map(Int64.init)
        case .f32, .f64, .u8: throw .wrongDType(path: source, name: name, found: dtype, expected: "I64 or I32")
        }
    }

    private func checkByteCount(source: String) throws(CheckpointError) {
        guard let count = SafeTensors.byteCount(shape, dtype), count == bytes.count else {
            throw .corrupt(
                path: source,
                reason: "tensor \"\(name)\": shape \(SafeTensors.format(shape)) of \(dtype.rawValue)"
                    + " does not fit its \(SafeTensors.count(bytes.count)) bytes")
        }
    }
}

// MARK: - Errors

/// What went wrong reading or writing a checkpoint. Every message names the file first.
public enum CheckpointError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No file at `path`.
    case fileNotFound(path: String)
    /// A file that exists but cannot be read (a directory, no permission, an I/O error).
    case unreadable(path: String, reason: String)
    /// A file whose contents cannot be right: a malformed safetensors header or data that does not
    /// fit it (or, for a checkpoint's other files, contents that do not decode); `reason` says what.
    case corrupt(path: String, reason: String)
    /// Less data after the header than its offsets say.
    case truncated(path: String, expectedBytes: Int, foundBytes: Int)
    /// A well-formed tensor of a dtype this engine does not read (F16, BF16, ...).
    case unsupportedDType(path: String, name: String, dtype: String)
    /// A tensor of another dtype than the one asked for.
    case wrongDType(path: String, name: String, found: SafeTensors.DType, expected: String)
    /// A file that could not be written; whatever was at `path` before is still there.
    case writeFailed(path: String, reason: String)
    /// A tensor the reader needs that the file does not hold.
    case missingTensor(path: String, name: String)
    /// A tensor of another shape than the one the reader needs.
    case shapeMismatch(path: String, name: String, found: [Int], expected: [Int])
    /// A checkpoint whose run state (the header's `neuron.state`) is missing, malformed, out of
    /// range or does not fit its tensors: `field` is the key path (`position.batchIndex`) or the
    /// tensor's name.
    case invalidState(path: String, field: String, reason: String)

    /// The message: the file first, then what was found and what was expected.
    public var description: String {
        switch self {
        case let .fileNotFound(path):
            return "\(path): no such file"
        case let .unreadable(path, reason):
            return "\(path): cannot be read: \(reason)"
        case let .corrupt(path, reason):
            return "\(path): corrupt: \(reason)"
        case let .truncated(path, expected, found):
            return "\(path): truncated: the header says the data is \(SafeTensors.count(expected)) bytes, found \(SafeTensors.count(found))"
        case let .unsupportedDType(path, name, dtype):
            let supported = SafeTensors.DType.allCases.map(\.rawValue).joined(separator: ", ")
            return "\(path): tensor \"\(name)\" has dtype \(SafeTensors.jsonString(dtype)), which is not supported; expected one of \(supported)"
        case let .wrongDType(path, name, found, expected):
            return "\(path): tensor \"\(name)\" is \(found.rawValue); expected \(expected)"
        case let .writeFailed(path, reason):
            return "\(path): cannot be written: \(reason)"
        case let .missingTensor(path, name):
            return "\(path): no tensor named \"\(name)\""
        case let .shapeMismatch(path, name, found, expected):
            return "\(path): tensor \"\(name)\" has shape \(SafeTensors.format(found)); expected \(SafeTensors.format(expected))"
        case let .invalidState(path, field, reason):
            return "\(path): \(field): \(reason)"
        }
    }
}

// MARK: - The header's JSON

/// A JSON value whose objects keep their keys in file order, repeats included, so that a header
/// naming a tensor twice is caught. (Foundation's `JSONSerialization` keeps the last of a repeated
/// key silently and reads `true` and `1e3` as integers, so the header is parsed here, strictly, by
/// RFC 8259's grammar.)
private enum HeaderJSON {
    case object([(key: String, value: HeaderJSON)])
    case array([HeaderJSON])
    case string(String)
    /// An integer literal (no fraction, no exponent) that fits in `Int`.
    case integer(Int)
    /// Any other number, as written.
    case number(String)
    case bool(Bool)
    case null

    /// What the value is, for messages: `a string "F32"`, `an array`.
    var kind: String {
        switch self {
        case .object: "an object"
        case .array: "an array"
        case .string, .integer, .number, .bool, .null: text
        }
    }

    /// A scalar as written, e.g. `-1`, `2.5`, `"F32"`.
    var text: String {
        switch self {
        case .object: "an object"
        case .array: "an array"
        case let .string(s): "a string " + SafeTensors.jsonString(s)
        case let .integer(n): String(n)
        case let .number(s): s
        case let .bool(b): String(b)
        case .null: "null"
        }
    }

    struct SyntaxError: Error {
        /// The byte of the header where parsing stopped, from 0.
        var offset: Int
        var reason: String
    }

    /// The value that `bytes` (UTF-8, already validated) hold, with only whitespace around it.
    static func parse(_ bytes: ArraySlice<UInt8>) throws(SyntaxError) -> HeaderJSON {
        var parser = Parser(bytes: Array(bytes))
        parser.skipWhitespace()
        let value = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.i == parser.bytes.count else { throw parser.error("unexpected \(parser.found) after the end of the JSON value") }
        return value
    }

    private struct Parser {
        let bytes: [UInt8]
        var i = 0
        /// Deeper nesting than any header needs; the limit keeps a hostile file from exhausting the stack.
        static let maximumDepth = 64

        var found: String {
            guard i < bytes.count else { return "the end of the header" }
            let byte = bytes[i]
            return (0x20..<0x7F).contains(byte) ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x" + String(byte, radix: 16)
        }

        func error(_ reason: String) -> SyntaxError { SyntaxError(offset: i, reason: reason) }

        mutating func skipWhitespace() {
            while i < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[i]) { i += 1 }
        }

        mutating func expect(_ byte: Character) throws(SyntaxError) {
            guard i < bytes.count, bytes[i] == byte.asciiValue! else { throw error("expected '\(byte)', found \(found)") }
            i += 1
        }

        mutating func value(depth: Int) throws(SyntaxError) -> HeaderJSON {
            guard depth < Self.maximumDepth else { throw error("values nested deeper than \(Self.maximumDepth) levels") }
            guard i < bytes.count else { throw error("expected a value, found the end of the header") }
            switch bytes[i] {
            case UInt8(ascii: "{"): return try object(depth: depth)
            case UInt8(ascii: "["): return try array(depth: depth)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            default: throw error("expected a value, found \(found)")
            }
        }

        mutating func object(depth: Int) throws(SyntaxError) -> HeaderJSON {
            try expect("{")
            var members: [(key: String, value: HeaderJSON)] = []
            skipWhitespace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
            while true {
                skipWhitespace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw error("expected a string key, found \(found)") }
                let key = try string()
                skipWhitespace()
                try expect(":")
                skipWhitespace()
                members.append((key, try value(depth: depth + 1)))
                skipWhitespace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: ",") || bytes[i] == UInt8(ascii: "}") else {
                    throw error("expected ',' or '}' after an object member, found \(found)")
                }
                i += 1
                if bytes[i - 1] == UInt8(ascii: "}") { return .object(members) }
            }
        }

        mutating func array(depth: Int) throws(SyntaxError) -> HeaderJSON {
            try expect("[")
            var items: [HeaderJSON] = []
            skipWhitespace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
            while true {
                skipWhitespace()
                items.append(try value(depth: depth + 1))
                skipWhitespace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: ",") || bytes[i] == UInt8(ascii: "]") else {
                    throw error("expected ',' or ']' after an array element, found \(found)")
                }
                i += 1
                if bytes[i - 1] == UInt8(ascii: "]") { return .array(items) }
            }
        }

        mutating func literal(_ word: String) throws(SyntaxError) {
            let start = i
            for byte in word.utf8 {
                guard i < bytes.count, bytes[i] == byte else { i = start; throw error("expected a value, found \(found)") }
                i += 1
            }
        }

        /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
        mutating func number() throws(SyntaxError) -> HeaderJSON {
            let start = i
            func isDigit(_ j: Int) -> Bool { j < bytes.count && (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[j]) }
            func digits() throws(SyntaxError) {
                guard isDigit(i) else { throw error("expected a digit, found \(found)") }
                while isDigit(i) { i += 1 }
            }
            if bytes[i] == UInt8(ascii: "-") { i += 1 }
            if i < bytes.count, bytes[i] == UInt8(ascii: "0") { i += 1 } else { try digits() }
            var isInteger = true
            if i < bytes.count, bytes[i] == UInt8(ascii: ".") { i += 1; try digits(); isInteger = false }
            if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
                i += 1
                if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
                try digits()
                isInteger = false
            }
            let text = String(decoding: bytes[start..<i], as: UTF8.self)
            if isInteger, let n = Int(text) { return .integer(n) }
            return .number(text)
        }

        mutating func string() throws(SyntaxError) -> String {
            try expect("\"")
            var utf8: [UInt8] = []
            while true {
                guard i < bytes.count else { throw error("a string is not closed before the end of the header") }
                let byte = bytes[i]
                i += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return String(decoding: utf8, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard i < bytes.count else { throw error("a string is not closed before the end of the header") }
                    let escape = bytes[i]
                    i += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(escape)
                    case UInt8(ascii: "b"): utf8.append(0x08)
                    case UInt8(ascii: "f"): utf8.append(0x0C)
                    case UInt8(ascii: "n"): utf8.append(0x0A)
                    case UInt8(ascii: "r"): utf8.append(0x0D)
                    case UInt8(ascii: "t"): utf8.append(0x09)
                    case UInt8(ascii: "u"): utf8.append(contentsOf: String(try unicodeEscape()).utf8)
                    default: i -= 1; throw error("invalid escape in a string: a backslash followed by \(found)")
                    }
                case 0x00..<0x20:
                    i -= 1
                    throw error("control character \(found) in a string; it must be escaped")
                default:
                    utf8.append(byte)
                }
            }
        }

        /// The scalar after `\u`: four hex digits, or a surrogate pair of two escapes.
        mutating func unicodeEscape() throws(SyntaxError) -> Character {
            let high = try hex4()
            var value = UInt32(high)
            if (0xD800..<0xDC00).contains(high) {
                guard i + 1 < bytes.count, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") else {
                    throw error("unpaired surrogate \\u\(String(high, radix: 16)) in a string")
                }
                i += 2
                let low = try hex4()
                guard (0xDC00..<0xE000).contains(low) else { throw error("unpaired surrogate \\u\(String(high, radix: 16)) in a string") }
                value = 0x10000 + (UInt32(high - 0xD800) << 10) + UInt32(low - 0xDC00)
            }
            guard let scalar = Unicode.Scalar(value) else { throw error("unpaired surrogate \\u\(String(high, radix: 16)) in a string") }
            return Character(scalar)
        }

        mutating func hex4() throws(SyntaxError) -> UInt16 {
            guard i + 4 <= bytes.count, let value = UInt16(String(decoding: bytes[i..<i + 4], as: UTF8.self), radix: 16),
                bytes[i..<i + 4].allSatisfy({ $0 != UInt8(ascii: "+") && $0 != UInt8(ascii: "-") })
            else { throw error("expected four hex digits after \\u") }
            i += 4
            return value
        }
    }
}
