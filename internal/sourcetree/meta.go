package sourcetree

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/pglease/pglease-gen/internal/render"
)

// semver is a Semantic Version 2.0.0 without build metadata, as PGXN's
// meta spec 1.0.0 requires of versions: 1.2.3 or 1.2.3-beta1.
var semver = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)

// pgxnLicenses are the license names PGXN's meta spec 1.0.0 lists.
var pgxnLicenses = []string{
	"agpl_3", "apache_1_1", "apache_2_0", "artistic_1", "artistic_2", "bsd", "freebsd", "gfdl_1_2",
	"gfdl_1_3", "gpl_1", "gpl_2", "gpl_3", "lgpl_2_1", "lgpl_3_0", "mit", "mozilla_1_0", "mozilla_1_1",
	"openssl", "perl_5", "postgresql", "qpl_1_0", "ssleay", "sun", "zlib", "open_source", "restricted",
	"unrestricted", "unknown",
}

// CheckMETA checks a META.json against PGXN's meta spec 1.0.0 as PGXN's
// validator would, and against the distribution it describes (files,
// the tree's files): the required keys (name, abstract, maintainer,
// version, license, provides, meta-spec), SemVer versions, license names
// from the spec's list, each provided extension with its file (which the
// tree must hold) and version, and prereqs' PostgreSQL as a SemVer. The
// error names the key.
func CheckMETA(meta []byte, files render.Files) error {
	var m map[string]any
	if err := json.Unmarshal(meta, &m); err != nil {
		return fmt.Errorf("META.json is not JSON: %w", err)
	}
	bad := func(key, format string, args ...any) error {
		return fmt.Errorf("META.json: %s: %s", key, fmt.Sprintf(format, args...))
	}
	str := func(obj map[string]any, key, where string) (string, error) {
		v, ok := obj[key]
		if !ok {
			return "", bad(where+key, "missing (required by PGXN's meta spec 1.0.0)")
		}
		s, ok := v.(string)
		if !ok || strings.TrimSpace(s) == "" {
			return "", bad(where+key, "must be a non-empty string, not %v", v)
		}
		return s, nil
	}
	version := func(obj map[string]any, key, where string) error {
		v, err := str(obj, key, where)
		if err != nil {
			return err
		}
		if !semver.MatchString(v) {
			return bad(where+key, "%q is not a semantic version (such as 1.2.3)", v)
		}
		return nil
	}
	for _, k := range []string{"name", "abstract"} {
		if _, err := str(m, k, ""); err != nil {
			return err
		}
	}
	if err := version(m, "version", ""); err != nil {
		return err
	}
	switch v := m["maintainer"].(type) {
	case string:
		if strings.TrimSpace(v) == "" {
			return bad("maintainer", "empty")
		}
	case []any:
		if len(v) == 0 {
			return bad("maintainer", "an empty list")
		}
	case nil:
		return bad("maintainer", "missing (required by PGXN's meta spec 1.0.0)")
	default:
		return bad("maintainer", "must be a string or a list of strings")
	}
	var licenses []string
	switch v := m["license"].(type) {
	case string:
		licenses = []string{v}
	case []any:
		for _, l := range v {
			s, _ := l.(string)
			licenses = append(licenses, s)
		}
	case map[string]any:
		// a name-to-URL map names licenses of its own: any name goes
	case nil:
		return bad("license", "missing (required by PGXN's meta spec 1.0.0)")
	default:
		return bad("license", "must be a name, a list of names or a map of names to URLs")
	}
	for _, l := range licenses {
		if !slices.Contains(pgxnLicenses, l) {
			return bad("license", "%q is not one of the meta spec's names (%s)", l, strings.Join(pgxnLicenses, ", "))
		}
	}
	provides, ok := m["provides"].(map[string]any)
	if !ok || len(provides) == 0 {
		return bad("provides", "missing or empty (required: each extension with its file and version)")
	}
	for name, v := range provides {
		p, ok := v.(map[string]any)
		where := "provides." + name + "."
		if !ok {
			return bad("provides."+name, "must be an object")
		}
		file, err := str(p, "file", where)
		if err != nil {
			return err
		}
		if files != nil && files[file] == nil {
			return bad(where+"file", "%s is not in the distribution", file)
		}
		if err := version(p, "version", where); err != nil {
			return err
		}
	}
	spec, ok := m["meta-spec"].(map[string]any)
	if !ok {
		return bad("meta-spec", "missing (required by PGXN's meta spec 1.0.0)")
	}
	if v, err := str(spec, "version", "meta-spec."); err != nil {
		return err
	} else if v != "1.0.0" {
		return bad("meta-spec.version", "%q; this check knows 1.0.0", v)
	}
	if pr, ok := m["prereqs"].(map[string]any); ok {
		for phase, v := range pr {
			rels, _ := v.(map[string]any)
			for rel, v := range rels {
				deps, _ := v.(map[string]any)
				for dep, v := range deps {
					s, _ := v.(string)
					key := "prereqs." + phase + "." + rel + "." + dep
					// a version, or a range such as ">= 14.0.0, < 20.0.0"
					for _, part := range strings.Split(s, ",") {
						part = strings.TrimLeft(strings.TrimSpace(part), "<>=!= ")
						if part != "0" && !semver.MatchString(part) {
							return bad(key, "%q is not a semantic version (such as 14.0.0)", s)
						}
					}
				}
			}
		}
	}
	return nil
}
