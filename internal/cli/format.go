package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/render"
)

// Numbers and durations as the lines on stderr write them.

// plural is "1 word" or "N words".
func plural(n int64, word string) string { return countOf(n, word, word+"s") }

// countOf is "1 one" or "N many", for words whose plural is not just an s.
func countOf(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// formatBytes is render.ByteSize, under the name the commands call it by.
func formatBytes(n int64) string { return render.ByteSize(n) }

// roundDuration is d as a person writes it: 30s, 1m, 1h30m (not 1m0s), and a whole
// hour as 1h, where consumer.ShortDuration leaves Go's 1h0m.
func roundDuration(d time.Duration) string {
	s := consumer.ShortDuration(d)
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// seconds is d as the failure lines write it: 0.02s.
func seconds(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) }
