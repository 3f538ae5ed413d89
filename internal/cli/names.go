package cli

import (
	"regexp"
	"sync"
)

// The names a command takes, checked locally as the node would, so a typo is exit 2
// at once, before any request.

// The name patterns are compiled on first use, not at every start, and as + with a
// length check: a compiled {1,255} alone cost 300 KB.
var topicNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._-]+$`) })

// validateTopicName applies API.md's rule locally, so a typo is exit 2 at once, in
// every command that takes a topic.
func validateTopicName(name string) error {
	if len(name) > 255 || !topicNameRE().MatchString(name) || name == "." || name == ".." {
		// %q alone makes control characters visible; escaping first would double them.
		return usageErrorf(`invalid topic name %q (letters, digits, ".", "_" and "-", at most 255; not "." or "..")`, name)
	}
	return nil
}

// validateTopicNames is validateTopicName of each name.
func validateTopicNames(names ...string) error {
	for _, n := range names {
		if err := validateTopicName(n); err != nil {
			return err
		}
	}
	return nil
}

// Compiled on first use (see topicNameRE).
var (
	userNameRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._@-]+$`) })
	grantPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._-]*\*?$`) })
)

// validateUserName applies the node's rule for user names locally.
func validateUserName(name string) error {
	if len(name) > 128 || !userNameRE().MatchString(name) {
		return usageErrorf("invalid user name %q (letters, digits, \".\", \"_\", \"@\" and \"-\", at most 128)", name)
	}
	return nil
}
