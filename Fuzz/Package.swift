// swift-tools-version:6.0
import PackageDescription

// libFuzzer targets for brsync's parsers and its merge. Built and run by
// `scripts/fuzz` (with -sanitize=fuzzer,address and -parse-as-library: libFuzzer
// supplies main); not part of the main build.
let package = Package(
    name: "brsync-fuzz",
    dependencies: [.package(name: "brsync", path: "..")],
    targets: [
        .executableTarget(name: "FuzzHTTPRequestParser", dependencies: [.product(name: "HTTP", package: "brsync")]),
        .executableTarget(name: "FuzzPushDecoder", dependencies: [
            .product(name: "SyncCore", package: "brsync"), .product(name: "Model", package: "brsync"),
        ]),
        .executableTarget(name: "FuzzMerge", dependencies: [
            .product(name: "SyncCore", package: "brsync"), .product(name: "Model", package: "brsync"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
