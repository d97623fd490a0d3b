import FuzzDriver

@_cdecl("fuzz_custody_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer("custody", argc, argv)
}
