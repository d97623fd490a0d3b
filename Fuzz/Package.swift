// swift-tools-version:6.1
// libFuzzer executables for the parsers we own, one per parser family (`make fuzz`).
// A package of its own so that `swift build` / `make test` of the main package never see
// `-sanitize=fuzzer`; the targets and their contracts live in the main package's
// EvidenceFuzzing module, which `make test` also replays.
//
// Build: swift build --package-path Fuzz -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library
import Foundation
import PackageDescription

// A path dependency's identity is its folder's name (the checkout may be called anything, except
// "fuzz": that is this package's own identity, and SwiftPM would look for EvidenceFuzzing here).
let main = URL(fileURLWithPath: Context.packageDirectory).deletingLastPathComponent().standardized

let targets = ["config", "rule", "qed", "rfc3161", "manifest", "custody", "providers", "webdav", "sandbox-json"]

let package = Package(
    name: "evidence-fuzz",
    platforms: [.macOS(.v14)],
    products: targets.map { .executable(name: "fuzz-\($0)", targets: ["fuzz-\($0)"]) },
    dependencies: [.package(path: main.path)],
    targets: [
        .target(name: "FuzzDriver", dependencies: [.product(name: "EvidenceFuzzing", package: main.lastPathComponent)]),
    ] + targets.map {
        .executableTarget(name: "fuzz-\($0)", dependencies: ["FuzzDriver"], path: "Sources/fuzz-\($0)")
    }
)
