import Testing

@testable import NeuronCore

@Suite("Tensor storage and shape")
struct TensorTests {
    @Test("Row-major storage and indexing")
    func rowMajor() throws {
        let t = try Tensor<Double>(shape: [2, 3], scalars: [0, 1, 2, 3, 4, 5])
        #expect(t.rows == 2 && t.columns == 3 && t.rank == 2 && t.count == 6)
        #expect(t[1, 0] == 3 && t[0, 2] == 2)
        #expect(t.rowArrays == [[0, 1, 2], [3, 4, 5]])
        #expect(try t.reshaped(to: [3, 2]).rowArrays == [[0, 1], [2, 3], [4, 5]])
        #expect("\(t)" == "Tensor(2×3)[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]")
    }

    @Test("Bad shapes and counts throw, naming the shape")
    func badShapes() {
        #expect(throws: TensorError.elementCount(shape: [2, 3], expected: 6, actual: 5)) {
            try Tensor<Float>(shape: [2, 3], scalars: [1, 2, 3, 4, 5])
        }
        #expect(throws: TensorError.self) { try Tensor<Float>(shape: [-1, 3]) }
        #expect(throws: TensorError.raggedRows(rowLengths: [2, 1])) { try Tensor<Float>(rows: [[1, 2], [3]]) }
        #expect(throws: TensorError.self) { try Tensor<Float>(vector: [1, 2, 3]).reshaped(to: [2, 2]) }
    }

    @Test("resize keeps storage when the count allows; zero clears in place")
    func resizeAndZero() {
        var t = Tensor<Float>(zeros: [2, 3])
        t[4] = 7
        t.resize(to: [3, 2])
        #expect(t.shape == [3, 2] && t.scalars[4] == 7)
        t.zero()
        #expect(t.scalars.allSatisfy { $0 == 0 })
        t.resize(to: [4, 4])
        #expect(t.count == 16)
        // Shrinking keeps the capacity, so growing back reuses the same storage.
        let capacity = t.scalars.capacity
        t.resize(to: [1, 3])
        #expect(t.count == 3 && t.scalars.capacity == capacity)
        t.resize(to: [4, 4])
        #expect(t.count == 16 && t.scalars.capacity == capacity)
    }

    @Test("The product threads' count is settable and reported")
    func blasThreads() {
        let before = BLAS.threadCount
        defer { BLAS.threadCount = before }
        BLAS.threadCount = 1
        #expect(BLAS.threadCount == 1)
        BLAS.threadCount = 0  // clamps to 1 rather than asking for no thread
        #expect(BLAS.threadCount == 1)
        BLAS.threadCount = 1024  // a config's largest: stops at 64 threads, as OpenBLAS's build does
        #expect(BLAS.threadCount == BLAS.maximumThreadCount && BLAS.maximumThreadCount == 64)
        BLAS.threadCount = 1
        #expect(BLAS.configuration.contains("OpenBLAS"))
        #expect(BLAS.summary.contains("1 thread"))
    }

    @Test("A process whose network splits each batch over threads runs its products on one BLAS thread each")
    func blasThreadsForASplitBatch() {
        #expect(BLAS.threadCount(blasThreads: 4, batchThreads: 1) == 4)
        #expect(BLAS.threadCount(blasThreads: 4, batchThreads: 2) == 1)
        #expect(BLAS.threadCount(blasThreads: 1, batchThreads: 8) == 1)
    }
}
