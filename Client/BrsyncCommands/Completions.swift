import ArgumentParser
import Model
import Replica
import SystemServices

/// Shell completions that read the replica: browser ids, rule patterns,
/// conflict numbers, tracking parameters. The shell runs
/// `brsync ---completion …` with the words typed so far; the replica is the
/// one `--home` among them names, else the usual one. Any failure (no
/// replica, a lock) completes nothing rather than printing an error into the
/// command line.
enum Completions {
    static let browserIDs = CompletionKind.custom { words, _, prefix in
        matching(prefix, (try? replica(words)?.browsers().map(\.browser.id)) ?? [])
    }

    /// For `browsers add`: the browsers here, then the catalog's.
    static let browserOrCatalogIDs = CompletionKind.custom { words, _, prefix in
        let here = (try? replica(words)?.browsers().map(\.browser.id)) ?? []
        return matching(prefix, here + BrowserCatalog.entries.map(\.id).filter { !here.contains($0) })
    }

    static let rulePatterns = CompletionKind.custom { words, _, prefix in
        matching(prefix, (try? replica(words)?.rules().map(\.pattern)) ?? [])
    }

    static let conflictIDs = CompletionKind.custom { words, _, prefix in
        let open = (try? replica(words)?.conflicts(limit: 200).filter { $0.restoredAtMillis == nil }) ?? []
        return matching(prefix, open.map { String($0.id) })
    }

    static let trackingParameters = CompletionKind.custom { words, _, prefix in
        matching(prefix, (try? replica(words)?.linkCleanup().parameters) ?? [])
    }

    /// The candidates that start with what was typed, each once, in order.
    static func matching(_ prefix: String, _ candidates: [String]) -> [String] {
        var seen: Set<String> = []
        return candidates.filter { $0.hasPrefix(prefix) && seen.insert($0).inserted }
    }

    /// The replica the typed command line would use, or nil.
    static func replica(_ words: [String]) throws -> Replica? {
        var flag: String?
        for (index, word) in words.enumerated() {
            if word == "--home", index + 1 < words.count { flag = words[index + 1] }
            if word.hasPrefix("--home=") { flag = String(word.dropFirst("--home=".count)) }
        }
        if let typed = flag, typed.hasPrefix("~/"), let user = ProcessEnvironment.value("HOME") {
            flag = user + typed.dropFirst(1)
        }
        return try Replica.open(home: GlobalOptions.home(flag: flag), busyTimeout: 200)
    }
}

/// What brsync adds to the bash completion script swift-argument-parser
/// writes: that script finds the command in the second word, so a `--home`
/// typed first (`brsync --home DIR rules rm <Tab>`, which brsync itself
/// takes) would leave it completing command names.
public enum BashCompletion {
    /// Moves a leading `--home DIR` to just before the word being completed,
    /// where the completions read it, and completes as usual.
    public static let homeFirst = #"""

        # brsync: a --home typed before the command (brsync --home DIR rules rm <Tab>)
        # moves to just before the word being completed, where the completions read it.
        _brsync_home_first() {
            if [[ ${COMP_WORDS[1]} == --home && ${COMP_CWORD} -gt 2 && ${COMP_POINT} -eq ${#COMP_LINE} ]]; then
                local home=${COMP_WORDS[2]}
                COMP_WORDS=("${COMP_WORDS[0]}" "${COMP_WORDS[@]:3:COMP_CWORD-3}" --home "${home}" "${COMP_WORDS[@]:COMP_CWORD}")
                COMP_LINE="${COMP_WORDS[*]}"
                COMP_POINT=${#COMP_LINE}
            fi
            _brsync "$@"
        }
        complete -o filenames -F _brsync_home_first brsync
        """#
}
