import CEvidenceSys

/// glibc's malloc gives a thread that finds every arena busy a new arena of its own, up to eight
/// per core, and each arena keeps the memory its threads freed for them. `evidence run` spreads
/// its work over many threads (the job runners, the store's pool, the HTTP and catalog queues),
/// so its heap grew in arenas it seldom went back to: 47 MB anonymous at the end of the
/// pipeline bench, 31.7 MB with one arena per core, in the same time (bench-pipeline.sh).
public enum MallocArenas {
    /// Limits malloc to one arena per core (`cores`, counted as the workers are sized from the
    /// host: `ProcessInfo.activeProcessorCount`; at least two), unless the operator chose a
    /// limit (`MALLOC_ARENA_MAX`, or `glibc.malloc.arena_max` in `GLIBC_TUNABLES`), which glibc
    /// has already applied. Call once, before the process starts its threads. Answers the limit
    /// set, nil when it was left to the operator or glibc refused it.
    @discardableResult
    public static func limitToCores(_ cores: Int, environment: [String: String]) -> Int? {
        if environment["MALLOC_ARENA_MAX"] != nil { return nil }
        if let tunables = environment["GLIBC_TUNABLES"], tunables.contains("glibc.malloc.arena_max") { return nil }
        let arenas = max(2, cores)
        return evidence_malloc_arena_max(Int32(arenas)) == 1 ? arenas : nil
    }
}
