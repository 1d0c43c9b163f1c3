// The messages of an ONNX file that an exported network uses, with the field numbers of ONNX's
// schema (`onnx/onnx.proto`, IR version 14 as shipped in the `onnx` 1.23 wheel; these numbers have
// not changed since IR version 3). Each type encodes itself; none decodes: reading models back is
// ONNX Runtime's and the `onnx` checker's job in the tests.

/// `TensorProto.DataType`: the element types an exported network uses.
enum ONNXElementType: Int {
    case float = 1
    case int64 = 7
    case double = 11
}

/// `TensorProto`: a named constant (an initializer), its scalars little-endian in `raw_data`.
struct ONNXTensor {
    var name: String
    var dimensions: [Int]
    var elementType: ONNXElementType
    var rawData: [UInt8]

    /// A tensor of 32- or 64-bit floats.
    init<S: BinaryFloatingPoint>(_ name: String, dimensions: [Int], floats: [S]) {
        self.name = name
        self.dimensions = dimensions
        var data: [UInt8] = []
        if let values = floats as? [Double] {
            elementType = .double
            data.reserveCapacity(values.count * 8)
            for v in values { withUnsafeBytes(of: v.bitPattern.littleEndian) { data.append(contentsOf: $0) } }
        } else {
            elementType = .float
            data.reserveCapacity(floats.count * 4)
            for v in floats { withUnsafeBytes(of: Float(v).bitPattern.littleEndian) { data.append(contentsOf: $0) } }
        }
        rawData = data
    }

    /// A tensor of 64-bit integers (a shape for `Reshape`).
    init(_ name: String, int64s: [Int]) {
        self.name = name
        dimensions = [int64s.count]
        elementType = .int64
        var data: [UInt8] = []
        for v in int64s { withUnsafeBytes(of: Int64(v).littleEndian) { data.append(contentsOf: $0) } }
        rawData = data
    }

    func encode(_ w: inout ProtobufWriter) {
        w.packedInts(1, dimensions)  // dims
        w.int(2, elementType.rawValue)  // data_type
        w.string(8, name)  // name
        w.bytes(9, rawData)  // raw_data
    }
}

/// `AttributeProto`: a node's named constant argument.
struct ONNXAttribute {
    enum Value {
        case float(Float)
        case int(Int)
        case ints([Int])
        case string(String)
    }

    var name: String
    var value: Value

    func encode(_ w: inout ProtobufWriter) {
        w.string(1, name)  // name
        switch value {
        case let .float(f):
            w.float(2, f)  // f
            w.int(20, 1)  // type: FLOAT
        case let .int(i):
            w.int(3, i)  // i
            w.int(20, 2)  // type: INT
        case let .string(s):
            w.string(4, s)  // s
            w.int(20, 3)  // type: STRING
        case let .ints(list):
            w.packedInts(8, list)  // ints
            w.int(20, 7)  // type: INTS
        }
    }
}

/// `NodeProto`: one operator applied to named values.
struct ONNXNode {
    var opType: String
    var inputs: [String]
    var outputs: [String]
    var name: String
    var attributes: [ONNXAttribute] = []

    func encode(_ w: inout ProtobufWriter) {
        for input in inputs { w.string(1, input) }  // input
        for output in outputs { w.string(2, output) }  // output
        w.string(3, name)  // name
        w.string(4, opType)  // op_type
        for attribute in attributes { w.message(5, attribute.encode) }  // attribute
    }
}

/// `ValueInfoProto`: a graph input's or output's name and tensor type; a dimension is a number or a name.
struct ONNXValueInfo {
    enum Dimension {
        case fixed(Int)
        case named(String)
    }

    var name: String
    var elementType: ONNXElementType
    var dimensions: [Dimension]
    var documentation: String

    func encode(_ w: inout ProtobufWriter) {
        w.string(1, name)  // name
        w.message(2) { type in  // type: TypeProto
            type.message(1) { tensor in  // tensor_type: TypeProto.Tensor
                tensor.int(1, elementType.rawValue)  // elem_type
                tensor.message(2) { shape in  // shape: TensorShapeProto
                    for dimension in dimensions {
                        shape.message(1) { d in  // dim
                            switch dimension {
                            case let .fixed(n): d.int(1, n)  // dim_value
                            case let .named(name): d.string(2, name)  // dim_param
                            }
                        }
                    }
                }
            }
        }
        w.string(3, documentation)  // doc_string
    }
}

/// `GraphProto`: nodes in topological order, their constants, and the graph's inputs and outputs.
struct ONNXGraph {
    var name: String
    var nodes: [ONNXNode] = []
    var initializers: [ONNXTensor] = []
    var inputs: [ONNXValueInfo] = []
    var outputs: [ONNXValueInfo] = []
    var documentation: String = ""

    func encode(_ w: inout ProtobufWriter) {
        for node in nodes { w.message(1, node.encode) }  // node
        w.string(2, name)  // name
        for tensor in initializers { w.message(5, tensor.encode) }  // initializer
        w.string(10, documentation)  // doc_string
        for input in inputs { w.message(11, input.encode) }  // input
        for output in outputs { w.message(12, output.encode) }  // output
    }
}

/// `ModelProto`: the file: IR version, operator set, producer, the graph and free-form metadata.
struct ONNXModel {
    var irVersion: Int
    var opset: Int
    var producerName: String
    var producerVersion: String
    var documentation: String
    var graph: ONNXGraph
    var metadata: [(key: String, value: String)]

    /// The file's bytes.
    func encoded() -> [UInt8] {
        var w = ProtobufWriter()
        w.int(1, irVersion)  // ir_version
        w.string(2, producerName)  // producer_name
        w.string(3, producerVersion)  // producer_version
        w.string(6, documentation)  // doc_string
        w.message(7, graph.encode)  // graph
        w.message(8) { set in  // opset_import: OperatorSetIdProto
            set.string(1, "")  // domain: the default, ai.onnx
            set.int(2, opset)  // version
        }
        for entry in metadata {  // metadata_props: StringStringEntryProto
            w.message(14) { e in
                e.string(1, entry.key)
                e.string(2, entry.value)
            }
        }
        return w.bytes
    }
}
