// Events in: the page posts `{"event": "step", "count": 5}` and the server hands the view model
// the `TrainingEvent` it names. Nothing else can be sent: the page can ask for exactly what a user
// of the terminal could, and the view model decides, as it does for every display.
import Foundation
import NeuronTraining

/// The body of a `POST /api/event`, and the `TrainingEvent` it stands for.
public struct DashboardEventRequest: Sendable, Equatable, Codable {
    /// `start`, `pause`, `resume`, `stop`, `reset`, `step` or `checkGradients`.
    public var event: String
    /// Steps for `step` (1 to 1,000,000).
    public var count: Int?

    /// A request for `event`, with `count` for a step.
    public init(event: String, count: Int? = nil) {
        (self.event, self.count) = (event, count)
    }

    /// What can go wrong reading a request (each answered with 400 Bad Request).
    public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        case notJSON
        case unknownEvent(String)
        case badCount(String)

        public var description: String {
            switch self {
            case .notJSON: "expected a JSON object such as {\"event\": \"pause\"} or {\"event\": \"step\", \"count\": 5}"
            case let .unknownEvent(name):
                "unknown event '\(name)'; expected one of \(DashboardEventRequest.names.joined(separator: ", "))"
            case let .badCount(count): "step needs a count from 1 to 1000000, got \(count)"
            }
        }
    }

    /// The event names a page may send.
    public static let names = ["start", "pause", "resume", "stop", "reset", "step", "checkGradients"]

    /// The event this request names.
    /// - Throws: ``Failure`` for an unknown name or a step count out of range.
    public func trainingEvent() throws(Failure) -> TrainingEvent {
        switch event {
        case "start": return .start
        case "pause": return .pause
        case "resume": return .resume
        case "stop": return .stop
        case "reset": return .reset
        case "checkGradients": return .checkGradients
        case "step":
            guard let count, (1...1_000_000).contains(count) else { throw .badCount(count.map(String.init) ?? "none") }
            return .step(count: count)
        default: throw .unknownEvent(event)
        }
    }

    /// The event a request body names.
    /// - Throws: ``Failure`` when the body is not such an object, or names no event the page may send.
    public static func event(fromBody body: Data) throws(Failure) -> TrainingEvent {
        guard let request = try? JSONDecoder().decode(DashboardEventRequest.self, from: body) else { throw .notJSON }
        return try request.trainingEvent()
    }
}
