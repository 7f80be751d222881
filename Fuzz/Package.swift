// swift-tools-version:6.0
import PackageDescription

// libFuzzer targets for brsync's parsers and its merge. Built and run by
// `scripts/fuzz` (with -sanitize=fuzzer,address and -parse-as-library: libFuzzer
// supplies main); not part of the main build.
let package = Package(
    name: "brsync-fuzz",
    dependencies: [.package(name: "brsync", path: "..")],
    targets: [
        .target(name: "FuzzSupport"),
        .executableTarget(
            name: "FuzzHTTPRequestParser",
            dependencies: [
                "FuzzSupport", .product(name: "HTTP", package: "brsync"), .product(name: "SyncCore", package: "brsync"),
            ]),
        .executableTarget(
            name: "FuzzPushDecoder",
            dependencies: [
                "FuzzSupport", .product(name: "JSON", package: "brsync"), .product(name: "SyncCore", package: "brsync"),
                .product(name: "Model", package: "brsync"),
            ]),
        .executableTarget(
            name: "FuzzURLAndPattern", dependencies: ["FuzzSupport", .product(name: "Model", package: "brsync")]),
        .executableTarget(
            name: "FuzzPickerProtocol", dependencies: ["FuzzSupport", .product(name: "Desktop", package: "brsync")]),
        .executableTarget(
            name: "FuzzXReplies", dependencies: ["FuzzSupport", .product(name: "Desktop", package: "brsync")]),
        .executableTarget(
            name: "FuzzRecordCipher",
            dependencies: [
                "FuzzSupport", .product(name: "SyncClient", package: "brsync"),
                .product(name: "SyncCore", package: "brsync"),
                .product(name: "Model", package: "brsync"),
            ]),
        .executableTarget(
            name: "FuzzJoinCode",
            dependencies: [
                "FuzzSupport", .product(name: "SyncClient", package: "brsync"),
                .product(name: "SyncCore", package: "brsync"),
                .product(name: "Model", package: "brsync"),
            ]),
        .executableTarget(
            name: "FuzzMerge",
            dependencies: [
                "FuzzSupport", .product(name: "JSON", package: "brsync"), .product(name: "SyncCore", package: "brsync"),
                .product(name: "Model", package: "brsync"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
