package clienttest

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pglease/pglease-gen/internal/pgserver"
)

// proxy stands between clients and a server's socket, on loopback, so
// that a test can break the network under a client while the server and
// other clients go on (and, with lossyCancels, lose cancel requests on
// their way): partition holds every connection, open or new
// (nothing passes either way, nothing is closed); cut drops what one way
// carries on the connections open now and closes them once it has dropped
// something; closeAll closes them at once.
type proxy struct {
	ln     net.Listener
	socket string
	mu     sync.Mutex
	held   bool
	pipes  map[*pipe]struct{}
	// lossyCancels loses every cancel request on its way to the server
	// (as a load balancer that sends it to another node does)
	lossyCancels atomic.Bool
}

type pipe struct {
	client, server net.Conn
	held           atomic.Bool
	drop           atomic.Int32 // dropRequests or dropReplies, else 0
	once           sync.Once
}

const (
	dropRequests = 1
	dropReplies  = 2
)

func newProxy(t *testing.T, srv *pgserver.Server) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, socket: filepath.Join(srv.Dir, fmt.Sprintf(".s.PGSQL.%d", srv.Port)), pipes: map[*pipe]struct{}{}}
	go p.accept()
	t.Cleanup(func() { ln.Close(); p.closeAll() })
	return p
}

// dsn is srv's connection string through the proxy.
func (p *proxy) dsn(srv *pgserver.Server) string {
	a := p.ln.Addr().(*net.TCPAddr)
	return fmt.Sprintf("host=127.0.0.1 port=%d user=%s dbname=postgres sslmode=disable", a.Port, srv.User)
}

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.serve(c)
	}
}

// cancelRequest is the first 8 bytes of a cancel request: its length
// (16) and its code (80877102).
var cancelRequest = []byte{0, 0, 0, 16, 0x04, 0xd2, 0x16, 0x2e}

func (p *proxy) serve(c net.Conn) {
	var first []byte
	if p.lossyCancels.Load() {
		first = make([]byte, len(cancelRequest))
		if _, err := io.ReadFull(c, first); err != nil || bytes.Equal(first, cancelRequest) {
			c.Close() // lost on the way
			return
		}
	}
	s, err := net.Dial("unix", p.socket)
	if err != nil {
		c.Close()
		return
	}
	if _, err := s.Write(first); err != nil {
		c.Close()
		s.Close()
		return
	}
	pp := &pipe{client: c, server: s}
	p.mu.Lock()
	pp.held.Store(p.held)
	p.pipes[pp] = struct{}{}
	p.mu.Unlock()
	go p.pump(pp, c, s, dropRequests)
	go p.pump(pp, s, c, dropReplies)
}

// pump copies from one side of pp to the other, unless pp is held or
// drops this way (way); a dropped read closes pp soon after.
func (p *proxy) pump(pp *pipe, from, to net.Conn, way int32) {
	buf := make([]byte, 32<<10)
	for {
		n, err := from.Read(buf)
		if n > 0 {
			switch {
			case pp.held.Load():
			case pp.drop.Load() == way:
				time.AfterFunc(50*time.Millisecond, func() { p.close(pp) })
			default:
				if _, werr := to.Write(buf[:n]); werr != nil {
					p.close(pp)
					return
				}
			}
		}
		if err != nil {
			p.close(pp)
			return
		}
	}
}

func (p *proxy) close(pp *pipe) {
	pp.once.Do(func() {
		pp.client.Close()
		pp.server.Close()
		p.mu.Lock()
		delete(p.pipes, pp)
		p.mu.Unlock()
	})
}

func (p *proxy) open() []*pipe {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ps []*pipe
	for pp := range p.pipes {
		ps = append(ps, pp)
	}
	return ps
}

// partition holds every connection, open and new, until heal.
func (p *proxy) partition() {
	p.mu.Lock()
	p.held = true
	p.mu.Unlock()
	for _, pp := range p.open() {
		pp.held.Store(true)
	}
}

// heal ends the partition; the connections it held are closed (what they
// carried is lost).
func (p *proxy) heal() {
	p.mu.Lock()
	p.held = false
	p.mu.Unlock()
	for _, pp := range p.open() {
		if pp.held.Load() {
			p.close(pp)
		}
	}
}

// cut drops what way carries on the connections open now, and closes
// each once it has dropped something.
func (p *proxy) cut(way int32) {
	for _, pp := range p.open() {
		pp.drop.Store(way)
	}
}

func (p *proxy) closeAll() {
	for _, pp := range p.open() {
		p.close(pp)
	}
}
