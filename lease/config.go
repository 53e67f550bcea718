package lease

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"
)

// Config is how a Client holds its leases. Only TTL is required; New
// fills in the rest and checks that they fit together.
type Config struct {
	// TTL is each lease's time to live on the server: a holder that stops
	// renewing loses its lease after it. At least 1 s.
	TTL time.Duration
	// RenewEvery is how often a held lease is renewed; default TTL/3, so
	// that two renewals in a row may fail before the lease is at risk.
	RenewEvery time.Duration
	// Margin is taken off the local deadline: a lease counts as lost at
	// send time of the last successful grant or renewal + TTL - Margin (on
	// the monotonic clock), before the server can give it to another
	// holder even if this machine's clock runs a little slow. Default
	// TTL/10, at least 100 ms.
	Margin time.Duration
	// CallTimeout bounds each call to the server, a reconnect before it
	// included; default RenewEvery/2, at most 5 s. A call that times out
	// is cancelled on the server and returns a *TimeoutError; when its
	// outcome is unknown, the client settles it before it reports
	// anything.
	CallTimeout time.Duration
	// PollMin and PollMax bound the fallback polling of a waiting Acquire
	// (between notifications, which wake it at once): it starts at PollMin
	// and doubles, with jitter, up to PollMax. Defaults 50 ms and 1 s.
	PollMin, PollMax time.Duration
	// Owner names this process in lease.inspect and lease.list; the
	// client adds a suffix unique to its session, so that an unknown
	// outcome can be settled exactly. Default: hostname:pid.
	Owner string
	// Logger receives what the client does (grants, renewals that failed,
	// lost leases) at debug, info and warn levels; default slog.Default().
	Logger *slog.Logger
}

// withDefaults fills in the defaults and checks the result.
func (c Config) withDefaults() (Config, error) {
	if c.TTL < time.Second {
		return c, fmt.Errorf("lease: Config.TTL is %v: set it to at least 1s (how long a holder that stops renewing keeps its lease)", c.TTL)
	}
	if c.TTL%time.Microsecond != 0 {
		return c, fmt.Errorf("lease: Config.TTL is %v: PostgreSQL's interval holds whole microseconds", c.TTL)
	}
	if c.Margin == 0 {
		c.Margin = max(c.TTL/10, 100*time.Millisecond)
	}
	if c.RenewEvery == 0 {
		c.RenewEvery = c.TTL / 3
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = min(c.RenewEvery/2, 5*time.Second)
	}
	if c.PollMin == 0 {
		c.PollMin = 50 * time.Millisecond
	}
	if c.PollMax == 0 {
		c.PollMax = time.Second
	}
	if c.Owner == "" {
		host, _ := os.Hostname()
		c.Owner = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	switch {
	case c.Margin < 0 || c.Margin >= c.TTL/2:
		return c, fmt.Errorf("lease: Config.Margin is %v: it must be between 0 and TTL/2 (%v)", c.Margin, c.TTL/2)
	case c.RenewEvery <= 0 || c.RenewEvery > c.TTL-c.Margin-c.CallTimeout:
		return c, fmt.Errorf("lease: Config.RenewEvery is %v: it must leave time for a renewal before the local deadline, at most TTL - Margin - CallTimeout (%v)",
			c.RenewEvery, c.TTL-c.Margin-c.CallTimeout)
	case c.CallTimeout <= 0 || c.CallTimeout > c.RenewEvery:
		return c, fmt.Errorf("lease: Config.CallTimeout is %v: it must be positive and at most RenewEvery (%v)", c.CallTimeout, c.RenewEvery)
	case c.PollMin <= 0 || c.PollMax < c.PollMin:
		return c, fmt.Errorf("lease: Config.PollMin %v and PollMax %v: PollMin must be positive and at most PollMax", c.PollMin, c.PollMax)
	case len(c.Owner) > 900:
		return c, errors.New("lease: Config.Owner is longer than 900 bytes (the server takes 1024 with the client's suffix)")
	}
	return c, nil
}
