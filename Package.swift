// swift-tools-version:6.0
import PackageDescription

// Swift 6 language mode (strict concurrency) for every target; warnings are
// treated as errors by `make build` so none slip in.
let package = Package(
    name: "Cumulus",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "cumulus", targets: ["cumulus"]),
        .library(name: "CumulusModel", targets: ["CumulusModel"]),
        .library(name: "CumulusStorage", targets: ["CumulusStorage"]),
        .library(name: "CumulusLog", targets: ["CumulusLog"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.0.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.0.0"),
        // Already in the graph through Hummingbird; named for the server's own channel handlers.
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.81.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.34.1"),
        // Already in the graph through AsyncHTTPClient; named for etcd's TLS settings.
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        // Allocation counts of the read paths (`cumulus-allocations`, run by `make bench`).
        .package(url: "https://github.com/ordo-one/malloc-interposer", from: "1.6.1"),
    ],
    targets: [
        // System libraries: Debian's liblmdb-dev and libzstd-dev (`make deps`).
        .systemLibrary(
            name: "CLMDB",
            path: "Sources/CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"])]
        ),
        .systemLibrary(
            name: "CZstd",
            path: "Sources/CZstd",
            pkgConfig: "libzstd",
            providers: [.apt(["libzstd-dev"])]
        ),

        // Debian's libsqlite3-dev: only the benchmarks' baseline uses it.
        .systemLibrary(
            name: "CSQLite",
            path: "Sources/CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),

        // Pure model: records, IDs, values, validation, encoding. No I/O.
        .target(name: "CumulusModel"),
        // CRC-32C with the CPU's instruction (SSE4.2, ARMv8 CRC), chosen at run time.
        .target(name: "CCRC32C", path: "Sources/CCRC32C"),

        // LMDB and zstd wrappers. Nothing CloudKit-specific.
        .target(name: "CumulusStorage", dependencies: ["CLMDB", "CZstd"]),

        // Events, commits, frames, the hash-chained log store and its writer.
        .target(
            name: "CumulusLog",
            dependencies: [
                "CCRC32C",
                "CumulusModel",
                "CumulusStorage",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),

        // The projections of the log: records, references, types, zones; rebuild and verify.
        .target(
            name: "CumulusViews",
            dependencies: [
                "CumulusModel",
                "CumulusStorage",
                "CumulusLog",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),

        // The write path (validate → plan → events), reads, zones, access rules.
        .target(
            name: "CumulusEngine",
            dependencies: [
                "CumulusModel", "CumulusStorage", "CumulusLog", "CumulusViews",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),

        // Leader streams, follower apply loop, snapshot seeding, lag (SPEC §11).
        .target(
            name: "CumulusReplication",
            dependencies: [
                "CumulusModel", "CumulusStorage", "CumulusLog", "CumulusViews", "CumulusEngine",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),

        // The CloudKit Web Services–compatible HTTP API: JSON mapping, authentication,
        // routes. `CloudKitAPI` is plain request → response logic; Hummingbird only carries it.
        .target(
            name: "CumulusServer",
            dependencies: [
                "CumulusModel", "CumulusStorage", "CumulusLog", "CumulusEngine", "CumulusReplication",
                // The console's log pages show commits as `cumulus log` and audit exports do.
                "CumulusTools",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Crypto", package: "swift-crypto"),
                // scrypt, for the passwords of browser sign-in.
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                // TLS on the API port (serve --tls-cert, --tls-key).
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            // The web console's page, script and styles, compiled into the binary
            // (`PackageResources`), so nothing has to sit beside it.
            resources: [
                .embedInCode("Console/Resources/console.html"),
                .embedInCode("Console/Resources/console.js"),
                .embedInCode("Console/Resources/support.js"),
                .embedInCode("Console/Resources/records.js"),
                .embedInCode("Console/Resources/schema.js"),
                .embedInCode("Console/Resources/tokens.js"),
                .embedInCode("Console/Resources/jobs.js"),
                .embedInCode("Console/Resources/charts.js"),
                .embedInCode("Console/Resources/console.css"),
            ]
        ),

        // The operator tools: log browsing, record history, time travel, diff, bisect, audit.
        .target(
            name: "CumulusTools",
            dependencies: ["CumulusModel", "CumulusStorage", "CumulusLog", "CumulusViews", "CumulusEngine"]
        ),

        .executableTarget(
            name: "cumulus",
            dependencies: [
                "CumulusTools",
                "CumulusServer",
                "CumulusReplication",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                "CumulusModel",
                "CumulusStorage",
                "CumulusLog",
                "CumulusViews",
                "CumulusEngine",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),

        // Tools: fault injection and benchmarks (not shipped).
        .executableTarget(
            name: "cumulus-crash",
            dependencies: ["CumulusEngine", "CumulusLog", "CumulusModel", "CumulusStorage", "CumulusTestSupport", "CumulusViews"],
            path: "Tools/CrashHarness"
        ),
        .executableTarget(
            name: "cumulus-bench",
            dependencies: [
                "CumulusTools", "CumulusViews",
                "CumulusLog", "CumulusModel", "CumulusStorage", "CumulusEngine", "CumulusTestSupport", "CLMDB", "CZstd",
                "CSQLite", "CumulusServer", "CumulusReplication",
                // The replication suite's failover figure talks to node processes over HTTP.
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            path: "Tools/Bench"
        ),
        // Its own executable: the interposer it links replaces malloc in its process.
        .executableTarget(
            name: "cumulus-allocations",
            dependencies: [
                "CumulusEngine", "CumulusModel", "CumulusTestSupport",
                .product(name: "MallocInterposerSwift", package: "malloc-interposer"),
            ],
            path: "Tools/Allocations"
        ),

        // Fuzzing: every decoder of outside bytes as a target (`make fuzz`; the kept
        // corpus also runs in `make test`).
        .target(
            name: "CumulusFuzzTargets",
            dependencies: ["CumulusServer", "CumulusReplication", "CumulusEngine", "CumulusLog", "CumulusModel", "CumulusStorage"],
            path: "Tools/Fuzz/Targets"
        ),
        .executableTarget(name: "cumulus-fuzz", dependencies: ["CumulusFuzzTargets"], path: "Tools/Fuzz/Driver"),

        // Seeded random records, temporary directories, a container world and other
        // helpers shared by the test targets.
        .target(
            name: "CumulusTestSupport",
            dependencies: ["CumulusEngine", "CumulusViews", "CumulusLog", "CumulusModel", "CumulusStorage"],
            path: "Tests/CumulusTestSupport"
        ),
        .testTarget(name: "CumulusModelTests", dependencies: ["CumulusModel", "CumulusTestSupport"]),
        .testTarget(name: "CumulusStorageTests", dependencies: ["CumulusStorage", "CLMDB", "CumulusTestSupport"]),
        .testTarget(
            name: "CumulusViewsTests",
            dependencies: [
                "CumulusViews", "CumulusLog", "CumulusStorage", "CumulusModel", "CumulusTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "CumulusToolsTests",
            dependencies: ["CumulusTools", "CumulusEngine", "CumulusViews", "CumulusLog", "CumulusModel", "CumulusStorage", "CumulusTestSupport"]
        ),
        .testTarget(
            name: "CumulusLogTests",
            dependencies: ["CumulusLog", "CumulusModel", "CumulusStorage", "CumulusTestSupport"]
        ),
        .testTarget(
            name: "CumulusEngineTests",
            dependencies: ["CumulusEngine", "CumulusViews", "CumulusLog", "CumulusModel", "CumulusStorage", "CumulusTestSupport"]
        ),
        .testTarget(
            name: "CumulusReplicationTests",
            dependencies: [
                "CumulusReplication", "CumulusServer", "CumulusEngine", "CumulusViews", "CumulusLog", "CumulusModel",
                "CumulusStorage", "CumulusTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ]
        ),
        // The `cumulus` commands run as an operator runs them: the built executable, in a
        // child process. It is not a dependency (a test target linking an executable
        // gets its module, not the program): `swift build --build-tests` and `swift test`
        // build every product, so the executable lies beside the test binary.
        .testTarget(
            name: "CumulusCLITests",
            dependencies: ["CumulusEngine", "CumulusViews", "CumulusLog", "CumulusModel", "CumulusTestSupport"]
        ),
        .testTarget(name: "CumulusFuzzTargetsTests", dependencies: ["CumulusFuzzTargets"]),
        .testTarget(
            name: "CumulusServerTests",
            dependencies: [
                "CumulusServer", "CumulusEngine", "CumulusLog", "CumulusModel", "CumulusTestSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                // A client that checks the server's certificate (the TLS test).
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
