@testable import EvidencePortal
import Testing

@Suite("HTML is safe by construction")
struct HTMLTests {
    @Test("interpolated text is escaped for content and attributes; literals stay markup")
    func escapesInterpolation() {
        let name = #"<script>alert("x")</script> & 'y'"#
        let html: HTML = "<td title=\"\(name)\">\(name)</td>"
        #expect(html.rendered == #"<td title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;</td>"#)
    }

    @Test("an HTML value is inserted as is, a String never")
    func htmlInsertedRaw() {
        let inner: HTML = "<b>bold</b>"
        let text = "<b>bold</b>"
        #expect(("<p>\(inner)</p>" as HTML).rendered == "<p><b>bold</b></p>")
        #expect(("<p>\(text)</p>" as HTML).rendered == "<p>&lt;b&gt;bold&lt;/b&gt;</p>")
    }

    @Test("direction overrides and control characters are shown, not obeyed")
    func bidiAndControls() {
        #expect(HTML.escape("evil\u{202E}gpj.exe") == "evil[U+202E]gpj.exe")
        #expect(HTML.escape("a\u{0}b\u{1B}[31m") == "a[U+0000]b[U+001B][31m")
        #expect(HTML.escape("ü 日本 📷") == "ü 日本 📷")
    }

    @Test("only http and https URLs from outside become links")
    func externalLinks() {
        #expect(HTML.externalLink("javascript:alert(1)").rendered == "javascript:alert(1)")
        #expect(HTML.externalLink("data:text/html,<b>x</b>").rendered == "data:text/html,&lt;b&gt;x&lt;/b&gt;")
        #expect(HTML.externalLink("https://explorer.example/tx/0xab\"onmouseover=x", text: "0xab").rendered
                == #"<a href="https://explorer.example/tx/0xab&quot;onmouseover=x" rel="noopener noreferrer">0xab</a>"#)
    }

    @Test("path segments are percent-encoded")
    func urlComponent() {
        #expect(HTML.urlComponent("qed") == "qed")
        #expect(HTML.urlComponent("a b/../c?d") == "a%20b%2F..%2Fc%3Fd")
        #expect(HTML.urlComponent("é") == "%C3%A9")
    }

    @Test("download file names are reduced to safe ASCII: no quotes, separators or header injection")
    func attachmentNames() {
        #expect(Pages.attachment("evidence-item-3-ab12cd34-qed.pdf") == #"attachment; filename="evidence-item-3-ab12cd34-qed.pdf""#)
        #expect(Pages.attachment("a\"b\r\nSet-Cookie: x/../é.pdf") == #"attachment; filename="a_b__Set-Cookie__x_..__.pdf""#)
        #expect(Pages.attachment("..hidden") == #"attachment; filename="__hidden""#)
    }
}
