import ArgumentParser
import BrsyncCommands
import SyncCommands
import SystemServices

/// `brsync doctor`: checks what a click and a sync need, one line each, and
/// says the command that fixes what is wrong. It changes nothing (the
/// server is asked for one page of one record, as `join` asks).
struct DoctorCommand: ParsableCommand {
    static let configuration = DoctorConfiguration.configuration
    @OptionGroup var global: GlobalOptions
    @Flag(help: DoctorConfiguration.jsonHelp) var json = false

    func run() throws {
        let environment = ProcessEnvironment.all()
        let home = global.resolvedHome
        let findings = Doctor.examine(home: home, environment: environment)
        if json {
            Output.json(
                .array(
                    findings.map { finding in
                        .object([
                            "check": .string(finding.check), "state": .string(finding.state.rawValue),
                            "detail": .string(finding.detail),
                            "fix": finding.fix.map { .string($0) } ?? .null,
                        ])
                    }))
        } else {
            for finding in findings {
                print(
                    "\(finding.state == .ok ? "ok     " : finding.state == .note ? "note   " : "PROBLEM") \(finding.check): \(finding.detail)"
                )
                if let fix = finding.fix { print("        fix: \(fix)") }
            }
            let problems = findings.count { $0.state == .problem }
            print(problems == 0 ? "all is well" : "\(problems) problem(s)")
        }
        if findings.contains(where: { $0.state == .problem }) { throw ExitCode(ExitStatus.noMatch) }
    }
}
