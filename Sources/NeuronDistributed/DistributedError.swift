/// What went wrong starting or running several processes together.
public enum DistributedError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Started by `mpirun` as one of several processes, but built without the trait `MPI`.
    case notBuilt
    /// An MPI call failed; the message is MPI's.
    case failed(_ call: String, _ message: String)
    /// The processes built different runs (a config, data file or checkpoint that differs between them).
    case differentRuns

    public var description: String {
        switch self {
        case .notBuilt:
            "this neuron was built without MPI, but was started as one of several processes (by mpirun); build it with `swift build --traits MPI` (needs apt-get install openmpi-bin libopenmpi-dev)"
        case let .failed(call, message):
            "\(call) failed: \(message) (did another process of the run die?)"
        case .differentRuns:
            "the processes built different runs: every process must read the same config, data files and checkpoint (on several hosts, the same paths with the same contents)"
        }
    }
}
