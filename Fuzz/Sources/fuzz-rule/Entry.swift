import FuzzDriver

@_cdecl("fuzz_rule_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer("rule", argc, argv)
}
