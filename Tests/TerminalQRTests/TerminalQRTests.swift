import TerminalQR
import XCTest

final class TerminalQRTests: XCTestCase {
    let link =
        "smpshare://secret?idx=1&key=2291d8cdc310411e7ec27378a661c935187c07e4d5636e9bc3c400b27244b8cd&label=Front%20door"

    /// The drawing decodes back to libqrencode's modules: each character is
    /// two modules (top, bottom), light ones drawn, inside a 4-module quiet zone.
    func testRenderingRoundTripsTheModules() throws {
        let m = try XCTUnwrap(QRMatrix(link))
        XCTAssertEqual((m.width - 17) % 4, 0, "a QR version's width is 17 + 4·version")
        // Finder pattern: the top-left 7×7 ring is dark, its inner ring light.
        XCTAssertTrue(m.isDark(0, 0) && m.isDark(6, 6) && m.isDark(2, 2))
        XCTAssertFalse(m.isDark(1, 1))
        let lines = m.rendered().components(separatedBy: "\n")
        let q = 4
        XCTAssertEqual(lines.count, (m.width + 2 * q + 1) / 2)
        for (row, line) in lines.enumerated() {
            let chars = Array(line)
            XCTAssertEqual(chars.count, m.width + 2 * q)
            for (col, c) in chars.enumerated() {
                let x = col - q, y = row * 2 - q
                let top = !m.isDark(x, y)
                let bottom = y + 1 < m.width + q ? !m.isDark(x, y + 1) : false
                let expected: Character = top ? (bottom ? "█" : "▀") : (bottom ? "▄" : " ")
                XCTAssertEqual(c, expected, "row \(row) col \(col)")
            }
        }
    }

    func testDifferentTextsGiveDifferentCodesAndHugeTextsNone() {
        XCTAssertNotEqual(QRMatrix("a"), QRMatrix("b"))
        XCTAssertNil(QRMatrix(String(repeating: "x", count: 5000)), "beyond QR version 40")
        XCTAssertNotNil(terminalQR(link))
    }
}
