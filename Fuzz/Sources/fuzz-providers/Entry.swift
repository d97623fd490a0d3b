import FuzzDriver

@_cdecl("fuzz_providers_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer("providers", argc, argv)
}
