import FuzzSupport

runFuzzer { data, size in fuzzPickerProtocol(data, size) }
