import EvidenceCore

/// The local store as a `ContentStore`: its own methods, unchanged.
extension ObjectStore: ContentStore {
    public var storeDescription: String { "the store at \(home)/objects" }

    /// The object's path: where it is (see `existingFolder`), else where it belongs.
    public func location(of d: SHA256Digest) -> String {
        (try? existingFolder(d))?.folder.path ?? objectPath(d)
    }

    public func withLocalCopy<T>(of d: SHA256Digest, _ body: (String) -> T) throws(StoreError) -> T {
        body(location(of: d))
    }
}
