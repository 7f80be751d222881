import Glibc

// libFuzzer's driver, called from this program's own main (SwiftPM gives every
// executable one, so libFuzzer's main is not linked).
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ test: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt) -> CInt

var argc = CommandLine.argc
var argv = CommandLine.unsafeArgv
exit(runFuzzerDriver(&argc, &argv) { data, size in fuzzHTTPRequestParser(data, size) })
