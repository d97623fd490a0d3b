// evidence-bench: the load `make bench` times (scripts/bench.sh); not installed for users.
//
//   evidence-bench claims-fill CATALOG N     queue N jobs
//   evidence-bench claims-work CATALOG NAME  claim and complete jobs until none is left; prints
//                                            how many this process ran
//
// CATALOG is a SQLite file, or postgres://user@127.0.0.1:PORT/DB with the password in the
// environment variable EVIDENCE_BENCH_DB_PASSWORD. Each claim and each completion is its own
// transaction, as in `evidence run` (claims commit without waiting for the disk, completions
// durably).
import EvidenceCatalog
import EvidenceCore
import Foundation

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("evidence-bench: \(message)\n".utf8))
    exit(2)
}

func open(_ catalog: String) -> any Catalog {
    do {
        if catalog.hasPrefix("postgres://") {
            var target = try PostgresTarget.parse(catalog)
            target.password = ProcessInfo.processInfo.environment["EVIDENCE_BENCH_DB_PASSWORD"]
            return try PostgresCatalog(target, headPath: nil)
        }
        return try SQLiteCatalog(path: catalog)
    } catch {
        fail("\(catalog): \(error)")
    }
}

let args = CommandLine.arguments
guard args.count == 4 else { fail("usage: evidence-bench claims-fill CATALOG N | claims-work CATALOG NAME") }
let catalog = open(args[2])
do {
    switch args[1] {
    case "claims-fill":
        guard let n = Int(args[3]), n > 0 else { fail("N must be a positive number, not \(args[3])") }
        let run = UUID().uuidString.prefix(8)
        for i in 0..<n {
            _ = try catalog.enqueue(JobSpec(.verify(rule: "bench")), itemID: nil, dedupeKey: "bench:\(run):\(i)")
        }
    case "claims-work":
        var done = 0
        while let job = try catalog.claimJob(kinds: [.verify], owner: "bench:\(args[3]):\(getpid())", lease: 60, now: Date()) {
            try catalog.completeJob(job.id, owner: "bench:\(args[3]):\(getpid())", transition: nil)
            done += 1
        }
        print(done)
    default:
        fail("unknown command \(args[1])")
    }
} catch {
    fail("\(error)")
}
