import FuzzDriver

@_cdecl("fuzz_qed_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer("qed", argc, argv)
}
