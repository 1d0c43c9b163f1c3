// The plain-text tables of the reports (gradient checks, the neuron's and a unit's explanations).

/// Rows with each column padded to its widest cell, indented by two spaces; a row may be shorter
/// than the others, and the last cell of each row is left unpadded.
func paddedRows(_ cells: [[String]]) -> [String] {
    let columns = cells.map(\.count).max() ?? 0
    let widths = (0..<columns).map { j in cells.map { $0.count > j ? $0[j].count : 0 }.max() ?? 0 }
    return cells.map { row in
        "  "
            + row.enumerated().map { j, cell in
                j == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[j] - cell.count + 2)
            }.joined()
    }
}
