import ArgumentParser
import JSON
import Model
import Replica
import SystemServices

/// `brsync cleanup`: how links are cleaned before rules decide (see `LinkCleanup`).
public struct CleanupCommand: ParsableCommand {

    public init() {}
    public static let configuration = CommandConfiguration(
        commandName: "cleanup",
        abstract:
            "Show or change link cleanup: wrapped links are unwrapped and tracking parameters dropped before rules decide.",
        discussion: """
            Offline and the same on every machine: links wrapped by Microsoft Safe Links, Google, Facebook, Instagram,
            Slack, YouTube, LinkedIn, Steam, VK, Reddit and Tumblr are unwrapped (at most \(LinkCleanup.maxDepth) deep),
            then the listed tracking parameters are removed from the URL that opens. The list is a synced setting; a
            rule added with --keep-tracking opens its links with them (some sites need them).
            """,
        subcommands: [Show.self, CleanURL.self, Parameters.self],
        defaultSubcommand: Show.self)

    public struct Show: ParsableCommand {
        public init() {}
        public static let configuration = CommandConfiguration(
            commandName: "show", abstract: "Show the tracking parameters removed.")
        @OptionGroup var global: GlobalOptions
        @Flag(help: "Print JSON.") var json = false

        public func run() throws {
            let replica = try global.openReplica()
            let cleanup = try replica.linkCleanup()
            let isDefault = try replica.setting(Replica.trackingParametersSetting) == nil
            if json {
                Output.json(
                    JSONValue.object([
                        "parameters": .array(cleanup.parameters.map(JSONValue.string)), "default": .bool(isDefault),
                    ]))
                return
            }
            print(
                "tracking parameters removed (\(isDefault ? "the default list" : "synced list"), \(cleanup.parameters.count)):"
            )
            print(
                cleanup.parameters.isEmpty
                    ? "  (none: links keep every parameter)" : "  " + cleanup.parameters.joined(separator: " "))
        }
    }

    public struct CleanURL: ParsableCommand {
        public init() {}
        public static let configuration = CommandConfiguration(
            commandName: "url", abstract: "Print a URL cleaned (what rules decide on).")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The URL.") var url: String

        public func run() throws {
            let url = try NormalizedURL.argument(url)
            let cleanup = (try? global.openReplica().linkCleanup()) ?? LinkCleanup()
            print(cleanup.clean(url).url)
        }
    }

    public struct Parameters: ParsableCommand {
        public init() {}
        public static let configuration = CommandConfiguration(
            commandName: "params",
            abstract:
                "Change the synced list of tracking parameters: --add and --remove names (NAME or PREFIX*), or --reset to the default."
        )
        @OptionGroup var global: GlobalOptions
        @Option(
            name: .customLong("add"),
            help: "A parameter name to remove from links (PREFIX* for every name starting so).") var added: [String] =
                []
        @Option(
            name: .customLong("remove"), help: "A name to take off the list.",
            completion: Completions.trackingParameters) var removed: [String] = []
        @Flag(help: "Go back to the default list.") var reset = false

        public func validate() throws {
            guard reset || !added.isEmpty || !removed.isEmpty else {
                throw ValidationError("say what to change: --add NAME, --remove NAME or --reset")
            }
            guard !reset || (added.isEmpty && removed.isEmpty) else { throw ValidationError("--reset goes alone") }
            for name in added {
                if let problem = LinkCleanup.problem(name: name) { throw ValidationError(problem) }
            }
        }

        public func run() throws {
            let replica = try global.openReplica()
            guard !reset else {
                try replica.setTrackingParameters(nil)
                print("tracking parameters: the default list (\(LinkCleanup.defaultParameters.count) names)")
                return
            }
            let names = try replica.changeTrackingParameters(adding: added, removing: removed)
            print("tracking parameters (\(names.count)): \(names.joined(separator: " "))")
        }
    }
}
