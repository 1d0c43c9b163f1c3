/// Tables of numbers with a header row, as datasets.
public enum CSV {
    /// What the label column means: class names, or a value to fit.
    public enum Task: String, Sendable, Codable, CaseIterable {
        /// The label column holds class names (or numbers used as names); targets are one-hot.
        case classification
        /// The label column holds a number to predict; one output.
        case regression
    }

    /// Loads a CSV file with a header row as a dataset.
    ///
    /// `labelColumn` names the target column; every other column (or only `featureColumns`, in
    /// that order, when given) is a numeric feature. For classification the label values become
    /// class indices, with the class names sorted numerically when every label is a number (so
    /// "2" comes before "10") and lexicographically otherwise. For regression the label column
    /// must be numeric. Quoted fields (`"a,b"`, `""` for a quote), CRLF line endings and blank
    /// lines are handled.
    /// - Throws: ``DataError`` naming the file, and the line and column (1-based) where it applies:
    ///   a missing or empty file, no data rows, an unknown column (with the closest header name),
    ///   a row with the wrong number of fields, an empty, non-numeric or non-finite value.
    /// - Parameters:
    ///   - path: the CSV file.
    ///   - labelColumn: the header name of the target column.
    ///   - task: classification (class names, one-hot targets) or regression (one number).
    ///   - featureColumns: the feature columns, in this order; nil: every column but the label.
    ///   - classNames: for classification, the classes (in order) the labels must be
    ///     among, as a test file must use the training file's; nil: the labels found, sorted.
    ///   - as: the scalar type of the dataset.
    public static func load<Scalar: TensorScalar>(
        _ path: String, labelColumn: String, task: Task, featureColumns: [String]? = nil, classNames: [String]? = nil,
        as: Scalar.Type = Scalar.self
    ) throws(DataError) -> Dataset<Scalar> {
        let bytes = try DataFile.bytes(at: path)
        return try parse(
            bytes: bytes, source: path, labelColumn: labelColumn, task: task, featureColumns: featureColumns, classNames: classNames)
    }

    /// The same as ``load(_:labelColumn:task:featureColumns:classNames:as:)`` from text already in memory;
    /// `source` names the text in errors.
    public static func parse<Scalar: TensorScalar>(
        _ text: String, source: String, labelColumn: String, task: Task, featureColumns: [String]? = nil,
        as: Scalar.Type = Scalar.self
    ) throws(DataError) -> Dataset<Scalar> {
        try parse(bytes: Array(text.utf8), source: source, labelColumn: labelColumn, task: task, featureColumns: featureColumns)
    }

    /// The reader behind ``load(_:labelColumn:task:featureColumns:as:)`` and
    /// ``parse(_:source:labelColumn:task:featureColumns:as:)``, over UTF-8 bytes.
    static func parse<Scalar: TensorScalar>(
        bytes: [UInt8], source: String, labelColumn: String, task: Task, featureColumns: [String]?, classNames given: [String]? = nil
    ) throws(DataError) -> Dataset<Scalar> {
        var records = Records(bytes: bytes, source: source)
        var fields = [String](), lines = [Int]()
        guard try records.next(fields: &fields, lines: &lines) else { throw .emptyFile(path: source, expected: "a header row and data rows") }
        let header = fields, headerLine = lines.first ?? 1

        let columnIndex = try columnIndices(header, source: source, line: headerLine)
        func column(_ name: String, role: String) throws(DataError) -> Int {
            guard let index = columnIndex[name] else {
                throw .unknownColumn(path: source, column: name, role: role, available: header, suggestion: Spelling.nearest(to: name, in: header))
            }
            return index
        }
        let label = try column(labelColumn, role: "label column")
        var featureIndices = [Int]()
        if let featureColumns {
            for name in featureColumns {
                let index = try column(name, role: "feature column")
                guard index != label else {
                    throw .invalidArgument(
                        name: "feature columns", value: "\(featureColumns)", expected: "columns other than the label column \"\(labelColumn)\"")
                }
                guard !featureIndices.contains(index) else {
                    throw .invalidArgument(
                        name: "feature columns", value: "\(featureColumns)", expected: "each column at most once (\"\(name)\" repeats)")
                }
                featureIndices.append(index)
            }
        } else {
            featureIndices = header.indices.filter { $0 != label }
        }
        guard !featureIndices.isEmpty else { throw .noFeatureColumns(path: source, labelColumn: labelColumn) }

        // features: (samples, featureIndices.count), filled row by row
        var features = [Scalar]()
        var regressionTargets = [Scalar]()
        var labelNames = [String](), labelLines = [Int]()
        var rows = 0
        func number(_ column: Int) throws(DataError) -> Scalar {
            let text = fields[column]
            guard let value: Scalar = Self.number(text) else {
                throw .invalidValue(
                    path: source, line: lines[column], column: column + 1, columnName: header[column], value: text, expected: "a number")
            }
            guard value.isFinite else {
                throw .invalidValue(
                    path: source, line: lines[column], column: column + 1, columnName: header[column], value: text,
                    expected: "a finite number (as \(Scalar.self))")
            }
            return value
        }
        while try records.next(fields: &fields, lines: &lines) {
            guard fields.count == header.count else {
                throw .wrongFieldCount(path: source, line: lines[0], expected: header.count, found: fields.count)
            }
            for column in featureIndices { features.append(try number(column)) }
            switch task {
            case .regression:
                regressionTargets.append(try number(label))
            case .classification:
                guard !fields[label].isEmpty else {
                    throw .invalidValue(
                        path: source, line: lines[label], column: label + 1, columnName: header[label], value: "", expected: "a class label")
                }
                labelNames.append(fields[label])
                labelLines.append(lines[label])
            }
            rows += 1
        }
        guard rows > 0 else { throw .noDataRows(path: source) }

        let featureTensor = Tensor(matrix: features, rows: rows, columns: featureIndices.count)
        let featureNames = featureIndices.map { header[$0] }
        switch task {
        case .regression:
            return Dataset(
                unchecked: featureTensor, targets: Tensor(matrix: regressionTargets, rows: rows, columns: 1),
                labels: nil, classNames: nil, featureNames: featureNames)
        case .classification:
            let classNames = given ?? sortedClassNames(Set(labelNames))
            var index = [String: Int]()
            for (i, name) in classNames.enumerated() { index[name] = i }
            var labels = [Int]()
            labels.reserveCapacity(labelNames.count)
            for (row, name) in labelNames.enumerated() {
                // Without given names every label is a key: the class names were built from the same strings.
                guard let classIndex = index[name] else {
                    throw .invalidValue(
                        path: source, line: labelLines[row], column: label + 1, columnName: header[label], value: name,
                        expected: "one of the training classes (\(classNames.prefix(20).joined(separator: ", ")))")
                }
                labels.append(classIndex)
            }
            return try Dataset.classification(features: featureTensor, labels: labels, classNames: classNames, featureNames: featureNames)
        }
    }

    /// The column of each header name.
    /// - Throws: ``DataError/duplicateColumn(path:line:column:first:second:)`` for a name given twice.
    static func columnIndices(_ header: [String], source: String, line: Int) throws(DataError) -> [String: Int] {
        var columnIndex = [String: Int]()
        for (i, name) in header.enumerated() {
            if let first = columnIndex[name] {
                throw .duplicateColumn(path: source, line: line, column: name, first: first + 1, second: i + 1)
            }
            columnIndex[name] = i
        }
        return columnIndex
    }

    /// The number `text` spells, or nil. A NUL byte is refused outright: the C parser underneath
    /// would stop there and read `5.1<NUL>garbage` as 5.1.
    static func number<Scalar: TensorScalar>(_ text: String) -> Scalar? {
        guard !text.utf8.contains(0) else { return nil }
        return Scalar(text)
    }

    /// Numerically when every name is a finite number ("2" before "10"), else lexicographically.
    static func sortedClassNames(_ names: Set<String>) -> [String] {
        let numbers = names.compactMap { name in Double(name).flatMap { $0.isFinite ? (name, $0) : nil } }
        guard numbers.count == names.count else { return names.sorted() }
        return numbers.sorted { a, b in a.1 != b.1 ? a.1 < b.1 : a.0 < b.0 }.map(\.0)
    }

    /// Records of a CSV text (RFC 4180 with lenient edges): fields split at commas, quoted fields
    /// may hold commas, quotes (`""`) and line breaks, unquoted fields are trimmed of spaces and tabs,
    /// blank lines are skipped, and lines end in LF, CRLF or CR.
    struct Records {
        let bytes: [UInt8]
        let source: String
        private var position = 0
        private var line = 1
        private var field = [UInt8]()

        init(bytes: [UInt8], source: String) {
            self.bytes = bytes
            self.source = source
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { position = 3 }  // a UTF-8 byte-order mark, as spreadsheets write
        }

        private static let comma = UInt8(ascii: ","), quote = UInt8(ascii: "\""), newline = UInt8(ascii: "\n"),
            carriageReturn = UInt8(ascii: "\r"), space = UInt8(ascii: " "), tab = UInt8(ascii: "\t")

        /// Reads the next non-blank record into `fields`, with the 1-based line each field starts
        /// on in `lines`; false at the end of the text.
        mutating func next(fields: inout [String], lines: inout [Int]) throws(DataError) -> Bool {
            while position < bytes.count {
                fields.removeAll(keepingCapacity: true)
                lines.removeAll(keepingCapacity: true)
                var anyQuoted = false
                while true {
                    let quoted = try readField(column: fields.count + 1, lines: &lines)
                    anyQuoted = anyQuoted || quoted
                    fields.append(quoted ? String(decoding: field, as: UTF8.self) : Self.trimmed(field))
                    if position < bytes.count, bytes[position] == Self.comma {
                        position += 1
                        continue
                    }
                    endLine()
                    break
                }
                if fields.count == 1, !anyQuoted, fields[0].isEmpty { continue }  // a blank line
                return true
            }
            return false
        }

        /// Reads one field into `field`, leaving `position` at its separator; returns whether it was quoted.
        private mutating func readField(column: Int, lines: inout [Int]) throws(DataError) -> Bool {
            field.removeAll(keepingCapacity: true)
            lines.append(line)
            var start = position
            while start < bytes.count, bytes[start] == Self.space || bytes[start] == Self.tab { start += 1 }
            guard start < bytes.count, bytes[start] == Self.quote else {
                while position < bytes.count {
                    let b = bytes[position]
                    if b == Self.comma || b == Self.newline || b == Self.carriageReturn { break }
                    field.append(b)
                    position += 1
                }
                return false
            }
            let openingLine = line
            position = start + 1
            while true {
                guard position < bytes.count else {
                    throw .malformedQuote(path: source, line: openingLine, column: column, reason: "a quoted field is never closed")
                }
                let b = bytes[position]
                position += 1
                if b == Self.quote {
                    if position < bytes.count, bytes[position] == Self.quote {
                        field.append(Self.quote)
                        position += 1
                        continue
                    }
                    break
                }
                if b == Self.newline || (b == Self.carriageReturn && (position == bytes.count || bytes[position] != Self.newline)) {
                    line += 1
                }
                field.append(b)
            }
            while position < bytes.count, bytes[position] == Self.space || bytes[position] == Self.tab { position += 1 }
            if position < bytes.count {
                let b = bytes[position]
                guard b == Self.comma || b == Self.newline || b == Self.carriageReturn else {
                    throw .malformedQuote(
                        path: source, line: line, column: column,
                        reason: "unexpected text after the closing quote of a field; a quote inside a quoted field is written \"\"")
                }
            }
            return true
        }

        /// Steps over one line ending (LF, CRLF or CR), if any.
        private mutating func endLine() {
            guard position < bytes.count else { return }
            if bytes[position] == Self.carriageReturn, position + 1 < bytes.count, bytes[position + 1] == Self.newline {
                position += 2
            } else {
                position += 1
            }
            line += 1
        }

        private static func trimmed(_ bytes: [UInt8]) -> String {
            var lower = 0, upper = bytes.count
            while lower < upper, bytes[lower] == space || bytes[lower] == tab { lower += 1 }
            while upper > lower, bytes[upper - 1] == space || bytes[upper - 1] == tab { upper -= 1 }
            return String(decoding: bytes[lower..<upper], as: UTF8.self)
        }
    }
}

extension CSV {
    /// Reads the named numeric columns of a CSV file with a header row, in the order named,
    /// ignoring any other column (for inputs to predict on).
    ///
    ///     // → (rows, columns.count)
    ///
    /// - Throws: ``DataError`` naming the file, and the line and column where it applies: a
    ///   missing or empty file, no data rows, an unknown column (with the closest header name), a
    ///   row with the wrong number of fields, an empty, non-numeric or non-finite value.
    public static func loadFeatures<Scalar: TensorScalar>(
        _ path: String, columns: [String], as: Scalar.Type = Scalar.self
    ) throws(DataError) -> Tensor<Scalar> {
        var records = Records(bytes: try DataFile.bytes(at: path), source: path)
        var fields = [String](), lines = [Int]()
        guard try records.next(fields: &fields, lines: &lines) else { throw .emptyFile(path: path, expected: "a header row and data rows") }
        let header = fields
        let columnIndex = try columnIndices(header, source: path, line: lines.first ?? 1)
        var indices = [Int]()
        for name in columns {
            guard let index = columnIndex[name] else {
                throw .unknownColumn(
                    path: path, column: name, role: "feature column", available: header, suggestion: Spelling.nearest(to: name, in: header))
            }
            indices.append(index)
        }
        var values = [Scalar](), rows = 0
        while try records.next(fields: &fields, lines: &lines) {
            guard fields.count == header.count else {
                throw .wrongFieldCount(path: path, line: lines[0], expected: header.count, found: fields.count)
            }
            for column in indices {
                guard let value: Scalar = number(fields[column]), value.isFinite else {
                    throw .invalidValue(
                        path: path, line: lines[column], column: column + 1, columnName: header[column],
                        value: fields[column], expected: "a finite number (as \(Scalar.self))")
                }
                values.append(value)
            }
            rows += 1
        }
        guard rows > 0 else { throw .noDataRows(path: path) }
        return try! Tensor(shape: [rows, indices.count], scalars: values)  // rows × columns values, by construction
    }
}
