import FuzzSupport

runFuzzer { data, size in fuzzPushDecoder(data, size) }
