package container

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"strings"

	dc "github.com/ory/dockertest/v3/docker"
	"github.com/pglease/pglease-gen/internal/runner"
)

// Exec runs commands in a container as one user; it is the suite.Executor
// for drivers inside a container.
type Exec struct {
	Client *dc.Client
	ID     string // container ID
	User   string // "" is the image's user (root)
}

// Run runs argv and returns its standard output and error and exit code.
func (e Exec) Run(ctx context.Context, argv []string) ([]byte, []byte, int, error) {
	x, err := e.Client.CreateExec(dc.CreateExecOptions{
		Container: e.ID, Cmd: argv, User: e.User,
		AttachStdout: true, AttachStderr: true, Context: ctx,
	})
	if err != nil {
		return nil, nil, -1, fmt.Errorf("exec %s: %w", argv[0], err)
	}
	var stdout, stderr bytes.Buffer
	if err := e.Client.StartExec(x.ID, dc.StartExecOptions{OutputStream: &stdout, ErrorStream: &stderr, Context: ctx}); err != nil {
		return stdout.Bytes(), stderr.Bytes(), -1, fmt.Errorf("exec %s: %w", argv[0], err)
	}
	if err := ctx.Err(); err != nil {
		return stdout.Bytes(), stderr.Bytes(), -1, err
	}
	st, err := e.Client.InspectExec(x.ID)
	if err != nil {
		return stdout.Bytes(), stderr.Bytes(), -1, fmt.Errorf("exec %s: %w", argv[0], err)
	}
	return stdout.Bytes(), stderr.Bytes(), st.ExitCode, nil
}

// ReadFile reads one file from the container.
func (e Exec) ReadFile(ctx context.Context, name string) ([]byte, error) {
	var buf bytes.Buffer
	err := e.Client.DownloadFromContainer(e.ID, dc.DownloadFromContainerOptions{Path: name, OutputStream: &buf, Context: ctx})
	var de *dc.Error
	if errors.As(err, &de) && de.Status == http.StatusNotFound {
		return nil, fmt.Errorf("%s: %w", name, fs.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s from the container: %w", name, err)
	}
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if err != nil {
			return nil, fmt.Errorf("read %s from the container: %w", name, err)
		}
		if h.Typeflag == tar.TypeReg {
			return io.ReadAll(tr)
		}
	}
}

// Upload extracts a tar archive into dir in the container.
func (e Exec) Upload(ctx context.Context, dir string, archive []byte) error {
	err := e.Client.UploadToContainer(e.ID, dc.UploadToContainerOptions{Path: dir, InputStream: bytes.NewReader(archive), Context: ctx})
	if err != nil {
		return fmt.Errorf("copy into %s in the container: %w", dir, err)
	}
	return nil
}

// Download copies the directory src in the container to dst on this
// machine (dst is replaced).
func (e Exec) Download(ctx context.Context, src, dst string) error {
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(e.Client.DownloadFromContainer(e.ID, dc.DownloadFromContainerOptions{Path: src, OutputStream: pw, Context: ctx}))
	}()
	defer pr.Close()
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	// entries are named base(src)/...; drop that first element
	err := runner.Untar(pr, dst, func(name string) string { _, rel, _ := strings.Cut(name, "/"); return rel })
	if err != nil {
		return fmt.Errorf("copy %s out of the container: %w", src, err)
	}
	return nil
}
