// `training.products: bf16` through the CLI: where this machine runs bf16 products, a run trains on
// them and its summary names oneDNN's kernels; where it does not, the run is refused at the key with
// what is missing, and nothing is written.
import Foundation
import NeuronCore
import Testing

@Suite("neuron train with bf16 products")
struct BFloat16CommandTests {
    /// Data/digits.yaml's network (64-32-10 tanh) in batches of 256, so that its first product
    /// (256 × 32 × 64 multiply-adds, 2¹⁹) runs on bf16 operands, for a few epochs.
    private func config(products: String, precision: String = "float") -> String {
        """
        model:
          inputs: 64
          layers:
            - units: 32
              activation: tanh
            - units: 10
              activation: softmax
          loss: softmaxCrossEntropy
        data:
          kind: csv
          path: \(dataDirectory)/digits.csv
          labelColumn: digit
          normalization: standardize
          validationSplit: 0.2
        optimizer:
          kind: sgd
          learningRate: 0.1
          momentum: 0.9
        training:
          epochs: 30
          batchSize: 256
          seed: 7
          precision: \(precision)
          products: \(products)

        """
    }

    @Test("A bf16 run trains as the full one does and says so; a machine without bf16 refuses it at the key, writing nothing")
    func trainsOrRefuses() throws {
        let directory = try scratchDirectory("bf16")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bf16Config = directory + "/bf16.yaml", fullConfig = directory + "/full.yaml"
        try config(products: "bf16").write(toFile: bf16Config, atomically: true, encoding: .utf8)
        try config(products: "full").write(toFile: fullConfig, atomically: true, encoding: .utf8)
        let bf16Run = directory + "/bf16", fullRun = directory + "/full"
        let bf16 = try runNeuron(["train", bf16Config, "--output", bf16Run])
        if let refusal = BLAS.bf16Refusal {
            #expect(bf16.status != 0)
            #expect(bf16.stderr.contains("bf16.yaml:") && bf16.stderr.contains("training.products: bf16: \(refusal)"), "\(bf16.stderr)")
            #expect(!FileManager.default.fileExists(atPath: bf16Run + "/summary.json"))
            return
        }
        #expect(bf16.status == 0, "\(bf16.stderr)")
        let full = try runNeuron(["train", fullConfig, "--output", fullRun])
        #expect(full.status == 0, "\(full.stderr)")
        let bf16Summary = try summary(bf16Run), fullSummary = try summary(fullRun)
        #expect(bf16Summary.products?.hasPrefix("bf16 (oneDNN ") == true, "\(bf16Summary.products ?? "nil")")
        #expect(fullSummary.products == nil)
        #expect(bf16.stdout.contains("products             bf16 (oneDNN"))
        // The same recipe learns the digits either way; the two runs are not the same numbers.
        let bf16Accuracy = try #require(bf16Summary.evaluationAccuracy), fullAccuracy = try #require(fullSummary.evaluationAccuracy)
        #expect(bf16Accuracy >= 0.9 && fullAccuracy >= 0.9, "bf16 \(bf16Accuracy), full \(fullAccuracy)")
        #expect(abs(bf16Accuracy - fullAccuracy) <= 0.03)
        #expect(bf16Summary.trainingLoss != fullSummary.trainingLoss, "bf16 products changed nothing")
    }

    @Test("bf16 products on a Double run are refused at training.precision, on every machine")
    func refusedOnDouble() throws {
        let directory = try scratchDirectory("bf16-double")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/double.yaml"
        try config(products: "bf16", precision: "double").write(toFile: path, atomically: true, encoding: .utf8)
        let result = try runNeuron(["train", path, "--output", directory + "/run"])
        #expect(result.status != 0)
        #expect(
            result.stderr.contains("double.yaml:") && result.stderr.contains("training.precision")
                && result.stderr.contains("precision: float for bf16 products"), "\(result.stderr)")
    }
}
