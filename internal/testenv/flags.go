package testenv

import (
	"flag"
	"time"
)

// The tests' own flags, all of them. Without any, a test runs make test's
// share; the Makefile's named targets set them for the rest (`go test
// ./internal/faults -args -faults.only=patroni`, say). Flags are read
// after flag.Parse, inside a test.
var (
	// Update rewrites what the package's tests compare with from today's
	// source of truth, instead of comparing: the golden files
	// (internal/render, internal/rpm, internal/cli's help), and the
	// generated parts of the docs (internal/cli: CHANGELOG.md, the names
	// of the current version, docs/reference.md's signatures and
	// comments, the README quickstart's output from a real server).
	// Review the diff before committing it.
	Update = flag.Bool("update", false, "rewrite the golden files and the docs' generated parts from today's output (then review the diff)")

	// internal/faults
	FaultsOnly     = flag.String("faults.only", "", "TestScenarios: run only the scenarios whose names contain this")
	FaultsDuration = flag.Duration("faults.duration", 4*time.Second, "TestScenarios: each run's length; the fault comes at half of it")
	FaultsHA       = flag.Bool("faults.ha", true, "TestScenarios: run the scenarios whose servers Patroni runs (false where Patroni and etcd are not installed: the Debian images of make failover)")
	FaultsShort    = flag.Bool("faults.short", false, "TestScenarios, make test's share: each scenario runs the shipped extension and its most specific broken variant (the last it needs), and the floor's variant runs in the first scenario that loses grants without it")
	UpgradeCluster = flag.Int("faults.upgradecluster", 0, "TestPgUpgradecluster: the major to upgrade to, in its Debian image, from the one that image also offers (make upgrade-ci: 19, from 18)")

	// internal/safety
	OverlapAll = flag.Bool("overlap.all", false, "TestHoldersNeverOverlap: every fault with the shipped extension and every broken variant (make overlap; default, make test's share: the shipped extension in the crash at the floor session and the asynchronous failover, and the fencing-only variant in the failover)")

	// internal/era
	EraHistories = flag.Int("era.histories", 0, "how many random histories the 0.4.0 property tests play (default: as many as the shipped rule's tests)")

	// internal/clienttest
	ClientMajor = flag.Int("clienttest.major", 0, "run the client's tests on the pinned server build of this major instead of PG_CONFIG's (make client-majors)")

	// internal/deb
	DebAutopkgtest = flag.String("deb.autopkgtest", "", "TestAutopkgtest: the majors to run autopkgtest on, each in its Debian image (make autopkgtest: 15,17,18,19)")
	DebBuild       = flag.String("deb.build", "", "TestSourcePackageInImages: the majors whose Debian build image builds the source package (make deb-build: 17,18,19)")
	DebLintianAll  = flag.Bool("deb.lintian-all", false, "TestLintian: lint every major's deb on every release (make lintian), not make test's sample")
)
