package rpm

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"
)

// lockPath takes an exclusive lock on the file name, creating it, and
// waits while another process holds it. unlock removes the file and
// releases the lock, so nothing is left behind. A lock whose file was
// removed while this process waited for it is taken again on a new file.
func lockPath(ctx context.Context, name string) (unlock func(), err error) {
	for {
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w", name, err)
		}
		for {
			err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
			if err != syscall.EWOULDBLOCK {
				break
			}
			select {
			case <-ctx.Done():
				f.Close()
				return nil, fmt.Errorf("lock %s: %w", name, ctx.Err())
			case <-time.After(20 * time.Millisecond):
			}
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", name, err)
		}
		// the holder before us may have removed the file: then our lock
		// is on a file nobody else will open
		held, err1 := f.Stat()
		now, err2 := os.Stat(name)
		if err1 == nil && err2 == nil && os.SameFile(held, now) {
			return func() { os.Remove(name); f.Close() }, nil
		}
		f.Close()
	}
}
