# evidence — make demo runs the pipeline on embedded defaults; make test runs every test.
# Both install missing Debian packages first (scripts/deps.sh).
SWIFT ?= swift
SWIFTFLAGS ?=

.PHONY: deps build release test demo bench samples clean

deps:
	@./scripts/deps.sh

build: deps
	$(SWIFT) build $(SWIFTFLAGS)

release: deps
	$(SWIFT) build -c release $(SWIFTFLAGS)

# Swift Testing only: --disable-xctest keeps XCTest from printing "Executed 0 tests".
test: deps
	$(SWIFT) build $(SWIFTFLAGS)
	$(SWIFT) test --disable-xctest $(SWIFTFLAGS)

demo: build
	@./scripts/demo.sh "$$($(SWIFT) build $(SWIFTFLAGS) --show-bin-path)/evidence"

bench: release
	@./scripts/bench.sh "$$($(SWIFT) build -c release $(SWIFTFLAGS) --show-bin-path)/evidence"

samples: deps
	./scripts/make-samples.sh samples

clean:
	rm -rf .build
