import Foundation
import SystemServices
import TestSupport
import Testing

/// Starting programs: the one way every binary and test does it.
@Suite struct ChildProcessTests {
    @Test func outputErrorsInputAndStatusAreCaptured() throws {
        let result = try Subprocess.run(
            ["/bin/sh", "-c", "cat; echo oops >&2; exit 3"], input: "hello\n", environment: .inherited)
        #expect(result.output == "hello\n")
        #expect(result.errors == "oops\n")
        #expect(result.status == 3)
        #expect(result.termination == .exited(3))
        #expect(!result.timedOut)
    }

    /// A program started here inherits only its standard streams: not a
    /// database, nor a file another thread is writing (which, kept open
    /// for writing by a child, could not be run: "text file busy").
    @Test func nothingButTheStandardStreamsIsInherited() throws {
        let path = NSTemporaryDirectory() + "/brsync-inherit-\(getpid())"
        let descriptor = open(path, O_WRONLY | O_CREAT, 0o600) // no close-on-exec
        defer { close(descriptor); unlink(path) }
        #expect(descriptor > 2)
        let listed = try Subprocess.run(["/bin/sh", "-c", "ls /proc/$$/fd"], environment: .inherited)
        let open = listed.output.split(separator: "\n").compactMap { Int32($0) }
        #expect(!open.contains(descriptor), "\(open)")
        #expect([0, 1, 2].allSatisfy(open.contains), "\(open)")
    }

    @Test func aProgramIsFoundOnPathAndAMissingOneIsNamed() throws {
        #expect(try Subprocess.run(["true"], environment: .inherited).status == 0)
        #expect(Subprocess.run(["/nonexistent/program"]) == nil)
        #expect(throws: ChildProcess.SpawnError.self) { try ChildProcess(["/nonexistent/program"]) }
        #expect(throws: ChildProcess.SpawnError.self) { try ChildProcess([]) }
        do {
            _ = try ChildProcess(["/nonexistent/program"])
        } catch {
            #expect(error.description == "cannot start /nonexistent/program: No such file or directory")
        }
    }

    /// Variables are set over this process's, and left out by name or by
    /// prefix. (HOME and PATH are in every test run's environment; nothing
    /// here calls setenv, which races with other tests starting programs.)
    @Test func theEnvironmentIsInheritedSetAndUnset() throws {
        let home = try #require(ProcessInfo.processInfo.environment["HOME"])
        let inherited = try Subprocess.run(
            ["/usr/bin/env"], environment: ChildProcess.Environment(set: ["CHILD_TEST_SET": "x=y"]))
        let lines = Set(inherited.output.split(separator: "\n").map(String.init))
        #expect(lines.contains("CHILD_TEST_SET=x=y"))
        #expect(lines.contains("HOME=\(home)"))
        #expect(lines.contains { $0.hasPrefix("PATH=") })
        let changed = try Subprocess.run(
            ["/usr/bin/env"], environment: ChildProcess.Environment(set: ["HOME": "/elsewhere"], unset: ["PAT*"]))
        let changedLines = Set(changed.output.split(separator: "\n").map(String.init))
        #expect(changedLines.contains("HOME=/elsewhere") && !changedLines.contains("HOME=\(home)"))
        #expect(!changedLines.contains { $0.hasPrefix("PATH=") })
        let exact = try Subprocess.run(["/usr/bin/env"], environment: ChildProcess.Environment(unset: ["HOME", "PA"]))
        #expect(
            !exact.output.contains("HOME=") && exact.output.contains("PATH="), "only a name ending in * is a prefix")
    }

    @Test func anOverrunningProgramIsKilled() throws {
        let started = Clock.monotonicMillis()
        let result = try Subprocess.run(["/bin/sleep", "30"], timeoutMilliseconds: 300, environment: .inherited)
        #expect(result.timedOut)
        #expect(result.status == nil)
        #expect(result.termination == .signalled(SIGKILL))
        #expect(Clock.monotonicMillis() - started < 20_000)
    }

    /// Output beyond the limit is read and dropped: the program is never blocked.
    @Test func outputIsBounded() throws {
        let result = try Subprocess.run(
            ["/bin/sh", "-c", "head -c 300000 /dev/zero"], environment: .inherited, outputLimit: 1000)
        #expect(result.output.utf8.count == 1000)
        #expect(result.status == 0)
    }

    /// A program that never reads its input still ends (EPIPE, not a hang).
    @Test func unreadInputDoesNotHang() throws {
        let result = try Subprocess.run(
            ["/bin/true"], input: String(repeating: "x", count: 1 << 20), environment: .inherited)
        #expect(result.status == 0)
    }

    @Test func outputGoesToAFileAndErrorsWithIt() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/out"
        let child = try ChildProcess(
            ["/bin/sh", "-c", "echo one; echo two >&2"], output: .file(path), errors: .sameAsOutput)
        #expect(child.wait() == .exited(0))
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "one\ntwo\n")
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int == 0o600)
        #expect(throws: ChildProcess.SpawnError.self) { try ChildProcess(["/bin/true"], input: .file(path)) }
        #expect(throws: ChildProcess.SpawnError.self) { try ChildProcess(["/bin/true"], output: .sameAsOutput) }
    }

    @Test func stopSignalsThenKills() throws {
        let polite = try ChildProcess(["/bin/sleep", "30"])
        #expect(polite.isRunning)
        let (ended, killed) = polite.stop(signal: SIGTERM, timeoutMilliseconds: 10_000)
        #expect(ended == .signalled(SIGTERM) && ended.code == 128 + SIGTERM && !killed)
        #expect(!polite.isRunning)
        // A program that ignores the signal is killed after the wait.
        let stubborn = try ChildProcess(["/bin/sh", "-c", "trap '' TERM; echo ready; sleep 30"], output: .pipe)
        var byte: UInt8 = 0
        _ = read(stubborn.output!, &byte, 1) // the trap is set
        let second = stubborn.stop(signal: SIGTERM, timeoutMilliseconds: 200)
        #expect(second.killed && second.0 == .signalled(SIGKILL))
    }

    /// This process ignores SIGPIPE (as every binary here does); a program
    /// it starts, a browser above all, gets every signal's default action
    /// and none blocked.
    @Test func aProgramStartsWithDefaultSignals() throws {
        signal(SIGPIPE, SIG_IGN)
        let result = try Subprocess.run(
            ["/bin/grep", "-E", "^Sig(Ign|Blk):", "/proc/self/status"], environment: .inherited)
        // Bits of signals 1–31 (glibc keeps 32 and 33, its own, as the
        // test runner left them).
        let masks = result.output.split(separator: "\n").compactMap {
            UInt64($0.split(separator: "\t").last ?? "", radix: 16)
        }
        #expect(masks.count == 2 && masks.allSatisfy { $0 & 0x7FFF_FFFF == 0 }, "\(result.output)")
    }

    /// A new session: the child leads it (it outlives a closed terminal).
    @Test func aLaunchedProgramLeadsASessionOfItsOwn() throws {
        let child = try ChildProcess(
            ["/bin/sh", "-c", "ps -o sid= -p $$ | tr -d ' '; echo $$"], output: .pipe, newSession: true)
        var text: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 256)
        while case let count = read(child.output!, &buffer, buffer.count), count > 0 { text += buffer[0..<count] }
        child.wait()
        let lines = String(decoding: text, as: UTF8.self).split(separator: "\n")
        #expect(lines.count == 2 && lines[0] == lines[1], "session id is the child's pid: \(lines)")
    }
}
