package getopt

import (
	"fmt"
	"math"
	"time"
)

// Lifetime parses a time interval the way OpenSSH's convtime does (see
// "TIME FORMATS" in sshd_config(5)): a number of seconds, or a sequence of
// numbers each followed by a unit, s (seconds), m (minutes), h (hours),
// d (days) or w (weeks): "600", "10m", "1h30m".
func Lifetime(s string) (time.Duration, error) {
	if s == "" {
		return 0, fmt.Errorf("empty time interval")
	}
	var total int64
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == 0 {
			return 0, fmt.Errorf("invalid time interval %q", s)
		}
		var n int64
		for _, c := range s[:i] {
			n = n*10 + int64(c-'0')
			if n > math.MaxInt32 {
				return 0, fmt.Errorf("time interval %q too large", s)
			}
		}
		mult := int64(1)
		if i < len(s) {
			switch s[i] {
			case 's', 'S':
			case 'm', 'M':
				mult = 60
			case 'h', 'H':
				mult = 3600
			case 'd', 'D':
				mult = 86400
			case 'w', 'W':
				mult = 604800
			default:
				return 0, fmt.Errorf("invalid time unit %q", s[i])
			}
			i++
		}
		total += n * mult
		if total > math.MaxInt32 {
			return 0, fmt.Errorf("time interval too large")
		}
		s = s[i:]
	}
	return time.Duration(total) * time.Second, nil
}
