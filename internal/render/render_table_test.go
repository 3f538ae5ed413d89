package render

import (
	"bytes"
	"testing"
)

func TestPlainTableKeepsColumnsAlignedAcrossEmptyTrailingCells(t *testing.T) {
	var buf bytes.Buffer
	err := Table(&buf, false, false, []string{"NAME", "SERVER", "USER"}, [][]string{
		{"a", "http://x", ""},
		{"longer-name", "http://y", "bob"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "NAME         SERVER    USER\n" +
		"a            http://x\n" +
		"longer-name  http://y  bob\n"
	if got := buf.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
