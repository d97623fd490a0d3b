import EvidenceCore

/// The local store as a `ContentStore`: its own methods, unchanged.
extension ObjectStore: ContentStore {
    public var storeDescription: String { "the store at \(home)/objects" }

    public func location(of d: SHA256Digest) -> String { objectPath(d) }

    public func withLocalCopy<T>(of d: SHA256Digest, _ body: (String) -> T) throws(StoreError) -> T {
        body(objectPath(d))
    }
}
