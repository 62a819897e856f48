# Cumulus — build, test and run on a Debian machine with only Swift installed.
# Every user-facing target depends on `deps`, which installs what is missing.

SWIFT      ?= swift
DEB_DEPS   := liblmdb-dev libzstd-dev pkg-config libsqlite3-dev zstd etcd-server etcd-client openssl \
              chromium chromium-driver python3-selenium
SUDO       := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)
DATA       ?= ./cumulus-data
CRASH_KILLS ?= 20
FUZZ_SECONDS ?= 60

.PHONY: all deps build test run bench cluster crash crash-soak fuzz fuzz-full clean

all: build

# Installs the Debian packages in $(1) that are missing; does nothing when all are present.
define install_missing
	@missing=""; \
	for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi
endef

## deps: install the Debian packages that are missing (nothing when all are present)
deps:
	$(call install_missing,$(DEB_DEPS))

## build: debug build of everything, tests included
build: deps
	$(SWIFT) build --build-tests

## test: every test, then a short crash-recovery run of the log
# Suites that measure the server's own timing (head, body and request timeouts;
# elections on 5 s leases) run by themselves after the rest. In one process with
# 600 other tests on two cores, a ready task can wait a minute for a thread, and
# they would measure the test runner's queue instead of the server.
TIMED_SUITES := SlowClientTests|ClusterElectionTests
test: build
	$(SWIFT) test --skip-build --disable-xctest --skip '$(TIMED_SUITES)'
	$(SWIFT) test --skip-build --disable-xctest --filter '$(TIMED_SUITES)'
	/usr/bin/python3 Tests/Browser/signin_test.py --cumulus .build/debug/cumulus --screenshots .build/browser
	/usr/bin/python3 Tests/Browser/console_test.py --cumulus .build/debug/cumulus --screenshots .build/browser
	/usr/bin/python3 Tests/Browser/records_test.py --cumulus .build/debug/cumulus --screenshots .build/browser
	$(SWIFT) run --skip-build cumulus-crash --kills $(CRASH_KILLS) --dir .build/crash-test

## run: start Cumulus on the embedded default data directory
run: build
	$(SWIFT) run --skip-build cumulus serve --dev --data $(DATA)

## cluster: etcd and three nodes on loopback (data under .cluster/), automatic failover;
##          prints how to reach them; Ctrl-C stops them
cluster: build
	Tools/Cluster/cluster.sh

## bench: release-build benchmarks, each figure beside its same-run baseline
##        (the `http` suite drives the server with wrk, installed here when missing;
##        the `replication` suite runs the release `cumulus` and etcd as processes;
##        with no BENCH_ARGS, `cumulus-allocations` then counts the read paths' allocations)
BENCH_DEB_DEPS := wrk
bench: deps
	$(call install_missing,$(BENCH_DEB_DEPS))
	$(SWIFT) build -c release --product cumulus
	$(SWIFT) build -c release --product cumulus-bench
	$(SWIFT) build -c release --product cumulus-allocations
	$(SWIFT) run -c release --skip-build cumulus-bench $(BENCH_ARGS)
	$(if $(BENCH_ARGS),,$(SWIFT) run -c release --skip-build cumulus-allocations)

## crash-soak: the long crash-recovery run (500 kills)
crash-soak: deps
	$(SWIFT) build -c release --product cumulus-crash
	$(SWIFT) run -c release --skip-build cumulus-crash --kills 500 --dir .build/crash-soak

## fuzz: coverage-guided fuzzing of every decoder of outside bytes (libFuzzer),
##       FUZZ_SECONDS per target (default 60); FUZZ_TARGETS to pick some
fuzz: deps
	SWIFT=$(SWIFT) FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_TARGETS="$(FUZZ_TARGETS)" Tools/Fuzz/fuzz.sh

## fuzz-full: the documented full run, a million executions of every target
##            (two to three hours; api-request alone runs at 250-1,300 a second,
##            as its corpus holds commits; each target capped at 90 minutes)
fuzz-full: deps
	SWIFT=$(SWIFT) FUZZ_RUNS=1000000 FUZZ_SECONDS=5400 FUZZ_TARGETS="$(FUZZ_TARGETS)" Tools/Fuzz/fuzz.sh

clean:
	$(SWIFT) package clean
	rm -rf .build .build-* .cumulus
