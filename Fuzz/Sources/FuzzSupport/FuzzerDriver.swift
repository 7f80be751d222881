import Glibc

// libFuzzer's driver, called from each fuzz target's own main (SwiftPM gives
// every executable one, so libFuzzer's main is not linked).
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ test: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt
) -> CInt

/// Runs libFuzzer with this process's arguments and `test` as the target, then exits.
public func runFuzzer(_ test: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt) -> Never {
    var argc = CommandLine.argc
    var argv = CommandLine.unsafeArgv
    exit(runFuzzerDriver(&argc, &argv, test))
}
