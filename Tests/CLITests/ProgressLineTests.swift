import Foundation
import TestSupport
import Testing

/// `brsync sync` on a terminal (a real pty, through util-linux `script`):
/// the progress line is redrawn in place and leaves nothing behind.
@Suite struct ProgressLineTests {
    @Test func progressLeavesOnlyTheSummaryOnScreen() throws {
        let world = try CLIWorld()
        let laptop = try world.replica("laptop")
        let desktop = try world.replica("desktop")
        try world.mustRun(desktop, ["sync"]) // its name is what the laptop pulls after pushing
        let rules = (0..<1500).map { #"{"pattern": "site\#($0).example", "browser": "firefox"}"# }.joined(
            separator: ",")
        let document =
            #"{"format": "brsync-export", "version": 1, "browsers": [{"id": "firefox", "name": "Firefox"}], "rules": [\#(rules)]}"#
        let file = world.directory.file("rules.json")
        try document.write(toFile: file, atomically: true, encoding: .utf8)
        try world.mustRun(laptop, ["import", file])

        // Pushing 1501 changes in three batches (the first of 250), then
        // pulling one record: each redraw is shorter than or as long as the one before.
        let result = try ProcessRunner.run(
            "/usr/bin/script", ["-qec", "\(world.brsync) sync", "/dev/null"],
            environment: ["BRSYNC_HOME": laptop, "TERM": "xterm"])
        #expect(result.status == 0, "\(result)")
        #expect(
            result.stdout.contains("pushed 250 of 1501") && result.stdout.contains("pushed 1250 of 1501"),
            "the progress was drawn: \(result.stdout.debugDescription)")
        let screen = Self.screen(result.stdout)
        #expect(
            screen.lines == ["sync: pushed 1501 change(s), pulled 1 record(s), 1 changed here"],
            "\(result.stdout.debugDescription)")
        // Every state the line passed through was one whole progress text.
        let progress = #/(pushed \d+ of \d+|pulled \d+) \(\d+/s\)/#
        #expect(screen.redrawn.count >= 3, "\(screen.redrawn)")
        for state in screen.redrawn where !state.isEmpty {
            #expect(state.wholeMatch(of: progress) != nil, "the line showed \(state.debugDescription)")
        }
    }

    /// The lines a terminal shows after `output`, with carriage return, erase
    /// line (`ESC [ 2 K`) and erase to its end (`ESC [ K`) applied (empty lines
    /// left out), and what the line showed each time before the cursor went
    /// back to its start (`redrawn`).
    static func screen(_ output: String) -> (lines: [String], redrawn: [String]) {
        var lines: [String] = []
        var redrawn: [String] = []
        for raw in output.replacingOccurrences(of: "\r\n", with: "\n").split(
            separator: "\n", omittingEmptySubsequences: false)
        {
            var line: [Character] = []
            var column = 0
            var rest = Substring(raw)
            while let character = rest.first {
                if rest.hasPrefix("\u{1B}[2K") {
                    line = []
                    rest = rest.dropFirst(4)
                } else if rest.hasPrefix("\u{1B}[K") {
                    line = Array(line.prefix(column))
                    rest = rest.dropFirst(3)
                } else if character == "\r" {
                    redrawn.append(String(line).trimmingCharacters(in: .whitespaces))
                    column = 0
                    rest = rest.dropFirst()
                } else {
                    while line.count < column { line.append(" ") }
                    if column < line.count { line[column] = character } else { line.append(character) }
                    column += 1
                    rest = rest.dropFirst()
                }
            }
            let text = String(line).trimmingCharacters(in: .whitespaces)
            if !text.isEmpty { lines.append(text) }
        }
        return (lines, redrawn)
    }

    @Test func theEmulatorSeesWhatAnOldRedrawLeftBehind() {
        let old = Self.screen("\rpushed 1000 of 1501 (900/s)   \rpulled 1 (2/s)   \r\u{1B}[Ksync: done\n")
        #expect(old.lines == ["sync: done"])
        #expect(old.redrawn == ["", "pushed 1000 of 1501 (900/s)", "pulled 1 (2/s)   01 (900/s)"])
        let new = Self.screen(
            "\r\u{1B}[2Kpushed 1000 of 1501 (900/s)\r\u{1B}[2Kpulled 1 (2/s)\r\u{1B}[2K\nsync: done\n")
        #expect(new.lines == ["sync: done"] && new.redrawn == ["", "pushed 1000 of 1501 (900/s)", "pulled 1 (2/s)"])
    }
}
