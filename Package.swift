// swift-tools-version:6.1
import PackageDescription

// One settings array for every Swift target (hummingbird-style).
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "evidence",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "evidence", targets: ["evidence"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        // MARK: C libraries (only the owning module imports each)
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto",
                       providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl",
                       providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CAVFormat", pkgConfig: "libavformat",
                       providers: [.apt(["libavformat-dev"])]),

        // MARK: Modules
        .target(name: "EvidenceCore", swiftSettings: swiftSettings),
        .target(name: "EvidenceStore",
                dependencies: ["EvidenceCore", "COpenSSL"],
                swiftSettings: swiftSettings),
        .target(name: "EvidenceCatalog",
                dependencies: ["EvidenceCore", "EvidenceStore", .product(name: "GRDB", package: "GRDB.swift")],
                swiftSettings: swiftSettings),
        .target(name: "EvidenceConfig",
                dependencies: ["EvidenceCore", .product(name: "TOMLKit", package: "TOMLKit")],
                swiftSettings: swiftSettings),
        .target(name: "EvidenceWatch",
                dependencies: ["EvidenceCore", .product(name: "Logging", package: "swift-log")],
                swiftSettings: swiftSettings),
        .target(name: "EvidenceMedia",
                dependencies: ["EvidenceCore", "CAVFormat"],
                swiftSettings: swiftSettings),
        .target(name: "EvidencePipeline",
                dependencies: [
                    "EvidenceCore", "EvidenceStore", "EvidenceCatalog", "EvidenceMedia",
                    "EvidenceConfig", "EvidenceWatch",
                    .product(name: "Logging", package: "swift-log"),
                    .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                ],
                swiftSettings: swiftSettings),
        .executableTarget(name: "evidence",
                          dependencies: [
                              "EvidenceCore", "EvidenceStore", "EvidenceCatalog", "EvidenceMedia", "EvidencePipeline",
                              "EvidenceConfig", "EvidenceWatch",
                              .product(name: "ArgumentParser", package: "swift-argument-parser"),
                              .product(name: "Logging", package: "swift-log"),
                          ],
                          swiftSettings: swiftSettings),

        // MARK: Tests
        .testTarget(name: "EvidenceStoreTests", dependencies: ["EvidenceStore", "EvidenceCore"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "EvidenceCatalogTests", dependencies: ["EvidenceCatalog", "EvidenceCore", "EvidenceStore", .product(name: "GRDB", package: "GRDB.swift")],
                    swiftSettings: swiftSettings),
        .testTarget(name: "EvidenceMediaTests", dependencies: ["EvidenceMedia", "EvidenceCore"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "EvidenceConfigTests", dependencies: ["EvidenceConfig", "EvidenceCore"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "EvidenceWatchTests", dependencies: ["EvidenceWatch", "EvidenceCore", .product(name: "Logging", package: "swift-log")],
                    swiftSettings: swiftSettings),
        .testTarget(name: "EvidenceCLITests", dependencies: ["EvidenceCore", "evidence"],
                    swiftSettings: swiftSettings),
    ]
)
