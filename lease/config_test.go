package lease

import (
	"strings"
	"testing"
	"time"
)

func TestConfigDefaults(t *testing.T) {
	c, err := Config{TTL: 30 * time.Second}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.RenewEvery != 10*time.Second || c.Margin != 3*time.Second || c.CallTimeout != 5*time.Second || c.PollMin != 50*time.Millisecond || c.PollMax != time.Second || c.Owner == "" {
		t.Errorf("defaults %+v", c)
	}
	if c, err := (Config{TTL: time.Second}).withDefaults(); err != nil || c.Margin != 100*time.Millisecond || c.CallTimeout != c.RenewEvery/2 {
		t.Errorf("1s: %+v, %v", c, err)
	}
}

func TestConfigChecked(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{}, "Config.TTL is 0s: set it to at least 1s"},
		{Config{TTL: 1500 * time.Nanosecond * 1000000}, ""},
		{Config{TTL: time.Second + time.Nanosecond}, "whole microseconds"},
		{Config{TTL: 10 * time.Second, Margin: 5 * time.Second}, "Config.Margin is 5s"},
		{Config{TTL: 10 * time.Second, RenewEvery: 10 * time.Second}, "Config.RenewEvery is 10s"},
		{Config{TTL: 10 * time.Second, CallTimeout: 4 * time.Second}, "Config.CallTimeout is 4s"},
		{Config{TTL: 10 * time.Second, PollMin: time.Second, PollMax: time.Millisecond}, "PollMin must be positive and at most PollMax"},
		{Config{TTL: 10 * time.Second, Owner: strings.Repeat("x", 901)}, "longer than 900 bytes"},
	} {
		_, err := tc.c.withDefaults()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.c, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: %v; want %q", tc.c, err, tc.want)
		}
	}
}

func TestNewChecksTheConnectionString(t *testing.T) {
	if _, err := New("postgres://[::1", Config{TTL: time.Second}); err == nil {
		t.Error("a bad connection string was taken")
	}
}
