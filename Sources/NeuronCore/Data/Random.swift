// Seeded random numbers of our own, so the same seed gives the same numbers on every machine and
// every Swift version (the standard library's `random(in:using:)` algorithms are not promised).
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// xoshiro256** (Blackman & Vigna), seeded through SplitMix64: fast, small state, good statistics.
public struct SeededGenerator: RandomNumberGenerator, Equatable, Sendable, Codable {
    /// The four words of state; saving and restoring them resumes the exact stream.
    public private(set) var state: [UInt64]

    /// A generator whose whole stream is determined by `seed`.
    public init(seed: UInt64) {
        var splitMix = seed
        state = (0..<4).map { _ in Self.splitMix64(&splitMix) }
    }

    /// Stream `stream` of `seed`: the streams of one seed are independent generators, so that the
    /// `i`th of a list of draws (a sampled line) depends on the seed and `i` alone, not on how many
    /// are drawn or in what groups.
    public init(seed: UInt64, stream: Int) {
        self.init(seed: mix64(mix64(seed) &+ UInt64(truncatingIfNeeded: stream) &* 0x9E37_79B9_7F4A_7C15))
    }

    /// Takes `other`'s state word by word into this generator's own storage: a copy that, unlike
    /// an assignment, allocates nothing when this generator's storage is its own.
    public mutating func copyState(from other: SeededGenerator) {
        for i in state.indices { state[i] = other.state[i] }
    }

    /// A generator resumed from a saved ``state``.
    /// - Throws: ``DataError/invalidGeneratorState(_:)`` unless there are four words, not all zero.
    public init(state: [UInt64]) throws(DataError) {
        guard state.count == 4, state.contains(where: { $0 != 0 }) else { throw .invalidGeneratorState(state) }
        self.state = state
    }

    /// A saved generator, checked as ``init(state:)`` checks it: xoshiro's all-zero state never
    /// leaves zero, and a generator stuck there would make every shuffle spin forever.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let state = try container.decode([UInt64].self, forKey: .state)
        do {
            try self.init(state: state)
        } catch {
            throw DecodingError.dataCorruptedError(forKey: .state, in: container, debugDescription: error.description)
        }
    }

    private enum CodingKeys: String, CodingKey { case state }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        let result = rotateLeft(state[1] &* 5, 7) &* 9
        let t = state[1] << 17
        state[2] ^= state[0]
        state[3] ^= state[1]
        state[1] ^= state[2]
        state[0] ^= state[3]
        state[2] ^= t
        state[3] = rotateLeft(state[3], 45)
        return result
    }

    /// A uniform double in [0, 1) from the top 53 bits.
    public mutating func nextUnit() -> Double {
        Double(next() >> 11) * 0x1p-53
    }

    /// A uniform double in [lower, upper).
    public mutating func uniform(_ lower: Double, _ upper: Double) -> Double {
        lower + (upper - lower) * nextUnit()
    }

    /// A standard normal double (Box–Muller; one of the pair, so each call uses two draws).
    public mutating func normal() -> Double {
        let u1 = 1 - nextUnit()  // (0, 1]: log stays finite
        let u2 = nextUnit()
        return (-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2)
    }

    /// A uniform integer in 0..<upperBound, without modulo bias (Lemire's method).
    public mutating func index(below upperBound: Int) -> Int {
        precondition(upperBound > 0, "upper bound must be positive")
        let bound = UInt64(upperBound)
        var product = next().multipliedFullWidth(by: bound)
        if product.low < bound {
            let threshold = (0 &- bound) % bound
            while product.low < threshold { product = next().multipliedFullWidth(by: bound) }
        }
        return Int(product.high)
    }

    /// Shuffles `array` in place (Fisher–Yates, from the end).
    public mutating func shuffle<T>(_ array: inout [T]) {
        guard array.count > 1 else { return }
        for i in stride(from: array.count - 1, to: 0, by: -1) {
            array.swapAt(i, index(below: i + 1))
        }
    }

    private static func splitMix64(_ x: inout UInt64) -> UInt64 {
        x &+= 0x9E37_79B9_7F4A_7C15
        var z = x
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@inline(__always)
private func rotateLeft(_ x: UInt64, _ k: UInt64) -> UInt64 { (x << k) | (x >> (64 - k)) }
