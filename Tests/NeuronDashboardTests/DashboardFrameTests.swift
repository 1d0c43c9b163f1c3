import Foundation
import NeuronCore
import NeuronTraining
import Testing

@testable import NeuronDashboard

@Suite("State out: the frame a page receives")
struct DashboardFrameTests {
    @Test("The neuron's reference row, the check, the ignored events and non-finite numbers travel in the frame")
    func frame() throws {
        var state = TrainingViewState()
        (state.phase, state.divergedStep, state.divergedAt, state.progress.step, state.progress.seed) = (.diverged, 3, "layers.1 output", 3, .max)
        state.loss = .nan
        state.neuron = .init(
            input: 0.4, weight: 0.5, bias: 0.6, target: 0.7, net: 0.8, output: 0.6640367702678491, error: -0.035963229732150825,
            loss: 0.0006466769463837285, outputGradient: -0.035963229732150825, netGradient: -0.020105429430100793,
            weightGradient: -0.008042171772040318, inputGradient: -0.010052714715050396)
        state.ignoredEvents = [.init(event: .start, phase: .running), .init(event: .step(count: 5), phase: .running)]
        state.ignoredEventCount = 2
        let json = String(
            decoding: DashboardFrame(state, source: "live", layouts: [], histories: [], engineAvailable: false, acceptedEvents: []).json(),
            as: UTF8.self)
        #expect(json.contains(#""phase":"diverged""#) && json.contains(#""phaseText":"diverged at step 3 in layers.1 output""#))
        #expect(json.contains(#""loss":"NaN""#))
        #expect(json.contains(#""seed":"18446744073709551615""#))  // beyond a JavaScript number's integers
        #expect(json.contains(#""netGradient":-0.020105429430100793"#) && json.contains(#""output":0.6640367702678491"#))
        #expect(json.contains(#""ignoredEvents":[{"event":"start","phase":"running"},{"count":5,"event":"step","phase":"running"}]"#))
    }

    @Test("A text model's sampled lines travel in the frame, each marked when it is a training line")
    func sampledLines() throws {
        var state = TrainingViewState()
        state.sampledLines = [SampledLine(text: "quib", inTraining: false), SampledLine(text: "the", inTraining: true)]
        let json = String(
            decoding: DashboardFrame(state, source: "live", layouts: [], histories: [], engineAvailable: false, acceptedEvents: []).json(),
            as: UTF8.self)
        #expect(json.contains(#""sampledLines":[{"inTraining":false,"text":"quib"},{"inTraining":true,"text":"the"}]"#), "\(json)")
    }

    @Test("The gradient check travels with shapes and positions as the checkpoint stores the tensors: (outputs, inputs)")
    func gradientCheckInFileLayout() throws {
        // Dense(3→2): the engine holds its weight as (3, 2), the checkpoint as (2, 3).
        let network = try Network<Double>(features: 3, layers: [(2, .tanh)], loss: .halfSquaredError, seed: 4)
        let x = try Tensor<Double>(shape: [1, 3], scalars: [0.1, -0.4, 0.7]), t = try Tensor<Double>(shape: [1, 2], scalars: [0.2, -0.1])
        let report = try GradientCheck(worstCount: 8).run(on: network, inputs: x, targets: t)
        #expect(report.tensors.first?.shape == [3, 2])
        var state = TrainingViewState()
        state.gradientCheck = report
        let frame = DashboardFrame(state, source: "live", layouts: [], histories: [], engineAvailable: false, acceptedEvents: [])
        #expect(frame.state.gradientCheck?.tensors.map(\.shape) == [[2, 3], [2]])
        for (inEngine, inFrame) in zip(report.worst, try #require(frame.state.gradientCheck).worst) where inEngine.name == "layers.0.weight" {
            #expect(
                inFrame.position == [inEngine.position[1], inEngine.position[0]] && inFrame.index == inFrame.position[0] * 3 + inFrame.position[1])
        }
    }

    @Test("The frame names the controls the view model accepts, and no ‖∂L/∂w‖ where there is no gradient, saying why")
    @MainActor
    func acceptedEventsAndGradients() throws {
        let network = try Network<Double>(features: 2, layers: [(4, .tanh), (1, .tanh)], loss: .halfSquaredError, seed: 1)
        let engine = try NetworkTrainingEngine(
            network: network, optimizer: try SGD<Double>(learningRate: 0.5), dataset: Synthetic.xor(as: Double.self), batchSize: 4,
            epochs: 10, seed: 1)
        let idle = TrainingViewModel(engine: engine)
        let fresh = DashboardBinding(model: idle, engine: { idle.engine }).frame()
        #expect(fresh.acceptedEvents == [.start, .stop, .reset, .step, .checkGradients])
        #expect(fresh.gradientNote == "no step taken yet")

        // A state that has stepped carries its gradient norms live, none from files.
        var state = TrainingViewState()
        (state.phase, state.progress.step, state.progress.totalSteps) = (.stopped, 5, 10)
        state.layers = [LayerStatistics(index: 0, title: "Dense(2→4, tanh)", weightNorm: 1.5, gradientNorm: 0.25, saturation: nil)]
        let live = DashboardFrame(state, source: "live", layouts: [], histories: [], engineAvailable: true, acceptedEvents: [.resume])
        #expect(live.gradientNote == nil && live.acceptedEvents == [.resume])
        #expect(String(decoding: live.json(), as: UTF8.self).contains(#""acceptedEvents":["resume"]"#))
        let files = DashboardFrame(state, source: "files", layouts: [], histories: [], engineAvailable: true, acceptedEvents: [])
        #expect(files.gradientNote == "a checkpoint holds the weights, not a step's gradient")
    }

    @Test("The loss curve's points are steps live and epochs from a run's files (metrics.csv keeps no step's loss)")
    func lossPer() throws {
        let state = TrainingViewState()
        let live = DashboardFrame(state, source: "live", layouts: [], histories: [], engineAvailable: false, acceptedEvents: [])
        let files = DashboardFrame(state, source: "files", layouts: [], histories: [], engineAvailable: false, acceptedEvents: [])
        #expect(live.lossPer == "step" && files.lossPer == "epoch")
        #expect(String(decoding: files.json(), as: UTF8.self).contains(#""lossPer":"epoch""#))
    }

    @Test("Only a live run's last frame carries its ending, with the summary's final evaluation when there is one")
    func ending() throws {
        var state = TrainingViewState()
        state.phase = .finished
        let plain = String(
            decoding: DashboardFrame(state, source: "live", layouts: [], histories: [], engineAvailable: false, acceptedEvents: []).json(),
            as: UTF8.self)
        #expect(!plain.contains(#""ending":"#))
        var summary = RunSummary(precision: "float", blas: "none", trainingSeconds: 72)
        (summary.evaluatedOn, summary.evaluationLoss, summary.lossUnit) = ("test", 1.8413, RunSummary.perCharacter)
        let last = String(
            decoding: DashboardFrame(
                state, source: "live", layouts: [], histories: [], engineAvailable: false, acceptedEvents: [], ending: .init(summary: summary)
            ).json(), as: UTF8.self)
        #expect(last.contains(#""ending":{"summary":{"#) && last.contains(#""evaluationLoss":1.8413"#) && last.contains(#""trainingSeconds":72"#))
        #expect(last.contains(#""lossUnit":"nats per character, a line's end counted as one""#))
        let diverged = String(
            decoding: DashboardFrame(
                state, source: "live", layouts: [], histories: [], engineAvailable: false, acceptedEvents: [], ending: .init(summary: nil)
            ).json(), as: UTF8.self)
        #expect(diverged.contains(#""ending":{}"#))
    }

    @Test("A layer's curve keeps at most its capacity, halving its resolution when full")
    func history() {
        var history = LayerHistory(capacity: 4)
        for step in 1...9 {
            history.append(step: step, LayerStatistics(index: 0, title: "", weightNorm: Double(step), gradientNorm: 1, saturation: nil))
        }
        #expect(history.steps.count <= 4 && history.steps.first == 1 && history.saturations.allSatisfy { $0 == -1 })
        #expect(history.weightNorms == history.steps.map(Double.init))
        history.append(step: history.steps.last!, LayerStatistics(index: 0, title: "", weightNorm: 99, gradientNorm: 1, saturation: 0.5))
        #expect(history.weightNorms.last == 99 && history.saturations.last == 0.5)  // the same step replaced, not added
    }

    @Test("At epoch 100,000 a frame carries 500 records: the newest 100 whole, every k-th before them from the first")
    func boundedRecords() throws {
        var state = TrainingViewState()
        state.records = (1...100_000).map {
            EpochRecord(epoch: $0, step: $0 * 10, trainingLoss: 1 / Double($0), trainingAccuracy: nil, validationLoss: nil, validationAccuracy: 0.5)
        }
        let frame = DashboardFrame(state, source: "live", layouts: [], histories: [], engineAvailable: false, acceptedEvents: [])
        #expect(frame.recordCount == 100_000)
        let records = frame.state.records
        #expect(records.count <= DashboardFrame.recordLimit && records.count > DashboardFrame.recordLimit - 10)
        #expect(records.first?.epoch == 1)
        #expect(records.suffix(100).map(\.epoch) == Array(99_901...100_000))
        let older = records.dropLast(100).map(\.epoch)
        let strides = Set(zip(older, older.dropFirst()).map { $1 - $0 })
        #expect(strides.count == 1, "older records every \(strides) epochs")
        #expect(zip(records, records.dropFirst()).allSatisfy { $0.epoch < $1.epoch })
        // 100,000 records as JSON take about 17.6 MB; the frame keeps under 150 KB of them.
        let json = frame.json()
        #expect(json.count < 150_000, "\(json.count) bytes")
        // Under the limit, every record travels.
        let short = Array(state.records.prefix(DashboardFrame.recordLimit))
        #expect(EpochRecord.bounded(short, limit: DashboardFrame.recordLimit) == short)
    }
}
