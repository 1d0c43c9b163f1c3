/// The order of an epoch and the filling of batch buffers, allocation-free once the buffers have
/// reached their capacity.
///
/// `order` is a permutation of the sample indices; batch `b` is the samples at positions
/// `b · batchSize ..< min((b + 1) · batchSize, count)` of it. The last batch may be smaller and is
/// never dropped, so every sample is seen once per epoch.
public struct MiniBatches: Sendable, Equatable, Codable {
    /// The sample indices in this epoch's order; starts as `0..<count`.
    public private(set) var order: [Int]
    /// The number of samples.
    public let count: Int
    /// The largest number of samples in a batch, as asked for (it may exceed `count`).
    public let batchSize: Int

    /// Batches over `count` samples in their natural order; a batch size larger than `count`
    /// gives one batch of all samples.
    /// - Throws: ``DataError/invalidArgument(name:value:expected:)`` for a count or batch size below 1.
    public init(count: Int, batchSize: Int) throws(DataError) {
        guard count >= 1 else { throw .invalidArgument(name: "sample count", value: "\(count)", expected: "at least 1 sample") }
        guard batchSize >= 1 else { throw .invalidArgument(name: "batch size", value: "\(batchSize)", expected: "at least 1") }
        self.count = count
        self.batchSize = batchSize
        self.order = Array(0..<count)
    }

    /// A saved epoch order, checked: decoding rejects an order that is not a permutation of `0..<count`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let count = try container.decode(Int.self, forKey: .count)
        let batchSize = try container.decode(Int.self, forKey: .batchSize)
        let order = try container.decode([Int].self, forKey: .order)
        // Checked before `init(count:batchSize:)` allocates `count` indices: a hostile count is refused, not allocated.
        guard order.count == count else {
            throw DecodingError.dataCorruptedError(
                forKey: .order, in: container, debugDescription: "the order holds \(order.count) indices but count is \(count)")
        }
        do {
            try self.init(count: count, batchSize: batchSize)
        } catch {
            throw DecodingError.dataCorruptedError(forKey: .count, in: container, debugDescription: error.description)
        }
        guard order.sorted() == self.order else {
            throw DecodingError.dataCorruptedError(
                forKey: .order, in: container, debugDescription: "the order must be a permutation of 0..<\(count)")
        }
        self.order = order
    }

    /// The number of batches in an epoch: ⌈count / batchSize⌉.
    public var batchesPerEpoch: Int { count / batchSize + (count % batchSize == 0 ? 0 : 1) }

    /// Shuffles the epoch order in place with `generator` (Fisher–Yates; no allocation).
    public mutating func shuffle(using generator: inout SeededGenerator) {
        generator.shuffle(&order)
    }

    /// The positions in ``order`` of batch `index` (0-based, below ``batchesPerEpoch``).
    public func range(ofBatch index: Int) -> Range<Int> {
        let start = index * batchSize
        return start..<start + min(batchSize, count - start)
    }

    /// Copies batch `index` of the current order from `dataset` into the buffers.
    ///
    /// `features` becomes (batch, featureCount) and `targets` (batch, outputCount) through
    /// `Tensor.resize(to:)`, which keeps capacity; `labels` is emptied keeping its capacity and
    /// refilled (left empty for a dataset without labels). So once the buffers have held a full
    /// batch, no call allocates.
    /// - Precondition: `dataset.count == count` (the batches were made for this dataset).
    public func fill<Scalar: TensorScalar>(
        batch index: Int, from dataset: Dataset<Scalar>,
        features: inout Tensor<Scalar>, targets: inout Tensor<Scalar>, labels: inout [Int]
    ) {
        fill(positions: range(ofBatch: index), from: dataset, features: &features, targets: &targets, labels: &labels)
    }

    /// Copies the samples at `positions` of the current order (a batch, or a process's share of
    /// one) from `dataset` into the buffers, as ``fill(batch:from:features:targets:labels:)`` does.
    /// - Precondition: `dataset.count == count`, and `positions` is within `0..<count`.
    public func fill<Scalar: TensorScalar>(
        positions: Range<Int>, from dataset: Dataset<Scalar>,
        features: inout Tensor<Scalar>, targets: inout Tensor<Scalar>, labels: inout [Int]
    ) {
        precondition(dataset.count == count, "batches over \(count) samples filled from a dataset of \(dataset.count)")
        precondition(positions.lowerBound >= 0 && positions.upperBound <= count, "positions \(positions) outside 0..<\(count)")
        features.resize(rows: positions.count, columns: dataset.featureCount)
        targets.resize(rows: positions.count, columns: dataset.outputCount)
        copyRows(at: positions, of: dataset.features, into: &features)
        copyRows(at: positions, of: dataset.targets, into: &targets)
        labels.removeAll(keepingCapacity: true)
        if let all = dataset.labels {
            for position in positions { labels.append(all[order[position]]) }
        }
    }

    // source: (count, columns)  batch: (positions.count, columns)
    private func copyRows<Scalar: TensorScalar>(at positions: Range<Int>, of source: Tensor<Scalar>, into batch: inout Tensor<Scalar>) {
        source.withUnsafeBufferPointer { from in
            batch.withUnsafeMutableBufferPointer { to in
                order.withUnsafeBufferPointer { order in
                    Kernels.gatherRows(from, columns: source.columns, order: order, positions: positions, into: to)
                }
            }
        }
    }
}
