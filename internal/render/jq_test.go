package render

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/narad/narad/internal/client"
)

func mustJQ(t *testing.T, src string) *JQ {
	t.Helper()
	q, err := CompileJQ(src)
	if err != nil {
		t.Fatalf("CompileJQ(%q): %v", src, err)
	}
	return q
}

func jqLines(t *testing.T, src string, m *client.Message, escape bool) string {
	t.Helper()
	r, err := New(Options{Format: JSON, JQ: mustJQ(t, src), EscapeJQ: escape})
	if err != nil {
		t.Fatal(err)
	}
	out, err := r.Append([]byte("before|"), m)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return string(out)
}

// The value a --jq sees has -o json's fields and encodings.
func TestJQMessageValue(t *testing.T) {
	bin := &client.Message{Topic: "t", Partition: 1, Offset: 7, Payload: json.RawMessage(`"iVBORw=="`),
		PayloadEncoding: "base64", Key: ptr("\xff\x00"), Timestamp: 5}
	pretty := &client.Message{Topic: "t", Payload: json.RawMessage("{\n  \"a\": 1\n}")}
	for _, tc := range []struct {
		name, expr string
		m          *client.Message
		want       string
	}{
		{"object field", ".payload.order_id", seedMsg(), "ord_123\n"},
		{"number", ".payload.amount", seedMsg(), "4999\n"},
		{"envelope", "[.topic, .partition, .offset, .key, .timestamp, .receipt_handle]", seedMsg(),
			`["orders",4,0,"customer-42",1790623277,"4:0:3327358780392153864"]` + "\n"},
		{"text payload", ".payload", &client.Message{Payload: json.RawMessage(`"a\"b"`)}, "a\"b\n"},
		{"binary payload", "[.payload, .payload_encoding, .key, .key_encoding] | join(\" \")", bin, "iVBORw== base64 /wA= base64\n"},
		{"no key", "has(\"key\"), has(\"receipt_handle\")", bin, "true\nfalse\n"},
		{"pretty JSON payload is its value", ".payload.a", pretty, "1\n"},
		{"big number keeps its digits", ".payload", &client.Message{Payload: json.RawMessage(`123456789012345678901234567890`)}, "123456789012345678901234567890\n"},
		{"no result", "empty", seedMsg(), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := jqLines(t, tc.expr, tc.m, false); got != "before|"+tc.want {
				t.Errorf("got %q, want %q", got, "before|"+tc.want)
			}
		})
	}
}

// Strings are raw off a terminal and escaped on one; JSON results never carry a raw
// C1 control.
func TestJQOutputIsInert(t *testing.T) {
	m := &client.Message{Payload: json.RawMessage(`"\u001b]0;owned\u0007 \u009b"`)}
	if got := jqLines(t, ".payload", m, false); got != "before|\x1b]0;owned\x07 \u009b\n" {
		t.Errorf("raw: %q", got)
	}
	if got := jqLines(t, ".payload", m, true); got != `before|\x1b]0;owned\x07 \u009b`+"\n" {
		t.Errorf("terminal: %q", got)
	}
	if got := jqLines(t, "[.payload]", m, false); got != `before|["\u001b]0;owned\u0007 \u009b"]`+"\n" {
		t.Errorf("json: %q", got)
	}
}

func TestJQErrors(t *testing.T) {
	for _, src := range []string{"", "  ", ".[", "nope(1)", "]"} {
		if _, err := CompileJQ(src); err == nil {
			t.Errorf("CompileJQ(%q) compiled", src)
		}
	}
	r, err := New(Options{Format: JSON, JQ: mustJQ(t, ".payload.a")})
	if err != nil {
		t.Fatal(err)
	}
	out, err := r.Append([]byte("x"), &client.Message{Partition: 2, Offset: 3, Payload: json.RawMessage(`"text"`)})
	var je *JQError
	if !errors.As(err, &je) || string(out) != "x" {
		t.Errorf("Append on a string: %q, %v; want a JQError and nothing appended", out, err)
	}
	if _, err := New(Options{Format: Text, JQ: mustJQ(t, ".")}); err == nil {
		t.Error("a jq expression was accepted with the text format")
	}
}

func TestJQTruthy(t *testing.T) {
	v, err := MessageValue(seedMsg())
	if err != nil {
		t.Fatal(err)
	}
	for src, want := range map[string]bool{
		".payload.amount > 100": true, ".payload.amount > 10000": false, ".payload.nope": false,
		"empty": false, ".payload.order_id": true, "0": true,
		// Any result counts, as for jq's select: the key order_id comes second.
		"false, true": true, "null, false": false, `(.payload | keys[]) == "order_id"`: true,
		`true, error("never reached")`: true,
	} {
		got, err := mustJQ(t, src).Truthy(context.Background(), v)
		if err != nil || got != want {
			t.Errorf("Truthy(%q) = %v, %v; want %v", src, got, err, want)
		}
	}
	// An error before any true result is the run's.
	var je *JQError
	if ok, err := mustJQ(t, `false, error("x"), true`).Truthy(context.Background(), v); ok || !errors.As(err, &je) {
		t.Errorf("an error after a false result: %v, %v; want false and a JQError", ok, err)
	}
}

// An endless generator is an error once its output passes the bound, rather than
// memory taken until the system kills narad with nothing said.
func TestJQOutputIsBounded(t *testing.T) {
	prev := jqOutputMax
	jqOutputMax = 1 << 20
	t.Cleanup(func() { jqOutputMax = prev })
	q := mustJQ(t, `limit(2000000; repeat("x"))`) // 4 MB of lines, finite for the test
	out, err := q.AppendResults(context.Background(), []byte("kept"), map[string]any{}, false)
	var je *JQError
	if !errors.As(err, &je) || string(out) != "kept" {
		t.Fatalf("got %d bytes, %v; want the output as it was and a JQError", len(out), err)
	}
	if want := "more than 1.0 MiB of output for one value"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q, want it to say %q", err, want)
	}
	// Under the bound, all of it.
	if out, err := mustJQ(t, `limit(1000; repeat("x"))`).AppendResults(context.Background(), nil, nil, false); err != nil || len(out) != 2000 {
		t.Errorf("1000 results: %d bytes, %v", len(out), err)
	}
}

// An expression that goes on and on for a value ends with its context: the error is
// the context's (the expression did not fail), and nothing is written. (Cancelled
// before the run, so the test needs no timing; the expression is finite, so without
// the context it ends all the same, with a result.)
func TestJQEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	q := mustJQ(t, `last(range(100000))`)
	out, err := q.AppendResults(ctx, []byte("kept"), nil, false)
	var je *JQError
	if !errors.Is(err, context.Canceled) || errors.As(err, &je) || string(out) != "kept" {
		t.Errorf("AppendResults: %q, %v; want the output as it was and context.Canceled", out, err)
	}
	if ok, err := q.Truthy(ctx, nil); ok || !errors.Is(err, context.Canceled) || errors.As(err, &je) {
		t.Errorf("Truthy: %v, %v; want false and context.Canceled", ok, err)
	}
}
