import Foundation
import Testing

@Suite("neuron's error messages escape control characters from outside")
struct EscapedMessagesTests {
    @Test("A data path with a bell and an escape sequence is shown escaped, exit 2: the terminal neither rings nor turns red")
    func controlsInAPath() throws {
        let scratch = try scratchDirectory("escaped")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let config = scratch + "/config.yaml"
        try Data(#"model: {layers: [{units: 2}, {units: 1}]}\#ndata: {kind: csv, path: "a\x07b\x1b[31mred.csv", labelColumn: y}\#n"#.utf8)
            .write(to: URL(fileURLWithPath: config))
        let result = try runNeuron(["train", config, "--output", scratch + "/run"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("no such file 'a\\u{07}b\\u{1B}[31mred.csv'"), "\(result.stderr)")
        #expect(!result.stderr.unicodeScalars.contains { $0.value == 0x07 || $0.value == 0x1B })
    }
}
