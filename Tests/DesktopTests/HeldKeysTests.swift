import Desktop
import Foundation
import Glibc
import TestSupport
import Testing

/// Reading the held modifier keys over the X protocol: what the X server
/// and the Xauthority file say is input like any other (a damaged or
/// hostile answer is an error, never a crash or a wait longer than the
/// read's budget). The real exchange with an X server is tested under Xvfb
/// (XvfbDesktopTests.holdingTheChosenKeyMakesALinkAsk).
@Suite struct HeldKeysTests {

    @Test(
        arguments: [
            (":0", 0), (":1.0", 1), ("unix:2", 2), (":12.3", 12),
            ("localhost:10.0", nil), (":", nil), (":a", nil), (":0.x", nil), (":1234567", nil), ("", nil), (":0 ", nil),
            ("wayland-0", nil),
        ] as [(String, Int?)])
    func displaysAreReadWhenLocal(display: String, number: Int?) {
        #expect(HeldKeys.displayNumber(display) == number, "\(display)")
    }

    @Test func onlyX11SessionsCanBeRead() {
        #expect(HeldKeys.unreadable(environment: ["DISPLAY": ":0"]) == nil)
        #expect(
            HeldKeys.unreadable(environment: ["DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0"])?.contains("Wayland")
                == true)
        #expect(
            HeldKeys.unreadable(environment: ["DISPLAY": ":0", "XDG_SESSION_TYPE": "wayland"])?.contains("Wayland")
                == true)
        #expect(HeldKeys.unreadable(environment: [:])?.contains("no X display") == true)
        #expect(HeldKeys.unreadable(environment: ["DISPLAY": "remote:0"])?.contains("not this machine's") == true)
        #expect(
            HeldKeys.Modifier(named: "Control") == .ctrl && HeldKeys.Modifier(named: "SUPER") == .super
                && HeldKeys.Modifier(named: "caps") == nil)
    }

    /// An Xauthority record: family, address, display number, name, data.
    static func record(number: String, name: String = "MIT-MAGIC-COOKIE-1", data: [UInt8]) -> [UInt8] {
        func field(_ bytes: [UInt8]) -> [UInt8] { [UInt8(bytes.count >> 8), UInt8(bytes.count & 0xFF)] + bytes }
        return [1, 0] + field(Array("host".utf8)) + field(Array(number.utf8)) + field(Array(name.utf8)) + field(data)
    }

    @Test func theDisplaysCookieIsFoundInTheAuthorityFile() {
        let ours = [UInt8](repeating: 0xAB, count: 16), other = [UInt8](repeating: 0x11, count: 16)
        let file =
            Self.record(number: "1", data: other) + Self.record(number: "0", name: "XDM-AUTHORIZATION-1", data: other)
            + Self.record(number: "0", data: ours)
        #expect(HeldKeys.cookie(inAuthority: file, display: 0) == ours)
        #expect(HeldKeys.cookie(inAuthority: file, display: 1) == other)
        #expect(HeldKeys.cookie(inAuthority: file, display: 7) == nil)
        // An empty display number stands for any display.
        #expect(HeldKeys.cookie(inAuthority: Self.record(number: "", data: ours), display: 7) == ours)
        // Damaged: cut anywhere, a length past the end, an empty cookie, garbage.
        for cut in 0..<file.count {
            let found = HeldKeys.cookie(inAuthority: Array(file.prefix(cut)), display: 0)
            #expect(found == nil || found == other || found == ours, "cut at \(cut)")
        }
        #expect(HeldKeys.cookie(inAuthority: [0, 1, 0xFF, 0xFF, 1, 2, 3], display: 0) == nil)
        #expect(HeldKeys.cookie(inAuthority: Self.record(number: "0", data: []), display: 0) == nil)
        #expect(HeldKeys.cookie(inAuthority: [UInt8](repeating: 0xFF, count: 100), display: 0) == nil)
    }

    /// A set-up reply shaped as Xvfb's: 32 fixed bytes, the vendor padded to
    /// 4, `formats` pixmap formats, then the first screen (its root first).
    static func setupReply(
        status: UInt8 = 1, vendor: String = "The X.Org Foundation", formats: Int = 2, screens: UInt8 = 1,
        root: [UInt8] = [0x0D, 0x05, 0, 0]
    ) -> (head: [UInt8], body: [UInt8]) {
        var body = [UInt8](repeating: 0, count: 32)
        let name = Array(vendor.utf8)
        body[16] = UInt8(name.count & 0xFF)
        body[17] = UInt8(name.count >> 8)
        body[20] = screens
        body[21] = UInt8(formats)
        body += name + [UInt8](repeating: 0, count: (4 - name.count % 4) % 4)
        body += [UInt8](repeating: 8, count: 8 * formats)
        body += root + [UInt8](repeating: 0, count: 36)
        let words = body.count / 4
        return ([status, 0, 11, 0, 0, 0, UInt8(words & 0xFF), UInt8(words >> 8)], body)
    }

    @Test func theRootWindowIsReadFromTheSetUpAnswer() throws {
        let reply = Self.setupReply()
        #expect(try HeldKeys.setupRemainder(head: reply.head) == reply.body.count)
        #expect(try HeldKeys.rootWindow(head: reply.head, body: reply.body) == [0x0D, 0x05, 0, 0])
        let odd = Self.setupReply(vendor: "Odd", formats: 7, root: [1, 2, 3, 4])
        #expect(try HeldKeys.rootWindow(head: odd.head, body: odd.body) == [1, 2, 3, 4])
    }

    @Test func aSetUpAnswerThatIsNotOneIsAnError() {
        let good = Self.setupReply()
        // Refused, with the server's reason (status 0: Failed; its length is byte 1).
        var refused = good
        refused.head[0] = 0
        refused.head[1] = 18
        refused.body = Array("No protocol given\n".utf8) + [0, 0]
        #expect(throws: HeldKeys.Failure.self) { try HeldKeys.rootWindow(head: refused.head, body: refused.body) }
        do {
            _ = try HeldKeys.rootWindow(head: refused.head, body: refused.body)
        } catch {
            #expect(error.description.contains("refused the connection: No protocol given"), "\(error)")
        }
        var authenticate = good
        authenticate.head[0] = 2
        #expect(throws: HeldKeys.Failure.self) {
            try HeldKeys.rootWindow(head: authenticate.head, body: authenticate.body)
        }
        var unknown = good
        unknown.head[0] = 9
        #expect(throws: HeldKeys.Failure.self) { try HeldKeys.rootWindow(head: unknown.head, body: unknown.body) }
        // Cut short anywhere, a vendor or format count pointing past the end, no screen.
        for cut in 0..<(32 + 20 + 16 + 4) {
            #expect(throws: HeldKeys.Failure.self, "cut at \(cut)") {
                try HeldKeys.rootWindow(head: good.head, body: Array(good.body.prefix(cut)))
            }
        }
        var longVendor = good.body
        longVendor[16] = 0xFF
        longVendor[17] = 0xFF
        #expect(throws: HeldKeys.Failure.self) { try HeldKeys.rootWindow(head: good.head, body: longVendor) }
        let none = Self.setupReply(screens: 0)
        #expect(throws: HeldKeys.Failure.self) { try HeldKeys.rootWindow(head: none.head, body: none.body) }
        #expect(throws: HeldKeys.Failure.self) { try HeldKeys.setupRemainder(head: [1, 0, 11]) }
    }

    @Test func theMaskIsReadFromQueryPointersAnswer() throws {
        var reply = [UInt8](repeating: 0, count: 32)
        reply[0] = 1
        reply[24] = 0x41 // Shift and Mod4
        reply[25] = 0x01 // and button 1
        #expect(try HeldKeys.pointerMask(reply: reply) == 0x0141)
        var error = reply
        error[0] = 0
        #expect(throws: HeldKeys.Failure.self) { try HeldKeys.pointerMask(reply: error) }
        #expect(throws: HeldKeys.Failure.self) { try HeldKeys.pointerMask(reply: Array(reply.prefix(31))) }
    }

    /// A display that takes the connection and never answers, and one that
    /// hangs up: each is an error within the read's budget, never a click
    /// that waits.
    @Test func aDisplayThatDoesNotAnswerCostsAtMostTheBudget() throws {
        for hangUp in [false, true] {
            let display = try SilentDisplay(hangUp: hangUp)
            defer { display.stop() }
            let started = Date()
            #expect {
                _ = try HeldKeys.held(environment: ["DISPLAY": display.display, "HOME": "/nonexistent"])
            } throws: { error in
                let text = "\(error)"
                return hangUp
                    ? text.contains("closed the connection") || text.contains("went away")
                    : text.contains("did not answer within")
            }
            #expect(
                Date().timeIntervalSince(started) < 2,
                "hang up \(hangUp): the read's budget is \(HeldKeys.timeoutMillis) ms")
            let checked = SessionDisplay.check(environment: ["DISPLAY": display.display])
            #expect(!checked.any && checked.problems.count == 1, "\(checked)")
        }
        // Wayland: a socket that takes connections answers; none, or no runtime folder, is said.
        let folder = NSTemporaryDirectory() + "wayland-\(getpid())"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let missing = SessionDisplay.check(environment: ["WAYLAND_DISPLAY": "wayland-9", "XDG_RUNTIME_DIR": folder])
        #expect(!missing.any && missing.problems.first?.contains("cannot connect") == true, "\(missing)")
        // A compositor that answers wl_display.sync with its callback's done event (object 2, opcode 0, a serial).
        let done: [UInt8] = [2, 0, 0, 0, 0, 0, 12, 0, 7, 0, 0, 0]
        let compositor = try SilentDisplay(reply: done, at: folder + "/wayland-1")
        defer { compositor.stop() }
        let listening = SessionDisplay.check(environment: ["WAYLAND_DISPLAY": "wayland-1", "XDG_RUNTIME_DIR": folder])
        #expect(listening.wayland && listening.any && listening.problems.isEmpty, "\(listening)")
        #expect(
            SessionDisplay.check(environment: ["WAYLAND_DISPLAY": folder + "/wayland-1"]).wayland,
            "an absolute WAYLAND_DISPLAY")
        // One that takes the connection and never answers.
        let frozen = try SilentDisplay(at: folder + "/wayland-2")
        defer { frozen.stop() }
        let started = Date()
        let silent = SessionDisplay.check(environment: ["WAYLAND_DISPLAY": "wayland-2", "XDG_RUNTIME_DIR": folder])
        #expect(
            !silent.any && silent.problems.first?.contains("did not answer within") == true
                && Date().timeIntervalSince(started) < 2, "\(silent)")
        let noFolder = SessionDisplay.check(environment: ["WAYLAND_DISPLAY": "wayland-9"])
        #expect(!noFolder.any && noFolder.problems.first?.contains("XDG_RUNTIME_DIR") == true, "\(noFolder)")
    }
}
