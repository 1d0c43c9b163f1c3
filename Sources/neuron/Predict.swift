import ArgumentParser
import Foundation
import NeuronCore
import NeuronTraining

/// `neuron predict CHECKPOINT INPUT.csv`: one prediction per row, as CSV on standard output.
struct Predict: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Predict each row of a CSV file (class and probabilities, or values), as CSV.",
        discussion:
            "INPUT.csv needs a header naming the features the model was trained on (other columns are ignored); they are preprocessed as in training."
    )

    @Argument(help: "The run directory or its checkpoint file.")
    var checkpoint: String

    @Argument(help: "The rows to predict.")
    var input: String

    func run() throws {
        let saved = try Checkpoint.read(checkpoint)
        if saved.state.vocabulary != nil {
            throw RunError.invalid(
                "\(saved.file): \(saved.state.network) is a text model, which reads lines, not rows of features; draw lines from it with neuron sample \(checkpoint)"
            )
        }
        switch saved.state.precision {
        case .double: print(try Prediction<Double>.csv(saved, input: input), terminator: "")
        case .float: print(try Prediction<Float>.csv(saved, input: input), terminator: "")
        }
    }
}
