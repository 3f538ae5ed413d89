package render

import (
	"strings"
	"testing"
)

func TestCut(t *testing.T) {
	for _, c := range []struct {
		s    string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"0123456789", 10, "0123456789"},
		{"0123456789ab", 10, "0123456789… (12 bytes, 2 not shown)"},
		{"ééééé", 3, "é… (10 bytes, 8 not shown)"}, // never half a character
		{strings.Repeat("x", 100_000), 2, "xx… (100,000 bytes, 99,998 not shown)"},
	} {
		if got := Cut(c.s, c.max); got != c.want {
			t.Errorf("Cut(%.20q, %d) = %q; want %q", c.s, c.max, got, c.want)
		}
	}
}
