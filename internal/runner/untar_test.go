package runner

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestUntarReplacesWhole: a file that Untar writes again, with the same
// bytes, is never seen empty or in part by a reader meanwhile. The tests
// of several packages install the extension into this machine's one
// extension directory at once; a script rewritten in place was read
// empty by another test's ALTER EXTENSION UPDATE, which then did
// nothing (the update check failed beside other packages, never alone).
// Written in place (os.WriteFile, as before), 16,928 of 17,609 reads
// here saw it in part.
func TestUntarReplacesWhole(t *testing.T) {
	body := bytes.Repeat([]byte("SELECT 1;\n"), 20000) // 200 kB, like an install script
	var archive bytes.Buffer
	tw := tar.NewWriter(&archive)
	tw.WriteHeader(&tar.Header{Name: "pg_lease--0.3.0--0.4.0.sql", Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
	tw.Write(body)
	tw.Close()
	dir := t.TempDir()
	if err := Untar(bytes.NewReader(archive.Bytes()), dir, nil); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		for range 500 {
			if err := Untar(bytes.NewReader(archive.Bytes()), dir, nil); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	torn := 0
	for reads := 0; ; reads++ {
		select {
		case <-done:
			wg.Wait()
			if torn > 0 {
				t.Errorf("%d of %d reads during 500 rewrites saw the file in part", torn, reads)
			}
			return
		default:
		}
		b, err := os.ReadFile(filepath.Join(dir, "pg_lease--0.3.0--0.4.0.sql"))
		if err != nil || !bytes.Equal(b, body) {
			torn++
		}
	}
}
