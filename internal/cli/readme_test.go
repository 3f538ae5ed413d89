package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

const repoRoot = "../.."

// Every command the README shows in a console block is run by the tour script:
// its "$ " line appears there as a "# $ " comment above the command that runs it.
func TestReadmeTourIsTested(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join("testdata", "script", "readme_tour.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	tested := map[string]bool{}
	for _, l := range strings.Split(string(script), "\n") {
		if cmd, ok := strings.CutPrefix(l, "# $ "); ok {
			tested[strings.TrimSpace(cmd)] = true
		}
	}
	shown := 0
	inConsole := false
	for i, l := range strings.Split(string(readme), "\n") {
		switch {
		case strings.HasPrefix(l, "```console"):
			inConsole = true
		case strings.HasPrefix(l, "```"):
			inConsole = false
		case inConsole && strings.HasPrefix(l, "$ "):
			shown++
			if cmd := strings.TrimSpace(l[2:]); !tested[cmd] {
				t.Errorf("README.md:%d: %q is not in readme_tour.txtar as \"# $ %s\"", i+1, cmd, cmd)
			}
		}
	}
	if shown < 15 {
		t.Errorf("only %d commands found in the README's console blocks", shown)
	}
}

var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// The README and the pages under docs/ link only to files a clone has.
func TestDocLinksResolveInTheRepo(t *testing.T) {
	pages := []string{"README.md", "CHANGELOG.md"}
	docs, _ := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	for _, d := range docs {
		rel, _ := filepath.Rel(repoRoot, d)
		pages = append(pages, rel)
	}
	if len(pages) < 5 {
		t.Fatalf("pages: %q", pages)
	}
	for _, page := range pages {
		text, err := os.ReadFile(filepath.Join(repoRoot, page))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(text), "../shared") {
			t.Errorf("%s points at ../shared, which a clone does not have", page)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(text), -1) {
			target := m[1]
			if strings.HasPrefix(target, "https://") || strings.HasPrefix(target, "#") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			if _, err := os.Stat(filepath.Join(repoRoot, filepath.Dir(page), target)); err != nil {
				t.Errorf("%s links to %s, which is not in the repository", page, m[1])
			}
		}
	}
}

// What the README shows the tour's `sub --stats` print on stderr is what the tour's
// test compares stderr with, byte for byte: the README cannot drift from the output.
func TestReadmeShowsTheTestedStatsTable(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	const cmd = "$ narad sub orders --count 3 --stats "
	_, after, ok := strings.Cut(string(readme), "\n"+cmd)
	if !ok {
		t.Fatalf("README.md shows no %q", cmd)
	}
	var shown strings.Builder
	for _, l := range strings.Split(after, "\n")[1:] {
		if strings.HasPrefix(l, "$ ") || strings.HasPrefix(l, "```") {
			break
		}
		if !strings.HasPrefix(l, "[p") { // the messages on stdout; the rest is stderr
			shown.WriteString(l + "\n")
		}
	}
	ar, err := txtar.ParseFile(filepath.Join("testdata", "script", "readme_tour.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range ar.Files {
		if f.Name == "stats.txt" {
			if shown.String() != string(f.Data) {
				t.Errorf("README.md shows on stderr:\n%s\nthe tour's test checks:\n%s", shown.String(), f.Data)
			}
			return
		}
	}
	t.Fatal("readme_tour.txtar has no stats.txt")
}
