package render

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// stdValue is what encoding/json makes of b with UseNumber: what decodeJSONValue
// must agree with.
func stdValue(b []byte) (any, error) {
	if !json.Valid(b) {
		return nil, errJSONSyntax
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

var jsonValueSeeds = []string{
	`{"order_id": "ord_123", "amount": 4999}`, `[]`, `{}`, `[1, -0.5e+3, 0, -0, 1E9, 12345678901234567890123]`,
	`"plain"`, `"esc \" \\ \n \u00e9 \ud83d\ude00 \ud800"`, "\"bad utf8 \xff\"", `true`, `false`, `null`,
	` {"a" : [ {"b": null} ] } `, `{"a":1,"a":2}`, "{\n  \"pretty\": true\n}",
	// Not JSON: both must refuse.
	`{"a":1,}`, `[1,]`, `01`, `1.`, `.5`, `-`, `1e`, `"ctl ` + "\x01" + `"`, `"open`, `{"a"}`, `[1 2]`, `tru`,
	`nul`, `1 2`, `"\x"`, `"\u12"`, `{1:2}`, ``, ` `, `[`, `"\`,
}

func TestDecodeJSONValueMatchesEncodingJSON(t *testing.T) {
	for _, s := range jsonValueSeeds {
		checkJSONValue(t, []byte(s))
	}
	deep := strings.Repeat("[", maxJSONDepth+1) + strings.Repeat("]", maxJSONDepth+1)
	if _, err := decodeJSONValue([]byte(deep)); err == nil {
		t.Error("nesting past the limit was accepted")
	}
}

func checkJSONValue(t *testing.T, b []byte) {
	t.Helper()
	want, werr := stdValue(b)
	got, gerr := decodeJSONValue(b)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("%q: error %v, encoding/json says %v", b, gerr, werr)
	}
	if werr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: %#v, encoding/json says %#v", b, got, want)
	}
}

func FuzzDecodeJSONValue(f *testing.F) {
	for _, s := range jsonValueSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if bytes.Count(b, []byte("[")) > 1000 || bytes.Count(b, []byte("{")) > 1000 {
			t.Skip() // the depth limits differ in where they count; both refuse past them
		}
		checkJSONValue(t, b)
	})
}
