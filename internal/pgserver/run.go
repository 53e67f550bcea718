package pgserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/render"
)

// InstallFiles renders the extension and writes its control file and
// install script into the installation's extension directory.
func InstallFiles(ext model.Extension, src fs.FS, inst Install) error {
	keep, err := render.InstallFiles(ext, src)
	if err != nil {
		return err
	}
	if err := render.Write(inst.ExtensionDir(), keep); err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return fmt.Errorf("install %s into %s: %w: run as root (or `make install` as root first)", ext.Name, inst.ExtensionDir(), err)
		}
		return fmt.Errorf("install %s: %w", ext.Name, err)
	}
	return nil
}

// StartWithExtension installs the rendered extension into the
// installation that pgConfig names ("" looks pg_config up on PATH) and
// starts a throwaway server of it with settings; the caller runs CREATE
// EXTENSION where it wants it.
func StartWithExtension(ctx context.Context, pgConfig string, ext model.Extension, src fs.FS, settings ...string) (*Server, Install, error) {
	inst, err := FindInstall(ctx, pgConfig)
	if err != nil {
		return nil, inst, err
	}
	if err := InstallFiles(ext, src, inst); err != nil {
		return nil, inst, err
	}
	srv, err := StartWith(ctx, inst, "", settings...)
	return srv, inst, err
}

// InstallCopy installs a copy of the extension under another name: its
// control file and every script, the script named file (ext's own name
// for it, e.g. ext.UpdateScript("0.1.0", "0.2.0")) changed by edit (a
// broken variant's edits: pgtest.Install; a baseline's whole script:
// make bench-ab). A
// script that names its extension (ALTER EXTENSION pg_lease DROP ...)
// names the copy instead.
func InstallCopy(ext model.Extension, src fs.FS, inst Install, name, file string, edit func(string) (string, error)) (remove func(), err error) {
	files, err := render.Extension(ext, src)
	if err != nil {
		return nil, err
	}
	if _, ok := files[file]; !ok {
		return nil, fmt.Errorf("%s has no script %s", ext.Name, file)
	}
	var written []string
	remove = func() {
		for _, f := range written {
			os.Remove(f)
		}
	}
	for _, f := range append([]string{ext.ControlFile()}, ext.Scripts()...) {
		b := files[f]
		if f == file {
			s, err := edit(string(b))
			if err != nil {
				remove()
				return nil, err
			}
			b = []byte(s)
		}
		// (after the edit, which sees the script as rendered)
		b = bytes.ReplaceAll(b, []byte("EXTENSION "+ext.Name+" "), []byte("EXTENSION "+name+" "))
		dst := filepath.Join(inst.ExtensionDir(), name+strings.TrimPrefix(f, ext.Name))
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			remove()
			return nil, fmt.Errorf("install copy %s: %w", name, err)
		}
		written = append(written, dst)
	}
	return remove, nil
}

// Exec runs statements, one after another, in a new connection to dsn.
func Exec(ctx context.Context, dsn string, sqls ...string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for _, s := range sqls {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}
