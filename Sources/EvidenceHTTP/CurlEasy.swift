import CCurl
import Foundation

/// One libcurl easy handle, used by one pool thread at a time. Reused between transfers
/// (`curl_easy_reset` keeps its live connections, so keep-alive works).
final class CurlEasy {
    let handle: UnsafeMutableRawPointer?

    init() {
        _ = CurlGlobal.initialized
        handle = curl_easy_init()
    }

    deinit {
        if let handle { curl_easy_cleanup(handle) }
    }
}

/// `curl_global_init` exactly once per process (a Swift global is initialised once, thread-safely).
enum CurlGlobal {
    static let initialized: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK
}

/// CURLcode numbers and names, and how each maps onto `HTTPError`: the one table for every
/// libcurl client of ours (`HTTPClient`'s transfers and the S3 store's requests).
public enum CurlCode {
    static let names: [Int: String] = [
        1: "CURLE_UNSUPPORTED_PROTOCOL", 2: "CURLE_FAILED_INIT", 3: "CURLE_URL_MALFORMAT",
        4: "CURLE_NOT_BUILT_IN", 5: "CURLE_COULDNT_RESOLVE_PROXY", 6: "CURLE_COULDNT_RESOLVE_HOST",
        7: "CURLE_COULDNT_CONNECT", 8: "CURLE_WEIRD_SERVER_REPLY", 9: "CURLE_REMOTE_ACCESS_DENIED",
        16: "CURLE_HTTP2", 18: "CURLE_PARTIAL_FILE", 22: "CURLE_HTTP_RETURNED_ERROR",
        23: "CURLE_WRITE_ERROR", 25: "CURLE_UPLOAD_FAILED", 26: "CURLE_READ_ERROR",
        27: "CURLE_OUT_OF_MEMORY", 28: "CURLE_OPERATION_TIMEDOUT", 33: "CURLE_RANGE_ERROR",
        34: "CURLE_HTTP_POST_ERROR", 35: "CURLE_SSL_CONNECT_ERROR", 42: "CURLE_ABORTED_BY_CALLBACK",
        43: "CURLE_BAD_FUNCTION_ARGUMENT", 45: "CURLE_INTERFACE_FAILED", 47: "CURLE_TOO_MANY_REDIRECTS",
        52: "CURLE_GOT_NOTHING", 53: "CURLE_SSL_ENGINE_NOTFOUND", 54: "CURLE_SSL_ENGINE_SETFAILED",
        55: "CURLE_SEND_ERROR", 56: "CURLE_RECV_ERROR", 58: "CURLE_SSL_CERTPROBLEM",
        59: "CURLE_SSL_CIPHER", 60: "CURLE_PEER_FAILED_VERIFICATION", 61: "CURLE_BAD_CONTENT_ENCODING",
        63: "CURLE_FILESIZE_EXCEEDED", 64: "CURLE_USE_SSL_FAILED", 65: "CURLE_SEND_FAIL_REWIND",
        66: "CURLE_SSL_ENGINE_INITFAILED", 77: "CURLE_SSL_CACERT_BADFILE", 80: "CURLE_SSL_SHUTDOWN_FAILED",
        81: "CURLE_AGAIN", 82: "CURLE_SSL_CRL_BADFILE", 83: "CURLE_SSL_ISSUER_ERROR",
        90: "CURLE_SSL_PINNEDPUBKEYNOTMATCH", 91: "CURLE_SSL_INVALIDCERTSTATUS", 92: "CURLE_HTTP2_STREAM",
        94: "CURLE_AUTH_ERROR", 95: "CURLE_HTTP3", 96: "CURLE_QUIC_CONNECT_ERROR", 97: "CURLE_PROXY",
        98: "CURLE_SSL_CLIENTCERT", 99: "CURLE_UNRECOVERABLE_POLL",
    ]

    public static func name(_ code: Int) -> String { names[code] ?? "CURLE_\(code)" }

    static let timedOut = 28
    static let abortedByCallback = 42
    public static let readError = 26
    static let writeError = 23
    static let badArgument = 43

    /// Certificate, handshake and TLS set-up failures: permanent.
    static let tls: Set<Int> = [35, 53, 54, 58, 59, 60, 64, 66, 77, 80, 82, 83, 90, 91, 98]

    /// Failures of the request itself or of this machine, which a retry will not fix.
    static let permanent: Set<Int> = [1, 2, 3, 4, 43, 45, 47, 61, 63]

    /// The failure of a `curl_easy_perform` that returned `code`, with curl's `text` (already
    /// redacted): `.timeout`, `.tls` (never retried) or `.transport`, retryable unless `permanent`.
    public static func failure(_ code: Int, _ text: String, method: String, url: String) -> HTTPError {
        let kind: HTTPError.Kind = code == timedOut ? .timeout
            : tls.contains(code) ? .tls
            : .transport(code: code, name: name(code))
        return HTTPError(kind: kind, method: method, url: Redact.url(url), message: text,
                         isRetryable: kind == .tls ? false : !permanent.contains(code))
    }
}
