import Foundation
import JSON
import Synchronization
import TestSupport
import Testing

@testable import SyncCore

/// A long push or relay read in two halves at once (``SecondThread``) reads
/// exactly what reading it in order reads, and is refused with the same
/// message; a short one is not split.
@Suite struct ReadInHalvesTests {
    /// A second thread that is a real one, counting the halves it ran.
    final class Lender: Sendable {
        let started = Atomic<Int>(0)

        func secondThread(worthSplitting: Int = 256) -> SecondThread {
            SecondThread(worthSplitting: worthSplitting) { [self] body in
                started.add(1, ordering: .relaxed)
                let done = DispatchSemaphore(value: 0)
                Thread.detachNewThread {
                    body()
                    done.signal()
                }
                return { done.wait() }
            }
        }
    }

    static let stamp = "000001a20d32b246-00000001-abc"

    /// Change `sequence`; its key is over the limit (read, rejected alone) when `overLimit`.
    static func change(_ sequence: Int, overLimit: Bool = false) -> String {
        let key = overLimit ? String(repeating: "k", count: Wire.maxKeyBytes + 1) : "site\(sequence).example"
        return
            #"{"collection":"rules","fields":{"pattern":{"s":"\#(stamp)","v":"\#(key)"}},"key":"\#(key)","seq":\#(sequence),"versions":{"abc":\#(sequence)}}"#
    }

    /// A push of `count` changes, those at `overLimit` over a limit.
    static func push(_ count: Int, overLimit: Set<Int> = []) -> String {
        let changes = (1...count).map { change($0, overLimit: overLimit.contains($0)) }
        return #"{"changes":[\#(changes.joined(separator: ","))],"device":"abc","from":1,"to":\#(count)}"#
    }

    static func read(_ text: String, _ secondThread: SecondThread?) -> Result<PushRequest, Wire.ReadError> {
        Result { () throws(Wire.ReadError) in
            try Wire.read(text) { bytes throws(Wire.ReadError) in
                try PushRequest(reading: bytes, secondThread: secondThread)
            }
        }
    }

    static func relay(_ text: String, _ secondThread: SecondThread?) -> Result<RelayRequest, Wire.ReadError> {
        Result { () throws(Wire.ReadError) in
            try Wire.read(text) { bytes throws(Wire.ReadError) in
                try RelayRequest(reading: bytes, secondThread: secondThread)
            }
        }
    }

    /// The same push, or the same refusal.
    static func same(
        _ first: Result<PushRequest, Wire.ReadError>, _ second: Result<PushRequest, Wire.ReadError>
    ) -> Bool {
        switch (first, second) {
        case (.success(let one), .success(let other)): one == other
        case (.failure(let one), .failure(let other)): one.description == other.description
        default: false
        }
    }

    @Test func aLongPushReadsInHalvesAsInOrder() throws {
        for (count, overLimit) in [(256, Set<Int>()), (1_000, [3, 500, 501, 999]), (1_001, [1_001])] {
            let lender = Lender()
            let text = Self.push(count, overLimit: overLimit)
            let inOrder = try Self.read(text, nil).get()
            let inHalves = try Self.read(text, lender.secondThread()).get()
            #expect(inHalves == inOrder)
            #expect(inOrder.changes.count + inOrder.unreadable.count == count)
            #expect(inOrder.unreadable.map(\.sequence) == overLimit.sorted().map(Int64.init))
            #expect(lender.started.load(ordering: .relaxed) == 1, "\(count) changes were not read in halves")
        }
    }

    @Test func aRelayReadsInHalvesAsInOrder() throws {
        let records = (1...600).map { Self.change($0, overLimit: $0 == 450) }.joined(separator: ",")
        let text = #"{"records":[\#(records)]}"#
        let lender = Lender()
        let inOrder = try Self.relay(text, nil).get()
        let inHalves = try Self.relay(text, lender.secondThread()).get()
        #expect(inHalves.records == inOrder.records && inHalves.unreadable == inOrder.unreadable)
        #expect(inOrder.records.count == 599 && inOrder.unreadable.map(\.sequence) == [450])
        #expect(lender.started.load(ordering: .relaxed) == 1)
    }

    @Test func aShortPushIsReadOnOneThread() throws {
        let lender = Lender()
        let text = Self.push(255)
        #expect(try Self.read(text, lender.secondThread()).get() == Self.read(text, nil).get())
        #expect(lender.started.load(ordering: .relaxed) == 0)
    }

    /// Refusals found in either half, and JSON broken in either, are the
    /// same refusal, named the same way, as reading in order gives.
    @Test func aRefusalInEitherHalfIsTheSame() {
        let text = Self.push(600)
        let broken = [
            // A change refused (its number out of order), early and late.
            text.replacingOccurrences(of: #""seq":10,"#, with: #""seq":11,"#),
            text.replacingOccurrences(of: #""seq":590,"#, with: #""seq":7,"#),
            // A change that is no object; one without fields.
            text.replacingOccurrences(of: Self.change(400), with: "[1]"),
            text.replacingOccurrences(of: Self.change(401), with: #"{"seq":401}"#),
            // A string that is not UTF-8 as JSON writes it (a lone surrogate), and a bad escape.
            text.replacingOccurrences(of: "site580.example", with: #"site\ud800.example"#),
            text.replacingOccurrences(of: "site20.example", with: #"site\q.example"#),
            // JSON broken in the second half, and after the array.
            text.replacingOccurrences(of: #""seq":555,"#, with: #""seq":555"#),
            text + "}",
            String(text.dropLast(40)),
        ]
        let lender = Lender()
        for (index, text) in broken.enumerated() {
            let inOrder = Self.read(text, nil), inHalves = Self.read(text, lender.secondThread())
            guard case .failure(let error) = inOrder else {
                Issue.record("broken push \(index) reads")
                continue
            }
            let same = Self.same(.failure(error), inHalves)
            #expect(same, "broken push \(index)")
        }
    }

    /// Random damage to a long push (seeded: `BRSYNC_TEST_SEED` re-runs one):
    /// whatever reading in order makes of it, reading in halves makes too.
    @Test func damagedPushesReadTheSame() {
        var random = SeededRandom.fromEnvironment(fallback: 4_242)
        print("damagedPushesReadTheSame seed: \(random.seed)")
        let text = Array(Self.push(300, overLimit: [150]).utf8)
        let lender = Lender()
        let damage: [UInt8] = Array(#"{}[],:"\ 0a"#.utf8) + [0xFF, 0xC3]
        for round in 0..<200 {
            var bytes = text
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                let place = Int.random(in: 0..<bytes.count, using: &random)
                switch Int.random(in: 0..<3, using: &random) {
                case 0: bytes[place] = damage.randomElement(using: &random)!
                case 1: bytes.remove(at: place)
                default: bytes.insert(damage.randomElement(using: &random)!, at: place)
                }
            }
            let damaged = String(decoding: bytes, as: UTF8.self)
            let inOrder = Self.read(damaged, nil), inHalves = Self.read(damaged, lender.secondThread())
            let same = Self.same(inOrder, inHalves)
            #expect(same, "round \(round), seed \(random.seed)")
        }
    }
}
