import FuzzDriver

@_cdecl("fuzz_rfc3161_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer("rfc3161", argc, argv)
}
