import Foundation
import Testing

@testable import NeuronCore  // GradientCheckReport's memberwise init is internal to NeuronCore
@testable import NeuronTerminal
@testable import NeuronTraining

@MainActor
@Suite("Progress renderer")
struct ProgressRendererTests {
    let renderer = ProgressRenderer()

    /// The documented example line's state: running, with a loss, an average and a validation
    /// accuracy, but no validation loss.
    static func runningState() -> TrainingViewState {
        var state = TrainingViewState()
        state.phase = .running
        state.title = "Network[Dense(2→4, tanh), Dense(4→3, softmax)]"
        (state.progress.epoch, state.progress.totalEpochs, state.progress.step, state.progress.totalSteps) = (3, 20, 1_234, 9_380)
        (state.loss, state.smoothedLoss) = (0.41234, 0.43009)
        state.validationAccuracy = 0.87124
        state.samplesPerSecond = 52_340.4
        state.secondsRemaining = 65
        state.learningRate = 0.01
        state.progress.seed = 42
        return state
    }

    /// Docs/Reference.md §1's reference case, x 0.4, w 0.5, b 0.6, t 0.7.
    static let referenceNeuron = TrainingViewState.NeuronRow(
        input: 0.4, weight: 0.5, bias: 0.6, target: 0.7, net: 0.8, output: 0.6640367702678491,
        error: -0.035963229732150825, loss: 0.0006466769463837285,
        outputGradient: -0.035963229732150825, netGradient: -0.020105429430100793,
        weightGradient: -0.008042171772040318, inputGradient: -0.010052714715050396)

    /// A check of two tensors in which the second layer's bias fails on one of its 3 entries.
    static let failingCheck = GradientCheckReport(
        network: "Network[Dense(2→4, tanh), Dense(4→3, softmax)]", method: "central", eps: 1e-6,
        absoluteTolerance: 1e-5, relativeTolerance: 1e-3,
        tensors: [
            .init(
                name: "layers.0.weight", layer: 0, tensor: "weight", shape: [2, 4], checked: 8, total: 8,
                maxAbsoluteError: 2e-10, maxRelativeError: 3e-9, failures: 0),
            .init(
                name: "layers.1.bias", layer: 1, tensor: "bias", shape: [3], checked: 3, total: 3,
                maxAbsoluteError: 0.25, maxRelativeError: 0.5, failures: 1),
        ],
        worst: [
            .init(
                name: "layers.1.bias", layer: 1, tensor: "bias", index: 2, position: [2], analytic: 0.25, faux: 0.5,
                absoluteError: 0.25, relativeError: 0.5, passed: false, severity: 24_975)
        ])

    /// Two layers (a saturating tanh, a softmax that has no saturation), the neuron's row, a
    /// failing gradient check and three ignored events, the two most recent kept.
    static func fullState() -> TrainingViewState {
        var state = runningState()
        state.validationLoss = 0.39504
        state.layers = [
            LayerStatistics(index: 0, title: "Dense(2→4, tanh)", weightNorm: 1.23456, gradientNorm: 0.0123, saturation: 0.125),
            LayerStatistics(index: 1, title: "Dense(4→3, softmax)", weightNorm: 0.5, gradientNorm: 2.5e-5, saturation: nil),
        ]
        state.neuron = referenceNeuron
        state.gradientCheck = failingCheck
        state.ignoredEventCount = 3
        state.ignoredEvents = [.init(event: .start, phase: .running), .init(event: .reset, phase: .running)]
        return state
    }

    // MARK: - Every phase, through a preview view model

    @Test(
        "Every phase renders through a preview, its details (only its own) first on the line and in the report",
        arguments: [
            (TrainingViewState.Phase.idle, "idle"),
            (.running, "running"),
            (.paused, "paused"),
            (.finished, "finished"),
            (.stopped, "stopped"),
            (.diverged, "diverged at step 37 in layers.1"),
            (.failed, "failed: could not read data/train.csv"),
        ])
    func everyPhase(phase: TrainingViewState.Phase, text: String) {
        let preview = PreviewViewModel<TrainingEvent, TrainingViewState>(Self.runningState())
        preview.viewState.phase = phase
        (preview.viewState.divergedStep, preview.viewState.divergedAt) = (37, "layers.1")
        preview.viewState.failure = "could not read data/train.csv"
        let line = renderer.line(preview.viewState)
        #expect(line.hasPrefix(text + "  epoch 3/20  step 1,234/9,380"), "\(line)")
        #expect(renderer.report(preview.viewState).contains("\n  phase          \(text)\n"))
        #expect(preview.receivedEvents.isEmpty, "rendering sends no events")
    }

    @Test("The documented example line")
    func exampleLine() {
        #expect(
            renderer.line(Self.runningState())
                == "running  epoch 3/20  step 1,234/9,380  loss 0.4123 (avg 0.4301)  val acc 0.8712  52,340 samples/s  1m 05s left")
    }

    @Test("A resumed run's summary line gives the whole run's training time and this segment's; a run in one segment, its time alone")
    func resumedTime() throws {
        var state = Self.runningState()
        (state.phase, state.progress.epoch, state.progress.step) = (.finished, 20, 9_380)
        var summary = RunSummary(precision: "float", blas: "none", trainingSeconds: 12.14)
        let once = try #require(renderer.endOfRun(RunEnd(status: 0, state: state, summary: summary), directory: "runs/x", configPath: "x.yaml"))
        #expect(once.hasPrefix("Network[Dense(2→4, tanh), Dense(4→3, softmax)]: finished after 20 epochs, 9380 steps in 12.1 s (seed 42)\n"))
        summary.segmentSeconds = 6.31
        let resumed = try #require(renderer.endOfRun(RunEnd(status: 0, state: state, summary: summary), directory: "runs/x", configPath: "x.yaml"))
        #expect(
            resumed.hasPrefix(
                "Network[Dense(2→4, tanh), Dense(4→3, softmax)]: finished after 20 epochs, 9380 steps in 12.1 s (6.3 s of it in this segment) (seed 42)\n"
            ))
    }

    @Test("Nil fields, and counts with nothing planned or done, are left out")
    func nilFieldsLeftOut() {
        var state = TrainingViewState()
        #expect(renderer.line(state) == "idle")
        state.progress.totalEpochs = 20
        state.smoothedLoss = 0.25
        #expect(renderer.line(state) == "idle  epoch 0/20  loss avg 0.2500")
        state.progress.step = 17
        state.validationLoss = 0.5
        #expect(renderer.line(state) == "idle  epoch 0/20  step 17  loss avg 0.2500  val loss 0.5000")

        let report = renderer.report(TrainingViewState())
        #expect(
            report == """
                  phase          idle
                  learning rate  0.0
                ignored events  0
                """)
        for absent in ["epoch", "step", "loss", "validation", "speed", "layers", "neuron", "gradient check"] {
            #expect(!report.contains(absent), "\(absent) in\n\(report)")
        }
    }

    @Test("A failure message with line breaks stays on one line")
    func failureOnOneLine() {
        var state = TrainingViewState()
        state.fail("bad config\nline 3: unknown key")
        #expect(renderer.line(state) == "failed: bad config line 3: unknown key")
    }

    // MARK: - Number formatting, worked by hand

    @Test("Losses to 4 decimals, scientific below 1e-3")
    func losses() {
        #expect(ProgressRenderer.number(0.41234) == "0.4123")
        #expect(ProgressRenderer.number(0.43009) == "0.4301")
        #expect(ProgressRenderer.number(2.5) == "2.5000")
        #expect(ProgressRenderer.number(0.001) == "0.0010")
        #expect(ProgressRenderer.number(0) == "0.0000")
        #expect(ProgressRenderer.number(1.234567e-5) == "1.23e-05")
        #expect(ProgressRenderer.number(-0.00098765) == "-9.88e-04")
        #expect(ProgressRenderer.number(.nan) == "nan")
        #expect(ProgressRenderer.number(-.infinity) == "-inf")

        var state = TrainingViewState()
        state.loss = 1.234567e-5
        #expect(renderer.line(state) == "idle  loss 1.23e-05")
    }

    @Test("Counts with thousands separators")
    func counts() {
        #expect(ProgressRenderer.count(0) == "0")
        #expect(ProgressRenderer.count(999) == "999")
        #expect(ProgressRenderer.count(1_000) == "1,000")
        #expect(ProgressRenderer.count(9_380) == "9,380")
        #expect(ProgressRenderer.count(1_234_567) == "1,234,567")
        #expect(ProgressRenderer.count(-12_345) == "-12,345")
        #expect(ProgressRenderer.count(52_340.4) == "52,340")
        #expect(ProgressRenderer.count(999.5) == "1,000")
    }

    @Test("Durations: seconds, then minutes and seconds, then hours and minutes")
    func durations() {
        #expect(ProgressRenderer.duration(0) == "0s")
        #expect(ProgressRenderer.duration(44.6) == "45s")
        #expect(ProgressRenderer.duration(59.4) == "59s")
        #expect(ProgressRenderer.duration(60) == "1m 00s")
        #expect(ProgressRenderer.duration(65) == "1m 05s")
        #expect(ProgressRenderer.duration(3_599.4) == "59m 59s")
        #expect(ProgressRenderer.duration(3_599.6) == "1h 00m")
        #expect(ProgressRenderer.duration(2 * 3_600 + 3 * 60 + 59) == "2h 03m")
        #expect(ProgressRenderer.duration(.infinity) == "?")
        #expect(ProgressRenderer.duration(-1) == "?")
    }

    @Test("Percentages to one decimal")
    func percentages() {
        #expect(ProgressRenderer.percent(0.125) == "12.5%")
        #expect(ProgressRenderer.percent(0) == "0.0%")
        #expect(ProgressRenderer.percent(1) == "100.0%")
        #expect(ProgressRenderer.percent(0.00049) == "0.0%")
    }

    // MARK: - The report

    @Test("The report holds the layers, the neuron's row, the gradient check and the ignored events")
    func fullReport() {
        let report = renderer.report(Self.fullState())
        let expected = """
            Network[Dense(2→4, tanh), Dense(4→3, softmax)]
              phase          running
              epoch          3/20
              step           1,234/9,380
              loss           0.4123 (avg 0.4301)
              validation     loss 0.3950, accuracy 0.8712
              speed          52,340 samples/s, 1m 05s left
              learning rate  0.01
              seed           42
            layers
              #  layer                weight norm  gradient norm  saturation
              0  Dense(2→4, tanh)          1.2346         0.0123       12.5%
              1  Dense(4→3, softmax)       0.5000       2.50e-05           -
            neuron
              input x          0.4
              weight w         0.5
              bias b           0.6
              target t         0.7
              net              0.8
              output           0.6640367702678491
              error            -0.035963229732150825
              loss             0.0006466769463837285
              dL/doutput       -0.035963229732150825
              dL/dnet = dL/db  -0.020105429430100793
              dL/dw            -0.008042171772040318
              dL/dx            -0.010052714715050396
            gradient check  FAIL  max relative error 0.5000
              failing layers.1.bias: 1 of 3 entries out of tolerance, max relative error 0.5000
            ignored events  3
              start while running
              reset while running
            """
        #expect(report == expected, "\n\(report)")
        #expect(!report.contains("layers.0.weight"), "passing tensors are not listed")
    }

    @Test("A passing gradient check says PASS with its largest relative error")
    func passingCheck() {
        var state = TrainingViewState()
        var check = Self.failingCheck
        check.tensors[1].failures = 0
        check.tensors[1].maxRelativeError = 4.2e-7
        state.gradientCheck = check
        let report = renderer.report(state)
        #expect(report.contains("\ngradient check  PASS  max relative error 4.20e-07\n"), "\(report)")
        #expect(!report.contains("failing"))
    }

    // MARK: - JSON

    @Test("jsonLine decodes back to the same values, bit for bit")
    func jsonRoundTrip() throws {
        var state = Self.fullState()
        state.loss = 0.1000000000000007
        state.smoothedLoss = 0.1 + 0.2
        state.validationLoss = .leastNonzeroMagnitude  // 5e-324, the smallest subnormal
        state.samplesPerSecond = 52_340.123456789
        state.secondsRemaining = 65.5
        state.learningRate = 1e-3
        state.progress.seed = .max
        let line = renderer.jsonLine(state)
        #expect(!line.contains("\n"))
        #expect(line.hasPrefix(#"{"epoch":3,"ignoredEventCount":3,"learningRate":0.001,"loss":0.1000000000000007,"#), "sorted keys: \(line)")

        // The line is the state's progress: decoded, it is the state without its lists.
        let decoded = try TrainingViewState.decoder().decode(TrainingViewState.self, from: Data(line.utf8))
        var progress = state
        (progress.layers, progress.records, progress.ignoredEvents, progress.neuron) = ([], [], [], nil)
        (progress.lossHistory, progress.gradientCheck) = (LossHistory(), nil)
        #expect(decoded == progress)
        #expect(decoded.loss?.bitPattern == 0.1000000000000007.bitPattern)
        #expect(decoded.progress.seed == .max && decoded.ignoredEventCount == 3)
    }

    @Test("jsonLine leaves nil values out, and names the divergence or the failure")
    func jsonPhases() throws {
        var state = TrainingViewState()
        (state.phase, state.divergedStep, state.divergedAt) = (.diverged, 37, "layers.1")
        state.loss = .nan
        let diverged = renderer.jsonLine(state)
        for absent in ["smoothedLoss", "validationLoss", "validationAccuracy", "samplesPerSecond", "secondsRemaining", "failure"] {
            #expect(!diverged.contains("\"\(absent)\""), "\(absent) in \(diverged)")
        }
        #expect(diverged.contains(#""phase":"diverged""#))
        let mirror = try TrainingViewState.decoder().decode(TrainingViewState.self, from: Data(diverged.utf8))
        #expect(mirror.phase == .diverged)
        #expect(mirror.divergedStep == 37)
        #expect(mirror.divergedAt == "layers.1")
        #expect(mirror.loss?.isNaN == true, "NaN written as the string \"NaN\": \(diverged)")
        // A state with no seed claims none (the single neuron's run makes no random choice).
        #expect(mirror.progress.epoch == 0 && mirror.title == "" && mirror.progress.seed == nil)

        state = TrainingViewState()
        state.fail("could not read data/train.csv")
        let failed = renderer.jsonLine(state)
        #expect(!failed.contains("\"loss\"") && !failed.contains("diverged"))
        let failure = try TrainingViewState.decoder().decode(TrainingViewState.self, from: Data(failed.utf8))
        #expect(failure.phase == .failed && failed.contains(#""phase":"failed""#))
        #expect(failure.failure == "could not read data/train.csv", "slashes unescaped: \(failed)")
    }

    // MARK: - Preview children

    @Test("A preview parent hands out preview children that record events and run nothing")
    func previewChildren() {
        let state = Self.fullState()
        let preview = PreviewViewModel<TrainingEvent, TrainingViewState>(state)
        let layer: PreviewViewModel<LayerEvent, LayerViewState> = preview.layer(1)
        #expect(layer.viewState == state.layer(1))
        #expect(layer.viewState.statistics.title == "Dense(4→3, softmax)")

        layer.handle(event: .checkGradients)
        #expect(layer.receivedEvents == [.checkGradients])
        #expect(layer.viewState == state.layer(1), "a preview child runs no check")
        #expect(preview.receivedEvents.isEmpty, "nothing reaches the parent")
        #expect(preview.viewState == state, "nothing ran")
    }
}
