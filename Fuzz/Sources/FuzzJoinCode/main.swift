import FuzzSupport

runFuzzer { data, size in fuzzJoinCode(data, size) }
