import Foundation
import NeuronCore
import Testing

@testable import NeuronTraining

@Suite("Prediction: a saved network on new rows, preprocessed as in training")
struct PredictionTests {
    @Test("The network comes back from the checkpoint; each CSV row gets its class and probabilities")
    func classification() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        let run = try RunBuilder.build(try irisConfig(epochs: 5))
        let trained = straightRun(try #require(run.engine as? NetworkTrainingEngine<Float, SGD<Float>>))
        try Checkpoint(trained, config: run.config, preprocessing: run.preprocessing).write(to: directory.path)
        let checkpoint = try Checkpoint.read(directory.path)
        var network = try Prediction<Float>.network(checkpoint)
        #expect(network.parameters == trained.network.parameters && network.description == trained.title)

        // Two rows in another column order, the label column absent: columns are found by name.
        let input = try directory.write(
            Array("petal_width,petal_length,sepal_width,sepal_length\n0.2,1.4,3.5,5.1\n2.3,5.4,3.1,6.9\n".utf8), "new.csv")
        let lines = try Prediction<Float>.csv(checkpoint, input: input).split(separator: "\n").map(String.init)
        #expect(lines.count == 3 && lines[0] == "row,class,p_setosa,p_versicolor,p_virginica")
        var x = try Tensor<Float>(shape: [2, 4], scalars: [5.1, 3.5, 1.4, 0.2, 6.9, 3.1, 5.4, 2.3])
        try run.preprocessing.apply(to: &x)
        let y = try network.forward(x)
        for n in 0..<2 {
            let cells = lines[n + 1].split(separator: ",").map(String.init)
            #expect(cells[0] == "\(n + 1)" && cells[2...].map { Float($0)! } == (0..<3).map { y[n, $0] })
            #expect(cells[1] == ["setosa", "versicolor", "virginica"][(0..<3).max { y[n, $0] < y[n, $1] }!])
        }
        #expect(lines[1].hasPrefix("1,setosa,"))  // an unmistakable setosa, after five epochs
    }

    @Test("A row whose outputs are not finite is refused, naming the row, for predict and evaluate alike; no NaN is printed")
    func nonFiniteOutputs() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        let run = try RunBuilder.build(try irisConfig(epochs: 2))
        try Checkpoint(straightRun(run.engine), config: run.config, preprocessing: run.preprocessing).write(to: directory.path)
        let checkpoint = try Checkpoint.read(directory.path)
        // Finite inputs at Float's edge: standardized, they are infinite, and the first layer's sums NaN.
        let rows =
            "sepal_length,sepal_width,petal_length,petal_width,species\n5.1,3.5,1.4,0.2,setosa\n3e38,-3e38,3e38,-3e38,versicolor\n6.9,3.1,5.4,2.3,virginica\n"
        let input = try directory.write(Array(rows.utf8), "edge.csv")
        #expect {
            try Prediction<Float>.csv(checkpoint, input: input)
        } throws: {
            "\($0)"
                == "\(input): row 2 gives outputs that are not finite (NaN or infinity) with the model of \(checkpoint.file); no prediction was written"
        }
        var data = run.config.data
        (data.path, data.validationSplit) = (input, 0)
        let (_, evaluation) = try RunBuilder.evaluation(of: checkpoint, on: data, from: "a config")
        #expect(evaluation.nonFiniteRow == 1 && evaluation.count == 3)
        // Finite rows leave it unset.
        data.path = dataDirectory + "/iris.csv"
        #expect(try RunBuilder.evaluation(of: checkpoint, on: data, from: "a config").evaluation.nonFiniteRow == nil)
    }

    @Test("CSV fields are quoted as RFC 4180 says when they hold a comma, a quote or a line break")
    func csvFields() {
        #expect(Prediction<Float>.field("setosa") == "setosa")
        #expect(Prediction<Float>.field("Iris setosa, Fisher") == "\"Iris setosa, Fisher\"")
        #expect(Prediction<Float>.field("p_say \"hi\"") == "\"p_say \"\"hi\"\"\"")
        #expect(Prediction<Float>.field("two\nlines") == "\"two\nlines\"")
    }
}
