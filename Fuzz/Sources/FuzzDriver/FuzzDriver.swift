import EvidenceFuzzing
import Foundation

// libFuzzer's entry points. SwiftPM links executables with `main` renamed to `<module>_main`,
// so each fuzz executable defines that symbol and hands over to libFuzzer's own driver here.

@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// The target under test: libFuzzer calls back through a C function pointer, which cannot
/// capture, and runs one input at a time.
nonisolated(unsafe) private var current: FuzzTarget?

/// `Fuzz/fixtures`, found from this file (the executables run from any directory).
let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("fixtures").path

/// Runs libFuzzer on the target `name` with the process's arguments (corpus dirs, -max_total_time, …).
public func runFuzzer(_ name: String, _ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    guard let target = FuzzTargets.named(name, fixtures: fixtures) else {
        FileHandle.standardError.write(Data("fuzz: no target \(name)\n".utf8))
        return 2
    }
    current = target
    var count = argc
    var vector = argv
    return LLVMFuzzerRunDriver(&count, &vector, testOneInput)
}

/// A broken contract is a crash to libFuzzer: it keeps the input and stops.
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let current else { return 0 }
    let data = bytes.map { Data(bytes: $0, count: count) } ?? Data()
    do {
        try current.run(data)
    } catch {
        FileHandle.standardError.write(Data("==fuzz== contract broken: \(error)\n".utf8))
        abort()
    }
    return 0
}
