import BrsyncCommands
import CGtk
import Replica
import SyncClient
import SyncCommands
import Synchronization

/// Encryption: end-to-end encryption of the account (Deploy/SECURITY.md),
/// as `brsync key init`, `add`, `show`, `rotate` and `forget` do it, with
/// what each does to the other machines said before it is done. A recovery
/// code is shown once when it is made, and again only after a confirmation,
/// as text and as a QR code for a phone's camera. A key change cannot stop
/// halfway (it ends, or it leaves the new key pending for the next sync to
/// settle), so it has no Stop; the window stays live while it runs.
final class EncryptionPage {
    let root = Widgets.page()
    private let context: SettingsContext
    private let standing: Widget
    private let turnOn: Widget
    private let code: Widget
    private let codeCheck: Widget
    private let reveal: Widget
    private let addButton: Widget
    private let holder: Widget
    private let showButton: Widget
    private let rotateButton: Widget
    private let forgetButton: Widget
    private let working: Widget
    private var busy = false

    init(context: SettingsContext) {
        self.context = context
        standing = Widgets.label("", wrap: true)
        turnOn = Widgets.button(
            "_Turn on end-to-end encryption…", detail: "Encrypt this account: the server keeps its rules sealed")
        code = Widgets.entry(name: "Recovery code to add", placeholder: "the code another machine showed")
        gtk_entry_set_visibility(brsync_entry(code), 0)
        codeCheck = Widgets.label("", classes: ["dim-label"], wrap: true)
        brsync_accessible_label(codeCheck, "Recovery code check")
        reveal = Self.revealCheck(code)
        addButton = Widgets.button("A_dd the code", detail: "Add this recovery code to this machine, then sync")
        holder = Widgets.box(GTK_ORIENTATION_VERTICAL, spacing: 8)
        showButton = Widgets.button("_Show the recovery code…", detail: "Show this account's recovery code")
        rotateButton = Widgets.button("_Rotate the key…", detail: "Seal with a new key from now on")
        forgetButton = Widgets.button("_Forget the key…", detail: "Forget this machine's account key")
        working = Widgets.label("", classes: ["dim-label"], wrap: true)
        brsync_accessible_label(working, "Encryption progress")
        let actions = Widgets.box(GTK_ORIENTATION_HORIZONTAL)
        Widgets.append(actions, showButton, rotateButton, forgetButton)
        Widgets.append(holder, actions)
        for widget in [turnOn, addButton] { gtk_widget_set_halign(widget, GTK_ALIGN_START) }
        Widgets.append(
            root, Widgets.heading("End-to-end encryption"), standing, working, turnOn, holder,
            gtk_separator_new(GTK_ORIENTATION_HORIZONTAL), Widgets.heading("Add a recovery code"),
            Widgets.label(
                "A machine that holds the account's key shows its recovery code (here, or 'brsync key show'). Type it "
                    + "here: its last characters are a checksum, so a typo is caught as you type.",
                classes: ["dim-label"], wrap: true),
            Widgets.label("Recovery code", classes: ["caption"]), code, reveal, codeCheck, addButton)
        Signals.on(turnOn, "clicked") { [unowned self] in askTurnOn() }
        Signals.on(addButton, "clicked") { [unowned self] in add() }
        Signals.on(code, "activate") { [unowned self] in add() }
        Signals.on(code, "changed") { [unowned self] in checkAsTyped() }
        Signals.on(showButton, "clicked") { [unowned self] in askShow() }
        Signals.on(rotateButton, "clicked") { [unowned self] in askRotate() }
        Signals.on(forgetButton, "clicked") { [unowned self] in askForget() }
    }

    /// What this machine holds, and what the account is, as the last sync saw it.
    func reload() {
        let replica = context.replica
        let state = try? replica.syncState()
        let held = try? AccountKeys.held(home: context.home)
        let encryption = try? replica.encryptionState()
        let seen = encryption?.sawEncrypted == true
        let reset = encryption?.resetNoted == true
        let rotatedAway = AccountKeys.rotatedAway(replica)
        let text: String
        switch (state?.remoteURL, held, seen) {
        case (nil, nil, _):
            text =
                "This machine does not sync yet (join a server on the Sync page). Encryption is the account's: "
                + "turn it on once this machine syncs, or join an encrypted account with its recovery code."
        case (_, .some, _) where reset:
            text =
                "The server's operator reset this account's end-to-end encryption (its sealed records were "
                + "deleted there; this machine keeps every rule). Choose: encrypt it again with a new key (Turn on "
                + "below; the other machines then add its new code), or forget the key to sync readable. If nobody "
                + "asked for the reset, ask the operator why first."
        case (_, .some, _) where rotatedAway:
            text =
                "The account was rotated to a newer key on another machine: this machine's key opens only what "
                + "was written before. Add the new recovery code below (this machine's edits are kept and go up then)."
        case (_, .some(let keys), _):
            text =
                "This account is end-to-end encrypted, and this machine holds its key: the server keeps your "
                + "rules sealed and cannot read them."
                + (keys.pending != nil
                    ? " A key change is pending: the next sync settles it (Show the recovery code shows both)." : "")
        case (_, nil, true):
            text =
                "This account is end-to-end encrypted, and this machine has no key: its edits wait here and nothing "
                + "is sent readable. Add the account's recovery code below."
        case (_, nil, false):
            text =
                "This machine syncs readable, as its last sync saw the account: the server can read its rules. "
                + "Turn on end-to-end encryption to keep them sealed from the server (if another machine turned it on "
                + "since, the next sync says so, and this machine then needs its code)."
        }
        Widgets.setText(standing, text)
        gtk_widget_set_visible(
            turnOn, state?.remoteURL != nil && (held == nil && !seen || held != nil && reset) ? 1 : 0)
        gtk_widget_set_visible(holder, held != nil ? 1 : 0)
        gtk_widget_set_visible(rotateButton, held != nil && !reset ? 1 : 0)
        gtk_widget_set_visible(forgetButton, held != nil || seen ? 1 : 0)
        for widget in [turnOn, showButton, rotateButton, forgetButton] {
            gtk_widget_set_sensitive(widget, busy ? 0 : 1)
        }
        // A code is checked against the account: a machine that syncs with none has nowhere to check it.
        gtk_widget_set_sensitive(addButton, !busy && state?.remoteURL != nil ? 1 : 0)
    }

    func focusCode() { gtk_widget_grab_focus(code) }

    /// Says, as the code is typed, whether its checksum holds.
    private func checkAsTyped() { Self.check(code, into: codeCheck) }

    /// Says in `label`, as a recovery code is typed in `entry`, whether its
    /// checksum holds (a typo is caught before the server is asked).
    static func check(_ entry: Widget, into label: Widget) {
        let text = Widgets.text(of: entry).trimmingCharacters(in: .whitespacesAndNewlines)
        gtk_widget_remove_css_class(label, "error")
        guard !text.isEmpty else {
            Widgets.setText(label, "")
            return
        }
        do {
            _ = try AccountKey(recoveryCode: text)
            Widgets.setText(label, "The code's checksum holds: it was typed as it was shown.")
        } catch {
            Widgets.setText(label, "Not a recovery code yet: \(error)")
            gtk_widget_add_css_class(label, "error")
        }
    }

    /// A check box that shows what is typed in `entry` (hidden at first: a
    /// code on the screen is a code seen), to compare it with its paper copy.
    static func revealCheck(_ entry: Widget) -> Widget {
        let reveal = Widgets.check("Sho_w the code as typed", name: "Show the recovery code as typed")
        Signals.on(reveal, "toggled") {
            gtk_entry_set_visibility(brsync_entry(entry), Widgets.isActive(reveal) ? 1 : 0)
        }
        return reveal
    }

    /// Adds the code typed (checked against the account, as `key add`), then
    /// syncs; a code that is none, another account's or a retired one is
    /// said, and what was typed stays.
    private func add() {
        guard !busy else { return }
        let text = Widgets.text(of: code).trimmingCharacters(in: .whitespacesAndNewlines)
        let key: AccountKey
        do { key = try AccountKey(recoveryCode: text) } catch {
            context.show(error: text.isEmpty ? "Type the recovery code first." : "Not a recovery code: \(error)")
            return
        }
        run("Adding the code and syncing…") { home in
            let replica = try Replica.open(home: home)
            let added = try AccountKeys.add(key, to: replica)
            let synced = try Transfer.syncNow(home: home, progress: { _, _, _ in }, stop: { false })
            return (added.replaced ? "Account key replaced." : "Account key added.") + " "
                + synced.joined(separator: " ")
        } then: { [weak self] said in
            guard let self else { return }
            context.show(said)
            Widgets.setText(ofEntry: code, "") // a secret: not left in the field
        }
    }

    /// Asks before encrypting, saying what it means.
    private func askTurnOn() {
        Dialogs.confirm(
            parent: context.window, title: "Encrypt this account?",
            text: "The server will keep your rules sealed and cannot read them. A recovery code is made and shown "
                + "once: every other machine needs it (on its Encryption page, or 'brsync key add'), and each stops "
                + "syncing until it has it (its edits are kept). Write it down and keep it apart from this machine: "
                + "without it, and without a machine holding the key, the synced rules cannot be read by anyone."
                + heldChecks(),
            accept: "_Encrypt", accessibleName: "Encrypt the account"
        ) { [unowned self] in changeKey(rotating: false) }
    }

    private func askRotate() {
        Dialogs.confirm(
            parent: context.window, title: "Rotate the account key?",
            text: "From now on everything is sealed with a new key, which the old recovery code (and a machine that "
                + "only has it, such as a lost or revoked one) cannot open. Every other machine stops syncing until "
                + "the new code is added there; its edits are kept and go up then. The new code is shown once."
                + heldChecks(),
            accept: "_Rotate", accessibleName: "Rotate the key"
        ) { [unowned self] in changeKey(rotating: true) }
    }

    /// The failing checks of other devices a key change would end, if any.
    private func heldChecks() -> String {
        guard let held = try? context.replica.ledgerFailures(), !held.isEmpty,
            let names = try? context.replica.deviceNames()
        else { return "" }
        return "\n\nNote: " + SyncClient.heldChecksMessage(held, names: names) + "."
    }

    /// Encrypts the account (again, after an operator's reset) or rotates its
    /// key, then shows the new recovery code once.
    private func changeKey(rotating: Bool) {
        let announced = Mutex<String?>(nil)
        run(
            rotating
                ? "Rotating the key: syncing, then sending every record sealed anew (a key change cannot stop halfway)…"
                : "Encrypting: syncing, then sending every record sealed (a key change cannot stop halfway)…"
        ) { home in
            let replica = try Replica.open(home: home)
            let client: SyncClient
            var afterReset = false
            if rotating {
                client = try AccountKeys.startRotate(replica)
            } else {
                switch try AccountKeys.startInit(replica) {
                case .encrypt(let made): client = made
                case .encryptAgain(let made):
                    client = made
                    afterReset = true
                }
            }
            do {
                let (change, key) = try AccountKeys.change(client, afterReset: afterReset, despiteHeldChecks: true) {
                    key in announced.withLock { $0 = key.recoveryCode }
                }
                var whole = change.before
                whole.add(change.after)
                return key.recoveryCode + "\n"
                    + Transfer.line(whole, rotating ? "key rotate" : "key init", wording: .window)
            } catch {
                // The code may count: the next sync settles it, and Show shows it meanwhile.
                if AccountKeys.mayHaveChanged(home: home), let code = announced.withLock({ $0 }) {
                    throw SyncPage.Failure(
                        message: "\(Failures.message(of: error)). The server may have taken the new key: the next "
                            + "sync settles it. Its recovery code, in case: \(code)")
                }
                throw error
            }
        } then: { [weak self] said in
            guard let self else { return }
            let parts = said.split(separator: "\n", maxSplits: 1).map(String.init)
            context.show(
                (rotating
                    ? "The account key was rotated. Every other machine stops syncing until the new code is added there. "
                    : "This account is now end-to-end encrypted. Every other machine stops syncing until the code is "
                        + "added there. ") + (parts.count > 1 ? parts[1] : ""))
            Dialogs.recoveryCode(
                parent: context.window, title: rotating ? "The new recovery code" : "The recovery code",
                text: "Write this code down and keep it apart from this machine. Every other machine needs it: type it "
                    + "on its Encryption page, or scan it with the phone. It is not shown again unasked.",
                code: parts[0])
        }
    }

    /// Shows the recovery code after a confirmation.
    private func askShow() {
        Dialogs.confirm(
            parent: context.window, title: "Show the recovery code?",
            text: "Anyone who sees this code, and holds a device token of the account, can read every synced rule. "
                + "Show it only where no one else can see the screen.",
            accept: "_Show", accessibleName: "Show the code"
        ) { [unowned self] in
            do {
                let (key, pending) = try AccountKeys.held(home: context.home)
                var text = "This account's recovery code. Type it on another machine's Encryption page, or scan it."
                if let pending {
                    text +=
                        "\n\nA key change is pending: the server may use this newer code already (the next sync "
                        + "settles it): \(pending.recoveryCode)"
                }
                if AccountKeys.rotatedAway(context.replica) {
                    text +=
                        "\n\nThe account was rotated to a newer key since: this code opens only what was written before."
                }
                Dialogs.recoveryCode(
                    parent: context.window, title: "The recovery code", text: text, code: key.recoveryCode)
            } catch { context.show(error: Failures.message(of: error)) }
        }
    }

    /// Forgets this machine's key, after saying what it does; only when the
    /// server keeps the account readable (as `key forget` without --force).
    private func askForget() {
        Dialogs.confirm(
            parent: context.window, title: "Forget the account key?",
            text: "Do this after the server's operator reset the account's encryption and you want it readable: this "
                + "machine then syncs readable and sends every record it holds. While the server keeps the account "
                + "encrypted, the key is not forgotten (this machine could not sync). The key file is set aside, not "
                + "deleted.",
            accept: "_Forget", accessibleName: "Forget the key"
        ) { [unowned self] in
            run("Forgetting the key…") { home in
                let replica = try Replica.open(home: home)
                let said: String
                switch try AccountKeys.forget(replica, force: false) {
                case .markCleared(let seen, let now):
                    said =
                        Replica.EncryptionState.movedAway(seen: seen, now: now)
                        ? "This machine's account now is another one than it saw encrypted, and it is readable: this machine syncs readable."
                        : "The account is readable again (its operator reset it): this machine syncs readable."
                case .keySetAside(let aside, stillEncrypted: true):
                    return "Account key forgotten (kept aside at \(aside)). The account is still encrypted: add its "
                        + "recovery code to sync again."
                case .keySetAside(let aside, stillEncrypted: false):
                    said = "Account key forgotten (kept aside at \(aside)): this machine syncs readable from now on."
                }
                let synced = try Transfer.syncNow(home: home, progress: { _, _, _ in }, stop: { false })
                return said + " " + synced.joined(separator: " ")
            } then: { [weak self] in
                self?.context.show($0)
            }
        }
    }

    /// Runs `work` on a thread of its own with the page's buttons off, saying
    /// `doing` meanwhile; its error is said as the command says it.
    private func run(
        _ doing: String, _ work: @escaping @Sendable (String) throws -> String, then done: @escaping (String) -> Void
    ) {
        guard !busy else { return }
        busy = true
        Widgets.setText(working, doing)
        context.show(doing)
        reload()
        let home = context.home
        Signals.inBackground({ () -> Result<String, SyncPage.Failure> in
            do { return .success(try work(home)) } catch let failure as SyncPage.Failure {
                return .failure(failure)
            } catch { return .failure(SyncPage.Failure(message: Failures.message(of: error))) }
        }) { [weak self] result in
            guard let self else { return }
            busy = false
            Widgets.setText(working, "")
            switch result {
            case .success(let said): done(said)
            case .failure(let failure): context.show(error: failure.message)
            }
            context.reload()
        }
    }
}
