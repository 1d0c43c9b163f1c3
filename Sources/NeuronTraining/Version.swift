// The package's version, in one place. SwiftPM gives a program no version of its own package to
// read, and the repository has no release tags yet, so the version is a constant here, in the
// lowest module that writes files a later version may read back (checkpoints, summaries), where
// anything that records it can reach it.

/// The version of Neuron: the engine, the tool layer and `neuron`, released together.
public enum NeuronVersion {
    /// What `neuron --version` prints: semantic versioning, 0.x while the config, checkpoint and
    /// library formats may still change between releases. Raised in the commit that makes a release.
    public static let current = "0.1.0"
}
