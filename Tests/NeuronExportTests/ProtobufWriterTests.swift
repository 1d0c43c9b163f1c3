import Testing

@testable import NeuronExport

/// The wire format against the worked examples of the protocol-buffer encoding guide.
@Suite("Protocol-buffer wire format")
struct ProtobufWriterTests {
    @Test("Varints: seven bits a byte, least significant first")
    func varints() {
        for (value, bytes) in [(UInt64(0), [0x00]), (1, [0x01]), (127, [0x7F]), (128, [0x80, 0x01]), (150, [0x96, 0x01]), (300, [0xAC, 0x02])] {
            var w = ProtobufWriter()
            w.appendVarint(value)
            #expect(w.bytes == bytes.map(UInt8.init), "\(value)")
        }
    }

    @Test("Field 1 = 150 is 08 96 01; a string, a float, a negative integer and a packed list as the guide encodes them")
    func fields() {
        var w = ProtobufWriter()
        w.int(1, 150)
        #expect(w.bytes == [0x08, 0x96, 0x01])

        w = ProtobufWriter()
        w.string(2, "testing")
        #expect(w.bytes == [0x12, 0x07] + Array("testing".utf8))

        w = ProtobufWriter()
        w.float(2, 1)  // 1.0 is 0x3F800000, little-endian
        #expect(w.bytes == [0x15, 0x00, 0x00, 0x80, 0x3F])

        w = ProtobufWriter()
        w.int(3, -1)  // two's complement over 64 bits: ten bytes
        #expect(w.bytes == [0x18] + Array(repeating: 0xFF, count: 9) + [0x01])

        w = ProtobufWriter()
        w.packedInts(4, [3, 270, 86942])
        #expect(w.bytes == [0x22, 0x06, 0x03, 0x8E, 0x02, 0x9E, 0xA7, 0x05])
    }

    @Test("A nested message is its bytes, length-delimited: field 3 holding field 1 = 150 is 1a 03 08 96 01")
    func nested() {
        var w = ProtobufWriter()
        w.message(3) { $0.int(1, 150) }
        #expect(w.bytes == [0x1A, 0x03, 0x08, 0x96, 0x01])
    }
}
