package runner

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/pglease/pglease-gen/internal/docker"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/render"
)

// CopyFiles is the installer of a plain run: it renders the extension and
// copies its control file and install script into the extension directory.
func CopyFiles(ext model.Extension, src fs.FS) Installer {
	return func(ctx context.Context, t Target, _ func(string)) (func(context.Context) error, error) {
		files, err := render.InstallFiles(ext, src)
		if err != nil {
			return nil, err
		}
		var tb docker.Tar
		for _, n := range files.Names() {
			if err := tb.File(n, 0o644, files[n]); err != nil {
				return nil, err
			}
		}
		archive, err := tb.Bytes()
		if err != nil {
			return nil, err
		}
		l := t.Layout()
		if err := Must(ctx, t.Root(), "test", "-d", l.ExtensionDir()); err != nil {
			return nil, fmt.Errorf("there is no %s: is this a %s-layout PostgreSQL %d? (%w)", l.ExtensionDir(), l.Name, l.Major, err)
		}
		return nil, errPermission(t.Upload(ctx, l.ExtensionDir(), archive), l.ExtensionDir())
	}
}
