import BrsyncCommands
import Desktop
import Foundation
import JSON
import Model
import Replica
import SyncClient
import SyncCore

/// What `brsync doctor` checks: what a click and a sync need, one finding
/// each, with the command that fixes what is wrong. It changes nothing
/// (the server is asked for one page of one record, as `join` asks). The
/// command prints the findings; a window can show the same ones.
public enum Doctor {
    /// One check's outcome.
    public struct Finding: Sendable {
        public enum State: String, Sendable {
            case ok
            /// Worth knowing; not wrong (no server set, no display here).
            case note
            case problem
        }

        public let check: String
        public let state: State
        public let detail: String
        public var fix: String? = nil
    }

    /// Every check, in order; changes nothing.
    public static func examine(home: String, environment: [String: String]) -> [Finding] {
        let replica: Replica
        do {
            replica = try GlobalOptions.openReplica(home: home)
        } catch {
            return [Finding(check: "replica", state: .problem, detail: Failures.message(of: error), fix: "brsync init")]
        }
        var findings = [Finding(check: "replica", state: .ok, detail: replica.home)]
        let path = (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map(String.init)
        findings += browsers(replica, path: path)
        findings += rules(replica)
        findings += registration(home: home, environment: environment, path: path)
        findings.append(picker(environment: environment, path: path))
        if let held = holdToAsk(home: home, environment: environment) { findings.append(held) }
        findings += sync(replica)
        return findings
    }

    /// Rules that decide nothing here because of their browser: one naming a
    /// browser that is gone (`browsers rm`) is a problem on every machine;
    /// one whose browser is disabled or not launchable here is a note (the
    /// phone's browsers, a profile waiting for approval).
    static func rules(_ replica: Replica) -> [Finding] {
        guard let cannot = try? replica.rulesThatCannotDecide(), !cannot.isEmpty else { return [] }
        func listed(_ some: [(rule: UrlRule, reason: String, known: Bool)]) -> String {
            some.prefix(5).map {
                "'\(DisplayText.printable($0.rule.pattern))' -> \(DisplayText.printable($0.rule.browser))"
            }.joined(separator: ", ")
                + (some.count > 5 ? ", …" : "")
        }
        var findings: [Finding] = []
        let gone = cannot.filter { !$0.known }
        if !gone.isEmpty {
            let names = Set(gone.map(\.rule.browser)).sorted().map { DisplayText.printable($0) }
            findings.append(
                Finding(
                    check: "rules", state: .problem,
                    detail:
                        "\(gone.count) rule(s) name a browser this replica does not have (\(names.joined(separator: ", "))), so they "
                        + "decide nothing and their links go to the next rule or the default browser: \(listed(gone))",
                    fix:
                        "add the browser again ('brsync browsers add \(names[0]) --exec COMMAND' or 'brsync browsers detect'), "
                        + "or point each rule at another ('brsync rules add PATTERN BROWSER') or remove it ('brsync rules rm PATTERN')"
                ))
        }
        let idle = cannot.filter(\.known)
        if !idle.isEmpty {
            findings.append(
                Finding(
                    check: "rules", state: .note,
                    detail:
                        "\(idle.count) rule(s) decide nothing on this machine (their browser is disabled or cannot run here): "
                        + listed(idle), fix: "'brsync explain URL' says why for a link"))
        }
        return findings
    }

    /// Every browser's command, and whether any can open a link.
    static func browsers(_ replica: Replica, path: [String]) -> [Finding] {
        guard let all = try? replica.browsers() else {
            return [
                Finding(
                    check: "browsers", state: .problem, detail: "the replica's browsers cannot be read",
                    fix: "brsync init")
            ]
        }
        var findings: [Finding] = []
        var usable = 0
        for browser in all where browser.browser.enabled {
            let id = DisplayText.printable(browser.browser.id)
            if let held = browser.profileHeld {
                findings.append(
                    browser.awaitsApproval
                        ? Finding(
                            check: "browser \(id)", state: .problem,
                            detail:
                                "a profile made elsewhere whose arguments wait for your approval here (rules for it are skipped): \(DisplayText.printable(held))",
                            fix: "brsync browsers approve \(id) (it shows what would run first)")
                        : Finding(
                            check: "browser \(id)", state: .problem,
                            detail: "a profile that cannot run here: \(DisplayText.printable(held))",
                            fix: "brsync browsers add \(id) --exec COMMAND (this machine's own command for it)"))
                continue
            }
            guard browser.isUsable else {
                findings.append(
                    Finding(
                        check: "browser \(id)", state: .note,
                        detail: "no launch command on this machine (rules for it are skipped here)",
                        fix: "brsync browsers add \(id) --exec COMMAND, or brsync browsers detect"))
                continue
            }
            if let problem = Launcher.programProblem(browser.exec, path: path) {
                findings.append(
                    Finding(
                        check: "browser \(id)", state: .problem, detail: "its command cannot start: \(problem)",
                        fix: "brsync browsers add \(id) --exec COMMAND, or brsync browsers detect"))
            } else {
                usable += 1
            }
        }
        if usable == 0 {
            findings.append(
                Finding(
                    check: "browsers", state: .problem, detail: "no browser here can open a link",
                    fix: "brsync browsers detect, or brsync browsers add ID --exec COMMAND"))
        } else {
            findings.append(Finding(check: "browsers", state: .ok, detail: "\(usable) can open links"))
        }
        return findings
    }

    /// brsync as the default browser: for each type, and its desktop entry.
    static func registration(home: String, environment: [String: String], path: [String]) -> [Finding] {
        let registration = DefaultBrowserRegistration(environment: environment, brsyncHome: home)
        var findings: [Finding] = []
        let types = DefaultBrowserRegistration.mimeTypes
        let others = types.compactMap { type -> String? in
            let current = registration.mimeApps.defaultApplication(for: type)
            return current == DefaultBrowserRegistration.desktopID
                ? nil : "\(type) opens in \(current.map { DisplayText.printable($0) } ?? "nothing set")"
        }
        if others.count == types.count {
            return [
                Finding(
                    check: "default browser", state: .problem,
                    detail: "brsync is not the default browser: links never reach it",
                    fix: "brsync install")
            ]
        }
        if others.isEmpty {
            findings.append(
                Finding(check: "default browser", state: .ok, detail: "brsync, for \(types.joined(separator: ", "))"))
        } else {
            findings.append(
                Finding(
                    check: "default browser", state: .problem,
                    detail: "brsync is not the default for all link types: "
                        + others.joined(separator: "; "), fix: "brsync install"))
        }
        let file = registration.desktopFile
        guard let text = try? String(contentsOfFile: file, encoding: .utf8),
            let entry = try? DesktopEntry(text: text, id: DefaultBrowserRegistration.desktopID, path: file),
            let exec = entry.string("Exec"), let command = try? ExecCommand(exec)
        else {
            findings.append(
                Finding(
                    check: "desktop entry", state: .problem, detail: "\(file) is missing or unreadable",
                    fix: "brsync install"))
            return findings
        }
        if let problem = Launcher.programProblem(exec, path: path) {
            findings.append(
                Finding(
                    check: "desktop entry", state: .problem,
                    detail: "\(file) runs a brsync that cannot start: \(problem)",
                    fix: "brsync install (from the brsync to use)"))
        } else if let index = command.arguments.firstIndex(of: "--home"), index + 1 < command.arguments.count,
            command.arguments[index + 1] != home
        {
            findings.append(
                Finding(
                    check: "desktop entry", state: .problem,
                    detail:
                        "\(file) opens links with the replica in \(DisplayText.printable(command.arguments[index + 1])), not this one",
                    fix: "brsync --home \(home) install"))
        } else {
            findings.append(Finding(check: "desktop entry", state: .ok, detail: file))
        }
        return findings
    }

    /// Whether a picker can ask here, when no rule decides.
    static func picker(environment: [String: String], path: [String]) -> Finding {
        let menus = MenuPicker.menus(configured: environment["BRSYNC_PICKER"], path: path, environment: environment)
        let window = WindowPicker.program(besides: helperExecutable(), environment: environment)
        // A display that is set but does not answer: no window or menu can show there.
        let answering = SessionDisplay.check(environment: environment)
        if let window, answering.any {
            return Finding(check: "picker", state: .ok, detail: "the window (\(window)) on this session's display")
        }
        if let menu = menus.first(where: { $0.canShow(on: answering) }) {
            return Finding(check: "picker", state: .ok, detail: "\(menu.name) (a menu)")
        }
        if !answering.problems.isEmpty {
            return Finding(
                check: "picker", state: .problem,
                detail: "no picker can show: \(answering.problems.joined(separator: "; "))",
                fix:
                    "run brsync doctor in the desktop session, where DISPLAY or WAYLAND_DISPLAY names a display that answers"
            )
        }
        let display = [environment["DISPLAY"], environment["WAYLAND_DISPLAY"]].contains { !($0 ?? "").isEmpty }
        if !display {
            return Finding(
                check: "picker", state: .note,
                detail:
                    "no display in this environment: run 'brsync doctor' in the desktop session to check the picker there"
            )
        }
        return Finding(
            check: "picker", state: .problem,
            detail: "no picker can open on this display (brsync-picker is not beside brsync, and no menu is installed)",
            fix: "install brsync-picker beside brsync (scripts/install), or rofi, wofi, fuzzel, bemenu, dmenu or zenity"
        )
    }

    /// When `brsync hold-to-ask` chose a key: whether this session's keys can be read.
    static func holdToAsk(home: String, environment: [String: String]) -> Finding? {
        let chosen: HeldKeys.Modifier
        do {
            guard let key = try HoldToAsk.chosen(home: home) else { return nil }
            chosen = key
        } catch {
            return Finding(
                check: "hold-to-ask", state: .problem, detail: Failures.message(of: error),
                fix: "brsync hold-to-ask off (or brsync hold-to-ask shift, to set it again)")
        }
        if let reason = HeldKeys.unreadable(environment: environment) {
            return Finding(
                check: "hold-to-ask", state: .note,
                detail:
                    "\(chosen.label) is set, but not read here: \(reason); 'brsync ask-next' on a shortcut works everywhere"
            )
        }
        do throws(HeldKeys.Failure) {
            _ = try HeldKeys.held(environment: environment)
            return Finding(
                check: "hold-to-ask", state: .ok,
                detail: "links clicked while holding \(chosen.label) ask (this X11 session's keys can be read)")
        } catch {
            return Finding(
                check: "hold-to-ask", state: .problem,
                detail: "\(chosen.label) is set, but the keys cannot be read: \(error)",
                fix: "run brsync from the desktop session (its DISPLAY and XAUTHORITY), or brsync hold-to-ask off")
        }
    }

    /// This program's path (`brsync-picker` is looked for beside it).
    static func helperExecutable() -> String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    /// Where the server holds this machine's own changes, when it is not
    /// simply this machine's chain (nothing to say then, or when the server
    /// does not say).
    /// - Parameter holdsKey: this machine holds an account key (of the account it synced with).
    static func ownChain(_ standing: ChainEcho.Standing, holdsKey: Bool = false) -> Finding? {
        switch standing {
        case .ours, .unknown:
            return nil
        case .behind(let last):
            return Finding(
                check: "this machine's changes", state: .note,
                detail:
                    "the server holds them only through change \(last): it was restored from an older copy, and the next sync sends the rest again",
                fix: "brsync sync")
        case .ahead(let last):
            return Finding(
                check: "this machine's changes", state: .note,
                detail: "the server took them through change \(last), further than it answered (an answer was lost)",
                fix: "brsync sync (it confirms them)")
        case .otherAccount:
            // With a key of its own account it stops there; without, it joins.
            let next =
                holdsKey
                ? ", and its account key is of that one: its next sync stops (other_account) and sends nothing"
                : ": its next sync joins that account as a new machine and sends what this machine holds there (a machine with the account key of its own account stops instead, and sends nothing)"
            return Finding(
                check: "this machine's changes", state: holdsKey ? .problem : .note,
                detail: "this machine's token is of another account than the one it synced with" + next,
                fix: (holdsKey ? "" : "brsync sync, or ")
                    + "'brsync remote set' with a token of the account this machine synced with")
        case .another:
            return Finding(
                check: "this machine's changes", state: .problem,
                detail:
                    "the server holds changes under this machine's device id that this machine did not make: a copy of this home (a restored backup, a cloned disk) syncs under it, or the server mixes up devices; nothing here is lost",
                fix: "brsync sync after an edit: the machine that did not make them takes a device id of its own")
        }
    }

    /// A token the server no longer takes (revoked, or unknown to it): the
    /// two ways back, as the refusal itself says them.
    static let newCredentials =
        "ask the server's operator for a new token ('brsyncd device token ACCOUNT NAME') and run 'brsync remote set URL "
        + "--token-file FILE', or for a join code and run 'brsync join --replace' (local edits are kept either way)"

    /// What settles a kept problem: a stop that waits for a key or another
    /// token is not settled by running the same part again.
    /// - Parameter accountReadable: the server answered that the account is
    ///   not end-to-end encrypted now (nil: not asked, or no answer).
    static func fix(for kept: KeptProblem, accountReadable: Bool? = nil) -> String {
        switch kept.code.map({ WireError.Code(rawValue: $0) }) {
        case .noAccountKey? where accountReadable == true:
            return
                "brsync key forget: the server keeps this machine's account readable now (the machine was moved to another "
                + "account, or the operator reset its encryption); it asks the server again before it clears the mark"
        case .noAccountKey?, .encryptionRequired?:
            return "brsync key add (with the account's recovery code), then brsync sync"
        case .quotaExceeded?:
            return
                "ask the server's operator to raise the account's limit ('brsyncd account limits NAME'); removing rules "
                + "here does not help at once: their deletions count until the server purges them"
        case .keyRotated?:
            return "brsync key add with the account's new recovery code, or brsync sync where the message asks for it"
        case .otherAccount?:
            return
                "'brsync remote set' with a token of the account this machine's key belongs to, or 'brsync key add' with this account's recovery code"
        case .encryptionReset?:
            return "brsync key init, brsync key add or brsync key forget (the message says which does what)"
        case .unauthorized?, .revoked?:
            return newCredentials
        default:
            return "brsync \(kept.part.rawValue) (the message says what else to do)"
        }
    }

    /// The server, its certificate and this machine's token, asked once.
    public static func sync(_ replica: Replica) -> [Finding] {
        guard let state = try? replica.syncState(), let url = state.remoteURL else {
            return [
                Finding(
                    check: "sync", state: .note, detail: "no server set: this machine syncs nothing",
                    fix: "brsync join (with a join code), or brsync remote set URL --token-file FILE")
            ]
        }
        var findings: [Finding] = []
        // Whether the server keeps the account readable, once asked (below).
        var accountReadable: Bool?
        do {
            // Doctor is run when syncing seems stuck: it does not wait behind a sync that is.
            var options = SyncClient.Options()
            options.lockWaitMilliseconds = 2_000
            let client = try machineClient(replica, key: .given(nil), options: options).client
            let encrypted = try client.accountKeyID() != nil
            accountReadable = !encrypted
            findings.append(
                Finding(
                    check: "server", state: .ok,
                    detail: "\(url) answered; its certificate and this machine's token were accepted"))
            // An answer that cannot be read says nothing of this machine's changes.
            do {
                let holdsKey = (try? AccountKeyFile.read(home: replica.home)) != nil
                if let finding = ownChain(try client.ownChainStanding(), holdsKey: holdsKey) {
                    findings.append(finding)
                }
            } catch SyncError.replicaBusy(let message) {
                findings.append(
                    Finding(
                        check: "sync", state: .problem, detail: message,
                        fix: "if it does not end, stop that process (kill PID); nothing is lost"))
            } catch {}
            if encrypted, (try? AccountKeyFile.read(home: replica.home)) == nil {
                findings.append(
                    Finding(
                        check: "encryption", state: .problem,
                        detail: "the account is end-to-end encrypted and this machine has no key",
                        fix: "brsync key add (with the account's recovery code)"))
            }
        } catch let error as SyncError {
            let fix: String
            switch error {
            case .unreachable(let message) where message.contains(" is not trusted: "):
                // Only a certificate that does not verify is about the CA; a refused connection or a timeout is not.
                fix =
                    "if the server has a new certificate authority: brsync remote set \(url) --token-file \(TokenFile.path(home: replica.home)) --ca FILE"
            case .unreachable:
                fix =
                    "check that the server runs and that this machine reaches it (the address: brsync remote); nothing is lost meanwhile"
            case .busy:
                fix = "wait a minute and run brsync sync; nothing is lost meanwhile"
            case .refused(let code, _) where code == .unauthorized || code == .revoked:
                fix = newCredentials
            default: fix = "brsync sync (the message says what else to do)"
            }
            findings.append(Finding(check: "server", state: .problem, detail: error.description, fix: fix))
        } catch {
            findings.append(
                Finding(
                    check: "server", state: .problem, detail: Failures.message(of: error),
                    fix: "brsync remote set \(url) --token-file FILE, or brsync join --replace"))
        }
        if let watch = WatchWake.status(home: replica.home), !watch.isAlive(nowMillis: WatchWake.bootMillis()) {
            findings.append(
                Finding(
                    check: "watch", state: .problem, detail: "brsync watch (pid \(watch.pid)) stopped answering",
                    fix: "systemctl --user restart brsync-watch (or stop it and run 'brsync watch' again)"))
        }
        // The kept problems first, each with what settles it as the server stands.
        let kept = state.problems.map { kept in
            let said = kept.code == SyncState.finishedCode ? "it finished saying" : "it stopped"
            return Finding(
                check: "last \(kept.part.rawValue)", state: .problem,
                detail: "\(said): \(DisplayText.printable(kept.message))",
                fix: fix(for: kept, accountReadable: accountReadable))
        }
        return kept + findings
    }
}
