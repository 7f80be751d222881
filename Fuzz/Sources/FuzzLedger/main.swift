import FuzzSupport

runFuzzer { data, size in fuzzLedger(data, size) }
