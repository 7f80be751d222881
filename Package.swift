// swift-tools-version:6.0
import Foundation
import PackageDescription

/// GTK 4 for the picker: the pkg-config file `scripts/setup` writes (GTK's
/// include folders and libraries only, so SwiftPM has no flags to drop with
/// a warning on every build), else gtk4's own.
let gtkPackage =
    FileManager.default.fileExists(atPath: "/usr/local/lib/pkgconfig/brsync-gtk4.pc") ? "brsync-gtk4" : "gtk4"

// The module graph and where each piece belongs: docs/architecture.md.
// Model and SyncCore are pure (no I/O); C libraries sit behind the C* targets.
let package = Package(
    name: "brsync",
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        .executable(name: "brsync", targets: ["brsync"]),
        .executable(name: "brsync-sync", targets: ["brsync-sync"]),
        .executable(name: "brsync-picker", targets: ["brsync-picker"]),
        .executable(name: "brsync-settings", targets: ["brsync-settings"]),
        .executable(name: "brsyncd", targets: ["brsyncd"]),
        .library(name: "JSON", targets: ["JSON"]),
        .library(name: "Model", targets: ["Model"]),
        // For the fuzz targets in Fuzz/ (a package of their own, built with libFuzzer).
        .library(name: "SyncCore", targets: ["SyncCore"]),
        .library(name: "HTTP", targets: ["HTTP"]),
        .library(name: "ContentCoding", targets: ["ContentCoding"]),
        .library(name: "Desktop", targets: ["Desktop"]),
        .library(name: "SyncClient", targets: ["SyncClient"]),
        .executable(name: "brsync-bench", targets: ["brsync-bench"]),
        .executable(name: "brsyncd-bench", targets: ["brsyncd-bench"]),
    ],
    dependencies: [
        // 1.6: completions told the word typed
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.5.0"),
    ],
    targets: [
        // MARK: C system libraries
        .systemLibrary(
            name: "CSQLite",
            path: "Sources/CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .systemLibrary(
            name: "COpenSSL",
            path: "Sources/COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),

        // libpq, for the PostgreSQL store of brsyncd (a deployment that
        // outgrows one machine); only the server links it.
        .systemLibrary(
            name: "CPostgres",
            path: "Sources/CPostgres",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),

        // libqrencode, for `brsyncd device add --qr` (a join code a phone scans); only brsyncd links it.
        .systemLibrary(
            name: "CQRencode",
            path: "Sources/CQRencode",
            pkgConfig: "libqrencode",
            providers: [.apt(["libqrencode-dev"])]
        ),
        .systemLibrary(
            name: "CDeflate",
            path: "Sources/CDeflate",
            pkgConfig: "libdeflate",
            providers: [.apt(["libdeflate-dev"])]
        ),

        // GTK 4, for the windows only (brsync-picker, brsync-settings); brsync never links it.
        .systemLibrary(
            name: "CGtk",
            path: "Sources/CGtk",
            pkgConfig: gtkPackage,
            providers: [.apt(["libgtk-4-dev"])]
        ),

        // epoll and eventfd (glibc's own headers; nothing to link), for the
        // server's event loop.
        .systemLibrary(name: "CLinux", path: "Sources/CLinux"),

        // MARK: Pure layers
        .target(name: "JSON", path: "Sources/JSON"),
        .target(name: "Model", dependencies: ["JSON"], path: "Sources/Model"),
        .target(name: "SyncCore", dependencies: ["JSON"], path: "Sources/SyncCore"),
        // JSON: the UTC calendar of the Date header
        .target(name: "HTTP", dependencies: ["JSON"], path: "Sources/HTTP"),
        // gzip bodies of readable accounts (libdeflate): the client's transport and the server's API.
        .target(name: "ContentCoding", dependencies: ["CDeflate"], path: "Sources/ContentCoding"),

        // MARK: I/O layers
        .target(name: "SystemServices", dependencies: ["JSON"], path: "Sources/SystemServices"),
        // The exit funnel of the command-line programs: the only library that reads the argument parser's errors.
        .target(
            name: "ProgramExit",
            dependencies: [
                "JSON", "SystemServices", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/ProgramExit"
        ),
        .target(name: "Storage", dependencies: ["CSQLite", "SystemServices"], path: "Sources/Storage"),
        .target(name: "Cryptography", dependencies: ["COpenSSL"], path: "Sources/Cryptography"),
        // A QR code's modules (libqrencode): brsyncd's join codes, the settings window's recovery code.
        .target(name: "QRCode", dependencies: ["CQRencode"], path: "Sources/QRCode"),
        .target(
            name: "Net", dependencies: ["CLinux", "COpenSSL", "Cryptography", "HTTP", "SystemServices"],
            path: "Sources/Net"),
        .target(name: "Postgres", dependencies: ["CPostgres", "SystemServices"], path: "Sources/Postgres"),
        .target(
            name: "Replica",
            dependencies: ["JSON", "Model", "SyncCore", "Storage", "SystemServices"],
            path: "Client/Replica"
        ),
        .target(
            name: "ServerStore",
            dependencies: ["Model", "SyncCore", "Storage", "Postgres", "Net", "Cryptography", "SystemServices"],
            path: "Server/ServerStore"
        ),
        .target(
            name: "BrsyncServer",
            dependencies: [
                "JSON", "Model", "SyncCore", "ServerStore", "HTTP", "Net", "Cryptography", "SystemServices",
                "ContentCoding", .product(name: "Logging", package: "swift-log"),
            ],
            path: "Server/BrsyncServer"
        ),
        .executableTarget(
            name: "brsyncd",
            dependencies: [
                "BrsyncServer", "ServerStore", "Net", "HTTP", "Postgres", "SyncCore", "QRCode", "SystemServices",
                "ProgramExit",
                "JSON",
                "Model",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Server/brsyncd"
        ),
        .target(
            name: "SyncClient",
            dependencies: [
                "JSON", "Replica", "SyncCore", "Model", "Net", "Cryptography", "HTTP", "SystemServices",
                "ContentCoding",
            ],
            path: "Client/SyncClient"
        ),
        .target(name: "Desktop", dependencies: ["JSON", "Model", "SystemServices"], path: "Client/Desktop"),
        .target(
            name: "BrsyncCommands",
            dependencies: [
                "JSON", "Model", "Replica", "SyncCore", "Desktop", "SystemServices",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Client/BrsyncCommands"
        ),
        // `brsync` links no TLS (a link resolves without loading OpenSSL);
        // `brsync push|pull|sync` hand over to `brsync-sync`, which does.
        .executableTarget(
            name: "brsync",
            dependencies: [
                "BrsyncCommands", "SystemServices", "ProgramExit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Client/brsync"
        ),
        // The picker window (GTK 4), started by brsync only when a picker is
        // needed and a display is there.
        .executableTarget(
            name: "brsync-picker",
            dependencies: ["CGtk", "Desktop", "JSON", "Model", "SystemServices"],
            path: "Client/brsync-picker"
        ),
        // The settings window (GTK 4), started by `brsync settings` or the
        // application menu: the commands' library calls behind a window.
        .executableTarget(
            name: "brsync-settings",
            dependencies: [
                "BrsyncCommands", "CGtk", "Desktop", "JSON", "Model", "QRCode", "Replica", "SyncClient", "SyncCommands",
                "SyncCore", "SystemServices",
            ],
            path: "Client/brsync-settings"
        ),
        // The logic of brsync-sync's commands as library calls: the command
        // parses and prints, and a window can call the same functions.
        .target(
            name: "SyncCommands",
            dependencies: [
                "BrsyncCommands", "CLinux", "Cryptography", "Desktop", "JSON", "Model", "Net", "SystemServices",
                "Replica", "SyncClient", "SyncCore",
            ],
            path: "Client/SyncCommands"
        ),
        .executableTarget(
            name: "brsync-sync",
            dependencies: [
                "BrsyncCommands", "SyncClient", "SyncCommands", "Replica", "SyncCore", "SystemServices", "ProgramExit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Client/brsync-sync"
        ),

        // MARK: Benchmarks (run by Benchmarks/*.sh in release; not tests)
        .executableTarget(
            name: "brsync-bench",
            dependencies: ["Desktop", "Model", "Replica", "SystemServices"],
            path: "Benchmarks/SelectorBenchmark"
        ),

        .executableTarget(
            name: "brsyncd-bench",
            dependencies: [
                "JSON", "BrsyncServer", "ServerStore", "Net", "HTTP", "SyncCore", "Model", "SystemServices",
            ],
            path: "Benchmarks/ServerBenchmark"
        ),

        // MARK: Tests
        .target(
            name: "TestSupport",
            dependencies: [
                "Net", "BrsyncServer", "ServerStore", "Postgres", "Replica", "SyncClient", "SystemServices",
                "Cryptography", "SyncCore", "JSON", .product(name: "Logging", package: "swift-log"),
            ], path: "Tests/TestSupport"),
        .testTarget(name: "JSONTests", dependencies: ["JSON", "TestSupport"]),
        .testTarget(name: "ModelTests", dependencies: ["Model", "JSON", "TestSupport"]),
        .testTarget(name: "SyncCoreTests", dependencies: ["JSON", "SyncCore", "Model", "TestSupport"]),
        .testTarget(name: "HTTPTests", dependencies: ["HTTP", "ContentCoding"]),
        .testTarget(name: "DesktopTests", dependencies: ["Desktop", "Model", "JSON", "TestSupport"]),
        .testTarget(name: "CryptographyTests", dependencies: ["Cryptography"]),
        .testTarget(name: "SystemServicesTests", dependencies: ["SystemServices", "TestSupport"]),
        .testTarget(name: "NetTests", dependencies: ["Net", "HTTP", "TestSupport"]),
        .testTarget(name: "PostgresTests", dependencies: ["Postgres", "TestSupport"]),
        .testTarget(
            name: "SyncEndToEndTests",
            dependencies: [
                "JSON", "SyncClient", "Replica", "BrsyncServer", "ServerStore", "Net", "Cryptography", "HTTP",
                "SyncCore",
                "Model",
                "Storage", "Postgres", "SystemServices", "TestSupport", "ContentCoding",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "ServerTests",
            dependencies: [
                "JSON", "BrsyncServer", "ServerStore", "brsyncd", "Net", "HTTP", "SyncCore", "Model", "Storage",
                "Postgres",
                "Cryptography", "SystemServices", "TestSupport", "ContentCoding",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "SyncClientTests",
            dependencies: ["SyncClient", "Replica", "SyncCore", "Net", "HTTP", "JSON", "SystemServices", "TestSupport"]),
        .testTarget(name: "StorageTests", dependencies: ["Storage", "CSQLite", "TestSupport"]),
        .testTarget(
            name: "ReplicaTests",
            dependencies: ["JSON", "Replica", "Storage", "Model", "SyncCore", "SystemServices", "TestSupport"]),
        .testTarget(
            name: "CLITests",
            dependencies: [
                "JSON", "brsync", "brsync-sync", "brsync-picker", "brsync-settings", "brsyncd", "BrsyncServer",
                "ServerStore",
                "SyncClient", "SyncCommands", "SyncCore", "Replica",
                "Desktop", "Model", "Storage", "Net", "HTTP", "TestSupport",
            ]),
    ],
    swiftLanguageModes: [.v6]
)
