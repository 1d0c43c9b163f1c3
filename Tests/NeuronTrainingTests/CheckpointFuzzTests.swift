import Foundation
import NeuronCore
import Testing

@testable import NeuronTraining

/// A key or an index into a JSON value.
private enum Step {
    case key(String), index(Int)
}

/// Every path to a value inside a JSON value (objects' members and arrays' elements, leaves included).
private func paths(_ value: Any, _ prefix: [Step] = []) -> [[Step]] {
    var found: [[Step]] = prefix.isEmpty ? [] : [prefix]
    if let object = value as? [String: Any] {
        // In key order: a dictionary's own order changes from process to process, and the loop must not.
        for (key, inner) in object.sorted(by: { $0.key < $1.key }) { found += paths(inner, prefix + [.key(key)]) }
    } else if let array = value as? [Any] {
        // A few elements of a long array are enough.
        for i in Set([0, array.count / 2, array.count - 1]) where i >= 0 && i < array.count { found += paths(array[i], prefix + [.index(i)]) }
    }
    return found
}

/// `value` with the value at `path` replaced (or removed when `replacement` is nil).
private func replacing(_ value: Any, at path: ArraySlice<Step>, with replacement: Any?) -> Any {
    guard let first = path.first else { return replacement ?? NSNull() }
    switch first {
    case let .key(key):
        var object = value as? [String: Any] ?? [:]
        if path.count == 1, replacement == nil {
            object[key] = nil
        } else {
            object[key] = replacing(object[key] ?? NSNull(), at: path.dropFirst(), with: replacement)
        }
        return object
    case let .index(i):
        var array = value as? [Any] ?? []
        guard i < array.count else { return array }
        if path.count == 1, replacement == nil {
            array.remove(at: i)
        } else {
            array[i] = replacing(array[i], at: path.dropFirst(), with: replacement)
        }
        return array
    }
}

/// Values that have broken readers: huge and negative numbers, non-numbers, wrong types.
private func hostileValues() -> [Any?] {
    [
        nil, NSNull(), Int.max, Int.min, -1, 0, 1, 1 << 53, 1e308, -1e308, 0.5, 3_000_000_000, "NaN", "Infinity", "", "x",
        [Any](), [0, 0, 0, 0], [1], [String: Any](), true, ["a", "b"], Array(repeating: 0, count: 120),
    ]
}

@Suite("Checkpoint reader under a seeded mutation fuzz loop")
struct CheckpointFuzzTests {
    @Test("3,000 mutated checkpoints (bit flips, truncation, byte edits, hostile values in the run state) each load or throw a typed error")
    func fuzz() throws {
        let seeds = try [try irisCheckpoint(steps: 13), try irisCheckpoint(steps: 8, optimizer: "{kind: adam, learningRate: 0.01}")].map {
            try $0.encoded()
        }
        let hostile = hostileValues()
        var random = SeededGenerator(seed: 10)
        var (loaded, refused) = (0, 0)
        let inputs = 3_000
        let started = ContinuousClock.now
        for n in 0..<inputs {
            var bytes = seeds[n % seeds.count]
            switch random.index(below: 5) {
            case 0:  // bit flips anywhere
                for _ in 0...random.index(below: 8) {
                    let i = random.index(below: bytes.count)
                    bytes[i] ^= 1 << UInt8(random.index(below: 8))
                }
            case 1:  // bit flips in the header
                let header = 8 + Int(bytes[0]) + Int(bytes[1]) << 8
                for _ in 0...random.index(below: 4) {
                    let i = random.index(below: min(header, bytes.count))
                    bytes[i] ^= 1 << UInt8(random.index(below: 8))
                }
            case 2:  // truncation
                bytes = Array(bytes.prefix(random.index(below: bytes.count)))
            case 3:  // bytes overwritten, inserted or removed
                let i = random.index(below: bytes.count)
                switch random.index(below: 3) {
                case 0: bytes[i] = UInt8(random.index(below: 256))
                case 1: bytes.insert(UInt8(random.index(below: 256)), at: i)
                default: bytes.remove(at: i)
                }
            default:  // a hostile value, or a removed key, somewhere in the run state
                let (entries, metadata) = try SafeTensors.decode(bytes, source: "seed")
                let state = try JSONSerialization.jsonObject(with: Data(metadata[Checkpoint.stateKey]!.utf8))
                var edited = state
                for _ in 0...random.index(below: 2) {
                    let all = paths(edited)
                    edited = replacing(edited, at: all[random.index(below: all.count)][...], with: hostile[random.index(below: hostile.count)])
                }
                var mutated = metadata
                mutated[Checkpoint.stateKey] = String(decoding: try JSONSerialization.data(withJSONObject: edited), as: UTF8.self)
                bytes = SafeTensors.encode(entries, metadata: mutated)
            }
            let checkpoint: LoadedCheckpoint
            do {
                checkpoint = try Checkpoint.decode(bytes, file: "fuzz-\(n)")
            } catch {
                refused += 1  // a CheckpointError: the reader's errors are typed
                continue
            }
            loaded += 1
            // What loads must also build and train a step, or say why not with a typed error (any other fails the test).
            do {
                var run = try RunBuilder.build(checkpoint.state.config, resume: checkpoint)
                _ = run.engine.step()
            } catch is RunError {} catch is DataError {} catch is NetworkError {} catch is OptimizerError {} catch is CheckpointError {}
        }
        let seconds = (ContinuousClock.now - started) / .seconds(1)
        #expect(loaded + refused == inputs)
        #expect(loaded > 0 && refused > 0)
        print("checkpoint fuzz: \(inputs) inputs, \(loaded) loaded, \(refused) refused with a CheckpointError, 0 crashes, \(seconds) s")
    }
}
