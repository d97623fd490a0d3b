# evidence — make demo runs the pipeline on embedded defaults; make test runs every test.
# Both install missing Debian packages first (scripts/deps.sh).
SWIFT ?= swift
SWIFTFLAGS ?=

.PHONY: deps build release test test-long soak fuzz demo bench samples clean

deps:
	@./scripts/deps.sh

build: deps
	$(SWIFT) build $(SWIFTFLAGS)

# The Swift runtime and Foundation linked statically: a smaller process (Package.swift says how much).
# Every function of ours and of the packages in a section of its own, so the link can place the
# ones hash, ingest and run use together (scripts/link-order.txt); without it only inlined copies
# had their own sections and the list moved whole files.
RELEASEFLAGS = -c release --static-swift-stdlib -Xswiftc -Xfrontend -Xswiftc -function-sections
# Only the programs: EvidenceTesting (test support) imports Testing, which a release build of
# every target cannot find ("no such module 'Testing'").
RELEASEPRODUCTS = evidence evidence-sandbox evidence-bench
release: deps
	@for product in $(RELEASEPRODUCTS); do $(SWIFT) build $(RELEASEFLAGS) $(SWIFTFLAGS) --product $$product || exit 1; done

# Swift Testing only: --disable-xctest keeps XCTest from printing "Executed 0 tests".
# Four passes, one after another (scripts/test.sh says why): local (store, catalog, config,
# certificate, media, fuzz corpus replay), services (HTTP, notaries, sandbox, providers,
# metrics, portal), watch (inotify, job leases) and cli (end-to-end processes, but for the long
# runs of make test-long). Every pass runs
# even after a failure; the failures are repeated last, and logs are in .build/test-logs/.
test: deps
	@SWIFT=$(SWIFT) ./scripts/test.sh $(SWIFTFLAGS)

# The long end-to-end runs the cli pass skips (suites named …LongTests: crash loops, the fault
# soak, 1,000-file bursts, the 250-item descriptor count, 110 MB syncs). CI runs both.
test-long: deps
	@SWIFT=$(SWIFT) ./scripts/test.sh --long $(SWIFTFLAGS)

# The long crash loop (500 files, 20 SIGKILLs) and fault soak (40 files) of SoakLongTests, with
# a table: files, kills, faults injected, lost, duplicates, requests inside Retry-After, time.
# SOAK_FILES, SOAK_KILLS, SOAK_FAULT_FILES, SOAK_PROVIDERS ("dropbox box"), SOAK_SEED change it.
soak: deps
	@./scripts/soak.sh $(SWIFTFLAGS)

# libFuzzer on every parser we own (Fuzz/, its own package: never part of build or test), each
# target for FUZZ_SECONDS (default 60); a table of runs and crashes, exit 1 on any crash.
# FUZZ_SCRATCH= moves its build folder; `make fuzz FUZZ_TARGETS="config qed"` runs a few.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=
fuzz: deps
	@FUZZ_SECONDS=$(FUZZ_SECONDS) ./scripts/fuzz.sh $(FUZZ_TARGETS)

# PROVIDER=local (default) | dropbox | box | sharefile | owncloud: where the demo archives.
PROVIDER ?= local
# CLUSTER=2: two nodes on one PostgreSQL catalog (scripts/demo-cluster.sh).
CLUSTER ?= 1
demo: build
	@if [ "$(CLUSTER)" = 2 ]; then ./scripts/demo-cluster.sh "$$($(SWIFT) build $(SWIFTFLAGS) --show-bin-path)/evidence"; \
	elif [ "$(CLUSTER)" = 1 ]; then ./scripts/demo.sh "$$($(SWIFT) build $(SWIFTFLAGS) --show-bin-path)/evidence" $(PROVIDER); \
	else echo "make demo: CLUSTER is 1 (one host) or 2 (two nodes), not $(CLUSTER)"; exit 2; fi

# bench.sh: one host (hash, ingest, RSS, run, WebDAV upload, a shaped link); bench-cluster.sh: job
# claims on SQLite vs PostgreSQL and the whole pipeline on one and two nodes; bench-pipeline.sh:
# the pipeline users run (QED + TSA, certificates, archive), stage by stage, CPU per process.
bench: release
	@./scripts/bench.sh "$$($(SWIFT) build $(RELEASEFLAGS) $(SWIFTFLAGS) --show-bin-path)/evidence"
	@./scripts/bench-cluster.sh "$$($(SWIFT) build $(RELEASEFLAGS) $(SWIFTFLAGS) --show-bin-path)"
	@./scripts/bench-pipeline.sh "$$($(SWIFT) build $(RELEASEFLAGS) $(SWIFTFLAGS) --show-bin-path)"

samples: deps
	./scripts/make-samples.sh samples

clean:
	rm -rf .build Fuzz/.build
