package devbroker

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// consumeRaw produces payload with query and returns the consume body of that message.
func consumeRaw(t *testing.T, h *harness, query, payload string) string {
	t.Helper()
	if query != "" {
		query += "&"
	}
	h.mustProduce("orders", query+"partition=0", payload)
	r := h.consume("orders", "partition=0")
	if r.status != 200 {
		t.Fatalf("consume: %v", r)
	}
	return string(r.body)
}

// fieldsRE checks the field order of the consuming guide.
var fieldsRE = regexp.MustCompile(`(?s)^\{"topic":"orders","partition":0,"offset":\d+,` +
	`("key":"[^"]*",("key_encoding":"base64",)?)?"payload":.*,("payload_encoding":"base64",)?` +
	`"timestamp":\d+,"receipt_handle":"0:\d+:\d+"\}\n$`)

// Point 7: a produced JSON value comes back verbatim, byte for byte, whitespace kept.
func TestPayloadJSONVerbatim(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	for _, p := range []string{
		`{"a":1}`, `[1,2]`, `"hi"`, `42`, `true`, `null`, `-1.5e3`,
		`{"order_id": "ord_123", "amount": 4999}`,
		" {\n  \"nested\": { \"x\" : [ 1 , 2 ] }\n}\n",
		`"caf\u00e9 <&>"`, `{"html":"<b>&amp;</b>"}`,
	} {
		body := consumeRaw(t, h, "", p)
		if !strings.Contains(body, `,"payload":`+p+`,"timestamp":`) || strings.Contains(body, "payload_encoding") {
			t.Errorf("payload %q came back as %s", p, body)
		}
		if !fieldsRE.MatchString(body) || !json.Valid([]byte(body)) {
			t.Errorf("body %s", body)
		}
	}
}

// Point 7: other valid UTF-8 comes back as a JSON string; a produced JSON string and
// produced text decode alike.
func TestPayloadText(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	for _, p := range []string{
		"hello world", "hi", "line1\nline2\r\n", "tab\t\"quote\" back\\slash", "<&>", "héllo ✓ 日本",
		"\x01\x1f control", "{not json", "42 43", "\u2028",
	} {
		body := consumeRaw(t, h, "", p)
		m := one(t, resp{status: 200, body: []byte(body)})
		var s string
		if err := json.Unmarshal(m.Payload, &s); err != nil || s != p || m.PayloadEncoding != "" {
			t.Errorf("text %q came back as %s", p, body)
		}
		if !fieldsRE.MatchString(body) || !json.Valid([]byte(body)) {
			t.Errorf("body %s", body)
		}
	}
	// "hello world" is exactly the guide's "payload":"hello world".
	if body := consumeRaw(t, h, "", "hello world"); !strings.Contains(body, `,"payload":"hello world","timestamp":`) {
		t.Fatal(body)
	}
	// `"hi"` (JSON) and `hi` (text) both come back as the JSON string "hi".
	a := consumeRaw(t, h, "", `"hi"`)
	b := consumeRaw(t, h, "", `hi`)
	if !strings.Contains(a, `"payload":"hi",`) || !strings.Contains(b, `"payload":"hi",`) {
		t.Fatalf("%s\n%s", a, b)
	}
}

// Point 7: anything else comes back base64 with "payload_encoding":"base64".
func TestPayloadBinary(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	for _, p := range []string{"\x89PNG\r\n\x1a\n", "\xff", "ok\xc3(", "\x00\xff"} {
		body := consumeRaw(t, h, "", p)
		want := `,"payload":"` + base64.StdEncoding.EncodeToString([]byte(p)) + `","payload_encoding":"base64","timestamp":`
		if !strings.Contains(body, want) || !fieldsRE.MatchString(body) || !json.Valid([]byte(body)) {
			t.Errorf("binary %q came back as %s", p, body)
		}
	}
	// The guide's PNG header.
	if body := consumeRaw(t, h, "", "\x89PNG\r\n\x1a\n"); !strings.Contains(body, `"payload":"iVBORw0KGgo=","payload_encoding":"base64"`) {
		t.Fatal(body)
	}
	// "\x00" is valid UTF-8 and not JSON: text, escaped.
	if body := consumeRaw(t, h, "", "\x00"); !strings.Contains(body, `"payload":"\u0000",`) {
		t.Fatal(body)
	}
}

// Point 7: key present only when the message has one; non-UTF-8 keys base64 with
// key_encoding.
func TestKeyEncoding(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	if body := consumeRaw(t, h, "", "m"); strings.Contains(body, `"key"`) {
		t.Fatalf("keyless message has a key: %s", body)
	}
	if body := consumeRaw(t, h, "key=customer-42", "m"); !strings.Contains(body, `,"offset":1,"key":"customer-42","payload":`) {
		t.Fatal(body)
	}
	body := consumeRaw(t, h, "key="+url.QueryEscape("\xff\x01k"), "m")
	want := fmt.Sprintf(`,"key":"%s","key_encoding":"base64","payload":`, base64.StdEncoding.EncodeToString([]byte("\xff\x01k")))
	if !strings.Contains(body, want) || !fieldsRE.MatchString(body) || !json.Valid([]byte(body)) {
		t.Fatal(body)
	}
	// Valid UTF-8 with control characters is still a JSON string.
	body = consumeRaw(t, h, "key="+url.QueryEscape("a\x01\"é"), "m")
	m := one(t, resp{status: 200, body: []byte(body)})
	if m.Key == nil || *m.Key != "a\x01\"é" || m.KeyEncoding != "" {
		t.Fatal(body)
	}
	// Key and payload encodings together, in order.
	body = consumeRaw(t, h, "key=%FE", "\xfe")
	if !strings.Contains(body, `"key":"/g==","key_encoding":"base64","payload":"/g==","payload_encoding":"base64","timestamp":`) {
		t.Fatal(body)
	}
}

// Point 7: bytes that parse as JSON but are not valid UTF-8 (json.Valid does not check the
// bytes inside strings) are not "a JSON value": verbatim they would make the body invalid
// JSON and a client would read U+FFFD. They are binary: base64 with payload_encoding.
func TestPayloadJSONShapedBinary(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	for _, p := range []string{"\"\xff\"", "{\"a\":\"\xc3(\"}", "[\"ok\",\"\xfe\"]"} {
		body := consumeRaw(t, h, "", p)
		want := `,"payload":"` + base64.StdEncoding.EncodeToString([]byte(p)) + `","payload_encoding":"base64","timestamp":`
		if !strings.Contains(body, want) || !fieldsRE.MatchString(body) || !json.Valid([]byte(body)) {
			t.Errorf("JSON-shaped binary %q came back as %q", p, body)
		}
	}
}
