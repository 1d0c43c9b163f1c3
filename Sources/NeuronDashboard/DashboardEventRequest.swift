// Events in: the page posts `{"event": "step", "count": 5}`, a `TrainingEvent` as it encodes
// itself, and the server hands the view model the event decoded. Nothing else can be sent: the
// page can ask for exactly what a user of the terminal could, and the view model decides, as it
// does for every display.
import Foundation
import NeuronTraining

/// The body of a `POST /api/event`: a `TrainingEvent` as JSON.
public enum DashboardEventRequest {
    /// What can go wrong reading a request (each answered with 400 Bad Request).
    public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        case notJSON
        /// An object that names no event the page may send, or a step without a count in range;
        /// the message says what is allowed.
        case invalid(String)

        public var description: String {
            switch self {
            case .notJSON: "expected a JSON object such as {\"event\": \"pause\"} or {\"event\": \"step\", \"count\": 5}"
            case let .invalid(message): message
            }
        }
    }

    /// The event a request body names.
    /// - Throws: ``Failure`` when the body is not such an object, or names no event the page may send.
    public static func event(fromBody body: Data) throws(Failure) -> TrainingEvent {
        do {
            return try JSONDecoder().decode(TrainingEvent.self, from: body)
        } catch let DecodingError.dataCorrupted(context) where !context.codingPath.isEmpty {
            throw .invalid(context.debugDescription)
        } catch {
            throw .notJSON
        }
    }
}
