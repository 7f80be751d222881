import FuzzSupport

runFuzzer { data, size in fuzzMerge(data, size) }
