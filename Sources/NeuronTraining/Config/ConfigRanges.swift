// The range of every config value, stated once. The loader checks a file's values with these
// functions and reports the first out of range at its line and column (`run.yaml:9:17:
// training.batchThreads: expected a whole number from 1 to 256; found 512`); a checkpoint's
// validation checks its saved config with the same functions and reports the field
// (`config.training.batchThreads: 512; expected a whole number from 1 to 256`); the run builder and
// the checkpoint check the optimizer's numbers against the run's precision with one function too.
// What only the loader checks is what a file can get wrong and a saved config cannot, having been
// loaded: which keys a kind takes, the keys it needs, and the rules between keys (softmax only in
// the last layer, smoothing only with counting, text data with a text model).
import NeuronCore

/// A config value outside its range: the key at fault (its whole path, `training.batchThreads`),
/// the value as the config holds it, and what the key allows. The loader reports it at the value's
/// line and column, a checkpoint as its invalid field.
struct ConfigRangeError: Error, Equatable {
    var key: String
    var value: String
    var expected: String

    /// Throws at `key` unless `inRange`.
    static func check(_ inRange: Bool, _ key: String, _ value: @autoclosure () -> Any, _ expected: @autoclosure () -> String) throws(Self) {
        guard inRange else { throw Self(key: key, value: "\(value())", expected: expected()) }
    }

    /// Throws at `key` unless `value` (when given) is in `range`: "a whole number from 1 to 256",
    /// or "a whole number 1 or more" for a range without a ceiling.
    static func check(_ value: Int?, in range: ClosedRange<Int>, _ key: String) throws(Self) {
        guard let value else { return }
        let expected =
            range.upperBound == .max
            ? "a whole number \(range.lowerBound) or \(range.lowerBound == 0 ? "greater" : "more")"
            : "a whole number from \(range.lowerBound) to \(range.upperBound)"
        try check(range.contains(value), key, value, expected)
    }
}

extension RunConfig {
    /// Every value of every section in its range, the layers' (residual bodies' too) and the
    /// transformer's among them: a checkpoint's saved config checked as the loader checked it.
    func checkRanges() throws(ConfigRangeError) {
        try model.checkRanges()
        for (i, layer) in model.layers.enumerated() { try layer.checkRanges(at: "model.layers[\(i)]") }
        try data.checkRanges()
        try optimizer.checkRanges()
        try training.checkRanges()
        try output.checkRanges()
    }
}

extension ModelConfig {
    /// The model's own values (its layers are checked one by one, ``LayerConfig/checkRanges(at:)``):
    /// the neuron's finite parameters, the transformer's sizes, at least one layer, the inputs and
    /// the image shape.
    func checkRanges() throws(ConfigRangeError) {
        if let neuron {
            for (key, value) in [("weight", neuron.weight), ("bias", neuron.bias)] {
                try ConfigRangeError.check(value.isFinite, "model.neuron.\(key)", value, "a finite number")
            }
        }
        if let transformer {
            try transformer.checkRanges()
        } else if neuron == nil {
            try ConfigRangeError.check(!layers.isEmpty, "model.layers", "an empty list", "at least one layer")
        }
        try ConfigRangeError.check(inputs, in: 1...Int.max, "model.inputs")
        if let shape = inputShape {
            try ConfigRangeError.check(
                shape.count == 3 && shape.allSatisfy { (1...Self.largestSize).contains($0) }, "model.inputShape", shape,
                "[height, width, channels], each a whole number from 1 to \(Self.largestSize)")
            try ConfigRangeError.check(
                Self.valueCount(shape) != nil, "model.inputShape", shape,
                "values per sample (height × width × channels) that can be counted, at most \(Int.max); \(shape.map(String.init).joined(separator: " × ")) is more"
            )
        }
    }
}

extension TransformerConfig {
    /// Each size in its range and the heads dividing the features.
    func checkRanges() throws(ConfigRangeError) {
        let sizes = 1...ModelConfig.largestSize
        try ConfigRangeError.check(blocks, in: 1...Self.maximumBlocks, "model.transformer.blocks")
        try ConfigRangeError.check(heads, in: sizes, "model.transformer.heads")
        try ConfigRangeError.check(features, in: sizes, "model.transformer.features")
        try ConfigRangeError.check(
            features % heads == 0, "model.transformer.heads", heads,
            "a number of heads dividing model.transformer.features, \(features), into heads of equal size")
        try ConfigRangeError.check(mlpRatio, in: sizes, "model.transformer.mlpRatio")
        try ConfigRangeError.check(dropout >= 0 && dropout < 1, "model.transformer.dropout", dropout, "a number in [0, 1)")
        try ConfigRangeError.check(positions, in: sizes, "model.transformer.positions")
    }
}

extension LayerConfig {
    /// The values this layer gives, at `path` (`model.layers[2]`), its residual body's among them,
    /// each at its own path: its kind's bounds (`LayerKinds/`).
    func checkRanges(at path: String) throws(ConfigRangeError) {
        try kind.spec.checkRanges(self, at: path)
    }
}

extension DataConfig {
    /// The data's numbers: counts, the sample's finite input and target, the block, the shares held out.
    func checkRanges() throws(ConfigRangeError) {
        try ConfigRangeError.check(count, in: 1...Int.max, "data.count")
        for (key, value) in [("input", input), ("target", target)] {
            if let value { try ConfigRangeError.check(value.isFinite, "data.\(key)", value, "a finite number") }
        }
        // A line of n characters takes n + 1 positions (the boundary token first): at least 2.
        try ConfigRangeError.check(blockSize, in: 2...ModelConfig.largestSize, "data.blockSize")
        for (key, share) in [("testSplit", testSplit), ("validationSplit", validationSplit)] {
            if let share { try ConfigRangeError.check(share >= 0 && share < 1, "data.\(key)", share, "a number in [0, 1)") }
        }
        try ConfigRangeError.check(limit, in: 1...Int.max, "data.limit")
        // Tokens 0–255 are the bytes; the embedding is sized by the vocabulary.
        try ConfigRangeError.check(vocabularySize, in: 256...ModelConfig.largestSize, "data.vocabularySize")
    }
}

extension OptimizerConfig {
    /// The optimizer's numbers and its schedule's.
    func checkRanges() throws(ConfigRangeError) {
        try ConfigRangeError.check(
            learningRate.isFinite && learningRate > 0, "optimizer.learningRate", learningRate, "a finite number greater than 0")
        try ConfigRangeError.check(momentum >= 0 && momentum < 1, "optimizer.momentum", momentum, "a number in [0, 1)")
        try ConfigRangeError.check(
            !nesterov || momentum > 0, "optimizer.nesterov", true, "false when momentum is 0 (Nesterov momentum needs momentum > 0)")
        try ConfigRangeError.check(beta1 >= 0 && beta1 < 1, "optimizer.beta1", beta1, "a number in [0, 1)")
        try ConfigRangeError.check(beta2 >= 0 && beta2 < 1, "optimizer.beta2", beta2, "a number in [0, 1)")
        try ConfigRangeError.check(epsilon.isFinite && epsilon > 0, "optimizer.epsilon", epsilon, "a finite number greater than 0")
        try ConfigRangeError.check(
            weightDecay.isFinite && weightDecay >= 0, "optimizer.weightDecay", weightDecay, "a finite number 0 or greater")
        // `every` × the steps per epoch, and the warmup against the run's steps, are checked when
        // the run is built and its steps are known (`stepCount(epochs:stepsPerEpoch:plus:)`).
        try ConfigRangeError.check(schedule.every, in: 1...Int.max, "optimizer.schedule.every")
        if let factor = schedule.factor {
            try ConfigRangeError.check(factor > 0 && factor <= 1, "optimizer.schedule.factor", factor, "a number in (0, 1]")
        }
        if let floor = schedule.minimumFactor {
            try ConfigRangeError.check(floor >= 0 && floor <= 1, "optimizer.schedule.minimumFactor", floor, "a number in [0, 1]")
        }
        try ConfigRangeError.check(schedule.warmupSteps, in: 0...Int.max, "optimizer.schedule.warmupSteps")
    }

    /// Throws at the first number finite as written but infinite in `precision` (1e308 as a Float):
    /// the optimizer would otherwise refuse "inf", a value the config never held. The run builder's
    /// check, and a checkpoint's.
    func checkPrecision(_ precision: TrainingConfig.Precision) throws(ConfigRangeError) {
        guard precision == .float else { return }  // a finite Double is finite in double precision
        let numbers: [(String, Double)] = [
            ("optimizer.learningRate", learningRate), ("optimizer.momentum", momentum), ("optimizer.beta1", beta1),
            ("optimizer.beta2", beta2), ("optimizer.epsilon", epsilon), ("optimizer.weightDecay", weightDecay),
        ]
        for (key, value) in numbers where value.isFinite && !Float(value).isFinite {
            throw ConfigRangeError(
                key: key, value: "\(value)", expected: "a number within float precision, at most about \(Float.greatestFiniteMagnitude) in size")
        }
    }
}

extension TrainingConfig {
    /// The run's length, batches, threads and counting.
    func checkRanges() throws(ConfigRangeError) {
        // Their product with the steps per epoch is counted to `maximumStepCount` when the run is built.
        try ConfigRangeError.check(epochs, in: 1...Int.max, "training.epochs")
        try ConfigRangeError.check(iterations, in: 1...Int.max, "training.iterations")
        try ConfigRangeError.check(steps, in: 1...maximumStepCount, "training.steps")
        try ConfigRangeError.check(evaluateEvery, in: 1...maximumStepCount, "training.evaluateEvery")
        if let steps, let every = evaluateEvery {
            let below = steps / every >= 1 ? steps / every * every : nil, above = (steps / every + 1) * every
            try ConfigRangeError.check(
                steps % every == 0, "training.evaluateEvery", every,
                "a divisor of training.steps (\(steps)), so that the run ends at an evaluation: \(below.map { "steps \($0) or " } ?? "")steps \(above), or another evaluateEvery"
            )
        }
        try ConfigRangeError.check(evaluationBatches, in: 1...10_000, "training.evaluationBatches")
        if let smoothing {
            try ConfigRangeError.check(
                smoothing > 0 && smoothing <= Self.maximumSmoothing, "training.smoothing", smoothing, "a number above 0 and at most 1e6")
        }
        if let norm = clipGradientNorm {
            try ConfigRangeError.check(norm.isFinite && norm > 0, "training.clipGradientNorm", norm, "a finite number greater than 0")
        }
        try ConfigRangeError.check(batchSize, in: 1...Int.max, "training.batchSize")
        try ConfigRangeError.check(blasThreads, in: Self.blasThreadsRange, "training.blasThreads")
        try ConfigRangeError.check(batchThreads, in: Self.batchThreadsRange, "training.batchThreads")
    }
}

extension OutputConfig {
    /// The run directory's name and how often checkpoints and samples come.
    func checkRanges() throws(ConfigRangeError) {
        if let directory {
            // An empty name is the current folder: the run's files would land among whatever is there.
            try ConfigRangeError.check(!directory.isEmpty, "output.directory", "''", "a folder name (leave the key out for runs/<config name>)")
        }
        try ConfigRangeError.check(checkpointEvery, in: 1...Int.max, "output.checkpointEvery")
        try ConfigRangeError.check(
            checkpointSeconds.isFinite && checkpointSeconds > 0, "output.checkpointSeconds", checkpointSeconds, "a finite number greater than 0")
        try ConfigRangeError.check(samples, in: 0...100, "output.samples")
    }
}
