#if !FUZZING
    #if canImport(Glibc)
        @preconcurrency import Glibc
    #endif

    /// Outside the fuzz build (no `-D FUZZING`, so no libFuzzer `main`), the
    /// same targets replay inputs: `fuzz-targets <target> <file or directory>…`
    /// runs each file once and exits 0, or dies on the input that breaks the
    /// target (its path is printed first). `make test` replays the committed
    /// corpora this way (Tests/FuzzCorpusTests).
    @main
    enum Replayer {
        static func main() {
            let args = Array(CommandLine.arguments.dropFirst())
            guard let name = args.first, let target = FuzzTarget(rawValue: name) else {
                fputs("usage: fuzz-targets <target> <file or directory>...\ntargets:\n", stderr)
                for t in FuzzTarget.allCases { fputs("  \(t.rawValue)\t\(t.summary)\n", stderr) }
                exit(2)
            }
            var count = 0
            for path in args.dropFirst() {
                for file in files(path) {
                    guard let bytes = read(file) else {
                        fputs("fuzz-targets: cannot read \(file)\n", stderr)
                        exit(1)
                    }
                    fputs("\(target.rawValue): \(file)\n", stderr)
                    target.run(bytes)
                    count += 1
                }
            }
            print("\(target.rawValue): replayed \(count) inputs")
        }

        /// A file, or the regular files of a directory (sorted, not recursive).
        static func files(_ path: String) -> [String] {
            guard let dir = opendir(path) else { return [path] }
            defer { closedir(dir) }
            var names: [String] = []
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                }
                if entry.pointee.d_type == UInt8(DT_REG) { names.append(name) }
            }
            return names.sorted().map { path + "/" + $0 }
        }

        static func read(_ path: String) -> [UInt8]? {
            guard let f = fopen(path, "rb") else { return nil }
            defer { fclose(f) }
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65_536)
            while true {
                let n = fread(&chunk, 1, chunk.count, f)
                bytes += chunk[0..<n]
                if n < chunk.count { return ferror(f) == 0 ? bytes : nil }
            }
        }
    }
#endif
