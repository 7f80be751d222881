import BrsyncCommands
import CGtk
import Glibc
import JSON
import Replica
import SyncCommands
import SyncCore
import Synchronization
import SystemServices

/// Sync: the server this machine syncs with (its address, the certificate
/// authority it pins, and whether it answers), pairing with a join code
/// (as `brsync join`), the last sync and "Sync now" (its progress, and a
/// Stop that keeps what came before), live sync and its switch, this
/// machine's name and the account's other devices, and what waits for the
/// person (``SyncAttention``). Everything that may wait on the network runs
/// on a thread of its own, with a replica connection of its own.
final class SyncPage {
    let root = Widgets.page()
    private let context: SettingsContext
    private let server: Widget
    private let authority: Widget
    private let answer: Widget
    private let checkButton: Widget
    private let joinHeading: Widget
    private let code: Widget
    private let recovery: Widget
    private let recoveryCheck: Widget
    private let replace: Widget
    private let joinButton: Widget
    private let lastSync: Widget
    private let syncButton: Widget
    private let stopButton: Widget
    private let progress: Widget
    /// What the progress line says now (it is set again only when that changes).
    private var shownProgress = ""
    private let live: Widget
    private let liveSwitch: Widget
    private let machineName: Widget
    private let devices: Widget
    let attention: SyncAttention
    /// Set while the page moves the switch itself (not the person).
    private var settingSwitch = false
    /// The name the entry was last given from the replica.
    private var shownName: String?
    /// The sync or join running now, if any: what its thread reports, and its stop.
    private var running: Running?

    /// What a running sync's thread shares with the window: its stop, and
    /// the last progress it reported (the window shows it every 200 ms).
    final class Running: Sendable {
        let stop = Atomic<Bool>(false)
        let said = Mutex<String?>(nil)
    }

    init(context: SettingsContext) {
        self.context = context
        server = Widgets.label("", wrap: true)
        gtk_label_set_selectable(brsync_label(server), 1)
        authority = Widgets.label("", classes: ["dim-label"], wrap: true)
        gtk_label_set_selectable(brsync_label(authority), 1)
        answer = Widgets.label("", wrap: true)
        checkButton = Widgets.button("C_heck the server", detail: "Ask the server whether it answers this machine")
        joinHeading = Widgets.heading("Join a server")
        code = Widgets.entry(name: "Join code", placeholder: "brsync://join?server=…")
        recovery = Widgets.entry(name: "Recovery code", placeholder: "only for an end-to-end encrypted account")
        gtk_entry_set_visibility(brsync_entry(recovery), 0)
        recoveryCheck = Widgets.label("", classes: ["dim-label"], wrap: true)
        brsync_accessible_label(recoveryCheck, "Recovery code check")
        replace = Widgets.check("Instead of the server this machine syncs with now")
        joinButton = Widgets.button("_Join", detail: "Join the server the code names, then sync")
        lastSync = Widgets.label("", wrap: true)
        syncButton = Widgets.button("_Sync now", detail: "Send this machine's edits and fetch everyone else's")
        stopButton = Widgets.button("S_top", detail: "Stop the sync before its next request; nothing is lost")
        progress = Widgets.label("", classes: ["dim-label"], wrap: true)
        brsync_accessible_label(progress, "Sync progress")
        live = Widgets.label("", wrap: true)
        liveSwitch = gtk_switch_new()! // named by its caption (its mnemonic label), for screen readers too
        gtk_widget_set_valign(liveSwitch, GTK_ALIGN_CENTER)
        machineName = Widgets.entry(name: "This machine's name")
        devices = Widgets.box(GTK_ORIENTATION_VERTICAL, spacing: 4)
        brsync_accessible_label(devices, "Devices")
        attention = SyncAttention(context: context)
        let syncButtons = Widgets.box(GTK_ORIENTATION_HORIZONTAL)
        Widgets.append(syncButtons, syncButton, stopButton)
        let liveRow = Widgets.box(GTK_ORIENTATION_HORIZONTAL)
        let liveCaption = Widgets.label("_Live sync")
        gtk_label_set_use_underline(brsync_label(liveCaption), 1)
        gtk_label_set_mnemonic_widget(brsync_label(liveCaption), liveSwitch)
        Widgets.append(liveRow, liveCaption, liveSwitch)
        let nameRow = Widgets.box(GTK_ORIENTATION_HORIZONTAL)
        gtk_widget_set_hexpand(machineName, 1)
        let renameButton = Widgets.button("_Rename", detail: "Rename this machine (the name syncs)")
        Widgets.append(nameRow, machineName, renameButton)
        for widget in [checkButton, joinButton, replace] { gtk_widget_set_halign(widget, GTK_ALIGN_START) }
        Widgets.append(
            root, Widgets.heading("Needs you"), attention.root, gtk_separator_new(GTK_ORIENTATION_HORIZONTAL),
            Widgets.heading("Server"), server, authority, answer, checkButton,
            gtk_separator_new(GTK_ORIENTATION_HORIZONTAL), Widgets.heading("Syncing"), lastSync, syncButtons,
            progress, liveRow, live, gtk_separator_new(GTK_ORIENTATION_HORIZONTAL), joinHeading,
            Widgets.label(
                "A join code is made on the server, by its operator: brsyncd device add ACCOUNT DEVICE --url URL "
                    + "--ca CA.pem. It works once. Paste it here; an end-to-end encrypted account also needs its "
                    + "recovery code.", classes: ["dim-label"], wrap: true),
            Widgets.label("Join code", classes: ["caption"]), code,
            Widgets.label("Recovery code (an end-to-end encrypted account's)", classes: ["caption"]), recovery,
            EncryptionPage.revealCheck(recovery), recoveryCheck, replace,
            joinButton, gtk_separator_new(GTK_ORIENTATION_HORIZONTAL),
            Widgets.heading("Devices"), Widgets.label("This machine's name", classes: ["caption"]), nameRow, devices)
        gtk_widget_set_sensitive(stopButton, 0)
        Signals.on(checkButton, "clicked") { [unowned self] in checkServer() }
        Signals.on(syncButton, "clicked") { [unowned self] in syncNow() }
        Signals.on(stopButton, "clicked") { [unowned self] in stop() }
        Signals.on(joinButton, "clicked") { [unowned self] in join() }
        Signals.on(code, "activate") { [unowned self] in join() }
        Signals.on(recovery, "activate") { [unowned self] in join() }
        Signals.on(recovery, "changed") { [unowned self] in EncryptionPage.check(recovery, into: recoveryCheck) }
        Signals.on(renameButton, "clicked") { [unowned self] in rename() }
        Signals.on(machineName, "activate") { [unowned self] in rename() }
        Signals.withObject(liveSwitch, "notify::active") { [unowned self] _ in
            if !settingSwitch { switchLiveSync(on: gtk_switch_get_active(brsync_switch(liveSwitch)) != 0) }
        }
        attention.syncNow = { [unowned self] in syncNow() }
        attention.joinAgain = { [unowned self] in
            Widgets.setActive(replace, true)
            gtk_widget_grab_focus(code)
            context.show("Paste a join code from the server's operator (brsyncd device add) and press Join.")
        }
    }

    func reload() {
        let replica = context.replica
        let state = try? replica.syncState()
        if let url = state?.remoteURL {
            Widgets.setText(server, "This machine syncs with \(url).")
            Widgets.setText(authority, Self.authorityText(caFile: state?.caFile))
            Widgets.setText(joinHeading, "Join another server")
        } else {
            Widgets.setText(server, "This machine does not sync yet: join a server with a join code below.")
            Widgets.setText(authority, "")
            Widgets.setText(joinHeading, "Join a server")
        }
        gtk_widget_set_visible(replace, state?.remoteURL != nil ? 1 : 0)
        gtk_widget_set_visible(checkButton, state?.remoteURL != nil ? 1 : 0)
        let last = state?.lastSyncMillis.map { "Last sync: \(Timestamp.iso8601(millis: $0))." } ?? "Never synced."
        // What the last sync met is said once, under Needs you, with what to do.
        let said =
            state?.stopped == true
            ? " The last attempt stopped: Needs you, above, says why."
            : (state?.problem.isEmpty == false ? " It left a note: see Needs you, above." : "")
        Widgets.setText(lastSync, last + said)
        gtk_widget_remove_css_class(lastSync, "error")
        if state?.stopped == true { gtk_widget_add_css_class(lastSync, "error") }
        if running == nil { gtk_widget_set_sensitive(syncButton, state?.remoteURL != nil ? 1 : 0) }
        showLiveSync(stopped: state?.stopped == true)
        // What was typed stays until it is saved; untouched, the entry follows the name.
        if shownName == nil || Widgets.text(of: machineName) == shownName {
            Widgets.setText(ofEntry: machineName, replica.deviceName)
        }
        shownName = replica.deviceName
        showDevices(replica)
        attention.reload()
    }

    /// The certificate authority the replica pins for the server, with its
    /// SHA-256 fingerprint (the one a join code names), or the system's.
    static func authorityText(caFile: String?) -> String {
        guard let caFile else { return "Its certificate is checked against the system's certificate authorities." }
        guard let hex = Joining.fingerprint(caFile: caFile) else {
            return "Its certificate authority is pinned in \(caFile), which cannot be read now."
        }
        return "Its certificate authority is pinned: \(caFile) (SHA-256 \(hex))."
    }

    private func showDevices(_ replica: Replica) {
        while let child = gtk_widget_get_first_child(devices) { gtk_box_remove(brsync_box(devices), child) }
        guard let names = try? replica.deviceNames() else { return }
        Widgets.append(
            devices, Widgets.label("This machine: \(replica.deviceName) (\(replica.deviceID))", wrap: true))
        let others = names.names.filter { $0.key != replica.deviceID && names.current($0.key) == $0.key }
            .sorted { ($0.value, $0.key) < ($1.value, $1.key) }
        let notes = Self.deviceNotes(replica)
        for (id, _) in others {
            Widgets.append(devices, Widgets.label("\(names.display(id)) (\(id))", wrap: true))
            for note in notes[id] ?? [] {
                Widgets.append(devices, Widgets.label(note, classes: ["dim-label"], wrap: true))
            }
        }
        if others.isEmpty {
            Widgets.append(
                devices,
                Widgets.label(
                    "No other device is named yet: names arrive with a sync.", classes: ["dim-label"], wrap: true))
        }
    }

    /// What the checks of each other device's writes say, by id, as
    /// `brsync status` does: a check not passing yet (an alarm is under
    /// "Needs you"), a device forgotten here, a device that withdrew writes
    /// an earlier id of its own lost everywhere.
    static func deviceNotes(_ replica: Replica) -> [String: [String]] {
        var notes: [String: [String]] = [:]
        for failure in (try? replica.ledgerFailures()) ?? [] where !failure.alarming {
            notes[failure.device, default: []].append(
                "Its ledger names writes not here yet (since \(Timestamp.iso8601(millis: failure.firstAtMillis))): its "
                    + "last push may have been cut short. It becomes an alarm if it still stands after 15 minutes and a "
                    + "second pull.")
        }
        for device in ((try? replica.forgottenDevices()) ?? [:]).values {
            notes[device.device, default: []].append(
                "Forgotten here on \(Timestamp.iso8601(millis: device.atMillis)): its writes are not checked until it "
                    + "writes again.")
        }
        for withdrawer in (try? replica.withdrawingDevices()) ?? [] {
            notes[withdrawer.device, default: []].append(
                "It withdrew writes an earlier id of its own made that every holder lost (its home was restored from "
                    + "an older copy): checks here excuse those writes.")
        }
        return notes
    }

    /// Asks the server, as `brsync doctor` does: its certificate, this
    /// machine's token, and where it holds this machine's changes.
    private func checkServer() {
        gtk_widget_set_sensitive(checkButton, 0)
        Widgets.setText(answer, "Asking the server…")
        let home = context.home
        Signals.inBackground({ () -> [String] in
            guard let replica = try? Replica.open(home: home) else { return ["Problem: the replica cannot open"] }
            return Doctor.sync(replica).filter { $0.check != "last sync" }.map { finding in
                let state = finding.state == .ok ? "" : finding.state == .problem ? "Problem: " : "Note: "
                return "\(state)\(finding.detail)" + (finding.fix.map { " — fix: \($0)" } ?? "")
            }
        }) { [weak self] lines in
            guard let self else { return }
            gtk_widget_set_sensitive(checkButton, 1)
            Widgets.setText(answer, lines.joined(separator: "\n"))
            gtk_widget_remove_css_class(answer, "error")
            if lines.contains(where: { $0.hasPrefix("Problem") }) { gtk_widget_add_css_class(answer, "error") }
        }
    }

    /// Syncs on a thread of its own; the window stays live, shows its
    /// progress, and Stop ends it before its next request.
    private func syncNow(after joined: String? = nil) {
        guard running == nil else { return }
        let run = Running()
        running = run
        started()
        context.show(joined.map { "\($0) Syncing…" } ?? "Syncing…")
        let home = context.home
        inBackground({
            try Transfer.syncNow(
                home: home,
                progress: { what, done, total in
                    run.said.withLock { $0 = "\(what): \(done)\(total.map { " of \($0)" } ?? "")" }
                }, stop: { run.stop.load(ordering: .relaxed) })
        }) { [weak self] lines in
            // After a join, the line keeps what the join did.
            self?.context.show(([joined].compactMap { $0 } + lines).joined(separator: " "))
            self?.context.reload()
        }
        watchProgress(run)
        if context.timing { measureStalls(run) }
    }

    /// `BRSYNC_SETTINGS_TIMING`: how long "Sync now" took to the page shown
    /// again, and the window's longest stall meanwhile (the gap between two
    /// ticks of a 10 ms timer: how long a click or a key would have waited),
    /// on standard error (the settings benchmark reads it).
    private func measureStalls(_ run: Running) {
        let started = g_get_monotonic_time()
        var last = started
        var longest = 0
        Signals.every(milliseconds: 10) { [weak self] in
            let now = g_get_monotonic_time()
            longest = max(longest, now - last)
            last = now
            guard let self, running === run else {
                writeToStandardError(
                    "sync now: \(String(format: "%.1f", Double(now - started) / 1000)) ms; the window's longest "
                        + "stall meanwhile: \(String(format: "%.1f", Double(longest) / 1000)) ms\n")
                return false
            }
            return true
        }
    }

    /// A failure's words, handed from a sync's thread.
    struct Failure: Error, Sendable { let message: String }

    /// Runs `work` on a thread of its own; then, on the main loop, `done`
    /// with what it gave, or its error said at the window's foot (the page
    /// shown again, which may show a stop the sync recorded).
    private func inBackground<Value: Sendable>(
        _ work: @escaping @Sendable () throws -> Value, then done: @escaping (Value) -> Void
    ) {
        Signals.inBackground({ () -> Result<Value, Failure> in
            do { return .success(try work()) } catch { return .failure(Failure(message: Failures.message(of: error))) }
        }) { [weak self] result in
            guard let self else { return }
            finished()
            switch result {
            case .success(let value): done(value)
            case .failure(let failure):
                context.show(error: failure.message)
                context.reload()
            }
        }
    }

    /// Joins the server a pasted join code names, then syncs; a code that is
    /// none, used already or for another CA, and a wrong recovery code, are
    /// said as `brsync join` says them, and what was typed stays.
    private func join() {
        guard running == nil else { return }
        let text = Widgets.text(of: code).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else {
            context.show(error: "Paste a join code first (its operator makes it: brsyncd device add).")
            return
        }
        let joinCode: JoinCode
        do { joinCode = try JoinCode(parsing: text) } catch {
            context.show(error: "That is not a join code: \(error)")
            return
        }
        let recoveryText = Widgets.text(of: recovery).trimmingCharacters(in: .whitespacesAndNewlines)
        let replacing = Widgets.isActive(replace)
        // Said in this window's words (the command's would name --replace).
        if !replacing, let current = (try? context.replica.syncState())?.remoteURL {
            context.show(
                error:
                    "This machine syncs with \(current) already: tick \"Instead of the server this machine syncs with "
                    + "now\" to use this code instead (its rules and unpushed edits stay and go up). Nothing was changed."
            )
            return
        }
        let run = Running()
        running = run
        started()
        context.show("Joining \(joinCode.server)…")
        let home = context.home
        inBackground({
            let outcome = try Joining.join(home: home, code: joinCode, replace: replacing, recoveryText: recoveryText)
            let sealed = outcome.key != nil ? ", end-to-end encrypted" : ""
            return "Joined \(outcome.remote) (its CA pinned in \(outcome.caFile))\(sealed)."
        }) { [weak self] joined in
            guard let self else { return }
            // The code works once: it is cleared; the recovery code too (a secret).
            Widgets.setText(ofEntry: code, "")
            Widgets.setText(ofEntry: recovery, "")
            Widgets.setActive(replace, false)
            context.reload()
            // Stop, pressed while joining (one exchange, which ends first): no first sync.
            guard !run.stop.load(ordering: .relaxed) else {
                context.show("\(joined) The first sync was not started (you pressed Stop): Sync now starts it.")
                return
            }
            syncNow(after: joined)
        }
    }

    /// Renames this machine (the name syncs); a name that is none is said,
    /// and what was typed stays.
    private func rename() {
        let name = Widgets.text(of: machineName)
        if let problem = Replica.problem(withDeviceName: name) {
            context.show(error: "That name cannot be this machine's: \(problem)")
            return
        }
        let old = context.replica.deviceName
        guard name != old else {
            context.show("This machine is already named '\(name)'.")
            return
        }
        context.apply("This machine is now '\(name)' (was '\(old)'); other machines learn it at the next sync") {
            try context.replica.renameDevice(name)
        }
    }

    /// The switch and the words of live sync, as the watch's lock says.
    private func showLiveSync(stopped: Bool) {
        let standing = LiveSync.standing(home: context.home)
        settingSwitch = true
        gtk_switch_set_active(brsync_switch(liveSwitch), standing.alive ? 1 : 0)
        gtk_switch_set_state(brsync_switch(liveSwitch), standing.alive ? 1 : 0)
        settingSwitch = false
        Widgets.setText(
            live,
            standing.alive && stopped
                ? "Live sync runs, but syncing has stopped: Needs you, above, says why (live sync tries again by "
                    + "itself; edits wait here meanwhile)."
                : standing.alive
                    ? "Live sync runs\(standing.asService ? " (the brsync-watch user service)" : ""): edits go up at once, "
                        + "and others' arrive as they are made."
                    : "Live sync is off: edits go up at the next sync (the sync timer's, or Sync now).")
    }

    /// Starts or stops live sync on a thread of its own (it waits for the
    /// watch to answer); the switch then shows what is true.
    private func switchLiveSync(on: Bool) {
        gtk_widget_set_sensitive(liveSwitch, 0)
        let home = context.home
        let brsync = ProcessEnvironment.beside(named: "brsync")
        Signals.inBackground({ () -> Result<String, Failure> in
            do {
                return .success(on ? try LiveSync.start(home: home, brsync: brsync) : try LiveSync.stop(home: home))
            } catch { return .failure(Failure(message: Failures.message(of: error))) }
        }) { [weak self] result in
            guard let self else { return }
            gtk_widget_set_sensitive(liveSwitch, 1)
            switch result {
            case .success(let said): context.show(said)
            case .failure(let failure): context.show(error: failure.message)
            }
            showLiveSync(stopped: (try? context.replica.syncState())?.stopped == true)
        }
    }

    private func stop() {
        guard let running else { return }
        running.stop.store(true, ordering: .relaxed)
        gtk_widget_set_sensitive(stopButton, 0)
        showProgress("Stopping after the request under way…")
    }

    private func started() {
        for widget in [syncButton, joinButton] { gtk_widget_set_sensitive(widget, 0) }
        gtk_widget_set_sensitive(stopButton, 1)
        showProgress("Starting…")
    }

    private func finished() {
        running = nil
        for widget in [syncButton, joinButton] { gtk_widget_set_sensitive(widget, 1) }
        gtk_widget_set_sensitive(stopButton, 0)
        showProgress("")
    }

    /// Shows what the running sync last reported, every 200 ms, while it runs.
    /// The progress line, said to screen readers as it changes (its name
    /// alone would be "Sync progress").
    private func showProgress(_ text: String) {
        guard text != shownProgress else { return }
        shownProgress = text
        Widgets.setText(progress, text)
        brsync_accessible_label(progress, text.isEmpty ? "Sync progress" : "Sync progress: \(text)")
    }

    private func watchProgress(_ run: Running) {
        Signals.every(milliseconds: 200) { [weak self] in
            guard let self, running === run else { return false }
            if let said = run.said.withLock({ $0 }), !run.stop.load(ordering: .relaxed) {
                showProgress(said)
            }
            return true
        }
    }
}
