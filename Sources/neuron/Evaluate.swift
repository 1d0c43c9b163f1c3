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

    @Option(help: "Evaluate on the data of this config (its test rows, else all its rows), preprocessed as in training.")
    var data: String?

    func run() throws {
        let saved = try Checkpoint.read(checkpoint)
        BLAS.threadCount = saved.state.config.training.blasThreads
        let name: String, evaluation: Evaluation
        // A document's loss, per token, read per character of the part's text as well.
        var tokensPerCharacter: Double?
        if let data {
            // Other rows: the model as trained, their features preprocessed with its statistics.
            (name, evaluation) = try RunBuilder.evaluation(of: saved, on: try ConfigLoader.load(data).data, from: data)
        } else {
            let run: Run
            do {
                // The model on the run's data as it is now; said when that is not what it trained on.
                run = try RunBuilder.build(saved.state.config, resume: saved, dataChanged: true)
            } catch let RunError.checkpointMismatch(path, reason) {
                throw RunError.invalid("\(path): cannot evaluate: \(reason)")
            }
            if let trained = saved.state.data, let differences = run.data?.differences(from: trained) {
                FileHandle.standardError.write(
                    Data(
                        "neuron: note: the data changed since the checkpoint was written: \(differences); the rows evaluated are read from the files as they are now\n"
                            .utf8))
            }
            guard let found = try run.engine.finalEvaluation() else {
                throw RunError.invalid("\(saved.path): this run has no test or validation rows to evaluate on")
            }
            (name, evaluation) = found
            tokensPerCharacter = run.engine.snapshot().tokensPerCharacter?.ratio(of: name)
        }
        // A NaN loss printed as a result would read as a measurement; it is a model that cannot be evaluated.
        if let row = evaluation.nonFiniteRow {
            throw RunError.invalid(
                "\(saved.file): \(name) row \(row + 1) (of \(evaluation.count)) gives outputs that are not finite (NaN or infinity); the model cannot be evaluated on it"
            )
        }
        guard evaluation.loss.isFinite else {
            throw RunError.invalid("\(saved.file): the loss on the \(name) rows is \(evaluation.loss), not a finite number")
        }
        print("\(saved.state.network) at epoch \(saved.state.progress.epoch), step \(saved.state.progress.step), on \(evaluation.count) \(name) rows")
        // A document's loss says its unit, as its summary does.
        let document = saved.state.config.data.unit == .document
        let unit = document ? RunSummary.lossUnit(unit: .document, vocabulary: saved.state.vocabulary).map { "  (\($0))" } ?? "" : ""
        print("  loss      \(evaluation.loss)\(unit)")
        if let tokensPerCharacter {
            let bits = TokensPerCharacter.bitsPerCharacter(evaluation.loss, tokensPerCharacter: tokensPerCharacter)
            print("  bits per character  \(bits)  (\(tokensPerCharacter) tokens per character)")
        }
        if let accuracy = evaluation.accuracy { print("  accuracy  \(accuracy)") }
        if let confusion = evaluation.confusion {
            print("confusion matrix (rows actual, columns predicted):")
            print(confusion.table(classNames: saved.state.classNames))
        }
    }
}
