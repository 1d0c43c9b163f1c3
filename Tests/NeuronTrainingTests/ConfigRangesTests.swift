import NeuronCore
import Testing

@testable import NeuronTraining

/// The range error `body` throws, or nil.
private func rangeError(_ body: () throws(ConfigRangeError) -> Void) -> ConfigRangeError? {
    do {
        try body()
        return nil
    } catch {
        return error
    }
}

/// The xor network, in code.
private func xorConfig() -> RunConfig {
    var data = DataConfig(kind: .synthetic)
    data.name = .xor
    return RunConfig(model: ModelConfig(layers: [LayerConfig(units: 4), LayerConfig(units: 1)]), data: data)
}

@Suite("Config ranges: each bound stated once, for the loader, a checkpoint and the run builder")
struct ConfigRangesTests {
    @Test("A value out of range names its whole key, the value and what the key allows")
    func errors() {
        var config = xorConfig()
        #expect(rangeError { () throws(ConfigRangeError) in try config.checkRanges() } == nil)
        config.training.batchThreads = 257
        #expect(
            rangeError { () throws(ConfigRangeError) in try config.checkRanges() }
                == ConfigRangeError(key: "training.batchThreads", value: "257", expected: "a whole number from 1 to 256"))
        config.training.batchThreads = 256
        config.optimizer.schedule.warmupSteps = -1
        #expect(
            rangeError { () throws(ConfigRangeError) in try config.checkRanges() }
                == ConfigRangeError(key: "optimizer.schedule.warmupSteps", value: "-1", expected: "a whole number 0 or greater"))
    }

    @Test("A residual body's layers are checked at their own paths")
    func residualBody() {
        var config = xorConfig()
        var body = LayerConfig(kind: .dropout)
        body.rate = 1
        var residual = LayerConfig(kind: .residual)
        residual.layers = [LayerConfig(units: 4), body]
        config.model.layers.insert(residual, at: 1)
        #expect(rangeError { () throws(ConfigRangeError) in try config.checkRanges() }?.key == "model.layers[1].layers[1].rate")
    }

    @Test("The bounds where the copies had drifted: batchThreads 1 to 256; steps counted to 2⁵³")
    func bounds() {
        #expect(TrainingConfig.batchThreadsRange == 1...256 && TrainingConfig.blasThreadsRange == 1...1024)
        #expect(ModelConfig.largestSize == 16_777_216 && maximumStepCount == 9_007_199_254_740_992)
    }

    @Test("Float precision: a number finite as written but infinite as a Float, named at its key; any finite number in double")
    func precision() {
        var optimizer = OptimizerConfig()
        optimizer.weightDecay = 1e308
        #expect(rangeError { () throws(ConfigRangeError) in try optimizer.checkPrecision(.float) }?.key == "optimizer.weightDecay")
        #expect(rangeError { () throws(ConfigRangeError) in try optimizer.checkPrecision(.double) } == nil)
        optimizer.weightDecay = 3e38
        #expect(rangeError { () throws(ConfigRangeError) in try optimizer.checkPrecision(.float) } == nil)
    }
}
