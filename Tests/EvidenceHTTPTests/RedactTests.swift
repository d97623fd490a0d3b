import EvidenceHTTP
import Foundation
import Testing

@Suite struct RedactTests {
    @Test func urlDropsUserinfo() {
        #expect(Redact.url("https://evidence:s3cret@cloud.example.org/remote.php/dav/files/evidence/")
            == "https://cloud.example.org/remote.php/dav/files/evidence/")
        #expect(Redact.url("http://user@host:8080") == "http://host:8080")
    }

    @Test func urlMasksSensitiveQueryValues() {
        let url = "https://api.example/v1/x?access_token=abc&page=2&API_KEY=k1&sig=zz&code=c0de&name=token#frag"
        #expect(Redact.url(url)
            == "https://api.example/v1/x?access_token=<redacted>&page=2&API_KEY=<redacted>&sig=<redacted>&code=<redacted>&name=token#frag")
        #expect(Redact.url("https://h/cb#access_token=xyz&state=1") == "https://h/cb#access_token=<redacted>&state=1")
        for key in ["token", "key", "password", "secret", "refresh_token"] {
            #expect(!Redact.url("https://h/?\(key)=VALUE").contains("VALUE"), "\(key)")
        }
    }

    @Test func urlWithoutSecretsIsUnchanged() {
        for url in ["https://api.qed.digital/v1/reports/?hash=ab12", "http://127.0.0.1:8080/", "/relative?x=1", "https://h"] {
            #expect(Redact.url(url) == url)
        }
    }

    @Test func headersMaskCredentialsAndKeepOrder() {
        let headers: [(String, String)] = [
            ("Authorization", "app-token SECRET"), ("Content-Type", "application/json"),
            ("Proxy-Authorization", "Basic eDp5"), ("Cookie", "a=b"), ("Set-Cookie", "sid=1"),
            ("X-Api-Key", "k"), ("X-Auth-Token", "t"), ("Client-Secret", "s"), ("Accept", "*/*"),
        ]
        let redacted = Redact.headers(headers)
        #expect(redacted.map(\.0) == headers.map(\.0))
        #expect(redacted.map(\.1) == ["<redacted>", "application/json", "<redacted>", "<redacted>", "<redacted>",
                                      "<redacted>", "<redacted>", "<redacted>", "*/*"])
    }

    @Test func textReplacesEveryOccurrenceOfEverySecret() {
        let text = "token SECRET-123 rejected; SECRET-123 again; pw hunter2"
        #expect(Redact.text(text, secrets: ["SECRET-123", "hunter2", ""])
            == "token <redacted> rejected; <redacted> again; pw <redacted>")
        #expect(Redact.text("nothing here", secrets: []) == "nothing here")
    }
}
