import Foundation
import HTTPTypes
import Hummingbird

/// What the desktop clients (`owncloudcmd`, `nextcloudcmd`) ask before they sync:
/// `GET /owncloud/ocs/v{1,2}.php/cloud/capabilities` and `…/cloud/user` (Basic auth, OCS
/// envelope; v1 says `statuscode` 100, v2 says 200). The capabilities are the ones the real
/// servers publish by default, trimmed to what the emulation serves: NG chunking (`dav.chunking`
/// 1.0), SHA1 checksums on ownCloud, public links without upload, no TUS, no bulk upload.
extension OwnCloudEmulator {
    func addCapabilityRoutes(to router: Router<SandboxRequestContext>) {
        for version in ["v1", "v2"] {
            router.get(RouterPath("owncloud/ocs/\(version).php/cloud/capabilities")) { request, _ in
                self.ocsAnswer(request, v2: version == "v2") { self.capabilities() }
            }
            router.get(RouterPath("owncloud/ocs/\(version).php/cloud/user")) { request, _ in
                self.ocsAnswer(request, v2: version == "v2") { self.userInfo() }
            }
        }
    }

    /// An OCS envelope for an authenticated client (401 with statuscode 997 otherwise).
    private func ocsAnswer(_ request: Request, v2: Bool, _ data: () -> JSONValue) -> Response {
        let json = request.uri.queryParameters.get("format")?.lowercased() == "json"
            || (request.headers[.accept] ?? "").contains("json")
        guard authorized(request) else {
            return OwnCloudWire.ocs(status: .unauthorized, code: 997, message: "Current user is not logged in", data: .array([]), json: json)
        }
        return OwnCloudWire.ocs(code: v2 ? 200 : 100, message: "OK", data: data(), json: json)
    }

    private func versionObject() -> JSONValue {
        switch flavour {
        case .owncloud:
            return .object([("major", .int(10)), ("minor", .int(15)), ("micro", .int(0)), ("string", .string("10.15.0")),
                            ("edition", .string("Community")), ("product", .string("ownCloud")), ("productversion", .string("10.15.0"))])
        case .nextcloud:
            return .object([("major", .int(30)), ("minor", .int(0)), ("micro", .int(4)), ("string", .string("30.0.4")),
                            ("edition", .string("")), ("extendedSupport", .bool(false))])
        }
    }

    func capabilities() -> JSONValue {
        let off: JSONValue = .object([("enabled", .bool(false))])
        // Without the uploads endpoint (quirk owncloud-no-uploads) the capabilities say so as
        // Infinite Scale's do with its TUS protocol: no big-file chunking, `dav.chunking` empty.
        let chunking = !env.control.isArmed(.ownCloudNoUploads)
        let ng: JSONValue = .string(chunking ? "1.0" : "")
        switch flavour {
        case .owncloud:
            let status: JSONValue = .object([
                ("installed", .string("true")), ("maintenance", .string("false")), ("needsDbUpgrade", .string("false")),
                ("version", .string("10.15.0.2")), ("versionstring", .string("10.15.0")), ("edition", .string("Community")),
                ("productname", .string("ownCloud")), ("product", .string("ownCloud")), ("productversion", .string("10.15.0")),
            ])
            return .object([
                ("version", versionObject()),
                ("capabilities", .object([
                    ("core", .object([("pollinterval", .int(60)), ("webdav-root", .string("remote.php/webdav")),
                                      ("status", status), ("support_url_signing", .bool(true))])),
                    ("checksums", .object([("supportedTypes", .array([.string("SHA1")])), ("preferredUploadType", .string("SHA1"))])),
                    ("files", .object([
                        ("privateLinks", .bool(true)), ("privateLinksDetailsParam", .bool(true)), ("bigfilechunking", .bool(chunking)),
                        ("blacklisted_files", .array([.string(".htaccess")])), ("favorites", .bool(true)),
                        ("file_locking_support", .bool(false)), ("file_locking_enable_file_action", .bool(false)),
                        ("undelete", .bool(true)), ("versioning", .bool(true)),
                    ])),
                    ("dav", .object([("chunking", ng), ("reports", .array([.string("search-files")])), ("trashbin", .string("1.0"))])),
                    ("files_sharing", .object([
                        ("api_enabled", .bool(true)),
                        ("public", .object([
                            ("enabled", .bool(true)),
                            ("password", .object([("enforced_for", .object([("read_only", .bool(false)), ("read_write", .bool(false)),
                                                                             ("upload_only", .bool(false)), ("read_write_delete", .bool(false))])),
                                                  ("enforced", .bool(false))])),
                            ("roles_api", .bool(true)), ("expire_date", off), ("send_mail", .bool(false)), ("social_share", .bool(true)),
                            ("upload", .bool(false)), ("multiple", .bool(true)), ("supports_upload_only", .bool(false)),
                            ("defaultPublicLinkShareName", .string("Public link")),
                        ])),
                        ("user", .object([("send_mail", .bool(false)), ("profile_picture", .bool(true)), ("expire_date", off)])),
                        ("group", .object([("expire_date", off)])),
                        ("resharing", .bool(true)), ("group_sharing", .bool(true)), ("auto_accept_share", .bool(true)),
                        ("share_with_group_members_only", .bool(false)), ("share_with_membership_groups_only", .bool(false)),
                        ("can_share", .bool(true)), ("user_enumeration", .object([("enabled", .bool(true)), ("group_members_only", .bool(false))])),
                        ("default_permissions", .int(31)), ("providers_capabilities", .object([])),
                        ("federation", .object([("outgoing", .bool(false)), ("incoming", .bool(false))])), ("search_min_length", .int(2)),
                    ])),
                ])),
            ])
        case .nextcloud:
            return .object([
                ("version", versionObject()),
                ("capabilities", .object([
                    ("core", .object([("pollinterval", .int(60)), ("webdav-root", .string("remote.php/webdav")),
                                      ("reference-api", .bool(true)), ("mod-rewrite-working", .bool(false))])),
                    ("files", .object([
                        ("bigfilechunking", .bool(chunking)), ("blacklisted_files", .array([.string(".htaccess")])),
                        ("forbidden_filenames", .array([.string(".htaccess")])), ("forbidden_filename_basenames", .array([])),
                        ("forbidden_filename_characters", .array([.string("/"), .string("\\")])),
                        ("forbidden_filename_extensions", .array([])),
                        ("chunked_upload", .object([("max_size", .int(100 << 20)), ("max_parallel_count", .int(5))])),
                        ("undelete", .bool(true)), ("versioning", .bool(true)), ("version_labeling", .bool(true)),
                        ("version_deletion", .bool(true)), ("windows_compatible_filenames", .bool(false)),
                    ])),
                    ("dav", .object([("chunking", ng), ("public_shares_chunking", .bool(false))])),
                    ("files_sharing", .object([
                        ("api_enabled", .bool(true)),
                        ("public", .object([
                            ("enabled", .bool(true)),
                            ("password", .object([("enforced", .bool(false)), ("askForOptionalPassword", .bool(false))])),
                            ("expire_date", off), ("multiple_links", .bool(true)), ("expire_date_internal", off),
                            ("expire_date_remote", off), ("send_mail", .bool(false)), ("upload", .bool(false)),
                            ("upload_files_drop", .bool(false)),
                        ])),
                        ("user", .object([("send_mail", .bool(false)), ("expire_date", off)])),
                        ("resharing", .bool(true)), ("group_sharing", .bool(true)),
                        ("group", .object([("enabled", .bool(true)), ("expire_date", off)])),
                        ("default_permissions", .int(31)),
                        ("federation", .object([("outgoing", .bool(false)), ("incoming", .bool(false)), ("expire_date", off),
                                                ("expire_date_supported", off)])),
                        ("sharee", .object([("query_lookup_default", .bool(false)), ("always_show_unique", .bool(true))])),
                    ])),
                ])),
            ])
        }
    }

    func userInfo() -> JSONValue {
        .object([
            ("id", .string(Self.user)), ("display-name", .string(Self.user)), ("displayname", .string(Self.user)),
            ("email", .null), ("enabled", .bool(true)), ("language", .string("en")),
            ("quota", .object([("free", .int(1 << 40)), ("used", .int(0)), ("total", .int(1 << 40)), ("relative", .int(0)),
                               ("quota", .int(-3))])),
        ])
    }
}
