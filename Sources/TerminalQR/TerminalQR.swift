import CQRencode

/// A QR code (libqrencode, error correction M) as modules, and drawn for a
/// terminal with half-block characters: two module rows per text line.
public struct QRMatrix: Equatable, Sendable {
    public let width: Int
    /// Row-major, true = dark module.
    public let modules: [Bool]

    /// nil when the text does not fit a QR code.
    public init?(_ text: String) {
        guard let code = QRcode_encodeString(text, 0, QR_ECLEVEL_M, QR_MODE_8, 1) else { return nil }
        defer { QRcode_free(code) }
        let w = Int(code.pointee.width)
        width = w
        modules = (0..<(w * w)).map { code.pointee.data[$0] & 1 == 1 }
    }

    public func isDark(_ x: Int, _ y: Int) -> Bool {
        x >= 0 && y >= 0 && x < width && y < width && modules[y * width + x]
    }

    /// Light modules are drawn (as `qrencode -t UTF8` does), so the code reads
    /// on the usual light-on-dark terminal; a quiet zone of 4 modules
    /// (the width ISO/IEC 18004 asks for) surrounds it.
    public func rendered(quietZone: Int = 4) -> String {
        var lines: [String] = []
        var y = -quietZone
        while y < width + quietZone {
            var line = ""
            for x in -quietZone..<(width + quietZone) {
                let top = !isDark(x, y), bottom = !isDark(x, y + 1) && y + 1 < width + quietZone
                switch (top, bottom) {
                case (true, true): line += "█"
                case (true, false): line += "▀"
                case (false, true): line += "▄"
                case (false, false): line += " "
                }
            }
            lines.append(line)
            y += 2
        }
        return lines.joined(separator: "\n")
    }
}

/// The text drawn as a QR code for the terminal, or nil when it cannot be encoded.
public func terminalQR(_ text: String) -> String? { QRMatrix(text)?.rendered() }
