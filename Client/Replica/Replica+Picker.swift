import Model

/// Which browsers the picker offers, in what order (synced browser fields;
/// see ``Browser/pickerOrder``).
extension Replica {
    /// The browsers a picker offers here, in the picker's order: usable and
    /// not hidden, less `excluded` (those that just failed to start). When every
    /// usable browser is hidden, all of them are offered: a link is never lost.
    public func pickerBrowsers(excluding excluded: [String] = []) throws -> [LocalBrowser] {
        let usable = try browsers().filter { $0.isUsable && !excluded.contains($0.browser.id) }
            .sorted { Browser.inPickerOrder($0.browser, $1.browser) }
        let shown = usable.filter { !$0.browser.isHiddenInPicker }
        return shown.isEmpty ? usable : shown
    }

    /// Hides a browser from the picker, or shows it again.
    /// - Returns: the browser's id.
    @discardableResult
    public func setHiddenInPicker(named name: String, _ hidden: Bool) throws -> String {
        let found = try requireBrowser(named: name)
        if found.browser.isHiddenInPicker != hidden {
            try write(.browsers, key: found.browser.id, changes: [Browser.pickerHiddenField: .bool(hidden)])
        }
        return found.browser.id
    }

    /// Puts the browsers named first in the picker, in this order; the others
    /// follow in the order they had. Only places that change are written.
    /// - Returns: every browser's id in the new order.
    @discardableResult
    public func setPickerOrder(_ names: [String]) throws -> [String] {
        try transaction {
            let all = try browsers().sorted { Browser.inPickerOrder($0.browser, $1.browser) }
            var first: [LocalBrowser] = []
            for name in names {
                let found = try requireBrowser(named: name)
                guard !first.contains(where: { $0.browser.id == found.browser.id }) else {
                    throw ReplicaError.invalidInput("'\(found.browser.id)' is named twice")
                }
                first.append(found)
            }
            let order = first + all.filter { browser in !first.contains { $0.browser.id == browser.browser.id } }
            for (index, browser) in order.enumerated() where browser.browser.pickerOrder != index + 1 {
                try write(
                    .browsers, key: browser.browser.id, changes: [Browser.pickerOrderField: .int(Int64(index + 1))])
            }
            return order.map(\.browser.id)
        }
    }

    /// The picker's order after a person moved the browsers it showed
    /// (`shown`, in their new order): each takes a place one of them had, so
    /// browsers it did not show (hidden, not usable here) keep theirs.
    public func pickerOrder(afterMoving shown: [String]) throws -> [String] {
        let all = try browsers().sorted { Browser.inPickerOrder($0.browser, $1.browser) }.map(\.browser.id)
        let moved = Set(shown)
        var replacements = shown.filter { all.contains($0) }.makeIterator()
        return all.map { id in moved.contains(id) ? (replacements.next() ?? id) : id }
    }
}
