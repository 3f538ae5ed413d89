package cli

import (
	"strings"
	"testing"
)

// The name rules hold at their length limits now that the patterns check the
// length apart from the alphabet.
func TestNameLengthLimits(t *testing.T) {
	for name, ok := range map[string]bool{
		strings.Repeat("a", 255): true, strings.Repeat("a", 256): false, "": false, "a.b_c-d": true, "a b": false,
	} {
		if err := validateTopicName(name); (err == nil) != ok {
			t.Errorf("topic name of %d bytes: %v, want ok=%v", len(name), err, ok)
		}
	}
	for name, ok := range map[string]bool{
		strings.Repeat("u", 128): true, strings.Repeat("u", 129): false, "": false, "me@example.com": true, "a:b": false,
	} {
		if err := validateUserName(name); (err == nil) != ok {
			t.Errorf("user name of %d bytes: %v, want ok=%v", len(name), err, ok)
		}
	}
}
