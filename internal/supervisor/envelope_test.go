package supervisor_test

import (
	"encoding/json"
	"testing"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/supervisor"
)

func TestEnvelope(t *testing.T) {
	key := "k1"
	code := 3
	cases := []struct {
		name string
		m    client.Message
		f    supervisor.Failure
		want string
	}{
		{"json payload with a key",
			client.Message{Topic: "orders", Partition: 2, Offset: 9, Key: &key, Payload: json.RawMessage(`{"a": 1}`), Timestamp: 1790000000},
			supervisor.Failure{Attempts: 3, ExitCode: &code, Stderr: []byte("boom\n\x1b[2J")},
			`{"topic":"orders","partition":2,"offset":9,"key":"k1","attempts":3,"exit_code":3,"stderr_tail":"boom\n\u001b[2J","timestamp":1790000000,"payload":{"a": 1}}`},
		{"binary payload, no key, no exit code, stderr not UTF-8",
			client.Message{Partition: 0, Offset: 1, Payload: json.RawMessage(`"AP8="`), PayloadEncoding: "base64", Timestamp: 5},
			supervisor.Failure{Attempts: 1, Stderr: []byte("a\xffb")},
			`{"topic":"fallback","partition":0,"offset":1,"key":null,"attempts":1,"exit_code":null,"stderr_tail":"a\ufffdb","timestamp":5,"payload":"AP8=","payload_encoding":"base64"}`},
		{"multi-line JSON payload goes base64, as -o json shows it",
			client.Message{Topic: "t", Payload: json.RawMessage("{\n}"), Timestamp: 5},
			supervisor.Failure{Attempts: 2},
			`{"topic":"t","partition":0,"offset":0,"key":null,"attempts":2,"exit_code":null,"stderr_tail":"","timestamp":5,"payload":"ewp9","payload_encoding":"base64"}`},
	}
	for _, c := range cases {
		got, err := supervisor.Envelope(&c.m, "fallback", c.f)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if string(got) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
		if !json.Valid(got) {
			t.Errorf("%s: not valid JSON", c.name)
		}
	}
}

// An envelope is the letter up to the node's 1 MiB; past it, the payload alone, and
// how big the envelope would have been, for the line that says why.
func TestLetterOrPayload(t *testing.T) {
	small, payload := []byte(`{"payload":"x"}`), []byte("x")
	if got, replaced := supervisor.LetterOrPayload(small, payload); string(got) != string(small) || replaced != 0 {
		t.Errorf("small envelope: %q, %d", got, replaced)
	}
	atLimit := make([]byte, supervisor.MaxLetter)
	if got, replaced := supervisor.LetterOrPayload(atLimit, payload); len(got) != supervisor.MaxLetter || replaced != 0 {
		t.Errorf("envelope of exactly 1 MiB: %d bytes, %d", len(got), replaced)
	}
	over := make([]byte, supervisor.MaxLetter+1)
	if got, replaced := supervisor.LetterOrPayload(over, payload); string(got) != "x" || replaced != supervisor.MaxLetter+1 {
		t.Errorf("envelope over 1 MiB: %q, %d", got, replaced)
	}
}
