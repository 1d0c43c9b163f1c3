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
        func refusal(_ json: String) -> DashboardEventRequest.Failure? {
            do { _ = try event(json) } catch { return error as? DashboardEventRequest.Failure }
            return nil
        }
        let names = "start, pause, resume, stop, reset, step, checkGradients"
        #expect(refusal(#"{"event": "Pause"}"#) == .invalid("unknown event 'Pause'; expected one of \(names)"))
        #expect(refusal(#"{"event": "step"}"#) == .invalid("step needs a count from 1 to 1000000, got none"))
        #expect(refusal(#"{"event": "step", "count": 0}"#) == .invalid("step needs a count from 1 to 1000000, got 0"))
        #expect(refusal(#"{"event": "step", "count": 1000001}"#) == .invalid("step needs a count from 1 to 1000000, got 1000001"))
        #expect(refusal("pause") == .notJSON)
        #expect(refusal(#"{"count": 5}"#) == .notJSON)
    }

    @Test("An event encodes as the body that decodes back to it")
    func roundTrip() throws {
        for event in TrainingEvent.Name.allCases.map({ TrainingEvent($0, count: 5) }) {
            #expect(try self.event(String(decoding: try JSONEncoder().encode(event), as: UTF8.self)) == event)
        }
    }
}
