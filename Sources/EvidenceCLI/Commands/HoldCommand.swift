import ArgumentParser
import EvidenceCore
import EvidencePipeline
import EvidenceS3
import EvidenceStore
import Foundation

struct HoldCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hold",
        abstract: "Set or clear the S3 legal hold on an item's stored original.",
        discussion: Help.reflow("""
        With [store] kind = "s3" on a bucket with Object Lock, a legal hold keeps the item's
        object (its current version) from being deleted or overwritten until the hold is
        cleared, whatever its retention date. Without --on or --off, shows the hold. Every change
        is a custody event (legal-hold) of the item.

          evidence hold 12 --on
          evidence hold 3fa9c2 --off --json

        Exit codes: 0 done · 1 no such item, or the store refused · 2 usage error, or the store
        is local or its bucket has no Object Lock.
        """)
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("Item id, hash prefix or source path.", valueName: "item"))
    var item: String

    @Flag(name: .long, help: "Set the legal hold.")
    var on = false

    @Flag(name: .long, help: "Clear the legal hold.")
    var off = false

    func validate() throws {
        if on && off { throw ValidationError("--on and --off exclude each other") }
    }

    struct Answer: Encodable {
        var item: Int64
        var sha256: String
        var object: String
        var legalHold: Bool
        var changed: Bool
    }

    func run() throws {
        let home = try global.openHome(mustExist: true)
        guard let s3 = home.s3Store else {
            throw CLIError.usage("legal holds are an S3 Object Lock feature: this home's store is local (\(home.store.storeDescription)); "
                                 + "set [store] kind = \"s3\" on a bucket with Object Lock")
        }
        let state: S3ObjectStore.BucketState
        do { state = try s3.bucketState() } catch {
            Output.err(error.description)
            throw ExitCode(1)
        }
        guard state.objectLockEnabled else {
            throw CLIError.usage("s3://\(s3.settings.endpoint.bucket) has no Object Lock: a legal hold cannot be set on its objects "
                                 + "(Object Lock is enabled when a bucket is made)")
        }
        let it = try ItemResolver.resolve(item, in: home)
        do {
            let before = try s3.legalHold(it.sha256)
            var now = before
            if on || off {
                try s3.setLegalHold(it.sha256, on: on)
                now = try s3.legalHold(it.sha256)
                guard now == on else {
                    Output.err("\(s3.location(of: it.sha256)): the legal hold reads \(now ? "on" : "off") after setting it \(on ? "on" : "off")")
                    throw ExitCode(1)
                }
            }
            let answer = Answer(item: it.id, sha256: it.sha256.hex, object: s3.location(of: it.sha256), legalHold: now, changed: now != before)
            if answer.changed {
                // Who put or took off a hold, and when, is part of the item's custody.
                try home.catalog.appendEvent(itemID: it.id, kind: .legalHold, details: ["hold": now ? "on" : "off", "object": answer.object])
            }
            if global.json {
                Output.json(answer)
            } else {
                Output.line("item #\(it.id) \(answer.object): legal hold \(now ? "on" : "off")" + (on || off ? (answer.changed ? "" : " (unchanged)") : ""))
            }
        } catch let error as StoreError {
            Output.err(error.description)
            throw ExitCode(1)
        }
    }
}
