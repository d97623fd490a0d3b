import FuzzDriver

@_cdecl("fuzz_config_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer("config", argc, argv)
}
