import Foundation
import Testing

@testable import NeuronCore

@Suite("Learning-rate schedules: constant, step, cosine")
struct LearningRateScheduleTests {
    @Test("Constant is 1 at every step")
    func constant() {
        #expect([0, 1, 1_000_000].map { LearningRateSchedule.constant.factor(at: $0) } == [1, 1, 1])
    }

    @Test("Step halves every 3 steps: 1, 1, 1, 0.5, 0.5, 0.5, 0.25, …")
    func step() {
        let schedule = LearningRateSchedule.step(every: 3, factor: 0.5)
        #expect((0..<8).map(schedule.factor(at:)) == [1, 1, 1, 0.5, 0.5, 0.5, 0.25, 0.25])
        #expect(schedule.factor(at: 30) == 1.0 / 1024)
        // Tenfold drops every step: 0.1² is 0.01 up to rounding in pow.
        expectClose(LearningRateSchedule.step(every: 1, factor: 0.1).factor(at: 2), 0.01, tolerance: 1e-17)
    }

    @Test("Cosine: 1 at 0, (1 + min)/2 halfway, min at the end and after")
    func cosine() {
        let toZero = LearningRateSchedule.cosine(totalSteps: 10)
        #expect(toZero.factor(at: 0) == 1)
        expectClose(toZero.factor(at: 5), 0.5, tolerance: 1e-15)
        #expect([10, 11, 1_000].map(toZero.factor(at:)) == [0, 0, 0])
        // Quarter of the way: (1 + cos(π/4))/2 = 1/2 + √2/4.
        expectClose(LearningRateSchedule.cosine(totalSteps: 8).factor(at: 2), 0.5 + 2.0.squareRoot() / 4, tolerance: 1e-15)
        // It only ever falls.
        let factors = (0...10).map(toZero.factor(at:))
        #expect(zip(factors, factors.dropFirst()).allSatisfy { $0 > $1 })

        let toFifth = LearningRateSchedule.cosine(totalSteps: 10, minimumFactor: 0.2)
        #expect(toFifth.factor(at: 0) == 1)
        expectClose(toFifth.factor(at: 5), 0.6, tolerance: 1e-15)
        #expect([10, 11, 1_000].map(toFifth.factor(at:)) == [0.2, 0.2, 0.2])
    }

    @Test("Warmup over 4 steps then cosine over 4: (step + 1)/5 up to 1 at step 4, then the cosine from 1 to its floor")
    func warmupThenCosine() {
        let schedule = LearningRateSchedule.warmup(steps: 4, then: .cosine(totalSteps: 4, minimumFactor: 0.2))
        // nanoGPT's lr·(it + 1)/(warmup + 1) for it < 4: 0.2, 0.4, 0.6, 0.8 (each one division, so exact as Double divides).
        let warmup: [Double] = [1.0 / 5, 2.0 / 5, 3.0 / 5, 4.0 / 5]
        #expect((0..<4).map(schedule.factor(at:)) == warmup)
        #expect(schedule.factor(at: 4) == 1)  // the cosine's step 0
        expectClose(schedule.factor(at: 6), 0.6, tolerance: 1e-15)  // halfway down: (1 + 0.2)/2
        #expect([8, 9, 100].map(schedule.factor(at:)) == [0.2, 0.2, 0.2])
        // Warmup then constant: the rate holds at 1 after the warmup.
        let constant = LearningRateSchedule.warmup(steps: 1, then: .constant)
        #expect([0, 1, 2].map(constant.factor(at:)) == [0.5, 1, 1])
    }

    @Test("The optimizer's rate is learningRate × factor(at: step), step counted from 0")
    func drivesTheOptimizer() throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            var sgd = try SGD<Scalar>(learningRate: 1, schedule: .step(every: 2, factor: 0.5))
            var p: [Scalar] = [0]
            var rates: [Scalar] = []
            for _ in 0..<5 {
                rates.append(sgd.scheduledLearningRate)
                sgd.update(parameters: &p, gradients: [1])
            }
            #expect(rates == [1, 1, 0.5, 0.5, 0.25])
            #expect(p == [-3.25])
            #expect(sgd.learningRate == 1)  // the base rate is untouched; the schedule scales it
        }
        try check(Float.self)
        try check(Double.self)
    }

    @Test("Out-of-range schedules throw, naming the parameter and what is allowed")
    func validation() throws {
        func message(_ schedule: LearningRateSchedule) -> String? {
            do { _ = try schedule.validated(); return nil } catch { return error.description }
        }
        #expect(message(.step(every: 0, factor: 0.5)) == "step schedule's every must be 1 or more, got 0")
        #expect(message(.step(every: 10, factor: 0)) == "step schedule's factor must be in (0, 1], got 0.0")
        #expect(message(.step(every: 10, factor: 1.5)) == "step schedule's factor must be in (0, 1], got 1.5")
        #expect(message(.step(every: 10, factor: .nan)) == "step schedule's factor must be in (0, 1], got nan")
        #expect(message(.cosine(totalSteps: -5)) == "cosine schedule's totalSteps must be 1 or more, got -5")
        #expect(message(.cosine(totalSteps: 5, minimumFactor: -0.1)) == "cosine schedule's minimumFactor must be in [0, 1], got -0.1")
        #expect(message(.cosine(totalSteps: 5, minimumFactor: 1.5)) == "cosine schedule's minimumFactor must be in [0, 1], got 1.5")
        #expect(message(.warmup(steps: 0, then: .constant)) == "warmup's steps must be 1 or more, got 0")
        #expect(message(.warmup(steps: 3, then: .cosine(totalSteps: 0))) == "cosine schedule's totalSteps must be 1 or more, got 0")
        for valid: LearningRateSchedule in [.warmup(steps: 1, then: .constant), .step(every: 1, factor: 1), .cosine(totalSteps: 1, minimumFactor: 1)]
        {
            #expect(try valid.validated() == valid)
        }
    }

    @Test("Schedules survive a JSON round trip (they are saved in checkpoints) and describe themselves")
    func codableAndDescription() throws {
        let schedules: [LearningRateSchedule] = [
            .constant, .step(every: 30, factor: 0.1), .cosine(totalSteps: 1000, minimumFactor: 0.05),
            .warmup(steps: 100, then: .cosine(totalSteps: 900, minimumFactor: 0.1)),
        ]
        let decoded = try JSONDecoder().decode([LearningRateSchedule].self, from: JSONEncoder().encode(schedules))
        #expect(decoded == schedules)
        #expect(
            schedules.map(\.description) == [
                "constant", "step(every: 30, factor: 0.1)", "cosine(totalSteps: 1000, minimumFactor: 0.05)",
                "warmup(steps: 100, then: cosine(totalSteps: 900, minimumFactor: 0.1))",
            ])
    }
}
