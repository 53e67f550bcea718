// Package docker connects to the Docker daemon through ory/dockertest and
// holds the few image and tar helpers the test runner and the image builder
// share.
package docker

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
)

// Connect returns a pool on the daemon named by DOCKER_HOST (default: the
// local unix socket), after checking that the daemon answers.
func Connect() (*dockertest.Pool, error) {
	pool, err := dockertest.NewPool("")
	if err == nil {
		err = pool.Client.Ping()
	}
	if err != nil {
		where := os.Getenv("DOCKER_HOST")
		if where == "" {
			where = "unix:///var/run/docker.sock"
		}
		return nil, fmt.Errorf("cannot reach the Docker daemon at %s: %w\n"+
			"start it (on Debian as root: `make docker`, which installs docker.io and runs "+
			"dockerd --bridge=none --iptables=false) or point DOCKER_HOST at a running one", where, err)
	}
	pool.MaxWait = 2 * time.Minute
	return pool, nil
}

// Image looks up an image by reference; ok is false when it is not present.
func Image(c *dc.Client, ref string) (img *dc.Image, ok bool, err error) {
	img, err = c.InspectImage(ref)
	if errors.Is(err, dc.ErrNoSuchImage) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("inspect image %s: %w", ref, err)
	}
	return img, true, nil
}

// Tar builds an in-memory tar archive. Entries are owned by root (or by
// the given uid/gid) and carry a fixed time, so the same input gives the
// same archive.
type Tar struct {
	buf      bytes.Buffer
	w        *tar.Writer
	UID, GID int
}

var epoch = time.Unix(0, 0).UTC()

func (t *Tar) writer() *tar.Writer {
	if t.w == nil {
		t.w = tar.NewWriter(&t.buf)
	}
	return t.w
}

// File adds a regular file.
func (t *Tar) File(name string, mode int64, data []byte) error {
	w := t.writer()
	if err := w.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(data)), Uid: t.UID, Gid: t.GID, ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
		return err
	}
	_, err := w.Write(data)
	return err
}

// Dir adds a directory.
func (t *Tar) Dir(name string, mode int64) error {
	return t.writer().WriteHeader(&tar.Header{Name: name + "/", Mode: mode, Uid: t.UID, Gid: t.GID, ModTime: epoch, Typeflag: tar.TypeDir, Format: tar.FormatPAX})
}

// Symlink adds a symbolic link name -> target.
func (t *Tar) Symlink(name, target string) error {
	return t.writer().WriteHeader(&tar.Header{Name: name, Linkname: target, Mode: 0o777, Uid: t.UID, Gid: t.GID, ModTime: epoch, Typeflag: tar.TypeSymlink, Format: tar.FormatPAX})
}

// Header adds an entry whose body the caller writes next with Write.
func (t *Tar) Header(h *tar.Header) error {
	h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime = t.UID, t.GID, "", "", epoch
	h.AccessTime, h.ChangeTime, h.Format = time.Time{}, time.Time{}, tar.FormatPAX
	return t.writer().WriteHeader(h)
}

// Write writes the body of the entry added last with Header.
func (t *Tar) Write(p []byte) (int, error) { return t.writer().Write(p) }

// Bytes closes the archive and returns it.
func (t *Tar) Bytes() ([]byte, error) {
	if err := t.writer().Close(); err != nil {
		return nil, err
	}
	return t.buf.Bytes(), nil
}

// ImageFiles is a tar of the paths (directories, taken with their
// contents) of image ref, read from a container created from it and never
// started: `docker create` and `docker cp`, which work for a FROM scratch
// image with no command. The container is removed.
func ImageFiles(c *dc.Client, ref string, paths ...string) ([]byte, error) {
	ctr, err := c.CreateContainer(dc.CreateContainerOptions{Config: &dc.Config{Image: ref, Cmd: []string{"/not-run"}, Labels: map[string]string{"org.pglease.test": "image-files"}}})
	if err != nil {
		return nil, fmt.Errorf("docker create %s: %w", ref, err)
	}
	defer c.RemoveContainer(dc.RemoveContainerOptions{ID: ctr.ID, Force: true})
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	for _, p := range paths {
		var buf bytes.Buffer
		if err := c.DownloadFromContainer(ctr.ID, dc.DownloadFromContainerOptions{Path: p, OutputStream: &buf}); err != nil {
			return nil, fmt.Errorf("docker cp %s:%s: %w", ref, p, err)
		}
		tr := tar.NewReader(&buf)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, err
			}
			if err := tw.WriteHeader(h); err != nil {
				return nil, err
			}
			if _, err := io.Copy(tw, tr); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
