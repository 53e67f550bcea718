package model

import (
	"fmt"
	"time"
)

// ImageVolumes describes the extension images CloudNativePG mounts as
// image volumes, labelled and tagged as its own extension images are.
type ImageVolumes struct {
	// Repository is where the images are published.
	Repository string
	// OS is the operand images' release the tag names (CloudNativePG's
	// PostgreSQL 18 images are trixie's); the files are pure SQL.
	OS string
	// MinMajor is the first major with extension_control_path.
	MinMajor int
	// Licenses is the SPDX name of the license.
	Licenses string
}

// CNPG is the one description of pg_lease's CloudNativePG images.
var CNPG = ImageVolumes{Repository: "ghcr.io/pglease/pg_lease", OS: "trixie", MinMajor: 18, Licenses: "PostgreSQL"}

// MajorsOf are the majors of want that take extension images.
func (i ImageVolumes) MajorsOf(want []int) []int {
	var out []int
	for _, m := range want {
		if m >= i.MinMajor {
			out = append(out, m)
		}
	}
	return out
}

// Tag is CloudNativePG's EXTVERSION-PGMAJOR-OS: 0.3.0-18-trixie.
func (i ImageVolumes) Tag(ext Extension, major int) string {
	return fmt.Sprintf("%s-%d-%s", ext.Version(), major, i.OS)
}

// BaseImage is the operand image the extension image is made for.
func (i ImageVolumes) BaseImage(major int) string {
	return fmt.Sprintf("ghcr.io/cloudnative-pg/postgresql:%d-minimal-%s", major, i.OS)
}

// Labels are the image's labels (and its manifests' annotations): the
// org.opencontainers.image ones, base.name scratch, and CloudNativePG's
// io.cloudnativepg.image.base.{name,pgmajor,os}.
func (i ImageVolumes) Labels(ext Extension, major int, built time.Time) map[string]string {
	v := ext.Version()
	return map[string]string{
		"org.opencontainers.image.created":       built.UTC().Format(time.RFC3339),
		"org.opencontainers.image.url":           Packages.URL,
		"org.opencontainers.image.source":        Packages.URL,
		"org.opencontainers.image.documentation": Packages.URL,
		"org.opencontainers.image.version":       v,
		"org.opencontainers.image.vendor":        Packages.Maintainer,
		"org.opencontainers.image.authors":       Packages.Maintainer,
		"org.opencontainers.image.title":         fmt.Sprintf("%s %s %d %s", ext.Name, v, major, i.OS),
		"org.opencontainers.image.description":   fmt.Sprintf("A %s %s container image for PostgreSQL %d on %s", ext.Name, v, major, i.OS),
		"org.opencontainers.image.licenses":      i.Licenses,
		"org.opencontainers.image.base.name":     "scratch",
		"io.cloudnativepg.image.base.name":       i.BaseImage(major),
		"io.cloudnativepg.image.base.pgmajor":    fmt.Sprint(major),
		"io.cloudnativepg.image.base.os":         i.OS,
	}
}
