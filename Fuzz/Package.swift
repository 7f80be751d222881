// swift-tools-version:6.0
import PackageDescription

// libFuzzer targets for brsync's parsers and its merge. Built and run by
// `scripts/fuzz` (with -sanitize=fuzzer,address and -parse-as-library: libFuzzer
// supplies main); not part of the main build.

/// A fuzz target: its folder under Sources/, FuzzSupport and the brsync
/// products it reads with.
func fuzzer(_ name: String, _ products: [String]) -> Target {
    .executableTarget(
        name: name, dependencies: ["FuzzSupport"] + products.map { .product(name: $0, package: "brsync") })
}

let package = Package(
    name: "brsync-fuzz",
    dependencies: [.package(name: "brsync", path: "..")],
    targets: [
        .target(name: "FuzzSupport"),
        fuzzer("FuzzHTTPRequestParser", ["HTTP", "SyncCore"]),
        fuzzer("FuzzPushDecoder", ["JSON", "SyncCore", "Model"]),
        fuzzer("FuzzURLAndPattern", ["Model"]),
        fuzzer("FuzzPickerProtocol", ["Desktop"]),
        fuzzer("FuzzXReplies", ["Desktop"]),
        fuzzer("FuzzRecordCipher", ["SyncClient", "SyncCore", "Model"]),
        fuzzer("FuzzJoinCode", ["SyncClient", "SyncCore", "Model"]),
        fuzzer("FuzzMerge", ["JSON", "SyncCore", "Model"]),
        fuzzer("FuzzLedger", ["SyncCore"]),
        fuzzer("FuzzGzip", ["ContentCoding"]),
    ],
    swiftLanguageModes: [.v6]
)
