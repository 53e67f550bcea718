# pg_lease: a PGXS Makefile for extension users, plus the project's own
# targets (render, test, golden files).
#
#   make                      render the extension into build/
#   make install              install it into the PostgreSQL that pg_config names
#   make installcheck         run the regress and isolation suites against a
#                             running server (PGHOST, PGPORT, PGUSER as usual)
#   make test                 everything CI runs: installs what is missing
#                             (packages, Docker engine, local images), then the
#                             Go tests, then both suites of every version in
#                             Docker on a sample of the majors (MATRIX_SAMPLE;
#                             make matrix: every supported major)
#   make images               build the local images pglease/postgres:N,
#                             pglease/el9:N and pglease/debian:N of every major
#   make soak [DURATION=10m]  the stress test with its history checker
#   make fuzz [FUZZTIME=30000x] fuzz every argument against a live server (calls, or a duration)
#   make bench                pg_lease against a floor and peers; writes
#                             bench/results/latest.{md,png} (about 10 minutes)
#   make bench-profile        perf: where a backend's CPU time goes, pg_lease
#                             against the floor (bench/results/profile.md)
#   make bench-ab BASE=REV    this tree's pg_lease against commit REV's
#   make bench-ir BASE=REV    the same in instructions per operation (valgrind)
#   make bench-client         the Go client's cycles against bare SQL
#   make bench-client-ir      the same in instructions per cycle (valgrind)
#   make soak-storage         lease.leases over 10,000,000 cycles on 1,000 and
#                             100,000 names, sampled every 500,000 (SOAK_CYCLES)
#   make failover-ci          the fault tests (internal/faults), short, on
#                             this machine's PostgreSQL; make test runs it
#   make failover             the same, longer, in the Debian images of
#                             15, 17, 18 and 19 (FAILOVER_DURATION=20s)
#   make upgrade-ci           pg_upgradecluster from 18 to 19 in the Debian
#                             image that offers both; make test runs it
#   make rpm-proof            build the RPMs, dnf install them on each major,
#                             run both suites, dnf remove
#   make autopkgtest          Debian's autopkgtest on 15, 17, 18 and 19
#   make deb-build            a plain dpkg-buildpackage -b -us -uc of the
#                             tarball (both suites at build time) in the
#                             Debian build images of 17, 18 and 19
#   make deb-proof            the same with the debs and apt-get on Debian
#   make lint-ci              actionlint (with shellcheck) on the CI pipeline
#   make arm64-ci             the bounded arm64 check make test runs, under
#                             qemu: both suites and the dnf install proof on
#                             PostgreSQL $(ARM64_CI_PG) in arm64 containers
#   make matrix-arm64         all of it on arm64: images, both suites, the dnf
#                             and apt proofs on every major arm64 has (15 and up)
#   make docker               install and start a Docker engine if none answers
#   make results              copy the last suite results over the expected
#                             files, for a human to review with git diff

GO ?= go
PG_CONFIG ?= pg_config
BUILD := build
RESULTS := $(BUILD)/results
.DEFAULT_GOAL := all

# The facts (name, version, supported majors) come from the model in Go,
# rendered into build/pglease.mk; nothing here states them again.
include $(BUILD)/pglease.mk

$(BUILD)/pglease.mk: $(shell find templates control internal cmd -type f 2>/dev/null) embed.go go.mod
	$(GO) run ./cmd/pglease-gen render --out $(BUILD)

DATA = $(addprefix $(BUILD)/,$(EXTSCRIPTS)) $(BUILD)/$(EXTCONTROL)
MODULEDIR = extension
REGRESS = $(sort $(basename $(notdir $(wildcard regress/sql/*.sql))))
REGRESS_OPTS = --inputdir=regress --outputdir=$(RESULTS)/regress
ISOLATION = $(sort $(basename $(notdir $(wildcard isolation/specs/*.spec))))
ISOLATION_OPTS = --inputdir=isolation --outputdir=$(RESULTS)/isolation
NO_LOCALE = 1
# pg_regress makes only the last directory of --outputdir: PGXS's
# installcheck makes REGRESS_PREP first
REGRESS_PREP = $(RESULTS)/regress $(RESULTS)/isolation
$(RESULTS)/regress $(RESULTS)/isolation:
	@mkdir -p $@
EXTRA_CLEAN = $(BUILD) dist

PG_VERSION := $(shell $(PG_CONFIG) --version 2>/dev/null)
ifeq ($(PG_VERSION),)
# `make test` and `make deps` install PostgreSQL first, the Docker targets do
# not need it; everything else needs it now.
ifneq ($(filter-out test deps docker images matrix signed-dist lint-ci rpm-proof deb-proof arm64-ci matrix-arm64 fuzz bench bench-quick bench-profile bench-ab bench-ir bench-client bench-client-ir autopkgtest lintian deb-build client-majors soak-storage failover upgrade-ci,$(or $(MAKECMDGOALS),all)),)
$(error cannot run $(PG_CONFIG): install PostgreSQL (make deps does, on Debian) or set PG_CONFIG=/path/to/pg_config)
endif
else
# the major: the leading digits of the version (17.12, 19rc1, 19beta2, 19devel)
PG_MAJOR := $(shell expr '$(word 2,$(PG_VERSION))' : '\([0-9]*\)')
# (checked once build/pglease.mk exists; make re-reads this file after making it)
ifdef PG_MIN_MAJOR
ifneq ($(shell test "$(PG_MAJOR)" -ge "$(PG_MIN_MAJOR)" 2>/dev/null && echo ok),ok)
$(error $(EXT_NAME) needs PostgreSQL $(PG_MIN_MAJOR) or newer; $(PG_CONFIG) is "$(PG_VERSION)")
endif
endif
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)
endif

all: $(DATA)
$(DATA): $(BUILD)/pglease.mk

.PHONY: test deps docker images lint-ci go-test failover-ci lanes upgrade-ci failover ha matrix overlap signed-dist rpm-proof deb-proof soak soak-storage stress-ci fuzz bench bench-quick bench-profile bench-ab bench-ir bench-client bench-client-ir autopkgtest deb-build client-majors suites results arm64-ci matrix-arm64

# The images `make test` runs the suites in: the local stand-ins, since this
# machine cannot pull. Elsewhere `make matrix PGLEASE_IMAGE=postgres` uses
# the official images.
PGLEASE_IMAGE ?= pglease/postgres
PG ?= all

# Installs what the tests need (idempotent), then runs them, and checks
# that no test wrote into the host's PGDG or package directories (rpmlint
# unpacking a package with absolute payload names once did).
HOST_PATHS = /usr/pgsql-* /usr/share/doc/pg_lease* /usr/share/licenses/pg_lease*
test: deps images
	@mkdir -p $(BUILD) && ls -d $(HOST_PATHS) > $(BUILD)/host-before.txt 2>/dev/null || true
	$(MAKE) lint-ci go-test signed-dist GO_TEST_SKIP='$(GO_TEST_SKIP_IN_TEST)'
	$(MAKE) lanes DIST_READY=1 PROMOTION_MAJORS="$(PROMOTION_SAMPLE)" FUZZTIME=15000x MATRIX_PG="$(MATRIX_SAMPLE)" MATRIX_NEWEST_PG="$(MATRIX_NEWEST_SAMPLE)" RPM_PROOF_PG="$(RPM_PROOF_SAMPLE)" DEB_PROOF_PG="$(DEB_PROOF_SAMPLE)" BENCH_QUICK_PHASE=200ms
	@ls -d $(HOST_PATHS) > $(BUILD)/host-after.txt 2>/dev/null || true
	@diff $(BUILD)/host-before.txt $(BUILD)/host-after.txt >/dev/null || { echo "make test wrote outside its temporary directories:" >&2; diff $(BUILD)/host-before.txt $(BUILD)/host-after.txt >&2; exit 1; }

deps:
	bash .ci/deps.sh

docker:
	bash .ci/docker.sh

images: docker
	$(GO) run ./cmd/pglease-gen images --pg $(PG)

# The CI pipeline users' CI runs (.github/workflows), linted by actionlint
# (pinned as a tool in go.mod; it runs shellcheck on the scripts).
lint-ci:
	$(GO) tool actionlint

# The fault tests run on their own (failover-ci), not beside the other
# packages' tests: their servers do real work on both sides of a fault.
# The bench module (embedded etcd, plotting: long to compile on a cold
# build cache) is vetted and tested beside the main module's tests, which
# wait on servers and containers more than on the CPU.
# Every package has an explicit timeout, wide beside its idle time (the
# longest, internal/clienttest, takes about 3.5 min idle): a CI runner is
# rarely idle, and go test's default of 10 min failed four packages once on
# a machine with a load of 6-13 on its 2 cores.
GO_TEST_TIMEOUT ?= 40m
# Packages tested at once: three, on 2 cores, since most of their time
# goes to waiting on servers, containers and package tools (go test's
# default, the core count, left the machine half idle).
GO_TEST_P ?= 3
# What make test leaves to its lanes: TestSignedInstalls (dnf with
# gpgcheck=1 and repo_gpgcheck=1, apt checking the suite's signature, both
# suites) is what rpm-proof and deb-proof do with the same signed build, on
# more majors; TestSuitesPassInContainer (the newest version's suites and
# the update check on 16, in its image) is what the matrix sample does on
# 16 and 18 through the same runner. make go-test alone runs them (2.5 and
# 1 min of the Go tests' 12).
GO_TEST_SKIP_IN_TEST = TestSignedInstalls|TestSuitesPassInContainer
GO_TEST_SKIP ?=
go-test:
	$(GO) vet ./...
	@mkdir -p $(BUILD)
	@echo "cd bench && $(GO) vet ./... && $(GO) test -count=1 -timeout $(GO_TEST_TIMEOUT) ./... (beside the next step; its output follows it)"
	@(cd bench && $(GO) vet ./... && $(GO) test -count=1 -timeout $(GO_TEST_TIMEOUT) ./...) > $(BUILD)/go-test-bench.log 2>&1 & bench=$$!; \
	  echo '$(GO) test -count=1 -p $(GO_TEST_P) -timeout $(GO_TEST_TIMEOUT)$(if $(GO_TEST_SKIP), -skip '"'"'$(GO_TEST_SKIP)'"'"') $$($(GO) list ./... | grep -v /internal/faults$$)'; \
	  $(GO) test -count=1 -p $(GO_TEST_P) -timeout $(GO_TEST_TIMEOUT) $(if $(GO_TEST_SKIP),-skip '$(GO_TEST_SKIP)') $$($(GO) list ./... | grep -v /internal/faults$$); status=$$?; \
	  wait $$bench; bstatus=$$?; cat $(BUILD)/go-test-bench.log; \
	  test $$status -eq 0 && test $$bstatus -eq 0
	cd lease && $(GO) vet ./... && $(GO) test -count=1 -timeout $(GO_TEST_TIMEOUT) ./...

# Fault injection (internal/faults): every scenario with the newest version and the
# variants that lack what it tests, over real servers on unix sockets.
# failover-ci is make test's short run on this machine's PostgreSQL;
# make failover runs longer on each major whose Debian image carries
# pg_basebackup and pg_dump (the npm builds of 14 and 16 do not), the
# test binary inside the image's container (network none; --init reaps
# the killed servers, which a test binary as PID 1 would leave as zombies
# holding their postmaster.pid).
FAULTS_DURATION ?= 2500ms
failover-ci:
	@mkdir -p $(BUILD)
	@PG_CONFIG=$(PG_CONFIG) $(GO) test -v -count=1 -timeout 30m -run TestScenarios ./internal/faults -args -faults.short -faults.duration=$(FAULTS_DURATION) > $(BUILD)/faults.log 2>&1; \
	  status=$$?; grep -E '^(--- |    faults_test|ok|FAIL|PASS)' $(BUILD)/faults.log | sed 's/    faults_test.go:[0-9]*: //'; exit $$status
# After the Go tests, which run alone (their fault and timing tests share
# the machine only with each other), make test runs two lanes side by
# side: the install proofs, the matrix sample, the stress test and the
# quick benchmark (MAIN_LANE), beside the fault tests, the arm64 check and
# the fuzzer (SIDE_LANE; the fuzzer last, once the fault tests are done). Most of what either lane does waits on
# Docker, dnf, apt, fsync and servers: one after the other they left the
# 2 cores three quarters idle (29 minutes of wall time for 13 of CPU,
# idle). The fault tests count each scenario's traffic on the server that
# took over, so a load that starves them fails them rather than passing
# them empty (beside the Go tests as well, they did: the split brain
# through the client got no grant on the new primary). The side lane's
# output follows the main lane's (in build/side-lane.out meanwhile).
MAIN_LANE = rpm-proof deb-proof matrix stress-ci bench-quick
SIDE_LANE = failover-ci promotion-ci upgrade-ci arm64-ci fuzz
lanes:
	@mkdir -p $(BUILD)
	@echo "$(SIDE_LANE) beside $(MAIN_LANE) (their output follows)"
	@$(MAKE) --no-print-directory $(SIDE_LANE) > $(BUILD)/side-lane.out 2>&1 & side=$$!; \
	  $(MAKE) --no-print-directory $(MAIN_LANE); status=$$?; \
	  wait $$side; sstatus=$$?; echo "== $(SIDE_LANE)"; cat $(BUILD)/side-lane.out; \
	  test $$status -eq 0 && test $$sstatus -eq 0

# A real promotion on every major, in its local image (the npm builds of
# 14 and 16 have no pg_basebackup: their standby is a cold copy), after
# which the era must be timeline 2's: how each major tells pg_lease its
# timeline and system identifier, proven (make test; a few seconds each).
# make test's sample: the oldest major (the pinned build), Debian 13's and
# the newest (experimental's); make promotion-ci alone runs every major.
PROMOTION_SAMPLE ?= 14 17 19
promotion-ci: docker images
	@mkdir -p $(BUILD)
	CGO_ENABLED=0 $(GO) test -c -o $(BUILD)/faults.test ./internal/faults
	@for m in $(or $(PROMOTION_MAJORS),$$($(GO) run ./cmd/pglease-gen version --majors | tr -d '[]' | tr ',' ' ')); do \
	  docker run --rm --init --network none -v $(CURDIR)/$(BUILD)/faults.test:/faults.test:ro -e PG_MAJOR=$$m $(PGLEASE_IMAGE):$$m \
	    /faults.test -test.v -test.count=1 -test.run 'TestEraAfterPromotion|TestPgUpgrade' > $(BUILD)/promotion-$$m.log 2>&1; status=$$?; \
	  grep -E 'promotion_test|pgupgrade_test|^(--- |ok|FAIL)' $(BUILD)/promotion-$$m.log; \
	  [ $$status -eq 0 ] || { cat $(BUILD)/promotion-$$m.log; exit $$status; }; \
	done
# pg_upgradecluster from one major to the next, as Debian users move, in
# the Debian image whose repository offers both (pglease/debian:19 offers
# sid's 18 beside experimental's 19): leases held across it go on with
# their epochs and new grants lie above them, and 0.3.0 is rescued by
# ALTER EXTENSION UPDATE (make test; about 30 s).
UPGRADE_MAJOR ?= 19
upgrade-ci: docker images
	@mkdir -p $(BUILD)
	CGO_ENABLED=0 $(GO) test -c -o $(BUILD)/faults.test ./internal/faults
	@docker run --rm --init --network none -v $(CURDIR)/$(BUILD)/faults.test:/faults.test:ro pglease/debian:$(UPGRADE_MAJOR) \
	    /faults.test -test.v -test.count=1 -test.run TestPgUpgradecluster -faults.upgradecluster=$(UPGRADE_MAJOR) > $(BUILD)/upgrade.log 2>&1; status=$$?; \
	  grep -E 'pgupgrade_test|^(--- |ok|FAIL)' $(BUILD)/upgrade.log; \
	  [ $$status -eq 0 ] || { cat $(BUILD)/upgrade.log; exit $$status; }
FAILOVER_DURATION ?= 20s
FAILOVER_MAJORS ?= 15 17 18 19
failover: docker images
	@mkdir -p $(BUILD)
	CGO_ENABLED=0 $(GO) test -c -o $(BUILD)/faults.test ./internal/faults
	@for m in $(FAILOVER_MAJORS); do \
	  echo "== PostgreSQL $$m"; \
	  docker run --rm --init --network none -v $(CURDIR)/$(BUILD)/faults.test:/faults.test:ro \
	    -e PG_CONFIG=/usr/lib/postgresql/$$m/bin/pg_config $(PGLEASE_IMAGE):$$m \
	    /faults.test -test.v -test.count=1 -test.timeout=60m -test.run TestScenarios -faults.duration=$(FAILOVER_DURATION) -faults.ha=false \
	    > $(BUILD)/faults-$$m.log 2>&1; status=$$?; \
	  grep -E '^(--- |    faults_test|ok|FAIL|PASS)' $(BUILD)/faults-$$m.log | sed 's/    faults_test.go:[0-9]*: //'; \
	  [ $$status -eq 0 ] || exit $$status; \
	done

# The HA manager's fault (patroni-failover) with every variant, on this
# machine's PostgreSQL 15 with Debian's Patroni and etcd (make test runs
# it with 0.4.0 and 0.2.0; make failover's images carry no Patroni).
ha:
	@mkdir -p $(BUILD)
	@PG_CONFIG=$(PG_CONFIG) $(GO) test -v -count=1 -timeout 30m -run TestScenarios ./internal/faults -args -faults.only=patroni -faults.duration=$(FAILOVER_DURATION) > $(BUILD)/faults-ha.log 2>&1; \
	  status=$$?; grep -E '^(--- |    faults_test|ok|FAIL|PASS)' $(BUILD)/faults-ha.log | sed 's/    faults_test.go:[0-9]*: //'; exit $$status

# make test's sample of the matrix (make matrix alone takes every major,
# every version): every version's suites and updates on the oldest and
# the newest major, the newest version's on the two majors no install
# proof of make test runs (16, 18); 15 and 17 run the newest version's
# suites in the deb and RPM proofs, and 15 every version's in the Go
# tests' local suites.
MATRIX_SAMPLE ?= 14,19
MATRIX_NEWEST_SAMPLE ?= 16,18
MATRIX_PG ?= $(PG)
MATRIX_NEWEST_PG ?=
matrix:
	$(GO) run ./cmd/pglease-gen test --pg $(MATRIX_PG) --image $(PGLEASE_IMAGE) --results $(RESULTS) --junit $(BUILD)/junit.xml
	$(if $(MATRIX_NEWEST_PG),$(GO) run ./cmd/pglease-gen test --pg $(MATRIX_NEWEST_PG) --image $(PGLEASE_IMAGE) --versions newest --results $(RESULTS)-newest --junit $(BUILD)/junit-newest.xml)

# The stress test with its history checker, for a long time.
DURATION ?= 10m
soak:
	$(GO) run ./cmd/pglease-gen stress --duration $(DURATION) --pg-config $(PG_CONFIG)

# The bounded versions CI runs: one minute of stress, thirty seconds of it
# through PgBouncer in transaction pooling, and a count of fuzzed calls.
stress-ci:
	$(GO) run ./cmd/pglease-gen stress --duration 30s --pg-config $(PG_CONFIG)
	$(GO) run ./cmd/pglease-gen stress --via-pgbouncer --duration 15s --pg-config $(PG_CONFIG)

# A count, not a duration: a duration-bounded run can fail at its deadline
# with a bare "context deadline exceeded" when a worker is busy (a race in
# Go's fuzz coordinator, go.dev/issue/75804, fixed in Go 1.27; seen here in
# CI). 30000 calls take about 15 s here, 25 s in CI under load.
FUZZTIME ?= 30000x
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzCall -fuzztime $(FUZZTIME) ./internal/safety

# The one-clock proof of 0.5.0's grace (internal/safety), every fault with
# 0.5.0 and every broken variant; make test runs a sample of it.
overlap:
	$(GO) test -count=1 -v -timeout 30m -run TestHoldersNeverOverlap ./internal/safety -args -overlap.all

# Benchmarks (bench/ is its own module, so that the peers' dependencies stay
# out of this one). bench-quick is the smoke run CI does; it asserts no timing.
bench:
	cd bench && PG_CONFIG=$(PG_CONFIG) $(GO) run . -out results

# lease.leases under a long churn (issue 17): 10,000,000 acquire/release
# cycles on 1,000 names, then on 100,000, the table sampled every 500,000
# cycles (bench/results/soak-NAMES/soak.md and soak.png). About 30 minutes
# each on 2 CPUs.
SOAK_CYCLES ?= 10000000
soak-storage:
	cd bench && PG_CONFIG=$(PG_CONFIG) $(GO) run . -only soak -soak $(SOAK_CYCLES) -soak-names 1000 -out results/soak-1000
	cd bench && PG_CONFIG=$(PG_CONFIG) $(GO) run . -only soak -soak $(SOAK_CYCLES) -soak-names 100000 -out results/soak-100000

BENCH_QUICK_PHASE ?= 400ms
bench-quick:
	cd bench && PG_CONFIG=$(PG_CONFIG) $(GO) run . -quick -phase $(BENCH_QUICK_PHASE) -out ../$(BUILD)/bench-quick

# Where a backend's CPU time goes, pg_lease against the floor, on PostgreSQL
# 15 and 18 (perf, as root; bench/results/profile.md).
bench-profile:
	cd bench && PG_CONFIG=$(PG_CONFIG) $(GO) run . -only profile -majors 15,18 -phase 12s -out results

# What a change to the extension buys: this tree's pg_lease against the
# newest install script of commit BASE, in one server, in alternating pairs.
AB_MAJOR ?= 15
# Rounds of alternating pairs, and each phase's length: on this machine
# (2 cores shared with the clients) a 2 s phase reads its flushes' luck
# as much as the code (identical scripts move by 10 % a round), 5 s ones
# about half as much. BENCH_AB_ONLY=<part of a workload's name> runs the
# workloads that match (BENCH_IR_ONLY, the same for bench-ir).
AB_ROUNDS ?= 8
AB_PHASE ?= 5s
bench-ab:
	@test -n "$(BASE)" || { echo "usage: make bench-ab BASE=<commit> [AB_MAJOR=15]" >&2; exit 2; }
	rm -rf $(BUILD)/ab && mkdir -p $(BUILD)/ab/src
	git archive $(BASE) | tar -x -C $(BUILD)/ab/src
	cd $(BUILD)/ab/src && $(GO) run ./cmd/pglease-gen render --out ../out
	@# the baseline's own newest version (BASE may be an older release)
	cd bench && PG_CONFIG=$(PG_CONFIG) $(GO) run . -only ab -baseline ../$(BUILD)/ab/out/$(EXT_NAME)--$$(sed -n 's/^EXTVERSION = //p' ../$(BUILD)/ab/out/pglease.mk).sql -majors $(AB_MAJOR) -rounds $(AB_ROUNDS) -phase $(AB_PHASE)

# The same comparison in instructions per operation (valgrind; a count
# that the machine's drift does not move): make bench-ir BASE=REV.
bench-ir:
	@test -n "$(BASE)" || { echo "usage: make bench-ir BASE=<commit> [AB_MAJOR=15]" >&2; exit 2; }
	@command -v valgrind >/dev/null || { echo "bench-ir needs valgrind: apt-get install valgrind" >&2; exit 2; }
	rm -rf $(BUILD)/ab && mkdir -p $(BUILD)/ab/src
	git archive $(BASE) | tar -x -C $(BUILD)/ab/src
	cd $(BUILD)/ab/src && $(GO) run ./cmd/pglease-gen render --out ../out
	cd bench && PG_CONFIG=$(PG_CONFIG) $(GO) run . -only ir -baseline ../$(BUILD)/ab/out/$(EXT_NAME)--$$(sed -n 's/^EXTVERSION = //p' ../$(BUILD)/ab/out/pglease.mk).sql -majors $(AB_MAJOR)

# The Go client's cycles against the same calls as bare SQL, in one run
# (alternating pairs): what the client adds to each cycle.
bench-client:
	cd bench && PG_CONFIG=$(PG_CONFIG) $(GO) run . -only client -majors $(AB_MAJOR) -rounds 10 -phase 3s

# The same in instructions (valgrind): the client's process and bare
# SQL's per cycle, and the server's, so the client's share of a cycle.
bench-client-ir:
	@command -v valgrind >/dev/null || { echo "bench-client-ir needs valgrind: apt-get install valgrind" >&2; exit 2; }
	cd bench && PG_CONFIG=$(PG_CONFIG) $(GO) run . -only client-ir -majors $(AB_MAJOR)

# lintian on every major's deb of every release (make test lints a sample
# with each release and each major in it).
lintian:
	$(GO) test -count=1 -run '^TestLintian$$' ./internal/deb -args -deb.lintian-all

# Debian's autopkgtest (the tarball's debian/tests) on the package of each
# major Debian ships, in its local Debian image; make test runs 15.
AUTOPKGTEST_MAJORS ?= 15,17,18,19
autopkgtest: docker images
	$(GO) test -count=1 -v -timeout 30m -run TestAutopkgtest ./internal/deb -args -deb.autopkgtest=$(AUTOPKGTEST_MAJORS)

# The source package built as a Debian packager builds it, with its tests,
# in the Debian release of each major Debian ships beyond this host's 15
# (make test builds it on this host: TestSourcePackage). Its images carry
# the build dependencies (clang and llvm with the server-dev packages), so
# only this target builds them.
DEB_BUILD_MAJORS ?= 17,18,19
deb-build: docker
	$(GO) run ./cmd/pglease-gen images --pg $(DEB_BUILD_MAJORS) --deb-build
	$(GO) test -count=1 -v -timeout 45m -run TestSourcePackageInImages ./internal/deb -args -deb.build=$(DEB_BUILD_MAJORS)

# The Go client's tests (internal/clienttest) on the pinned server build of
# each major; make test runs them on this machine's PostgreSQL 15.
CLIENT_MAJORS ?= 14 16 17 18
# and in the Debian image of the majors the npm registry has no build of
CLIENT_IMAGE_MAJORS ?= 19
client-majors: docker images
	@mkdir -p $(BUILD)
	@for m in $(CLIENT_MAJORS); do echo "== PostgreSQL $$m"; \
	  $(GO) test -count=1 -v -timeout 10m -skip TestPatroniFailover ./internal/clienttest -args -clienttest.major=$$m > $(BUILD)/client-$$m.log 2>&1; status=$$?; \
	  grep -E '^(--- |ok|FAIL|PASS|    client_test)' $(BUILD)/client-$$m.log; [ $$status -eq 0 ] || exit $$status; done
	CGO_ENABLED=0 $(GO) test -c -o $(BUILD)/clienttest.test ./internal/clienttest
	@for m in $(CLIENT_IMAGE_MAJORS); do echo "== PostgreSQL $$m (Debian's, in $(PGLEASE_IMAGE):$$m)"; \
	  docker run --rm --init --network none -v $(CURDIR)/$(BUILD)/clienttest.test:/clienttest.test:ro \
	    -e PG_CONFIG=/usr/lib/postgresql/$$m/bin/pg_config $(PGLEASE_IMAGE):$$m \
	    /clienttest.test -test.v -test.count=1 -test.timeout=10m -test.skip TestPatroniFailover > $(BUILD)/client-$$m.log 2>&1; status=$$?; \
	  grep -E '^(--- |ok|FAIL|PASS|    client_test)' $(BUILD)/client-$$m.log; [ $$status -eq 0 ] || exit $$status; done

# The proofs install a build signed with a key made for the tests (never
# committed; kept in build/), so dnf runs with gpgcheck=1 and
# repo_gpgcheck=1 and apt with Signed-By.
SIGN_KEY := $(BUILD)/test-signing-key.asc
$(SIGN_KEY):
	@mkdir -p $(BUILD)
	$(GO) run ./cmd/pglease-gen keygen --out $@ --name "pg_lease test packages"
# (DIST_READY: built already, by make test before its lanes, which
# must not build it at once)
signed-dist: $(SIGN_KEY)
	$(if $(DIST_READY),@echo "$(BUILD)/dist: built before the lanes",$(GO) run ./cmd/pglease-gen build --out $(BUILD)/dist --sign-key $(SIGN_KEY))

# The packages as users get them: pglease-gen build, then on each major's
# EL9 stand-in `dnf install -y pg_lease_N`, both suites, `dnf remove`.
# The proofs run the newest version's suites and the update check on the
# packaged scripts (--versions newest): every version's suites run in
# matrix, from the same rendered files.
PROOF_VERSIONS ?= newest
# EL8 and EL10 are trees of the same build on the same stand-in, installed
# with dnf --releasever through the host's .repo form: make test proves
# them on one major each (make distro-proofs on all of theirs).
EL_SAMPLE_PG ?= 17
# make test's samples of the install proofs (make rpm-proof and make
# deb-proof alone take every major): the oldest and the newest major on
# the EL9 stand-in (17 on EL8's and EL10's trees), and for the debs one
# image of each Debian release (15 bookworm's own, 17 trixie's, 19 sid's
# with experimental's).
RPM_PROOF_SAMPLE ?= 14,19
DEB_PROOF_SAMPLE ?= 15,17,19
RPM_PROOF_PG ?= $(PG)
DEB_PROOF_PG ?= $(PG)
rpm-proof: signed-dist
	$(GO) run ./cmd/pglease-gen test --pg $(RPM_PROOF_PG) --rpm $(BUILD)/dist --versions $(PROOF_VERSIONS) --results $(BUILD)/results-rpm --junit $(BUILD)/junit-rpm.xml
	$(GO) run ./cmd/pglease-gen test --pg $(EL_SAMPLE_PG) --rpm $(BUILD)/dist --distro el8 --versions newest --results $(BUILD)/results-rpm-el8 --junit $(BUILD)/junit-rpm-el8.xml
	$(GO) run ./cmd/pglease-gen test --pg $(EL_SAMPLE_PG) --rpm $(BUILD)/dist --distro el10 --versions newest --results $(BUILD)/results-rpm-el10 --junit $(BUILD)/junit-rpm-el10.xml

distro-proofs: signed-dist
	$(GO) run ./cmd/pglease-gen test --pg all --rpm $(BUILD)/dist --distro el8 --versions newest --results $(BUILD)/results-rpm-el8 --junit $(BUILD)/junit-rpm-el8.xml
	$(GO) run ./cmd/pglease-gen test --pg all --rpm $(BUILD)/dist --distro el10 --versions newest --results $(BUILD)/results-rpm-el10 --junit $(BUILD)/junit-rpm-el10.xml

# The debs as users get them: on each major's Debian image (Debian's own
# postgresql-15, -17, -18, -19; stand-ins of the pinned builds for 14 and
# 16) `apt-get install -y postgresql-N-pg-lease` from the suite of the
# image's release (bookworm for 14-16, trixie for 17, and for sid's 18 and
# 19 trixie's), the suite checked with the image's gpgv and sqv, both
# suites, `apt-get purge`.
deb-proof: signed-dist
	$(GO) run ./cmd/pglease-gen test --pg $(DEB_PROOF_PG) --deb $(BUILD)/dist --versions $(PROOF_VERSIONS) --results $(BUILD)/results-deb --junit $(BUILD)/junit-deb.xml

# arm64 under qemu's emulation. The bounded check takes one major whose
# arm64 images need only the one arm64 root file system (16 comes from the
# pinned npm build; 15, 17, 18 and 19 install Debian's own packages, emulated),
# and the newest version's suites (the scripts are pure SQL: the older
# versions' suites and the update check, which matrix runs on amd64, add
# nothing arm64-specific and took 3 of its 5 minutes under emulation).
ARM64_CI_PG ?= 16
arm64-ci: docker signed-dist
	$(GO) run ./cmd/pglease-gen images --arch arm64 --pg $(ARM64_CI_PG)
	$(GO) run ./cmd/pglease-gen test --arch arm64 --pg $(ARM64_CI_PG) --image $(PGLEASE_IMAGE) --versions newest --no-update-check --results $(BUILD)/results-arm64 --junit $(BUILD)/junit-arm64.xml
	$(GO) run ./cmd/pglease-gen test --arch arm64 --pg $(ARM64_CI_PG) --rpm $(BUILD)/dist --versions newest --no-update-check --results $(BUILD)/results-arm64-rpm --junit $(BUILD)/junit-arm64-rpm.xml

matrix-arm64: docker signed-dist
	$(GO) run ./cmd/pglease-gen images --arch arm64 --pg all
	$(GO) run ./cmd/pglease-gen test --arch arm64 --pg all --image $(PGLEASE_IMAGE) --results $(BUILD)/results-arm64 --junit $(BUILD)/junit-arm64.xml
	$(GO) run ./cmd/pglease-gen test --arch arm64 --pg all --rpm $(BUILD)/dist --versions $(PROOF_VERSIONS) --results $(BUILD)/results-arm64-rpm --junit $(BUILD)/junit-arm64-rpm.xml
	$(GO) run ./cmd/pglease-gen test --arch arm64 --pg all --deb $(BUILD)/dist --versions $(PROOF_VERSIONS) --results $(BUILD)/results-arm64-deb --junit $(BUILD)/junit-arm64-deb.xml

suites:
	$(GO) run ./cmd/pglease-gen test --local --pg-config $(PG_CONFIG) --results $(RESULTS)

results:
	@test -d $(RESULTS)/regress/results || { echo "no results in $(RESULTS): run make suites or make installcheck first (for a major of make matrix: make results RESULTS=build/results/pg17)" >&2; exit 1; }
	cp $(RESULTS)/regress/results/*.out regress/expected/
	@if [ -d $(RESULTS)/isolation/results ]; then cp $(RESULTS)/isolation/results/*.out isolation/expected/; fi
	@echo "copied; review with: git diff regress/expected isolation/expected"
