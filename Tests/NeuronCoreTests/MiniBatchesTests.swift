import Foundation
import Testing

@testable import NeuronCore

@Suite("Mini-batches: epoch order and batch buffers")
struct MiniBatchesTests {
    @Test("Batch count and ranges: the last batch is smaller, never dropped")
    func ranges() throws {
        let b = try MiniBatches(count: 10, batchSize: 4)
        #expect(b.order == Array(0..<10) && b.batchesPerEpoch == 3)
        #expect((0..<3).map(b.range(ofBatch:)) == [0..<4, 4..<8, 8..<10])
        let exact = try MiniBatches(count: 8, batchSize: 4)
        #expect(exact.batchesPerEpoch == 2 && exact.range(ofBatch: 1) == 4..<8)
        // A batch size above the count gives one batch of all samples.
        let all = try MiniBatches(count: 3, batchSize: 100)
        #expect(all.batchesPerEpoch == 1 && all.range(ofBatch: 0) == 0..<3)
        let huge = try MiniBatches(count: 3, batchSize: .max)
        #expect(huge.batchesPerEpoch == 1 && huge.range(ofBatch: 0) == 0..<3)
    }

    @Test("Counts and batch sizes below 1 are rejected")
    func invalid() {
        #expect(throws: DataError.invalidArgument(name: "sample count", value: "0", expected: "at least 1 sample")) {
            try MiniBatches(count: 0, batchSize: 1)
        }
        #expect(throws: DataError.invalidArgument(name: "batch size", value: "0", expected: "at least 1")) {
            try MiniBatches(count: 5, batchSize: 0)
        }
    }

    @Test("shuffle permutes in place, reproducibly, as the generator's own shuffle")
    func shuffle() throws {
        var b = try MiniBatches(count: 20, batchSize: 8)
        var g = SeededGenerator(seed: 11), h = SeededGenerator(seed: 11)
        b.shuffle(using: &g)
        var expected = Array(0..<20)
        h.shuffle(&expected)
        #expect(b.order == expected && b.order != Array(0..<20))
        #expect(b.order.sorted() == Array(0..<20))
    }

    @Test("fill copies the rows of the current order, by hand")
    func fill() throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            // Row i has features [i, 10 i]; labels 0, 1, 2, 0, 1.
            let d = try Dataset<Scalar>.classification(
                features: Tensor(rows: (0..<5).map { [Scalar($0), Scalar(10 * $0)] }),
                labels: [0, 1, 2, 0, 1], classNames: ["a", "b", "c"])
            var b = try MiniBatches(count: 5, batchSize: 2)
            var g = SeededGenerator(seed: 5)
            b.shuffle(using: &g)
            var x = Tensor<Scalar>(zeros: [0, 0]), y = Tensor<Scalar>(zeros: [0, 0]), labels = [Int]()
            var seen = [Int]()
            for batch in 0..<b.batchesPerEpoch {
                b.fill(batch: batch, from: d, features: &x, targets: &y, labels: &labels)
                let rows = b.order[b.range(ofBatch: batch)]
                #expect(x.shape == [rows.count, 2] && y.shape == [rows.count, 3])
                #expect(x.rowArrays == rows.map { [Scalar($0), Scalar(10 * $0)] })
                #expect(labels == rows.map { [0, 1, 2, 0, 1][$0] })
                #expect(y.rowArrays == labels.map { label in (0..<3).map { $0 == label ? 1 : 0 } })
                seen += rows
            }
            #expect(seen.sorted() == Array(0..<5))
        }
        try check(Float.self)
        try check(Double.self)
    }

    @Test("A dataset without labels leaves the label buffer empty")
    func noLabels() throws {
        let d = Synthetic.xor(as: Double.self)
        let b = try MiniBatches(count: 4, batchSize: 3)
        var x = Tensor<Double>(zeros: [0, 0]), y = Tensor<Double>(zeros: [0, 0]), labels = [7, 7]
        b.fill(batch: 1, from: d, features: &x, targets: &y, labels: &labels)
        #expect(x.rowArrays == [[1, 1]] && y.rowArrays == [[0]] && labels.isEmpty)
    }

    @Test("After a full batch, filling the smaller last batch and full ones again keeps the same storage")
    func noAllocation() throws {
        let rows = (0..<7).map { [Float($0), 1, 2] }
        let d = try Dataset<Float>.classification(
            features: Tensor(rows: rows), labels: [0, 1, 0, 1, 0, 1, 0], classNames: ["no", "yes"])
        let b = try MiniBatches(count: 7, batchSize: 3)
        var x = Tensor<Float>(zeros: [0, 0]), y = Tensor<Float>(zeros: [0, 0]), labels = [Int]()
        b.fill(batch: 0, from: d, features: &x, targets: &y, labels: &labels)
        func storage() -> [UnsafeRawPointer?] {
            [
                x.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) },
                y.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) },
                labels.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) },
            ]
        }
        let first = storage()
        let capacities = [x.scalars.capacity, y.scalars.capacity, labels.capacity]
        for epoch in 0..<2 {
            for batch in [2, 1, 0] {  // the last (1 row) before full ones
                b.fill(batch: batch, from: d, features: &x, targets: &y, labels: &labels)
                #expect(storage() == first, "epoch \(epoch) batch \(batch) moved a buffer")
                #expect([x.scalars.capacity, y.scalars.capacity, labels.capacity] == capacities)
            }
        }
        #expect(x.rowArrays == [[0, 1, 2], [1, 1, 2], [2, 1, 2]])
    }

    @Test("Codable round trip; a saved order that is not a permutation is rejected")
    func codable() throws {
        var b = try MiniBatches(count: 6, batchSize: 4)
        var g = SeededGenerator(seed: 2)
        b.shuffle(using: &g)
        let data = try JSONEncoder().encode(b)
        #expect(try JSONDecoder().decode(MiniBatches.self, from: data) == b)
        let broken = Data(#"{"order":[0,1,1],"count":3,"batchSize":2}"#.utf8)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(MiniBatches.self, from: broken) }
        let zeroBatch = Data(#"{"order":[0],"count":1,"batchSize":0}"#.utf8)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(MiniBatches.self, from: zeroBatch) }
        // A count the order does not hold is refused before `count` indices are allocated.
        let hugeCount = Data(#"{"order":[0,1],"count":1152921504606846976,"batchSize":2}"#.utf8)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(MiniBatches.self, from: hugeCount) }
    }
}
