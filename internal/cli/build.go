package cli

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/artifact"
	"github.com/pglease/pglease-gen/internal/config"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/render"
	"github.com/pglease/pglease-gen/internal/rpm"
	"github.com/pglease/pglease-gen/internal/sign"
)

type buildCmd struct {
	out, into, pg, distro, suffix, builder string
	drop                                   []string
	signKey, signWith, repoURL             string
	json, allowUnsigned                    bool
	config, changelog                      string
	set                                    config.Settings // the packager's settings given as flags
}

func newBuild() *cobra.Command {
	c := &buildCmd{}
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build the source tarball, the RPMs and debs, their signed repository trees and host files",
		Long: "Build into --out (replaced as a whole; a directory not written by build is\n" +
			"refused), for every distribution of the model or those --distro names\n" +
			"(" + model.DistroNames() + "): the source tarball and the spec;\n" +
			"per EL release and major a source RPM (SRPMS/) and a noarch RPM with the\n" +
			"release's dist tag, in the repository trees elN.x86_64/ and elN.aarch64/\n" +
			"with their metadata; per Debian or Ubuntu release and major a deb with the\n" +
			"codename in its version, in the one apt repository apt/ (pool/, and a suite\n" +
			"dists/CODENAME/ each with binary-amd64 and binary-arm64 indexes); plus\n" +
			"SHA256SUMS. The default builder writes the packages in pure Go; --builder\n" +
			"rpmbuild runs the spec through rpmbuild, --builder dpkg the debian/ tree\n" +
			"through dpkg-buildpackage. SOURCE_DATE_EPOCH (default: the newest changelog\n" +
			"date) sets every time stamp: two builds with the same value are\n" +
			"byte-identical, but for the repositories' signatures (InRelease,\n" +
			"Release.gpg, repomd.xml.asc, SHA256SUMS.asc), made when the build runs.\n\n" +
			"--sign-key FILE (an armored OpenPGP private key; its passphrase, if any, in\n" +
			"the environment variable " + sign.PassphraseEnv + ") signs every RPM and SRPM, each\n" +
			"repodata/repomd.xml (repomd.xml.asc) and each suite's Release (Release.gpg,\n" +
			"InRelease), and writes the public key as " + model.PgLease.RPMKeyFile() + ". --repo-url URL\n" +
			"(where the output will be published) writes " + model.PgLease.RepoFile() + " (one file for\n" +
			"every EL release: $releasever) and " + model.PgLease.SourcesFileFor("CODENAME") + " per codename\n" +
			"for hosts, checking signatures when the build is signed.\n\n" +
			"--into DIR adds the build to the output of an earlier one (a repository\n" +
			"that grows): every package DIR holds stays, byte for byte, in the pools and\n" +
			"is listed in the rebuilt indices beside the new ones, so hosts can install\n" +
			"or downgrade to an older version; the previous indices stay fetchable by\n" +
			"hash (apt's by-hash/, dnf's checksum-named repodata) while hosts update.\n" +
			"A published package is never replaced: building it again with other bytes\n" +
			"is refused (raise --release). --drop VERSION removes a version's packages.\n" +
			"The tree is swapped whole, so hosts see the old tree or the new one.\n\n" +
			"A packager's settings (release, vendor tag, maintainer, homepage, source\n" +
			"URL, repository URL, image repository) come from flags, over a YAML file:\n" +
			"--config FILE, or " + config.DefaultFile + " in the working directory when it exists.\n" +
			"Every key is checked and an unknown one is an error. A minimal file:\n\n" +
			indent(config.Example, "  "),
		Example: "  pglease-gen build\n" +
			"  pglease-gen build --pg 16,17 --release-suffix PGDG --builder rpmbuild --out /tmp/dist\n" +
			"  pglease-gen build --distro el9,bookworm\n" +
			"  SOURCE_DATE_EPOCH=1767225600 pglease-gen build --json\n" +
			"  pglease-gen build --into /srv/repo --drop 0.4.0\n" +
			"  " + sign.PassphraseEnv + "=... pglease-gen build --sign-key release-key.asc --repo-url https://packages.example.org/pg_lease",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return c.run(cmd) },
	}
	f := cmd.Flags()
	f.StringVar(&c.out, "out", "dist", "directory to write into")
	f.StringVar(&c.into, "into", "", "an earlier build's output to add this build to: its packages stay in the pools and indices beside the new ones (instead of --out)")
	f.StringSliceVar(&c.drop, "drop", nil, "with --into: versions whose packages leave the tree, e.g. 0.4.0")
	f.StringVar(&c.pg, "pg", "all", "majors to package: 17, 14,16 or all")
	f.StringVar(&c.distro, "distro", "all", "distributions to package for: all, or some of "+model.DistroNames())
	f.StringVar(&c.suffix, "release-suffix", model.Packages.Suffixes[0], "release suffix (the vendor tag): "+strings.Join(model.Packages.Suffixes, ", ")+" (PGDG: its own version form), or another tag of letters and digits")
	f.StringVar(&c.config, "config", "", "packager settings file (YAML; default: "+config.DefaultFile+" when it exists)")
	f.StringVar(&c.changelog, "changelog", "", "the packager's changelog file, which a new --release is added to; default: "+config.ChangelogFile+" beside the settings file, or here")
	f.IntVar(&c.set.Release, "release", 0, "release number of a rebuild (with --release-date and --release-note); default: the changelog's")
	f.StringVar(&c.set.ReleaseDate, "release-date", "", "the rebuild's changelog date: YYYY-MM-DD or YYYY-MM-DD HH:MM (UTC)")
	f.StringVar(&c.set.ReleaseNote, "release-note", "", "the rebuild's changelog line")
	f.StringVar(&c.set.Maintainer, "maintainer", "", "packager, as \"Name <user@example.org>\"; default: "+model.Packages.Maintainer)
	f.StringVar(&c.set.Homepage, "homepage", "", "project URL in the packages; default: "+model.Packages.URL)
	f.StringVar(&c.set.SourceURL, "source-url", "", "URL of the directory holding the source tarball (the spec's Source0); default: "+model.Packages.SourceDir("VERSION"))
	f.StringVar(&c.set.ImageRepository, "image-repository", "", "repository of the CloudNativePG images; default: "+model.CNPG.Repository)
	f.StringVar(&c.builder, "builder", rpm.PureGo, "how to write the packages: go (pure Go, the default), or the native tools rpmbuild, dpkg or rpmbuild,dpkg")
	f.StringVar(&c.signKey, "sign-key", "", "armored OpenPGP private key to sign with (passphrase in $"+sign.PassphraseEnv+"); default: unsigned")
	f.StringVar(&c.signWith, "sign-with", "", "sign through gpg with a key of its keyring, on its agent or a smartcard: "+sign.GPGPrefix+"KEYID (instead of --sign-key)")
	f.StringVar(&c.repoURL, "repo-url", "", "URL the output will be published at; writes "+model.PgLease.RepoFile()+" and "+model.PgLease.SourcesFileFor("CODENAME"))
	f.BoolVar(&c.allowUnsigned, "allow-unsigned", false, "with --repo-url and no --sign-key: write host files that check no signatures")
	f.BoolVar(&c.json, "json", false, "print what was written as JSON on stdout (progress goes to stderr)")
	return cmd
}

func (c *buildCmd) run(cmd *cobra.Command) error {
	applied, from, err := c.settings(cmd)
	if err != nil {
		return err
	}
	majors, err := model.PgLease.ParseMajors(c.pg)
	if err != nil {
		return err
	}
	distros, err := model.ParseDistros(c.distro)
	if err != nil {
		return err
	}
	suffix, pkg := applied.Suffix, applied.Pkg
	c.repoURL = applied.RepoURL
	builders, err := artifact.ParseBuilders(c.builder)
	if err != nil {
		return err
	}
	when, err := artifact.SourceDateEpoch(os.Getenv("SOURCE_DATE_EPOCH"), pkg, time.Now())
	if err != nil {
		return err
	}
	if c.repoURL, err = artifact.ParseRepoURL(c.repoURL); err != nil {
		return fmt.Errorf("%s: %w", cmp.Or(applied.RepoURLFrom, "--repo-url"), err)
	}
	for _, flag := range []string{"out", "into"} {
		if v, _ := cmd.Flags().GetString(flag); cmd.Flags().Changed(flag) && v == "" {
			return fmt.Errorf("--%s '': name a directory, or leave the flag out (the default is --out dist)", flag)
		}
	}
	var held render.Files
	if c.into != "" {
		if cmd.Flags().Changed("out") {
			return errors.New("--out and --into both name where to write: --out replaces a tree, --into adds to one; keep one")
		}
		c.out = c.into
		if held, err = artifact.ReadHeld(c.into); err != nil {
			return err
		}
	} else if len(c.drop) > 0 {
		return errors.New("--drop removes a version from the tree --into names: give --into")
	}
	if err := artifact.CheckOut(c.out); err != nil {
		return err
	}
	if _, err := artifact.Buildable(distros, majors); err != nil {
		return err
	}
	if c.signKey != "" && c.signWith != "" {
		return errors.New("--sign-key and --sign-with both name the signing key: keep one (a key file, or gpg:KEYID of gpg's keyring)")
	}
	if c.signWith == sign.GPGPrefix {
		return fmt.Errorf("--sign-with %q names no key: give %sKEYID, a key of gpg's keyring (gpg --list-secret-keys)", c.signWith, sign.GPGPrefix)
	}
	if cmd.Flags().Changed("sign-with") && !strings.HasPrefix(c.signWith, sign.GPGPrefix) {
		return fmt.Errorf("--sign-with %q: give %sKEYID, a key of gpg's keyring (gpg --list-secret-keys); a key file goes to --sign-key", c.signWith, sign.GPGPrefix)
	}
	signing := c.signKey != "" || c.signWith != ""
	if c.allowUnsigned && signing {
		return errors.New("--allow-unsigned and --sign-key say opposite things: keep one (--sign-key signs the repositories and host files check the signatures)")
	}
	if c.repoURL != "" && !signing && !c.allowUnsigned {
		return fmt.Errorf("--repo-url without --sign-key would write %s and %s with signature checks off: sign with --sign-key FILE, or pass --allow-unsigned to mean it",
			model.PgLease.RepoFile(), model.PgLease.SourcesFileFor("CODENAME"))
	}
	signer, err := sign.Open(c.signKey, strings.TrimPrefix(c.signWith, sign.GPGPrefix), when, time.Now())
	if err != nil {
		return err
	}
	progress := cmd.OutOrStdout()
	if c.json {
		progress = cmd.ErrOrStderr()
	}
	start := time.Now()
	step := func(format string, args ...any) {
		fmt.Fprintf(progress, "[%5.2fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	if from != "" {
		step("packager settings from %s", from)
	}
	files, arts, err := artifact.Build(cmd.Context(), artifact.Options{
		Ext: model.PgLease, Pkg: pkg, Images: applied.Images, Src: pglease.Files, Majors: majors, Distros: distros,
		Suffix: suffix, Builders: builders, Time: when, Step: step, Sign: signer, RepoURL: c.repoURL,
		Held: held, Drop: c.drop, SignedAt: time.Now(),
	})
	if err != nil {
		return err
	}
	if err := artifact.PublishContext(cmd.Context(), c.out, files); err != nil {
		return err
	}
	step("wrote %d files into %s", len(files), c.out)
	if applied.New != nil {
		if err := config.AppendChangelog(applied.Changelog, *applied.New); err != nil {
			return fmt.Errorf("the build is published, but its release is not recorded in %s: %w; add it by hand (release %d of %s, %s)",
				applied.Changelog, err, applied.New.Release, applied.New.Version, applied.New.Date)
		}
		step("release %d of %s recorded in %s (the next build keeps it in the changelogs)", applied.New.Release, applied.New.Version, applied.Changelog)
	}
	signedBy := ""
	if signer != nil {
		signedBy = signer.Fingerprint()
		step("signed with %s (%s)", signedBy, signer.Identity())
	} else {
		step("unsigned: pass --sign-key FILE to sign the packages and repositories")
	}
	if c.repoURL == "" {
		step("no --repo-url: %s and %s are not written", model.PgLease.RepoFile(), model.PgLease.SourcesFileFor("CODENAME"))
	}
	if c.json {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{
			"name": model.PgLease.Name, "version": model.PgLease.Version(), "release_suffix": suffix,
			"release": pkg.Release, "builder": c.builder, "source_date_epoch": when.Unix(), "out": c.out, "artifacts": arts,
			"signed_by": signedBy,
		})
	}
	artifact.Summary(cmd.OutOrStdout(), c.out, c.repoURL, arts, signer != nil)
	return nil
}

// settings reads the packager's settings: the file (--config, or the
// default file when it exists), then the flags given over it, applied to
// the model; from names the file read, if any.
func (c *buildCmd) settings(cmd *cobra.Command) (config.Applied, string, error) {
	var file config.Settings
	from := c.config
	if cmd.Flags().Changed("config") && from == "" {
		return config.Applied{}, "", errors.New("--config '': name a settings file, or leave the flag out for " + config.DefaultFile)
	}
	if from == "" {
		if _, err := os.Stat(config.DefaultFile); err == nil {
			from = config.DefaultFile
		}
	}
	if from != "" {
		var err error
		if file, err = config.Read(from); err != nil {
			return config.Applied{}, "", fmt.Errorf("--config: %w", err)
		}
	}
	flags := c.set
	flags.Vendor, flags.RepoURL = "", ""
	if cmd.Flags().Changed("release-suffix") {
		flags.Vendor = c.suffix
	}
	if cmd.Flags().Changed("repo-url") {
		flags.RepoURL = c.repoURL
	}
	// a flag given is a value given: an empty one is an error, not the
	// default, and errors about it name the flag
	flags.From = map[string]string{}
	for key, flag := range map[string]string{"release_date": "release-date", "release_note": "release-note", "vendor": "release-suffix",
		"maintainer": "maintainer", "homepage": "homepage", "source_url": "source-url", "repo_url": "repo-url", "image_repository": "image-repository"} {
		if !cmd.Flags().Changed(flag) {
			continue
		}
		if v, _ := cmd.Flags().GetString(flag); v == "" {
			return config.Applied{}, "", fmt.Errorf("--%s '': give a value, or leave the flag out for the default", flag)
		}
		flags.From[key] = "--" + flag
	}
	if cmd.Flags().Changed("release") {
		if c.set.Release < 1 || c.set.Release > 999 {
			return config.Applied{}, "", fmt.Errorf("--release %d: a whole number from 1 to 999", c.set.Release)
		}
		flags.From["release"] = "--release"
	}
	// the changelog: --changelog, the file's changelog key (relative to
	// the file), or the default file beside the settings or here
	log := c.changelog
	switch {
	case cmd.Flags().Changed("changelog") && log == "":
		return config.Applied{}, "", errors.New("--changelog '': name the changelog file, or leave the flag out for " + config.ChangelogFile)
	case log == "" && file.Changelog != "":
		log = file.Changelog
		if !filepath.IsAbs(log) {
			log = filepath.Join(filepath.Dir(from), log)
		}
	case log == "" && from != "":
		log = filepath.Join(filepath.Dir(from), config.ChangelogFile)
	case log == "":
		log = config.ChangelogFile
	}
	l, err := config.ReadChangelog(log, model.PgLease, model.Packages, time.Now())
	if err != nil {
		return config.Applied{}, "", fmt.Errorf("changelog: %w", err)
	}
	flags.Log = &l
	a, err := config.Apply(file.Over(flags), model.PgLease, model.Packages, model.CNPG)
	return a, from, err
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = prefix + lines[i]
	}
	return strings.Join(lines, "\n")
}
