import FuzzDriver

@_cdecl("fuzz_sandbox_json_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer("sandbox-json", argc, argv)
}
