/// The order of an epoch and the filling of batch buffers, allocation-free once the buffers have
/// reached their capacity.
///
/// `order` is a permutation of the sample indices; batch `b` is the samples at positions
/// `b · batchSize ..< min((b + 1) · batchSize, count)` of it. The last batch may be smaller and is
/// never dropped, so every sample is seen once per epoch.
///
/// Over a document (``init(windows:count:batchSize:)``), `order` is instead `count` window starts
/// drawn at each epoch's start, uniformly and with replacement, as nanoGPT draws its batches
/// (`torch.randint(len(data) - block_size, (batch_size,))`).
public struct MiniBatches: Sendable, Equatable, Codable {
    /// The sample indices in this epoch's order; starts as `0..<count`. Over a document, the
    /// epoch's window starts, each in `0..<windows`.
    public private(set) var order: [Int]
    /// The number of samples (over a document: of windows drawn per epoch).
    public let count: Int
    /// The largest number of samples in a batch, as asked for (it may exceed `count`).
    public let batchSize: Int
    /// Over a document, the number of windows a start is drawn from (its characters less the
    /// block); nil for the rows of a dataset.
    public let windows: Int?
    /// Over a document, the generator as it was before it drew the current starts (nil before the
    /// first draw): what a checkpoint saves in their place, since the same generator draws them
    /// again, so that its size does not grow with the starts of an interval.
    public private(set) var drawnWith: SeededGenerator?

    private enum CodingKeys: String, CodingKey { case order, count, batchSize, windows, drawnWith }

    /// Batches over `count` samples in their natural order; a batch size larger than `count`
    /// gives one batch of all samples.
    /// - Throws: ``DataError/invalidArgument(name:value:expected:)`` for a count or batch size below 1.
    public init(count: Int, batchSize: Int) throws(DataError) {
        guard count >= 1 else { throw .invalidArgument(name: "sample count", value: "\(count)", expected: "at least 1 sample") }
        guard batchSize >= 1 else { throw .invalidArgument(name: "batch size", value: "\(batchSize)", expected: "at least 1") }
        self.count = count
        self.batchSize = batchSize
        self.order = Array(0..<count)
        self.windows = nil
    }

    /// Batches of windows of a document: `count` window starts drawn per epoch (``draw(using:)``)
    /// from `0..<windows`, in batches of `batchSize`; until the first draw, the starts `0..<count`
    /// reduced modulo `windows`.
    /// - Throws: ``DataError/invalidArgument(name:value:expected:)`` for a count, batch size or
    ///   number of windows below 1.
    public init(windows: Int, count: Int, batchSize: Int) throws(DataError) {
        guard windows >= 1 else { throw .invalidArgument(name: "windows", value: "\(windows)", expected: "at least 1") }
        try self.init(count: count, batchSize: batchSize)
        self = MiniBatches(order: order.map { $0 % windows }, count: count, batchSize: batchSize, windows: windows)
    }

    private init(order: [Int], count: Int, batchSize: Int, windows: Int?) {
        (self.order, self.count, self.batchSize, self.windows) = (order, count, batchSize, windows)
    }

    /// A saved epoch order, checked: decoding rejects an order that is not a permutation of `0..<count`.
    /// A document's starts are saved as the generator that drew them (``drawnWith``) and drawn again;
    /// a saved list of starts is read as it stands.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let count = try container.decode(Int.self, forKey: .count)
        let batchSize = try container.decode(Int.self, forKey: .batchSize)
        let windows = try container.decodeIfPresent(Int.self, forKey: .windows)
        let drawnWith = try container.decodeIfPresent(SeededGenerator.self, forKey: .drawnWith)
        if windows != nil, !container.contains(.order) {
            // Checked before `count` starts are allocated: a hostile count is refused, not allocated.
            guard count >= 1, count <= PhysicalMemory.bytes / (4 * MemoryLayout<Int>.size) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .count, in: container, debugDescription: "\(count) window starts are more than this machine's memory holds")
            }
            do {
                try self.init(windows: windows!, count: count, batchSize: batchSize)
            } catch {
                throw DecodingError.dataCorruptedError(forKey: .count, in: container, debugDescription: error.description)
            }
            if var generator = drawnWith { draw(using: &generator) }
            return
        }
        let order = try container.decode([Int].self, forKey: .order)
        // Checked before `init(count:batchSize:)` allocates `count` indices: a hostile count is refused, not allocated.
        guard order.count == count else {
            throw DecodingError.dataCorruptedError(
                forKey: .order, in: container, debugDescription: "the order holds \(order.count) indices but count is \(count)")
        }
        do {
            if let windows {
                try self.init(windows: windows, count: count, batchSize: batchSize)
            } else {
                try self.init(count: count, batchSize: batchSize)
            }
        } catch {
            throw DecodingError.dataCorruptedError(forKey: .count, in: container, debugDescription: error.description)
        }
        if let windows {
            guard order.allSatisfy({ (0..<windows).contains($0) }) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .order, in: container, debugDescription: "every window start must be in 0..<\(windows)")
            }
        } else {
            guard order.sorted() == self.order else {
                throw DecodingError.dataCorruptedError(
                    forKey: .order, in: container, debugDescription: "the order must be a permutation of 0..<\(count)")
            }
        }
        self.order = order
    }

    /// Saves the order; over a document, the generator that drew the starts instead of the starts.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(count, forKey: .count)
        try container.encode(batchSize, forKey: .batchSize)
        try container.encodeIfPresent(windows, forKey: .windows)
        if windows == nil { try container.encode(order, forKey: .order) } else { try container.encodeIfPresent(drawnWith, forKey: .drawnWith) }
    }

    /// The number of batches in an epoch: ⌈count / batchSize⌉.
    public var batchesPerEpoch: Int { count / batchSize + (count % batchSize == 0 ? 0 : 1) }

    /// Shuffles the epoch order in place with `generator` (Fisher–Yates; no allocation).
    public mutating func shuffle(using generator: inout SeededGenerator) {
        generator.shuffle(&order)
    }

    /// Draws the epoch's window starts with `generator`, each `generator.index(below: windows)`
    /// in order, keeping the generator as it was in ``drawnWith`` (no allocation after the first draw).
    /// - Precondition: the batches are over a document (``windows`` is not nil).
    public mutating func draw(using generator: inout SeededGenerator) {
        guard let windows else { preconditionFailure("draw(using:) is for the windows of a document; rows are shuffled") }
        // Kept in its own storage from the second draw on: an assignment would share the generator's,
        // and its next draw would then copy it.
        if drawnWith == nil { drawnWith = generator } else { drawnWith!.copyState(from: generator) }
        for i in order.indices { order[i] = generator.index(below: windows) }
    }

    /// The next epoch's order: the rows shuffled, or a document's window starts drawn.
    public mutating func startEpoch(using generator: inout SeededGenerator) {
        if windows == nil { shuffle(using: &generator) } else { draw(using: &generator) }
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

    /// Copies the windows at `positions` of the current order from `document` into the buffers:
    /// the window at start `s` reads tokens `s ..< s + blockSize` and predicts `s + 1 ...
    /// s + blockSize`, each widened to `Scalar` as it is copied. As
    /// ``fill(positions:from:features:targets:labels:)``, allocation-free once the buffers have
    /// held a full batch.
    ///
    ///     // document: (tokens)  features, targets: (positions.count, blockSize)
    ///
    /// - Precondition: the batches are over this document: ``windows`` is `tokens − blockSize`.
    public func fill<Scalar: TensorScalar>(
        windows positions: Range<Int>, from document: TokenSequence, blockSize: Int, features: inout Tensor<Scalar>, targets: inout Tensor<Scalar>
    ) {
        precondition(
            windows == document.count - blockSize,
            "windows of \(windows.map(String.init) ?? "no") starts filled from \(document.count) tokens at block \(blockSize)")
        precondition(positions.lowerBound >= 0 && positions.upperBound <= count, "positions \(positions) outside 0..<\(count)")
        features.resize(rows: positions.count, columns: blockSize)
        targets.resize(rows: positions.count, columns: blockSize)
        features.withUnsafeMutableBufferPointer { x in
            targets.withUnsafeMutableBufferPointer { t in
                for (row, position) in positions.enumerated() {
                    let start = order[position]
                    document.copy(start..<start + blockSize, into: x.baseAddress! + row * blockSize)
                    document.copy(start + 1..<start + blockSize + 1, into: t.baseAddress! + row * blockSize)
                }
            }
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
