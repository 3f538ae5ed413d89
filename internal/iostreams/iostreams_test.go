package iostreams

import "testing"

func TestColorDecidedInOnePlace(t *testing.T) {
	cases := []struct {
		mode    string
		noColor bool
		tty     bool
		want    bool
	}{
		{"auto", false, true, true},
		{"auto", false, false, false},
		{"auto", true, true, false}, // NO_COLOR
		{"never", false, true, false},
		{"always", false, false, true},
		{"always", true, false, true}, // an explicit flag beats the environment
	}
	for _, tc := range cases {
		ios, _, _, _ := Test()
		ios.SetColorMode(tc.mode)
		ios.SetNoColor(tc.noColor)
		ios.SetTTY(false, tc.tty, tc.tty)
		if got := ios.ColorEnabled(); got != tc.want {
			t.Errorf("mode %s NO_COLOR %v tty %v: stdout colour %v, want %v", tc.mode, tc.noColor, tc.tty, got, tc.want)
		}
		if got := ios.ColorEnabledStderr(); got != tc.want {
			t.Errorf("mode %s NO_COLOR %v tty %v: stderr colour %v, want %v", tc.mode, tc.noColor, tc.tty, got, tc.want)
		}
	}
}

func TestTestStreamsAreNotTerminals(t *testing.T) {
	ios, _, _, _ := Test()
	if ios.IsStdinTTY() || ios.IsStdoutTTY() || ios.IsStderrTTY() || ios.ColorEnabled() {
		t.Error("test streams must start as non-terminals without colour")
	}
}

func TestWidthIsEightyOffATerminal(t *testing.T) {
	ios, _, _, _ := Test()
	if ios.StdoutWidth() != DefaultWidth || ios.StderrWidth() != DefaultWidth {
		t.Fatalf("widths %d %d, want %d", ios.StdoutWidth(), ios.StderrWidth(), DefaultWidth)
	}
	ios.SetWidth(132)
	if ios.StdoutWidth() != 132 || ios.StderrWidth() != 132 {
		t.Fatalf("widths %d %d after SetWidth(132)", ios.StdoutWidth(), ios.StderrWidth())
	}
}
