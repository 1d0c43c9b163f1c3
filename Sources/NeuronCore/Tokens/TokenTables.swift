/// The two hash tables under byte-pair encoding and training, by open addressing: a pair of token ids to a
/// value (the merge table, the trainer's pair slots), and a byte string to a value (whole tokens, the trainer's
/// distinct chunks). Swift's `Dictionary` hashes through a per-process random seed and a generic `Hasher`; these
/// hash one or two machine words and probe linearly, which is what an encoder's innermost lookup can afford.

/// A table from a pair of token ids to a 64-bit value, never shrinking; at most half full.
struct PairTable: Sendable {
    /// `left << 32 | right` per slot, or `empty`.
    private var keys: [UInt64]
    private var values: [UInt64]
    private var shift: UInt64
    private(set) var count = 0

    /// No pair has this key: token ids are below 2³¹.
    private static let empty = UInt64.max

    init(minimumCapacity: Int = 16) {
        var capacity = 16
        while capacity < 2 * minimumCapacity { capacity *= 2 }
        keys = Array(repeating: Self.empty, count: capacity)
        values = Array(repeating: 0, count: capacity)
        shift = UInt64(64 - capacity.trailingZeroBitCount)
    }

    @inline(__always) static func key(_ left: UInt32, _ right: UInt32) -> UInt64 {
        UInt64(left) << 32 | UInt64(right)
    }

    /// The first slot to probe: Fibonacci hashing (the golden ratio's multiple), whose high bits mix every key bit.
    @inline(__always) private func home(_ key: UInt64) -> Int {
        Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) >> shift)
    }

    /// The value of `(left, right)`, or nil.
    @inline(__always) func value(_ left: UInt32, _ right: UInt32) -> UInt64? {
        let key = Self.key(left, right)
        let mask = keys.count - 1
        var slot = home(key)
        while true {
            let found = keys[slot]
            if found == key { return values[slot] }
            if found == Self.empty { return nil }
            slot = (slot + 1) & mask
        }
    }

    /// Sets the value of `(left, right)` if it has none; returns the value it then has and whether it was new.
    @discardableResult
    mutating func insert(_ left: UInt32, _ right: UInt32, value: UInt64) -> (value: UInt64, inserted: Bool) {
        if 2 * (count + 1) > keys.count { grow() }
        let key = Self.key(left, right)
        let mask = keys.count - 1
        var slot = home(key)
        while true {
            let found = keys[slot]
            if found == key { return (values[slot], false) }
            if found == Self.empty {
                keys[slot] = key
                values[slot] = value
                count += 1
                return (value, true)
            }
            slot = (slot + 1) & mask
        }
    }

    private mutating func grow() {
        let oldKeys = keys, oldValues = values
        self = PairTable(minimumCapacity: oldKeys.count)
        for slot in oldKeys.indices where oldKeys[slot] != Self.empty {
            insert(UInt32(oldKeys[slot] >> 32), UInt32(truncatingIfNeeded: oldKeys[slot]), value: oldValues[slot])
        }
    }
}

/// A table from byte strings to 32-bit values; the strings are copied into one array. Never shrinks.
struct ByteStringTable: Sendable {
    /// Entry i's bytes are `bytes[starts[i]..<starts[i + 1]]`.
    private(set) var bytes: [UInt8] = []
    private var starts: [Int] = [0]
    private(set) var values: [UInt32] = []
    /// Per slot: the entry's index + 1 (0 is empty), and its hash to compare before the bytes.
    private var slots: [Int32]
    private var hashes: [UInt64]
    private var shift: UInt64

    init(minimumCapacity: Int = 16) {
        var capacity = 16
        while capacity < 2 * minimumCapacity { capacity *= 2 }
        slots = Array(repeating: 0, count: capacity)
        hashes = Array(repeating: 0, count: capacity)
        shift = UInt64(64 - capacity.trailingZeroBitCount)
    }

    /// The number of entries.
    var count: Int { values.count }

    /// Entry `index`'s bytes.
    func entry(_ index: Int) -> ArraySlice<UInt8> { bytes[starts[index]..<starts[index + 1]] }

    /// A hash of `text`: eight bytes at a time, each word folded in by a rotate, an xor and a multiply (FxHash's
    /// step), the length last so that a string and its zero-padded extension differ.
    @inline(__always) static func hash(_ text: UnsafeRawBufferPointer) -> UInt64 {
        var h: UInt64 = 0
        var i = 0
        while i + 8 <= text.count {
            h = ((h << 5 | h >> 59) ^ text.loadUnaligned(fromByteOffset: i, as: UInt64.self)) &* 0x517C_C1B7_2722_0A95
            i += 8
        }
        if i < text.count {
            var tail: UInt64 = 0
            var shift: UInt64 = 0
            while i < text.count {
                tail |= UInt64(text[i]) << shift
                shift += 8
                i += 1
            }
            h = ((h << 5 | h >> 59) ^ tail) &* 0x517C_C1B7_2722_0A95
        }
        return ((h << 5 | h >> 59) ^ UInt64(text.count)) &* 0x517C_C1B7_2722_0A95
    }

    @inline(__always) private func home(_ hash: UInt64) -> Int {
        Int(truncatingIfNeeded: (hash &* 0x9E37_79B9_7F4A_7C15) >> shift)
    }

    /// The index of the entry holding `text`, or nil.
    @inline(__always) func index(of text: UnsafeRawBufferPointer) -> Int? {
        let h = Self.hash(text)
        let mask = slots.count - 1
        var slot = home(h)
        return bytes.withUnsafeBytes { stored in
            while true {
                let entry = Int(slots[slot]) - 1
                if entry < 0 { return nil }
                if hashes[slot] == h {
                    let start = starts[entry], length = starts[entry + 1] - start
                    if length == text.count
                        && (length == 0 || memoryEqual(stored.baseAddress! + start, text.baseAddress!, length))
                    {
                        return entry
                    }
                }
                slot = (slot + 1) & mask
            }
        }
    }

    /// The value stored for `text`, or nil.
    @inline(__always) func value(of text: UnsafeRawBufferPointer) -> UInt32? {
        index(of: text).map { values[$0] }
    }

    /// Adds `text` with `value` unless it is there; returns its entry's index and whether it was new.
    @discardableResult
    mutating func insert(_ text: UnsafeRawBufferPointer, value: UInt32) -> (index: Int, inserted: Bool) {
        if let found = index(of: text) { return (found, false) }
        if 2 * (count + 1) > slots.count { grow() }
        bytes.append(contentsOf: text)
        starts.append(bytes.count)
        values.append(value)
        place(entry: count - 1, hash: Self.hash(text))
        return (count - 1, true)
    }

    /// Sets the value of entry `index`.
    mutating func setValue(_ value: UInt32, at index: Int) { values[index] = value }

    private mutating func place(entry: Int, hash: UInt64) {
        let mask = slots.count - 1
        var slot = home(hash)
        while slots[slot] != 0 { slot = (slot + 1) & mask }
        slots[slot] = Int32(entry + 1)
        hashes[slot] = hash
    }

    private mutating func grow() {
        var capacity = slots.count * 2
        while capacity < 4 * count { capacity *= 2 }
        slots = Array(repeating: 0, count: capacity)
        hashes = Array(repeating: 0, count: capacity)
        shift = UInt64(64 - capacity.trailingZeroBitCount)
        let stored = bytes
        stored.withUnsafeBytes { all in
            for entry in 0..<count {
                let start = starts[entry]
                place(entry: entry, hash: Self.hash(UnsafeRawBufferPointer(rebasing: all[start..<starts[entry + 1]])))
            }
        }
    }
}

/// Whether `length` bytes at `a` and `b` are equal.
@inline(__always) func memoryEqual(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, _ length: Int) -> Bool {
    var i = 0
    while i + 8 <= length {
        if a.loadUnaligned(fromByteOffset: i, as: UInt64.self) != b.loadUnaligned(fromByteOffset: i, as: UInt64.self) {
            return false
        }
        i += 8
    }
    while i < length {
        if a.load(fromByteOffset: i, as: UInt8.self) != b.load(fromByteOffset: i, as: UInt8.self) { return false }
        i += 1
    }
    return true
}

/// What a ``BinaryHeap`` orders: whether an element comes off before another.
protocol HeapOrdered {
    func precedes(_ other: Self) -> Bool
}

/// A binary heap whose top is the element that precedes every other: the encoder's pairs of a long chunk, the
/// trainer's pairs by count. Never shrinks its storage.
struct BinaryHeap<Element: HeapOrdered> {
    private var elements: [Element] = []

    init() {}

    /// A heap of `elements`, in linear time.
    init(_ elements: [Element]) {
        self.elements = elements
        for i in stride(from: elements.count / 2 - 1, through: 0, by: -1) { siftDown(i) }
    }

    mutating func removeAll() { elements.removeAll(keepingCapacity: true) }

    mutating func push(_ element: Element) {
        elements.append(element)
        var child = elements.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard elements[child].precedes(elements[parent]) else { break }
            elements.swapAt(parent, child)
            child = parent
        }
    }

    /// The top, taken off; nil when empty.
    mutating func pop() -> Element? {
        guard let last = elements.popLast() else { return nil }
        guard !elements.isEmpty else { return last }
        let top = elements[0]
        elements[0] = last
        siftDown(0)
        return top
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            if left >= elements.count { return }
            let child = left + 1 < elements.count && elements[left + 1].precedes(elements[left]) ? left + 1 : left
            guard elements[child].precedes(elements[parent]) else { return }
            elements.swapAt(parent, child)
            parent = child
        }
    }
}
