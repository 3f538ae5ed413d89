package textenc

import (
	"encoding/json"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"plain text", "plain text"},
		{"héllo 日本語 😀 \u00a0nbsp مرحبا", "héllo 日本語 😀 \u00a0nbsp مرحبا"},
		// Bidi controls and zero-width characters reorder or hide what is read.
		{"user\u202e\u2066txt.exe\u2069\u202c", `user\u202e\u2066txt.exe\u2069\u202c`},
		{"\u202a\u202b\u202d\u2067\u2068\u061c\u200e\u200f", `\u202a\u202b\u202d\u2067\u2068\u061c\u200e\u200f`},
		{"zero\u200bwidth\u200c\u200d\u2060\ufeff", `zero\u200bwidth\u200c\u200d\u2060\ufeff`},
		{"\u2029\u2070\u2065\u200a", "\u2029\u2070\u2065\u200a"}, // neighbours are text
		// Tag characters spell out ASCII no one sees; beyond the BMP, one \U escape each.
		{"ok\U000E0001\U000E0069\U000E007F\U000E0000", `ok\U000e0001\U000e0069\U000e007f\U000e0000`},
		{"\u180e\u2061\u2064\u206a\u206f\ufff9\ufffb\U0001D173\U0001BCA0\U00013430",
			`\u180e\u2061\u2064\u206a\u206f\ufff9\ufffb\U0001d173\U0001bca0\U00013430`},
		// Format characters a terminal draws, and characters beside the tags, are text.
		{"\u00ad\u0600\u06dd\U000110BD\U000E0080\U000E0100\U000DFFFF\ufe0f😀", "\u00ad\u0600\u06dd\U000110BD\U000E0080\U000E0100\U000DFFFF\ufe0f😀"},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"a\nb\rc\td", `a\nb\rc\td`},
		{"\x00\x07\x08\x0b\x0c\x1f\x7f", `\x00\x07\x08\x0b\x0c\x1f\x7f`},
		{"\u0080\u009b\u009f\u00a0", `\u0080\u009b\u009f` + "\u00a0"},
		{"\xff\xfe", `\xff\xfe`},
		{"\xc2", `\xc2`},                       // truncated sequence
		{"\xe2\x82", `\xe2\x82`},               // truncated sequence
		{"\xed\xa0\x80", `\xed\xa0\x80`},       // encoded surrogate is not UTF-8
		{"\xc0\xaf", `\xc0\xaf`},               // overlong
		{"\uFFFD", "\uFFFD"},                   // a real replacement character is text
		{`back\slash \x1b`, `back\slash \x1b`}, // backslashes are not doubled
	}
	for _, tt := range tests {
		if got := Escape(tt.in); got != tt.want {
			t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := string(AppendEscape([]byte("x"), []byte(tt.in))); got != "x"+tt.want {
			t.Errorf("AppendEscape(%q) = %q, want %q", tt.in, got, "x"+tt.want)
		}
	}
}

// TestEscapeNoCopy: the common clean string is returned as it is, with no allocation.
func TestEscapeNoCopy(t *testing.T) {
	s := "customer-42 héllo"
	if n := testing.AllocsPerRun(100, func() { _ = Escape(s) }); n != 0 {
		t.Errorf("Escape of clean text allocated %v times", n)
	}
}

// FuzzEscape: whatever goes in, what comes out is valid UTF-8 with no control character,
// and clean text passes unchanged.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", "a", "\x1b[2J", "\u009b", "\xff", "é\n\t", "\xe2\x80\xa8", "\u202e", "\ufeff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Escape(s)
		if !utf8.ValidString(out) {
			t.Fatalf("Escape(%q) = %q is not UTF-8", s, out)
		}
		for _, r := range out {
			if r < 0x20 || r == 0x7f || IsC1(r) || IsInvisible(r) {
				t.Fatalf("Escape(%q) = %q holds %U", s, out, r)
			}
		}
		if !NeedsEscape(s) && out != s {
			t.Fatalf("clean %q changed to %q", s, out)
		}
	})
}

func TestAppendJSONStringInert(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", `""`},
		{"plain é 日本", `"plain é 日本"`},
		{"\"\\/", `"\"\\/"`},
		{"\n\r\t\x00\x1b\x7f", `"\n\r\t\u0000\u001b\u007f"`},
		{"\u0085\u009b\u2028\u2029", `"\u0085\u009b\u2028\u2029"`},
		{"a\U000E0069\u2062b😀", `"a\udb40\udc69\u2062b😀"`}, // beyond the BMP: a surrogate pair
		{"<&>", `"<&>"`},
		{"a\xffb", `"a\ufffdb"`},
	}
	for _, tt := range tests {
		got := string(AppendJSONString(nil, tt.in, Inert))
		if got != tt.want {
			t.Errorf("AppendJSONString(%q, Inert) = %s, want %s", tt.in, got, tt.want)
		}
		var back string
		if err := json.Unmarshal([]byte(got), &back); err != nil {
			t.Errorf("%s is not JSON: %v", got, err)
		} else if utf8.ValidString(tt.in) && back != tt.in {
			t.Errorf("%s decodes to %q, want %q", got, back, tt.in)
		}
	}
}

func TestInertJSON(t *testing.T) {
	in := []byte("{\"a\":\"x\u0085y\u009b\",\"é\":\"\u00a0\"}")
	want := `{"a":"x\u0085y\u009b","é":"` + "\u00a0" + `"}`
	if got := string(InertJSON(in)); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	clean := []byte(`{"a":"é"}`)
	if got := InertJSON(clean); &got[0] != &clean[0] {
		t.Error("a document without C1 controls should come back as it is")
	}
}

// TestInvisibleIsTheUndrawnFormatCharacters: IsInvisible is Unicode's format
// characters (Cf) less those a terminal draws with a width of 1, plus the whole tag
// block; and InertJSON finds each of them, wherever it stands, and keeps its value.
func TestInvisibleIsTheUndrawnFormatCharacters(t *testing.T) {
	drawn := map[rune]bool{0x00ad: true, 0x0600: true, 0x0601: true, 0x0602: true, 0x0603: true, 0x0604: true,
		0x0605: true, 0x06dd: true, 0x070f: true, 0x0890: true, 0x0891: true, 0x08e2: true, 0x110bd: true, 0x110cd: true}
	for r := rune(0); r <= unicode.MaxRune; r++ {
		want := unicode.Is(unicode.Cf, r) && !drawn[r] || r >= 0xe0000 && r <= 0xe007f
		if got := IsInvisible(r); got != want {
			t.Errorf("IsInvisible(%U) = %v, want %v", r, got, want)
			continue
		}
		if !want {
			continue
		}
		doc := []byte(`{"k":"a` + string(r) + `b"}`)
		if i := IndexInert(doc); i != 7 {
			t.Errorf("IndexInert(%U in %q) = %d, want 7", r, doc, i)
			continue
		}
		var back struct{ K string }
		if err := json.Unmarshal(InertJSON(doc), &back); err != nil || back.K != "a"+string(r)+"b" {
			t.Errorf("InertJSON(%U): %q (%v)", r, InertJSON(doc), err)
		}
	}
}

// TestAppendJSONStringWire: between programs only what JSON requires is escaped, and
// every other byte, DEL and non-ASCII included, is copied as it is.
func TestAppendJSONStringWire(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", `""`},
		{"plain é 日本", `"plain é 日本"`},
		{"\"\\/", `"\"\\/"`},
		{"\n\r\t\x00\x01\x1b\x1f\x7f", `"\n\r\t\u0000\u0001\u001b\u001f` + "\x7f\""},
		{"\u0085\u009b\u2028\u2029\u202e\ufeff", "\"\u0085\u009b\u2028\u2029\u202e\ufeff\""},
		{"<&>", `"<&>"`},
		{"a\xffb", "\"a\xffb\""}, // callers send such bytes base64; copied, not replaced
	}
	for _, tt := range tests {
		got := string(AppendJSONString([]byte("x"), tt.in, Wire))
		if got != "x"+tt.want {
			t.Errorf("AppendJSONString(%q, Wire) = %s, want %s", tt.in, got[1:], tt.want)
		}
		var back string
		if !utf8.ValidString(tt.in) {
			continue
		}
		if err := json.Unmarshal([]byte(got[1:]), &back); err != nil || back != tt.in {
			t.Errorf("%s decodes to %q (%v), want %q", got[1:], back, err, tt.in)
		}
	}
}

// TestAppendJSONStringNoAlloc: with room in dst, encoding allocates nothing.
func TestAppendJSONStringNoAlloc(t *testing.T) {
	buf := make([]byte, 0, 256)
	s := "customer-42 \"héllo\"\n\u009b\u202e\xff"
	for _, mode := range []Mode{Wire, Inert} {
		if n := testing.AllocsPerRun(100, func() { _ = AppendJSONString(buf[:0], s, mode) }); n != 0 {
			t.Errorf("mode %d allocated %v times", mode, n)
		}
	}
}

// FuzzAppendJSONString: in both modes the output is one valid JSON string; for valid
// UTF-8 it decodes to the input exactly, and it is what encoding/json decodes it to
// for any input in Inert mode (both turn bad bytes into U+FFFD). Inert output holds
// no raw character a terminal may act on or hide.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "a", "\"\\", "\x00\x1f\x7f", "\x1b[2J", "\u009b", "\xff", "é\n\t", "\u2028\u2029", "\u202e", "\ufeff", "<&>", "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, mode := range []Mode{Wire, Inert} {
			out := AppendJSONString(nil, s, mode)
			if mode == Inert || utf8.ValidString(s) {
				if !json.Valid(out) {
					t.Fatalf("mode %d: %q gave %q, not valid JSON", mode, s, out)
				}
			}
			var back string
			if mode == Wire && !utf8.ValidString(s) {
				continue
			}
			if err := json.Unmarshal(out, &back); err != nil {
				t.Fatalf("mode %d: %q gave %q: %v", mode, s, out, err)
			}
			if want := string([]rune(s)); back != want {
				t.Fatalf("mode %d: %q gave %q, decoding to %q", mode, s, out, back)
			}
			if utf8.ValidString(s) && back != s {
				t.Fatalf("mode %d: %q does not round trip: %q", mode, s, back)
			}
			if mode == Inert {
				if !utf8.Valid(out) {
					t.Fatalf("inert %q is not UTF-8", out)
				}
				for _, r := range string(out) {
					if r < 0x20 || r == 0x7f || IsC1(r) || IsInvisible(r) || r == '\u2028' || r == '\u2029' {
						t.Fatalf("inert %q holds %U raw", out, r)
					}
				}
			}
		}
	})
}
