import Foundation
import TestSupport
import Testing

/// The Encryption page against a real brsyncd on loopback, each machine
/// through its own window: encryption turned on, its code added on a second
/// machine (typos caught as typed), a rotation that stops the second
/// machine until it adds the new code, and the operator's reset.
extension SettingsWindowTests {
    @Test func encryptionIsTurnedOnRotatedAndResetThroughTheWindows() throws {
        guard Self.ready() else { return }
        let world = try CLIWorld(.sqlite)
        let laptop = try world.replica("laptop")
        let desk = try world.replica("desk")
        try world.firefoxRule(laptop, "sealed.example")
        try world.mustRun(laptop, ["sync"])
        try world.mustRun(desk, ["sync"])

        // The laptop turns it on: a warning first, then the code, shown once (its QR beside it).
        let turnedOn = try Self.drive(
            home: laptop,
            [
                "key:ctrl+7", "find:label:This machine syncs readable", "press:Turn on end-to-end encryption…",
                "find:label:The server will keep your rules sealed", "press:Encrypt the account",
                "find:label:Recovery code: ", "find:image:The recovery code as a QR code",
                "find:label:Status: This account is now end-to-end encrypted", "press:Close",
                "find:label:this machine holds its key",
            ])
        #expect(turnedOn.exitStatus == "0", "\(turnedOn.result)")
        let code = try #require(Self.shownCode(turnedOn), "\(turnedOn.result)")
        #expect(try world.run(laptop, ["key", "show"]).stdout.contains(code), "the window showed the key's code")

        // The desk stops (its edits wait); its window says so and takes the code.
        try world.mustRun(desk, ["rules", "add", "desk.example", "firefox"])
        #expect(try world.run(desk, ["sync"]).status == 5)
        let typo = String(code.dropLast()) + (code.last == "a" ? "b" : "a")
        let added = try Self.drive(
            home: desk,
            [
                "key:ctrl+6", "find:label:The last sync stopped: the server refused (encrypted)",
                "press:Add the account's recovery code on the Encryption page",
                "text:Recovery code to add=\(String(code.prefix(20)))", "find:label:Not a recovery code yet",
                "text:Recovery code to add=\(typo)", "find:label:Not a recovery code yet",
                "text:Recovery code to add=\(code)", "find:label:The code's checksum holds",
                "press:Add the code", "find:label:Status: Account key added. sync: pushed",
                "find:label:this machine holds its key",
            ])
        #expect(added.exitStatus == "0", "\(added.result)")
        try world.mustRun(laptop, ["sync"])
        #expect(try world.run(laptop, ["rules", "list"]).stdout.contains("desk.example"), "the desk's edit went up")

        // The laptop rotates: the desk's window then asks for the new code.
        let rotated = try Self.drive(
            home: laptop,
            [
                "key:ctrl+7", "press:Rotate the key…", "find:label:cannot open", "press:Rotate the key",
                "find:label:Recovery code: ", "find:label:Status: The account key was rotated", "press:Close",
            ])
        #expect(rotated.exitStatus == "0", "\(rotated.result)")
        let newCode = try #require(Self.shownCode(rotated), "\(rotated.result)")
        #expect(newCode != code)
        let asked = try Self.drive(
            home: desk,
            [
                "key:ctrl+6", "press:Sync now", "find:label:The last sync stopped", "find:label:rotated",
                "press:Add the account's recovery code on the Encryption page",
                "text:Recovery code to add=\(newCode)", "press:Add the code", "find:label:Status: Account key replaced",
            ])
        #expect(asked.exitStatus == "0", "\(asked.result)")

        // The operator resets the account's encryption: the laptop's window stops, and the person chooses.
        let reset = try ProcessRunner.run(
            world.brsyncd, ["account", "reset-encryption", "alice"] + world.storeArguments,
            environment: world.storeEnvironment)
        #expect(reset.status == 0, "\(reset)")
        let chosen = try Self.drive(
            home: laptop,
            [
                "key:ctrl+6", "press:Sync now", "find:label:operator reset this account's end-to-end encryption",
                "press:Encrypt the account again, or forget the key", "find:label:Choose: encrypt it again",
                "sleep:1", "press:Forget the key…", "find:label:Do this after the server's operator reset",
                "press:Forget the key", "find:label:Status: Account key forgotten",
                "find:label:This machine syncs readable",
            ])
        #expect(chosen.exitStatus == "0", "\(chosen.result)")
        #expect(try world.run(laptop, ["sync"]).status == 0, "the laptop syncs readable")
    }

    /// The recovery code a window showed (its label "Recovery code: CODE").
    static func shownCode(_ run: Run) -> String? {
        run.values("FOUND").compactMap { found -> String? in
            guard found.hasPrefix("Recovery code: ") else { return nil }
            return String(found.dropFirst("Recovery code: ".count))
        }.first
    }
}
