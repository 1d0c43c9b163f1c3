// A checkpoint is input like a config: anyone can edit its header. Every field of the run state is
// checked on load, against its range and against the others and the tensors, before anything is
// built from it, so that what would crash, hang or overflow later (an all-zero generator, a batch
// index of -1, an epoch of Int.max, an optimizer buffer of the wrong length) is refused here with
// the file and the field named.
import Foundation
import NeuronCore

extension CheckpointState {
    /// Checks every field against its range, the others and `tensors`.
    /// - Throws: ``CheckpointError/invalidState(path:field:reason:)`` naming `file` and the field.
    func validate(tensors: [String: SafeTensors.Entry], file: String) throws(CheckpointError) {
        func invalid(_ field: String, _ reason: String) -> CheckpointError { .invalidState(path: file, field: field, reason: reason) }

        guard format == Self.currentFormat else { throw invalid("format", "\(format); this version reads format \(Self.currentFormat)") }

        try config.validate(file: file)
        // The saved config is as written (a neuron config as sugar); the checks below are of what the run trained.
        let config = self.config.desugared
        // Each saved override is a value the saved config holds (and was checked with it).
        if let overrides, overrides.applied(to: self.config).desugared != config {
            throw invalid("overrides", "\(overrides.arguments) but the saved config does not hold these values")
        }
        guard optimizerKind == config.optimizer.kind else {
            throw invalid("optimizerKind", "\(optimizerKind.rawValue) but config.optimizer.kind is \(config.optimizer.kind.rawValue)")
        }

        if precision != config.training.precision {
            throw invalid("precision", "\(precision.rawValue) but config.training.precision is \(config.training.precision.rawValue)")
        }

        // The network: each layer's tensors, of the shapes the config's units and the features make.
        guard !featureNames.isEmpty else { throw invalid("featureNames", "empty; a network takes at least one feature") }
        // A text model's embedding is sized by the vocabulary: one goes with the other.
        if config.model.takesTokens, vocabulary == nil {
            throw invalid("vocabulary", "missing; the config's model reads text (its first layer is an embedding), which needs its tokens")
        }
        if !config.model.takesTokens, vocabulary != nil {
            throw invalid("vocabulary", "present, but the config's model does not read text (its first layer is not an embedding)")
        }
        if let inputs = config.model.inputs, inputs != featureNames.count {
            throw invalid("config.model.inputs", "\(inputs) but featureNames names \(featureNames.count) features")
        }
        if config.model.takesImages, let shape = config.model.inputShape, ModelConfig.valueCount(shape) != featureNames.count {
            throw invalid(
                "config.model.inputShape",
                "\(shape) holds \(ModelConfig.valueCount(shape).map(String.init) ?? "more than Int.max") values but featureNames names \(featureNames.count) features"
            )
        }
        // The tensors the config's layers have, built for the saved features (layers hold no
        // buffers until they run, so a hostile size costs nothing here).
        let layers: [any Layer<Float>]
        do {
            layers = try config.model.layers(Float.self, features: featureNames.count, vocabulary: vocabulary?.count)
        } catch {
            throw invalid("config.\(error.path)", "\(error.error); the config's model does not fit its own features")
        }
        let dtype: SafeTensors.DType = precision == .float ? .f32 : .f64
        var expected: [(name: String, shape: [Int])] = []
        for (i, layer) in layers.enumerated() {
            for (name, shape) in layer.parameterShapes + layer.stateShapes {
                let tensor = "layers.\(i).\(name)"
                expected.append((tensor, Checkpoint.fileShape(shape, order: layer.pytorchOrder(of: name))))
            }
        }
        var parameterCount = 0
        let parameterNames = Set(layers.enumerated().flatMap { i, layer in layer.parameterShapes.map { "layers.\(i).\($0.name)" } })
        for (name, shape) in expected {
            guard let entry = tensors[name] else {
                throw invalid(name, "missing; the config's model needs it, of shape \(SafeTensors.format(shape))")
            }
            guard entry.shape == shape else {
                throw invalid(
                    name, "shape \(SafeTensors.format(entry.shape)); the config's model and featureNames make it \(SafeTensors.format(shape))")
            }
            try checkFinite(entry, dtype: dtype, file: file)
            // A variance below 0 makes batch norm's 1/√(var + ε) NaN for every sample.
            if name.hasSuffix(".running_var") { try checkNotNegative(entry, dtype: dtype, file: file) }
            if parameterNames.contains(name) { parameterCount += entry.bytes.count / dtype.size }  // bounded by the file's size
        }
        // The layers chain and end as the loss needs (the buffers this allocates are the size of
        // tensors the file holds).
        let rebuilt: Network<Float>
        do {
            rebuilt = try Network(layers, loss: config.model.effectiveLoss)
        } catch {
            throw invalid("config.model", "\(error)")
        }
        // The network the tensors were saved from: an image shape edited to another of the same
        // size (8×8×1 to 16×4×1) fits every tensor but reads each sample as another image.
        guard rebuilt.description == network else {
            throw invalid("network", "\(network) but the config's model and featureNames make \(rebuilt.description)")
        }
        let outputs = layers.last!.outputShape.reduce(1, *)
        if let classNames, classNames.count != outputs {
            throw invalid("classNames", "\(classNames.count) names for \(outputs) outputs")
        }

        // The optimizer's buffers: the ones its kind keeps, one value per parameter (none before the first step).
        let bufferNames: [String] =
            config.optimizer.kind == .adam ? ["m", "v"] : config.optimizer.momentum != 0 ? ["velocity"] : []
        for name in bufferNames {
            let key = "optimizer.\(name)"
            let length = optimizerStep == 0 ? 0 : parameterCount
            guard let entry = tensors[key] else { throw invalid(key, "missing; a \(config.optimizer.kind.rawValue) optimizer keeps it") }
            guard entry.shape == [length] else {
                throw invalid(
                    key, "shape \(SafeTensors.format(entry.shape)); expected (\(length)), one value per parameter (none before the first step)")
            }
            try checkFinite(entry, dtype: dtype, file: file)
        }
        let known = Set(expected.map(\.name) + bufferNames.map { "optimizer.\($0)" })
        if let stray = tensors.keys.sorted().first(where: { !known.contains($0) }) {
            throw invalid(stray, "a tensor this run's model and optimizer do not have")
        }

        // Counts: the position in the epochs (none saved for a run on one sample without a seed, an epoch a step).
        // Steps are counted to `maximumStepCount`, which keeps every later count (`stepsTaken + 1`) clear of overflow.
        let (epoch, step) = (progress.epoch, progress.step)
        guard step >= 0, step <= maximumStepCount else { throw invalid("step", "\(step); expected 0 to \(maximumStepCount)") }
        guard optimizerStep == step else { throw invalid("optimizerStep", "\(optimizerStep) but step is \(step)") }
        guard epoch >= 0, epoch <= step else { throw invalid("epoch", "\(epoch); expected 0 to step (\(step))") }
        guard records.count <= epoch else { throw invalid("records", "\(records.count) records for \(epoch) epochs") }
        if let count = recordCount {
            guard count > records.count, count <= epoch, records.count <= Checkpoint.recordLimit else {
                throw invalid(
                    "recordCount", "\(count) for \(records.count) records at epoch \(epoch); expected more than the records, at most the epochs")
            }
        }
        for (i, record) in records.enumerated() where !(1...epoch).contains(record.epoch) || !(0...step).contains(record.step) {
            throw invalid("records[\(i)]", "epoch \(record.epoch), step \(record.step); the checkpoint is at epoch \(epoch), step \(step)")
        }
        if position == nil, config.data.kind == .sample {
            guard epoch == step else { throw invalid("epoch", "\(epoch); on one sample the epochs are the steps (\(step))") }
            guard step <= config.training.epochs else { throw invalid("step", "\(step) steps, more than the run's \(config.training.epochs)") }
        } else {
            guard let position else { throw invalid("position", "missing; a network's checkpoint saves its epoch order and generator") }
            try position.validate(step: step, epoch: epoch, file: file)
        }
        // The schedule and the progress count in steps: epochs (and a step schedule's interval) ×
        // batches (on one sample, an epoch a step), as the run builder counts them.
        let perEpoch = position?.batches.batchesPerEpoch ?? 1
        for (key, epochs) in [
            ("config.training.epochs", config.training.epochs), ("config.optimizer.schedule.every", config.optimizer.schedule.every ?? 1),
        ] where stepCount(epochs: epochs, stepsPerEpoch: perEpoch) == nil {
            throw invalid(key, "\(epochs) epochs of \(perEpoch) steps are more than \(maximumStepCount) steps")
        }

        try preprocessing.validate(features: featureNames.count, file: file)
    }

    /// Every element of a float tensor (already checked finite, of the run's dtype) 0 or more.
    private func checkNotNegative(_ entry: SafeTensors.Entry, dtype: SafeTensors.DType, file: String) throws(CheckpointError) {
        let index: Int?
        switch dtype {
        case .f32: index = SafeTensors.words(entry.bytes, as: UInt32.self).firstIndex { Float(bitPattern: $0) < 0 }
        default: index = SafeTensors.words(entry.bytes, as: UInt64.self).firstIndex { Double(bitPattern: $0) < 0 }
        }
        if let index {
            throw .invalidState(path: file, field: entry.name, reason: "element \(index) is below 0; a variance is 0 or more")
        }
    }

    /// Every element of a float tensor finite, in the run's precision.
    private func checkFinite(_ entry: SafeTensors.Entry, dtype: SafeTensors.DType, file: String) throws(CheckpointError) {
        guard entry.dtype == dtype else {
            throw .invalidState(
                path: file, field: entry.name, reason: "\(entry.dtype.rawValue) but the run's precision is \(precision) (\(dtype.rawValue))")
        }
        let index: Int?
        switch dtype {
        case .f32: index = SafeTensors.words(entry.bytes, as: UInt32.self).firstIndex { !Float(bitPattern: $0).isFinite }
        default: index = SafeTensors.words(entry.bytes, as: UInt64.self).firstIndex { !Double(bitPattern: $0).isFinite }
        }
        if let index {
            throw .invalidState(
                path: file, field: entry.name,
                reason: "element \(index) is not finite (NaN or infinity): these weights cannot be evaluated, predicted with or trained on")
        }
    }
}

extension TrainingPosition {
    /// The position against itself and the checkpoint's `step` and `epoch`.
    func validate(step: Int, epoch: Int, file: String) throws(CheckpointError) {
        func invalid(_ field: String, _ reason: String) -> CheckpointError { .invalidState(path: file, field: "position.\(field)", reason: reason) }
        let perEpoch = batches.batchesPerEpoch
        guard (0..<perEpoch).contains(batchIndex) else {
            throw invalid("batchIndex", "\(batchIndex); expected 0 to \(perEpoch - 1) (\(perEpoch) batches per epoch)")
        }
        guard self.epoch == epoch else { throw invalid("epoch", "\(self.epoch) but epoch is \(epoch)") }
        guard stepsTaken == step else { throw invalid("stepsTaken", "\(stepsTaken) but step is \(step)") }
        // Every epoch has the same batches, so the steps follow from the epoch and the batch.
        let steps = stepCount(epochs: self.epoch, stepsPerEpoch: perEpoch, plus: batchIndex)
        guard steps == stepsTaken else {
            throw invalid(
                "stepsTaken",
                "\(stepsTaken) but \(self.epoch) epochs of \(perEpoch) batches and \(batchIndex) more make \(steps.map { "\($0)" } ?? "more than \(maximumStepCount)")"
            )
        }
        // The sums are cleared when the next epoch's first step starts: at an epoch's end they still hold the whole epoch.
        let progress = epochProgress
        let batchesSummed = batchIndex == 0 && stepsTaken > 0 ? perEpoch : batchIndex
        let samples = Swift.min(batchesSummed * batches.batchSize, batches.count)
        guard progress.batches == batchesSummed else {
            throw invalid(
                "epochProgress.batches", "\(progress.batches); at batch \(batchIndex) of an epoch of \(perEpoch) the sums hold \(batchesSummed)")
        }
        guard progress.samples == samples else {
            throw invalid("epochProgress.samples", "\(progress.samples); \(batchIndex) batches hold \(samples)")
        }
        guard (0...samples).contains(progress.correct) else {
            throw invalid("epochProgress.correct", "\(progress.correct); expected 0 to \(samples)")
        }
        guard progress.lossSum.isFinite else { throw invalid("epochProgress.lossSum", "\(progress.lossSum); expected a finite number") }
    }
}

extension Preprocessing {
    /// Statistics for `features` columns, every number finite (a deviation positive).
    func validate(features: Int, file: String) throws(CheckpointError) {
        func invalid(_ reason: String) -> CheckpointError { .invalidState(path: file, field: "preprocessing", reason: reason) }
        switch self {
        case .none: break
        case let .scale(factor):
            guard factor.isFinite, factor != 0 else { throw invalid("scale factor \(factor); expected a finite number other than 0") }
        case let .standardize(mean, deviation):
            guard mean.count == features, deviation.count == features else {
                throw invalid("\(mean.count) means and \(deviation.count) standard deviations for \(features) features")
            }
            guard mean.allSatisfy(\.isFinite) else { throw invalid("a mean is not finite") }
            guard deviation.allSatisfy({ $0.isFinite && $0 > 0 }) else { throw invalid("a standard deviation is not a finite number above 0") }
        }
    }
}

extension RunConfig {
    /// The ranges the config loader checks (the same functions, Config/ConfigRanges.swift), and the
    /// keys each data kind requires: a saved config was loaded once, so what only a file can get
    /// wrong (a key of another kind, which a saved config holds with its default) is not asked again.
    func validate(file: String) throws(CheckpointError) {
        func check(_ ok: Bool, _ key: String, _ value: Any, _ expected: String) throws(CheckpointError) {
            guard ok else { throw .invalidState(path: file, field: "config.\(key)", reason: "\(value); expected \(expected)") }
        }
        // The sugar's own rule, then the checks of what it stands for.
        try check((model.neuron != nil) == (data.kind == .sample), "data.kind", data.kind.rawValue, "sample for the neuron, and only for it")
        let desugared = desugared
        do {
            try checkRanges()
            // In the precision the run trains in (the neuron's always double).
            try desugared.optimizer.checkPrecision(desugared.training.precision)
        } catch {
            throw .invalidState(path: file, field: "config.\(error.key)", reason: "\(error.value); expected \(error.expected)")
        }
        if model.transformer != nil {
            try check(model.layers.isEmpty, "model.layers", "\(model.layers.count) layers beside a transformer", "none")
        }
        // The keys each data kind requires (the data reader relies on the loader having checked them).
        let required: [(String, Bool)] =
            switch data.kind {
            case .csv: [("path", data.path != nil), ("labelColumn", data.labelColumn != nil)]
            case .idx: [("trainImages", data.trainImages != nil), ("trainLabels", data.trainLabels != nil)]
            case .synthetic: [("name", data.name != nil)]
            case .sample: [("input", data.input != nil), ("target", data.target != nil)]
            case .text: [("path", data.path != nil)]
            }
        for (key, given) in required { try check(given, "data.\(key)", "nothing", "a value for a \(data.kind.rawValue) dataset") }
        try check((data.testImages == nil) == (data.testLabels == nil), "data.testImages", "one of testImages and testLabels", "both or neither")
    }
}
