/// What went wrong reading or preparing data. Every case says where and what was expected.
///
/// File errors name the path first (`data/iris.csv:12:3: ...`, the compiler's shape), so a
/// message can be pasted into an editor's "go to" box.
public enum DataError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A saved random-generator state that cannot be resumed.
    case invalidGeneratorState([UInt64])

    // MARK: Files

    /// No file at `path`.
    case fileNotFound(path: String)
    /// A file that exists but cannot be read (a directory, no permission, an I/O error).
    case unreadableFile(path: String, reason: String)
    /// A file with no bytes (or, for CSV, only blank lines); `expected` says what should be there.
    case emptyFile(path: String, expected: String)

    // MARK: CSV

    /// A CSV file with a header row but no data rows.
    case noDataRows(path: String)
    /// A column asked for by name that is not in the header; `suggestion` is the closest header name.
    case unknownColumn(path: String, column: String, role: String, available: [String], suggestion: String?)
    /// A header naming the same column twice (first and second 1-based column numbers).
    case duplicateColumn(path: String, line: Int, column: String, first: Int, second: Int)
    /// A CSV file that leaves no column to use as a feature.
    case noFeatureColumns(path: String, labelColumn: String)
    /// A row whose number of fields differs from the header's.
    case wrongFieldCount(path: String, line: Int, expected: Int, found: Int)
    /// A field that is empty, not a number, or not finite where a finite number was expected.
    case invalidValue(path: String, line: Int, column: Int, columnName: String, value: String, expected: String)
    /// A quoted field that is never closed, or is followed by text before the next separator.
    case malformedQuote(path: String, line: Int, column: Int, reason: String)

    // MARK: IDX and gzip

    /// Neither gzip (`1f 8b`) nor IDX (`00 00 <type> <ndims>`), or an IDX header that cannot be right.
    case notIDX(path: String, reason: String)
    /// An IDX element type other than unsigned bytes (0x08).
    case unsupportedIDXType(path: String, typeCode: UInt8)
    /// An IDX file with the wrong number of dimensions for its role (images 3, labels 1).
    case wrongDimensionCount(path: String, role: String, expected: Int, found: Int)
    /// A file shorter than its header says.
    case truncated(path: String, expectedBytes: Int, foundBytes: Int)
    /// A file longer than its header says.
    case trailingBytes(path: String, expectedBytes: Int, foundBytes: Int)
    /// A gzip stream that inflates to more than its IDX header declares (stopped one byte past it).
    case inflatesPastHeader(path: String, expectedBytes: Int)
    /// A file that would need more memory than the machine has; `what` says what it holds.
    case exceedsMemory(path: String, what: String, bytes: Int, memory: Int)
    /// A gzip stream zlib cannot inflate.
    case corruptGzip(path: String, reason: String)
    /// Image and label files that hold different numbers of samples.
    case sampleCountMismatch(imagesPath: String, images: Int, labelsPath: String, labels: Int)
    /// A class label outside `0..<classCount`; `sample` is 0-based.
    case labelOutOfRange(path: String, sample: Int, label: Int, classCount: Int)

    /// A column whose values cannot be used as they are (statistics that overflow, say).
    case unusableColumn(path: String, column: String, reason: String)
    /// Test images of another size than the training images.
    case imageSizeMismatch(trainPath: String, trainSize: [Int], testPath: String, testSize: [Int])

    // MARK: Text

    /// A file larger than the limit its reader was given; `bytes` is nil when the size is known only
    /// to exceed the limit (a file that grew while it was read, a device or pipe).
    case fileTooLarge(path: String, bytes: Int?, limit: Int)
    /// Bytes that are not UTF-8; `offset` is the 0-based byte offset in the file (as `xxd` counts)
    /// of `found`, the first invalid sequence.
    case invalidUTF8(path: String, line: Int, offset: Int, found: [UInt8])
    /// A control character (other than tab) in a line of text; `column` counts characters (Unicode
    /// scalars) from 1.
    case controlCharacter(path: String, line: Int, column: Int, character: Unicode.Scalar)
    /// A control character other than whitespace in a document (``TextDocument``): the mark of a
    /// binary file; `column` counts characters from 1.
    case binaryCharacter(path: String, line: Int, column: Int, character: Unicode.Scalar)
    /// A document that cannot be trained on as it is (one distinct character), and why.
    case unusableDocument(path: String, reason: String)
    /// A line with more characters than a block of `blockSize` tokens holds (`blockSize - 1`: one
    /// position is the boundary token).
    case lineTooLong(path: String, line: Int, length: Int, blockSize: Int)
    /// A text file whose every line was dropped by the character class `keep`.
    case noLinesKept(path: String, dropped: Int, keep: String, lowercased: Bool)

    // MARK: Datasets and arguments

    /// Features, targets, labels and names that do not fit together.
    case inconsistentDataset(String)
    /// An argument outside its allowed range.
    case invalidArgument(name: String, value: String, expected: String)
    /// Features whose column count differs from what a fitted transform expects.
    case featureCountMismatch(expected: Int, found: Int)

    /// The message: the file (and line and column) first, then what was found and what was expected.
    public var description: String {
        switch self {
        case let .invalidGeneratorState(state):
            return "a random-generator state must be 4 words, not all zero; got \(state)"
        case let .fileNotFound(path):
            return "\(path): no such file"
        case let .unreadableFile(path, reason):
            return "\(path): cannot be read: \(reason)"
        case let .emptyFile(path, expected):
            return "\(path): the file is empty; expected \(expected)"
        case let .noDataRows(path):
            return "\(path): the file has a header row but no data rows"
        case let .unknownColumn(path, column, role, available, suggestion):
            let hint = suggestion.map { "; did you mean \"\(Self.cut($0))\"?" } ?? ""
            var list = available.prefix(20).map { "\"\(Self.cut($0))\"" }.joined(separator: ", ")
            if available.count > 20 { list += " and \(available.count - 20) more" }
            return "\(path): \(role) \"\(Self.cut(column))\" is not in the header; the columns are \(list)\(hint)"
        case let .duplicateColumn(path, line, column, first, second):
            return
                "\(path):\(line): column \"\(Self.cut(column))\" appears twice in the header (columns \(first) and \(second)); names must be unique"
        case let .noFeatureColumns(path, labelColumn):
            return "\(path): no feature columns: the only column is the label column \"\(labelColumn)\""
        case let .wrongFieldCount(path, line, expected, found):
            return "\(path):\(line): expected \(expected) fields like the header, found \(found)"
        case let .invalidValue(path, line, column, columnName, value, expected):
            let found = value.isEmpty ? "an empty field" : "\"\(Self.cut(value))\""
            return "\(path):\(line):\(column): column \"\(Self.cut(columnName))\": expected \(expected), found \(found)"
        case let .malformedQuote(path, line, column, reason):
            return "\(path):\(line):\(column): \(reason)"
        case let .notIDX(path, reason):
            return "\(path): not an IDX file (expected magic 0x00 0x00 0x08 <ndims>, or gzip 0x1f 0x8b): \(reason)"
        case let .unsupportedIDXType(path, typeCode):
            return "\(path): IDX data type \(Self.hex(typeCode)) (\(Self.idxTypeName(typeCode))) is not supported; only unsigned bytes (0x08) are"
        case let .wrongDimensionCount(path, role, expected, found):
            return "\(path): \(role) must have \(expected) dimension\(expected == 1 ? "" : "s"), the header says \(found)"
        case let .truncated(path, expectedBytes, foundBytes):
            return "\(path): truncated: the header says \(expectedBytes) bytes, found \(foundBytes)"
        case let .trailingBytes(path, expectedBytes, foundBytes):
            return "\(path): the header says \(expectedBytes) bytes, found \(foundBytes) (\(foundBytes - expectedBytes) extra)"
        case let .inflatesPastHeader(path, expectedBytes):
            return
                "\(path): the gzip stream inflates to more than the \(expectedBytes) bytes its IDX header declares; refused after \(expectedBytes + 1)"
        case let .exceedsMemory(path, what, bytes, memory):
            return
                "\(path): \(what): \(bytes == .max ? "more bytes than can be counted" : "\(bytes) bytes"), more than this machine's \(memory) bytes of memory"
        case let .corruptGzip(path, reason):
            return "\(path): corrupt gzip stream: \(reason)"
        case let .sampleCountMismatch(imagesPath, images, labelsPath, labels):
            return "\(imagesPath) holds \(images) images but \(labelsPath) holds \(labels) labels; expected the same count"
        case let .labelOutOfRange(path, sample, label, classCount):
            return "\(path): sample \(sample) has label \(label); expected 0..<\(classCount)"
        case let .unusableColumn(path, column, reason):
            return "\(path): column \"\(column)\": \(reason)"
        case let .imageSizeMismatch(trainPath, trainSize, testPath, testSize):
            let size = { (extents: [Int]) in extents.map(String.init).joined(separator: "×") }
            return "\(testPath) holds \(size(testSize)) images but the training images \(trainPath) are \(size(trainSize)); expected the same size"
        case let .fileTooLarge(path, bytes, limit):
            let size = bytes.map { "\($0) bytes" } ?? "more than \(limit) bytes"
            return "\(path): the file is too large (\(size)); expected at most \(limit) bytes"
        case let .invalidUTF8(path, line, offset, found):
            return "\(path):\(line): invalid UTF-8 at byte offset \(offset) (\(found.map(Self.hex).joined(separator: " "))); expected UTF-8 text"
        case let .controlCharacter(path, line, column, character):
            return
                "\(path):\(line):\(column): control character \(Self.codePoint(character)); expected printable text (tab is the one control character allowed)"
        case let .binaryCharacter(path, line, column, character):
            return
                "\(path):\(line):\(column): control character \(Self.codePoint(character)); expected text (tab, newline, vertical tab, form feed and carriage return are the control characters a document may hold)"
        case let .unusableDocument(path, reason):
            return "\(path): \(reason)"
        case let .lineTooLong(path, line, length, blockSize):
            return "\(path):\(line): a line of \(length) characters; block size \(blockSize) holds lines of at most \(blockSize - 1) characters"
        case let .noLinesKept(path, dropped, keep, lowercased):
            let lines = dropped == 1 ? "its one line was" : "all \(dropped) of its lines were"
            return
                "\(path): no line kept: \(lines) dropped for a character outside [\(keep)]\(lowercased ? " (after lowercasing)" : ""); expected at least one line of those characters only"
        case let .inconsistentDataset(reason):
            return "inconsistent dataset: \(reason)"
        case let .invalidArgument(name, value, expected):
            return "\(name) = \(value) is not allowed; expected \(expected)"
        case let .featureCountMismatch(expected, found):
            return "features have \(found) columns; expected \(expected)"
        }
    }

    /// `text` cut to its first 40 characters and `…`: a message quotes a bad value, never a 20 MB line.
    static func cut(_ text: String) -> String {
        guard text.utf8.count > 40 else { return text }
        let head = text.unicodeScalars.prefix(40)
        return String(String.UnicodeScalarView(head)) + "… (\(text.utf8.count) bytes)"
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = String(byte, radix: 16, uppercase: true)
        return "0x" + (digits.count == 1 ? "0" + digits : digits)
    }

    /// `U+000D` (carriage return): the code point, and the control's name where it has a common one.
    private static func codePoint(_ character: Unicode.Scalar) -> String {
        let code = character.codePoint
        let names: [UInt32: String] = [0x00: "NUL", 0x0B: "vertical tab", 0x0C: "form feed", 0x0D: "carriage return", 0x1B: "escape", 0x7F: "delete"]
        return names[character.value].map { "\(code) (\($0))" } ?? code
    }

    /// The type names of the IDX format (LeCun's MNIST page), so the message says what was found.
    private static func idxTypeName(_ code: UInt8) -> String {
        switch code {
        case 0x08: "unsigned byte"
        case 0x09: "signed byte"
        case 0x0B: "16-bit integer"
        case 0x0C: "32-bit integer"
        case 0x0D: "32-bit float"
        case 0x0E: "64-bit float"
        default: "unknown"
        }
    }
}
