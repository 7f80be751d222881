import BrsyncCommands
import CGtk
import JSON
import Replica
import SyncCore

/// The Sync page's "Needs you": what waits for the person, each in words
/// with the action that settles it, as `brsync status`, `log --conflicts`
/// and `log --removed` say them:
/// - the stop the last sync ended with (a key rotated elsewhere, the
///   operator's reset of encryption, a token the server no longer takes…);
/// - another device's writes the server may be withholding (an alarm);
/// - values that lost to concurrent edits ("Restore this value");
/// - records a sync removed or set aside ("Restore");
/// - profiles that wait for this machine's approval;
/// - records the server sent that never applied here.
/// Empty, it says that nothing waits.
final class SyncAttention {
    let root = Widgets.box(GTK_ORIENTATION_VERTICAL, spacing: 6)
    private let context: SettingsContext
    /// Set by the page: the actions that live elsewhere in the window.
    var syncNow: () -> Void = {}
    var joinAgain: () -> Void = {}
    var showEncryption: () -> Void = {}
    var approveProfile: (LocalBrowser) -> Void = { _ in }

    /// At most this many conflicts and removed records are listed (the
    /// commands list them all).
    static let listed = 20

    init(context: SettingsContext) {
        self.context = context
        brsync_accessible_label(root, "Needs you")
    }

    /// One thing that waits: its words, and the buttons that settle it.
    struct Item {
        var text: String
        var error = false
        var actions: [Action] = []
    }

    struct Action {
        var title: String
        var detail: String
        var run: () -> Void
    }

    /// What the list shows now (its words and buttons): the list is built
    /// again only when that changes, so a reload (every change elsewhere)
    /// neither moves the keyboard's focus nor swaps a button being pressed.
    private var shownSignature: [String]?

    func reload() {
        let replica = context.replica
        let names = (try? replica.deviceNames()) ?? DeviceNames(names: [:], thisDevice: replica.deviceID)
        var items: [Item] = []
        func add(_ text: String, error: Bool = false, _ actions: Action...) {
            items.append(Item(text: text, error: error, actions: actions))
        }
        if let state = try? replica.syncState(), !state.problem.isEmpty {
            let (text, action) = stop(state)
            items.append(Item(text: text, error: true, actions: action.map { [$0] } ?? []))
        }
        for failure in (try? replica.ledgerFailures()) ?? [] where failure.alarming {
            let device = DisplayText.printable(names.display(failure.device))
            add(
                "The server may be withholding writes of \(device): \(DisplayText.printable(String(failure.what.prefix(300)))) "
                    + "(since \(Timestamp.iso8601(millis: failure.firstAtMillis))). Sync on that device; if this still "
                    + "stands, ask the server's operator or use another server. Everything here is kept.",
                error: true,
                Action(title: "_Forget \(device)…", detail: "Forget \(failure.device): it will never sync again") {
                    [unowned self] in forget(failure, shown: device)
                })
        }
        /// The newest ``listed`` of `entries`, each with its Restore, and how many more.
        func restorable<Entry>(
            _ entries: [Entry], more: String,
            _ row: (Entry) -> (text: String, title: String, detail: String, done: String, restore: () throws -> Void)
        ) {
            for entry in entries.prefix(Self.listed) {
                let (text, title, detail, done, restore) = row(entry)
                add(text, Action(title: title, detail: detail) { [unowned self] in context.apply(done, restore) })
            }
            if entries.count > Self.listed { add("And \(entries.count - Self.listed) more \(more).") }
        }
        let conflicts = ((try? replica.conflicts(limit: 200)) ?? []).filter { $0.restoredAtMillis == nil }
        restorable(conflicts, more: "conflicts ('brsync log --conflicts' lists them all)") { conflict in
            (
                "Conflict #\(conflict.id) in \(RecordWords.record(conflict)): \(RecordWords.conflict(conflict, names: names)).",
                "_Restore this value", "Restore conflict #\(conflict.id)",
                "Restored \(RecordWords.record(conflict)) \(conflict.field): it syncs at the next sync",
                { _ = try replica.restore(conflict: conflict.id) }
            )
        }
        let removed = ((try? replica.removedRecords(limit: 200)) ?? []).filter {
            $0.restoredAtMillis == nil && (try? replica.isHeldNow($0)) != true
        }
        restorable(removed, more: "removed records ('brsync log --removed' lists them all)") { record in
            (
                "Removed #\(record.id): \(RecordWords.removed(record, heldNow: false)).", "_Restore",
                "Restore removed record #\(record.id)",
                "Restored \(record.collection)/\(DisplayText.printable(record.key)): it syncs at the next sync",
                { _ = try replica.restore(removed: record.id) }
            )
        }
        for local in ((try? replica.browsers()) ?? []) where local.awaitsApproval {
            add(
                "The profile \(DisplayText.printable(local.browser.name)) (\(local.browser.id)) came from another machine "
                    + "and waits for your approval before it opens links here.",
                Action(title: "_Approve…", detail: "Approve \(local.browser.id)…") { [unowned self] in
                    approveProfile(local)
                })
        }
        let asideCount = (try? replica.pulledAsideCount()) ?? 0
        if asideCount > 0 {
            let newest = (try? replica.pulledAside(limit: 3)) ?? []
            let listedAside = newest.map {
                "\(DisplayText.printable($0.shown)): \(DisplayText.printable(String($0.why.prefix(200))))"
            }
            add(
                "\(asideCount) record(s) the server sent were never applied here; they come in when a pull brings them "
                    + "whole (each sync asks for them again). Newest: \(listedAside.joined(separator: "; ")).",
                Action(title: "Ask _again now", detail: "Sync now, asking for the records set aside") {
                    [unowned self] in syncNow()
                })
        }
        show(items)
    }

    private func show(_ items: [Item]) {
        let signature = items.map { item in
            ([item.text, item.error ? "!" : ""] + item.actions.flatMap { [$0.title, $0.detail] }).joined(
                separator: "\u{1}")
        }
        guard signature != shownSignature else { return }
        shownSignature = signature
        while let child = gtk_widget_get_first_child(root) { gtk_box_remove(brsync_box(root), child) }
        for item in items {
            let row = Widgets.box(GTK_ORIENTATION_VERTICAL, spacing: 4)
            let label = Widgets.label(item.text, classes: item.error ? ["error"] : [], wrap: true)
            gtk_label_set_selectable(brsync_label(label), 1)
            Widgets.append(row, label)
            if !item.actions.isEmpty {
                let buttons = Widgets.box(GTK_ORIENTATION_HORIZONTAL)
                for action in item.actions {
                    Widgets.append(buttons, Widgets.button(action.title, detail: action.detail, action: action.run))
                }
                Widgets.append(row, buttons)
            }
            Widgets.append(root, row)
        }
        if items.isEmpty {
            Widgets.append(root, Widgets.label("Nothing waits for you.", classes: ["dim-label"], wrap: true))
        }
    }

    /// The last sync's stop in words, and the action that settles it.
    private func stop(_ state: SyncState) -> (String, Action?) {
        let text =
            (state.stopped ? "The last sync stopped: " : "The last sync finished, and said: ")
            + DisplayText.printable(state.problem)
            + (state.problemAtMillis.map { " (\(Timestamp.iso8601(millis: $0)))" } ?? "")
        let code = state.problemCode.map { WireError.Code(rawValue: $0) }
        // An alarm (a rotation none of the person's machines made): no code
        // is added on the server's word; its words say whom to ask.
        if state.problem.contains("ALARM") { return (text, nil) }
        switch code {
        case .noAccountKey?, .keyRotated?, .otherAccount?:
            return (
                text,
                Action(
                    title: "_Add the recovery code…", detail: "Add the account's recovery code on the Encryption page"
                ) {
                    [unowned self] in showEncryption()
                }
            )
        case .encryptionReset?:
            return (
                text,
                Action(title: "_Choose on the Encryption page…", detail: "Encrypt the account again, or forget the key")
                {
                    [unowned self] in showEncryption()
                }
            )
        case .unauthorized?, .revoked?:
            return (
                text,
                Action(title: "_Join again with a new code…", detail: "Join again with a join code from the operator") {
                    [unowned self] in joinAgain()
                }
            )
        default:
            return (
                text,
                Action(title: "_Try again", detail: "Sync now") { [unowned self] in syncNow() }
            )
        }
    }

    /// Stops checking a device that will never sync again, after asking.
    private func forget(_ failure: LedgerFailure, shown: String) {
        Dialogs.confirm(
            parent: context.window, title: "Forget \(shown)?",
            text: "Stop checking \(shown)'s writes? Do this only when that device will never sync again (a lost "
                + "laptop): its failure ends here, and checks start again by themselves if it writes again. Nothing "
                + "synced is changed.",
            accept: "_Forget", accessibleName: "Forget \(failure.device)"
        ) { [unowned self] in
            context.apply("No longer checking \(shown): its failure ended. Nothing synced was changed") {
                let replica = context.replica
                guard let high = try replica.heldLedgerDevices()[failure.device] else {
                    throw ReplicaError.notFound("\(shown)'s ledger is no longer held here: nothing to forget")
                }
                _ = try replica.forgetDevice(failure.device, ledgerHigh: high, now: replica.currentMillis)
            }
        }
    }
}
