import Foundation
import NeuronCore
import Testing

@testable import NeuronExport

/// A text model's export checked by ONNX Runtime against the engine: for each batch of token rows
/// (each row `time` tokens, the boundary first, `time` from 1 to the block), the engine's
/// next-token probabilities at every position, its own forward pass's output (the rows padded
/// with the boundary token to the block, which a causal model never reads back), against the
/// exported model's `probabilities` for the rows as given.
struct TextExportCase<Scalar: TensorScalar> {
    var name: String
    var network: Network<Scalar>
    var vocabulary: Vocabulary
    /// Batches of rows; every row of a batch has the same length.
    var batches: [[[Int]]]
    var options = ONNXExportOptions()
    /// The file's bytes, when a test builds the graph itself (a planted fault); else the network's export.
    var model: [UInt8]? = nil

    /// The engine's probabilities, `(batch, time, vocabulary)` row-major, in Double.
    func engineProbabilities(_ rows: [[Int]]) throws -> [Double] {
        var network = network
        let block = network.inputShape[0], time = rows[0].count, v = vocabulary.count
        var x = [Scalar](repeating: Scalar(Vocabulary.boundary), count: rows.count * block)
        for (b, row) in rows.enumerated() { for (t, token) in row.enumerated() { x[b * block + t] = Scalar(token) } }
        // The network's output under the sequence loss: the softmax of each position's scores.
        let p = try network.forward(try Tensor(shape: [rows.count, block], scalars: x)).scalars
        return rows.indices.flatMap { b in p[b * block * v..<(b * block + time) * v].map { Double($0) } }
    }

    /// check_onnx.py's verdict on each batch.
    func verdicts() throws -> [ONNXVerdict] {
        let scratch = try ScratchDirectory()
        let model = scratch.path("\(name).onnx")
        try Data(self.model ?? network.onnxModel(vocabulary: vocabulary, options: options)).write(to: URL(fileURLWithPath: model))
        var manifest: [[String: Any]] = []
        for (i, rows) in batches.enumerated() {
            let tokens = scratch.path("\(name)-\(i).tokens"), expected = scratch.path("\(name)-\(i).expected")
            var bytes = Data()
            for row in rows { for token in row { withUnsafeBytes(of: Int64(token).littleEndian) { bytes.append(contentsOf: $0) } } }
            try bytes.write(to: URL(fileURLWithPath: tokens))
            let p = try engineProbabilities(rows)
            let raw: Data =
                Scalar.self == Float.self
                ? p.map { Float($0) }.withUnsafeBufferPointer { Data(buffer: $0) } : p.withUnsafeBufferPointer { Data(buffer: $0) }
            try raw.write(to: URL(fileURLWithPath: expected))
            manifest.append([
                "name": "\(name) batch \(i): \(rows.count)×\(rows[0].count)", "model": model, "tokens": tokens, "expected": expected,
                "precision": Scalar.self == Float.self ? "float" : "double", "batch": rows.count, "time": rows[0].count,
                "vocabulary": vocabulary.count,
            ])
        }
        let path = scratch.path("manifest.json")
        try JSONSerialization.data(withJSONObject: manifest).write(to: URL(fileURLWithPath: path))
        return try checkONNX(["text", path])
    }
}

/// Batches of token rows for a model of `vocabulary` tokens and `block` positions: batch 1 and 7,
/// lengths 1, a few between, and the block itself, the boundary token first in every row (a row
/// shorter than the block is what the engine reads padded); then a batch of 7 cropped lines, the
/// block's last tokens of longer lines, which start mid-line (no boundary first).
func textBatches(vocabulary: Int, block: Int, seed: UInt64) -> [[[Int]]] {
    var g = SeededGenerator(seed: seed)
    let lengths = Array(Set([1, 2, max(1, block / 2), block])).sorted()
    let started = lengths.flatMap { time in
        [1, 7].map { batch in
            (0..<batch).map { _ in [Vocabulary.boundary] + (1..<time).map { _ in g.index(below: vocabulary) } }
        }
    }
    let cropped = (0..<7).map { _ in (0..<block).map { _ in 1 + g.index(below: vocabulary - 1) } }
    return started + [cropped]
}

/// A vocabulary of `count` tokens: the boundary and `count − 1` letters from `a`.
func letters(_ count: Int) -> Vocabulary {
    Vocabulary(characters: (0..<count - 1).map { Unicode.Scalar(UInt8(97 + $0)) })
}
