// The protocol-buffer wire format, as much of it as an ONNX file needs: varints, length-delimited
// fields (strings, bytes, nested messages, packed integers) and 32-bit floats. Every field is
// written in the order its message declares it; a reader accepts any order, and this one makes the
// bytes of a model a function of the model alone.
//
// Written by hand rather than through apple/swift-protobuf: an exporter only encodes, a handful of
// message types, and the package would add its whole runtime (decoders, JSON and text formats,
// reflection) to every first build for them.

/// Appends protocol-buffer fields to a byte buffer.
struct ProtobufWriter {
    /// The encoded message so far.
    private(set) var bytes: [UInt8] = []

    /// The wire types this writer emits (the low three bits of a field's key).
    enum WireType: UInt64 {
        case varint = 0
        case lengthDelimited = 2
        case fixed32 = 5
    }

    /// A base-128 varint: seven bits a byte, least significant first, the high bit set on every byte but the last.
    mutating func appendVarint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(v & 0x7F) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    /// A field's key: its number and wire type.
    mutating func appendKey(_ field: Int, _ type: WireType) {
        appendVarint(UInt64(field) << 3 | type.rawValue)
    }

    /// An `int64` or `int32` field. Negative values take ten bytes, as the format's two's complement varint does.
    mutating func int(_ field: Int, _ value: Int) {
        appendKey(field, .varint)
        appendVarint(UInt64(bitPattern: Int64(value)))
    }

    /// A `float` field: four little-endian bytes.
    mutating func float(_ field: Int, _ value: Float) {
        appendKey(field, .fixed32)
        withUnsafeBytes(of: value.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// A `bytes` field.
    mutating func bytes(_ field: Int, _ value: some Collection<UInt8>) {
        appendKey(field, .lengthDelimited)
        appendVarint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    /// A `string` field, as UTF-8.
    mutating func string(_ field: Int, _ value: String) {
        bytes(field, Array(value.utf8))
    }

    /// A `repeated int64` field, packed (one length-delimited run of varints), as proto3 and ONNX write them.
    mutating func packedInts(_ field: Int, _ values: [Int]) {
        var run = ProtobufWriter()
        for v in values { run.appendVarint(UInt64(bitPattern: Int64(v))) }
        bytes(field, run.bytes)
    }

    /// A nested message, encoded by `encode` into its own buffer and written length-delimited.
    mutating func message(_ field: Int, _ encode: (inout ProtobufWriter) -> Void) {
        var nested = ProtobufWriter()
        encode(&nested)
        bytes(field, nested.bytes)
    }
}
