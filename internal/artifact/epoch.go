package artifact

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/pglease/pglease-gen/internal/model"
)

// SourceDateEpoch parses SOURCE_DATE_EPOCH, the time every time stamp of
// a build takes; unset means the newest changelog date of pkg, so that
// builds are reproducible by default. A time after now would date the
// repositories' Release (Date:) and the signatures in the future, which
// apt refuses as not valid yet (as a release date after now is refused).
func SourceDateEpoch(s string, pkg model.Packaging, now time.Time) (time.Time, error) {
	if s == "" {
		return pkg.Released(), nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt32 {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a number of seconds since 1970 (0 to %d)", s, math.MaxInt32)
	}
	t := time.Unix(n, 0).UTC()
	if t.After(now) {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%s (%s) is after now (%s): the repositories and their signatures would be dated in the future, and apt refuses a Release dated ahead of the host's clock; give a time today or earlier (SOURCE_DATE_EPOCH=$(date +%%s))", s, t.Format("2006-01-02 15:04:05 UTC"), now.UTC().Format("2006-01-02 15:04:05 UTC"))
	}
	return t, nil
}
