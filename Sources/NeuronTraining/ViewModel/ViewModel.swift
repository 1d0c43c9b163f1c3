// The pattern every screen of training follows: state travels out as a plain value, events
// travel in as an enum. A display binds to `viewState` and sends events; it never reaches past
// the protocol, so a preview view model with injected state can stand in for the real one.
import Observation

/// An observable façade: read ``viewState``, send ``handle(event:)``.
///
/// Everything a display needs is in `ViewState` (a value type: an observer never sees half an
/// update), and everything a user can do is a `ViewEvent`. Consumers watch it with
/// `Observations { viewModel.viewState }` or `withObservationTracking`.
@MainActor
public protocol ViewModel<ViewEvent, ViewState>: AnyObject, Observable {
    associatedtype ViewEvent: Sendable
    associatedtype ViewState: Sendable

    /// The current state, read-only to consumers.
    var viewState: ViewState { get }

    /// Takes one user action. Events that mean nothing in the current state are ignored (and
    /// view models that track it say so in their state).
    func handle(event: ViewEvent)
}

/// A view model that runs nothing: any state can be injected, and every event is recorded.
///
/// Displays are built and tested against it (every phase of training, without training), and
/// tests of a display assert which events it sent.
@MainActor @Observable
public final class PreviewViewModel<ViewEvent: Sendable, ViewState: Sendable>: ViewModel {
    /// The injected state; set it to show another one.
    public var viewState: ViewState
    /// The events received, in order.
    public private(set) var receivedEvents: [ViewEvent] = []

    /// A preview showing `state`.
    public init(_ state: ViewState) {
        viewState = state
    }

    /// Records the event; nothing else happens.
    public func handle(event: ViewEvent) {
        receivedEvents.append(event)
    }
}
