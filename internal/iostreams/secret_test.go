package iostreams

import (
	"io"
	"strings"
	"testing"
)

func TestReadSecretTakesOnlyTheFirstLine(t *testing.T) {
	ios, in, _, _ := Test()
	in.WriteString("s3cret\r\nnext line\n")
	pw, err := ios.ReadSecret()
	if err != nil || pw != "s3cret" {
		t.Fatalf("ReadSecret = %q, %v", pw, err)
	}
	rest, _ := io.ReadAll(ios.In)
	if string(rest) != "next line\n" {
		t.Errorf("left on stdin: %q", rest)
	}
	if pw, err := ios.ReadSecret(); err == nil {
		t.Errorf("empty stdin read as %q", pw)
	}
	ios.In = strings.NewReader("no newline")
	if pw, err := ios.ReadSecret(); err != nil || pw != "no newline" {
		t.Errorf("last line without newline = %q, %v", pw, err)
	}
	ios.In = strings.NewReader(strings.Repeat("x", 5000))
	if _, err := ios.ReadSecret(); err == nil {
		t.Error("a 5000-byte line was accepted as a password")
	}
}
