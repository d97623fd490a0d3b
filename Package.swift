// swift-tools-version:6.1
import PackageDescription

// One settings array for every Swift target (hummingbird-style).
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

// The release build (`make release`, `make bench`: `swift build -c release --static-swift-stdlib`)
// is linked for a small process image. `evidence hash` and `ingest` of a 4 GiB file peak at the
// image's size: streaming itself costs about 2 MB. Peak RSS of `evidence hash` of a one-line
// file, MB, each step added to the ones above it (CEvidenceLazy's lazy libraries included):
//   shared Swift runtime and Foundation, every symbol exported (SwiftPM's default)    36.7
//   the Swift runtime and Foundation linked statically (--static-swift-stdlib)         34.2
//   no exported symbols (SwiftPM links executables with -export-dynamic)               30.2
//   lld with packed relative relocations (DT_RELR; glibc >= 2.36)                      27.5
//   libcurl, libpq, cairo loaded on first use (CEvidenceLazy), not at start            23.5
//   hash's and ingest's functions placed together (scripts/link-order.txt)             18.9
// `evidence ingest` of a 4 GiB file: 47.4 MB before all this, 23.5 MB after it, once the catalog
// also stopped writing its dates with GRDB's DateFormatter (StoredDate: 2 MB of ICU data).
// Static linking maps only the runtime code that is used instead of relocating each shared
// library whole; without exported symbols the loader resolves nothing in our binary by name.
// The kernel maps code 64 KB around each first touch, so the ~5,000 functions hash and ingest
// run cost 16 MB spread over 27 MB of code and 9 MB together (scripts/link-order.sh makes the
// list). The list needs each function in a section of its own (the Makefile's RELEASEFLAGS:
// `-function-sections`; without it only inlined copies had one, and the list moved whole files);
// it also holds, after hash's and ingest's, the functions `run` uses for the whole pipeline:
// with both, `ingest` of 4 GiB peaks at 25.5 MB (28.4 before), `run` over 1,000 files at 74 MB
// (with one malloc arena per core, EvidenceProcess/MallocArenas.swift; 94 MB before). The
// binary stays position-independent (ASLR: it reads hostile media). Debug builds (tests,
// `make demo`) link the default way.
let releaseLinkerSettings: [LinkerSetting] = [
    .unsafeFlags(["-use-ld=lld",
                  "-Xlinker", "--no-export-dynamic", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
                  "-Xlinker", "--symbol-ordering-file=\(Context.packageDirectory)/scripts/link-order.txt",
                  "-Xlinker", "--no-warn-symbol-ordering"],
                 .when(configuration: .release)),
]

let package = Package(
    name: "evidence",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "evidence", targets: ["evidence"]),
        .executable(name: "evidence-sandbox", targets: ["evidence-sandbox"]),
        // For Fuzz/Package.swift (libFuzzer builds, `make fuzz`); not an API for anyone else.
        .library(name: "EvidenceFuzzing", targets: ["EvidenceFuzzing"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/weichsel/ZIPFoundation", from: "0.9.20"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        // MARK: C libraries (only the owning module imports each)
        .systemLibrary(name: "COpenSSL", path: "Sources/C/COpenSSL", pkgConfig: "libcrypto",
                       providers: [.apt(["libssl-dev"])]),
        // CCurl, CCairo and CLibPQ: headers only, no pkgConfig. The libraries are loaded on first
        // use by CEvidenceLazy's stubs, so they and their ~50 dependencies stay out of processes
        // that do not need them (`evidence hash`, `ingest`, a single host's catalog).
        .systemLibrary(name: "CCurl", path: "Sources/C/CCurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // No pkgConfig: its `-lavformat` would link libavformat and its ~130 dependencies into
        // every process; the probe loads them with dlopen instead (Sources/C/CAVFormat/shim.h).
        .systemLibrary(name: "CAVFormat", path: "Sources/C/CAVFormat", providers: [.apt(["libavformat-dev"])]),
        .systemLibrary(name: "CCairo", path: "Sources/C/CCairo", providers: [.apt(["libcairo2-dev"])]),
        // PostgreSQL's own client library, for a catalog shared by several nodes.
        .systemLibrary(name: "CLibPQ", path: "Sources/C/CLibPQ", providers: [.apt(["libpq-dev"])]),
        .target(name: "CEvidenceLazy", path: "Sources/C/CEvidenceLazy"),

        // MARK: Modules
        .target(name: "EvidenceCore", swiftSettings: swiftSettings),
        // The one way to run blocking work from async code: a pool of dedicated threads.
        .target(name: "EvidenceBlocking", swiftSettings: swiftSettings),
        // The one place processes are started (posix_spawn): never Foundation's Process.
        .systemLibrary(name: "CEvidenceSys", path: "Sources/C/CEvidenceSys"),
        .target(name: "EvidenceProcess", dependencies: ["CEvidenceSys"], swiftSettings: swiftSettings),
        .target(name: "EvidenceStore",
                dependencies: ["EvidenceCore", "COpenSSL", "CEvidenceSys"],
                swiftSettings: swiftSettings),
        // The content-addressed store in an S3-compatible bucket (libcurl's SigV4), for several nodes.
        .target(name: "EvidenceS3",
                dependencies: ["EvidenceCore", "EvidenceStore", "EvidenceHTTP", "CCurl", "CEvidenceLazy"],
                swiftSettings: swiftSettings),
        .target(name: "EvidenceCatalog",
                dependencies: ["EvidenceBlocking", "EvidenceCore", "EvidenceStore", "CLibPQ", "CEvidenceLazy", .product(name: "GRDB", package: "GRDB.swift")],
                swiftSettings: swiftSettings),
        // Config validation asks the provider registry (EvidenceArchive) which keys each kind takes.
        .target(name: "EvidenceConfig",
                dependencies: ["EvidenceCore", "EvidenceArchive", .product(name: "TOMLKit", package: "TOMLKit")],
                swiftSettings: swiftSettings),
        .target(name: "EvidenceWatch",
                dependencies: ["EvidenceCore", .product(name: "Logging", package: "swift-log")],
                swiftSettings: swiftSettings),
        .target(name: "EvidenceMedia",
                dependencies: ["EvidenceCore", "CAVFormat"],
                swiftSettings: swiftSettings),
        .target(name: "EvidenceHTTP",
                dependencies: ["EvidenceCore", "CCurl", "CEvidenceLazy", "COpenSSL", .product(name: "Logging", package: "swift-log")],
                swiftSettings: swiftSettings),
        .target(name: "EvidenceNotary",
                dependencies: ["EvidenceCore", "EvidenceHTTP", "COpenSSL", .product(name: "Logging", package: "swift-log"),
                               .product(name: "SwiftASN1", package: "swift-asn1")],
                swiftSettings: swiftSettings),
        .target(name: "EvidenceArchive",
                dependencies: ["EvidenceCore", "EvidenceHTTP", "EvidenceStore"],
                swiftSettings: swiftSettings),
        .target(name: "EvidenceCertificate",
                dependencies: ["EvidenceCore", "CCairo", "CEvidenceLazy"],
                swiftSettings: swiftSettings),
        // The emulations of QED, the TSA and the four providers, with fault injection and
        // counters: served by `evidence-sandbox` for the demo and tests, never used by `evidence`.
        .target(name: "EvidenceSandbox",
                dependencies: ["EvidenceCore", "EvidenceStore", "EvidenceProcess",
                               .product(name: "Hummingbird", package: "hummingbird"),
                               .product(name: "Logging", package: "swift-log")],
                path: "Support/EvidenceSandbox", swiftSettings: swiftSettings),
        // Test helpers only: the sandbox as a process, a real WebDAV server, temp folders, waiting.
        .target(name: "EvidenceTesting",
                dependencies: ["EvidenceBlocking", "EvidenceProcess"],
                path: "Support/EvidenceTesting", swiftSettings: swiftSettings),
        .executableTarget(name: "evidence-sandbox",
                          dependencies: ["EvidenceSandbox", "EvidenceCore",
                                         .product(name: "ArgumentParser", package: "swift-argument-parser"),
                                         .product(name: "Hummingbird", package: "hummingbird"),
                                         .product(name: "Logging", package: "swift-log")],
                          path: "Support/evidence-sandbox", swiftSettings: swiftSettings),
        .target(name: "EvidencePipeline",
                dependencies: [
                    "EvidenceBlocking", "EvidenceCore", "EvidenceStore", "EvidenceS3", "EvidenceCatalog", "EvidenceMedia",
                    "EvidenceConfig", "EvidenceWatch", "EvidenceHTTP", "EvidenceNotary", "EvidenceCertificate", "EvidenceArchive",
                    "EvidenceProcess",
                    .product(name: "Logging", package: "swift-log"),
                    .product(name: "CoreMetrics", package: "swift-metrics"),
                    .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                ],
                swiftSettings: swiftSettings),
        // `/metrics`, `/healthz`, `/readyz` for `evidence run`: Prometheus registry + a small Hummingbird server.
        .target(name: "EvidenceMetrics",
                dependencies: [
                    "EvidenceCore", "EvidenceCatalog", "EvidenceStore", "EvidencePipeline",
                    .product(name: "CoreMetrics", package: "swift-metrics"),
                    .product(name: "Prometheus", package: "swift-prometheus"),
                    .product(name: "Hummingbird", package: "hummingbird"),
                    .product(name: "Logging", package: "swift-log"),
                    .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                ],
                swiftSettings: swiftSettings),
        .target(name: "EvidencePortal",
                dependencies: [
                    "EvidenceCore", "EvidenceStore", "EvidenceCatalog", "EvidenceConfig", "EvidencePipeline",
                    .product(name: "Hummingbird", package: "hummingbird"),
                    .product(name: "Logging", package: "swift-log"),
                    .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                    .product(name: "ZIPFoundation", package: "ZIPFoundation"),
                ],
                swiftSettings: swiftSettings),
        // The parsers we own as fuzz targets with their contracts: replayed by EvidenceFuzzingTests,
        // driven by libFuzzer in Fuzz/ (`make fuzz`).
        .target(name: "EvidenceFuzzing",
                dependencies: ["EvidenceCore", "EvidenceStore", "EvidenceConfig", "EvidenceNotary", "EvidenceArchive", "EvidencePipeline", "EvidenceSandbox"],
                path: "Support/EvidenceFuzzing", swiftSettings: swiftSettings),
        // The commands of `evidence`, as a library so the CLI tests can run most of them in-process
        // (`Evidence.execute`, output captured per task); the executable is only `main.swift`.
        .target(name: "EvidenceCLI",
                dependencies: [
                    "EvidenceCore", "EvidenceProcess", "EvidenceStore", "EvidenceS3", "EvidenceCatalog", "EvidenceMedia", "EvidencePipeline", "EvidencePortal", "EvidenceMetrics",
                    "EvidenceConfig", "EvidenceWatch", "EvidenceNotary", "EvidenceCertificate",
                    .product(name: "ArgumentParser", package: "swift-argument-parser"),
                    .product(name: "Logging", package: "swift-log"),
                    .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                    .product(name: "ZIPFoundation", package: "ZIPFoundation"),
                ],
                swiftSettings: swiftSettings),
        .executableTarget(name: "evidence",
                          dependencies: ["EvidenceCLI"],
                          swiftSettings: swiftSettings,
                          linkerSettings: releaseLinkerSettings),
        // The load generators `make bench` times (scripts/bench.sh); not a product.
        .executableTarget(name: "evidence-bench", dependencies: ["EvidenceCore", "EvidenceCatalog"], path: "Support/evidence-bench", swiftSettings: swiftSettings),

        // MARK: Tests
        .testTarget(name: "EvidenceStoreTests", dependencies: ["EvidenceTesting", "EvidenceProcess", "EvidenceStore", "EvidenceCore"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "EvidenceS3Tests", dependencies: ["EvidenceTesting", "EvidenceProcess", "EvidenceS3", "EvidenceHTTP", "EvidenceStore", "EvidenceCore"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "EvidenceCatalogTests", dependencies: ["EvidenceTesting", "EvidenceCatalog", "EvidenceCore", "EvidenceStore", .product(name: "GRDB", package: "GRDB.swift")],
                    swiftSettings: swiftSettings),
        .testTarget(name: "EvidenceMediaTests", dependencies: ["EvidenceTesting", "EvidenceProcess", "EvidenceMedia", "EvidenceCore"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "EvidenceConfigTests", dependencies: ["EvidenceTesting", "EvidenceConfig", "EvidenceCore"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "EvidenceWatchTests", dependencies: ["EvidenceTesting", "EvidenceProcess", "EvidenceWatch", "EvidenceCore", .product(name: "Logging", package: "swift-log")],
                    swiftSettings: swiftSettings),
        .testTarget(name: "EvidenceHTTPTests", dependencies: ["EvidenceTesting", "EvidenceProcess", "EvidenceHTTP", "EvidenceCore",
                                                              .product(name: "Logging", package: "swift-log")],
                    swiftSettings: swiftSettings),
        .testTarget(name: "EvidenceNotaryTests", dependencies: ["EvidenceTesting", "EvidenceNotary", "EvidenceCore", "EvidenceSandbox", "EvidenceHTTP", "EvidenceProcess",
                                                                .product(name: "Logging", package: "swift-log")],
                    swiftSettings: swiftSettings),
        .testTarget(name: "EvidenceCertificateTests", dependencies: ["EvidenceTesting", "EvidenceProcess", "EvidenceCertificate", "EvidenceCore"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "EvidenceSandboxTests", dependencies: ["EvidenceTesting", "EvidenceProcess", "EvidenceSandbox", "EvidenceCore", "evidence-sandbox"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "EvidenceArchiveTests", dependencies: ["EvidenceBlocking", "EvidenceTesting", "EvidenceProcess", "EvidenceArchive", "EvidenceHTTP", "EvidenceStore", "EvidenceCore", "EvidenceSandbox", "evidence-sandbox",
                                                                 .product(name: "Logging", package: "swift-log")],
                    swiftSettings: swiftSettings),
        .testTarget(name: "EvidencePortalTests", dependencies: ["EvidenceTesting", "EvidenceProcess", "EvidencePortal", "EvidenceCore", "EvidenceStore", "EvidenceCatalog", "EvidenceConfig", "EvidencePipeline",
                                                                .product(name: "HummingbirdTesting", package: "hummingbird")],
                    swiftSettings: swiftSettings),
        .testTarget(name: "EvidenceMetricsTests", dependencies: ["EvidenceTesting", "EvidenceMetrics", "EvidencePipeline", "EvidenceCatalog", "EvidenceArchive",
                                                                 "EvidenceCore", "EvidenceStore", "EvidenceConfig",
                                                                 .product(name: "CoreMetrics", package: "swift-metrics"),
                                                                 .product(name: "Prometheus", package: "swift-prometheus"),
                                                                 .product(name: "HummingbirdTesting", package: "hummingbird"),
                                                                 .product(name: "Logging", package: "swift-log")],
                    swiftSettings: swiftSettings),
        .testTarget(name: "EvidenceFuzzingTests", dependencies: ["EvidenceTesting", "EvidenceFuzzing", "EvidenceConfig"],
                    swiftSettings: swiftSettings),
        // `evidence`: the media probe child (`evidence __probe`) the pipeline starts.
        .testTarget(name: "EvidencePipelineTests", dependencies: ["EvidenceTesting", "EvidenceProcess", "EvidencePipeline", "EvidenceMedia", "EvidenceArchive", "EvidenceStore", "evidence",
                                                                  "EvidenceHTTP", "EvidenceCatalog", "EvidenceCore",
                                                                  "EvidenceConfig", "EvidenceNotary", "EvidenceSandbox",
                                                                  .product(name: "Logging", package: "swift-log"),
                                                                  .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")],
                    swiftSettings: swiftSettings),
        .testTarget(name: "EvidencePeerTests", dependencies: ["EvidenceProcess", "EvidenceTesting", "EvidenceSandbox", "EvidenceHTTP", "EvidenceStore", "EvidenceArchive", "evidence-sandbox",
                                                              .product(name: "Logging", package: "swift-log")],
                    swiftSettings: swiftSettings),
        .testTarget(name: "EvidenceCLITests", dependencies: ["EvidenceTesting", "EvidenceProcess", "EvidenceCore", "EvidenceSandbox", "EvidenceCLI", "evidence", "evidence-sandbox",
                                                             .product(name: "ZIPFoundation", package: "ZIPFoundation")],
                    swiftSettings: swiftSettings),
    ]
)
