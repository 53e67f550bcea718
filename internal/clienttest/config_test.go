package clienttest

import (
	"strings"
	"testing"
	"time"

	"github.com/pglease/pglease-gen/lease"
)

// dsn is a connection string New accepts; these tests never connect.
const dsn = "postgres://app@localhost/app"

func TestConfigDefaults(t *testing.T) {
	c, err := lease.New(dsn, lease.Config{TTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if cfg := c.Config(); cfg.RenewEvery != 10*time.Second || cfg.Margin != 3*time.Second || cfg.CallTimeout != 5*time.Second || cfg.PollMin != 50*time.Millisecond || cfg.PollMax != time.Second || cfg.Owner == "" || cfg.Logger == nil {
		t.Errorf("defaults %+v", cfg)
	}
	c2, err := lease.New(dsn, lease.Config{TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if cfg := c2.Config(); cfg.Margin != 100*time.Millisecond || cfg.CallTimeout != cfg.RenewEvery/2 {
		t.Errorf("1s: %+v", cfg)
	}
}

func TestConfigChecked(t *testing.T) {
	for _, tc := range []struct {
		c    lease.Config
		want string
	}{
		{lease.Config{}, "Config.TTL is 0s: set it to at least 1s"},
		{lease.Config{TTL: 1500 * time.Millisecond}, ""},
		{lease.Config{TTL: time.Second + time.Nanosecond}, "whole microseconds"},
		{lease.Config{TTL: 10 * time.Second, Margin: 5 * time.Second}, "Config.Margin is 5s"},
		{lease.Config{TTL: 10 * time.Second, RenewEvery: 10 * time.Second}, "Config.RenewEvery is 10s"},
		{lease.Config{TTL: 10 * time.Second, CallTimeout: 4 * time.Second}, "Config.CallTimeout is 4s"},
		{lease.Config{TTL: 10 * time.Second, PollMin: time.Second, PollMax: time.Millisecond}, "PollMin must be positive and at most PollMax"},
		{lease.Config{TTL: 10 * time.Second, Owner: strings.Repeat("x", 901)}, "longer than 900 bytes"},
	} {
		c, err := lease.New(dsn, tc.c)
		if err == nil {
			c.Close()
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.c, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: %v; want %q", tc.c, err, tc.want)
		}
	}
}

func TestNewChecksTheConnectionString(t *testing.T) {
	if _, err := lease.New("postgres://[::1", lease.Config{TTL: time.Second}); err == nil {
		t.Error("a bad connection string was taken")
	}
}
