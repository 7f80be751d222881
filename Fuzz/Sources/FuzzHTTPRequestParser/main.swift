import FuzzSupport

runFuzzer { data, size in fuzzHTTPRequestParser(data, size) }
