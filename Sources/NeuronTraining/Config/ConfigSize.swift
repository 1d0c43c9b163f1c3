// The libyaml seam: the only file that imports CYaml (Yams' copy of libyaml). A config is measured
// here, event by event, before Yams composes it: composing resolves every alias into a copy of
// what it names and hashes every mapping key, so ten lines of nested aliases (`l1: &l1 [*l0 ×10]`,
// …, `? *l8`) stand for a billion nodes and take Yams tens of seconds. Counting the events, each
// alias as the size of what it names, bounds that in microseconds.
import CYaml

/// The bounds on what a config file may hold; configs are a few dozen lines.
enum ConfigLimits {
    /// The largest config text read, in bytes.
    static let textBytes = 1 << 20
    /// The most nodes (scalars, lists and mappings) a config may stand for once its aliases are expanded.
    static let expandedNodes = 100_000
}

extension ConfigLoader {
    /// Throws when `text` stands for more than ``ConfigLimits/expandedNodes`` nodes with its
    /// aliases expanded, pointing at the alias where the count passes the bound. A syntax error
    /// is left for the composer to report with its own message.
    static func checkExpandedSize(_ text: String, source: String) throws(ConfigError) {
        var parser = yaml_parser_t()
        guard yaml_parser_initialize(&parser) == 1 else { return }
        defer { yaml_parser_delete(&parser) }
        var bytes = Array(text.utf8)
        let limit = ConfigLimits.expandedNodes
        let exceeded: (line: Int, column: Int, alias: String)? = bytes.withUnsafeMutableBufferPointer { buffer in
            yaml_parser_set_input_string(&parser, buffer.baseAddress, buffer.count)
            var sizes: [String: Int] = [:]  // anchor → expanded size of the node it names
            var open: [(anchor: String?, size: Int)] = [(nil, 0)]  // the collections being read, outermost first
            var total = 0
            var event = yaml_event_t()
            while true {
                guard yaml_parser_parse(&parser, &event) == 1 else { return nil }
                defer { yaml_event_delete(&event) }
                let mark = (line: Int(event.start_mark.line) + 1, column: Int(event.start_mark.column) + 1)
                var added = 0
                switch event.type {
                case YAML_STREAM_END_EVENT:
                    return nil
                case YAML_SCALAR_EVENT:
                    added = 1
                    if let anchor = event.data.scalar.anchor { sizes[String(cString: anchor)] = 1 }
                case YAML_ALIAS_EVENT:
                    let name = event.data.alias.anchor.map { String(cString: $0) } ?? ""
                    added = sizes[name] ?? 1
                    if total + added > limit { return (mark.line, mark.column, name) }
                case YAML_SEQUENCE_START_EVENT:
                    open.append((event.data.sequence_start.anchor.map { String(cString: $0) }, 1))
                case YAML_MAPPING_START_EVENT:
                    open.append((event.data.mapping_start.anchor.map { String(cString: $0) }, 1))
                case YAML_SEQUENCE_END_EVENT, YAML_MAPPING_END_EVENT:
                    guard open.count > 1 else { return nil }
                    let closed = open.removeLast()
                    if let anchor = closed.anchor { sizes[anchor] = closed.size }
                    open[open.count - 1].size += closed.size
                    total += 1  // the collection itself; its items were counted as they came
                    continue
                default:
                    continue
                }
                total += added
                open[open.count - 1].size += added
                if total > limit { return (mark.line, mark.column, "") }
            }
        }
        guard let exceeded else { return }
        let through = exceeded.alias.isEmpty ? "" : " (the alias *\(exceeded.alias) here passes the bound)"
        throw ConfigError(
            file: source, line: exceeded.line, column: exceeded.column,
            message:
                "the config stands for more than \(limit) values once its aliases are expanded\(through); a run config is a few dozen lines: write it out without nested aliases"
        )
    }
}
