import FuzzSupport

runFuzzer { data, size in fuzzXReplies(data, size) }
