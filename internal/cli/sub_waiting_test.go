package cli

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/narad/narad/internal/devbroker"
)

// shortWaitingNotice makes the waiting notice come after d for one test, and returns
// what is told each time it is out.
func shortWaitingNotice(t *testing.T, d time.Duration) <-chan struct{} {
	after, noticed := waitingNoticeAfter, waitingNoticed
	said := make(chan struct{}, 10)
	waitingNoticeAfter = d
	waitingNoticed = func() { said <- struct{}{} }
	t.Cleanup(func() { waitingNoticeAfter, waitingNoticed = after, noticed })
	return said
}

// stopWhen sends the first signal once ch says so, or after a minute.
func stopWhen(ch <-chan struct{}) func(*Signals) {
	return func(s *Signals) {
		select {
		case <-ch:
		case <-time.After(time.Minute):
		}
		s.Trigger(syscall.SIGTERM)
	}
}

// stopAfter sends the first signal once d has passed.
func stopAfter(d time.Duration) func(*Signals) {
	return func(s *Signals) {
		time.Sleep(d)
		s.Trigger(syscall.SIGTERM)
	}
}

// TestWaitingForCountSaysSo: a --count run without --timeout that waits, holding
// nothing, says once on stderr what it waits for, off a terminal too: a CI job
// waiting for messages that never come must not hang without a word.
func TestWaitingForCountSaysSo(t *testing.T) {
	said := shortWaitingNotice(t, 100*time.Millisecond)
	for _, args := range [][]string{
		{"sub", "t", "--count", "2", "-o", "raw"},
		{"sub", "t", "--count", "2", "--", "true"},
		{"sub", "t", "--peek", "--from-beginning", "--count", "2"},
		{"replay", "t", "--follow", "--count", "2"},
	} {
		b := subBroker(t, "a") // one of the two there, whether taken or read
		r := runTTY(t, false, false, stopWhen(said), append([]string{"-s", b.URL()}, args...)...)
		want := "narad: waiting on t: nothing for 100ms, 1 of --count 2 so far (--timeout D stops waiting)\n"
		if args[0] == "replay" {
			want = "narad: waiting on t: nothing for 100ms, 1 of --count 2 so far\n" // replay has no --timeout
		}
		if strings.Count(r.stderr, want) != 1 {
			t.Errorf("%v: stderr:\n%s\nwant once: %s", args, r.stderr, want)
		}
	}
}

// TestWaitingWithAFilterSaysWhatItRead: with --grep or --filter, --count counts
// matches, so a read whose filter matches nothing waits for them like any other and
// says so, with how many messages it read and skipped meanwhile (and how many of them
// the filter failed on): a filter with a typo, or wrong for the data, must not look
// like a quiet topic. The canary (--peek -- COMMAND) says it as --peek does.
func TestWaitingWithAFilterSaysWhatItRead(t *testing.T) {
	// Long enough for the four messages there to be read before it, on a loaded
	// machine too (a read takes milliseconds): the line counts what was read by then.
	said := shortWaitingNotice(t, time.Second)
	hint := " (--timeout D stops waiting)\n"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sub", "t", "--peek", "--from-beginning", "--count", "3", "--grep", "a"},
			"no match for 1s, 2 of --count 3 so far, 2 read without a match" + hint},
		{[]string{"sub", "t", "--peek", "--from-beginning", "--count", "1", "--filter", ".payload.n.x", "-o", "json"},
			"no match for 1s, 0 of --count 1 so far, 4 read without a match (--filter failed on 4)" + hint},
		{[]string{"replay", "t", "--follow", "--count", "1", "--grep", "nothing-matches"},
			"no match for 1s, 0 of --count 1 so far, 4 read without a match\n"},
		{[]string{"sub", "t", "--peek", "--from-beginning", "--count", "3", "--grep", "a", "--", "true"},
			"no match for 1s, 2 of --count 3 so far, 2 read without a match" + hint},
		{[]string{"sub", "t", "--peek", "--from-beginning", "--count", "5", "--", "true"},
			"nothing for 1s, 4 of --count 5 so far" + hint},
	} {
		b := subBroker(t, "a", "ab", "b", `{"n":1}`)
		r := runTTY(t, false, false, stopWhen(said), append([]string{"-s", b.URL()}, tc.args...)...)
		want := "narad: waiting on t: " + tc.want
		if strings.Count(r.stderr, want) != 1 {
			t.Errorf("%v: stderr:\n%s\nwant once: %s", tc.args, r.stderr, want)
		}
		if strings.Contains(r.stdout, "waiting") {
			t.Errorf("%v: stdout (the data) has the waiting line:\n%s", tc.args, r.stdout)
		}
	}
}

// TestWaitingInExecModeCountsFinished: exec mode's --count counts messages finished,
// so the line does too. The one message fails once (given back at once) and then
// succeeds: taken twice, finished once, and the run waits for a second message. (The
// longer delay keeps the moment between its give-back and its second take, holding
// nothing, well short of it.)
func TestWaitingInExecModeCountsFinished(t *testing.T) {
	said := shortWaitingNotice(t, time.Second)
	b := subBroker(t, "a")
	if err := b.CreateTopic(devbroker.TopicSpec{Name: "dlq"}); err != nil {
		t.Fatal(err)
	}
	mark := filepath.Join(t.TempDir(), "failed-once")
	r := runTTY(t, false, false, stopWhen(said), "-s", b.URL(), "sub", "t", "--count", "2",
		"--max-attempts", "3", "--dead-letter", "dlq", "--",
		"sh", "-c", `test -e "$0" || { touch "$0"; exit 1; }`, mark)
	want := "narad: waiting on t: nothing for 1s, 1 of --count 2 so far (--timeout D stops waiting)\n"
	if strings.Count(r.stderr, want) != 1 {
		t.Errorf("stderr:\n%s\nwant once: %s", r.stderr, want)
	}
}

// TestWaitingNoticeOnlyWhenWaiting: no line for a run that ends on its own (--timeout,
// --drain), a worker without --count, or one whose command holds its message longer
// than the notice's delay.
func TestWaitingNoticeOnlyWhenWaiting(t *testing.T) {
	shortWaitingNotice(t, 100*time.Millisecond)
	b := subBroker(t, "a")
	for _, args := range [][]string{
		{"sub", "t", "--count", "2", "--timeout", "1s", "-o", "raw"},
		{"sub", "t", "--drain", "-o", "raw"},
		{"sub", "t", "-o", "raw"},
		{"sub", "t", "--count", "1", "--", "sleep", "0.6"},
		{"replay", "t", "--count", "5"},
		{"sub", "t", "--peek", "--from-beginning", "--count", "5", "--grep", "nothing-matches", "--timeout", "1s"},
		{"sub", "t", "--peek", "--from-beginning", "--count", "5", "--timeout", "1s", "--", "true"},
		{"sub", "t", "--peek", "--from-beginning", "--count", "5", "--timeout", "1s"},
	} {
		if _, _, err := b.Produce("t", "", []byte("a")); err != nil {
			t.Fatal(err)
		}
		r := runTTY(t, false, false, stopAfter(time.Second), append([]string{"-s", b.URL()}, args...)...)
		if strings.Contains(r.stderr, "waiting on") {
			t.Errorf("%v: stderr:\n%s\nwant no waiting notice", args, r.stderr)
		}
	}
}

// TestWaitingNoticeWaitsForTheNode: a node that takes the connection and never answers
// is not "nothing for 30s" of messages (the retry notices speak of it): no line.
func TestWaitingNoticeWaitsForTheNode(t *testing.T) {
	shortWaitingNotice(t, 50*time.Millisecond)
	url := faultNode(t, "silent")
	for _, args := range [][]string{
		{"sub", "t", "--count", "1"},
		{"replay", "t", "--follow", "--count", "1"},
	} {
		r := runTTY(t, false, false, stopAfter(500*time.Millisecond), append([]string{"-s", url}, args...)...)
		if strings.Contains(r.stderr, "waiting on") {
			t.Errorf("%v: stderr:\n%s\nwant no waiting line while the node has not answered", args, r.stderr)
		}
	}
}
