//go:build gendocs

package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// gen-docs writes the same bytes every time, whatever the day: CI fails on drift.
func TestGenDocsIsReproducible(t *testing.T) {
	gen := func() string {
		dir := t.TempDir()
		r := newCompleteEnv(t, "").run("gen-docs", dir)
		if r.code != 0 {
			t.Fatalf("gen-docs: exit %d %s", r.code, r.stderr)
		}
		return dir
	}
	a, b := gen(), gen()
	var files []string
	filepath.WalkDir(a, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(a, p)
			files = append(files, rel)
		}
		return err
	})
	for _, want := range []string{"completions/narad.bash", "completions/_narad", "completions/narad.fish",
		"completions/narad.ps1", "man/narad.1", "man/narad-sub.1", "man/narad-topic-ls.1", "man/narad-context-use.1",
		"docs/cli/narad.md", "docs/cli/narad_sub.md", "docs/cli/narad_topic_ls.md"} {
		if _, err := os.Stat(filepath.Join(a, want)); err != nil {
			t.Errorf("gen-docs did not write %s", want)
		}
	}
	for _, rel := range files {
		x, _ := os.ReadFile(filepath.Join(a, rel))
		y, err := os.ReadFile(filepath.Join(b, rel))
		if err != nil || !bytes.Equal(x, y) {
			t.Errorf("%s differs between two runs", rel)
		}
		if bytes.Contains(x, []byte("Auto generated")) || bytes.Contains(x, []byte("gen-docs")) {
			t.Errorf("%s carries a generated-on line or the hidden gen-docs", rel)
		}
	}
	sub, _ := os.ReadFile(filepath.Join(a, "man", "narad-sub.1"))
	if !bytes.Contains(sub, []byte(".TH \"NARAD-SUB\" \"1\" \"Dec 2026\" \"narad\" \"Narad Manual\"")) {
		t.Errorf("narad-sub.1 header:\n%s", sub[:min(len(sub), 200)])
	}
}
