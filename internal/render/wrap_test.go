package render

import (
	"strings"
	"testing"
)

func TestWrapKeepsLinesWithinTheWidth(t *testing.T) {
	cases := []struct {
		text  string
		width int
		want  string
	}{
		{"short line", 80, "short line"},
		{"one two three four", 9, "one two\n  three\n  four"},
		{"a http://very-long.example.com/x b", 10, "a\n  http://very-long.example.com/x\n  b"},
		{"first\nsecond line here", 8, "first\nsecond\n  line\n  here"},
		{"  lead kept", 80, "  lead kept"},
	}
	for _, c := range cases {
		if got := Wrap(c.text, c.width, "  "); got != c.want {
			t.Errorf("Wrap(%q, %d) = %q, want %q", c.text, c.width, got, c.want)
		}
	}
	long := strings.Repeat("word ", 40)
	for _, l := range strings.Split(Wrap(long, 80, "  "), "\n") {
		if len(l) > 80 {
			t.Errorf("line of %d columns: %q", len(l), l)
		}
	}
}

func TestReflowJoinsParagraphsAndKeepsIndentedLines(t *testing.T) {
	text := "one two three\nfour five\n\n  kept as it is, however long it is\nsix seven"
	want := "one two\nthree four\nfive\n\n  kept as it is, however long it is\nsix seven"
	if got := Reflow(text, 10); got != want {
		t.Errorf("Reflow = %q, want %q", got, want)
	}
}

func TestTruncateCountsColumns(t *testing.T) {
	for _, c := range []struct {
		in    string
		width int
		want  string
	}{
		{"orders", 6, "orders"},
		{"orders", 5, "orde…"},
		{"日本語の話題", 12, "日本語の話題"},
		// Two columns a character: 5 columns hold two of them and the ellipsis.
		{"日本語の話題", 5, "日本…"},
		{"🚫🚫🚫", 4, "🚫…"},
		{"日本", 1, ""}, // no room for half a wide character
		{"abc", 0, ""},
	} {
		if got := Truncate(c.in, c.width); got != c.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", c.in, c.width, got, c.want)
		}
	}
}

// Names that share a long prefix stay apart when cut: the middle gives way.
func TestTruncateMiddleKeepsBothEnds(t *testing.T) {
	for _, c := range []struct {
		in    string
		width int
		want  string
	}{
		{"orders", 6, "orders"},
		{"orders-retry-30s", 14, "orders-…ry-30s"},
		{"orders-retry-30s-run", 14, "orders-…0s-run"},
		{"orders", 5, "or…rs"},
		{"日本語の話題", 7, "日…話題"},
		{"日本語の話題", 6, "日…題"}, // no room for half a wide character
		{"abcdef", 2, "a…"},
		{"abcdef", 1, "a"},
		{"abc", 0, ""},
	} {
		got := TruncateMiddle(c.in, c.width)
		if got != c.want {
			t.Errorf("TruncateMiddle(%q, %d) = %q, want %q", c.in, c.width, got, c.want)
		}
		if w := Width(got); w > c.width {
			t.Errorf("TruncateMiddle(%q, %d) takes %d columns", c.in, c.width, w)
		}
	}
}
