import Foundation
import NeuronCore
import Testing

@testable import NeuronTraining

// MARK: - Helpers shared by the checkpoint tests

/// A fresh directory for one test's files; `remove()` deletes it and everything in it.
final class CheckpointTestDirectory {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("neuron-checkpoint-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
    }

    /// The path of `name` inside the directory.
    func file(_ name: String) -> String { path + "/" + name }

    /// The names in the directory, sorted (temporary files included: they start with a dot).
    func names() throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: path).sorted() }

    func bytes(_ name: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: file(name)))) }

    func write(_ bytes: [UInt8], _ name: String) throws -> String {
        try Data(bytes).write(to: URL(fileURLWithPath: file(name)))
        return file(name)
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// The message of the checkpoint error that `body` throws, or "no error" when it does not throw.
func checkpointErrorMessage<T>(_ body: () throws(CheckpointError) -> T) -> String {
    do {
        _ = try body()
        return "no error"
    } catch {
        return error.description
    }
}

/// A safetensors file built by hand: the header's length, the header as given, then `data`.
private func rawFile(_ header: String, _ data: [UInt8] = []) -> [UInt8] {
    SafeTensors.littleEndianBytes(CollectionOfOne(UInt64(header.utf8.count))) + Array(header.utf8) + data
}

/// The values every float round trip goes through: signed zeros, subnormals, infinities, the
/// extremes, a NaN with a payload (quiet and signalling) and an inexact decimal.
private func awkwardValues<Scalar: TensorScalar>(_: Scalar.Type) -> [Scalar] {
    [
        1.5, -0.0, 0.0, .leastNonzeroMagnitude, .leastNormalMagnitude.nextDown, .infinity, -.infinity,
        .greatestFiniteMagnitude, -.leastNormalMagnitude, nan(payload: 0x2A, quiet: true), nan(payload: 0x15, quiet: false), 0.1,
    ]
}

/// A NaN with the given payload; `quiet` sets the significand's top bit (IEEE 754's quiet bit).
private func nan<Scalar: TensorScalar>(payload: Scalar.RawSignificand, quiet: Bool) -> Scalar {
    let quietBit: Scalar.RawSignificand = quiet ? 1 << (Scalar.significandBitCount - 1) : 0
    return Scalar(sign: .plus, exponentBitPattern: (1 << Scalar.exponentBitCount) - 1, significandBitPattern: quietBit | payload)
}

@Suite("SafeTensors: the checkpoint format")
struct SafeTensorsTests {
    // MARK: Round trips

    @Test("Elements are stored little-endian by their bit patterns, worked by hand")
    func bytesByHand() throws {
        // 1.5 is 0x3FC00000 as a Float and 0x3FF8000000000000 as a Double; -2 as an Int64 is 0xFF…FE.
        #expect(SafeTensors.entry("w", Tensor<Float>(vector: [1.5])).bytes == [0x00, 0x00, 0xC0, 0x3F])
        #expect(SafeTensors.entry("w", Tensor<Double>(vector: [1.5])).bytes == [0, 0, 0, 0, 0, 0, 0xF8, 0x3F])
        #expect(SafeTensors.entry("w", Tensor<Float>(vector: [-0.0])).bytes == [0, 0, 0, 0x80])
        #expect(
            SafeTensors.entry("order", int64: [-2, 258], shape: [2]).bytes
                == [0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02, 0x01, 0, 0, 0, 0, 0, 0])
        #expect(SafeTensors.entry("w", Tensor<Float>(vector: [1.5])).dtype == .f32)
        #expect(SafeTensors.entry("w", Tensor<Double>(vector: [1.5])).dtype == .f64)
        #expect(SafeTensors.DType.allCases.map(\.size) == [4, 8, 8, 4, 1])
    }

    @Test("Float and Double tensors round-trip bit for bit, shapes (), (0), (3) and (2, 3)")
    func floatRoundTrip() throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            let values = awkwardValues(Scalar.self)
            let tensors = [
                try Tensor<Scalar>(shape: [], scalars: [values[9]]),
                try Tensor<Scalar>(shape: [0], scalars: []),
                try Tensor<Scalar>(shape: [3], scalars: Array(values[0..<3])),
                try Tensor<Scalar>(shape: [2, 3], scalars: Array(values[3..<9])),
                try Tensor<Scalar>(shape: [3], scalars: Array(values[9..<12])),
            ]
            let entries = tensors.enumerated().map { SafeTensors.entry("t\($0.offset)", $0.element) }
            let decoded = try SafeTensors.decode(SafeTensors.encode(entries), source: "round-trip.safetensors")
            #expect(decoded.entries == entries)  // names, dtypes, shapes and bytes
            #expect(decoded.metadata.isEmpty)
            for (entry, original) in zip(decoded.entries, tensors) {
                let tensor = try entry.tensor(as: Scalar.self, source: "round-trip.safetensors")
                #expect(tensor.shape == original.shape)
                // Equal bytes of the re-encoded tensor mean equal bit patterns, NaN payloads included
                // (`==` on the values would call every NaN unequal and -0 equal to 0).
                #expect(SafeTensors.entry(entry.name, tensor) == entry)
            }
        }
        try check(Float.self)
        try check(Double.self)
    }

    @Test("NaN payloads, signalling included, and -0 keep their bits")
    func nanPayloads() throws {
        let floats = awkwardValues(Float.self)
        let entry = SafeTensors.entry("x", Tensor(vector: floats))
        let back = try SafeTensors.decode(SafeTensors.encode([entry]), source: "x").entries[0].tensor(as: Float.self, source: "x")
        #expect(back.scalars.map(\.bitPattern) == floats.map(\.bitPattern))
        #expect(back.scalars[9].isNaN && back.scalars[9].significandBitPattern & 0xFF == 0x2A)
        #expect(back.scalars[10].isSignalingNaN && back.scalars[10].significandBitPattern & 0xFF == 0x15)
        let doubles = awkwardValues(Double.self)
        let d = try SafeTensors.decode(SafeTensors.encode([SafeTensors.entry("d", Tensor(vector: doubles))]), source: "d")
        #expect(try d.entries[0].tensor(as: Double.self, source: "d").scalars.map(\.bitPattern) == doubles.map(\.bitPattern))
    }

    @Test("F32 reads into Double exactly; F64 reads into Float rounded")
    func conversions() throws {
        let floats: [Float] = [0.1, -0.0, .leastNonzeroMagnitude, .infinity, 3]
        let entry = SafeTensors.entry("w", Tensor(vector: floats))
        let doubles = try entry.tensor(as: Double.self, source: "c").scalars
        #expect(doubles.map(\.bitPattern) == floats.map { Double($0) }.map(\.bitPattern))
        #expect(doubles[0] == 0.10000000149011612)  // Float(0.1), exactly, not 0.1
        let narrowed = try SafeTensors.entry("d", Tensor<Double>(vector: [0.1, 1e300])).tensor(as: Float.self, source: "c").scalars
        #expect(narrowed == [Float(0.1), .infinity])
    }

    @Test("I64 and I32 integers, including the extremes")
    func integers() throws {
        let values: [Int64] = [0, -1, .max, .min, 42]
        let entry = SafeTensors.entry("order", int64: values, shape: [5])
        let decoded = try SafeTensors.decode(SafeTensors.encode([entry]), source: "i").entries
        #expect(decoded == [entry])
        #expect(try decoded[0].int64s(source: "i") == values)
        let matrix = SafeTensors.entry("m", int64: [1, 2, 3, 4, 5, 6], shape: [2, 3])
        #expect(try SafeTensors.decode(SafeTensors.encode([matrix]), source: "i").entries[0].shape == [2, 3])
        // I32 as another writer might store it: -1 and 7, little-endian.
        let i32 = SafeTensors.Entry(name: "n", dtype: .i32, shape: [2], bytes: [0xFF, 0xFF, 0xFF, 0xFF, 7, 0, 0, 0])
        #expect(try i32.int64s(source: "i") == [-1, 7])
    }

    @Test("Metadata and the order of the entries are kept; lookups by name and shape")
    func metadataAndOrder() throws {
        let entries = [
            SafeTensors.entry("layers.1.bias", Tensor<Float>(vector: [1])),
            SafeTensors.entry("layers.0.weight", try Tensor<Float>(rows: [[1, 2], [3, 4]])),
            SafeTensors.entry("epoch.order", int64: [2, 0, 1], shape: [3]),
            SafeTensors.entry("a.scalar", try Tensor<Double>(shape: [], scalars: [7])),
        ]
        let metadata = ["format": "neuron", "epoch": "3", "note": "quote \" backslash \\ newline \n tab \t é ∑ \u{1}"]
        let decoded = try SafeTensors.decode(SafeTensors.encode(entries, metadata: metadata), source: "m")
        #expect(decoded.entries.map(\.name) == ["layers.1.bias", "layers.0.weight", "epoch.order", "a.scalar"])
        #expect(decoded.entries == entries)
        #expect(decoded.metadata == metadata)

        let weight = try SafeTensors.entry(named: "layers.0.weight", in: decoded.entries, source: "m")
        #expect(try weight.tensor(as: Float.self, shape: [2, 2], source: "m").scalars == [1, 2, 3, 4])
        #expect(
            checkpointErrorMessage { () throws(CheckpointError) in
                try SafeTensors.entry(named: "layers.2.weight", in: decoded.entries, source: "run/checkpoint.safetensors")
            }
                == "run/checkpoint.safetensors: no tensor named \"layers.2.weight\"")
        #expect(
            checkpointErrorMessage { () throws(CheckpointError) in
                try weight.tensor(as: Float.self, shape: [4, 2], source: "run/checkpoint.safetensors")
            }
                == "run/checkpoint.safetensors: tensor \"layers.0.weight\" has shape (2, 2); expected (4, 2)")
    }

    @Test("The header is exactly the JSON Python's safetensors writes, padded with spaces to 8 bytes")
    func headerLayout() throws {
        let bytes = SafeTensors.encode([SafeTensors.entry("w", Tensor<Float>(vector: [1, 2]))], metadata: ["a": "b"])
        let json = #"{"__metadata__":{"a":"b"},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#
        // 79 bytes of JSON, padded to 80.
        #expect(json.utf8.count == 79)
        #expect(Array(bytes[0..<8]) == [80, 0, 0, 0, 0, 0, 0, 0])
        #expect(String(decoding: bytes[8..<88], as: UTF8.self) == json + " ")
        #expect(bytes.count == 8 + 80 + 8)
        for count in 0..<12 {
            let encoded = SafeTensors.encode([SafeTensors.entry(String(repeating: "n", count: count + 1), Tensor<Float>(vector: [1]))])
            let length = encoded.withUnsafeBytes { Int(UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self))) }
            #expect(length % 8 == 0 && encoded.count == 8 + length + 4)
        }
        // No metadata, no "__metadata__"; no tensors, an empty object.
        #expect(String(decoding: SafeTensors.encode([])[8...], as: UTF8.self) == "{}      ")
    }

    @Test("A header as Python's safetensors writes it is read, data in dtype-alignment order")
    func pythonHeader() throws {
        // Written by `safetensors.numpy.save_file` 0.8.0 for {b: float32 [0, 1, 2], a: float64 zeros (2, 2),
        // i: int64 [1, 2], s: float32 3.5} with metadata {format: np, k: v}.
        let header =
            #"{"__metadata__":{"format":"np","k":"v"},"i":{"dtype":"I64","shape":[2],"data_offsets":[0,16]},"#
            + #""a":{"dtype":"F64","shape":[2,2],"data_offsets":[16,48]},"b":{"dtype":"F32","shape":[3],"data_offsets":[48,60]},"#
            + #""s":{"dtype":"F32","shape":[],"data_offsets":[60,64]}}    "#
        #expect(header.utf8.count == 264)
        let data =
            SafeTensors.littleEndianBytes([Int64(1), 2]) + [UInt8](repeating: 0, count: 32)
            + SafeTensors.littleEndianBytes([Float(0), 1, 2, 3.5].map(\.bitPattern))
        let (entries, metadata) = try SafeTensors.decode(rawFile(header, data), source: "py.safetensors")
        #expect(metadata == ["format": "np", "k": "v"])
        #expect(entries.map(\.name) == ["i", "a", "b", "s"])
        #expect(entries.map(\.shape) == [[2], [2, 2], [3], []])
        #expect(try entries[0].int64s(source: "py") == [1, 2])
        #expect(try entries[1].tensor(as: Double.self, source: "py").scalars == [0, 0, 0, 0])
        #expect(try entries[2].tensor(as: Float.self, source: "py").scalars == [0, 1, 2])
        #expect(try entries[3].tensor(as: Double.self, source: "py").scalars == [3.5])
    }

    @Test("Any valid JSON spelling reads: whitespace, escapes, null metadata, extra fields, header order unlike data order")
    func liberalHeader() throws {
        let header = """
             { "b\\u00e9\\/\\ud83d\\ude00" : { "shape" : [ 1 ] , "dtype" : "F32", "data_offsets" : [ 4 , 8 ], "extra": {"x": [true, null, 2.5e3]} } ,
               "__metadata__" : null,
               "a" : {"dtype":"U8","shape":[2,2],"data_offsets":[0,4]} }\t\r\n
            """
        let data: [UInt8] = [1, 2, 3, 4] + SafeTensors.littleEndianBytes(CollectionOfOne(Float(-2).bitPattern))
        let (entries, metadata) = try SafeTensors.decode(rawFile(header, data), source: "h")
        #expect(metadata.isEmpty)
        #expect(entries.map(\.name) == ["a", "bé/😀"])  // data order
        #expect(entries[0] == SafeTensors.Entry(name: "a", dtype: .u8, shape: [2, 2], bytes: [1, 2, 3, 4]))
        #expect(try entries[1].tensor(as: Float.self, source: "h").scalars == [-2])
        // Zero-size tensors may share an offset with each other and with the next tensor.
        let zeros =
            #"{"z1":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"#
            + #""z2":{"dtype":"F64","shape":[2,0],"data_offsets":[0,0]}}"#
        #expect(try SafeTensors.decode(rawFile(zeros, [0, 0, 0, 0]), source: "z").entries.map(\.name) == ["z1", "z2", "w"])
    }

    @Test("write and read go through a file")
    func file() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        let path = directory.file("checkpoint.safetensors")
        let entries = [SafeTensors.entry("layers.0.weight", try Tensor<Double>(rows: [[1, -2, 3]]))]
        try SafeTensors.write(entries, metadata: ["step": "10"], to: path)
        let read = try SafeTensors.read(path)
        #expect(read.entries == entries && read.metadata == ["step": "10"])
        #expect(try directory.bytes("checkpoint.safetensors") == SafeTensors.encode(entries, metadata: ["step": "10"]))
        #expect(try directory.names() == ["checkpoint.safetensors"])
    }

    // MARK: Errors

    @Test("A missing file, a directory, an empty or short file: each message names the file")
    func fileErrors() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        func readMessage(_ path: String) -> String { checkpointErrorMessage { () throws(CheckpointError) in try SafeTensors.read(path) } }
        let missing = directory.file("missing.safetensors")
        #expect(readMessage(missing) == "\(missing): no such file")
        #expect(readMessage(directory.path) == "\(directory.path): cannot be read: it is a directory")
        let empty = try directory.write([], "empty.safetensors")
        #expect(
            readMessage(empty) == "\(empty): corrupt: the file is empty;"
                + " expected a safetensors file (an 8-byte header length, a JSON header, the tensors' data)")
        let short = try directory.write([1, 2, 3, 4, 5], "short.safetensors")
        #expect(readMessage(short) == "\(short): corrupt: the file is 5 bytes, too short for a safetensors file's 8-byte header length")
        // A text file: its first 8 bytes read as a header length of 754,401,781,653,594,476.
        let text = try directory.write(Array("label,x\n1,2\n".utf8), "data.csv")
        #expect(
            readMessage(text) == "\(text): corrupt: the first 8 bytes say the header is"
                + " 754,401,781,653,594,476 bytes, but only 4 follow (a truncated file, or not a safetensors file)")
    }

    @Test("Every malformed header gives a message naming the file and what is wrong")
    func headerErrors() {
        let path = "run/checkpoint.safetensors"
        func decodeMessage(_ bytes: [UInt8]) -> String {
            checkpointErrorMessage { () throws(CheckpointError) in try SafeTensors.decode(bytes, source: path) }
        }
        func headerMessage(_ header: String, _ data: [UInt8] = []) -> String {
            let message = decodeMessage(rawFile(header, data))
            let prefix = "\(path): corrupt: "
            return message.hasPrefix(prefix) ? String(message.dropFirst(prefix.count)) : message
        }
        let w = #""w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}"#

        // Header length beyond the file.
        #expect(
            decodeMessage([100, 0, 0, 0, 0, 0, 0, 0] + Array("{}".utf8)) == "\(path): corrupt:"
                + " the first 8 bytes say the header is 100 bytes, but only 2 follow (a truncated file, or not a safetensors file)")
        // Not JSON, or not the JSON of a header.
        #expect(headerMessage(#"{"w": "#) == "the header is not valid JSON: at byte 6 of the header, expected a value, found the end of the header")
        #expect(headerMessage(#"{"w" 1}"#) == "the header is not valid JSON: at byte 5 of the header, expected ':', found '1'")
        #expect(headerMessage("{}x") == "the header is not valid JSON: at byte 2 of the header, unexpected 'x' after the end of the JSON value")
        #expect(
            headerMessage("{}\0\0") == "the header is not valid JSON: at byte 2 of the header, unexpected byte 0x0 after the end of the JSON value")
        #expect(headerMessage(#"{"a":[1,]}"#) == "the header is not valid JSON: at byte 8 of the header, expected a value, found ']'")
        #expect(
            headerMessage(#"{"a":01}"#)
                == "the header is not valid JSON: at byte 6 of the header, expected ',' or '}' after an object member, found '1'")
        #expect(
            headerMessage("{\"a\nb\":1}")
                == "the header is not valid JSON: at byte 3 of the header, control character byte 0xa in a string; it must be escaped")
        #expect(headerMessage(#"{"\ud800":1}"#) == "the header is not valid JSON: at byte 8 of the header, unpaired surrogate \\ud800 in a string")
        #expect(
            headerMessage(String(repeating: "[", count: 100))
                == "the header is not valid JSON: at byte 64 of the header, values nested deeper than 64 levels")
        #expect(
            decodeMessage(SafeTensors.littleEndianBytes(CollectionOfOne(UInt64(4))) + [0x7B, 0xFF, 0xFE, 0x7D])
                == "\(path): corrupt: the header is not valid UTF-8")
        #expect(headerMessage("[]") == "the header must be a JSON object, found an array")
        #expect(headerMessage(#"{"w":[]}"#) == #"tensor "w" must be an object with dtype, shape and data_offsets, found an array"#)
        #expect(headerMessage(#"{"__metadata__":{"epoch":3}}"#) == #"__metadata__ "epoch" must be a string, found 3"#)
        #expect(headerMessage(#"{"__metadata__":"x"}"#) == #"__metadata__ must be an object of strings, found a string "x""#)
        // Fields missing, of the wrong type, or out of range.
        #expect(headerMessage(#"{"w":{"dtype":"F32","shape":[2]}}"#) == #"tensor "w" has no "data_offsets""#)
        #expect(headerMessage(#"{"w":{"dtype":5,"shape":[2],"data_offsets":[0,8]}}"#) == #"tensor "w": dtype must be a string, found 5"#)
        #expect(
            headerMessage(#"{"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}"#)
                == #"tensor "w": shape must be an array of non-negative integers, found -2 in it"#)
        #expect(
            headerMessage(#"{"w":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}}"#)
                == #"tensor "w": shape must be an array of non-negative integers, found 2.0 in it"#)
        #expect(
            headerMessage(#"{"w":{"dtype":"F32","shape":[true],"data_offsets":[0,8]}}"#)
                == #"tensor "w": shape must be an array of non-negative integers, found true in it"#)
        #expect(
            headerMessage(#"{"w":{"dtype":"F32","shape":2,"data_offsets":[0,8]}}"#)
                == #"tensor "w": shape must be an array of non-negative integers, found 2"#)
        #expect(
            headerMessage(#"{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4,8]}}"#)
                == #"tensor "w": data_offsets must be two non-negative integers [begin, end], found 3"#)
        #expect(
            headerMessage(#"{"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}}"#) == #"tensor "w": data_offsets [8, 0] end before they begin"#)
        #expect(headerMessage(#"{"w":{"dtype":"F32","shape":[2],"dtype":"F64","data_offsets":[0,8]}}"#) == #"tensor "w" has "dtype" twice"#)
        // Unknown dtype.
        #expect(
            decodeMessage(rawFile(#"{"w":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}"#, [0, 0, 0, 0]))
                == "\(path): tensor \"w\" has dtype \"F16\", which is not supported; expected one of F32, F64, I64, I32, U8")
        // Shape and offsets that disagree.
        #expect(
            headerMessage(#"{"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}}"#, Array(repeating: 0, count: 20))
                == #"tensor "w": shape (2, 3) of F32 needs 24 bytes, but data_offsets [0, 20] hold 20"#)
        #expect(
            headerMessage(#"{"w":{"dtype":"F64","shape":[4611686018427387904,4],"data_offsets":[0,8]}}"#)
                == #"tensor "w": shape (4611686018427387904, 4) of F64 needs more than Int.max bytes, but data_offsets [0, 8] hold 8"#)
        // Offsets that overlap, leave gaps, or do not start at 0.
        #expect(
            headerMessage("{\(w),\"v\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", Array(repeating: 0, count: 12))
                == #"tensor "v" (data_offsets [4, 12]) overlaps tensor "w" (data_offsets [0, 8])"#)
        #expect(
            headerMessage("{\(w),\"v\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[12,16]}}", Array(repeating: 0, count: 16))
                == #"4 unused bytes between tensor "w" (data_offsets [0, 8]) and tensor "v" (data_offsets [12, 16]); tensors must be packed with no gaps"#
        )
        #expect(
            headerMessage(#"{"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}"#, Array(repeating: 0, count: 8))
                == #"4 unused bytes between the start of the data and tensor "w" (data_offsets [4, 8]); tensors must be packed with no gaps"#)
        // Duplicate names, and data longer than the header says.
        #expect(headerMessage("{\(w),\(w)}", Array(repeating: 0, count: 8)) == #"the header names "w" twice; tensor names must be unique"#)
        #expect(headerMessage(#"{"__metadata__":{},"__metadata__":{}}"#) == #"the header names "__metadata__" twice; tensor names must be unique"#)
        #expect(
            headerMessage("{\(w)}", Array(repeating: 0, count: 11)) == "the header says the data is 8 bytes, found 11 (3 extra after the last tensor)"
        )
    }

    @Test("Truncated data: the header's size and what was found, with thousands separators")
    func truncated() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        // A 784 × 256 Float weight and a 256 bias: 802,816 + 1,024 = 803,840 bytes of data, cut to 4,096.
        let entries = [
            SafeTensors.entry("layers.0.weight", Tensor<Float>(zeros: [784, 256])),
            SafeTensors.entry("layers.0.bias", Tensor<Float>(zeros: [256])),
        ]
        let bytes = SafeTensors.encode(entries)
        let dataStart = bytes.count - 803_840
        let path = try directory.write(Array(bytes[..<(dataStart + 4096)]), "checkpoint.safetensors")
        #expect(
            checkpointErrorMessage { () throws(CheckpointError) in try SafeTensors.read(path) }
                == "\(path): truncated: the header says the data is 803,840 bytes, found 4,096")
        #expect(
            checkpointErrorMessage { () throws(CheckpointError) in try SafeTensors.decode(Array(bytes.dropLast()), source: "c") }
                == "c: truncated: the header says the data is 803,840 bytes, found 803,839")
    }

    @Test("Byte counts in messages are grouped in thousands, by the format's own formatter")
    func byteCounts() {
        #expect([0, 999, 1_000, 803_840, -1_234_567].map(SafeTensors.count) == ["0", "999", "1,000", "803,840", "-1,234,567"])
        #expect(SafeTensors.count(UInt64.max) == "18446744073709551615")  // beyond Int: written plainly
    }

    @Test("Asking for the wrong dtype, or for bytes that do not fill the shape")
    func entryErrors() {
        let path = "run/checkpoint.safetensors"
        let order = SafeTensors.entry("epoch.order", int64: [1, 0], shape: [2])
        let weight = SafeTensors.entry("layers.0.weight", Tensor<Float>(vector: [1, 2]))
        #expect(
            checkpointErrorMessage { () throws(CheckpointError) in try order.tensor(as: Float.self, source: path) }
                == "\(path): tensor \"epoch.order\" is I64; expected F32 or F64")
        #expect(
            checkpointErrorMessage { () throws(CheckpointError) in try weight.int64s(source: path) }
                == "\(path): tensor \"layers.0.weight\" is F32; expected I64 or I32")
        var broken = weight
        broken.bytes.removeLast()
        #expect(
            checkpointErrorMessage { () throws(CheckpointError) in try broken.tensor(as: Double.self, source: path) }
                == "\(path): corrupt: tensor \"layers.0.weight\": shape (2) of F32 does not fit its 7 bytes")
    }

    @Test("Every error message names the file")
    func descriptions() {
        let p = "out/c.safetensors"
        let errors: [CheckpointError] = [
            .fileNotFound(path: p), .unreadable(path: p, reason: "r"), .corrupt(path: p, reason: "r"),
            .truncated(path: p, expectedBytes: 2, foundBytes: 1), .unsupportedDType(path: p, name: "w", dtype: "BF16"),
            .wrongDType(path: p, name: "w", found: .u8, expected: "F32"), .writeFailed(path: p, reason: "r"),
            .missingTensor(path: p, name: "w"), .shapeMismatch(path: p, name: "w", found: [1], expected: [2]),
        ]
        for error in errors { #expect(error.description.hasPrefix(p + ": "), "\(error)") }
        #expect(
            CheckpointError.writeFailed(path: p, reason: "No space left on device").description
                == "out/c.safetensors: cannot be written: No space left on device")
    }
}
