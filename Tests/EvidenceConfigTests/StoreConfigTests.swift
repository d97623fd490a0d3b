import EvidenceConfig
import Foundation
import Testing

@Suite("[store] table")
struct StoreConfigTests {
    static let s3 = """
        [store]
        kind = "s3"
        endpoint = "https://s3.eu-central-1.amazonaws.com"
        bucket = "county-evidence"
        region = "eu-central-1"
        access_key_env = "EVIDENCE_S3_ACCESS_KEY"
        secret_key_file = "/etc/evidence/s3-secret"

        """

    @Test("an S3 store: endpoint, bucket, region, keys by env or file, Object Lock with a retention in years or as a duration")
    func valid() throws {
        #expect(try loadConfigText("").store == nil, "no table: objects/ in the home")
        #expect(try loadConfigText("[store]\nkind = \"local\"\n").store?.kind == .local)
        let plain = try #require(try loadConfigText(Self.s3).store)
        #expect(plain.kind == .s3 && plain.bucket == "county-evidence" && plain.region == "eu-central-1")
        #expect(plain.accessKey == .env("EVIDENCE_S3_ACCESS_KEY") && plain.secretKey == .file("/etc/evidence/s3-secret"))
        #expect(plain.objectLock == nil && plain.retain == nil)
        let locked = try #require(try loadConfigText(Self.s3 + "object_lock = \"compliance\"\nretain = \"7y\"\n").store)
        #expect(locked.objectLock == .compliance && locked.retain == .years(7))
        #expect(try loadConfigText(Self.s3 + "object_lock = \"governance\"\nretain = \"90d\"\n").store?.retain == .seconds(90 * 86_400))
        let loopback = "[store]\nkind = \"s3\"\nendpoint = \"http://127.0.0.1:9000\"\nbucket = \"b-1\"\naccess_key_env = \"A\"\nsecret_key_env = \"S\"\n"
        #expect(try loadConfigText(loopback).store?.region == "us-east-1")
    }

    @Test("missing keys, a cleartext endpoint off this host, a bad bucket name, a retention without object_lock or a bad one are refused naming the field")
    func invalid() {
        func field(_ text: String) -> String? { configError { try loadConfigText(text) }?.field }
        #expect(field("[store]\nkind = \"s3\"\nbucket = \"abc\"\naccess_key_env = \"A\"\nsecret_key_env = \"S\"\n") == "store.endpoint")
        #expect(field(Self.s3.replacingOccurrences(of: "https://s3.eu-central-1", with: "http://s3.eu-central-1")) == "store.endpoint")
        #expect(field(Self.s3.replacingOccurrences(of: "county-evidence", with: "County_Evidence")) == "store.bucket")
        #expect(field(Self.s3.replacingOccurrences(of: "access_key_env = \"EVIDENCE_S3_ACCESS_KEY\"\n", with: "")) == "store.access_key_env")
        #expect(field(Self.s3 + "secret_key_env = \"S\"\n") == "store.secret_key_file")
        #expect(field(Self.s3 + "retain = \"7y\"\n") == "store.retain")
        #expect(field(Self.s3 + "object_lock = \"compliance\"\n") == "store.retain")
        #expect(field(Self.s3 + "object_lock = \"compliance\"\nretain = \"seven years\"\n") == "store.retain")
        #expect(field(Self.s3 + "object_lock = \"legal\"\nretain = \"7y\"\n") == "store.object_lock")
        #expect(field("[store]\nkind = \"local\"\nbucket = \"b-1\"\n") == "store.bucket")
        #expect(field("[store]\nkind = \"ftp\"\n") == "store.kind")
        let inline = configError { try loadConfigText(Self.s3 + "secret_key = \"hunter2\"\n") }
        #expect(inline?.field == "store.secret_key", "\(String(describing: inline))")
        #expect(inline.map { !"\($0)".contains("hunter2") } == true)
    }
}
