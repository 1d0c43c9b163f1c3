import Testing
@testable import NeuronCore

@Suite("Metrics")
struct MetricsTests {
    @Test("Confusion matrix and accuracy by hand")
    func byHand() throws {
        var m = ConfusionMatrix(classCount: 3)
        let predictions = try Tensor<Float>(rows: [[0.9, 0.1, 0], [0.2, 0.7, 0.1], [0.5, 0.5, 0], [0, 0.4, 0.6]])
        m.add(predictions: predictions, labels: [0, 2, 1, 2])
        // Row 3 ties 0.5/0.5: the first (class 0) wins.
        #expect(m.counts == [[1, 0, 0], [1, 0, 0], [0, 1, 1]])
        #expect(m.total == 4 && m.correct == 2 && m.accuracy == 0.5)
        #expect(m.table(classNames: ["cat", "dog", "eel"]).contains("dog"))
        #expect(ConfusionMatrix(classCount: 2).accuracy == 0)
    }
}
