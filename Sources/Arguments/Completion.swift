/// `--generate-completion-script bash|zsh|fish`: a completion script for the
/// root command (the .deb installs them). Each one walks the words typed so
/// far down the subcommand tree and offers that command's subcommands and
/// options; values are left to the shell's file completion.
func completionScript(shell: String, root: any ParsableCommand.Type) -> String? {
    let name = root.commandName
    let table = completionTable(root, path: [])
    let function = "_" + name.map { $0.isLetter || $0.isNumber ? $0 : "_" }.map(String.init).joined()
    // Known subcommand paths, as " a b" strings ("" is the root).
    let paths = table.map(\.path).filter { !$0.isEmpty }
    switch shell {
    case "bash":
        var s = "# bash completion for \(name)\n\(function)() {\n"
        s += "    local cur=\"${COMP_WORDS[COMP_CWORD]}\" path=\"\" i\n"
        s += shellWalk(
            table, paths, path: "path", word: "${COMP_WORDS[i]}", first: 1, count: "COMP_CWORD",
            local: "local words"
        ) { "words=\(quoted($0.words.joined(separator: " ")))" }
        s += "    COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
        s += "    [[ ${#COMPREPLY[@]} -eq 0 ]] && COMPREPLY=($(compgen -f -- \"$cur\"))\n"
        s += "    return 0\n}\ncomplete -F \(function) \(name)\n"
        return s
    case "zsh":
        var s = "#compdef \(name)\n\(function)() {\n    local path_=\"\" i\n"
        s += shellWalk(
            table, paths, path: "path_", word: "${words[i]}", first: 2, count: "CURRENT", local: "local -a candidates"
        ) { "candidates=(\($0.words.map(quoted).joined(separator: " ")))" }
        s += "    compadd -- $candidates\n    _files\n}\n\(function) \"$@\"\n"
        return s
    case "fish":
        var s = "# fish completion for \(name)\nfunction \(function)\n    set -l path \"\"\n"
        s += "    for w in (commandline -opc)[2..-1]\n        switch \"$path $w\"\n"
        if !paths.isEmpty {
            s += "            case \(paths.map(quoted).joined(separator: " "))\n                set path \"$path $w\"\n"
        }
        s += "        end\n    end\n    switch \"$path\"\n"
        for entry in table {
            s +=
                "        case \(quoted(entry.path))\n            printf '%s\\n' \(entry.words.map(quoted).joined(separator: " "))\n"
        }
        s += "    end\nend\ncomplete -c \(name) -a '(\(function))'\n"
        return s
    default:
        return nil
    }
}

/// What bash's and zsh's scripts share: the loop that walks the words typed
/// so far (`word`, from index `first` to below `count`) down the known
/// subcommand `paths` into the variable `path`, then a `case` on it that
/// sets the candidates (`local`, then `assign` for each entry).
private func shellWalk(
    _ table: [CompletionEntry], _ paths: [String], path: String, word: String, first: Int, count: String,
    local: String, assign: (CompletionEntry) -> String
) -> String {
    var s = "    for ((i = \(first); i < \(count); i++)); do\n"
    s += "        case \"$\(path) \(word)\" in\n"
    if !paths.isEmpty {
        s += "            \(paths.map(quoted).joined(separator: "|"))) \(path)=\"$\(path) \(word)\" ;;\n"
    }
    s += "        esac\n    done\n    \(local)\n    case \"$\(path)\" in\n"
    for entry in table {
        s += "        \(quoted(entry.path))) \(assign(entry)) ;;\n"
    }
    s += "    esac\n"
    return s
}

private struct CompletionEntry {
    var path: String
    var words: [String]
}

private func completionTable(_ type: any ParsableCommand.Type, path: [String]) -> [CompletionEntry] {
    let visible = type.configuration.subcommands.filter { $0.configuration.shouldDisplay }
    var words = visible.map { $0.commandName }
    for d in declarations(of: instance(of: type)) where d.slot.kind != .argument && d.slot.help?.isHidden != true {
        for long in d.longs {
            switch (d.slot.kind, d.slot.inversion) {
            case (.flag, .prefixedNo?): words += ["--\(long)", "--no-\(long)"]
            case (.flag, .prefixedEnableDisable?): words += ["--enable-\(long)", "--disable-\(long)"]
            default: words.append("--\(long)")
            }
        }
        words += d.shorts.map { "-\($0)" }
    }
    words.append("--help")
    var table = [CompletionEntry(path: path.map { " " + $0 }.joined(), words: words)]
    for sub in visible { table += completionTable(sub, path: path + [sub.commandName]) }
    return table
}

/// A word in single quotes for sh, bash, zsh and fish (our names have no quotes).
private func quoted(_ word: String) -> String { "'" + word + "'" }
