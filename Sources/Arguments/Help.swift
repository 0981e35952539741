/// `--help`: overview, usage, arguments, options, subcommands, in the layout
/// swift-argument-parser used, so the help users knew reads the same.
func helpText(_ path: [any ParsableCommand.Type]) -> String {
    let type = path.last!
    let configuration = type.configuration
    var out: [String] = []
    if !configuration.abstract.isEmpty { out += ["OVERVIEW: \(configuration.abstract)", ""] }
    if !configuration.discussion.isEmpty { out += [configuration.discussion, ""] }
    out += ["USAGE: \(usageLine(path))", ""]
    let declared = declarations(of: instance(of: type)).filter { $0.slot.help?.isHidden != true }
    let arguments = declared.filter { $0.slot.kind == .argument }
    if !arguments.isEmpty {
        out.append("ARGUMENTS:")
        out += arguments.flatMap { entry(for: $0) }
        out.append("")
    }
    var options = declared.filter { $0.slot.kind != .argument }.flatMap { entry(for: $0) }
    if path.count == 1, !configuration.version.isEmpty {
        options += row("--version", "Show the version.")
    }
    options += row("-h, --help", "Show help information.")
    out.append("OPTIONS:")
    out += options
    let subcommands = configuration.subcommands.filter { $0.configuration.shouldDisplay }
    if !subcommands.isEmpty {
        out += ["", "SUBCOMMANDS:"]
        for sub in subcommands {
            let isDefault =
                configuration.defaultSubcommand.map { ObjectIdentifier($0) == ObjectIdentifier(sub) } ?? false
            out += row(sub.commandName + (isDefault ? " (default)" : ""), sub.configuration.abstract)
        }
        let name = path.map { $0.commandName }.joined(separator: " ")
        out += ["", "  See '\(name) help <subcommand>' for detailed help."]
    }
    return out.joined(separator: "\n")
}

/// `gatewayctl tags revoke <uid> [--socket <socket>] [--json]`.
func usageLine(_ path: [any ParsableCommand.Type]) -> String {
    let type = path.last!
    if let usage = type.configuration.usage { return usage }
    var parts = [path.map { $0.commandName }.joined(separator: " ")]
    if !type.configuration.subcommands.isEmpty {
        parts.append("<subcommand>")
        return parts.joined(separator: " ")
    }
    for d in declarations(of: instance(of: type)) where d.slot.help?.isHidden != true {
        var text = d.display
        if d.slot.kind == .flag, d.slot.inversion == .prefixedNo, let long = d.longs.first {
            text = "--[no-]\(long)"
        }
        if d.slot.repeats { text += " ..." }
        parts.append(d.slot.required ? text : "[\(text)]")
    }
    return parts.joined(separator: " ")
}

private func entry(for d: Declared) -> [String] {
    var names: String
    switch d.slot.kind {
    case .argument:
        names = "<\(d.valueName)>"
    case .flag, .option:
        var list = d.shorts.map { "-\($0)" }
        for long in d.longs {
            switch (d.slot.kind, d.slot.inversion) {
            case (.flag, .prefixedNo?): list += ["--\(long)", "--no-\(long)"]
            case (.flag, .prefixedEnableDisable?): list += ["--enable-\(long)", "--disable-\(long)"]
            default: list.append("--\(long)")
            }
        }
        names = list.joined(separator: ", ")
        if d.slot.kind == .option { names += " <\(d.valueName)>" }
    }
    var text = d.slot.help?.abstract ?? ""
    // Byte search: String.contains(String) would link _StringProcessing (and its regex parser).
    let hay = Array(text.utf8)
    let first = Array((d.slot.allValues.first ?? "").utf8)
    let mentioned =
        first.count <= hay.count
        && (0...(hay.count - first.count)).contains { hay[$0..<$0 + first.count].elementsEqual(first) }
    if !d.slot.allValues.isEmpty, !mentioned {
        text += " (values: \(d.slot.allValues.joined(separator: ", ")))"
    }
    if let shown = d.slot.defaultDescription, !shown.isEmpty, d.slot.kind != .flag || d.slot.inversion != nil {
        text += " (default: \(shown))"
    }
    var lines = row(names, text)
    if let discussion = d.slot.help?.discussion, !discussion.isEmpty {
        lines += wrap(discussion, width: 80 - 26).map { String(repeating: " ", count: 26) + $0 }
    }
    return lines
}

/// `  names                   text`, the text wrapped in a column.
private func row(_ names: String, _ text: String) -> [String] {
    let column = 26
    let lead = "  " + names
    let wrapped = wrap(text, width: 80 - column)
    guard let first = wrapped.first else { return [lead] }
    var lines: [String]
    if lead.count < column - 1 {
        lines = [lead + String(repeating: " ", count: column - lead.count) + first]
    } else {
        lines = [lead, String(repeating: " ", count: column) + first]
    }
    lines += wrapped.dropFirst().map { String(repeating: " ", count: column) + $0 }
    return lines
}

/// Words into lines of at most `width` characters (a longer word gets a line of its own).
func wrap(_ text: String, width: Int) -> [String] {
    var lines: [String] = []
    for paragraph in text.split(separator: "\n", omittingEmptySubsequences: false) {
        var line = ""
        for word in paragraph.split(separator: " ") {
            if line.isEmpty {
                line = String(word)
            } else if line.count + 1 + word.count <= width {
                line += " " + word
            } else {
                lines.append(line)
                line = String(word)
            }
        }
        lines.append(line)
    }
    return lines
}

/// A fresh instance, to read its declarations.
func instance(of type: any ParsableCommand.Type) -> Any {
    func make<T: ParsableCommand>(_: T.Type) -> Any { T() }
    return make(type)
}
