import EvidenceCore
import EvidenceS3
import EvidenceStore
import EvidenceTesting
import Foundation
import Testing

@Suite struct S3StoreTests {
    @Test func placeholder() {}
}
