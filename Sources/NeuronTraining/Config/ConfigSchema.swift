// The schema of a run config, derived from the config types themselves: each section's keys are
// its `CodingKeys` (CaseIterable, in Docs/Config.md's order), each key's shape follows from the Swift
// type of its property, and each choice's allowed names are its enum's cases. `ConfigLoader`
// walks the text against this schema before anything is decoded; the same field tables decode a
// section starting from its defaults, so no section lists its keys a second time.

/// The shape a value must have: what the loader checks before anything is decoded.
indirect enum ConfigShape: Sendable {
    /// Keys in the order Docs/Config.md lists them; `required` keys have no default and must be given, not null.
    case mapping([(key: String, shape: ConfigShape)], required: Set<String>)
    case list(ConfigShape)
    case string
    /// One of a fixed set of names (a ``ConfigChoice``'s raw values), written as a string.
    case choice([String])
    /// An integer or a float, as written (not quoted).
    case number
    /// An integer that fits in `Int`.
    case integer
    /// An integer that fits in `UInt64`.
    case seed
    case boolean

    /// What the shape is, for "expected …".
    var expectation: String {
        switch self {
        case let .mapping(fields, _): "a mapping (keys \(fields.map(\.key).joined(separator: ", ")))"
        case let .list(element): "a list, each item \(element.expectation)"
        // A value that is not even a string (a list, say) is told so; a string that is not one of
        // the names gets the list of names from the walk.
        case .string, .choice: "a string"
        case .number: "a number"
        case .integer: "a whole number"
        case .seed: "a whole number from 0 to \(UInt64.max)"
        case .boolean: "true or false"
        }
    }

    /// Every key path the shape allows (`model.layers[].units`).
    func keyPaths(prefix: String = "") -> Set<String> {
        switch self {
        case let .mapping(fields, _):
            var paths = Set<String>()
            for (key, value) in fields {
                let path = prefix.isEmpty ? key : prefix + "." + key
                paths.insert(path)
                paths.formUnion(value.keyPaths(prefix: path))
            }
            return paths
        case let .list(element):
            return element.keyPaths(prefix: prefix + "[]")
        case .string, .choice, .number, .integer, .seed, .boolean:
            return []
        }
    }
}

// MARK: - Values

/// A type a config value can have, with the shape the loader checks the text against.
protocol ConfigValue: Decodable {
    static var shape: ConfigShape { get }
}

extension Double: ConfigValue { static var shape: ConfigShape { .number } }
extension Int: ConfigValue { static var shape: ConfigShape { .integer } }
extension UInt64: ConfigValue { static var shape: ConfigShape { .seed } }
extension Bool: ConfigValue { static var shape: ConfigShape { .boolean } }
extension String: ConfigValue { static var shape: ConfigShape { .string } }
// Absent or null: the key's default. Present: the wrapped value's shape.
extension Optional: ConfigValue where Wrapped: ConfigValue { static var shape: ConfigShape { Wrapped.shape } }
extension Array: ConfigValue where Element: ConfigValue { static var shape: ConfigShape { .list(Element.shape) } }

/// A choice a config makes by name (`kind: adam`, `activation: relu`): the raw values are the
/// names Docs/Config.md documents, and `allCases` is the list an error message offers.
protocol ConfigChoice: ConfigValue, RawRepresentable<String>, CaseIterable {}

extension ConfigChoice {
    /// Every name, in declaration order: `tanh, sigmoid, relu, identity, softmax`.
    static var names: [String] { allCases.map(\.rawValue) }
    static var shape: ConfigShape { .choice(names) }
}

// MARK: - Sections

/// A mapping of the config (`optimizer`, `optimizer.schedule`, …): its keys, and for each key the
/// property it fills.
protocol ConfigSection: ConfigValue {
    /// The section's keys in Docs/Config.md's order; `Codable` encodes and decodes through the same enum.
    associatedtype CodingKeys: CodingKey, CaseIterable
    /// The property behind `key`. A switch over the keys, so that a new key cannot be left out.
    static func field(_ key: CodingKeys) -> ConfigField<Self>
}

extension ConfigSection {
    static var shape: ConfigShape {
        let keys = Array(CodingKeys.allCases)
        return .mapping(
            keys.map { ($0.stringValue, field($0).shape) },
            required: Set(keys.filter { field($0).isRequired }.map(\.stringValue)))
    }

    /// Replaces every property whose key the text gives (and does not leave null) with the value
    /// decoded from it; the others keep what they hold. Required keys are the caller's to decode:
    /// they have no default to start from.
    mutating func decodeGivenKeys(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        for key in CodingKeys.allCases where !Self.field(key).isRequired {
            try Self.field(key).decode(&self, container, key)
        }
    }
}

/// A section in which every key has a default (its `init()`): decoding starts from the defaults
/// and replaces what the text gives, so a config names only what differs. A synthesized
/// `init(from:)` would demand every key.
protocol DefaultedConfigSection: ConfigSection {
    init()
}

extension DefaultedConfigSection {
    public init(from decoder: any Decoder) throws {
        self.init()
        try decodeGivenKeys(from: decoder)
    }
}

/// One key of a section: the property it fills, the shape its value must have, and whether the
/// key must be given.
struct ConfigField<Section: ConfigSection> {
    let shape: ConfigShape
    let isRequired: Bool
    /// Sets the property from the key's value when the text gives one.
    let decode: (inout Section, KeyedDecodingContainer<Section.CodingKeys>, Section.CodingKeys) throws -> Void

    /// The key filling `property`; its shape follows from the property's type.
    init<Value: ConfigValue>(_ property: WritableKeyPath<Section, Value>, required: Bool = false) {
        shape = Value.shape
        isRequired = required
        decode = { section, container, key in
            if let value = try container.decodeIfPresent(Value.self, forKey: key) { section[keyPath: property] = value }
        }
    }

    /// The key filling `property`, with a shape given here: for a type that holds itself (a
    /// residual block's body of layers), whose shape would otherwise never end.
    init<Value: Decodable>(_ property: WritableKeyPath<Section, Value?>, shape: ConfigShape) {
        self.shape = shape
        isRequired = false
        decode = { section, container, key in
            if let value = try container.decodeIfPresent(Value.self, forKey: key) { section[keyPath: property] = value }
        }
    }
}
