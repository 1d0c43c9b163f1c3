import Foundation
import NeuronCore
import NeuronTraining
import Synchronization
import Testing

@testable import NeuronDashboard

/// Serves `model` on a free loopback port for the length of `body`, with 60 s for each request and
/// write instead of 5 and 10: these tests are about routes, not deadlines, and in the full suite
/// other tests' work can hold the server's socket pool (an actor on the cooperative pool) for longer.
@MainActor
private func serving<Model: TrainingViewModeling>(
    _ model: Model, engine: @escaping @MainActor () -> (any TrainingEngine)? = { nil },
    _ body: (DashboardServer) async throws -> Void
) async throws {
    var limits = DashboardLimits()
    (limits.requestSeconds, limits.writeSeconds) = (60, 60)
    let server = try await DashboardServer.start(binding: DashboardBinding(model: model, engine: engine), limits: limits)
    do {
        try await body(server)
    } catch {
        await server.stop()
        throw error
    }
    await server.stop()
}

/// One request, sent from a thread of its own (`off`). The answer may wait 60 s: in the full suite
/// the main actor is shared with the training-session tests.
private func fetch(
    _ server: DashboardServer, method: String = "GET", _ path: String, token: Bool = true, headers: [String: String] = [:],
    body: String = "", until: String? = nil, timeout: Double = 60
) async throws -> RawHTTP.Answer {
    let port = server.port
    let target = token ? path + (path.contains("?") ? "&" : "?") + "token=\(server.gate.token)" : path
    return try await off {
        try RawHTTP.request(port: port, method: method, path: target, headers: headers, body: body, until: until, timeout: timeout)
    }
}

private let json = ["Content-Type": "application/json"]

/// A clock whose sleeps end at once, moving its time on by what was slept: a wait measured on it
/// says how long it would have been, on any machine.
private final class SkippingClock: Clock, Sendable {
    struct Instant: InstantProtocol {
        var sinceStart: Duration
        func advanced(by duration: Duration) -> Self { Self(sinceStart: sinceStart + duration) }
        func duration(to other: Self) -> Duration { other.sinceStart - sinceStart }
        static func < (a: Self, b: Self) -> Bool { a.sinceStart < b.sinceStart }
    }

    private let slept = Mutex(Duration.zero)
    var now: Instant { Instant(sinceStart: slept.withLock { $0 }) }
    var minimumResolution: Duration { .nanoseconds(1) }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        slept.withLock { $0 = max($0, deadline.sinceStart) }
        await Task.yield()
    }
}

@MainActor
private func previewState(phase: TrainingViewState.Phase = .running, step: Int = 7) -> TrainingViewState {
    var state = TrainingViewState()
    (state.phase, state.title, state.progress.step, state.progress.totalSteps) = (phase, "Network[Dense(2→3, tanh), Dense(3→1, tanh)]", step, 100)
    state.loss = 0.25
    state.layers = [
        LayerStatistics(index: 0, title: "Dense(2→3, tanh)", weightNorm: 1.5, gradientNorm: 0.01, saturation: 0.2),
        LayerStatistics(index: 1, title: "Dense(3→1, tanh)", weightNorm: 0.5, gradientNorm: 0.02, saturation: nil),
    ]
    return state
}

@Suite("The dashboard server: routes, the gate, the event stream, events in", .serialized)
@MainActor
struct DashboardServerTests {
    @Test("The page, the state and the routes answer with the token, and nothing answers without it")
    func routes() async throws {
        let model = PreviewViewModel<TrainingEvent, TrainingViewState>(previewState())
        try await serving(model) { server in
            #expect(server.url == "http://127.0.0.1:\(server.port)/?token=\(server.gate.token)")
            let page = try await fetch(server, "/")
            #expect(page.status == 200 && page.body.contains("<title>Neuron dashboard</title>"))
            #expect(page.head.contains("Content-Security-Policy: default-src 'none'"))
            #expect(page.head.contains("Referrer-Policy: no-referrer"))
            let state = try await fetch(server, "/api/state")
            #expect(state.status == 200 && state.head.contains("application/json"))
            let frame = try JSONSerialization.jsonObject(with: Data(state.body.utf8)) as? [String: Any]
            #expect(frame?["phase"] as? String == "running" && frame?["step"] as? Int == 7)
            #expect((frame?["layers"] as? [Any])?.count == 2)

            for path in ["/", "/events", "/api/state", "/api/explain?layer=0&unit=0", "/api/weights?layer=0", "/nope"] {
                #expect(try await fetch(server, path, token: false).status == 403, "\(path)")
                #expect(try await fetch(server, path + (path.contains("?") ? "&" : "?") + "token=wrong", token: false).status == 403)
            }
            #expect(try await fetch(server, method: "POST", "/api/event", token: false, headers: json, body: #"{"event":"stop"}"#).status == 403)
            #expect(try await fetch(server, "/nope").status == 404)
            #expect(try await fetch(server, method: "POST", "/api/state").status == 405)
            #expect(try await fetch(server, "/api/event").status == 405)
            // While the view model holds no engine (a run owns it) there is nothing to explain yet.
            let explain = try await fetch(server, "/api/explain?layer=0&unit=1")
            #expect(explain.status == 409 && explain.body.contains("pause it"))
            #expect(try await fetch(server, "/api/explain?layer=x").status == 400)
            #expect(model.receivedEvents.isEmpty)
        }
    }

    @Test("Requests from another origin, another site or for another host are refused, token or not")
    func crossOrigin() async throws {
        let model = PreviewViewModel<TrainingEvent, TrainingViewState>(previewState())
        try await serving(model) { server in
            let evil = try await fetch(
                server, method: "POST", "/api/event", headers: json.merging(["Origin": "http://evil.example"]) { $1 }, body: #"{"event":"stop"}"#)
            #expect(evil.status == 403 && evil.body.contains("cross-origin request from http://evil.example"))
            let site = try await fetch(
                server, method: "POST", "/api/event", headers: json.merging(["Sec-Fetch-Site": "cross-site"]) { $1 }, body: #"{"event":"stop"}"#)
            #expect(site.status == 403)
            let rebound = try await fetch(server, "/api/state", headers: ["Host": "rebind.example:\(server.port)"])
            #expect(rebound.status == 403 && rebound.body.contains("request for host"))
            #expect(model.receivedEvents.isEmpty)
            // The page's own origin passes.
            let own = try await fetch(
                server, method: "POST", "/api/event",
                headers: json.merging(["Origin": "http://127.0.0.1:\(server.port)", "Sec-Fetch-Site": "same-origin"]) { $1 },
                body: #"{"event":"stop"}"#)
            #expect(own.status == 200)
            #expect(model.receivedEvents == [.stop])
        }
    }

    @Test("Each event posted reaches the view model as its TrainingEvent; bad bodies do not")
    func events() async throws {
        let model = PreviewViewModel<TrainingEvent, TrainingViewState>(previewState())
        try await serving(model) { server in
            for body in [#"{"event":"pause"}"#, #"{"event":"resume"}"#, #"{"event":"step","count":5}"#, #"{"event":"checkGradients"}"#] {
                #expect(try await fetch(server, method: "POST", "/api/event", headers: json, body: body).status == 200)
            }
            #expect(model.receivedEvents == [.pause, .resume, .step(count: 5), .checkGradients])
            #expect(
                try await fetch(server, method: "POST", "/api/event", headers: ["Content-Type": "text/plain"], body: #"{"event":"stop"}"#).status
                    == 415)
            let bad = try await fetch(server, method: "POST", "/api/event", headers: json, body: #"{"event":"step","count":-1}"#)
            #expect(bad.status == 400 && bad.body.contains("step needs a count"))
            #expect(try await fetch(server, method: "POST", "/api/event", headers: json, body: "pause").status == 400)
            #expect(model.receivedEvents.count == 4)
        }
    }

    @Test("The event stream sends the state at once, then each new state")
    func stream() async throws {
        let model = PreviewViewModel<TrainingEvent, TrainingViewState>(previewState())
        try await serving(model) { server in
            async let answer = fetch(server, "/events", until: #""step":42"#)
            try await Task.sleep(for: .milliseconds(500))
            model.viewState = previewState(phase: .paused, step: 42)
            let events = try await answer
            #expect(events.status == 200 && events.head.contains("text/event-stream"))
            #expect(events.body.contains(#""phase":"running""#) && events.body.contains(#""step":7"#))
            #expect(events.body.contains(#""phase":"paused""#) && events.body.contains(#""step":42"#))
        }
    }

    @Test("A run's end is each connected page's last frame (final state, test evaluation, nothing accepted), sent before the server closes")
    func endReachesPage() async throws {
        let model = PreviewViewModel<TrainingEvent, TrainingViewState>(previewState(step: 99))
        var limits = DashboardLimits()
        (limits.requestSeconds, limits.writeSeconds) = (60, 60)
        let server = try await DashboardServer.start(binding: DashboardBinding(model: model, engine: { nil }), limits: limits)
        let (port, token) = (server.port, server.gate.token)
        // A page's stream, read until the server closes it.
        async let page = off { () -> (text: String, closed: Bool) in
            guard let connection = RawConnection(port: port) else { throw POSIXError(.ECONNREFUSED) }
            connection.send("GET /events?token=\(token) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n")
            return connection.receive(timeout: 30)
        }
        for _ in 0..<3000 where server.connectedPages == 0 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(server.connectedPages == 1)

        // As the session ends it: finished, with the summary's evaluation on the test rows.
        var final = previewState(phase: .finished, step: 100)
        final.samplesPerSecond = 1234
        var summary = RunSummary(precision: "double", blas: "test", trainingSeconds: 2.5)
        (summary.evaluatedOn, summary.evaluationLoss, summary.evaluationAccuracy) = ("test", 0.125, 0.875)
        // The server counts the pages not yet sent the end when its patience ran out: with a minute
        // of patience, none on any machine that is merely slow.
        let unsent = await server.stop(showing: final, summary: summary, patience: .seconds(60))
        #expect(unsent == 0, "the page was sent the end before the patience ran out")

        let (text, closed) = try await page
        #expect(closed, "the server closed the stream after the last frame")
        let frames = text.components(separatedBy: "\n\n").filter { $0.contains("data: ") }
        let last = try #require(frames.last)
        #expect(frames.count >= 2 && frames.first?.contains(#""phase":"running""#) == true, "\(frames.count) frames")
        #expect(last.contains(#""phase":"finished""#) && last.contains(#""step":100,"#) && last.contains(#""samplesPerSecond":1234"#))
        #expect(last.contains(#""ending":{"summary":{"#) && last.contains(#""evaluatedOn":"test""#))
        #expect(last.contains(#""evaluationLoss":0.125"#) && last.contains(#""evaluationAccuracy":0.875"#))
        #expect(last.contains(#""acceptedEvents":[]"#) && last.contains(#""engineAvailable":false"#))
        #expect(!frames.dropLast().contains { $0.contains(#""ending""#) }, "only the last frame is the end")
    }

    @Test("The end waits for no one when no page is connected, and its patience exactly for a page that stopped reading")
    func endIsBounded() async throws {
        // The wait is measured on a clock whose sleeps pass at once: what it shows is how long the
        // server waited, whatever the machine's speed.
        let model = PreviewViewModel<TrainingEvent, TrainingViewState>(previewState())
        let alone = try await DashboardServer.start(binding: DashboardBinding(model: model, engine: { nil }))
        let clock = SkippingClock()
        var start = clock.now
        #expect(await alone.stop(showing: previewState(phase: .finished), summary: nil, patience: .seconds(5), clock: clock) == 0)
        #expect(start.duration(to: clock.now) == .zero, "waited \(start.duration(to: clock.now)) with no page to wait for")

        // A page whose stream never takes a frame (its connection stuck): the end goes on without it.
        let binding = DashboardBinding(model: model, engine: { nil })
        let stuck = try await DashboardServer.start(binding: binding)
        let subscription = binding.broadcaster.subscribe()
        start = clock.now
        #expect(await stuck.stop(showing: previewState(phase: .finished), summary: nil, patience: .milliseconds(300), clock: clock) == 1)
        #expect(start.duration(to: clock.now) == .milliseconds(300), "waited \(start.duration(to: clock.now)) with a patience of 300 ms")
        withExtendedLifetime(subscription) {}
    }

    @Test("After the end: events reach no view model, /api/state answers the final frame, a late page gets it alone; a failed end says why")
    func afterTheEnd() async throws {
        let model = PreviewViewModel<TrainingEvent, TrainingViewState>(previewState())
        let binding = DashboardBinding(model: model, engine: { nil })
        // A run that threw after its last state (a file that could not be written) ends failed, saying why.
        let failed = binding.failedState("cannot write metrics.csv: No space left on device")
        #expect(
            failed.phase == .failed && failed.phaseText == "failed: cannot write metrics.csv: No space left on device" && failed.progress.step == 7)
        binding.finish(state: previewState(phase: .stopped, step: 50), summary: nil)
        let answer = String(decoding: binding.handle(.reset), as: UTF8.self)
        #expect(model.receivedEvents.isEmpty)
        #expect(answer.contains(#""phase":"stopped""#) && answer.contains(#""ending":{}"#) && answer.contains(#""acceptedEvents":[]"#))
        model.viewState = previewState(phase: .running, step: 60)  // the view model's later states are not the run's end
        #expect(String(decoding: binding.stateJSON(), as: UTF8.self).contains(#""step":50,"#))
        let late = binding.broadcaster.subscribe()
        let frame = await late.next()
        #expect(frame.map { String(decoding: $0, as: UTF8.self).contains(#""ending":{}"#) } == true)
        #expect(await late.next() == nil, "its stream ends after the last frame")
        binding.broadcaster.publish(Array("data: later\n\n".utf8))  // nothing goes out after the last frame
        let later = binding.broadcaster.subscribe()
        #expect(await later.next().map { String(decoding: $0, as: UTF8.self).contains("later") } == false)
    }

    @Test("State changes as fast as the main actor can make them travel at most 20 times a second")
    func rate() async throws {
        let model = PreviewViewModel<TrainingEvent, TrainingViewState>(previewState())
        let binding = DashboardBinding(model: model, engine: { nil })
        let subscription = binding.broadcaster.subscribe()
        binding.start()
        let before = binding.publishedFrames
        let clock = ContinuousClock(), start = clock.now
        var changes = 0
        while clock.now - start < .seconds(1) {
            model.viewState.progress.step += 1
            changes += 1
            try await Task.sleep(for: .milliseconds(1))
        }
        let published = binding.publishedFrames - before
        binding.stop()
        withExtendedLifetime(subscription) {}
        // One frame per 50 ms over a second, plus the one at the start: an upper bound a slow machine only lowers.
        #expect(published <= 21 && published >= 1, "\(published) frames for \(changes) changes")
        #expect(changes > published)
    }

    @Test("A page that never reads costs a publisher nothing: its slot keeps the newest frame only")
    func slowPage() async throws {
        let broadcaster = FrameBroadcaster()
        var subscription: FrameSubscription? = broadcaster.subscribe()
        for i in 0..<10_000 { broadcaster.publish(Array("data: \(i)\n\n".utf8)) }
        #expect(broadcaster.droppedFrames == 9_999)
        let newest = await subscription?.next()
        #expect(newest == Array("data: 9999\n\n".utf8))
        #expect(broadcaster.subscriberCount == 1)
        subscription = nil  // the connection ended
        #expect(broadcaster.subscriberCount == 0)
        broadcaster.publish(Array("data: after\n\n".utf8))  // no one left: nothing kept for anyone
    }

    @Test("A real view model steered through the server: step 5 from idle, a gradient check, a unit explained")
    func realViewModel() async throws {
        let network = try Network<Double>(features: 2, layers: [(3, .tanh), (1, .tanh)], loss: .halfSquaredError, seed: 3)
        let engine = try NetworkTrainingEngine(
            network: network, optimizer: try SGD(learningRate: 0.5), dataset: Synthetic.xor(as: Double.self), batchSize: 4, epochs: 50, seed: 3)
        let model = TrainingViewModel(engine: engine)
        let held: @MainActor () -> (any TrainingEngine)? = { model.engine }
        try await serving(model, engine: held) { server in
            let layout = try await fetch(server, "/api/state")
            #expect(layout.body.contains(#""units":3"#) && layout.body.contains(#""weightShape":[2,3]"#))
            #expect(try await fetch(server, method: "POST", "/api/event", headers: json, body: #"{"event":"step","count":5}"#).status == 200)
            await model.activity?.value
            #expect(model.viewState.phase == .paused && model.viewState.progress.step == 5)
            let state = try await fetch(server, "/api/state")
            #expect(state.body.contains(#""phase":"paused""#) && state.body.contains(#""step":5,"#))

            #expect(try await fetch(server, method: "POST", "/api/event", headers: json, body: #"{"event":"checkGradients"}"#).status == 200)
            await model.activity?.value
            let checked = try await fetch(server, "/api/state")
            #expect(checked.body.contains(#""gradientCheck":{"#) && checked.body.contains("layers.0.weight"))

            let explained = try await fetch(server, "/api/explain?layer=0&unit=2&sample=3")
            #expect(explained.status == 200 && explained.body.contains(#""title":"Dense(2→3, tanh)""#))
            let expected = try UnitExplanation(network: model.engine!.network, sample: [1, 1], target: [0], layer: 0, unit: 2)
            #expect(explained.body.contains(#""net":\#(expected.net)"#))
            #expect(try await fetch(server, "/api/explain?layer=0&unit=2&sample=4").status == 400)  // XOR has rows 0 to 3
            let overFeatures = try await fetch(server, "/api/explain?layer=0&unit=2&position=0")
            #expect(overFeatures.status == 400 && overFeatures.body.contains("a layer over features has no positions"))
            let notANumber = try await fetch(server, "/api/explain?layer=0&unit=2&sample=x")
            #expect(notANumber.status == 400 && notANumber.body.contains("sample=x is not a whole number"))
            let weights = try await fetch(server, "/api/weights?layer=1")
            #expect(weights.status == 200 && weights.body.contains(#""shape":[3,1]"#))

            // Ignored events show up in the state the page reads.
            #expect(try await fetch(server, method: "POST", "/api/event", headers: json, body: #"{"event":"pause"}"#).status == 200)
            #expect(model.viewState.ignoredEventCount == 1)
        }
    }

    @Test("A text model's RNN and per-position dense units explained at a position; bad positions and samples are 400")
    func textModel() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("neuron-dashboard-text-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("words.txt").path
        try "cab\nabba\nbac\nc\n".write(toFile: path, atomically: true, encoding: .utf8)
        let corpus = try TextCorpus.load(path, maximumBytes: 1 << 10)  // 4 tokens (⏎abc), 5 positions
        var network = try Network<Double>(
            [
                try Embedding<Double>(vocabulary: 4, features: 3, time: 5), try RNN<Double>(time: 5, inputs: 3, hidden: 4),
                try Dense<Double>(4, 4, activation: .identity, time: 5),
            ], loss: .sequenceCrossEntropy)
        network.initialize(seed: 3)
        let dataset: Dataset<Double> = corpus.dataset()
        let engine = try NetworkTrainingEngine(
            network: network, optimizer: try SGD(learningRate: 0.1), dataset: dataset, batchSize: 2, epochs: 5, seed: 3)
        let model = TrainingViewModel(engine: engine)
        let held: @MainActor () -> (any TrainingEngine)? = { model.engine }
        try await serving(model, engine: held) { server in
            let state = try JSONSerialization.jsonObject(with: Data(try await fetch(server, "/api/state").body.utf8)) as? [String: Any]
            let layouts = try #require(state?["layouts"] as? [[String: Any]])
            #expect(layouts[0]["units"] == nil && layouts[0]["positions"] == nil)
            #expect(layouts[1]["units"] as? Int == 4 && layouts[1]["positions"] as? Int == 5)
            #expect(layouts[2]["units"] as? Int == 4 && layouts[2]["positions"] as? Int == 5)

            let row = dataset.subset([1])  // abba: ⏎abba in, abba⏎ to predict
            for (layer, position) in [(1, 2), (2, 0)] {
                let explained = try await fetch(server, "/api/explain?layer=\(layer)&unit=3&sample=1&position=\(position)")
                #expect(explained.status == 200, "\(explained.body)")
                let expected = try UnitExplanation(
                    network: model.engine!.network, sample: row.features.scalars, target: row.targets.scalars, layer: layer, unit: 3,
                    position: position)
                #expect(explained.body.contains(#""position":\#(position)"#) && explained.body.contains(#""net":\#(expected.net)"#))
                #expect(explained.body.contains("network at \(position)"))
            }
            // No position: the line's last (abba: position 4, where its last 'a' is read).
            let byDefault = try await fetch(server, "/api/explain?layer=1&unit=0&sample=1")
            #expect(byDefault.status == 200 && byDefault.body.contains(#""position":4"#))
            for (query, reason) in [
                ("layer=1&unit=0&position=5", "position 5 is out of range; it has positions 0 to 4"),
                ("layer=1&unit=0&position=-1", "position -1 is out of range"),
                ("layer=1&unit=0&position=2.5", "position=2.5 is not a whole number"),
                ("layer=1&unit=0&sample=4", "0 to 3 (the training rows)"),
                ("layer=0&unit=0", "it has no units"),
            ] {
                let refused = try await fetch(server, "/api/explain?" + query)
                #expect(refused.status == 400 && refused.body.contains(reason), "\(query): \(refused.status) \(refused.body)")
            }
        }
    }

    @Test("A text transformer's attention: the frame's first line, a line's maps per block and head; hostile lines refused with a 4xx")
    func attention() async throws {
        let (engine, vocabulary) = try attentionEngine(epochs: 5)
        let model = TrainingViewModel(engine: engine)
        let held: @MainActor () -> (any TrainingEngine)? = { model.engine }
        try await serving(model, engine: held) { server in
            let state = try await fetch(server, "/api/state")
            #expect(state.body.contains(#""attentionLine":"bac""#), "the test line")

            let shown = try await fetch(server, method: "POST", "/api/attention", headers: json, body: #"{"text":"cab"}"#)
            #expect(shown.status == 200 && shown.head.contains("application/json"), "\(shown.body)")
            let maps = try JSONDecoder().decode(AttentionMaps.self, from: Data(shown.body.utf8))
            var network = model.engine!.network
            #expect(maps == (try network.attentionMaps(text: "cab", vocabulary: vocabulary)))
            #expect(maps.labels == ["⏎", "c", "a", "b"] && maps.blocks.map(\.name) == ["layers.2.body.1"] && maps.blocks[0].heads.count == 2)

            // Hostile or mistaken lines: each a 4xx naming what is wrong; the engine is untouched.
            let long = String(repeating: "a", count: DashboardServer.attentionCharacters + 1)
            for (method, headers, body, status, reason) in [
                ("GET", [String: String](), "", 405, "method GET not allowed on /api/attention"),
                ("POST", [:], #"{"text":"cab"}"#, 415, "expected Content-Type: application/json"),
                ("POST", json, "cab", 400, #"expected a JSON body {"text": "a line"}"#),
                ("POST", json, #"{"line":"cab"}"#, 400, #"expected a JSON body {"text": "a line"}"#),
                ("POST", json, #"{"text":"cxb"}"#, 400, "'x' (U+0078), character 1 of \"cxb\" (counted from 0), is not in the model's vocabulary"),
                ("POST", json, #"{"text":""}"#, 400, "an empty line"),
                ("POST", json, #"{"text":"\#(long)"}"#, 413, "a line of 1001 characters; at most 1000 are read"),
                ("POST", json, #"{"text":"\#(String(repeating: "a", count: 17_000))"}"#, 413, "body of 17"),
            ] {
                let answer = try await fetch(server, method: method, "/api/attention", headers: headers, body: body)
                #expect(answer.status == status && answer.body.contains(reason), "\(body.prefix(30)): \(answer.status) \(answer.body)")
            }
            // Bytes that are not UTF-8, sent as they are.
            let port = server.port, token = server.gate.token
            let bad = try await off { () -> String in
                guard let connection = RawConnection(port: port) else { throw POSIXError(.ECONNREFUSED) }
                let body: [UInt8] = Array(#"{"text":"ca"#.utf8) + [0xFF] + Array(#""}"#.utf8)
                let head =
                    "POST /api/attention?token=\(token) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n"
                connection.send(Array(head.utf8) + body)
                return connection.receive(timeout: 30).text
            }
            #expect(
                bad.hasPrefix("HTTP/1.1 400") && bad.contains("the body is not UTF-8 text: byte 11 (0xFF, counted from 0) starts no character"),
                "\(bad)")
            #expect(try await fetch(server, method: "POST", "/api/attention", token: false, headers: json, body: #"{"text":"cab"}"#).status == 403)
            #expect(model.viewState.progress.step == 0 && model.viewState.ignoredEventCount == 0)
        }
    }

    @Test("While the run trains, /api/attention answers 409 at once and training goes on; paused, it answers")
    func attentionWhileRunning() async throws {
        let (engine, _) = try attentionEngine(epochs: 1_000_000)
        let model = TrainingViewModel(engine: engine)
        let held: @MainActor () -> (any TrainingEngine)? = { model.engine }
        try await serving(model, engine: held) { server in
            model.handle(event: .start)
            var running = try await fetch(server, method: "POST", "/api/attention", headers: json, body: #"{"text":"cab"}"#)
            for _ in 0..<10 where running.status == 409 {
                running = try await fetch(server, method: "POST", "/api/attention", headers: json, body: #"{"text":"cab"}"#)
            }
            #expect(running.status == 409 && running.body.contains("pause it to see attention"), "\(running.status) \(running.body)")
            let before = model.viewState.progress.step
            try await Task.sleep(for: .milliseconds(300))
            #expect(model.viewState.phase == .running && model.viewState.progress.step > before, "training goes on")
            model.handle(event: .pause)
            await model.activity?.value
            #expect(model.viewState.phase == .paused)
            #expect(try await fetch(server, method: "POST", "/api/attention", headers: json, body: #"{"text":"cab"}"#).status == 200)
        }
    }

    @Test("A model without attention layers has no attention line, and its /api/attention says why")
    func noAttention() async throws {
        let network = try Network<Double>(features: 2, layers: [(3, .tanh), (1, .tanh)], loss: .halfSquaredError, seed: 3)
        let engine = try NetworkTrainingEngine(
            network: network, optimizer: try SGD(learningRate: 0.5), dataset: Synthetic.xor(as: Double.self), batchSize: 4, epochs: 5, seed: 3)
        let model = TrainingViewModel(engine: engine)
        let held: @MainActor () -> (any TrainingEngine)? = { model.engine }
        try await serving(model, engine: held) { server in
            #expect(!(try await fetch(server, "/api/state")).body.contains("attentionLine"))
            let refused = try await fetch(server, method: "POST", "/api/attention", headers: json, body: #"{"text":"cab"}"#)
            #expect(refused.status == 400 && refused.body.contains("expected a model of text data"), "\(refused.body)")
        }
        let preview = PreviewViewModel<TrainingEvent, TrainingViewState>(previewState())
        try await serving(preview) { server in
            let held = try await fetch(server, method: "POST", "/api/attention", headers: json, body: #"{"text":"cab"}"#)
            #expect(held.status == 409, "no engine held: a run owns it")
        }
    }

    @Test("A port already taken is an error naming it")
    func portTaken() async throws {
        let model = PreviewViewModel<TrainingEvent, TrainingViewState>(previewState())
        try await serving(model) { server in
            do {
                let second = try await DashboardServer.start(binding: DashboardBinding(model: model, engine: { nil }), port: server.port)
                await second.stop()
                Issue.record("a second server listened on port \(server.port)")
            } catch {
                #expect("\(error)".contains("cannot serve the dashboard on 127.0.0.1:\(server.port)"))
            }
        }
        await #expect(throws: DashboardServer.Failure.badHost("not-an-address")) {
            _ = try await DashboardServer.start(binding: DashboardBinding(model: model, engine: { nil }), host: "not-an-address")
        }
    }
}

/// A character model with one residual attention block on four words (⏎abc, 5 positions), its
/// vocabulary known to the engine as a text run's is; the test line is "bac".
@MainActor
private func attentionEngine(epochs: Int) throws -> (engine: NetworkTrainingEngine<Double, SGD<Double>>, vocabulary: Vocabulary) {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("neuron-dashboard-attention-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let path = directory.appendingPathComponent("words.txt").path
    try "cab\nabba\nbac\nc\n".write(toFile: path, atomically: true, encoding: .utf8)
    let corpus = try TextCorpus.load(path, maximumBytes: 1 << 10)
    var network = try Network<Double>(
        [
            try Embedding<Double>(vocabulary: 4, features: 4, time: 5), try PositionEmbedding<Double>(time: 5, features: 4),
            try Residual<Double>([try LayerNorm<Double>(shape: [5, 4]), try CausalSelfAttention<Double>(time: 5, features: 4, heads: 2)]),
            try Dense<Double>(4, 4, activation: .identity, time: 5),
        ], loss: .sequenceCrossEntropy)
    network.initialize(seed: 3)
    let dataset: Dataset<Double> = corpus.dataset()
    var engine = try NetworkTrainingEngine(
        network: network, optimizer: try SGD(learningRate: 0.1), dataset: dataset.subset([0, 1, 3]), test: dataset.subset([2]),
        batchSize: 2, epochs: epochs, seed: 3)
    engine.lineSampler = LineSampler(vocabulary: corpus.vocabulary, trainingLines: [], count: 0, seed: 3)
    return (engine, corpus.vocabulary)
}
