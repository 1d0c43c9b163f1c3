/// A dense array of scalars: a shape and contiguous row-major storage.
///
/// A rank-2 tensor of shape `(rows, columns)` stores row `r` at `scalars[r * columns ..< (r + 1) * columns]`.
/// Value semantics (copy on write through `Array`); operations that run in training loops write
/// into a caller-owned output (`into:`) so that steady-state steps allocate nothing.
public struct Tensor<Scalar: TensorScalar>: Equatable, Sendable {
    /// The extent of each dimension, outermost first.
    public internal(set) var shape: [Int]
    /// The elements in row-major order; `scalars.count` is the product of `shape`.
    public internal(set) var scalars: [Scalar]

    /// A tensor with the given shape and elements.
    /// - Throws: ``TensorError/invalidShape(_:reason:)`` for a negative extent, and
    ///   ``TensorError/elementCount(shape:expected:actual:)`` when the count does not fit the shape.
    public init(shape: [Int], scalars: [Scalar]) throws(TensorError) {
        let count = try Self.elementCount(of: shape)
        guard count == scalars.count else {
            throw .elementCount(shape: shape, expected: count, actual: scalars.count)
        }
        self.shape = shape
        self.scalars = scalars
    }

    /// A tensor of the given shape with every element equal to `value`.
    /// - Throws: ``TensorError/invalidShape(_:reason:)`` for a negative extent.
    public init(shape: [Int], repeating value: Scalar = 0) throws(TensorError) {
        let count = try Self.elementCount(of: shape)
        self.shape = shape
        self.scalars = Array(repeating: value, count: count)
    }

    /// A tensor of zeros; for shapes known to be valid (internal buffers, tests).
    public init(zeros shape: [Int]) {
        precondition(shape.allSatisfy { $0 >= 0 }, "negative extent in shape \(shape)")
        self.shape = shape
        self.scalars = Array(repeating: 0, count: shape.reduce(1, *))
    }

    /// A rank-2 tensor from nested rows, e.g. `Tensor(rows: [[1, 2, 3], [4, 5, 6]])` of shape (2, 3).
    /// - Throws: ``TensorError/raggedRows(rowLengths:)`` when rows differ in length.
    public init(rows: [[Scalar]]) throws(TensorError) {
        let columns = rows.first?.count ?? 0
        guard rows.allSatisfy({ $0.count == columns }) else {
            throw .raggedRows(rowLengths: rows.map(\.count))
        }
        self.shape = [rows.count, columns]
        self.scalars = rows.flatMap { $0 }
    }

    /// A rank-1 tensor holding `scalars`.
    public init(vector scalars: [Scalar]) {
        self.shape = [scalars.count]
        self.scalars = scalars
    }

    /// The number of dimensions.
    public var rank: Int { shape.count }
    /// The number of elements.
    public var count: Int { scalars.count }
    /// The first extent of a rank-2 tensor (rows of a matrix, samples of a batch).
    public var rows: Int { shape.count == 2 ? shape[0] : 1 }
    /// The last extent of a rank-2 tensor (columns of a matrix, features of a sample).
    public var columns: Int { shape.last ?? 1 }

    /// The element at `(row, column)` of a rank-2 tensor.
    public subscript(row: Int, column: Int) -> Scalar {
        get { scalars[row * columns + column] }
        set { scalars[row * columns + column] = newValue }
    }

    /// The element at `index` of the row-major storage.
    public subscript(index: Int) -> Scalar {
        get { scalars[index] }
        set { scalars[index] = newValue }
    }

    /// The elements as nested rows (rank 2), for printing and tests.
    public var rowArrays: [[Scalar]] {
        (0..<rows).map { Array(scalars[$0 * columns..<($0 + 1) * columns]) }
    }

    /// The same elements under another shape with the same element count.
    /// - Throws: ``TensorError/elementCount(shape:expected:actual:)`` when the counts differ.
    public func reshaped(to newShape: [Int]) throws(TensorError) -> Tensor {
        try Tensor(shape: newShape, scalars: scalars)
    }

    /// Resizes this tensor to `newShape`, keeping the storage's capacity: shrinking never frees
    /// and growing back within the capacity never allocates, so a buffer sized for the largest
    /// batch serves a smaller last batch every epoch without allocating. Contents are unspecified
    /// afterwards.
    public mutating func resize(to newShape: [Int]) {
        guard newShape != shape else { return }
        precondition(newShape.allSatisfy { $0 >= 0 }, "negative extent in shape \(newShape)")
        Kernels.resize(&scalars, count: newShape.reduce(1, *))
        shape = newShape
    }

    /// Resizes to the matrix shape (rows, columns), as ``resize(to:)``; when the shape is already
    /// that, nothing happens and nothing is allocated (an array literal for the shape would be).
    public mutating func resize(rows: Int, columns: Int) {
        guard !isMatrix(rows: rows, columns: columns) else { return }
        resize(to: [rows, columns])
    }

    /// Resizes to the sequence shape (batch, time, features), as ``resize(rows:columns:)`` does a
    /// matrix: when the shape is already that, nothing happens and nothing is allocated.
    public mutating func resize(batch: Int, time: Int, features: Int) {
        guard !(shape.count == 3 && shape[0] == batch && shape[1] == time && shape[2] == features) else { return }
        resize(to: [batch, time, features])
    }

    /// Whether the shape is (rows, columns), compared without building a shape array.
    @inline(__always)
    func isMatrix(rows: Int, columns: Int) -> Bool {
        shape.count == 2 && shape[0] == rows && shape[1] == columns
    }

    /// Sets every element to zero without reallocating (clears gradient buffers once per step).
    public mutating func zero() {
        scalars.withUnsafeMutableBufferPointer { Self.zero($0) }
    }

    /// Zeroes a buffer with a byte fill (memset): +0.0 is all zero bits in IEEE formats. The
    /// generic `update(repeating: 0)` runs unspecialized here, one witness call per element,
    /// which was a fifth of a small network's training step.
    @inline(__always)
    static func zero(_ buffer: UnsafeMutableBufferPointer<Scalar>) {
        UnsafeMutableRawBufferPointer(buffer).initializeMemory(as: UInt8.self, repeating: 0)
    }

    /// Read-only access to the contiguous storage.
    public func withUnsafeBufferPointer<R, E: Error>(
        _ body: (UnsafeBufferPointer<Scalar>) throws(E) -> R
    ) throws(E) -> R {
        try scalars.withUnsafeBufferPointer { (p) throws(E) -> R in try body(p) }
    }

    /// Mutable access to the contiguous storage; the shape cannot change through it.
    public mutating func withUnsafeMutableBufferPointer<R, E: Error>(
        _ body: (UnsafeMutableBufferPointer<Scalar>) throws(E) -> R
    ) throws(E) -> R {
        try scalars.withUnsafeMutableBufferPointer { (p) throws(E) -> R in try body(p) }
    }

    private static func elementCount(of shape: [Int]) throws(TensorError) -> Int {
        guard shape.allSatisfy({ $0 >= 0 }) else { throw .invalidShape(shape, reason: "extents must be non-negative") }
        return shape.reduce(1, *)
    }
}

extension Tensor: CustomStringConvertible {
    /// `Tensor(2×3)[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]`, shortened for large tensors.
    public var description: String {
        let dims = shape.map(String.init).joined(separator: "×")
        if count > 64 { return "Tensor<\(Scalar.self)>(\(dims))" }
        if rank == 2 { return "Tensor(\(dims))\(rowArrays)" }
        return "Tensor(\(dims))\(scalars)"
    }
}

/// What went wrong at a tensor operation's door. Every case names the shapes involved.
public enum TensorError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Two operands whose shapes do not fit the operation.
    case shapeMismatch(operation: String, left: [Int], right: [Int], expected: String)
    /// An operand of the wrong rank or extent for the operation.
    case invalidShape([Int], reason: String)
    /// Storage whose element count does not match the shape.
    case elementCount(shape: [Int], expected: Int, actual: Int)
    /// Nested rows of different lengths.
    case raggedRows(rowLengths: [Int])

    public var description: String {
        switch self {
        case let .shapeMismatch(operation, left, right, expected):
            return "\(operation): shapes \(Self.format(left)) and \(Self.format(right)) do not match (\(expected))"
        case let .invalidShape(shape, reason):
            return "invalid shape \(Self.format(shape)): \(reason)"
        case let .elementCount(shape, expected, actual):
            return "shape \(Self.format(shape)) holds \(expected) elements, got \(actual)"
        case let .raggedRows(lengths):
            return "rows must all have the same length, got lengths \(lengths)"
        }
    }

    /// `(2, 3)`: the shape notation used in messages and shape comments alike.
    static func format(_ shape: [Int]) -> String {
        "(" + shape.map(String.init).joined(separator: ", ") + ")"
    }
}
