package client

import (
	"strings"
	"testing"
)

// A server URL given without a scheme still carries its credentials (they are used),
// so an error about it must not print them either.
func TestNewRejectsWithoutShowingTheSchemelessPassword(t *testing.T) {
	for _, in := range []string{
		"app:s3cret@host:abc",   // bad port
		"app:s3cret@host?x=1",   // query
		"app:s3cret@host#frag",  // fragment
		"app:s3cret@ho st:7942", // bad host
	} {
		_, err := New(Config{BaseURL: in})
		if err == nil {
			t.Errorf("New(%q) succeeded", in)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("New(%q): error %q shows the password", in, err)
		}
	}
}
