import JSON
import SyncCore
import Testing

@testable import SyncClient

/// A batch sealed in two halves, the second on a thread of its own, is the
/// batch sealed change by change: the same texts and digests, in order.
@Suite struct WireChangesTests {
    @Test(arguments: [1, 199, 200, 1000])
    func aBatchSealedInTwoHalvesIsTheBatchSealedInOrder(_ count: Int) throws {
        let cipher = RecordCipher(AccountKey.generate())
        let changes = (1...count).map { index in
            var change = BoxedRecordTests.madeRule("site\(index).example")
            change.sequence = Int64(index)
            change.sealedFormat = .two
            return change
        }
        let sealed = try SyncClient.wireChanges(changes, cipher: cipher)
        let oneByOne = try changes.map { try SyncClient.WireChange($0, cipher: cipher) }
        #expect(sealed.map(\.wire.sequence) == changes.map(\.sequence))
        #expect(sealed.map(\.text) == oneByOne.map(\.text))
        #expect(sealed.map(\.digest) == oneByOne.map(\.digest))
    }
}
