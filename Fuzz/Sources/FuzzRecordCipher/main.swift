import FuzzSupport

runFuzzer { data, size in fuzzRecordCipher(data, size) }
