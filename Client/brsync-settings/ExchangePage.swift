import BrsyncCommands
import CGtk
import Desktop
import Foundation
import JSON
import Replica
import SystemServices

/// Import and export: browsers, rules and settings as the JSON `brsync
/// export` writes and `brsync import` reads (launch commands stay on this
/// machine), to and from a file named in the field or chosen in the desktop's
/// file chooser. An import is all or nothing; an export never replaces a file
/// without asking.
final class ExchangePage {
    let root = Widgets.page()
    private let context: SettingsContext
    private let file: Widget
    private var chooser: gpointer?

    init(context: SettingsContext) {
        self.context = context
        file = Widgets.entry(name: "File", placeholder: "~/brsync-export.json")
        Widgets.setText(ofEntry: file, "\(ProcessEnvironment.value("HOME") ?? "")/brsync-export.json")
        let choose = Widgets.button("_Choose…")
        let export = Widgets.button("_Export to this file")
        let importing = Widgets.button("_Import from this file")
        let buttons = Widgets.flow()
        Widgets.flowAppend(buttons, choose, export, importing)
        Widgets.append(
            root, Widgets.heading("Import and export"),
            Widgets.label(
                "Browsers, rules and settings as JSON, the form 'brsync export' writes and the phone reads. "
                    + "Launch commands stay on this machine. An import changes nothing unless every record in it is valid.",
                classes: ["dim-label"], wrap: true), file, buttons)
        Signals.on(choose, "clicked") { [unowned self] in chooseFile() }
        Signals.on(export, "clicked") { [unowned self] in exportAsked() }
        Signals.on(importing, "clicked") { [unowned self] in importFile() }
    }

    private var path: String {
        GlobalOptions.absolute(WindowPicker.trimmed(Widgets.text(of: file)))
    }

    private func exportAsked() {
        let path = self.path
        guard FileManager.default.fileExists(atPath: path) else { return export(to: path) }
        Dialogs.confirm(
            parent: context.window, title: "Replace the file?",
            text: "\(DisplayText.printable(path)) exists. Replace it with this machine's browsers, rules and settings?",
            accept: "_Replace", accessibleName: "Replace \(DisplayText.printable(path))"
        ) { [unowned self] in export(to: path) }
    }

    private func export(to path: String) {
        context.attempt {
            let document = try context.replica.export()
            try DurableFile.write(try JSONValue(encoding: document).jsonText + "\n", to: path, mode: 0o644)
            return
                "Exported \(document.browsers.count) browser(s) and \(document.rules.count) rule(s) to \(DisplayText.printable(path))."
        }
    }

    private func importFile() {
        let path = self.path
        context.attempt {
            let data = try FileInput.read(path, what: "the file")
            let summary = try Import.importExport(data, named: path, into: context.replica)
            return
                "Imported \(summary.browsers) browser(s), \(summary.rules) rule(s), \(summary.settings) setting(s) that changed."
        }
        context.reload()
    }

    /// The desktop's file chooser (GtkFileChooserNative: the portal's under
    /// Flatpak and on GNOME); the file chosen goes in the field.
    private func chooseFile() {
        guard
            let dialog = gtk_file_chooser_native_new(
                "Export or import file", context.window.map { brsync_window($0) }, GTK_FILE_CHOOSER_ACTION_SAVE,
                "_Choose", "_Cancel")
        else { return }
        let raw = UnsafeMutableRawPointer(dialog)
        chooser = raw
        gtk_file_chooser_set_current_name(brsync_file_chooser(raw), "brsync-export.json")
        Signals.withInteger(raw, "response") { [unowned self] response in
            if response == GTK_RESPONSE_ACCEPT.rawValue,
                let chosen = gtk_file_chooser_get_file(brsync_file_chooser(raw))
            {
                if let path = g_file_get_path(chosen) {
                    Widgets.setText(ofEntry: file, String(cString: path))
                    g_free(path)
                }
                g_object_unref(UnsafeMutableRawPointer(chosen))
            }
            chooser = nil
        }
        gtk_native_dialog_show(brsync_native_dialog(raw))
    }
}
