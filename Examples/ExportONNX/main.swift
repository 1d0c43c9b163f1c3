// XOR on a 2-4-1 tanh network, trained with the library and written as an ONNX file for an app:
// Docs/ONNX.md's library example. CI builds and runs it; it exits with status 1 unless the file holds
// a model.
import Foundation
import NeuronCore
import NeuronExport

let xor = Synthetic.xor(as: Float.self)
var network = try Network<Float>(features: 2, layers: [(4, .tanh), (1, .tanh)], loss: .halfSquaredError, seed: 1)
var optimizer = try SGD<Float>(learningRate: 0.5, momentum: 0.9)
for _ in 0..<1_000 { try network.trainStep(xor.features, targets: xor.targets, optimizer: &optimizer) }

// Input `features` (batch, 2), output `values` (batch, 1); the names are saved as metadata.
let model = try network.onnxModel(featureNames: ["a", "b"], options: ONNXExportOptions(opset: 17, batch: .dynamic))
try Data(model).write(to: URL(fileURLWithPath: "xor.onnx"))
print("xor.onnx: \(network), \(model.count) bytes")
guard model.count > 100 else { exit(1) }
