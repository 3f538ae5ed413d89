package client

import (
	"strings"
	"testing"
)

// The whitespace around a JSON payload is part of what was produced: it survives the
// decode of a single answer, of a batch, and of a `sub -o json` line.
func TestKeepPayloadSpace(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []string
	}{
		{"single", `{"topic":"t","payload":  {"a": 1}` + "\n" + `,"timestamp":1}`, []string{"  {\"a\": 1}\n"}},
		{"payload last", `{"topic":"t","payload":[1] }`, []string{"[1] "}},
		{"none to keep", `{"topic":"t","payload":{"a": 1},"timestamp":1}`, []string{`{"a": 1}`}},
		{"batch", `{"messages":[{"payload":1,"t":1},{"payload": "x" ,"t":2},{"t":3,"payload":` + "\t{\"p\":{\"payload\": 2}}\r\n}]}",
			[]string{"1", ` "x" `, "\t{\"p\":{\"payload\": 2}}\r\n"}},
		{"strings with braces and quotes", `{"key":"a\", } {","payload": "{\"payload\": 1, }" ,"t":1}`, []string{` "{\"payload\": 1, }" `}},
		{"nested payload key is not the message's", `{"payload":{"payload": 1 } ,"t":1}`, []string{`{"payload": 1 } `}},
		{"laid out for reading", "{\n  \"topic\": \"t\",\n  \"payload\": {\"a\": 1}\n}", []string{`{"a": 1}`}},
		{"a field laid out", `{"topic":"t", "payload": 1 }`, []string{"1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs, _, err := decodeConsume([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) != len(tt.want) {
				t.Fatalf("%d messages", len(msgs))
			}
			for i, m := range msgs {
				if string(m.Payload) != tt.want[i] {
					t.Errorf("message %d: payload %q, want %q", i, m.Payload, tt.want[i])
				}
			}
		})
	}
}

func TestUnmarshalMessage(t *testing.T) {
	var m Message
	if err := UnmarshalMessage([]byte(`{"topic":"a","payload":  {"wrapped": true}`+"\n"+`,"timestamp":1}`), &m); err != nil {
		t.Fatal(err)
	}
	if p, err := m.PayloadBytes(); err != nil || string(p) != "  {\"wrapped\": true}\n" || m.Topic != "a" {
		t.Errorf("payload %q %v, topic %q", p, err, m.Topic)
	}
	if err := UnmarshalMessage([]byte(`{oops`), &m); err == nil {
		t.Error("bad JSON decoded")
	}
}

// The usual answer, with no whitespace beside a field, is not scanned at all.
func TestMayHaveSpacedPayload(t *testing.T) {
	body := `{"messages":[{"topic":"t","partition":0,"offset":1,"payload":{"order": "a b"},"timestamp":1,"receipt_handle":"0:1:2"}]}`
	if mayHaveSpacedPayload([]byte(body)) {
		t.Error("a compact answer would be scanned")
	}
	for _, s := range []string{`"payload": 1`, `1 ,`, "1\n}", "\"payload\":\t1"} {
		if !mayHaveSpacedPayload([]byte(strings.Repeat("x", 10) + s)) {
			t.Errorf("%q not seen", s)
		}
	}
}
