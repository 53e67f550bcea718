// Package oci writes pg_lease as the extension images CloudNativePG mounts
// as image volumes (PostgreSQL 18 and later, extension_control_path): a
// FROM scratch image per major holding /share/extension/ (the control
// file and every script) and /licenses/, for linux/amd64 and linux/arm64,
// labelled and tagged as CloudNativePG's own extension images are. Each
// major gets an OCI image layout (oci-layout, index.json naming the tag,
// an image index of both platforms, the blobs) and, since Docker 20.10
// loads only its own format, a docker save-style tarball per platform.
// Everything depends only on the files and the build time.
package oci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"time"

	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/render"
)

// Media types of the OCI image spec.
const (
	mediaIndex    = "application/vnd.oci.image.index.v1+json"
	mediaManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaConfig   = "application/vnd.oci.image.config.v1+json"
	mediaLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
)

// Image is one major's extension image.
type Image struct {
	Major int
	// Tag is CloudNativePG's form, EXTVERSION-PGMAJOR-OS: 0.3.0-18-trixie.
	Tag string
	// Ref is the image's full name with its tag, as a registry would hold it.
	Ref string
	// Dir is the OCI layout's directory in the build output; Archives are
	// the docker save-style tarballs by Go architecture.
	Dir      string
	Archives map[string]string
	Labels   map[string]string
}

// Images are the extension images of the majors that take them, written
// into files under dir (file name -> bytes). ext's files are the control
// file and the scripts; license is the LICENSE text.
func Images(ext model.Extension, img model.ImageVolumes, files render.Files, license []byte, majors []int, built time.Time, dir string) (render.Files, []Image, error) {
	out := render.Files{}
	var images []Image
	layer, rawLayer, diffID, err := layerOf(ext, files, license, built)
	if err != nil {
		return nil, nil, err
	}
	for _, major := range img.MajorsOf(majors) {
		im := Image{Major: major, Tag: img.Tag(ext, major), Archives: map[string]string{}}
		im.Ref = img.Repository + ":" + im.Tag
		im.Dir = path.Join(dir, ext.Name+"-"+im.Tag)
		im.Labels = img.Labels(ext, major, built)
		blobs := render.Files{}
		put := func(b []byte) string {
			sum := sha256.Sum256(b)
			d := "sha256:" + hex.EncodeToString(sum[:])
			blobs["blobs/sha256/"+hex.EncodeToString(sum[:])] = b
			return d
		}
		layerDigest := put(layer)
		var manifests []descriptor
		for _, arch := range model.MachineArches {
			config, err := json.Marshal(imageConfig{
				Created: built.UTC().Format(time.RFC3339), Architecture: arch, OS: "linux",
				Config:  containerConfig{User: "65532:65532", Labels: im.Labels},
				RootFS:  rootFS{Type: "layers", DiffIDs: []string{diffID}},
				History: []history{{Created: built.UTC().Format(time.RFC3339), CreatedBy: "pglease-gen build: " + ext.Name + " " + ext.Version() + " for PostgreSQL " + fmt.Sprint(major)}},
			})
			if err != nil {
				return nil, nil, err
			}
			m, err := json.Marshal(manifest{SchemaVersion: 2, MediaType: mediaManifest,
				Config:      descriptor{MediaType: mediaConfig, Digest: put(config), Size: len(config)},
				Layers:      []descriptor{{MediaType: mediaLayer, Digest: layerDigest, Size: len(layer)}},
				Annotations: im.Labels})
			if err != nil {
				return nil, nil, err
			}
			manifests = append(manifests, descriptor{MediaType: mediaManifest, Digest: put(m), Size: len(m),
				Platform: &platform{Architecture: arch, OS: "linux"}})
			a, err := dockerArchive(im.Ref, config, rawLayer)
			if err != nil {
				return nil, nil, err
			}
			name := im.Dir + "." + arch + ".docker.tar"
			out[name] = a
			im.Archives[arch] = name
		}
		index, err := json.Marshal(indexJSON{SchemaVersion: 2, MediaType: mediaIndex, Manifests: manifests, Annotations: im.Labels})
		if err != nil {
			return nil, nil, err
		}
		indexDigest := put(index)
		top, err := json.Marshal(indexJSON{SchemaVersion: 2, MediaType: mediaIndex, Manifests: []descriptor{{
			MediaType: mediaIndex, Digest: indexDigest, Size: len(index),
			Annotations: map[string]string{"org.opencontainers.image.ref.name": im.Tag, "io.containerd.image.name": im.Ref},
		}}})
		if err != nil {
			return nil, nil, err
		}
		out[path.Join(im.Dir, "oci-layout")] = []byte(`{"imageLayoutVersion":"1.0.0"}` + "\n")
		out[path.Join(im.Dir, "index.json")] = append(top, '\n')
		for n, b := range blobs {
			out[path.Join(im.Dir, n)] = b
		}
		images = append(images, im)
	}
	return out, images, nil
}

// layerOf is the image's one layer (gzipped tar) and its diff id (the
// digest of the tar): share/extension/ with the control file and the
// scripts, licenses/NAME/LICENSE, root-owned, dated built.
func layerOf(ext model.Extension, files render.Files, license []byte, built time.Time) (gz, raw []byte, diffID string, err error) {
	var rawBuf bytes.Buffer
	tw := tar.NewWriter(&rawBuf)
	when := built.UTC().Truncate(time.Second)
	entries := map[string][]byte{path.Join("licenses", ext.Name, "LICENSE"): license}
	for n, b := range files {
		entries[path.Join("share", "extension", n)] = b
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	dirs := map[string]bool{}
	for _, n := range names {
		for _, d := range []string{path.Dir(path.Dir(n)), path.Dir(n)} {
			if d != "." && !dirs[d] {
				dirs[d] = true
				if err := tw.WriteHeader(&tar.Header{Name: d + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: when, Format: tar.FormatPAX}); err != nil {
					return nil, nil, "", err
				}
			}
		}
		if err := tw.WriteHeader(&tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(entries[n])), ModTime: when, Format: tar.FormatPAX}); err != nil {
			return nil, nil, "", err
		}
		if _, err := tw.Write(entries[n]); err != nil {
			return nil, nil, "", err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, nil, "", err
	}
	raw = rawBuf.Bytes()
	sum := sha256.Sum256(raw)
	var z bytes.Buffer
	zw, err := gzip.NewWriterLevel(&z, gzip.BestCompression)
	if err != nil {
		return nil, nil, "", err
	}
	if _, err := zw.Write(raw); err != nil {
		return nil, nil, "", err
	}
	if err := zw.Close(); err != nil {
		return nil, nil, "", err
	}
	return z.Bytes(), raw, "sha256:" + hex.EncodeToString(sum[:]), nil
}

// dockerArchive is what `docker save` writes for one image: manifest.json
// naming the config, the layer and the tag, the config, the layer.
func dockerArchive(ref string, config, layer []byte) ([]byte, error) {
	cs := sha256.Sum256(config)
	ls := sha256.Sum256(layer)
	configName := hex.EncodeToString(cs[:]) + ".json"
	layerName := hex.EncodeToString(ls[:]) + "/layer.tar"
	m, err := json.Marshal([]map[string]any{{"Config": configName, "RepoTags": []string{ref}, "Layers": []string{layerName}}})
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		body []byte
	}{{configName, config}, {layerName, layer}, {"manifest.json", m}} {
		if d := path.Dir(f.name); d != "." {
			if err := tw.WriteHeader(&tar.Header{Name: d + "/", Typeflag: tar.TypeDir, Mode: 0o755, Format: tar.FormatUSTAR}); err != nil {
				return nil, err
			}
		}
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(f.body)), Format: tar.FormatUSTAR}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int               `json:"size"`
	Platform    *platform         `json:"platform,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

type indexJSON struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	Manifests     []descriptor      `json:"manifests"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

type manifest struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	Config        descriptor        `json:"config"`
	Layers        []descriptor      `json:"layers"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

type imageConfig struct {
	Created      string          `json:"created"`
	Architecture string          `json:"architecture"`
	OS           string          `json:"os"`
	Config       containerConfig `json:"config"`
	RootFS       rootFS          `json:"rootfs"`
	History      []history       `json:"history"`
}

type containerConfig struct {
	User   string            `json:"User"`
	Labels map[string]string `json:"Labels"`
}

type rootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

type history struct {
	Created   string `json:"created"`
	CreatedBy string `json:"created_by"`
}
