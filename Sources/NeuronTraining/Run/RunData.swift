// The rows a run trains, validates and tests on, read as its config says and preprocessed with
// statistics fitted on the training rows alone.
import Foundation
import NeuronCore

/// The datasets of a run.
public struct RunData<Scalar: TensorScalar>: Sendable {
    public var training: Dataset<Scalar>
    public var validation: Dataset<Scalar>?
    public var test: Dataset<Scalar>?
    public var preprocessing: Preprocessing

    /// ` (data: Data/iris.csv)`: the training data's files, for messages about what they hold.
    public var source: String
    /// One sample's shape as an image, `[height, width, channels]`, when the files say it (IDX
    /// images: `[rows, columns, 1]`); nil for rows of features.
    public var imageShape: [Int]?
    /// Text: the lines read, and which of them each part holds (indices into `text.lines`).
    public var text: (corpus: TextCorpus, training: [Int], validation: [Int], test: [Int])?
    /// A text document: the text read, and its contiguous parts (ranges of its characters).
    /// ``validation`` and ``test`` hold the held-out parts as consecutive windows, ``training`` the
    /// training part's first ``documentSampleWindows`` windows (a gradient check's rows): the steps
    /// draw their windows from the tokens themselves, which take a byte or two a character.
    public var document: (text: TextDocument, training: Range<Int>, validation: Range<Int>, test: Range<Int>)?

    /// A text run's tokens: its lines' or its document's; nil for other data.
    public var vocabulary: Vocabulary? { text?.corpus.vocabulary ?? document?.text.vocabulary }

    /// The generator that splits validation rows off the training rows of a run seeded `seed`
    /// (`seed + 1`, so that it is independent of the epoch order drawn from `seed`).
    public static func splitGenerator(seed: UInt64) -> SeededGenerator { SeededGenerator(seed: seed &+ 1) }

    /// Reads the data a config names. Validation rows are split off the training rows with a
    /// generator seeded from the run's seed (`seed + 1`, so that it is independent of the epoch
    /// order drawn from `seed`), before any statistics are fitted.
    /// - Parameters:
    ///   - config: the config's `data` section.
    ///   - seed: the run's seed.
    ///   - origin: where the config's keys were written, for errors about their values.
    /// - Throws: `DataError` naming the file and place for anything unreadable or inconsistent;
    ///   ``ConfigError`` at `data.validationSplit` for a split that leaves no training rows.
    public init(_ config: DataConfig, seed: UInt64, origin: ConfigOrigin = ConfigOrigin()) throws {
        var splitGenerator = Self.splitGenerator(seed: seed)
        var all: Dataset<Scalar>
        var test: Dataset<Scalar>?
        var defaultSplit = 0.1
        var defaultNormalization = DataConfig.Normalization.standardize
        switch config.kind {
        case .csv:
            source = " (data: \(config.path!))"
            all = try CSV.load(
                config.path!, labelColumn: config.labelColumn!, task: config.task ?? .classification,
                featureColumns: config.featureColumns)
            if let path = config.testPath {
                // The training file's columns and classes, so that the test rows mean the same.
                test = try CSV.load(
                    path, labelColumn: config.labelColumn!, task: config.task ?? .classification,
                    featureColumns: all.featureNames, classNames: all.classNames)
            }
        case .idx:
            source = " (data: \(config.trainImages!))"
            // Pixels stay raw bytes here; `scale` (the default for images) divides them by 255 below.
            all = try IDX.load(images: config.trainImages!, labels: config.trainLabels!, scale: 1)
            let dimensions = try IDX.readHeader(config.trainImages!)  // (samples, rows, columns): checked by the load
            imageShape = [dimensions[1], dimensions[2], 1]
            if let images = config.testImages, let labels = config.testLabels {
                test = try IDX.load(
                    images: images, labels: labels, scale: 1, classNames: all.classNames,
                    imageSizeOf: config.trainImages!)
            }
            defaultNormalization = .scale
        case .synthetic:
            source = " (data: synthetic \(config.name?.rawValue ?? ""))"
            switch config.name {
            case .xor:
                all = Synthetic.xor()
                defaultSplit = 0
                defaultNormalization = .none
            case .sine:
                var generator = SeededGenerator(seed: seed &+ 2)
                all = try Synthetic.sine(count: config.count ?? 256, generator: &generator)
            case nil:
                throw DataError.invalidArgument(name: "data.name", value: "nothing", expected: "xor or sine for a synthetic dataset")
            }
        case .sample:
            // The single neuron's one input `x` and its target (the loader requires both).
            source = " (data: one sample)"
            all = try Dataset(
                features: Tensor(shape: [1, 1], scalars: [Scalar(config.input!)]), targets: Tensor(shape: [1, 1], scalars: [Scalar(config.target!)]),
                featureNames: ["x"])
            defaultSplit = 0
            defaultNormalization = .none
        case .text where config.unit == .document:
            let (document, parts) = try TextDocument.read(config, origin: origin)
            source = " (data: \(config.path!))"
            self.document = (document, parts.training, parts.validation, parts.test)
            // The loader requires the block of a document.
            let block = config.blockSize!
            training = document.windows(Self.firstWindows(of: parts.training, blockSize: block), blockSize: block)
            validation = parts.validation.isEmpty ? nil : document.windows(parts.validation, blockSize: block)
            self.test = parts.test.isEmpty ? nil : document.windows(parts.test, blockSize: block)
            preprocessing = .none
            return
        case .text:
            let (corpus, parts) = try TextCorpus.read(config, seed: seed, origin: origin)
            source = " (data: \(config.path!))"
            text = (corpus, parts.training, parts.validation, parts.test)
            training = corpus.dataset(parts.training)
            validation = parts.validation.isEmpty ? nil : corpus.dataset(parts.validation)
            self.test = parts.test.isEmpty ? nil : corpus.dataset(parts.test)
            preprocessing = .none
            return
        }
        if let limit = config.limit, limit < all.count { all = all.subset(Array(0..<limit)) }
        let fraction = config.validationSplit ?? defaultSplit
        let held = fraction == 0 ? 0 : max(1, Int((Double(all.count) * fraction).rounded()))
        if held >= all.count {
            let given = config.validationSplit == nil ? "data.validationSplit \(fraction) (the default)" : "data.validationSplit \(fraction)"
            throw origin.error(
                at: "data.validationSplit",
                "\(given) holds out \(held) of the \(all.count) training rows for validation and leaves none to train on\(source); set data.validationSplit: 0 or use more rows"
            )
        }
        if fraction > 0 {
            let (training, validation) = try all.split(validationFraction: fraction, generator: &splitGenerator)
            self.training = training
            self.validation = validation
        } else {
            training = all
            validation = nil
        }
        self.test = test
        switch config.normalization ?? defaultNormalization {
        case .standardize:
            let fitted = Standardizer(fitting: training.features)
            for (column, (mean, deviation)) in zip(fitted.mean, fitted.standardDeviation).enumerated()
            where !mean.isFinite || !deviation.isFinite {
                let file = config.path ?? config.trainImages ?? "the data"
                throw DataError.unusableColumn(
                    path: file, column: training.featureNames[column],
                    reason:
                        "its mean (\(mean)) or standard deviation (\(deviation)) is beyond \(Scalar.self)'s range, so it cannot be standardized; rescale the column or set data.normalization: none"
                )
            }
            preprocessing = .standardize(mean: fitted.mean.map(Double.init), standardDeviation: fitted.standardDeviation.map(Double.init))
        case .scale:
            preprocessing = .scale(1.0 / 255)
        case .none:
            preprocessing = .none
        }
        try preprocessing.apply(to: &training.features)
        if validation != nil { try preprocessing.apply(to: &validation!.features) }
        if self.test != nil { try preprocessing.apply(to: &self.test!.features) }
    }

    /// The training windows a document run keeps as rows: enough for a gradient check's batch.
    public static var documentSampleWindows: Int { 64 }

    /// The characters of the first ``documentSampleWindows`` consecutive windows of `part`.
    private static func firstWindows(of part: Range<Int>, blockSize: Int) -> Range<Int> {
        part.lowerBound..<min(part.upperBound, part.lowerBound + documentSampleWindows * blockSize + 1)
    }

    /// The number of training samples: the rows, or a document's training part as consecutive
    /// windows (``trainingSample(_:)``), of which only the first are kept in ``training``.
    public var trainingSampleCount: Int {
        guard let document else { return training.count }
        return TextDocument.windowCount(characters: document.training.count, blockSize: training.featureCount)
    }

    /// Training sample `index` (below ``trainingSampleCount``) as a dataset of one row: a row of
    /// ``training``, or a document's window `index` read from its tokens.
    public func trainingSample(_ index: Int) -> Dataset<Scalar> {
        precondition((0..<trainingSampleCount).contains(index), "sample \(index) of \(trainingSampleCount)")
        guard let document else { return training.subset([index]) }
        let block = training.featureCount, start = document.training.lowerBound + index * block
        return document.text.windows(start..<min(document.training.upperBound, start + block + 1), blockSize: block)
    }

    /// The most bytes a text file may have: a tenth of the machine's memory (each character
    /// becomes a feature and a target of `Scalar`'s size at every position of its block).
    static var textByteLimit: Int { max(1 << 20, MemoryBudget.physicalMemory / 10) }

    /// The most bytes a document may have: a 24th of the machine's memory, refused by its size
    /// before a byte is read. Reading a document holds its bytes and its tokens (a byte or two a
    /// character); training, the tokens and the held-out parts as windows of `Scalar` features and
    /// targets (2 · 4 bytes a character in `float`, 2 · 8 in `double`: at the default tenth held
    /// out, under 2 bytes a character of the whole). So a document at the limit takes at most
    /// about 4 bytes a byte, a sixth of memory, and the rest is left to the model. A tokenizer's
    /// document holds, beside the bytes, the training part's text while its tokenizer is made, then
    /// one part's ids at a time (4 bytes a token) and the tokens: at most a token a byte, so under
    /// 7 bytes a byte, and about 3 for a text of 2.4 characters a token.
    static var documentByteLimit: Int { max(1 << 20, MemoryBudget.physicalMemory / 24) }
}

extension TextCorpus {
    /// A text config's lines, read and split as a run seeded `seed` splits them (``RunData``
    /// does, and `neuron sample` to mark the training lines): the first `data.limit` kept lines,
    /// shuffled with ``RunData/splitGenerator(seed:)``, then split as `TextCorpus.split` says
    /// (both held-out counts from all the lines: training first, then validation, test last).
    /// - Throws: `DataError` naming the file and line; ``ConfigError`` at the split's key when the
    ///   parts leave no training line.
    public static func read(_ config: DataConfig, seed: UInt64, origin: ConfigOrigin = ConfigOrigin()) throws -> (
        TextCorpus, (training: [Int], validation: [Int], test: [Int])
    ) {
        var generator = RunData<Double>.splitGenerator(seed: seed)
        let keep = try config.keep.map { (text: String) throws(DataError) -> CharacterClass in try CharacterClass(text) }
        let loaded = Result { () throws(DataError) in
            try TextCorpus.load(
                config.path!, lowercase: config.lowercase ?? false, keep: keep, blockSize: config.blockSize,
                longLines: config.longLines ?? .error, maximumBytes: RunData<Double>.textByteLimit)
        }
        if case let .failure(.lineTooLong(path, line, length, blockSize)) = loaded {
            throw origin.error(
                at: "data.blockSize",
                "\(path):\(line): a line of \(length) characters; block size \(blockSize) (data.blockSize) holds lines of at most \(blockSize - 1) characters; data.longLines: window cuts longer lines into windows"
            )
        }
        var corpus = try loaded.get()
        if let limit = config.limit, limit < corpus.lines.count { corpus = corpus.prefix(limit) }
        do {
            return (
                corpus,
                try corpus.split(validationFraction: config.validationSplit ?? 0.1, testFraction: config.testSplit ?? 0.1, generator: &generator)
            )
        } catch {
            throw origin.error(at: config.testSplit != nil ? "data.testSplit" : "data.validationSplit", "\(error) (data: \(config.path!))")
        }
    }
}

extension TextDocument {
    /// A document config's text, read and split into its contiguous parts: training first, then
    /// `data.validationSplit` (default 0.1) and `data.testSplit` (default 0) of the characters, in
    /// file order, nanoGPT's split. The training part holds at least a window and the character it
    /// predicts last (`data.blockSize + 1`).
    /// - Throws: `DataError` naming the file and place; ``ConfigError`` at the split's key when the
    ///   parts leave too little to train on.
    public static func read(_ config: DataConfig, origin: ConfigOrigin = ConfigOrigin()) throws -> (
        TextDocument, (training: Range<Int>, validation: Range<Int>, test: Range<Int>)
    ) {
        let block = config.blockSize ?? 2
        let (validationFraction, testFraction) = (config.validationSplit ?? 0.1, config.testSplit ?? 0)
        do {
            if config.tokenizer != nil || config.vocabularySize != nil {
                return try TextDocument.load(
                    config.path!, validationFraction: validationFraction, testFraction: testFraction, minimumTraining: block + 1,
                    maximumBytes: RunData<Double>.documentByteLimit
                ) { trainingText in try config.documentTokenizer(trainingText: trainingText) }
            }
            let document = try TextDocument.load(config.path!, maximumBytes: RunData<Double>.documentByteLimit)
            return (document, try document.parts(validationFraction: validationFraction, testFraction: testFraction, minimumTraining: block + 1))
        } catch DataError.invalidArgument(let name, let value, let expected) where name == "held-out fractions" {
            let key = config.testSplit != nil ? "data.testSplit" : config.validationSplit != nil ? "data.validationSplit" : "data.blockSize"
            let unit = config.tokenizer == nil && config.vocabularySize == nil ? "characters" : "tokens"
            throw origin.error(
                at: key,
                "\(key): \(DataError.invalidArgument(name: name, value: value, expected: expected)): a window of data.blockSize \(block) reads \(block) \(unit) and predicts one more (data: \(config.path!))"
            )
        }
    }
}

extension DataConfig {
    /// A token document's tokenizer: `tokenizer`'s file, or one of `vocabularySize` tokens trained on
    /// `trainingText`, the training part's text.
    /// - Throws: ``TokenizerError`` naming the file and line of a tokenizer file that cannot be read,
    ///   or why the training part cannot train the vocabulary asked for.
    func documentTokenizer(trainingText: String) throws -> BytePairTokenizer {
        if let file = tokenizer { return try TokenizerFile.read(file, pattern: pattern) }
        do {
            return try BytePairTokenizer.train(trainingText, vocabularySize: vocabularySize!, pattern: pattern ?? .gpt4)
        } catch let error as TokenizerError {
            throw DataError.unusableDocument(path: path!, reason: "data.vocabularySize \(vocabularySize!) on its training part: \(error)")
        }
    }
}
