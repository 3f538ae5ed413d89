package replay

import (
	"context"
	"encoding/json"
	"regexp"
	"testing"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/render"
)

func key(s string) *string { return &s }

func TestMatcherGrep(t *testing.T) {
	mt := &Matcher{Grep: regexp.MustCompile(`fail`)}
	for _, tc := range []struct {
		name string
		m    client.Message
		want bool
	}{
		{"JSON payload bytes", client.Message{Payload: json.RawMessage(`{"status":"failed"}`)}, true},
		{"text payload as text", client.Message{Payload: json.RawMessage(`"it fa\u0069led"`)}, true},
		{"text key", client.Message{Key: key("failover"), Payload: json.RawMessage(`"x"`)}, true},
		{"no match", client.Message{Key: key("k"), Payload: json.RawMessage(`"ok"`)}, false},
		{"binary payload never", client.Message{Payload: json.RawMessage(`"ZmFpbA=="`), PayloadEncoding: "base64"}, false},
		{"binary key never", client.Message{Key: key("ZmFpbA=="), KeyEncoding: "base64", Payload: json.RawMessage(`"x"`)}, false},
	} {
		if got := mt.Match(context.Background(), &tc.m); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if mt.Read != 6 || mt.Matched != 3 {
		t.Errorf("read %d matched %d, want 6 and 3", mt.Read, mt.Matched)
	}
}

func TestMatcherFilterAndGrep(t *testing.T) {
	q, err := render.CompileJQ(`.payload.amount > 100`)
	if err != nil {
		t.Fatal(err)
	}
	mt := &Matcher{Filter: q, Grep: regexp.MustCompile(`ord_1`)}
	msgs := []client.Message{
		{Payload: json.RawMessage(`{"order_id":"ord_1","amount":120}`)}, // both
		{Payload: json.RawMessage(`{"order_id":"ord_2","amount":120}`)}, // filter only
		{Payload: json.RawMessage(`{"order_id":"ord_1","amount":5}`)},   // grep only
		{Payload: json.RawMessage(`"ord_1 as text"`)},                   // the filter fails on it
	}
	var kept []int
	for i := range msgs {
		if mt.Match(context.Background(), &msgs[i]) {
			kept = append(kept, i)
		}
	}
	if len(kept) != 1 || kept[0] != 0 {
		t.Errorf("kept %v, want [0]", kept)
	}
	if mt.Errors != 1 || mt.FirstErr == nil {
		t.Errorf("errors %d (%v), want 1", mt.Errors, mt.FirstErr)
	}
}

// TestMatcherFilterFailedAll: a filter that failed on every message it ran on is told
// from one that failed on some (a topic of mixed payloads) and from one that ran on
// none (--grep kept nothing).
func TestMatcherFilterFailedAll(t *testing.T) {
	q, err := render.CompileJQ(`.payload.status == "failed"`)
	if err != nil {
		t.Fatal(err)
	}
	text := client.Message{Payload: json.RawMessage(`"heartbeat"`)}
	order := client.Message{Payload: json.RawMessage(`{"status":"ok"}`)}
	mt := &Matcher{Filter: q, Grep: regexp.MustCompile(`heart`)}
	if mt.FilterFailedAll() {
		t.Error("failed all before any message")
	}
	mt.Match(context.Background(), &order) // --grep keeps it out: the filter never ran on it
	mt.Match(context.Background(), &text)
	if !mt.FilterFailedAll() || mt.Filtered != 1 {
		t.Errorf("filtered %d, errors %d: want the one it ran on failed", mt.Filtered, mt.Errors)
	}
	mt.Grep = nil
	mt.Match(context.Background(), &order)
	if mt.FilterFailedAll() {
		t.Error("failed all, with a message it ran on without failing")
	}
	var none *Matcher
	if none.FilterFailedAll() {
		t.Error("a nil matcher failed")
	}
}

// TestMatcherFilterEndsWithTheRead: a filter cut by the read's end (a signal, a
// timeout) keeps nothing and is no failure of the filter.
func TestMatcherFilterEndsWithTheRead(t *testing.T) {
	q, err := render.CompileJQ(`last(range(100000)) > 0`)
	if err != nil {
		t.Fatal(err)
	}
	mt := &Matcher{Filter: q}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if mt.Match(ctx, &client.Message{Payload: json.RawMessage(`{"a":1}`)}) {
		t.Error("kept a message whose filter was cut")
	}
	if mt.Errors != 0 || mt.FilterFailedAll() {
		t.Errorf("errors %d (%v): a cut filter counted as failed", mt.Errors, mt.FirstErr)
	}
}
