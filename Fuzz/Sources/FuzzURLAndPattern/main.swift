import FuzzSupport

runFuzzer { data, size in fuzzURLAndPattern(data, size) }
