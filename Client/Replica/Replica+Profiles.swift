import JSON
import Model

/// Profiles whose synced arguments this machine runs. Synced data alone
/// passes only what ``ProfileArguments`` lists for the base browser's
/// family; anything else runs only once this machine's user approved the
/// exact base and arguments (`brsync browsers approve`), and a profile made
/// here is approved here as it is made. An approval is device-local and
/// never syncs; a later change of the synced record needs approving again.
extension Replica {
    /// The ids of profiles whose current base and arguments this machine's user approved.
    func approvedProfiles() throws -> Set<String> {
        try read {
            Set(
                try database.query(
                    """
                    SELECT a.id FROM profile_approvals a JOIN records r ON r.collection = 'browsers' AND r.key = a.id
                    WHERE json_valid(r.fields) AND a.base = json_extract(r.fields, '$.profileOf.v')
                      AND a.arguments = json_extract(r.fields, '$.profileArgs.v')
                    """
                ) { $0.string(0) ?? "" })
        }
    }

    /// Approves profile `id`'s current base and arguments on this machine.
    /// - Throws: ``ReplicaError/notFound(_:)`` when no such profile exists.
    public func approveProfile(_ id: String) throws {
        try transaction {
            guard let state = try record(.browsers, key: id), !state.isDeleted,
                BrowserProfile(fields: state.values) != nil
            else {
                throw ReplicaError.notFound(
                    "no profile '\(id)' (a browser made with 'brsync browsers add NAME --from BROWSER --args …')")
            }
            try recordApproval(id)
        }
    }

    /// Withdraws this machine's approval of profile `id`; false when there was none.
    @discardableResult
    public func withdrawApproval(_ id: String) throws -> Bool {
        try transaction {
            let had = try database.scalar("SELECT 1 FROM profile_approvals WHERE id = ?", [.text(id)]) != nil
            try database.run("DELETE FROM profile_approvals WHERE id = ?", [.text(id)])
            return had
        }
    }

    /// Records the approval of profile `id` as its record holds it now (inside a transaction).
    func recordApproval(_ id: String) throws {
        try database.run(
            """
            INSERT OR REPLACE INTO profile_approvals (id, base, arguments)
            SELECT key, json_extract(fields, '$.profileOf.v'), json_extract(fields, '$.profileArgs.v') FROM records
            WHERE collection = 'browsers' AND key = ? AND json_valid(fields)
              AND json_type(fields, '$.profileOf.v') = 'text' AND json_type(fields, '$.profileArgs.v') = 'array'
            """, [.text(id)])
    }

    /// Why the profile `browser` is does not run here on its synced
    /// arguments (they are not on its family's list and this machine's user
    /// did not approve them), or nil. `approved` is ``approvedProfiles()``,
    /// read only when needed.
    static func approvalProblem(_ browser: Browser, approved: () throws -> Set<String>) rethrows -> String? {
        guard let profile = browser.profile,
            let problem = ProfileArguments.problem(profile.arguments, base: profile.base)
        else { return nil }
        return try approved().contains(browser.id) ? nil : problem
    }
}
