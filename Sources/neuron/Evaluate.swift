import ArgumentParser
import Foundation
import NeuronCore
import NeuronTraining

/// `neuron evaluate CHECKPOINT`: loss, accuracy and confusion matrix on the test (or validation) rows.
struct Evaluate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Evaluate a checkpoint on its run's test rows (or validation rows when there are none).")

    @Argument(help: "The run directory or its checkpoint file.")
    var checkpoint: String

    @Option(help: "Evaluate on the data of this config instead of the checkpoint's own.")
    var data: String?

    func run() throws {
        let saved = try Checkpoint.read(checkpoint)
        var config = saved.state.config
        if let data { config.data = try ConfigLoader.load(data).data }
        BLAS.threadCount = config.training.blasThreads
        let run = try RunBuilder.build(config, resume: saved)
        guard let (name, evaluation) = try run.engine.finalEvaluation() else {
            throw RunError.invalid("\(saved.path): this run has no test or validation rows to evaluate on")
        }
        print("\(run.engine.title) at epoch \(saved.state.epoch), step \(saved.state.step), on \(evaluation.count) \(name) rows")
        print("  loss      \(evaluation.loss)")
        if let accuracy = evaluation.accuracy { print("  accuracy  \(accuracy)") }
        if let confusion = evaluation.confusion {
            print("confusion matrix (rows actual, columns predicted):")
            print(confusion.table(classNames: saved.state.classNames))
        }
    }
}
