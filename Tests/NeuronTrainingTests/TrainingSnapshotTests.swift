import NeuronCore
import Testing

@testable import NeuronTraining

@Suite("TrainingSnapshot: what an engine reports, in plain numbers")
struct TrainingSnapshotTests {
    @Test("The progress part is the engine's counters and records")
    func progress() throws {
        var engine = try xorEngine(epochs: 10, learningRate: 0.25, seed: 3)
        for _ in 0..<4 { _ = engine.step() }
        let snapshot = TrainingSnapshot(progressOf: engine)
        #expect(snapshot.title == engine.title)
        #expect(snapshot.progress == RunProgress(epoch: 4, totalEpochs: 10, step: 4, totalSteps: 10, seed: 3))
        #expect(snapshot.learningRate == 0.25 && snapshot.records == engine.records && snapshot.records.count == 4)
        #expect(snapshot.layers.isEmpty && snapshot.neuron == nil && snapshot.validationLoss == nil)
    }
}
