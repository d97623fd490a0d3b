import FuzzDriver

@_cdecl("fuzz_manifest_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer("manifest", argc, argv)
}
