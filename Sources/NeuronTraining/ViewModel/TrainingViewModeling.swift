import Observation

/// A training run's view model: the parent of one view model per layer.
///
/// The real one (``TrainingViewModel``) hands out live layer view models; a preview parent
/// (``PreviewViewModel`` with training state) hands out preview children, so a display built on
/// this protocol can never start real training by accident.
@MainActor
public protocol TrainingViewModeling: ViewModel where ViewEvent == TrainingEvent, ViewState == TrainingViewState {
    associatedtype LayerViewModel: ViewModel where LayerViewModel.ViewEvent == LayerEvent, LayerViewModel.ViewState == LayerViewState

    /// The view model of layer `index` (0 ..< viewState.layers.count).
    func layer(_ index: Int) -> LayerViewModel

    /// Whether `event` would do something in the current state (a display enables only the
    /// controls whose events are accepted); ``ViewModel/handle(event:)`` ignores the others.
    func accepts(_ event: TrainingEvent) -> Bool
}

extension PreviewViewModel: TrainingViewModeling where ViewEvent == TrainingEvent, ViewState == TrainingViewState {
    /// A preview child showing the injected state's layer `index`.
    public func layer(_ index: Int) -> PreviewViewModel<LayerEvent, LayerViewState> {
        PreviewViewModel<LayerEvent, LayerViewState>(viewState.layer(index))
    }

    /// Every event: a preview records whatever it is sent.
    public func accepts(_ event: TrainingEvent) -> Bool { true }
}
