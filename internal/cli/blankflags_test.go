package cli

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/narad/narad/internal/iostreams"
)

// blankMeaningful are the flags for which CLI.md gives ” a meaning: the only ones a
// blank value may pass.
var blankMeaningful = []string{"delimiter", "key"}

// blankArgs are the arguments each command is run with, so that a flag is the only
// thing wrong with the run.
var blankArgs = map[string][]string{
	"narad":                      {"topic", "ls"},
	"narad sub":                  {"t"},
	"narad produce":              {"t", "m"},
	"narad ack":                  {"t", "h"},
	"narad extend":               {"t", "h"},
	"narad nack":                 {"t", "h"},
	"narad replay":               {"t"},
	"narad bench":                {"t"},
	"narad topic create":         {"x"},
	"narad topic edit":           {"t"},
	"narad topic info":           {"t"},
	"narad topic delete":         {"t", "--yes"},
	"narad topic attach":         {"p", "c"},
	"narad topic detach":         {"p", "c", "--yes"},
	"narad topic children":       {"p"},
	"narad topic schema":         {"t"},
	"narad user add":             {"bob", "--grant", "admin"},
	"narad user grant":           {"bob", "--grant", "admin"},
	"narad user show":            {"bob"},
	"narad user passwd":          {"bob"},
	"narad user rm":              {"bob", "--yes"},
	"narad cluster decommission": {"1"},
}

// blankFlagArgs are what a flag needs beside it to be read at all.
var blankFlagArgs = map[string][]string{
	"narad sub --filter":         {"--peek"},
	"narad sub --grep":           {"--peek"},
	"narad sub --since":          {"--peek"},
	"narad sub --until":          {"--peek"},
	"narad topic create --delay": {"--parent", "p"},
}

// Every flag that takes text, on every command, refuses a blank value (exit 2, one
// line, nothing sent to the node) unless ” means something there: a script's unset
// variable must not run the command some other way.
func TestBlankFlagValuesRefused(t *testing.T) {
	var requests atomic.Int64
	node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Error(w, `{"error":"not here"}`, http.StatusNotFound)
	}))
	defer node.Close()

	ios, _, _, _ := iostreams.Test()
	tree := NewRootCmd(&Factory{IO: ios, Getenv: func(string) string { return "" }, Now: time.Now, Signals: NewSignals()})
	var walk func(c *cobra.Command)
	tried := 0
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" || c.Name() == "gen-docs" {
			return
		}
		c.LocalFlags().VisitAll(func(fl *pflag.Flag) {
			if _, ok := textValues(fl); !ok || slices.Contains(blankMeaningful, fl.Name) {
				return
			}
			if c.Parent() != nil && c.Root().PersistentFlags().Lookup(fl.Name) == fl {
				return // a global flag: tried once, on the root
			}
			if c.CommandPath() == "narad topic edit" && fl.Name == "visibility" {
				return // refused whatever its value
			}
			values := []string{""}
			if note := fl.Annotations[blankNote]; len(note) == 0 || note[0] != blankEmptyOnly {
				values = append(values, "  ")
			}
			for _, v := range values {
				tried++
				path := strings.Fields(c.CommandPath())
				args := append([]string{}, path[1:]...)
				args = append(args, blankArgs[c.CommandPath()]...)
				args = append(args, "--"+fl.Name+"="+v)
				if fl.Name != "server" {
					args = append([]string{"-s", node.URL}, args...)
				}
				args = append(args, blankFlagArgs[c.CommandPath()+" --"+fl.Name]...)
				if c.Name() == "sub" && slices.Contains(execOnlyFlags, fl.Name) {
					args = append(args, "--", "true")
				}
				t.Run(strings.Join(args[2:], " "), func(t *testing.T) {
					before := requests.Load()
					r := runRefusal(t, args)
					lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
					if r.code != ExitUsage || len(lines) != 1 || !strings.HasPrefix(lines[0], "narad: ") {
						t.Fatalf("exit %d, stderr %q: want exit 2 and one line", r.code, r.stderr)
					}
					// The refusal is about the value: not some other complaint that
					// happens to come first.
					own := len(fl.Annotations[blankNote]) > 0 && fl.Annotations[blankNote][0] == blankOwnCheck
					if own && !strings.Contains(lines[0], v+`"`) && !strings.Contains(lines[0], "empty") ||
						!own && !strings.Contains(lines[0], "--"+fl.Name+" needs") {
						t.Errorf("stderr %q does not refuse the blank --%s", lines[0], fl.Name)
					}
					if n := requests.Load() - before; n != 0 {
						t.Errorf("%d requests reached the node", n)
					}
				})
			}
		})
	}
	walk(tree)
	if tried < 40 {
		t.Fatalf("only %d flag values tried: the walk missed the tree", tried)
	}
}

// runRefusal runs narad in-process with its own config file; a run that is not over
// in a minute was not refused, and is stopped.
func runRefusal(t *testing.T, args []string) cliResult {
	t.Helper()
	env := map[string]string{"NARAD_CONFIG": filepath.Join(t.TempDir(), "c.yaml")}
	ios, _, out, errOut := iostreams.Test()
	ios.In = strings.NewReader("")
	f := &Factory{IO: ios, Getenv: func(k string) string { return env[k] }, Now: time.Now, Signals: NewSignals()}
	done := make(chan int, 1)
	go func() { done <- Run(f, args) }()
	select {
	case code := <-done:
		return cliResult{code, out.String(), errOut.String()}
	case <-time.After(time.Minute):
		f.Signals.Trigger(syscall.SIGINT)
		f.Signals.Trigger(syscall.SIGINT)
		<-done
		t.Fatalf("still running after a minute: the blank value was taken; stderr %q", errOut.String())
	}
	return cliResult{}
}
