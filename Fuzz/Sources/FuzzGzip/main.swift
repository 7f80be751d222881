import FuzzSupport

runFuzzer { data, size in fuzzGzip(data, size) }
