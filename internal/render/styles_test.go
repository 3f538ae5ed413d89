package render

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// golden compares got with testdata/name.golden, or rewrites it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s:\ngot:\n%s\nwant:\n%s", name, path, got, want)
	}
}

var (
	tableHeaders = []string{"PARTITION", "OLDEST", "NEXT", "SIZE"}
	tableRows    = [][]string{
		{"0", "0", "1204", "46.9 KiB"},
		{"1", "17", "9", "1.2 MiB"},
		{"10", "\x1b[2J", "日本"}, // short row, hostile cell, wide characters
	}
)

func TestTablePlain(t *testing.T) {
	var buf bytes.Buffer
	if err := Table(&buf, false, false, tableHeaders, tableRows); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	golden(t, "table_plain", got)
	if strings.Contains(got, "\x1b") {
		t.Errorf("plain table holds an escape code: %q", got)
	}
	for _, line := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
		if strings.HasSuffix(line, " ") {
			t.Errorf("trailing space in %q", line)
		}
	}
}

func TestTableColor(t *testing.T) {
	var buf bytes.Buffer
	if err := Table(&buf, true, false, tableHeaders, tableRows); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	golden(t, "table_color", got)
	if !strings.Contains(got, "\x1b[1mPARTITION\x1b[0m") || !strings.Contains(got, "\x1b[2m╭") {
		t.Errorf("colour table lacks bold header or dim border: %q", got)
	}
	if strings.Contains(got, "\x1b[2J") {
		t.Errorf("a cell reached the terminal raw: %q", got)
	}
}

func TestTableNoHeaders(t *testing.T) {
	var buf bytes.Buffer
	if err := Table(&buf, false, false, nil, [][]string{{"a", "b"}, {"ccc", "d"}}); err != nil {
		t.Fatal(err)
	}
	if got, want := buf.String(), "a    b\nccc  d\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestStyles(t *testing.T) {
	on := NewStyles(&bytes.Buffer{}, true)
	off := NewStyles(&bytes.Buffer{}, false)
	for name, pair := range map[string][2]string{
		"Tag":     {on.Tag.Render("x"), off.Tag.Render("x")},
		"Key":     {on.Key.Render("x"), off.Key.Render("x")},
		"Time":    {on.Time.Render("x"), off.Time.Render("x")},
		"Header":  {on.Header.Render("x"), off.Header.Render("x")},
		"Dim":     {on.Dim.Render("x"), off.Dim.Render("x")},
		"Success": {on.Success.Render("x"), off.Success.Render("x")},
	} {
		if !strings.HasPrefix(pair[0], "\x1b[") {
			t.Errorf("%s with colour: %q, want an escape code", name, pair[0])
		}
		if pair[1] != "x" {
			t.Errorf("%s without colour: %q, want plain x", name, pair[1])
		}
	}
}
