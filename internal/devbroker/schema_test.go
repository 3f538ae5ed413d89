package devbroker

import (
	"encoding/json"
	"testing"
)

func TestSchemaHistory(t *testing.T) {
	h := start(t, Config{})
	o := decodeTopic(t, h.do("POST", "/v1/topics", []byte(`{"name":"payments","schema":{"type": "object", "required": ["id"]}}`)), 201)
	if o.SchemaVersion == nil || *o.SchemaVersion != 1 {
		t.Fatalf("created with a schema: %+v", o)
	}
	// Stored compacted; info carries the current version and document.
	o = decodeTopic(t, h.do("GET", "/v1/topics/payments", nil), 200)
	if *o.SchemaVersion != 1 || string(o.Schema) != `{"type":"object","required":["id"]}` {
		t.Fatalf("info: %+v %s", o, o.Schema)
	}
	wantBody(t, h.do("GET", "/v1/topics/payments/schema", nil), 200,
		`{"topic":"payments","version":1,"versions":[{"version":1,"schema":{"type":"object","required":["id"]}}]}`+"\n")

	// A new version; the same document again (any formatting, any key order) is no change.
	o = decodeTopic(t, h.patch("payments", `{"schema":{"type":"object"}}`), 200)
	if *o.SchemaVersion != 2 {
		t.Fatalf("after a new schema: %+v", o)
	}
	o = decodeTopic(t, h.patch("payments", `{"schema": { "type" : "object" }}`), 200)
	if *o.SchemaVersion != 2 {
		t.Fatalf("the same schema again made version %d", *o.SchemaVersion)
	}
	wantBody(t, h.do("GET", "/v1/topics/payments/schema", nil), 200, `{"topic":"payments","version":2,"versions":[`+
		`{"version":1,"schema":{"type":"object","required":["id"]}},{"version":2,"schema":{"type":"object"}}]}`+"\n")

	// schema_base_version applies the change only on that version.
	wantError(t, h.patch("payments", `{"schema":true,"schema_base_version":1}`), 409,
		"schema version conflict: schema_base_version is 1, the current version is 2")
	decodeTopic(t, h.patch("payments", `{"schema":true,"schema_base_version":2}`), 200)

	// Refused documents.
	for body, want := range map[string]string{
		`{"schema":null}`:             "invalid schema: a schema cannot be removed (null)",
		`{"schema":false}`:            "invalid schema: false refuses every message; a schema is a JSON object or true",
		`{"schema":"x"}`:              "invalid schema: a schema is a JSON object or true",
		`{"schema":{"type":"thing"}}`: "invalid schema: at '': type must be one of null, boolean, object, array, number, string, integer, or a list of them",
		`{"schema":{"properties":{"a":{"required":"a"}}}}`: "invalid schema: at '/properties/a': required must be an array of strings",
		`{"schema":{"items":[{}]}}`:                        "invalid schema: at '': items must be one schema; the array form is not supported",
	} {
		wantError(t, h.patch("payments", body), 400, want)
	}
	// A topic without a schema has version 0 and an empty history.
	if err := h.b.CreateTopic(TopicSpec{Name: "free"}); err != nil {
		t.Fatal(err)
	}
	wantBody(t, h.do("GET", "/v1/topics/free/schema", nil), 200, `{"topic":"free","version":0,"versions":[]}`+"\n")
	wantError(t, h.do("GET", "/v1/topics/nope/schema", nil), 404, `topic "nope" not found`)
	wantErrorPrefix(t, h.do("POST", "/v1/topics", []byte(`{"name":"bad","schema":[1]}`)), 400, "invalid schema: ")
}

func TestSchemaValidation(t *testing.T) {
	h := start(t, Config{})
	schema := `{"type":"object","required":["id"],"additionalProperties":false,"properties":{` +
		`"id":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}},` +
		`"kind":{"enum":["a","b"]},"note":{"type":["string","null"]}}}`
	decodeTopic(t, h.do("POST", "/v1/topics", []byte(`{"name":"payments","schema":`+schema+`}`)), 201)
	for _, ok := range []string{
		`{"id":1}`, `{"id":1.0}`, `{"id":1e2}`, `{"id":9007199254740993}`, `{"id":-0}`,
		`{"id":1,"tags":["x","y"],"kind":"b","note":null}`, ` {"id":2} `,
	} {
		if r := h.produce("payments", "", ok); r.status != 202 {
			t.Errorf("%s: %v", ok, r)
		}
	}
	prefix := "invalid argument: schema: jsonschema validation failed with 'narad://schema/payments/1#'\n"
	for payload, want := range map[string]string{
		`{"amount":5}`:          prefix + "- at '': missing property 'id'",
		`{"id":1.5}`:            prefix + "- at '/id': got number, want integer",
		`{"id":"1"}`:            prefix + "- at '/id': got string, want integer",
		`{"id":1,"tags":[1]}`:   prefix + "- at '/tags/0': got integer, want string",
		`{"id":1,"kind":"c"}`:   prefix + `- at '/kind': value must be one of "a", "b"`,
		`{"id":1,"extra":true}`: prefix + "- at '': additional property 'extra' is not allowed",
		`[1]`:                   prefix + "- at '': got array, want object",
		`not json`:              "invalid argument: schema: payload is not one JSON text in valid UTF-8",
		`{"id":1} {"id":2}`:     "invalid argument: schema: payload is not one JSON text in valid UTF-8",
		"\xff":                  "invalid argument: schema: payload is not one JSON text in valid UTF-8",
	} {
		wantError(t, h.produce("payments", "", payload), 400, want)
	}
	if n := h.stats("payments").Messages(); n != 7 {
		t.Fatalf("%d messages stored, want the 7 valid ones", n)
	}
	// The Go API is held to the schema too.
	if _, _, err := h.b.Produce("payments", "", []byte(`{}`)); err == nil {
		t.Fatal("Broker.Produce stored a payload the schema refuses")
	}
}

func TestSchemaNesting(t *testing.T) {
	h := start(t, Config{Topics: []TopicSpec{{Name: "payments", Schema: `true`}}})
	deep := ""
	for range maxPayloadDepth + 1 {
		deep += "["
	}
	for range maxPayloadDepth + 1 {
		deep += "]"
	}
	wantError(t, h.produce("payments", "", deep), 400, "invalid argument: schema: payload nests deeper than 256 levels")
	h.mustProduce("payments", "", deep[1:len(deep)-1])
	// A schema of true means "must be JSON" and nothing more.
	h.mustProduce("payments", "", `"text"`)
	wantError(t, h.produce("payments", "", `text`), 400, "invalid argument: schema: payload is not one JSON text in valid UTF-8")
}

func TestIsInteger(t *testing.T) {
	for lit, want := range map[string]bool{
		"0": true, "-0": true, "1": true, "1.0": true, "1e2": true, "1.5e1": true, "15e-1": false, "150e-1": true,
		"1.5": false, "0.0": true, "0e-5": true, "9007199254740993": true, "1e400": true, "1e-400": false,
		"1E999999999999999999999": true, "1e-999999999999999999999": false, "2.50": false, "12.3400e2": true,
	} {
		if got := isInteger(json.Number(lit)); got != want {
			t.Errorf("isInteger(%s) = %v, want %v", lit, got, want)
		}
	}
}
