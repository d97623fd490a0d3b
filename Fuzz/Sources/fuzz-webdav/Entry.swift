import FuzzDriver

@_cdecl("fuzz_webdav_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer("webdav", argc, argv)
}
