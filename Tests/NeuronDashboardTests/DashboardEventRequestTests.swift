import Foundation
import NeuronTraining
import Testing

@testable import NeuronDashboard

@Suite("Events in: the page's POST bodies and the TrainingEvent each names")
struct DashboardEventRequestTests {
    private func event(_ json: String) throws -> TrainingEvent { try DashboardEventRequest.event(fromBody: Data(json.utf8)) }

    @Test("Each button's body maps to its event")
    func mapping() throws {
        #expect(try event(#"{"event": "start"}"#) == .start)
        #expect(try event(#"{"event": "pause"}"#) == .pause)
        #expect(try event(#"{"event": "resume"}"#) == .resume)
        #expect(try event(#"{"event": "stop"}"#) == .stop)
        #expect(try event(#"{"event": "reset"}"#) == .reset)
        #expect(try event(#"{"event": "checkGradients"}"#) == .checkGradients)
        #expect(try event(#"{"event": "step", "count": 5}"#) == .step(count: 5))
        #expect(try event(#"{"event": "step", "count": 1000000}"#) == .step(count: 1_000_000))
    }

    @Test("Unknown events, bad counts and bodies that are not such objects are refused with the reason")
    func refusals() {
        #expect(throws: DashboardEventRequest.Failure.unknownEvent("Pause")) { try event(#"{"event": "Pause"}"#) }
        #expect(throws: DashboardEventRequest.Failure.badCount("none")) { try event(#"{"event": "step"}"#) }
        #expect(throws: DashboardEventRequest.Failure.badCount("0")) { try event(#"{"event": "step", "count": 0}"#) }
        #expect(throws: DashboardEventRequest.Failure.badCount("1000001")) { try event(#"{"event": "step", "count": 1000001}"#) }
        #expect(throws: DashboardEventRequest.Failure.notJSON) { try event("pause") }
        #expect(throws: DashboardEventRequest.Failure.notJSON) { try event(#"{"count": 5}"#) }
        #expect(DashboardEventRequest.Failure.unknownEvent("x").description.contains("checkGradients"))
    }
}
