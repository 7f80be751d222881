import ArgumentParser
import Desktop
import Glibc
import JSON
import Model
import Replica
import SystemServices

/// `brsync browsers detect`: the browsers installed here, found from their desktop entries.
public struct Detect: ParsableCommand {
    public init() {}
    public static let configuration = CommandConfiguration(
        commandName: "detect",
        abstract:
            "Find installed browsers from their desktop entries (native, Flatpak, Snap) and record how to launch them here."
    )
    @OptionGroup var global: GlobalOptions
    @Flag(help: "Print JSON.") var json = false
    @Flag(help: "Replace launch commands set by hand (--exec, profiles) with the detected ones.") var replace = false

    public func run() throws {
        let detector = Self.detector(environment: ProcessEnvironment.all())
        let replica = try global.openReplica()
        let (found, skipped, kept) = try Self.recordInstalled(in: replica, detector: detector, replacing: replace)
        for skip in skipped { ExitStatus.warn("skipped \(skip.path): \(skip.reason)") }
        for id in kept {
            ExitStatus.warn(
                "kept the launch command set by hand for '\(id)' ('browsers detect --replace' uses the detected one)")
        }
        if json {
            Output.json(
                JSONValue.array(
                    found.map { browser in
                        .object([
                            "id": .string(browser.browserID), "name": .string(browser.name),
                            "desktopID": .string(browser.desktopID),
                            "path": .string(browser.path), "exec": .string(browser.exec),
                            "catalog": .bool(browser.isCatalogBrowser),
                            "actions": .array(
                                browser.actions.map {
                                    .object(["id": .string($0.id), "name": .string($0.name), "exec": .string($0.exec)])
                                }),
                        ])
                    }))
            return
        }
        if found.isEmpty {
            print("no browsers found in \(detector.directories.joined(separator: ", "))")
            return
        }
        Output.table(
            ["ID", "NAME", "DESKTOP ENTRY", "LAUNCH"], found.map { [$0.browserID, $0.name, $0.desktopID, $0.exec] })
    }
}

extension Detect {
    /// The detector of the browsers installed for the session `environment` describes.
    public static func detector(environment: [String: String]) -> BrowserDetector {
        BrowserDetector(
            directories: BrowserDetector.standardDirectories(environment: environment),
            locale: environment["LC_ALL"] ?? environment["LC_MESSAGES"] ?? environment["LANG"],
            path: (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map(String.init))
    }

    /// Finds the installed browsers and records them and how to start each
    /// here (`replacing` launch commands set by hand, else keeping them).
    /// - Returns: what was found, the desktop files passed over and why, and
    ///   the ids whose launch command set by hand was kept.
    public static func recordInstalled(
        in replica: Replica, detector: BrowserDetector, replacing: Bool
    ) throws -> (found: [BrowserDetector.Found], skipped: [BrowserDetector.Skipped], kept: [String]) {
        let (found, skipped) = detector.detect()
        var kept: [String] = []
        try replica.transaction {
            for browser in found {
                if try replica.findBrowser(named: browser.browserID) == nil {
                    try replica.addBrowser(
                        id: browser.browserID, name: browser.isCatalogBrowser ? nil : browser.name,
                        format: nil, scheme: nil, exec: nil)
                }
                if try !replica.setDetected(
                    browser.browserID, exec: browser.exec, desktopEntry: browser.path, replacing: replacing)
                {
                    kept.append(browser.browserID)
                }
            }
        }
        return (found, skipped, kept)
    }
}

/// The path of the running brsync (for the desktop entry).
func currentExecutable() -> String { ProcessEnvironment.executablePath() }

public struct Install: ParsableCommand {
    public init() {}
    public static let configuration = CommandConfiguration(
        commandName: "install",
        abstract: "Make brsync the default web browser (http, https, HTML files), remembering the previous default.",
        discussion:
            "The desktop entry runs 'brsync open --home DIR' with this replica's folder. Refused until this machine has a replica and a usable browser."
    )
    @OptionGroup var global: GlobalOptions

    @Flag(help: "Install even when clicks could not be served yet (no replica, or no usable browser).") var force =
        false

    public func run() throws {
        let home = global.resolvedHome
        if !force {
            // Every click would fail: say how to be ready first.
            let replica: Replica
            do {
                replica = try global.openReplica()
            } catch {
                throw CLIFailure(
                    message:
                        "\(Failures.message(of: error)); run 'brsync init' and 'brsync browsers detect' first (or install --force)"
                )
            }
            if try !replica.browsers().contains(where: \.isUsable) {
                throw CLIFailure(
                    message:
                        "no browser is usable here, so no click could be opened: run 'brsync browsers detect' (or add one with --exec) first (or install --force)"
                )
            }
        }
        let registration = DefaultBrowserRegistration(environment: ProcessEnvironment.all(), brsyncHome: home)
        let previous = try registration.install(executable: currentExecutable(), home: home)
        print("installed \(registration.desktopFile); brsync is the default browser")
        if !previous.isEmpty {
            print(
                "previous default: \(Set(previous.values).sorted().joined(separator: ", ")) ('brsync uninstall' puts it back)"
            )
        }
    }
}

public struct Uninstall: ParsableCommand {
    public init() {}
    public static let configuration = CommandConfiguration(
        commandName: "uninstall", abstract: "Put the previous default browser back and remove brsync.desktop.")
    @OptionGroup var global: GlobalOptions

    public func run() throws {
        let registration = DefaultBrowserRegistration(
            environment: ProcessEnvironment.all(), brsyncHome: global.resolvedHome)
        let previous = try registration.uninstall()
        let restored = Set(previous.values.filter { !$0.isEmpty }).sorted()
        if previous.isEmpty {
            print("uninstalled; brsync was not the default browser, so the defaults were left as they are")
        } else {
            print(
                restored.isEmpty
                    ? "uninstalled; no previous default to restore"
                    : "uninstalled; default browser back to \(restored.joined(separator: ", "))")
        }
    }
}
